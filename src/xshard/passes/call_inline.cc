// InlineCalls: copies callee bodies into their callers (callees first), then drops the callees
// nothing calls any more.
#include "xshard/passes/call_inline.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "xshard/passes/dce.h"

namespace xs {
namespace {

bool IsManualLike(const HloSharding& s) {
  if (s.IsManual()) return true;
  if (s.IsTuple()) {
    for (const HloSharding& e : s.tuple_elements()) {
      if (IsManualLike(e)) return true;
    }
    return false;
  }
  if (s.IsMeshAxes()) return !s.mesh_axes().manual.empty();
  for (SubgroupType t : s.subgroup_types()) {
    if (t == SubgroupType::kManual) return true;
  }
  return false;
}

// Whether `c`, or a computation it calls, holds an instruction with a manual sharding or a
// shard_map boundary (memoized in `memo`).
bool HasManualRegion(const Computation* c, std::unordered_map<const Computation*, bool>& memo) {
  if (auto it = memo.find(c); it != memo.end()) return it->second;
  memo[c] = false;  // a cycle (invalid anyway) ends here
  bool manual = false;
  for (const Instruction* inst : c->instructions()) {
    if (inst->has_sharding() && IsManualLike(*inst->sharding())) manual = true;
    if (inst->opcode() == Opcode::kCustomCall && inst->attrs().custom_call_target) {
      const std::string& t = *inst->attrs().custom_call_target;
      if (t == "SPMDFullToShardShape" || t == "SPMDShardToFullShape") manual = true;
    }
    for (const Computation* callee : inst->called_computations()) {
      if (HasManualRegion(callee, memo)) manual = true;
    }
    if (manual) break;
  }
  return memo[c] = manual;
}

// Computations inside manual (shard_map) regions: those holding a manual sharding, the callees of
// instructions with a manual sharding or a manual operand (a body called on an
// SPMDFullToShardShape result), and everything those call. Their instructions get their manual
// sharding from the region around them, which a copy in another computation would not have.
std::unordered_set<const Computation*> ManualComputations(const Module& module) {
  auto manual_value = [](const Instruction* i) {
    return (i->has_sharding() && IsManualLike(*i->sharding())) ||
           (i->opcode() == Opcode::kCustomCall && i->attrs().custom_call_target &&
            *i->attrs().custom_call_target == "SPMDFullToShardShape");
  };
  std::vector<const Computation*> work;
  for (const Computation* c : module.computations()) {
    for (const Instruction* inst : c->instructions()) {
      bool enters = manual_value(inst) && inst->opcode() != Opcode::kCustomCall;
      for (const Instruction* op : inst->operands()) enters = enters || manual_value(op);
      if (enters) {
        for (const Computation* callee : inst->called_computations()) work.push_back(callee);
      }
      if (inst->has_sharding() && IsManualLike(*inst->sharding()) && inst->opcode() != Opcode::kCustomCall &&
          !c->IsEntry()) {
        work.push_back(c);
      }
    }
  }
  std::unordered_set<const Computation*> manual;
  while (!work.empty()) {
    const Computation* c = work.back();
    work.pop_back();
    if (!manual.insert(c).second) continue;
    for (const Instruction* inst : c->instructions()) {
      for (const Computation* callee : inst->called_computations()) work.push_back(callee);
    }
  }
  return manual;
}

bool Inlinable(const Instruction& call, std::unordered_map<const Computation*, bool>& memo,
               const std::unordered_set<const Computation*>& manual) {
  const Computation* callee = call.to_apply();
  if (callee == nullptr || callee->root() == nullptr || callee == call.parent()) return false;
  if (manual.count(call.parent()) || manual.count(callee)) return false;
  if (!call.control_predecessors().empty() || !call.control_successors().empty()) return false;
  if (callee->execution_thread() != call.parent()->execution_thread()) return false;
  for (const Instruction* p : callee->parameters()) {
    if (p == nullptr) return false;
  }
  if (callee->num_parameters() != call.operand_count()) return false;
  if (HasManualRegion(callee, memo)) return false;
  if (call.has_sharding()) {
    if (IsManualLike(*call.sharding())) return false;
    const Instruction* root = callee->root();
    if (root->opcode() == Opcode::kParameter) return false;
    if (root->has_sharding() && *root->sharding() != *call.sharding()) return false;
  }
  return true;
}

// Copies `call`'s callee into the call's computation and replaces the call by the copy's root.
Status InlineOne(Instruction* call) {
  Computation* caller = call->parent();
  const Computation& callee = *call->to_apply();
  std::unordered_map<const Instruction*, Instruction*> copy;
  for (int i = 0; i < callee.num_parameters(); ++i) copy[callee.parameter(i)] = call->operand(i);
  for (const Instruction* inst : callee.MakeInstructionPostOrder()) {
    if (inst->opcode() == Opcode::kParameter) continue;
    std::vector<Instruction*> operands;
    operands.reserve(inst->operand_count());
    for (const Instruction* op : inst->operands()) operands.push_back(copy.at(op));
    copy[inst] = caller->AddInstruction(inst->CloneWithNewOperands(operands));
  }
  for (const Instruction* inst : callee.instructions()) {
    if (inst->opcode() == Opcode::kParameter) continue;
    for (Instruction* succ : inst->control_successors()) copy.at(inst)->AddControlDependencyTo(copy.at(succ));
  }
  Instruction* root = copy.at(callee.root());
  if (call->has_sharding() && !root->has_sharding()) root->set_sharding(call->sharding());
  const bool was_root = caller->root() == call;
  call->ReplaceAllUsesWith(root);
  if (was_root) caller->set_root(root);
  return caller->RemoveInstruction(call);
}

// Roles whose computation runs as control flow (once per call, on whole values); the others
// apply a scalar computation per element.
bool ControlFlowRole(const Instruction& inst, CallRole role) {
  switch (role) {
    case CallRole::kCondition:
    case CallRole::kBody:
    case CallRole::kTrueComputation:
    case CallRole::kFalseComputation:
    case CallRole::kBranch: return true;
    case CallRole::kToApply: return inst.opcode() == Opcode::kCall;
    // Not an async-start's computation: its async-update / async-done name the same one.
    default: return false;
  }
}

// A copy of `c` (instructions, shardings, control edges, the same callees) added to `module`,
// which names it c's name plus a fresh ".N".
Computation* CopyComputation(Module& module, const Computation& c) {
  auto copy = std::make_unique<Computation>(c.name());
  copy->set_execution_thread(c.execution_thread());
  copy->set_async_sugar(c.is_async_sugar());
  Computation* dst = module.AddComputation(std::move(copy));
  std::unordered_map<const Instruction*, Instruction*> map;
  const std::vector<Instruction*> insts = c.instructions();
  for (const Instruction* inst : insts) map[inst] = dst->AddInstruction(inst->CloneWithNewOperands({}));
  for (const Instruction* inst : insts) {
    Instruction* to = map.at(inst);
    for (Instruction* op : inst->operands()) to->AppendOperand(map.at(op));
    for (Instruction* pred : inst->control_predecessors()) map.at(pred)->AddControlDependencyTo(to);
  }
  dst->set_root(c.root() == nullptr ? nullptr : map.at(c.root()));
  return dst;
}

}  // namespace

StatusOr<bool> FlattenCallGraph(Module& module) {
  if (module.entry() == nullptr) return false;
  // Callers before callees: a copied computation is visited after the call that claimed it, and
  // its own callees are claimed (or copied) there.
  std::vector<Computation*> work{module.entry()};
  std::unordered_set<const Computation*> claimed{module.entry()};
  bool changed = false;
  // Copies multiply along nested shared calls (a body running two loops of a body running two
  // loops ...): past a budget of copied instructions the remaining sites stay shared, which is
  // valid, only sharded alike.
  int64_t budget = 0;
  for (const Computation* c : module.computations()) budget += c->instruction_count();
  budget = std::max<int64_t>(4 * budget, 20000);
  int64_t copies_left = std::max<int64_t>(4 * module.computation_count(), 1000);
  for (size_t next = 0; next < work.size(); ++next) {
    Computation* c = work[next];
    for (Instruction* inst : c->MakeInstructionPostOrder()) {
      std::vector<CalledComputation> calls = inst->calls();
      bool copied = false;
      for (CalledComputation& call : calls) {
        if (!ControlFlowRole(*inst, call.role)) continue;
        if (claimed.insert(call.computation).second) {
          work.push_back(call.computation);
          continue;
        }
        budget -= call.computation->instruction_count();
        if (budget < 0 || --copies_left < 0) continue;
        call.computation = CopyComputation(module, *call.computation);
        claimed.insert(call.computation);
        work.push_back(call.computation);
        copied = true;
      }
      if (copied) {
        inst->set_calls(std::move(calls));
        changed = true;
      }
    }
  }
  return changed;
}

StatusOr<bool> InlineCalls(Module& module) {
  if (module.entry() == nullptr) return false;
  const std::unordered_set<Computation*> live = ReachableComputations(module.entry());
  std::unordered_map<const Computation*, bool> memo;
  const std::unordered_set<const Computation*> manual = ManualComputations(module);
  bool changed = false;
  // Callees before callers: a body is inlined with its own calls already inlined.
  for (Computation* c : module.MakeComputationPostOrder()) {
    if (!live.count(c)) continue;
    for (Instruction* inst : c->instructions()) {
      if (inst->opcode() != Opcode::kCall || !Inlinable(*inst, memo, manual)) continue;
      XS_RETURN_IF_ERROR(InlineOne(inst));
      changed = true;
    }
  }
  if (!changed) return false;
  // Drop what only the inlined calls reached (a callee still called elsewhere stays; computations
  // the entry never reached are left as they were).
  const std::unordered_set<Computation*> still = ReachableComputations(module.entry());
  for (bool removed = true; removed;) {
    removed = false;
    for (Computation* c : module.computations()) {
      if (still.count(c) || !live.count(c)) continue;
      if (!module.RemoveComputation(c).ok()) continue;
      removed = true;
      break;
    }
  }
  return true;
}

}  // namespace xs
