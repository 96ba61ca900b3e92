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
