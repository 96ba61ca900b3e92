// Shape inference: the result shape of every HLO op from its operand shapes and attributes, with
// XLA's rules (xla/service/shape_inference.cc). Used by the builder to type new instructions and by
// the verifier to check declared shapes. Messages are lower-case fragments naming the rule, the
// values and the shapes ("lhs contracting dim 2 is out of range for f32[4,16]"); callers prefix the
// instruction ("instruction 'dot.3' (dot): ...").
#ifndef XSHARD_IR_SHAPE_INFERENCE_H_
#define XSHARD_IR_SHAPE_INFERENCE_H_

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/core/shape.h"
#include "xshard/ir/attributes.h"
#include "xshard/ir/opcode.h"

namespace xs {

// The signature of a called computation: parameter shapes in parameter-number order, root shape.
struct ProgramShape {
  std::vector<Shape> parameters;
  Shape result;
  std::string ToString() const;  // "(f32[], f32[]) -> f32[]"
};

// --- Elementwise ---------------------------------------------------------------------------------
// HLO does no implicit broadcasting: operands of binary and ternary ops have equal dims. Element
// types must match exactly, as in XLA's verifier without mixed precision: add(f32, bf16) is an
// error that asks for a convert. Unary / binary ops accept the types of their opcode table row.

// abs, negate, exponential, floor, not, is-finite (-> pred), real / imag (complex -> real), copy,
// reduce-precision, ... Error when the element type does not suit the op (floor of s32).
StatusOr<Shape> InferUnaryOpShape(Opcode opcode, const Shape& operand);
// add, subtract, ..., and / or / xor, shifts, complex (f32 -> c64), compare (-> pred).
StatusOr<Shape> InferBinaryOpShape(Opcode opcode, const Shape& lhs, const Shape& rhs);
// select(pred, on_true, on_false): pred has pred type and on_true's dims. clamp(min, x, max):
// min / max have x's shape or are scalars.
StatusOr<Shape> InferTernaryOpShape(Opcode opcode, const Shape& a, const Shape& b, const Shape& c);
// Same dims, new element type; arrays only.
StatusOr<Shape> InferConvertShape(const Shape& operand, DType to);
// Reinterprets bits: equal widths keep dims; s32 -> s8 appends a minor dim of 4; s8[..,4] -> s32
// removes it (the last dim must equal the width ratio).
StatusOr<Shape> InferBitcastConvertShape(const Shape& operand, DType to);

// --- Data movement -------------------------------------------------------------------------------
// HLO broadcast: operand dim i becomes output dim dims[i] (sizes equal); other output dims are new.
// `output_dims` are the result's dims (the declared shape's, or the builder's request).
StatusOr<Shape> InferBroadcastShape(const Shape& operand, std::span<const int64_t> output_dims,
                                    std::span<const int64_t> dims);
// Same element count, operand's element type.
StatusOr<Shape> InferReshapeShape(const Shape& operand, std::span<const int64_t> new_dims);
// Result dim i = operand dim perm[i]; perm must be a permutation of 0..rank-1.
StatusOr<Shape> InferTransposeShape(const Shape& operand, std::span<const int64_t> perm);
// One SliceDim per operand dim: 0 <= start <= limit <= dim size, stride >= 1.
StatusOr<Shape> InferSliceShape(const Shape& operand, std::span<const SliceDim> slice);
// Start indices: one integer scalar per operand dim (or XLA's legacy single rank-1 vector).
StatusOr<Shape> InferDynamicSliceShape(const Shape& operand, std::span<const Shape> indices,
                                       std::span<const int64_t> sizes);
StatusOr<Shape> InferDynamicUpdateSliceShape(const Shape& operand, const Shape& update,
                                             std::span<const Shape> indices);
// At least one operand; equal ranks and element types; dims equal except `dim`, which adds up.
StatusOr<Shape> InferConcatenateShape(std::span<const Shape> operands, int64_t dim);
// Result dim = low + size + high + max(size - 1, 0) * interior; low / high may be negative,
// interior may not, and the result may not be negative.
StatusOr<Shape> InferPadShape(const Shape& operand, const Shape& pad_value,
                              std::span<const PaddingDim> padding);
StatusOr<Shape> InferReverseShape(const Shape& operand, std::span<const int64_t> dims);
// iota: rank >= 1, dim in range, numeric element type; returns `shape`.
StatusOr<Shape> InferIotaShape(const Shape& shape, int64_t iota_dim);
StatusOr<Shape> InferTupleShape(std::span<const Shape> elements);
StatusOr<Shape> InferGetTupleElementShape(const Shape& tuple, int64_t index);

// --- Contractions, reductions, windows -----------------------------------------------------------
// Result dims: batch dims, lhs free dims, rhs free dims. `preferred` (the declared element type)
// may widen the result as XLA's preferred_element_type does.
StatusOr<Shape> InferDotShape(const Shape& lhs, const Shape& rhs, const DotDimensionNumbers& dnums,
                              std::optional<DType> preferred = std::nullopt);
StatusOr<Shape> InferConvolutionShape(const Shape& lhs, const Shape& rhs,
                                      int64_t feature_group_count, int64_t batch_group_count,
                                      const Window& window,
                                      const ConvolutionDimensionNumbers& dnums,
                                      std::optional<DType> preferred = std::nullopt);
// Checks a reducer: 2N scalar parameters (accumulators then inputs) returning a scalar (N == 1)
// or an N-tuple of scalars, with accumulator types equal to the init types and input types equal
// to `input_types`.
Status VerifyReducerShape(const ProgramShape& reducer, std::span<const Shape> init_values,
                          std::span<const DType> input_types);
// reduce(inputs..., inits...): N inputs of equal dims and N scalar inits; dims unique and in
// range. Result: the inputs without `dims` (a tuple for N > 1).
StatusOr<Shape> InferReduceShape(std::span<const Shape> operands, std::span<const int64_t> dims,
                                 const ProgramShape& reducer);
// Window output size per dim: floor((pad_lo + dilated base + pad_hi - dilated window) / stride)+1.
StatusOr<Shape> InferWindowOutputShape(const Shape& base, const Window& window, DType dtype);
StatusOr<Shape> InferReduceWindowShape(std::span<const Shape> operands, const Window& window,
                                       const ProgramShape& reducer);
StatusOr<Shape> InferSelectAndScatterShape(const Shape& operand, const ProgramShape& select,
                                           const Window& window, const Shape& source,
                                           const Shape& init_value, const ProgramShape& scatter);
StatusOr<Shape> InferGatherShape(const Shape& operand, const Shape& indices,
                                 const GatherDimensionNumbers& dnums,
                                 std::span<const int64_t> slice_sizes);
// scatter(operands..., indices, updates...).
StatusOr<Shape> InferScatterShape(std::span<const Shape> operands, const ProgramShape& reducer,
                                  const ScatterDimensionNumbers& dnums);
// sort(operands...) along `dim` with a comparator of 2N scalars returning pred[].
StatusOr<Shape> InferSortShape(std::span<const Shape> operands, int64_t dim,
                               const ProgramShape& comparator);
// topk: (values with the last dim k, s32 indices of the same dims).
StatusOr<Shape> InferTopKShape(const Shape& operand, int64_t k);
StatusOr<Shape> InferMapShape(std::span<const Shape> operands, const ProgramShape& fn);

// --- Control flow --------------------------------------------------------------------------------
// Arguments compatible with the parameters; result = the computation's root shape.
StatusOr<Shape> InferCallShape(std::span<const Shape> args, const ProgramShape& fn);
// condition: (S) -> pred[]; body: (S) -> S; init: S.
StatusOr<Shape> InferWhileShape(const ProgramShape& condition, const ProgramShape& body,
                                const Shape& init);
// branch index pred[] (2 branches) or s32[]; branch j takes operand j and all return one shape.
StatusOr<Shape> InferConditionalShape(const Shape& branch_index,
                                      std::span<const ProgramShape> branches,
                                      std::span<const Shape> branch_operands);

// --- Collectives ---------------------------------------------------------------------------------
// One output per operand, `dim` multiplied by shard_count (the group size); tuple for several.
StatusOr<Shape> InferAllGatherShape(std::span<const Shape> operands, int64_t dim,
                                    int64_t shard_count);
StatusOr<Shape> InferAllReduceShape(std::span<const Shape> operands);
// `dim` divided by shard_count (must divide it).
StatusOr<Shape> InferReduceScatterShape(std::span<const Shape> operands, int64_t dim,
                                        int64_t shard_count);
// Array form (split_dimension): the split dim must divide by split_count; shape kept.
StatusOr<Shape> InferAllToAllArrayShape(const Shape& operand, int64_t split_dim,
                                        int64_t split_count);
// Tuple form: N operands of one shape -> a tuple of N.
StatusOr<Shape> InferAllToAllTupleShape(std::span<const Shape> operands);
// One operand: its shape; in-place form (4 operands): the output buffer's shape.
StatusOr<Shape> InferCollectivePermuteShape(std::span<const Shape> operands);

// --- Whole instructions --------------------------------------------------------------------------
class Instruction;
class Computation;

// The signature of `computation`: parameter shapes by number and the root's shape. Error when a
// parameter number is missing or there is no root.
StatusOr<ProgramShape> ComputeProgramShape(const Computation& computation);
// The shape `inst` must have given its operands, attributes and called computations (layouts
// dropped). Ops whose result shape is only written in the text (parameter, reshape's and
// broadcast's dims, iota, custom-call, rng, recv, infeed, ...) contribute the declared shape after
// every check that can be made. Checks the operand count against the opcode's arity.
// Messages do not name the instruction; the verifier adds that.
StatusOr<Shape> InferInstructionShape(const Instruction& inst);
// True when InferInstructionShape checks `op` (has a handler); false for ops whose shape is only
// taken as declared (parameter, bitcast, scan, ...). For the cross-table test.
bool HasShapeInference(Opcode op);
// A collective's group size: the size of its replica groups, else the partition or replica count
// of its module by XLA's group mode (channel_id / use_global_device_ids); 1 when unknown.
// Error when explicit groups have different sizes (uniform groups required) or repeat an id.
StatusOr<int64_t> CollectiveGroupSize(const Instruction& inst, bool uniform = true);

// --- Helpers -------------------------------------------------------------------------------------
// Shape text without layout, as messages print it: "f32[4,16]".
std::string ShapeText(const Shape& shape);
// True when two element types may meet in one op (equal, or both floating).
bool SameElementTypeIgnoringFpPrecision(DType a, DType b);
// Shape equality ignoring layouts and floating precision (bf16 vs f32).
bool CompatibleIgnoringFpPrecision(const Shape& a, const Shape& b);
// True when any dim of an array shape (or of a tuple's leaves) is unbounded ('?').
bool HasUnboundedDim(const Shape& shape);

}  // namespace xs

#endif  // XSHARD_IR_SHAPE_INFERENCE_H_
