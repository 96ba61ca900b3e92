// Scalar computations for the kernels that take one (reducers, comparators, combiners, map):
// recognizing the common combiners, and ScalarRunner, which compiles an all-scalar plan into a
// list of kernel calls on fixed cells or falls back to running the plan per call.
#include <cstring>

#include "xshard/exec/executable_plan.h"

namespace xs {

kernels::CombineKind ClassifyCombiner(const Computation& c, bool allow_overwrite) {
  using kernels::CombineKind;
  if (c.num_parameters() != 2 || c.parameter(0) == nullptr || c.parameter(1) == nullptr) {
    return CombineKind::kGeneric;
  }
  const Instruction* p0 = c.parameter(0);
  const Instruction* p1 = c.parameter(1);
  const Shape& s = p0->shape();
  if (!s.IsArray() || s.rank() != 0 || !p1->shape().Compatible(s)) return CombineKind::kGeneric;
  const Instruction* root = c.root();
  if (allow_overwrite && root == p1) return CombineKind::kOverwrite;
  if (root->operand_count() != 2 || !root->shape().Compatible(s)) return CombineKind::kGeneric;
  const bool params = (root->operand(0) == p0 && root->operand(1) == p1) ||
                      (root->operand(0) == p1 && root->operand(1) == p0);
  if (!params) return CombineKind::kGeneric;
  switch (root->opcode()) {
    case Opcode::kAdd: return CombineKind::kAdd;
    case Opcode::kMultiply: return CombineKind::kMultiply;
    case Opcode::kMaximum: return CombineKind::kMaximum;
    case Opcode::kMinimum: return CombineKind::kMinimum;
    case Opcode::kAnd: return CombineKind::kAnd;
    case Opcode::kOr: return CombineKind::kOr;
    default: return CombineKind::kGeneric;
  }
}

namespace {

// compare(parameter(pa), parameter(pb)) with XLA's default comparison for its type (no type=, or
// the type's own FLOAT / SIGNED / UNSIGNED): its direction as seen from (pa, pb).
std::optional<ComparisonDirection> ParamCompare(const Instruction* inst, int64_t pa, int64_t pb) {
  if (inst->opcode() != Opcode::kCompare || inst->operand_count() != 2 || !inst->attrs().comparison_direction) {
    return std::nullopt;
  }
  const Instruction* x = inst->operand(0);
  const Instruction* y = inst->operand(1);
  if (x->opcode() != Opcode::kParameter || y->opcode() != Opcode::kParameter) return std::nullopt;
  const DType t = x->shape().dtype();
  const ComparisonType type = inst->attrs().comparison_type;
  const bool natural = type == ComparisonType::kNone ||
                       (type == ComparisonType::kFloat && IsFloating(t)) ||
                       (type == ComparisonType::kSigned && IsSignedInteger(t)) ||
                       (type == ComparisonType::kUnsigned && IsUnsignedInteger(t));
  if (!natural) return std::nullopt;
  const ComparisonDirection d = *inst->attrs().comparison_direction;
  if (x->parameter_number() == pa && y->parameter_number() == pb) return d;
  if (x->parameter_number() != pb || y->parameter_number() != pa) return std::nullopt;
  return FlipComparison(d);  // compare(b, a)
}

bool IsOrderDirection(ComparisonDirection d) {
  return d == ComparisonDirection::kGt || d == ComparisonDirection::kGe || d == ComparisonDirection::kLt ||
         d == ComparisonDirection::kLe;
}

// A binary op `op` whose operands, in either order, satisfy f(first) and g(second).
template <class F, class G>
bool Commuted(const Instruction* inst, Opcode op, F&& f, G&& g) {
  if (inst->opcode() != op || inst->operand_count() != 2) return false;
  return (f(inst->operand(0)) && g(inst->operand(1))) || (f(inst->operand(1)) && g(inst->operand(0)));
}

// take_a: compare(a, b, order) [or with compare(a, a, NE)] -> (direction, nan_first).
std::optional<std::pair<ComparisonDirection, bool>> MatchTakeA(const Instruction* p) {
  if (auto d = ParamCompare(p, 0, 2); d && IsOrderDirection(*d)) return std::make_pair(*d, false);
  std::optional<ComparisonDirection> dir;
  const bool with_nan = Commuted(
      p, Opcode::kOr,
      [&](const Instruction* x) {
        dir = ParamCompare(x, 0, 2);
        return dir && IsOrderDirection(*dir);
      },
      [](const Instruction* y) { return ParamCompare(y, 0, 0) == ComparisonDirection::kNe; });
  if (with_nan) return std::make_pair(*dir, true);
  return std::nullopt;
}

}  // namespace

std::optional<kernels::ArgSelect> ClassifyArgSelect(const Computation& c) {
  if (c.num_parameters() != 4) return std::nullopt;
  for (int i = 0; i < 4; ++i) {
    const Instruction* p = c.parameter(i);
    if (p == nullptr || !p->shape().IsArray() || p->shape().rank() != 0) return std::nullopt;
  }
  const DType vt = c.parameter(0)->shape().dtype(), it = c.parameter(1)->shape().dtype();
  if (c.parameter(2)->shape().dtype() != vt || c.parameter(3)->shape().dtype() != it) return std::nullopt;
  if (!(IsFloating(vt) || IsSignedInteger(vt) || IsUnsignedInteger(vt)) ||
      !(IsSignedInteger(it) || IsUnsignedInteger(it)) || IsComplex(vt)) {
    return std::nullopt;
  }
  const Instruction* root = c.root();
  if (root->opcode() != Opcode::kTuple || root->operand_count() != 2) return std::nullopt;
  auto is_param = [](const Instruction* x, int64_t k) {
    return x->opcode() == Opcode::kParameter && x->parameter_number() == k;
  };
  const Instruction* sv = root->operand(0);
  const Instruction* si = root->operand(1);
  if (sv->opcode() != Opcode::kSelect || si->opcode() != Opcode::kSelect || !is_param(sv->operand(1), 0) ||
      !is_param(sv->operand(2), 2) || !is_param(si->operand(1), 1) || !is_param(si->operand(2), 3)) {
    return std::nullopt;
  }
  const auto take_a = MatchTakeA(sv->operand(0));
  if (!take_a) return std::nullopt;
  kernels::ArgSelect s{.direction = take_a->first, .nan_first = take_a->second, .tie_lower_index = false};
  const Instruction* q = si->operand(0);
  if (q == sv->operand(0) || MatchTakeA(q) == take_a) return s;
  // take_ai: take_a, or a tie with the lower index: and(compare(a, b, EQ), compare(ai, bi, LT)).
  auto is_take_a = [&](const Instruction* x) { return x == sv->operand(0) || MatchTakeA(x) == take_a; };
  auto is_tie = [](const Instruction* x) {
    return Commuted(
        x, Opcode::kAnd, [](const Instruction* e) { return ParamCompare(e, 0, 2) == ComparisonDirection::kEq; },
        [](const Instruction* l) { return ParamCompare(l, 1, 3) == ComparisonDirection::kLt; });
  };
  if (!Commuted(q, Opcode::kOr, is_take_a, is_tie)) return std::nullopt;
  s.tie_lower_index = true;
  return s;
}

ScalarRunner::ScalarRunner(const ComputationPlan& plan, RunContext& ctx) : plan_(plan), ctx_(ctx) {
  for (int i = 0; i < plan.computation->num_parameters(); ++i) {
    const Instruction* p = plan.computation->parameter(i);
    params_.push_back(std::make_shared<Array>(p->shape().WithoutLayout()));
  }
  compiled_ = Compile();
}

namespace {
bool IsScalarArray(const Shape& s) { return s.IsArray() && s.rank() == 0 && DTypeSize(s.dtype()) <= 16; }
}  // namespace

bool ScalarRunner::Compile() {
  cells_.assign(plan_.num_slots, {});
  for (int p : plan_.param_slots) {
    if (p < 0) return false;
  }
  for (const Instruction* p : plan_.computation->parameters()) {
    if (!IsScalarArray(p->shape())) return false;
  }
  // Where each slot's value lives: its own cell, a constant's literal, or an aliased slot.
  std::vector<const std::byte*> addr(plan_.num_slots, nullptr);
  for (int s = 0; s < plan_.num_slots; ++s) addr[s] = cells_[s].data();
  for (const Step& step : plan_.steps) {
    for (const Instruction* operand : step.inst->operands()) {
      if (!IsScalarArray(operand->shape())) return false;
    }
    switch (step.scalar_kind) {
      case ScalarKind::kNone:
        return false;
      case ScalarKind::kTuple:
        if (step.out != plan_.root_slot) return false;
        for (size_t i = 0; i < step.operands.size(); ++i) {
          results_.push_back({addr[step.operands[i]], DTypeSize(step.inst->operand(static_cast<int>(i))->shape().dtype())});
        }
        continue;
      case ScalarKind::kConstant:
        if (!IsScalarArray(step.inst->shape())) return false;
        addr[step.out] = step.inst->literal().data();
        continue;
      case ScalarKind::kShare:
        addr[step.out] = addr[step.operands[0]];
        continue;
      default:
        if (!IsScalarArray(step.inst->shape())) return false;
        break;
    }
    Op op{step.scalar_kind, &step.elementwise(), {nullptr, nullptr, nullptr}, cells_[step.out].data()};
    for (size_t i = 0; i < step.operands.size() && i < 3; ++i) op.in[i] = addr[step.operands[i]];
    ops_.push_back(op);
  }
  if (results_.empty()) {
    const Shape& s = plan_.computation->root()->shape();
    if (!IsScalarArray(s)) return false;
    results_.push_back({addr[plan_.root_slot], DTypeSize(s.dtype())});
  }
  return true;
}

Status ScalarRunner::Call(std::span<const std::byte* const> args, std::span<std::byte* const> results) {
  if (compiled_ && args.size() == params_.size() && results.size() == results_.size()) {
    for (size_t i = 0; i < args.size(); ++i) {
      std::memcpy(cells_[plan_.param_slots[i]].data(), args[i], static_cast<size_t>(params_[i]->byte_size()));
    }
    for (const Op& op : ops_) {
      switch (op.kind) {
        case ScalarKind::kUnary: op.kernels->unary(op.in[0], op.out, 1); break;
        case ScalarKind::kBinary: op.kernels->binary(op.in[0], op.in[1], op.out, 1); break;
        default: op.kernels->ternary(op.in[0], op.in[1], op.in[2], op.out, 1); break;
      }
    }
    ctx_.instructions_run += static_cast<int64_t>(ops_.size());
    // Read every result before writing any: results may alias args (never cells).
    for (size_t j = 0; j < results_.size(); ++j) {
      std::memcpy(results[j], results_[j].first, static_cast<size_t>(results_[j].second));
    }
    return OkStatus();
  }
  if (args.size() != params_.size()) {
    return Internal("computation '", plan_.computation->name(), "' takes ", params_.size(),
                    " parameters but is called with ", args.size());
  }
  std::vector<Slot> in(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    std::memcpy(params_[i]->data(), args[i], static_cast<size_t>(params_[i]->byte_size()));
    in[i] = Slot{params_[i], nullptr, false};
  }
  XS_ASSIGN_OR_RETURN(Slot r, RunPlan(plan_, std::move(in), ctx_));
  leaves_.clear();
  FlattenSlot(r, leaves_);
  if (leaves_.size() != results.size()) {
    return Internal("computation '", plan_.computation->name(), "' returns ", leaves_.size(),
                    " values where ", results.size(), " are expected");
  }
  for (size_t j = 0; j < leaves_.size(); ++j) {
    std::memcpy(results[j], leaves_[j]->data(), static_cast<size_t>(leaves_[j]->byte_size()));
  }
  return OkStatus();
}

}  // namespace xs
