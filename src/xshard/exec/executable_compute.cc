// Executor handlers for the heavy ops: dot, convolution, reduce, reduce-window,
// select-and-scatter, gather, scatter, sort. Reducer / comparator computations are recognized
// (add, max, compare LT, ...) for the kernels' typed loops, else run per element as scalar plans.
#include <algorithm>
#include <cstring>

#include "xshard/kernels/convolution.h"
#include "xshard/kernels/dot.h"
#include "xshard/kernels/gather_scatter.h"
#include "xshard/kernels/parallel.h"
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
    if (!kernels::IsElementwiseDType(s->dtype())) {
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
  if (!kernels::IsElementwiseDType(inst.shape().dtype())) {
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
  if (n == 2 && inst.to_apply()->num_parameters() == 4 && inst.to_apply()->parameter(0) != nullptr &&
      inst.to_apply()->parameter(1) != nullptr &&
      inst.operand(0)->shape().dtype() == inst.to_apply()->parameter(0)->shape().dtype() &&
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

// The gather's planned buffer when Prepare asked for one (the result is the operand's dtype),
// else a new array.
Status RunGather(const Step& step, Frame& frame, RunContext& ctx) {
  const Array& operand = OperandArray(step, frame, 0);
  const Array& indices = OperandArray(step, frame, 1);
  const GatherDimensionNumbers& dn = *step.inst->attrs().gather;
  const std::vector<int64_t>& sizes = *step.inst->attrs().slice_sizes;
  const int threads = IntraOpThreads(ctx);
  if (step.writes_result_buffer) {
    std::shared_ptr<Array> out = NewArray(step.inst->shape(), ctx);
    XS_RETURN_IF_ERROR(kernels::GatherInto(operand, indices, dn, sizes, *out, threads));
    frame.slots[step.out] = OwnedSlot(std::move(out));
    return OkStatus();
  }
  XS_ASSIGN_OR_RETURN(Array out, kernels::Gather(operand, indices, dn, sizes, threads));
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
  // GatherInto writes every element: the result can live in the arena (no allocation, no
  // zero-fill, no page faults on a fresh buffer).
  step.writes_result_buffer =
      inst.operand(0)->shape().IsArray() && inst.shape().dtype() == inst.operand(0)->shape().dtype();
  return OkStatus();
}

Status RunScatter(const Step& step, Frame& frame, RunContext& ctx) {
  const int n = (static_cast<int>(step.operands.size()) - 1) / 2;
  std::optional<ScalarRunner> runner;
  const kernels::Combiner c = MakeCombiner(step, runner, ctx, 0);
  const ScatterDimensionNumbers& dn = *step.inst->attrs().scatter;
  if (step.writes_result_buffer) {
    // One operand, result of its shape: scatter into the planned buffer, which is the operand's
    // own when it dies here (no copy), as dynamic-update-slice does.
    const Array& operand = OperandArray(step, frame, 0);
    std::shared_ptr<Array> out = ResultBuffer(step, frame, ctx, 0);
    if (out->data() != operand.data()) {
      std::memcpy(out->data(), operand.data(), static_cast<size_t>(operand.byte_size()));
    }
    Array* outs[] = {out.get()};
    const Array* updates[] = {&OperandArray(step, frame, 2)};
    XS_RETURN_IF_ERROR(
        kernels::ScatterInPlace(outs, OperandArray(step, frame, 1), updates, dn, c, IntraOpThreads(ctx)));
    frame.slots[step.out] = OwnedSlot(std::move(out));
    return OkStatus();
  }
  XS_ASSIGN_OR_RETURN(std::vector<Array> outs,
                      kernels::Scatter(Operands(step, frame, 0, n), OperandArray(step, frame, n),
                                       Operands(step, frame, n + 1, n), dn, c));
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
  // One operand whose result has its shape: Run copies the operand into the planned buffer (or
  // takes the operand's own buffer when it dies here) and scatters into it.
  const Shape& operand = inst.operand(0)->shape();
  if (inst.operand_count() == 3 && inst.shape().IsArray() && operand.IsArray() &&
      inst.shape().dtype() == operand.dtype() && inst.shape().dims() == operand.dims()) {
    step.writes_result_buffer = true;
    step.inplace_operand = 0;
  }
  return OkStatus();
}

Status RunSort(const Step& step, Frame& frame, RunContext& ctx) {
  const int n = static_cast<int>(step.operands.size());
  kernels::Comparator cmp = step.sort().comparator;
  std::optional<ScalarRunner> runner;
  if (!cmp.direction && cmp.keys.empty()) {
    runner.emplace(*step.callees[0], ctx);
    cmp.fn = runner->AsFn();
  }
  // The typed paths spread rows over the device's threads (the scalar function runs serially).
  const int threads = IntraOpThreads(ctx);
  XS_ASSIGN_OR_RETURN(std::vector<Array> outs,
                      kernels::Sort(Operands(step, frame, 0, n), step.inst->dimensions()[0], cmp, threads));
  frame.slots[step.out] = ResultSlot(std::move(outs), ctx, step.inst->shape().IsTuple());
  return OkStatus();
}

// compare(parameter(2k), parameter(2k+1)) as the whole comparator -> the kernel's fast path.
kernels::Comparator ClassifyCompareComparator(const Computation& c) {
  kernels::Comparator cmp;
  const Instruction* root = c.root();
  if (root->opcode() != Opcode::kCompare || !root->attrs().comparison_direction) return cmp;
  const Instruction* a = root->operand(0);
  const Instruction* b = root->operand(1);
  if (a->opcode() != Opcode::kParameter || b->opcode() != Opcode::kParameter) return cmp;
  const int64_t pa = a->parameter_number(), pb = b->parameter_number();
  if (pa / 2 != pb / 2 || pa == pb) return cmp;
  ComparisonDirection d = *root->attrs().comparison_direction;
  if (pa > pb) d = FlipComparison(d);  // compare(b, a)
  cmp.direction = d;
  cmp.type = root->attrs().comparison_type;
  cmp.key = static_cast<int>(pa / 2);
  return cmp;
}

// ---- JAX's sort comparators (jax._src.lax.lax._sort_lt_comparator, JAX 0.10.2) ----
// For keys k0, k1, ... (operands 0..num_keys-1) the comparator is
//   lex(i) = or(lt(i), and(eq(i), lex(i + 1))),  the last key's lex just lt(i),
// with lt(i) = compare(v(a_i), v(b_i)), direction=LT and eq(i) the same operands with
// direction=EQ (a_i, b_i: parameters 2i, 2i + 1). v is the parameter itself for integer and pred
// keys, and for floats the canonicalization
//   select(compare(x, x), direction=NE, nan, select(compare(x, 0), direction=EQ, 0, x))
// (NaNs equal and last, -0 == +0) compared with type=TOTALORDER. jnp.sort(descending=True)
// reverses an ascending sort; argsort / lax.sort carry the other operands. Matched exactly
// (operands of or / and in either order, compares with the parameters either way round); every
// instruction the root reaches is part of the match, so the order is the one described.

bool IsScalar(const Instruction* i, std::optional<DType> dtype = std::nullopt) {
  return i->shape().IsArray() && i->shape().rank() == 0 && (!dtype || i->shape().dtype() == *dtype);
}

// The bits of a scalar constant of dtype `t` (at most 8 bytes), zero-extended.
std::optional<uint64_t> ScalarConstantBits(const Instruction* i, DType t) {
  if (i->opcode() != Opcode::kConstant || !IsScalar(i, t) || !i->attrs().literal || !i->attrs().literal->array) {
    return std::nullopt;
  }
  const Array& lit = i->literal();
  const int64_t size = DTypeSize(t);
  if (lit.dtype() != t || lit.num_elements() != 1 || size > 8) return std::nullopt;
  uint64_t bits = 0;
  std::memcpy(&bits, lit.data(), static_cast<size_t>(size));  // little-endian host
  return bits;
}

bool IsCompare(const Instruction* i, ComparisonDirection d) {
  return i->opcode() == Opcode::kCompare && i->attrs().comparison_direction == d && IsScalar(i, DType::kPred);
}

// FLOAT semantics (the compare's default on floats).
bool IsFloatCompare(const Instruction* i, ComparisonDirection d) {
  return IsCompare(i, d) &&
         (i->attrs().comparison_type == ComparisonType::kNone || i->attrs().comparison_type == ComparisonType::kFloat);
}

// A side of a key compare: v(parameter p).
struct SortValue {
  const Instruction* param = nullptr;
  bool canonical = false;
  uint64_t nan_bits = 0, zero_bits = 0;
  bool total_order = false;  // the signed-integer total-order key of a float (MatchTotalOrderBits)
};

// ---- XLA's total-order float comparators as integers (comparators.cc's LtTotalOrder /
// GtTotalOrder as XLA's TopK, TensorFlow and older JAX emit them) ----
// The key of a float x is a signed integer S of x's width, compared SIGNED:
//   select(compare(y, 0), direction=LT, bitcast-convert<S>(subtract(MAX_S, bitcast-convert<U>(x))), y)
// (U the unsigned type of the width, MAX_S = 2^(w-1) - 1 as U) with y = bitcast-convert<S>(x), or
// y = select(ne(x, x), NAN, select(eq(x, 0), Z, bitcast-convert<S>(x))) (older JAX canonicalizes
// NaNs and zeros first; NAN and Z constants of S). A negative float's magnitude m maps to -1 - m,
// so signed order on the keys is the floats' TOTALORDER: -NaN < -inf < ... < -0 < +0 < ... < NaN.
// x is a float parameter or, without the canonicalization, bf16 -> f32 convert of one (a shift of
// the bits: exact and order-preserving, NaN payloads included).
std::optional<SortValue> MatchTotalOrderBits(const Instruction* v) {
  if (v->opcode() != Opcode::kSelect || !IsScalar(v) || !IsSignedInteger(v->shape().dtype())) return std::nullopt;
  const DType s = v->shape().dtype();
  const int64_t width = DTypeSize(s);
  if (width != 2 && width != 4 && width != 8) return std::nullopt;
  const uint64_t sign = uint64_t{1} << (8 * width - 1);
  const Instruction* lt = v->operand(0);
  const Instruction* neg = v->operand(1);
  const Instruction* y = v->operand(2);
  if (!IsCompare(lt, ComparisonDirection::kLt) || lt->operand(0) != y || ScalarConstantBits(lt->operand(1), s) != 0 ||
      (lt->attrs().comparison_type != ComparisonType::kNone && lt->attrs().comparison_type != ComparisonType::kSigned)) {
    return std::nullopt;
  }
  // neg = bitcast-convert<S>(subtract(MAX_S, bitcast-convert<U>(x)))
  if (neg->opcode() != Opcode::kBitcastConvert || !IsScalar(neg, s)) return std::nullopt;
  const Instruction* sub = neg->operand(0);
  if (sub->opcode() != Opcode::kSubtract || !IsScalar(sub) || !IsUnsignedInteger(sub->shape().dtype()) ||
      DTypeSize(sub->shape().dtype()) != width) {
    return std::nullopt;
  }
  const DType u = sub->shape().dtype();
  if (ScalarConstantBits(sub->operand(0), u) != sign - 1) return std::nullopt;
  const Instruction* xu = sub->operand(1);
  if (xu->opcode() != Opcode::kBitcastConvert || !IsScalar(xu, u)) return std::nullopt;
  const Instruction* x = xu->operand(0);
  if (!IsScalar(x) || !IsFloating(x->shape().dtype()) || DTypeSize(x->shape().dtype()) != width) return std::nullopt;
  auto is_bits_of_x = [&](const Instruction* b) {
    return b->opcode() == Opcode::kBitcastConvert && IsScalar(b, s) && b->operand(0) == x;
  };
  SortValue out;
  out.total_order = true;
  if (!is_bits_of_x(y)) {
    // y = select(ne(x, x), NAN, select(eq(x, F0), Z, bitcast-convert<S>(x))), F0 a float zero.
    if (y->opcode() != Opcode::kSelect || !IsScalar(y, s)) return std::nullopt;
    const Instruction* ne = y->operand(0);
    const Instruction* inner = y->operand(2);
    if (!IsFloatCompare(ne, ComparisonDirection::kNe) || ne->operand(0) != x || ne->operand(1) != x) return std::nullopt;
    const std::optional<uint64_t> nan = ScalarConstantBits(y->operand(1), s);
    if (!nan || inner->opcode() != Opcode::kSelect || !IsScalar(inner, s) || !is_bits_of_x(inner->operand(2))) {
      return std::nullopt;
    }
    const Instruction* eq = inner->operand(0);
    const std::optional<uint64_t> zero = ScalarConstantBits(inner->operand(1), s);
    if (!zero || (*zero & (sign - 1)) != 0 || !IsFloatCompare(eq, ComparisonDirection::kEq)) return std::nullopt;
    const Instruction* f0 = eq->operand(0) == x ? eq->operand(1) : eq->operand(1) == x ? eq->operand(0) : nullptr;
    if (f0 == nullptr) return std::nullopt;
    const std::optional<uint64_t> f0_bits = ScalarConstantBits(f0, x->shape().dtype());
    if (!f0_bits || (*f0_bits & (sign - 1)) != 0) return std::nullopt;
    if (x->opcode() != Opcode::kParameter) return std::nullopt;
    out.canonical = true;
    out.nan_bits = *nan;
    out.zero_bits = *zero;
  }
  if (x->opcode() == Opcode::kParameter) {
    out.param = x;
  } else if (x->opcode() == Opcode::kConvert && x->shape().dtype() == DType::kF32 &&
             x->operand(0)->opcode() == Opcode::kParameter && IsScalar(x->operand(0), DType::kBF16)) {
    out.param = x->operand(0);
  } else {
    return std::nullopt;
  }
  return out;
}

std::optional<SortValue> MatchSortValue(const Instruction* v) {
  if (std::optional<SortValue> bits = MatchTotalOrderBits(v)) return bits;
  if (v->opcode() == Opcode::kParameter) {
    if (!IsScalar(v)) return std::nullopt;
    return SortValue{v};
  }
  // select(ne(x, x), NAN, select(eq(x, Z), Z, x))
  if (v->opcode() != Opcode::kSelect || !IsScalar(v)) return std::nullopt;
  const DType t = v->shape().dtype();
  if (!IsFloating(t)) return std::nullopt;
  const Instruction* ne = v->operand(0);
  const Instruction* inner = v->operand(2);
  if (!IsFloatCompare(ne, ComparisonDirection::kNe) || ne->operand(0) != ne->operand(1)) return std::nullopt;
  const Instruction* x = ne->operand(0);
  if (x->opcode() != Opcode::kParameter || !IsScalar(x, t)) return std::nullopt;
  const std::optional<uint64_t> nan = ScalarConstantBits(v->operand(1), t);
  if (!nan || inner->opcode() != Opcode::kSelect || inner->operand(2) != x) return std::nullopt;
  const Instruction* eq = inner->operand(0);
  const std::optional<uint64_t> zero = ScalarConstantBits(inner->operand(1), t);
  if (!zero || !IsFloatCompare(eq, ComparisonDirection::kEq)) return std::nullopt;
  const Instruction* z = eq->operand(0) == x ? eq->operand(1) : eq->operand(1) == x ? eq->operand(0) : nullptr;
  if (z == nullptr || ScalarConstantBits(z, t) != zero) return std::nullopt;
  return SortValue{x, true, *nan, *zero};
}

// A key compare: compare(v(a), v(b)) with `d` or, for kLt, kGt (either way round; the key's
// direction is the one for (a, b)). Sets the key and the compare's two operands.
bool MatchKeyCompare(const Instruction* c, kernels::SortKey* key, const Instruction** lhs, const Instruction** rhs) {
  if (!IsCompare(c, ComparisonDirection::kLt) && !IsCompare(c, ComparisonDirection::kGt)) return false;
  const std::optional<SortValue> x = MatchSortValue(c->operand(0));
  const std::optional<SortValue> y = MatchSortValue(c->operand(1));
  if (!x || !y || x->canonical != y->canonical || x->nan_bits != y->nan_bits || x->zero_bits != y->zero_bits ||
      x->total_order != y->total_order || x->param->shape().dtype() != y->param->shape().dtype()) {
    return false;
  }
  const int64_t px = x->param->parameter_number(), py = y->param->parameter_number();
  if (px / 2 != py / 2 || px == py) return false;
  ComparisonDirection d = *c->attrs().comparison_direction;
  if (px > py) d = FlipComparison(d);  // compare(v(b), v(a))
  ComparisonType type = c->attrs().comparison_type;
  if (x->total_order) {
    // The integer keys compared SIGNED order the floats as TOTALORDER.
    if (type != ComparisonType::kNone && type != ComparisonType::kSigned) return false;
    type = ComparisonType::kTotalOrder;
  }
  *key = kernels::SortKey{static_cast<int>(px / 2), d, type, x->canonical, x->nan_bits, x->zero_bits};
  *lhs = c->operand(0);
  *rhs = c->operand(1);
  return true;
}

// lex(i) at `e`: appends the keys from i on; false (keys as before) when `e` is not of the form.
bool MatchLexicographic(const Instruction* e, std::vector<kernels::SortKey>& keys) {
  if (keys.size() >= 64) return false;
  const Instruction* lhs = nullptr;
  const Instruction* rhs = nullptr;
  kernels::SortKey key;
  if (MatchKeyCompare(e, &key, &lhs, &rhs)) {
    keys.push_back(key);
    return true;
  }
  if (e->opcode() != Opcode::kOr || !IsScalar(e, DType::kPred)) return false;
  for (int o = 0; o < 2; ++o) {
    const Instruction* lt = e->operand(o);
    const Instruction* tie = e->operand(1 - o);
    if (!MatchKeyCompare(lt, &key, &lhs, &rhs) || tie->opcode() != Opcode::kAnd || !IsScalar(tie, DType::kPred)) {
      continue;
    }
    for (int t = 0; t < 2; ++t) {
      // eq(i): the same two values, either way round, compared with the same type.
      const Instruction* eq = tie->operand(t);
      if (!IsCompare(eq, ComparisonDirection::kEq) || eq->attrs().comparison_type != lt->attrs().comparison_type ||
          !((eq->operand(0) == lhs && eq->operand(1) == rhs) || (eq->operand(0) == rhs && eq->operand(1) == lhs))) {
        continue;
      }
      const size_t saved = keys.size();
      keys.push_back(key);
      if (MatchLexicographic(tie->operand(1 - t), keys)) return true;
      keys.resize(saved);
    }
  }
  return false;
}

// XLA's comparators.cc chain (TopK, TensorFlow's sorts): for keys k0, k1, ...
//   r(0) = c(0),  r(i) = select(t(0) and ... and t(i - 1), c(i), r(i - 1)),  the root r(last)
// with c(i) key i's compare (MatchKeyCompare) and t(i) its tie test: compare(v(a), v(b)),
// direction=EQ, or, where the key's order is total (integer keys, TOTALORDER and the total-order
// bits), eq(compare(v(a), v(b)), compare(v(b), v(a))) with one strict direction: neither before
// the other. The ands in any grouping and order, each tie exactly once.
struct ChainKey {
  kernels::SortKey key;
  const Instruction* compare = nullptr;
  const Instruction* lhs = nullptr;
  const Instruction* rhs = nullptr;
};

bool IsTieTest(const Instruction* t, const ChainKey& k) {
  auto same_pair = [&](const Instruction* c) {
    return (c->operand(0) == k.lhs && c->operand(1) == k.rhs) || (c->operand(0) == k.rhs && c->operand(1) == k.lhs);
  };
  const ComparisonType type = k.compare->attrs().comparison_type;
  if (IsCompare(t, ComparisonDirection::kEq) && t->attrs().comparison_type == type && same_pair(t)) return true;
  // Neither before the other: equality only where the compare's order is total.
  const DType values = k.lhs->shape().dtype();
  if (IsFloating(values) && type != ComparisonType::kTotalOrder) return false;
  if (!IsCompare(t, ComparisonDirection::kEq) || !IsScalar(t->operand(0), DType::kPred)) return false;
  const Instruction* c1 = t->operand(0);
  const Instruction* c2 = t->operand(1);
  for (ComparisonDirection d : {ComparisonDirection::kLt, ComparisonDirection::kGt}) {
    if (IsCompare(c1, d) && IsCompare(c2, d) && c1->attrs().comparison_type == type &&
        c2->attrs().comparison_type == type && same_pair(c1) && same_pair(c2) && c1->operand(0) == c2->operand(1) &&
        c1->operand(1) == c2->operand(0)) {
      return true;
    }
  }
  return false;
}

bool MatchTies(const Instruction* t, const std::vector<ChainKey>& keys, std::vector<bool>& seen) {
  if (t->opcode() == Opcode::kAnd && IsScalar(t, DType::kPred)) {
    return MatchTies(t->operand(0), keys, seen) && MatchTies(t->operand(1), keys, seen);
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!seen[i] && IsTieTest(t, keys[i])) {
      seen[i] = true;
      return true;
    }
  }
  return false;
}

bool MatchSelectChain(const Instruction* e, std::vector<ChainKey>& keys) {
  if (keys.size() >= 64) return false;
  ChainKey k;
  if (MatchKeyCompare(e, &k.key, &k.lhs, &k.rhs)) {
    k.compare = e;
    keys.push_back(k);
    return true;
  }
  if (e->opcode() != Opcode::kSelect || !IsScalar(e, DType::kPred)) return false;
  if (!MatchSelectChain(e->operand(2), keys)) return false;
  if (!MatchKeyCompare(e->operand(1), &k.key, &k.lhs, &k.rhs)) return false;
  k.compare = e->operand(1);
  std::vector<bool> seen(keys.size(), false);
  if (!MatchTies(e->operand(0), keys, seen) || std::find(seen.begin(), seen.end(), false) != seen.end()) return false;
  keys.push_back(k);
  return true;
}

}  // namespace

kernels::Comparator ClassifySortComparator(const Instruction& sort) {
  const Computation& c = *sort.to_apply();
  kernels::Comparator cmp = ClassifyCompareComparator(c);
  if (cmp.direction) return cmp;
  std::vector<kernels::SortKey> keys;
  if (!MatchLexicographic(c.root(), keys)) {
    std::vector<ChainKey> chain;
    if (!MatchSelectChain(c.root(), chain)) return cmp;
    for (const ChainKey& k : chain) keys.push_back(k.key);
  }
  // The parameters' dtypes must be the operands' (the kernel reads the operands' bytes).
  std::vector<DType> dtypes;
  for (int i = 0; i < sort.operand_count(); ++i) {
    if (!sort.operand(i)->shape().IsArray()) return cmp;
    dtypes.push_back(sort.operand(i)->shape().dtype());
  }
  if (c.parameters().size() != 2 * dtypes.size()) return cmp;
  for (size_t p = 0; p < c.parameters().size(); ++p) {
    if (!IsScalar(c.parameters()[p], dtypes[p / 2])) return cmp;
  }
  if (kernels::SortKeysSupported(keys, dtypes)) cmp.keys = std::move(keys);
  return cmp;
}

namespace {

Status PrepareSort(const Instruction& inst, Step& step, const Program& program) {
  if (inst.dimensions().size() != 1) return InvalidArgument("sort needs dimensions={d}");
  XS_RETURN_IF_ERROR(RequireCallee(inst, CallRole::kToApply, step, program));
  step.SetPayload(SortPayload{ClassifySortComparator(inst)});
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
