// InferInstructionShape handlers for the array ops: conversions, data movement, contractions,
// reductions, indexed ops, control flow, custom-call (see shape_inference_instruction.cc).
#include <algorithm>

#include "xshard/ir/computation.h"
#include "xshard/ir/shape_inference.h"
#include "xshard/ir/shape_inference_instruction.h"
#include "xshard/ir/shape_inference_util.h"

namespace xs::instruction_shape {
namespace {

StatusOr<Shape> TernaryHandler(const Instruction& inst) {
  return InferTernaryOpShape(inst.opcode(), Op(inst, 0), Op(inst, 1), Op(inst, 2));
}

StatusOr<Shape> ConvertHandler(const Instruction& inst) {
  XS_RETURN_IF_ERROR(shape_inference::ExpectArray(inst.shape(), "the result of convert"));
  return InferConvertShape(Op(inst, 0), inst.shape().dtype());
}
StatusOr<Shape> BitcastConvertHandler(const Instruction& inst) {
  XS_RETURN_IF_ERROR(shape_inference::ExpectArray(inst.shape(), "the result of bitcast-convert"));
  return InferBitcastConvertShape(Op(inst, 0), inst.shape().dtype());
}
StatusOr<Shape> StochasticConvertHandler(const Instruction& inst) {
  const Shape& x = Op(inst, 0);
  const Shape& r = Op(inst, 1);
  XS_RETURN_IF_ERROR(shape_inference::ExpectArray(inst.shape(), "the result of stochastic-convert"));
  if (!x.IsArray() || !r.IsArray() || !IsFloating(x.dtype()) || !IsUnsignedInteger(r.dtype()) ||
      shape_inference::BitWidth(x.dtype()) != shape_inference::BitWidth(r.dtype()) || x.dims() != r.dims()) {
    return InvalidArgument("stochastic-convert needs a floating operand and unsigned random ",
                           "bits of the same width and dims, got ", ShapeText(x), " and ",
                           ShapeText(r));
  }
  return InferConvertShape(x, inst.shape().dtype());
}
StatusOr<Shape> BroadcastHandler(const Instruction& inst) {
  XS_RETURN_IF_ERROR(shape_inference::ExpectArray(inst.shape(), "the result of broadcast"));
  return InferBroadcastShape(Op(inst, 0), inst.shape().dims(), inst.dimensions());
}
StatusOr<Shape> ReshapeHandler(const Instruction& inst) {
  XS_RETURN_IF_ERROR(shape_inference::ExpectArray(inst.shape(), "the result of reshape"));
  return InferReshapeShape(Op(inst, 0), inst.shape().dims());
}
StatusOr<Shape> DynamicReshapeHandler(const Instruction& inst) {
  XS_RETURN_IF_ERROR(shape_inference::ExpectArray(inst.shape(), "the result of dynamic-reshape"));
  if (inst.operand_count() != inst.shape().rank() + 1) {
    return InvalidArgument("dynamic-reshape to ", ShapeText(inst.shape()), " takes the operand ",
                           "and one s32[] size per result dim (", inst.shape().rank() + 1,
                           " operands), got ", inst.operand_count());
  }
  for (int i = 1; i < inst.operand_count(); ++i) {
    if (!Op(inst, i).Compatible(Shape(DType::kS32, {}))) {
      return InvalidArgument("dynamic-reshape size operand ", i, " must be s32[], got ",
                             ShapeText(Op(inst, i)));
    }
  }
  return InferReshapeShape(Op(inst, 0), inst.shape().dims());
}
StatusOr<Shape> TransposeHandler(const Instruction& inst) {
  return InferTransposeShape(Op(inst, 0), inst.dimensions());
}
StatusOr<Shape> SliceHandler(const Instruction& inst) {
  if (!inst.attrs().slice) return InvalidArgument("slice needs a slice={...} attribute");
  return InferSliceShape(Op(inst, 0), *inst.attrs().slice);
}
StatusOr<Shape> DynamicSliceHandler(const Instruction& inst) {
  if (inst.operand_count() < 1) return InvalidArgument("dynamic-slice needs an operand");
  std::vector<int64_t> sizes = inst.attrs().dynamic_slice_sizes.value_or(std::vector<int64_t>{});
  return InferDynamicSliceShape(Op(inst, 0), OperandShapes(inst, 1), sizes);
}
StatusOr<Shape> DynamicUpdateSliceHandler(const Instruction& inst) {
  if (inst.operand_count() < 2) {
    return InvalidArgument("dynamic-update-slice needs an operand, an update and indices");
  }
  return InferDynamicUpdateSliceShape(Op(inst, 0), Op(inst, 1), OperandShapes(inst, 2));
}
StatusOr<Shape> ConcatenateHandler(const Instruction& inst) {
  if (inst.dimensions().size() != 1) {
    return InvalidArgument("concatenate needs dimensions={d} with one dim, got {",
                           StrJoin(inst.dimensions(), ","), "}");
  }
  return InferConcatenateShape(OperandShapes(inst, 0), inst.dimensions()[0]);
}
StatusOr<Shape> PadHandler(const Instruction& inst) {
  std::vector<PaddingDim> padding = inst.attrs().padding.value_or(std::vector<PaddingDim>{});
  return InferPadShape(Op(inst, 0), Op(inst, 1), padding);
}
StatusOr<Shape> ReverseHandler(const Instruction& inst) {
  return InferReverseShape(Op(inst, 0), inst.dimensions());
}
StatusOr<Shape> IotaHandler(const Instruction& inst) {
  if (!inst.attrs().iota_dimension) return InvalidArgument("iota needs iota_dimension=N");
  return InferIotaShape(inst.shape(), *inst.attrs().iota_dimension);
}
StatusOr<Shape> TupleHandler(const Instruction& inst) {
  return InferTupleShape(OperandShapes(inst, 0));
}
StatusOr<Shape> GetTupleElementHandler(const Instruction& inst) {
  if (!inst.attrs().tuple_index) return InvalidArgument("get-tuple-element needs index=N");
  return InferGetTupleElementShape(Op(inst, 0), *inst.attrs().tuple_index);
}
StatusOr<Shape> ConstantHandler(const Instruction& inst) {
  const auto& lit = inst.attrs().literal;
  if (!lit) return InvalidArgument("constant has no value");
  // A literal's shape: its array's, or a tuple of its elements'.
  struct Walk {
    static Shape Of(const Literal& l) {
      if (l.array) return l.array->shape();
      std::vector<Shape> elems;
      for (const Literal& e : l.elements) elems.push_back(Of(e));
      return Shape::Tuple(std::move(elems));
    }
  };
  return Walk::Of(*lit);
}
// custom-call: the declared shape; operand_layout_constraints={...} must list one shape per
// operand, each equal to the operand's (layouts aside).
StatusOr<Shape> CustomCallHandler(const Instruction& inst) {
  const auto& shapes = inst.attrs().operand_layout_constraints;
  if (!shapes) return Declared(inst);
  if (static_cast<int>(shapes->size()) != inst.operand_count()) {
    return InvalidArgument("operand_layout_constraints lists ", shapes->size(),
                           " shapes for ", inst.operand_count(), " operands");
  }
  for (int i = 0; i < inst.operand_count(); ++i) {
    if (!(*shapes)[i].Compatible(Op(inst, i))) {
      return InvalidArgument("operand_layout_constraints shape ", ShapeText((*shapes)[i]),
                             " does not match operand ", i, " ", ShapeText(Op(inst, i)));
    }
  }
  return Declared(inst);
}

StatusOr<Shape> DotHandler(const Instruction& inst) {
  if (inst.attrs().Other("sparsity")) return Declared(inst);  // sparse operands are compressed
  XS_RETURN_IF_ERROR(ExpectOperandCount(inst, 2));
  XS_RETURN_IF_ERROR(shape_inference::ExpectArray(inst.shape(), "the result of dot"));
  DotDimensionNumbers dn = inst.attrs().dot.value_or(DotDimensionNumbers{});
  return InferDotShape(Op(inst, 0), Op(inst, 1), dn, inst.shape().dtype());
}
// ragged-dot(lhs, rhs, group_sizes): a dot whose rhs carries extra group dims (rhs_group_dims,
// dropped from the result); when the ragged lhs dim is contracted, the result gains a leading
// dim of one entry per group.
StatusOr<Shape> RaggedDotHandler(const Instruction& inst) {
  const Shape &lhs = Op(inst, 0), &rhs = Op(inst, 1), &sizes = Op(inst, 2);
  const std::optional<std::vector<int64_t>>& ragged = inst.attrs().lhs_ragged_dims;
  const std::vector<int64_t> group = inst.attrs().rhs_group_dims.value_or(std::vector<int64_t>{});
  if (!ragged || ragged->size() != 1) {
    return InvalidArgument("ragged-dot needs lhs_ragged_dims={d} (and optional rhs_group_dims)");
  }
  XS_RETURN_IF_ERROR(shape_inference::ExpectArray(rhs, "rhs"));
  XS_RETURN_IF_ERROR(shape_inference::ExpectArray(inst.shape(), "the result of ragged-dot"));
  if (!sizes.IsArray() || sizes.rank() < 1 || !IsInteger(sizes.dtype())) {
    return InvalidArgument("group sizes must be an integer array, got ", ShapeText(sizes));
  }
  XS_RETURN_IF_ERROR(shape_inference::CheckDimsInRange(group, rhs.rank(), "rhs group dim", rhs, true));
  DotDimensionNumbers dn = inst.attrs().dot.value_or(DotDimensionNumbers{});
  std::vector<int64_t> kept;
  for (int i = 0; i < rhs.rank(); ++i) {
    if (!shape_inference::Contains(group, i)) kept.push_back(rhs.dim(i));
  }
  auto remap = [&](std::vector<int64_t>& dims) -> Status {
    for (int64_t& d : dims) {
      if (shape_inference::Contains(group, d)) {
        return InvalidArgument("rhs group dim ", d, " is also a batch or contracting dim");
      }
      d -= std::count_if(group.begin(), group.end(), [d](int64_t g) { return g < d; });
    }
    return OkStatus();
  };
  XS_RETURN_IF_ERROR(remap(dn.rhs_batch));
  XS_RETURN_IF_ERROR(remap(dn.rhs_contracting));
  XS_ASSIGN_OR_RETURN(Shape out, InferDotShape(lhs, Shape(rhs.dtype(), kept), dn,
                                               inst.shape().dtype()));
  if (shape_inference::Contains(dn.lhs_contracting, (*ragged)[0])) {
    std::vector<int64_t> dims = {sizes.dims().back()};
    dims.insert(dims.end(), out.dims().begin(), out.dims().end());
    return Shape(out.dtype(), std::move(dims));
  }
  return out;
}

StatusOr<Shape> ConvolutionHandler(const Instruction& inst) {
  if (inst.attrs().Other("sparsity_config")) return Declared(inst);
  XS_RETURN_IF_ERROR(ExpectOperandCount(inst, 2));
  XS_RETURN_IF_ERROR(shape_inference::ExpectArray(inst.shape(), "the result of convolution"));
  if (!inst.attrs().conv_dims) return InvalidArgument("convolution needs dim_labels=...");
  const auto& a = inst.attrs();
  return InferConvolutionShape(Op(inst, 0), Op(inst, 1), a.feature_group_count,
                               a.batch_group_count, a.window.value_or(Window{}), *a.conv_dims,
                               inst.shape().dtype());
}
StatusOr<Shape> ReduceHandler(const Instruction& inst) {
  XS_ASSIGN_OR_RETURN(ProgramShape fn, Called(inst, CallRole::kToApply));
  return InferReduceShape(OperandShapes(inst, 0), inst.dimensions(), fn);
}
StatusOr<Shape> ReduceWindowHandler(const Instruction& inst) {
  XS_ASSIGN_OR_RETURN(ProgramShape fn, Called(inst, CallRole::kToApply));
  return InferReduceWindowShape(OperandShapes(inst, 0), inst.attrs().window.value_or(Window{}),
                                fn);
}
StatusOr<Shape> SelectAndScatterHandler(const Instruction& inst) {
  XS_ASSIGN_OR_RETURN(ProgramShape select, Called(inst, CallRole::kSelect));
  XS_ASSIGN_OR_RETURN(ProgramShape scatter, Called(inst, CallRole::kScatter));
  return InferSelectAndScatterShape(Op(inst, 0), select, inst.attrs().window.value_or(Window{}),
                                    Op(inst, 1), Op(inst, 2), scatter);
}
StatusOr<Shape> GatherHandler(const Instruction& inst) {
  if (!inst.attrs().gather) return InvalidArgument("gather needs its dimension numbers");
  std::vector<int64_t> sizes = inst.attrs().slice_sizes.value_or(std::vector<int64_t>{});
  return InferGatherShape(Op(inst, 0), Op(inst, 1), *inst.attrs().gather, sizes);
}
StatusOr<Shape> ScatterHandler(const Instruction& inst) {
  if (!inst.attrs().scatter) return InvalidArgument("scatter needs its dimension numbers");
  XS_ASSIGN_OR_RETURN(ProgramShape fn, Called(inst, CallRole::kToApply));
  return InferScatterShape(OperandShapes(inst, 0), fn, *inst.attrs().scatter);
}
StatusOr<Shape> SortHandler(const Instruction& inst) {
  XS_ASSIGN_OR_RETURN(ProgramShape fn, Called(inst, CallRole::kToApply));
  return InferSortShape(OperandShapes(inst, 0), FirstDimension(inst, 0), fn);
}
StatusOr<Shape> MapHandler(const Instruction& inst) {
  XS_ASSIGN_OR_RETURN(ProgramShape fn, Called(inst, CallRole::kToApply));
  return InferMapShape(OperandShapes(inst, 0), fn);
}
StatusOr<Shape> TopKHandler(const Instruction& inst) {
  if (!inst.attrs().k) return InvalidArgument("topk needs k=N");
  return InferTopKShape(Op(inst, 0), *inst.attrs().k);
}
StatusOr<Shape> CallHandler(const Instruction& inst) {
  XS_ASSIGN_OR_RETURN(ProgramShape fn, Called(inst, CallRole::kToApply));
  return InferCallShape(OperandShapes(inst, 0), fn);
}
StatusOr<Shape> WhileHandler(const Instruction& inst) {
  XS_ASSIGN_OR_RETURN(ProgramShape cond, Called(inst, CallRole::kCondition));
  XS_ASSIGN_OR_RETURN(ProgramShape body, Called(inst, CallRole::kBody));
  return InferWhileShape(cond, body, Op(inst, 0));
}
StatusOr<Shape> ConditionalHandler(const Instruction& inst) {
  if (inst.operand_count() < 1) return InvalidArgument("conditional needs a branch index");
  if (Op(inst, 0).Compatible(Shape(DType::kPred, {})) &&
      (!inst.called(CallRole::kTrueComputation) || !inst.called(CallRole::kFalseComputation))) {
    return InvalidArgument("a conditional with a pred[] index needs true_computation= and ",
                           "false_computation=, not branch_computations=");
  }
  std::vector<ProgramShape> branches;
  for (Computation* c : inst.branch_computations()) {
    XS_ASSIGN_OR_RETURN(ProgramShape p, ComputeProgramShape(*c));
    branches.push_back(std::move(p));
  }
  return InferConditionalShape(Op(inst, 0), branches, OperandShapes(inst, 1));
}
StatusOr<Shape> FusionHandler(const Instruction& inst) {
  XS_ASSIGN_OR_RETURN(ProgramShape fn, Called(inst, CallRole::kCalls));
  return InferCallShape(OperandShapes(inst, 0), fn);
}



struct OpRule {
  Opcode op;
  Handler fn;
};

const OpRule kOpRules[] = {
    {Opcode::kConvert, ConvertHandler}, {Opcode::kBitcastConvert, BitcastConvertHandler},
    {Opcode::kStochasticConvert, StochasticConvertHandler},
    {Opcode::kBroadcast, BroadcastHandler}, {Opcode::kReshape, ReshapeHandler},
    {Opcode::kDynamicReshape, DynamicReshapeHandler}, {Opcode::kTranspose, TransposeHandler},
    {Opcode::kSlice, SliceHandler}, {Opcode::kDynamicSlice, DynamicSliceHandler},
    {Opcode::kDynamicUpdateSlice, DynamicUpdateSliceHandler},
    {Opcode::kConcatenate, ConcatenateHandler}, {Opcode::kPad, PadHandler},
    {Opcode::kReverse, ReverseHandler}, {Opcode::kIota, IotaHandler},
    {Opcode::kTuple, TupleHandler}, {Opcode::kGetTupleElement, GetTupleElementHandler},
    {Opcode::kConstant, ConstantHandler}, {Opcode::kDot, DotHandler},
    {Opcode::kConvolution, ConvolutionHandler}, {Opcode::kReduce, ReduceHandler},
    {Opcode::kReduceWindow, ReduceWindowHandler},
    {Opcode::kSelectAndScatter, SelectAndScatterHandler}, {Opcode::kGather, GatherHandler},
    {Opcode::kScatter, ScatterHandler}, {Opcode::kSort, SortHandler}, {Opcode::kMap, MapHandler},
    {Opcode::kTopK, TopKHandler}, {Opcode::kCall, CallHandler}, {Opcode::kWhile, WhileHandler},
    {Opcode::kConditional, ConditionalHandler}, {Opcode::kFusion, FusionHandler},
    {Opcode::kSelect, TernaryHandler}, {Opcode::kClamp, TernaryHandler},
    {Opcode::kParameter, DeclaredHandler}, {Opcode::kCustomCall, CustomCallHandler},
    {Opcode::kBitcast, DeclaredHandler}, {Opcode::kScan, DeclaredHandler},
    {Opcode::kShuffle, DeclaredHandler}, {Opcode::kRaggedDot, RaggedDotHandler},
    {Opcode::kScaledDot, DeclaredHandler},
};

}  // namespace

StatusOr<Shape> DeclaredHandler(const Instruction& inst) { return Declared(inst); }

Handler OpHandlerFor(Opcode op) {
  for (const OpRule& r : kOpRules) {
    if (r.op == op) return r.fn;
  }
  return nullptr;
}

}  // namespace xs::instruction_shape
