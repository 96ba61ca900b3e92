// RemoveDeadCode: drops unused side-effect-free instructions (users first; the side effects are the
// opcode table's, HasSideEffect in ir/instruction.h) and unreachable computations.
#include "xshard/passes/dce.h"

#include <algorithm>
#include <unordered_set>
#include <vector>

namespace xs {

std::unordered_set<Computation*> ReachableComputations(Computation* root) {
  std::unordered_set<Computation*> seen;
  std::vector<Computation*> work = {root};
  while (!work.empty()) {
    Computation* c = work.back();
    work.pop_back();
    if (!seen.insert(c).second) continue;
    for (const Instruction* inst : c->instructions()) {
      for (Computation* callee : inst->called_computations()) work.push_back(callee);
    }
  }
  return seen;
}

StatusOr<bool> RemoveDeadCode(Module& module) {
  bool changed = false;
  for (Computation* c : module.computations()) {
    std::vector<Instruction*> order = c->MakeInstructionPostOrder();
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      Instruction* inst = *it;
      if (inst->user_count() > 0 || inst == c->root() || HasSideEffect(*inst) || inst->opcode() == Opcode::kParameter ||
          !inst->control_predecessors().empty() || !inst->control_successors().empty()) {
        continue;
      }
      XS_RETURN_IF_ERROR(c->RemoveInstruction(inst));
      changed = true;
    }
  }
  if (module.entry() == nullptr) return changed;
  const std::unordered_set<Computation*> live = ReachableComputations(module.entry());
  for (bool removed = true; removed;) {
    removed = false;
    for (Computation* c : module.computations()) {
      if (live.count(c) || !module.RemoveComputation(c).ok()) continue;
      removed = changed = true;
      break;
    }
  }
  return changed;
}

}  // namespace xs
