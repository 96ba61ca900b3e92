// Verifier rules for async chains (async-start -> async-update* -> async-done): each wrapped
// computation belongs to one chain, every link follows a start or update of the same computation,
// and the chain runs on one execution thread (as XLA's CheckAsyncOpOperand and
// CheckAsyncOpComputationThreadName).
#include <unordered_map>

#include "xshard/ir/verifier_internal.h"

namespace xs {
namespace {

// async_execution_thread="t" of an instruction (unquoted), or "" when absent.
std::string ThreadAttr(const Instruction& inst) {
  return inst.attrs().async_execution_thread.value_or("");
}

}  // namespace

Status CheckAsyncChains(const Computation& comp) {
  std::unordered_map<const Computation*, const Instruction*> wrapper;  // computation -> start
  std::unordered_map<const Instruction*, std::string> thread;          // chain thread per link
  for (Instruction* inst : comp.MakeInstructionPostOrder()) {
    if (!IsAsync(inst->opcode())) continue;
    const Computation* wrapped = inst->async_wrapped_computation();
    if (wrapped == nullptr) {
      return InvalidArgument(VerifierWhere(*inst), ": needs the wrapped computation (calls=...)");
    }
    std::string own = ThreadAttr(*inst);
    if (inst->opcode() == Opcode::kAsyncStart) {
      auto [it, fresh] = wrapper.emplace(wrapped, inst);
      if (!fresh) {
        return InvalidArgument(VerifierWhere(*inst), ": computation '", wrapped->name(),
                               "' is already wrapped by '", it->second->name(),
                               "'; give each async-start its own computation");
      }
      std::string t = own.empty() ? "main" : own;
      if (!wrapped->is_async_sugar() &&
          t != (wrapped->execution_thread().empty() ? "main" : wrapped->execution_thread())) {
        return InvalidArgument(VerifierWhere(*inst), ": async_execution_thread \"", t,
                               "\" differs from the thread of '", wrapped->name(), "'");
      }
      thread[inst] = t;
      continue;
    }
    const Instruction* prev = inst->operand_count() == 1 ? inst->operand(0) : nullptr;
    if (prev == nullptr || (prev->opcode() != Opcode::kAsyncStart &&
                            prev->opcode() != Opcode::kAsyncUpdate)) {
      return InvalidArgument(VerifierWhere(*inst), ": the operand must be an async-start or ",
                             "async-update");
    }
    if (prev->async_wrapped_computation() != wrapped) {
      return InvalidArgument(VerifierWhere(*inst), ": wraps '", wrapped->name(),
                             "' but its operand '", prev->name(), "' wraps another computation");
    }
    const std::string& chain = thread[prev];
    if (!own.empty() && own != chain) {
      return InvalidArgument(VerifierWhere(*inst), ": async_execution_thread \"", own,
                             "\" differs from the chain's thread \"", chain, "\"");
    }
    thread[inst] = chain;
  }
  return OkStatus();
}

}  // namespace xs
