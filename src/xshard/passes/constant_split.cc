// SplitConstantExpressions: each non-constant user of a constant expression (or of a broadcast)
// gets its own copy of it.
#include "xshard/passes/constant_split.h"

#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace xs {
namespace {

bool IsScalar(const Instruction& inst) { return !inst.shape().IsTuple() && inst.shape().rank() == 0; }

// A constant whose literal is too large to copy per use (a weight closed over by a jitted
// function): it stays shared, and what is computed from it is still copied.
constexpr int64_t kMaxCopiedLiteralBytes = int64_t{1} << 20;
bool LargeLiteral(const Instruction& inst) {
  return inst.opcode() == Opcode::kConstant && inst.shape().byte_size() > kMaxCopiedLiteralBytes;
}

bool Movable(const Instruction& inst) {
  return !HasSideEffect(inst) && inst.control_predecessors().empty() && inst.control_successors().empty();
}

// Ops that compute a constant expression from constant expressions (Shardy's constant-preserving
// ops): broadcast, reshape, slice and elementwise ops.
bool ConstantPreserving(const Instruction& inst) {
  switch (inst.opcode()) {
    case Opcode::kBroadcast:
    case Opcode::kReshape:
    case Opcode::kSlice: return true;
    default: return IsElementwise(inst.opcode());
  }
}

class Splitter {
 public:
  explicit Splitter(Computation& c) : c_(c) {}

  StatusOr<bool> Run() {
    bool changed = false;
    for (Instruction* inst : c_.MakeInstructionPostOrder()) {
      if (!Movable(*inst) || inst->shape().IsTuple()) {
        changed |= SplitOperands(inst);
        continue;
      }
      if (IsConstantExpression(*inst)) {
        constant_.insert(inst);
        order_.push_back(inst);
      } else if (inst->opcode() == Opcode::kBroadcast) {
        expansion_.insert(inst);
        order_.push_back(inst);
      } else {
        changed |= SplitOperands(inst);
      }
    }
    if (!changed) return false;
    // The originals whose users all got copies are gone (users before operands).
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      Instruction* inst = *it;
      if (inst->user_count() == 0 && inst != c_.root()) XS_RETURN_IF_ERROR(c_.RemoveInstruction(inst));
    }
    return true;
  }

 private:
  bool IsConstantExpression(const Instruction& inst) const {
    if (inst.opcode() == Opcode::kConstant || inst.opcode() == Opcode::kIota) return true;
    if (!ConstantPreserving(inst) || inst.operand_count() == 0) return false;
    for (const Instruction* o : inst.operands()) {
      if (!constant_.contains(o)) return false;
    }
    return true;
  }

  bool Splittable(const Instruction* o) const {
    return !IsScalar(*o) && !LargeLiteral(*o) && (constant_.contains(o) || expansion_.contains(o));
  }

  // Whether `o` and the splittable values it is computed from are read by one instruction each:
  // then its one user already has a copy of its own.
  bool Exclusive(const Instruction* o) {
    auto it = exclusive_.find(o);
    if (it != exclusive_.end()) return it->second;
    bool only = o->user_count() == 1;
    if (only && constant_.contains(o)) {
      for (const Instruction* p : o->operands()) {
        if (Splittable(p) && !Exclusive(p)) {
          only = false;
          break;
        }
      }
    }
    exclusive_[o] = only;
    return only;
  }

  // Replaces each operand of `user` that is a constant expression or a broadcast by a
  // copy of its own (one per user: an operand read twice reads one copy).
  bool SplitOperands(Instruction* user) {
    std::unordered_map<const Instruction*, Instruction*> copies;
    bool changed = false;
    for (int k = 0; k < user->operand_count(); ++k) {
      Instruction* o = user->operand(k);
      if (!Splittable(o) || Exclusive(o)) continue;
      user->ReplaceOperandWith(k, Copy(o, copies));
      exclusive_.clear();  // the original lost a user
      changed = true;
    }
    return changed;
  }

  // A copy of `inst` and of the non-scalar constant expressions it reads (scalars are shared).
  Instruction* Copy(Instruction* inst, std::unordered_map<const Instruction*, Instruction*>& copies) {
    if (IsScalar(*inst) || !Splittable(inst)) return inst;
    auto it = copies.find(inst);
    if (it != copies.end()) return it->second;
    std::vector<Instruction*> operands;
    operands.reserve(inst->operand_count());
    // A broadcast copies only itself; a constant expression copies its whole tree.
    for (Instruction* o : inst->operands()) operands.push_back(expansion_.contains(inst) ? o : Copy(o, copies));
    Instruction* copy = c_.AddInstruction(inst->CloneWithNewOperands(operands));
    copies[inst] = copy;
    return copy;
  }

  Computation& c_;
  std::unordered_set<const Instruction*> constant_;   // constant expressions
  std::unordered_set<const Instruction*> expansion_;  // other broadcasts
  std::vector<Instruction*> order_;                   // both, in post order
  std::unordered_map<const Instruction*, bool> exclusive_;
};

}  // namespace

StatusOr<bool> SplitConstantExpressions(Module& module) {
  bool changed = false;
  for (Computation* c : module.computations()) {
    XS_ASSIGN_OR_RETURN(bool split, Splitter(*c).Run());
    changed |= split;
  }
  return changed;
}

}  // namespace xs
