// Pieces shared by the kernel generators (kernel_codegen_*.cc): C++ spellings of dtypes, the
// scalar op table as CUDA expressions, the device prelude, and the two loop skeletons every
// elementwise / reducing kernel is built from. Internal to the cuda layer.
#ifndef XSHARD_CUDA_KERNEL_CODEGEN_INTERNAL_H_
#define XSHARD_CUDA_KERNEL_CODEGEN_INTERNAL_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "xshard/core/dtype.h"
#include "xshard/cuda/kernel_codegen.h"
#include "xshard/ir/opcode.h"
#include "xshard/kernels/scalar_fn.h"

namespace xs::cuda::codegen {

// The placeholder generators write for the kernel's name (Finish replaces it).
inline constexpr const char* kName = "XS_KERNEL_NAME";
inline constexpr int kBlock = 256;
inline constexpr int64_t kMaxGrid = 8192;

// pred, s8-s64, u8-u64, f16, bf16, f32, f64.
bool SupportedDType(DType t);
// Unimplemented "cuda: <what> of '<inst>' has element type <t>, which generated kernels do not
// compute on (...)" unless SupportedDType(t).
Status RequireDType(const Instruction& inst, DType t);

// Complex elements (kernel_codegen_complex.cc): c64 / c128 are stored as the prelude's xs_c64 /
// xs_c128 structs. Movable types are SupportedDType's plus c64 and c128: what data-movement
// kernels (shape ops, copies, fft) read and write; RequireMovable is RequireDType for them.
bool IsComplexDType(DType t);
bool MovableDType(DType t);
Status RequireMovable(const Instruction& inst, DType t);
// CType, and "xs_c64" / "xs_c128" for complex types.
std::string ElemCType(DType t);
// ElementwiseExpr for an instruction with a complex operand or result (add, subtract, multiply,
// divide, negate, abs, sign, exp, real, imag, complex(re, im), convert, compare EQ / NE, select,
// copy), with the
// CPU's std::complex formulas; ElementwiseExpr for the rest.
StatusOr<std::string> AnyElementwiseExpr(const Instruction& inst, const std::vector<std::string>& args);

std::string CType(DType t);        // storage type: "float", "unsigned short" (f16, bf16), "bool"
std::string ComputeType(DType t);  // arithmetic type: "float" for f16 / bf16, else CType
std::string ToCompute(DType t, const std::string& e);    // storage -> compute
std::string FromCompute(DType t, const std::string& e);  // compute -> storage (rounds)
// XLA's convert of storage-typed `e` from `from` to `to`, as kernels/numeric.h ConvertScalar.
std::string ConvertExpr(DType from, DType to, const std::string& e);
// The storage-typed result of elementwise `inst` applied to storage-typed identifiers `args`.
StatusOr<std::string> ElementwiseExpr(const Instruction& inst, const std::vector<std::string>& args);

// Reductions accumulate in ComputeType(dtype).
StatusOr<std::string> CombineExpr(kernels::CombineKind kind, DType t, const std::string& a,
                                  const std::string& b);
StatusOr<std::string> IdentityExpr(kernels::CombineKind kind, DType t);
// The typed kind of a reducer computation (add ... or), or Unimplemented naming `inst`.
StatusOr<kernels::CombineKind> TypedCombiner(const Instruction& inst);

// A scalar computation (a reducer, a scatter combiner, a sort comparator) of `owner` inlined as
//   auto <name> = [&](const P0 a0, ..., const Pn-1 an-1, R0& r0, ..., Rm-1& rm-1) { ... };
// with `params[k]` the type of parameter k and `results` the types of its root (a tuple of m, or
// one value); every scalar instruction goes through the elementwise op table, so each rounds as
// the CPU executor's does. Unimplemented naming `owner` for non-scalar values and ops no kernel
// computes (kernel_codegen_scalar.cc).
StatusOr<std::string> ScalarLambda(const Instruction& owner, const Computation& c, std::string_view name,
                                   const std::vector<DType>& params, const std::vector<DType>& results);
// A C++ literal of scalar constant `c` in its storage type.
StatusOr<std::string> ScalarLiteral(const Instruction& c);

// "int" when every index stays below 2^30, else "long long".
std::string IndexType(int64_t largest);
// C++ literal of an integer.
std::string Int(int64_t v);

// Device helpers every kernel may use (conversions, NaN-aware max / min, integer division and
// shifts with XLA's edge cases, vector structs, warp shuffles).
const std::string& Prelude();

// Names and wraps `body` (which spells its entry point kName).
GeneratedKernel Finish(std::string_view kind, std::string body, LaunchDims launch, int num_pointers,
                       std::string strategy);
// Blocks for `work` items, one per thread (at most kMaxGrid: kernels loop).
int64_t GridFor(int64_t work, int block = kBlock);

// The per-element work of a kernel, as a lambda `elem(i, loads..., stores&..., [reduced&])`.
struct ElemSpec {
  std::string prologue;  // statements before the loop (scalars, uniform values)
  std::string lambda;    // "auto elem = [&](idx_t i, ...) { ... };"
  std::vector<std::pair<int, DType>> loads;   // (pointer index, dtype) of each value parameter
  std::vector<std::pair<int, DType>> stores;  // (pointer index, dtype) of each output parameter
  std::optional<DType> reduced;               // storage type of the reduced value (last parameter)
};

// An elementwise kernel over `count` elements: vectorized loop when profitable, scalar tail.
GeneratedKernel EmitElementwise(std::string_view kind, const ElemSpec& spec, int64_t count,
                                int num_pointers);
// A reducing kernel: `dims` the loop's dims, `reduced[d]` true for reduced dims; the result
// (ComputeType accumulated, combined with the init scalar at p[init_ptr]) goes to p[result_ptr].
StatusOr<GeneratedKernel> EmitReduce(std::string_view kind, const ElemSpec& spec,
                                     const std::vector<int64_t>& dims, const std::vector<bool>& reduced,
                                     kernels::CombineKind combine, int init_ptr, int result_ptr,
                                     DType result, int num_pointers);

}  // namespace xs::cuda::codegen

namespace xs::cuda {
// kernel_codegen_shape.cc: broadcast, transpose, slice, reverse, pad, concatenate, iota,
// dynamic-slice, dynamic-update-slice, copy / reshape / bitcast.
StatusOr<GeneratedKernel> GenerateShapeKernel(const Instruction& inst);
// kernel_codegen_conv.cc: any convolution / dot (pointers lhs, rhs, result), one thread per
// output element (strategy "conv_direct" / "dot_direct"): the fallback where cuDNN / cuBLASLt
// refuse. Bit-identical to the CPU where it runs a fixed-order loop (integers, batch groups);
// float GEMM-path results summed near-exactly (f32 in double). Unimplemented for complex types.
StatusOr<GeneratedKernel> GenerateConvolutionKernel(const Instruction& inst);
StatusOr<GeneratedKernel> GenerateDotKernel(const Instruction& inst);
// kernel_codegen_reduce.cc: reduce and reduce-window (one operand, typed combiner).
StatusOr<GeneratedKernel> GenerateReduceKernel(const Instruction& inst);
// The elementwise ops GenerateElementwiseKernel emits (kernel_codegen_reduce.cc).
bool IsCodegenElementwise(Opcode op);
}  // namespace xs::cuda

#endif  // XSHARD_CUDA_KERNEL_CODEGEN_INTERNAL_H_
