// InferInstructionShape handlers for collectives, async wrappers, host transfer (send / recv /
// infeed / outfeed), rng and the linear-algebra / fft / batch-norm ops.
#include <algorithm>

#include "xshard/ir/computation.h"
#include "xshard/ir/shape_inference.h"
#include "xshard/ir/shape_inference_instruction.h"
#include "xshard/ir/shape_inference_util.h"

namespace xs::instruction_shape {
namespace {

const Shape kU32Scalar(DType::kU32, {});
const Shape kS32Scalar(DType::kS32, {});

// The shard count of an all-gather / reduce-scatter: the group size when known, else what the
// declared shape implies (XLA does the same when the module has no replica / partition count).
StatusOr<int64_t> ShardCount(const Instruction& inst, int64_t dim, bool gather) {
  XS_ASSIGN_OR_RETURN(int64_t group, CollectiveGroupSize(inst));
  if (group > 1) return group;
  const Shape& out = inst.shape().IsTuple() && inst.shape().tuple_size() > 0
                         ? inst.shape().tuple_shape(0) : inst.shape();
  const Shape& in = Op(inst, 0);
  if (!out.IsArray() || !in.IsArray() || dim < 0 || dim >= out.rank() || dim >= in.rank()) {
    return int64_t{1};
  }
  int64_t num = gather ? out.dim(static_cast<int>(dim)) : in.dim(static_cast<int>(dim));
  int64_t den = gather ? in.dim(static_cast<int>(dim)) : out.dim(static_cast<int>(dim));
  if (den <= 0) return int64_t{1};
  return std::max<int64_t>(1, (num + den - 1) / den);
}

StatusOr<Shape> AllGatherHandler(const Instruction& inst) {
  int64_t dim = FirstDimension(inst, 0);
  XS_ASSIGN_OR_RETURN(int64_t shards, ShardCount(inst, dim, true));
  return InferAllGatherShape(OperandShapes(inst, 0), dim, shards);
}
StatusOr<Shape> AllGatherStartHandler(const Instruction& inst) {
  int64_t dim = FirstDimension(inst, 0);
  XS_ASSIGN_OR_RETURN(int64_t group, CollectiveGroupSize(inst));
  if (group <= 1 && inst.shape().IsTuple() && inst.shape().tuple_size() == 2) {
    const Shape& out = inst.shape().tuple_shape(1);
    const Shape& first = out.IsTuple() && out.tuple_size() > 0 ? out.tuple_shape(0) : out;
    const Shape& in = Op(inst, 0);
    if (first.IsArray() && in.IsArray() && dim >= 0 && dim < in.rank() && dim < first.rank() &&
        in.dim(static_cast<int>(dim)) > 0) {
      group = std::max<int64_t>(1, first.dim(static_cast<int>(dim)) /
                                       in.dim(static_cast<int>(dim)));
    }
  }
  std::vector<Shape> ins = OperandShapes(inst, 0);
  XS_ASSIGN_OR_RETURN(Shape gathered, InferAllGatherShape(ins, dim, std::max<int64_t>(group, 1)));
  Shape input = ins.size() == 1 ? ins[0].WithoutLayout() : InferTupleShape(ins).value();
  return Shape::Tuple({input, gathered});
}
StatusOr<Shape> SecondElementHandler(const Instruction& inst) {
  return TupleElement(Op(inst, 0), 1, "the operand");
}
StatusOr<Shape> FirstElementHandler(const Instruction& inst) {
  return TupleElement(Op(inst, 0), 0, "the operand");
}
StatusOr<Shape> SameAsOperandHandler(const Instruction& inst) {
  return Op(inst, 0).WithoutLayout();
}

// all-reduce's to_apply: two scalars of the operands' element type to one.
Status CheckAllReduceReducer(const Instruction& inst) {
  if (inst.to_apply() == nullptr) return OkStatus();  // all-reduce-start sugar may omit it
  XS_ASSIGN_OR_RETURN(ProgramShape fn, ComputeProgramShape(*inst.to_apply()));
  if (inst.operand_count() == 0 || !Op(inst, 0).IsArray()) return OkStatus();
  Shape init(Op(inst, 0).dtype(), {});
  DType type = init.dtype();
  return VerifyReducerShape(fn, std::span<const Shape>(&init, 1), std::span<const DType>(&type, 1));
}
StatusOr<Shape> AllReduceHandler(const Instruction& inst) {
  XS_RETURN_IF_ERROR(CollectiveGroupSize(inst, /*uniform=*/false).status());
  XS_RETURN_IF_ERROR(CheckAllReduceReducer(inst));
  return InferAllReduceShape(OperandShapes(inst, 0));
}
StatusOr<Shape> ReduceScatterHandler(const Instruction& inst) {
  int64_t dim = FirstDimension(inst, 0);
  XS_ASSIGN_OR_RETURN(int64_t shards, ShardCount(inst, dim, false));
  XS_RETURN_IF_ERROR(CheckAllReduceReducer(inst));
  return InferReduceScatterShape(OperandShapes(inst, 0), dim, shards);
}
StatusOr<Shape> AllToAllHandler(const Instruction& inst) {
  XS_ASSIGN_OR_RETURN(int64_t group, CollectiveGroupSize(inst));
  if (inst.attrs().dimensions && !inst.dimensions().empty()) {
    XS_RETURN_IF_ERROR(ExpectOperandCount(inst, 1));
    return InferAllToAllArrayShape(Op(inst, 0), inst.dimensions()[0], std::max<int64_t>(group, 1));
  }
  if (group > 1 && inst.operand_count() != group) {
    return InvalidArgument("tuple all-to-all over groups of ", group, " takes ", group,
                           " operands, got ", inst.operand_count());
  }
  return InferAllToAllTupleShape(OperandShapes(inst, 0));
}
StatusOr<Shape> CollectivePermuteHandler(const Instruction& inst) {
  return InferCollectivePermuteShape(OperandShapes(inst, 0));
}
StatusOr<Shape> CollectivePermuteStartHandler(const Instruction& inst) {
  // (input, output, context...): the context buffers vary by XLA version, so only the first two
  // elements are checked.
  std::vector<Shape> ins = OperandShapes(inst, 0);
  XS_ASSIGN_OR_RETURN(Shape out, InferCollectivePermuteShape(ins));
  const Shape& d = inst.shape();
  // Combined form: several operands travel as one tuple.
  Shape in = ins.size() == 1 || ins.size() == 4 ? ins[0].WithoutLayout() : Shape::Tuple(ins);
  if (!d.IsTuple() || d.tuple_size() < 2 || !d.tuple_shape(0).Compatible(in) ||
      !d.tuple_shape(1).Compatible(out)) {
    return InvalidArgument("collective-permute-start must return (", ShapeText(in), ", ",
                           ShapeText(out), ", context...), declares ", ShapeText(d));
  }
  return Declared(inst);
}
StatusOr<Shape> RaggedAllToAllHandler(const Instruction& inst) {
  XS_RETURN_IF_ERROR(CollectiveGroupSize(inst).status());
  return Op(inst, 1).WithoutLayout();
}
StatusOr<Shape> U32ScalarHandler(const Instruction&) { return kU32Scalar; }
StatusOr<Shape> TokenHandler(const Instruction&) { return Shape::Token(); }
StatusOr<Shape> AddDependencyHandler(const Instruction& inst) {
  XS_RETURN_IF_ERROR(ExpectToken(inst, 1));
  return Op(inst, 0).WithoutLayout();
}
// The context element of send / recv: u32[] in XLA, but any integer scalar is seen in the wild.
Shape ContextOf(const Instruction& inst) {
  const Shape& d = inst.shape();
  if (d.IsTuple() && d.tuple_size() == 3 && d.tuple_shape(1).IsArray() &&
      d.tuple_shape(1).rank() == 0 && IsInteger(d.tuple_shape(1).dtype())) {
    return d.tuple_shape(1).WithoutLayout();
  }
  return kU32Scalar;
}
StatusOr<Shape> SendHandler(const Instruction& inst) {
  XS_RETURN_IF_ERROR(ExpectToken(inst, 1));
  return Shape::Tuple({Op(inst, 0).WithoutLayout(), ContextOf(inst), Shape::Token()});
}
StatusOr<Shape> RecvHandler(const Instruction& inst) {
  XS_RETURN_IF_ERROR(ExpectToken(inst, 0));
  XS_ASSIGN_OR_RETURN(Shape data, TupleElement(inst.shape(), 0, "the result of recv"));
  return Shape::Tuple({data, ContextOf(inst), Shape::Token()});
}
StatusOr<Shape> RecvDoneHandler(const Instruction& inst) {
  XS_ASSIGN_OR_RETURN(Shape data, TupleElement(Op(inst, 0), 0, "the operand of recv-done"));
  return Shape::Tuple({data, Shape::Token()});
}
StatusOr<Shape> InfeedHandler(const Instruction& inst) {
  XS_RETURN_IF_ERROR(ExpectToken(inst, 0));
  XS_ASSIGN_OR_RETURN(Shape data, TupleElement(inst.shape(), 0, "the result of infeed"));
  return Shape::Tuple({data, Shape::Token()});
}
StatusOr<Shape> OutfeedHandler(const Instruction& inst) {
  XS_RETURN_IF_ERROR(ExpectToken(inst, 1));
  const auto& declared = inst.attrs().outfeed_shape;
  if (declared && !declared->Compatible(Op(inst, 0))) {
    return InvalidArgument("outfeed_shape=", ShapeText(*declared), " differs from the operand ",
                           ShapeText(Op(inst, 0)));
  }
  return Shape::Token();
}
StatusOr<Shape> CopyStartHandler(const Instruction& inst) {
  Shape in = Op(inst, 0).WithoutLayout();
  return Shape::Tuple({in, in, kU32Scalar});
}
StatusOr<Shape> AsyncStartHandler(const Instruction& inst) {
  XS_ASSIGN_OR_RETURN(ProgramShape fn, Called(inst, CallRole::kCalls));
  XS_ASSIGN_OR_RETURN(Shape root, InferCallShape(OperandShapes(inst, 0), fn));
  const Shape& d = inst.shape();
  Shape params = Shape::Tuple(fn.parameters);
  if (!d.IsTuple() || d.tuple_size() < 2 || !d.tuple_shape(0).Compatible(params) ||
      !d.tuple_shape(1).Compatible(root)) {
    return InvalidArgument("async-start must return (", ShapeText(params), ", ", ShapeText(root),
                           ", context...) for its wrapped computation, declares ", ShapeText(d));
  }
  return Declared(inst);
}
StatusOr<Shape> RngHandler(const Instruction& inst) {
  XS_RETURN_IF_ERROR(ExpectOperandCount(inst, 2));
  const Shape &a = Op(inst, 0), &b = Op(inst, 1);
  XS_RETURN_IF_ERROR(shape_inference::ExpectArray(inst.shape(), "the result of rng"));
  if (!a.IsArray() || !b.IsArray() || a.rank() != 0 || b.rank() != 0 || a.dtype() != b.dtype() ||
      a.dtype() != inst.shape().dtype()) {
    return InvalidArgument("rng takes two scalars of the result type ",
                           DTypeName(inst.shape().dtype()), ", got ", ShapeText(a), " and ",
                           ShapeText(b));
  }
  if (inst.attrs().distribution == RngDistribution::kNormal && !IsFloating(a.dtype())) {
    return InvalidArgument("rng_normal needs a floating type, got ", ShapeText(a));
  }
  return Declared(inst);
}
StatusOr<Shape> RngBitGeneratorHandler(const Instruction& inst) {
  const Shape& d = inst.shape();
  if (d.IsTuple() && (d.tuple_size() != 2 || !d.tuple_shape(0).Compatible(Op(inst, 0)))) {
    return InvalidArgument("rng-bit-generator must return (state ", ShapeText(Op(inst, 0)),
                           ", bits), declares ", ShapeText(d));
  }
  return Declared(inst);
}
StatusOr<Shape> RngStateHandler(const Instruction&) { return Shape(DType::kU64, {2}); }
StatusOr<Shape> GetDimensionSizeHandler(const Instruction& inst) {
  XS_RETURN_IF_ERROR(shape_inference::ExpectArray(Op(inst, 0), "the operand"));
  XS_RETURN_IF_ERROR(shape_inference::CheckDimsInRange(inst.dimensions(), Op(inst, 0).rank(), "dimension",
                                          Op(inst, 0), true));
  return kS32Scalar;
}
StatusOr<Shape> SetDimensionSizeHandler(const Instruction& inst) {
  XS_RETURN_IF_ERROR(shape_inference::ExpectArray(Op(inst, 0), "the operand"));
  XS_RETURN_IF_ERROR(shape_inference::CheckDimsInRange(inst.dimensions(), Op(inst, 0).rank(), "dimension",
                                          Op(inst, 0), true));
  if (!Op(inst, 1).Compatible(kS32Scalar)) {
    return InvalidArgument("the size operand must be s32[], got ", ShapeText(Op(inst, 1)));
  }
  return Op(inst, 0).WithoutLayout();
}

StatusOr<Shape> FftHandler(const Instruction& inst) {
  const std::optional<FftType>& type = inst.attrs().fft_type;
  const std::optional<std::vector<int64_t>>& length = inst.attrs().fft_length;
  if (!type || !length || length->empty() || length->size() > 3 ||
      std::any_of(length->begin(), length->end(), [](int64_t n) { return n < 0; })) {
    return InvalidArgument("fft needs fft_type=... and fft_length={...} with 1 to 3 sizes >= 0");
  }
  const Shape& in = Op(inst, 0);
  XS_RETURN_IF_ERROR(shape_inference::ExpectArray(in, "the operand of fft"));
  const int n = static_cast<int>(length->size());
  if (in.rank() < n) {
    return InvalidArgument("fft of rank ", n, " needs an operand of rank >= ", n, ", got ",
                           ShapeText(in));
  }
  std::vector<int64_t> dims = in.dims();
  const bool inverse_real = *type == FftType::kIrfft;
  const std::string_view name = FftTypeName(*type);
  for (int i = 0; i < n - (inverse_real ? 1 : 0); ++i) {
    if (*type != FftType::kFft && *type != FftType::kIfft &&
        dims[in.rank() - n + i] != (*length)[i]) {
      return InvalidArgument(name, " needs the minor dims of ", ShapeText(in),
                             " to equal fft_length={", StrJoin(*length, ","), "}");
    }
  }
  if (*type == FftType::kFft || *type == FftType::kIfft) {
    if (!IsComplex(in.dtype())) return InvalidArgument(name, " needs a complex operand");
    return in.WithoutLayout();
  }
  if (*type == FftType::kRfft) {
    if (in.dtype() != DType::kF32 && in.dtype() != DType::kF64) {
      return InvalidArgument("RFFT needs an f32 or f64 operand, got ", ShapeText(in));
    }
    if (length->back() != 0) dims.back() = length->back() / 2 + 1;
    return Shape(in.dtype() == DType::kF32 ? DType::kC64 : DType::kC128, dims);
  }
  if (inverse_real) {
    if (!IsComplex(in.dtype())) return InvalidArgument("IRFFT needs a complex operand");
    if ((dims.back() != 0 || length->back() != 0) && dims.back() != length->back() / 2 + 1) {
      return InvalidArgument("IRFFT needs the last dim of ", ShapeText(in), " to be ",
                             length->back() / 2 + 1, " (fft_length/2+1)");
    }
    dims.back() = length->back();
    return Shape(in.dtype() == DType::kC64 ? DType::kF32 : DType::kF64, dims);
  }
  return InvalidArgument("unknown fft_type=", name);
}

Status CheckSquareMinor(const Shape& a, std::string_view op) {
  if (!a.IsArray() || a.rank() < 2 || a.dim(a.rank() - 1) != a.dim(a.rank() - 2) ||
      !(IsFloating(a.dtype()) || IsComplex(a.dtype()))) {
    return InvalidArgument(op, " needs a floating or complex 'a' of rank >= 2 with square minor ",
                           "dims, got ", ShapeText(a));
  }
  return OkStatus();
}
StatusOr<Shape> CholeskyHandler(const Instruction& inst) {
  XS_RETURN_IF_ERROR(CheckSquareMinor(Op(inst, 0), "cholesky"));
  return Op(inst, 0).WithoutLayout();
}
StatusOr<Shape> TriangularSolveHandler(const Instruction& inst) {
  const Shape &a = Op(inst, 0), &b = Op(inst, 1);
  XS_RETURN_IF_ERROR(CheckSquareMinor(a, "triangular-solve"));
  const bool left = inst.attrs().left_side.value_or(false);
  bool ok = b.IsArray() && b.rank() == a.rank() && b.dtype() == a.dtype() &&
            a.dim(a.rank() - 1) == b.dim(b.rank() - (left ? 2 : 1));
  for (int i = 0; ok && i < a.rank() - 2; ++i) ok = a.dim(i) == b.dim(i);
  if (!ok) {
    return InvalidArgument("triangular-solve: 'b' ", ShapeText(b), " does not fit 'a' ",
                           ShapeText(a), " (left_side=", left, ")");
  }
  return b.WithoutLayout();
}
StatusOr<Shape> BatchNormHandler(const Instruction& inst) {
  const Shape& x = Op(inst, 0);
  if (!inst.attrs().feature_index) return InvalidArgument("batch norm needs feature_index=N");
  const int64_t f = *inst.attrs().feature_index;
  XS_RETURN_IF_ERROR(shape_inference::ExpectArray(x, "the operand"));
  if (f < 0 || f >= x.rank() || !IsFloating(x.dtype())) {
    return InvalidArgument("feature_index=", f, " must be a dim of the floating operand ",
                           ShapeText(x));
  }
  Shape feature(x.dtype(), {x.dim(static_cast<int>(f))});
  const bool grad = inst.opcode() == Opcode::kBatchNormGrad;
  for (int i = 1; i < inst.operand_count(); ++i) {
    const bool full = grad && i == 4;  // batch-norm-grad's grad_output has the operand's shape
    if (!CompatibleIgnoringFpPrecision(Op(inst, i), full ? x : feature)) {
      return InvalidArgument("operand ", i, " ", ShapeText(Op(inst, i)), " must be ",
                             ShapeText(full ? x : feature));
    }
  }
  if (inst.opcode() == Opcode::kBatchNormInference) return x.WithoutLayout();
  return Shape::Tuple({x.WithoutLayout(), feature, feature});
}

struct CollectiveRule {
  Opcode op;
  Handler fn;
};
constexpr CollectiveRule kCollectiveRules[] = {
    {Opcode::kAllGather, AllGatherHandler}, {Opcode::kAllGatherStart, AllGatherStartHandler},
    {Opcode::kAllGatherDone, SecondElementHandler}, {Opcode::kAllReduce, AllReduceHandler},
    {Opcode::kAllReduceStart, AllReduceHandler}, {Opcode::kAllReduceDone, SameAsOperandHandler},
    {Opcode::kReduceScatter, ReduceScatterHandler}, {Opcode::kAllToAll, AllToAllHandler},
    {Opcode::kCollectivePermute, CollectivePermuteHandler},
    {Opcode::kCollectivePermuteStart, CollectivePermuteStartHandler},
    {Opcode::kCollectivePermuteDone, SecondElementHandler},
    {Opcode::kCollectiveBroadcast, AllReduceHandler},
    {Opcode::kRaggedAllToAll, RaggedAllToAllHandler},
    {Opcode::kPartitionId, U32ScalarHandler}, {Opcode::kReplicaId, U32ScalarHandler},
    {Opcode::kAfterAll, TokenHandler}, {Opcode::kAddDependency, AddDependencyHandler},
    {Opcode::kSend, SendHandler}, {Opcode::kSendDone, TokenHandler}, {Opcode::kRecv, RecvHandler},
    {Opcode::kRecvDone, RecvDoneHandler}, {Opcode::kInfeed, InfeedHandler},
    {Opcode::kOutfeed, OutfeedHandler}, {Opcode::kCopyStart, CopyStartHandler},
    {Opcode::kCopyDone, FirstElementHandler}, {Opcode::kAsyncStart, AsyncStartHandler},
    {Opcode::kAsyncUpdate, SameAsOperandHandler}, {Opcode::kAsyncDone, SecondElementHandler},
    {Opcode::kRng, RngHandler}, {Opcode::kRngBitGenerator, RngBitGeneratorHandler},
    {Opcode::kRngGetAndUpdateState, RngStateHandler},
    {Opcode::kGetDimensionSize, GetDimensionSizeHandler},
    {Opcode::kSetDimensionSize, SetDimensionSizeHandler}, {Opcode::kFft, FftHandler},
    {Opcode::kCholesky, CholeskyHandler}, {Opcode::kTriangularSolve, TriangularSolveHandler},
    {Opcode::kBatchNormTraining, BatchNormHandler}, {Opcode::kBatchNormInference, BatchNormHandler},
    {Opcode::kBatchNormGrad, BatchNormHandler},
};

}  // namespace

Handler CollectiveHandlerFor(Opcode op) {
  for (const CollectiveRule& r : kCollectiveRules) {
    if (r.op == op) return r.fn;
  }
  return nullptr;
}

}  // namespace xs::instruction_shape
