// Executor handlers for scan and rng-get-and-update-state.
//
// scan(inputs..., inits...), dimensions={d}, num_carries=C, is_reverse=B, to_apply=f: the N
// inputs share the length L of dim d; step i (i = 0 .. L-1, or L-1 .. 0 with is_reverse=true)
// calls f(x_1[i], ..., x_N[i], carry_1, ..., carry_C), where x_k[i] is input k's slice at i with
// dim d removed and the carries start as the inits; f returns (y_1, ..., y_M, carry'_1, ...,
// carry'_C). The result is (Y_1, ..., Y_M, final carries), Y_k holding y_k of step i at index i of
// a dim inserted at d. is_associative only licenses a parallel evaluation; the steps run in order.
//
// rng-get-and-update-state, delta=D: returns a 128-bit generator state as u64[2] (low word first)
// and adds D to it. Each instruction of a compiled executable keeps its own state, starting at 0
// (XLA leaves the initial state to the backend), so a program's runs are reproducible.
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "xshard/base/strings.h"
#include "xshard/exec/executable_plan.h"

namespace xs {
namespace {

struct ScanParams : ExtraParams {
  int64_t dim = 0, length = 0;
  int inputs = 0, carries = 0, outputs = 0;
  bool reverse = false;
};

const ScanParams& ScanOf(const Step& step) { return static_cast<const ScanParams&>(step.extra()); }

std::vector<int64_t> Without(const std::vector<int64_t>& dims, int64_t d) {
  std::vector<int64_t> r = dims;
  r.erase(r.begin() + d);
  return r;
}

// Bytes of one index of dim d (the contiguous block below d) and the number of such blocks above it.
struct Blocks {
  int64_t inner_bytes = 0, outer = 1;
};
Blocks BlocksOf(const Shape& s, int64_t d) {
  Blocks b;
  int64_t inner = 1;
  for (int64_t k = d + 1; k < s.rank(); ++k) inner *= s.dims()[k];
  for (int64_t k = 0; k < d; ++k) b.outer *= s.dims()[k];
  b.inner_bytes = inner * DTypeSize(s.dtype());
  return b;
}

Status RunScan(const Step& step, Frame& frame, RunContext& ctx) {
  const ScanParams& p = ScanOf(step);
  // The inputs are held before the carries are taken: one value may be both (scan(x, x)), and
  // taking its last use moves it out of the frame.
  std::vector<std::shared_ptr<Array>> inputs;
  for (int k = 0; k < p.inputs; ++k) inputs.push_back(frame.slots[step.operands[k]].array);
  std::vector<Slot> carries;
  for (int k = 0; k < p.carries; ++k) carries.push_back(TakeOperand(step, frame, p.inputs + k));
  const Shape& result = step.inst->shape();
  std::vector<std::shared_ptr<Array>> ys;
  // Plain buffers (AdoptArray), not NewArray: the callee's steps change ctx.step between calls.
  for (int k = 0; k < p.outputs; ++k) {
    ys.push_back(AdoptArray(Array::Uninitialized(result.tuple_shape(k).WithoutLayout()), ctx));
  }
  for (int64_t s = 0; s < p.length; ++s) {
    const int64_t i = p.reverse ? p.length - 1 - s : s;
    std::vector<Slot> args;
    for (int k = 0; k < p.inputs; ++k) {
      const Array& x = *inputs[k];
      const Blocks b = BlocksOf(x.shape(), p.dim);
      auto slice = AdoptArray(Array::Uninitialized(Shape(x.dtype(), Without(x.shape().dims(), p.dim))), ctx);
      for (int64_t o = 0; o < b.outer; ++o) {
        std::memcpy(slice->data() + o * b.inner_bytes, x.data() + (o * p.length + i) * b.inner_bytes,
                    static_cast<size_t>(b.inner_bytes));
      }
      args.push_back(OwnedSlot(std::move(slice)));
    }
    for (Slot& c : carries) args.push_back(std::move(c));
    XS_ASSIGN_OR_RETURN(Slot r, RunPlan(*step.callees[0], std::move(args), ctx));
    if (!r.IsTuple() || static_cast<int>(r.tuple->size()) != p.outputs + p.carries) {
      return Internal("scan '", step.inst->name(), "': its computation returned the wrong arity");
    }
    for (int k = 0; k < p.outputs; ++k) {
      const Array& y = *(*r.tuple)[k].array;
      const Blocks b = BlocksOf(ys[k]->shape(), p.dim);
      for (int64_t o = 0; o < b.outer; ++o) {
        std::memcpy(ys[k]->data() + (o * p.length + i) * b.inner_bytes, y.data() + o * b.inner_bytes,
                    static_cast<size_t>(b.inner_bytes));
      }
    }
    carries.assign(r.tuple->begin() + p.outputs, r.tuple->end());
  }
  std::vector<Slot> elements;
  for (auto& y : ys) elements.push_back(OwnedSlot(std::move(y)));
  for (Slot& c : carries) elements.push_back(std::move(c));
  frame.slots[step.out] = TupleSlot(std::move(elements));
  return OkStatus();
}

// A required integer attribute xshard keeps verbatim (num_carries, delta).
StatusOr<int64_t> IntAttr(const Instruction& inst, std::string_view name) {
  std::optional<std::string_view> v = inst.attrs().Other(name);
  if (!v) return InvalidArgument(OpcodeName(inst.opcode()), " '", inst.name(), "' needs ", name, "=N");
  int64_t n = 0;
  if (!ParseInt64(*v, &n)) {
    return InvalidArgument(OpcodeName(inst.opcode()), " '", inst.name(), "': ", name, "=", *v, " is not an integer");
  }
  return n;
}

StatusOr<bool> BoolAttr(const Instruction& inst, std::string_view name) {
  std::optional<std::string_view> v = inst.attrs().Other(name);
  if (!v || *v == "false") return false;
  if (*v == "true") return true;
  return InvalidArgument(OpcodeName(inst.opcode()), " '", inst.name(), "': ", name, "=", *v, " is not true or false");
}

Status PrepareScan(const Instruction& inst, Step& step, const Program& program) {
  auto error = [&inst](auto&&... parts) {
    return InvalidArgument("scan '", inst.name(), "': ", std::forward<decltype(parts)>(parts)...);
  };
  auto p = std::make_shared<ScanParams>();
  XS_ASSIGN_OR_RETURN(int64_t carries, IntAttr(inst, "num_carries"));
  XS_ASSIGN_OR_RETURN(p->reverse, BoolAttr(inst, "is_reverse"));
  XS_ASSIGN_OR_RETURN(bool associative, BoolAttr(inst, "is_associative"));
  (void)associative;
  const std::vector<int64_t> dims = inst.attrs().dimensions.value_or(std::vector<int64_t>{});
  if (dims.size() != 1) return error("needs dimensions={d} with one scan dimension");
  p->dim = dims[0];
  if (p->dim < 0) return error("dimensions={", p->dim, "} must name a dim (>= 0) of the inputs and outputs");
  if (carries < 0 || carries > inst.operand_count()) {
    return error("num_carries=", carries, " must be between 0 and its ", inst.operand_count(), " operands");
  }
  p->carries = static_cast<int>(carries);
  p->inputs = inst.operand_count() - p->carries;
  const Shape& result = inst.shape();
  if (!result.IsTuple() || result.tuple_size() < p->carries) {
    return error("the result must be a tuple of the outputs then the ", p->carries, " carries, got ",
                 result.ToString(false));
  }
  p->outputs = result.tuple_size() - p->carries;
  p->length = -1;
  for (int k = 0; k < p->inputs; ++k) {
    const Shape& x = inst.operand(k)->shape();
    if (!x.IsArray() || p->dim < 0 || p->dim >= x.rank()) {
      return error("input ", k, " (", x.ToString(false), ") has no dimension ", p->dim);
    }
    if (p->length >= 0 && x.dims()[p->dim] != p->length) {
      return error("the inputs' dimension ", p->dim, " sizes differ (", p->length, " and ", x.dims()[p->dim], ")");
    }
    p->length = x.dims()[p->dim];
  }
  for (int k = 0; k < p->outputs; ++k) {
    const Shape& y = result.tuple_shape(k);
    if (!y.IsArray() || p->dim >= y.rank() || (p->length >= 0 && y.dims()[p->dim] != p->length)) {
      return error("output ", k, " (", y.ToString(false), ") needs dimension ", p->dim, " of the scan length ",
                   p->length);
    }
  }
  if (p->length < 0) {
    if (p->outputs == 0) return error("has neither inputs nor outputs to take the scan length from");
    p->length = result.tuple_shape(0).dims()[p->dim];
  }
  const Computation* f = inst.to_apply();
  if (f == nullptr) return error("needs to_apply=");
  if (f->num_parameters() != inst.operand_count()) {
    return error("to_apply '", f->name(), "' takes ", f->num_parameters(), " parameters; the scan passes ",
                 p->inputs, " input slices and ", p->carries, " carries");
  }
  for (int k = 0; k < inst.operand_count(); ++k) {
    const Shape& x = inst.operand(k)->shape();
    const Shape want = k < p->inputs ? Shape(x.dtype(), Without(x.dims(), p->dim)) : x;
    const Shape& got = f->parameter(k)->shape();
    if ((k < p->inputs && !got.IsArray()) || !got.Compatible(want)) {
      return error("to_apply '", f->name(), "' parameter ", k, " is ", got.ToString(false), " but the scan passes ",
                   k < p->inputs ? "input " : "carry ", k < p->inputs ? k : k - p->inputs, "'s ",
                   k < p->inputs ? "slice " : "value ", want.ToString(false));
    }
  }
  const Shape& root = f->root()->shape();
  bool ok = root.IsTuple() && root.tuple_size() == result.tuple_size();
  for (int k = 0; ok && k < p->outputs; ++k) {
    const Shape& y = result.tuple_shape(k);
    ok = root.tuple_shape(k).IsArray() && root.tuple_shape(k).Compatible(Shape(y.dtype(), Without(y.dims(), p->dim)));
  }
  for (int k = 0; ok && k < p->carries; ++k) {
    ok = root.tuple_shape(p->outputs + k).Compatible(inst.operand(p->inputs + k)->shape()) &&
         result.tuple_shape(p->outputs + k).Compatible(inst.operand(p->inputs + k)->shape());
  }
  if (!ok) {
    return error("to_apply '", f->name(), "' returns ", root.ToString(false),
                 "; it must return each output's slice (dimension ", p->dim, " removed) then the carries");
  }
  const ComputationPlan* plan = program.Get(f);
  if (plan == nullptr) return Internal("computation '", f->name(), "' was not planned");
  step.callees.push_back(plan);
  step.SetPayload(ExtraPayload{std::move(p)});
  step.run = &RunScan;
  return OkStatus();
}

struct RngStateParams : ExtraParams {
  uint64_t delta = 0;
  mutable std::mutex mu;
  mutable uint64_t low = 0, high = 0;
};

Status RunRngGetAndUpdateState(const Step& step, Frame& frame, RunContext& ctx) {
  const auto& p = static_cast<const RngStateParams&>(step.extra());
  uint64_t low = 0, high = 0;
  {
    std::lock_guard<std::mutex> lock(p.mu);
    low = p.low;
    high = p.high;
    p.low += p.delta;
    if (p.low < low) ++p.high;  // carry into the high word
  }
  SetArray(step, frame, ctx, Array::FromVector<uint64_t>({2}, {low, high}));
  return OkStatus();
}

Status PrepareRngGetAndUpdateState(const Instruction& inst, Step& step, const Program&) {
  XS_ASSIGN_OR_RETURN(int64_t delta, IntAttr(inst, "delta"));
  const Shape& s = inst.shape();
  if (!s.IsArray() || s.dtype() != DType::kU64 || s.dims() != std::vector<int64_t>{2}) {
    return InvalidArgument("rng-get-and-update-state '", inst.name(), "' must return u64[2], got ", s.ToString(false));
  }
  auto p = std::make_shared<RngStateParams>();
  p->delta = static_cast<uint64_t>(delta);
  step.SetPayload(ExtraPayload{std::move(p)});
  step.run = &RunRngGetAndUpdateState;
  return OkStatus();
}

}  // namespace

void RegisterScanHandlers(HandlerTable& t) {
  t[static_cast<int>(Opcode::kScan)] = &PrepareScan;
  t[static_cast<int>(Opcode::kRngGetAndUpdateState)] = &PrepareRngGetAndUpdateState;
}

}  // namespace xs
