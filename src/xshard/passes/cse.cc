// EliminateCommonSubexpressions: buckets instructions by (opcode, shape, operands) and merges
// those whose attributes, calls and sharding are equal too.
#include "xshard/passes/cse.h"

#include <map>
#include <tuple>

namespace xs {
namespace {

// Side effects come from the opcode table (HasSideEffect); parameters are distinct by position,
// and collectives / async ops are kept apart (two equal all-reduces are two communications).
bool Mergeable(const Instruction& inst) {
  const Opcode op = inst.opcode();
  return !HasSideEffect(inst) && op != Opcode::kParameter && !IsCollective(op) && !IsAsync(op) &&
         inst.control_predecessors().empty() && inst.control_successors().empty();
}

bool Same(const Instruction& a, const Instruction& b) {
  return a.attrs() == b.attrs() && a.calls() == b.calls() && a.sharding() == b.sharding() &&
         a.shape() == b.shape();
}

}  // namespace

StatusOr<bool> EliminateCommonSubexpressions(Module& module) {
  bool changed = false;
  for (Computation* c : module.computations()) {
    using Key = std::tuple<int, std::string, std::vector<const Instruction*>>;
    std::map<Key, std::vector<Instruction*>> seen;
    for (Instruction* inst : c->MakeInstructionPostOrder()) {
      if (!Mergeable(*inst)) continue;
      Key key{static_cast<int>(inst->opcode()), inst->shape().ToString(),
              std::vector<const Instruction*>(inst->operands().begin(), inst->operands().end())};
      std::vector<Instruction*>& bucket = seen[key];
      Instruction* twin = nullptr;
      for (Instruction* other : bucket) {
        if (Same(*inst, *other)) {
          twin = other;
          break;
        }
      }
      if (twin == nullptr) {
        bucket.push_back(inst);
        continue;
      }
      inst->ReplaceAllUsesWith(twin);
      changed = true;
    }
  }
  return changed;
}

}  // namespace xs
