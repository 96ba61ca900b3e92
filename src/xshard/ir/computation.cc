// Computation: instruction ownership, naming, removal and post-order traversal.
#include "xshard/ir/computation.h"

#include <algorithm>

#include "xshard/ir/module.h"

namespace xs {

Computation::~Computation() = default;

void Computation::set_name(std::string name) {
  XS_CHECK(parent_ == nullptr, "set_name on computation '", name_, "' already in a module");
  name_ = std::move(name);
}

bool Computation::IsEntry() const { return parent_ != nullptr && parent_->entry() == this; }

std::string Computation::UniqueInstructionName(std::string_view base) const {
  if (!by_name_.contains(std::string(base))) return std::string(base);
  for (int64_t n = 1;; ++n) {
    std::string candidate = StrCat(base, ".", n);
    if (!by_name_.contains(candidate)) return candidate;
  }
}

Instruction* Computation::AddInstruction(std::unique_ptr<Instruction> instruction) {
  XS_CHECK(instruction != nullptr && instruction->parent_ == nullptr,
           "AddInstruction: null or already owned instruction");
  Instruction* inst = instruction.get();
  inst->name_ = UniqueInstructionName(inst->name_.empty() ? std::string(OpcodeName(inst->opcode()))
                                                          : inst->name_);
  inst->parent_ = this;
  by_name_[inst->name_] = inst;
  if (inst->opcode() == Opcode::kParameter && inst->attrs().parameter_number.has_value()) {
    int64_t n = *inst->attrs().parameter_number;
    if (n >= 0 && n < (int64_t{1} << 20)) {
      if (static_cast<int64_t>(parameters_.size()) <= n) parameters_.resize(n + 1, nullptr);
      if (parameters_[n] == nullptr) parameters_[n] = inst;
    }
  }
  if (root_ == nullptr) root_ = inst;
  instructions_.push_back(std::move(instruction));
  return inst;
}

Status Computation::RemoveInstruction(Instruction* instruction) {
  auto it = std::find_if(instructions_.begin(), instructions_.end(),
                         [&](const auto& p) { return p.get() == instruction; });
  if (it == instructions_.end())
    return NotFound("instruction is not in computation '", name_, "'");
  const std::string& n = instruction->name();
  if (instruction->user_count() > 0)
    return FailedPrecondition("cannot remove '", n, "' from '", name_, "': it still has ",
                              instruction->user_count(), " user(s), e.g. '",
                              instruction->users()[0]->name(), "'; replace its uses first");
  if (root_ == instruction)
    return FailedPrecondition("cannot remove '", n, "': it is the root of '", name_,
                              "'; set another root first");
  if (!instruction->control_predecessors().empty() || !instruction->control_successors().empty())
    return FailedPrecondition("cannot remove '", n,
                              "': it has control edges; drop them first");
  for (Instruction* op : instruction->operands()) op->RemoveUser(instruction);
  for (auto& p : parameters_)
    if (p == instruction) p = nullptr;
  while (!parameters_.empty() && parameters_.back() == nullptr) parameters_.pop_back();
  by_name_.erase(n);
  instructions_.erase(it);
  return OkStatus();
}

std::vector<Instruction*> Computation::instructions() const {
  std::vector<Instruction*> out;
  out.reserve(instructions_.size());
  for (const auto& p : instructions_) out.push_back(p.get());
  return out;
}

Instruction* Computation::GetInstruction(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<Instruction*> Computation::MakeInstructionPostOrder() const {
  // Iterative DFS (no recursion: graphs from fuzzed text can be deep). Roots are visited in text
  // order, with the root instruction last so it ends the order.
  std::unordered_map<const Instruction*, int> state;  // 1 = on stack, 2 = done
  std::vector<Instruction*> order;
  order.reserve(instructions_.size());
  auto visit = [&](Instruction* start) {
    if (state[start] != 0) return;
    std::vector<std::pair<Instruction*, size_t>> stack{{start, 0}};
    state[start] = 1;
    while (!stack.empty()) {
      auto& [inst, next] = stack.back();
      size_t n_ops = inst->operands().size();
      size_t n_all = n_ops + inst->control_predecessors().size();
      if (next < n_all) {
        Instruction* dep = next < n_ops ? inst->operands()[next]
                                        : inst->control_predecessors()[next - n_ops];
        ++next;
        if (dep->parent() == this && state[dep] == 0) {
          state[dep] = 1;
          stack.push_back({dep, 0});
        }
        continue;
      }
      state[inst] = 2;
      order.push_back(inst);
      stack.pop_back();
    }
  };
  for (const auto& p : instructions_)
    if (p.get() != root_ && p->users().empty()) visit(p.get());
  if (root_ != nullptr) visit(root_);
  for (const auto& p : instructions_) visit(p.get());  // anything left (cycles, dead users)
  return order;
}

std::optional<Opcode> CollectiveReduction(const Computation& reducer) {
  const Instruction* root = reducer.root();
  if (root == nullptr || reducer.num_parameters() != 2 || root->operand_count() != 2) return std::nullopt;
  const Instruction* a = root->operand(0);
  const Instruction* b = root->operand(1);
  if (a->opcode() != Opcode::kParameter || b->opcode() != Opcode::kParameter || a == b) return std::nullopt;
  switch (root->opcode()) {
    case Opcode::kAdd:
    case Opcode::kMultiply:
    case Opcode::kMaximum:
    case Opcode::kMinimum:
    case Opcode::kAnd:
    case Opcode::kOr: return root->opcode();
    default: return std::nullopt;
  }
}

}  // namespace xs
