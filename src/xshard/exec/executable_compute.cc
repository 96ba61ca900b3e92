// Executor handlers for the heavy ops: dot, convolution, reduce, reduce-window,
// select-and-scatter, gather, scatter, sort. Reducer / comparator computations are recognized
// (add, max, compare LT, ...) for the kernels' typed loops, else run per element as scalar plans.
#include "xshard/kernels/convolution.h"
#include "xshard/kernels/dot.h"
#include "xshard/kernels/gather_scatter.h"
#include "xshard/kernels/reduce.h"
#include "xshard/kernels/sort.h"
#include "xshard/exec/executable_plan.h"

namespace xs {
namespace {

Status CheckDims(const Instruction& inst, const std::vector<int64_t>& dims) {
  if (!inst.shape().IsArray() || inst.shape().dims() != dims) {
    return InvalidArgument("declared shape ", inst.shape().ToString(false), " differs from the computed [",
                           JoinDims(dims), "]");
  }
  return OkStatus();
}

Status RequireCallee(const Instruction& inst, CallRole role, Step& step, const Program& program) {
  const Computation* c = inst.called(role);
  if (c == nullptr) return InvalidArgument("missing ", CallRoleName(role), "=");
  const ComputationPlan* plan = program.Get(c);
  if (plan == nullptr) return Internal("computation '", c->name(), "' was not planned");
  for (const Instruction* p : c->parameters()) {
    if (!p->shape().IsArray()) {
      return UnsupportedInstruction(inst, StrCat("computation '", c->name(), "' takes a non-array parameter"));
    }
  }
  step.callees.push_back(plan);
  return OkStatus();
}

std::vector<const Array*> Operands(const Step& step, const Frame& frame, int first, int count) {
  std::vector<const Array*> out;
  for (int i = first; i < first + count; ++i) out.push_back(&OperandArray(step, frame, i));
  return out;
}

Slot ResultSlot(std::vector<Array> arrays, RunContext& ctx, bool tuple) {
  if (!tuple) return OwnedSlot(AdoptArray(std::move(arrays[0]), ctx));
  std::vector<Slot> elements;
  for (Array& a : arrays) elements.push_back(OwnedSlot(AdoptArray(std::move(a), ctx)));
  return TupleSlot(std::move(elements));
}

// A combiner for the step: typed when recognized, else the callee run per element by `runner`.
kernels::Combiner MakeCombiner(const Step& step, std::optional<ScalarRunner>& runner, RunContext& ctx,
                               int callee) {
  kernels::Combiner c;
  c.kind = step.combine().combine;
  c.arg_select = step.combine().arg_select;
  if (c.kind == kernels::CombineKind::kGeneric) {
    runner.emplace(*step.callees[callee], ctx);
    c.fn = runner->AsFn();
  }
  return c;
}

Status RunDot(const Step& step, Frame& frame, RunContext& ctx) {
  const Array& lhs = OperandArray(step, frame, 0);
  const Array& rhs = OperandArray(step, frame, 1);
  // The plan writes every element (DotPlan::Run: `out` need not be zeroed): the planned buffer.
  const kernels::DotPlan& plan = *step.dot().plan;
  std::shared_ptr<Array> out = NewArray(plan.result_shape(), ctx);
  XS_RETURN_IF_ERROR(plan.Run(lhs.data(), rhs.data(), out->data()));
  frame.slots[step.out] = OwnedSlot(std::move(out));
  return OkStatus();
}

Status PrepareDot(const Instruction& inst, Step& step, const Program&) {
  if (!inst.attrs().dot) return InvalidArgument("dot needs dimension numbers");
  if (inst.attrs().Other("sparsity")) return UnsupportedInstruction(inst, "sparse dot");
  if (inst.attrs().operand_precision) {
    for (Precision p : *inst.attrs().operand_precision) {
      if (p == Precision::kPacketNibble) return UnsupportedInstruction(inst, "packed_nibble precision");
    }
  }
  XS_ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                      kernels::DotResultDims(inst.operand(0)->shape().dims(), inst.operand(1)->shape().dims(),
                                             *inst.attrs().dot));
  XS_RETURN_IF_ERROR(CheckDims(inst, dims));
  for (const Shape* s : {&inst.shape(), &inst.operand(0)->shape(), &inst.operand(1)->shape()}) {
    if (!kernels::IsComputableDType(s->dtype())) {
      return UnsupportedInstruction(inst, StrCat("element type ", DTypeName(s->dtype())));
    }
  }
  XS_ASSIGN_OR_RETURN(step.SetPayload(DotPayload{}).plan,
                      kernels::DotPlan::Create(inst.operand(0)->shape(), inst.operand(1)->shape(), *inst.attrs().dot,
                                               inst.shape().dtype()));
  step.run = &RunDot;
  step.writes_result_buffer = true;
  return OkStatus();
}

kernels::ConvolutionParams ConvParams(const Instruction& inst) {
  kernels::ConvolutionParams p;
  p.window = inst.attrs().window.value_or(Window{});
  p.dims = *inst.attrs().conv_dims;
  p.feature_group_count = inst.attrs().feature_group_count;
  p.batch_group_count = inst.attrs().batch_group_count;
  return p;
}

Status RunConvolution(const Step& step, Frame& frame, RunContext& ctx) {
  XS_ASSIGN_OR_RETURN(Array out, kernels::Convolution(OperandArray(step, frame, 0), OperandArray(step, frame, 1),
                                                      ConvParams(*step.inst), step.inst->shape().dtype()));
  frame.slots[step.out] = OwnedSlot(AdoptArray(std::move(out), ctx));
  return OkStatus();
}

Status PrepareConvolution(const Instruction& inst, Step& step, const Program&) {
  if (inst.operand_count() != 2 || !inst.attrs().conv_dims) {
    return UnsupportedInstruction(inst, "needs two operands and dim_labels");
  }
  XS_ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                      kernels::ConvolutionResultDims(inst.operand(0)->shape().dims(),
                                                     inst.operand(1)->shape().dims(), ConvParams(inst)));
  XS_RETURN_IF_ERROR(CheckDims(inst, dims));
  if (!kernels::IsComputableDType(inst.shape().dtype())) {
    return UnsupportedInstruction(inst, StrCat("element type ", DTypeName(inst.shape().dtype())));
  }
  step.run = &RunConvolution;
  return OkStatus();
}

Status RunReduce(const Step& step, Frame& frame, RunContext& ctx) {
  const int n = static_cast<int>(step.operands.size()) / 2;
  std::optional<ScalarRunner> runner;
  const kernels::Combiner c = MakeCombiner(step, runner, ctx, 0);
  XS_ASSIGN_OR_RETURN(std::vector<Array> outs,
                      kernels::Reduce(Operands(step, frame, 0, n), Operands(step, frame, n, n),
                                      step.inst->dimensions(), c));
  frame.slots[step.out] = ResultSlot(std::move(outs), ctx, step.inst->shape().IsTuple());
  return OkStatus();
}

Status PrepareReduceLike(const Instruction& inst, Step& step, const Program& program, RunFn run) {
  if (inst.operand_count() % 2 != 0 || inst.operand_count() == 0) {
    return InvalidArgument("needs N inputs followed by N init values");
  }
  XS_RETURN_IF_ERROR(RequireCallee(inst, CallRole::kToApply, step, program));
  const int n = inst.operand_count() / 2;
  CombinePayload& p = step.SetPayload(CombinePayload{});
  if (n == 1 && inst.operand(0)->shape().dtype() == inst.to_apply()->parameter(0)->shape().dtype()) {
    p.combine = ClassifyCombiner(*inst.to_apply(), /*allow_overwrite=*/false);
  }
  if (n == 2 && inst.operand(0)->shape().dtype() == inst.to_apply()->parameter(0)->shape().dtype() &&
      inst.operand(1)->shape().dtype() == inst.to_apply()->parameter(1)->shape().dtype()) {
    p.arg_select = ClassifyArgSelect(*inst.to_apply());
  }
  step.run = run;
  return OkStatus();
}

Status PrepareReduce(const Instruction& inst, Step& step, const Program& program) {
  return PrepareReduceLike(inst, step, program, &RunReduce);
}

Status RunReduceWindow(const Step& step, Frame& frame, RunContext& ctx) {
  const int n = static_cast<int>(step.operands.size()) / 2;
  std::optional<ScalarRunner> runner;
  const kernels::Combiner c = MakeCombiner(step, runner, ctx, 0);
  XS_ASSIGN_OR_RETURN(std::vector<Array> outs,
                      kernels::ReduceWindow(Operands(step, frame, 0, n), Operands(step, frame, n, n),
                                            step.inst->attrs().window.value_or(Window{}), c));
  frame.slots[step.out] = ResultSlot(std::move(outs), ctx, step.inst->shape().IsTuple());
  return OkStatus();
}

// A rank-0 window may be written without window= at all.
bool HasWindow(const Instruction& inst) {
  return inst.attrs().window.has_value() || inst.operand(0)->shape().rank() == 0;
}

Status PrepareReduceWindow(const Instruction& inst, Step& step, const Program& program) {
  if (!HasWindow(inst)) return InvalidArgument("reduce-window needs window=");
  XS_RETURN_IF_ERROR(PrepareReduceLike(inst, step, program, &RunReduceWindow));
  const Window window = inst.attrs().window.value_or(Window{});
  if (window.dims.size() != inst.operand(0)->shape().dims().size()) {
    return InvalidArgument("window has ", window.dims.size(), " dims for an operand of rank ",
                           inst.operand(0)->shape().rank());
  }
  const std::vector<int64_t> dims = kernels::WindowOutputDims(inst.operand(0)->shape().dims(), window);
  const Shape& first = inst.shape().IsTuple() ? inst.shape().tuple_shape(0) : inst.shape();
  if (first.dims() != dims) return InvalidArgument("declared shape does not match the window");
  return OkStatus();
}

Status RunSelectAndScatter(const Step& step, Frame& frame, RunContext& ctx) {
  ScalarRunner select(*step.callees[0], ctx);
  std::optional<ScalarRunner> runner;
  const kernels::Combiner c = MakeCombiner(step, runner, ctx, 1);
  XS_ASSIGN_OR_RETURN(Array out, kernels::SelectAndScatter(OperandArray(step, frame, 0), OperandArray(step, frame, 1),
                                                           OperandArray(step, frame, 2),
                                                           step.inst->attrs().window.value_or(Window{}),
                                                           select.AsFn(), c));
  frame.slots[step.out] = OwnedSlot(AdoptArray(std::move(out), ctx));
  return OkStatus();
}

Status PrepareSelectAndScatter(const Instruction& inst, Step& step, const Program& program) {
  if (!HasWindow(inst)) return InvalidArgument("select-and-scatter needs window=");
  XS_RETURN_IF_ERROR(RequireCallee(inst, CallRole::kSelect, step, program));
  XS_RETURN_IF_ERROR(RequireCallee(inst, CallRole::kScatter, step, program));
  step.SetPayload(CombinePayload{ClassifyCombiner(*inst.called(CallRole::kScatter), /*allow_overwrite=*/false)});
  step.run = &RunSelectAndScatter;
  return OkStatus();
}

Status RunGather(const Step& step, Frame& frame, RunContext& ctx) {
  XS_ASSIGN_OR_RETURN(Array out, kernels::Gather(OperandArray(step, frame, 0), OperandArray(step, frame, 1),
                                                 *step.inst->attrs().gather, *step.inst->attrs().slice_sizes));
  frame.slots[step.out] = OwnedSlot(AdoptArray(std::move(out), ctx));
  return OkStatus();
}

Status PrepareGather(const Instruction& inst, Step& step, const Program&) {
  if (!inst.attrs().gather || !inst.attrs().slice_sizes) return InvalidArgument("gather needs dimension numbers");
  XS_ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                      kernels::GatherResultDims(inst.operand(0)->shape().dims(), inst.operand(1)->shape().dims(),
                                                *inst.attrs().gather, *inst.attrs().slice_sizes));
  XS_RETURN_IF_ERROR(CheckDims(inst, dims));
  step.run = &RunGather;
  return OkStatus();
}

Status RunScatter(const Step& step, Frame& frame, RunContext& ctx) {
  const int n = (static_cast<int>(step.operands.size()) - 1) / 2;
  std::optional<ScalarRunner> runner;
  const kernels::Combiner c = MakeCombiner(step, runner, ctx, 0);
  XS_ASSIGN_OR_RETURN(std::vector<Array> outs,
                      kernels::Scatter(Operands(step, frame, 0, n), OperandArray(step, frame, n),
                                       Operands(step, frame, n + 1, n), *step.inst->attrs().scatter, c));
  frame.slots[step.out] = ResultSlot(std::move(outs), ctx, step.inst->shape().IsTuple());
  return OkStatus();
}

Status PrepareScatter(const Instruction& inst, Step& step, const Program& program) {
  if (!inst.attrs().scatter || inst.operand_count() < 3 || inst.operand_count() % 2 == 0) {
    return InvalidArgument("scatter needs N operands, indices, N updates and dimension numbers");
  }
  XS_RETURN_IF_ERROR(RequireCallee(inst, CallRole::kToApply, step, program));
  CombinePayload& p = step.SetPayload(CombinePayload{});
  if (inst.operand_count() == 3) p.combine = ClassifyCombiner(*inst.to_apply(), /*allow_overwrite=*/true);
  step.run = &RunScatter;
  return OkStatus();
}

Status RunSort(const Step& step, Frame& frame, RunContext& ctx) {
  const int n = static_cast<int>(step.operands.size());
  kernels::Comparator cmp = step.sort().comparator;
  std::optional<ScalarRunner> runner;
  if (!cmp.direction) {
    runner.emplace(*step.callees[0], ctx);
    cmp.fn = runner->AsFn();
  }
  XS_ASSIGN_OR_RETURN(std::vector<Array> outs,
                      kernels::Sort(Operands(step, frame, 0, n), step.inst->dimensions()[0], cmp));
  frame.slots[step.out] = ResultSlot(std::move(outs), ctx, step.inst->shape().IsTuple());
  return OkStatus();
}

// compare(parameter(2k), parameter(2k+1)) as the whole comparator -> the kernel's fast path.
kernels::Comparator ClassifyComparator(const Computation& c) {
  kernels::Comparator cmp;
  const Instruction* root = c.root();
  if (root->opcode() != Opcode::kCompare || !root->attrs().comparison_direction) return cmp;
  const Instruction* a = root->operand(0);
  const Instruction* b = root->operand(1);
  if (a->opcode() != Opcode::kParameter || b->opcode() != Opcode::kParameter) return cmp;
  const int64_t pa = a->parameter_number(), pb = b->parameter_number();
  if (pa / 2 != pb / 2 || pa == pb) return cmp;
  ComparisonDirection d = *root->attrs().comparison_direction;
  if (pa > pb) {  // compare(b, a): flip the direction
    switch (d) {
      case ComparisonDirection::kLt: d = ComparisonDirection::kGt; break;
      case ComparisonDirection::kGt: d = ComparisonDirection::kLt; break;
      case ComparisonDirection::kLe: d = ComparisonDirection::kGe; break;
      case ComparisonDirection::kGe: d = ComparisonDirection::kLe; break;
      default: break;
    }
  }
  cmp.direction = d;
  cmp.type = root->attrs().comparison_type;
  cmp.key = static_cast<int>(pa / 2);
  return cmp;
}

Status PrepareSort(const Instruction& inst, Step& step, const Program& program) {
  if (inst.dimensions().size() != 1) return InvalidArgument("sort needs dimensions={d}");
  XS_RETURN_IF_ERROR(RequireCallee(inst, CallRole::kToApply, step, program));
  step.SetPayload(SortPayload{ClassifyComparator(*inst.to_apply())});
  step.run = &RunSort;
  return OkStatus();
}

}  // namespace

void RegisterComputeHandlers(HandlerTable& t) {
  auto set = [&t](Opcode op, PrepareFn f) { t[static_cast<int>(op)] = f; };
  set(Opcode::kDot, &PrepareDot);
  set(Opcode::kConvolution, &PrepareConvolution);
  set(Opcode::kReduce, &PrepareReduce);
  set(Opcode::kReduceWindow, &PrepareReduceWindow);
  set(Opcode::kSelectAndScatter, &PrepareSelectAndScatter);
  set(Opcode::kGather, &PrepareGather);
  set(Opcode::kScatter, &PrepareScatter);
  set(Opcode::kSort, &PrepareSort);
}

}  // namespace xs
