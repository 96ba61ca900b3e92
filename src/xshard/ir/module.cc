// Module: computation ownership, post-order over the call graph, deep clone.
#include "xshard/ir/module.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace xs {

Module::~Module() = default;

Computation* Module::AddComputation(std::unique_ptr<Computation> computation, bool is_entry) {
  XS_CHECK(computation != nullptr && computation->parent_ == nullptr,
           "AddComputation: null or already owned computation");
  Computation* c = computation.get();
  if (by_name_.contains(c->name_) || c->name_.empty()) {
    std::string base = c->name_.empty() ? "computation" : c->name_;
    for (int64_t& n = last_suffix_[base];;) {
      std::string candidate = StrCat(base, ".", ++n);
      if (!by_name_.contains(candidate)) {
        c->name_ = candidate;
        break;
      }
    }
  }
  by_name_[c->name_] = c;
  c->parent_ = this;
  computations_.push_back(std::move(computation));
  if (is_entry) entry_ = c;
  return c;
}

Status Module::RemoveComputation(Computation* computation) {
  for (const auto& c : computations_)
    for (Instruction* inst : c->instructions())
      for (Computation* callee : inst->called_computations())
        if (callee == computation)
          return FailedPrecondition("cannot remove computation '", computation->name(),
                                    "': instruction '", inst->name(), "' in '", c->name(),
                                    "' calls it");
  auto it = std::find_if(computations_.begin(), computations_.end(),
                         [&](const auto& p) { return p.get() == computation; });
  if (it == computations_.end())
    return NotFound("computation is not in module '", name_, "'");
  if (entry_ == computation) entry_ = nullptr;
  by_name_.erase(computation->name());
  computations_.erase(it);
  return OkStatus();
}

std::vector<Computation*> Module::computations() const {
  std::vector<Computation*> out;
  for (const auto& c : computations_) out.push_back(c.get());
  return out;
}

Computation* Module::GetComputation(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<Computation*> Module::MakeComputationPostOrder() const {
  std::unordered_set<const Computation*> seen;
  std::vector<Computation*> order;
  auto visit = [&](Computation* start) {
    if (!seen.insert(start).second) return;
    // Iterative DFS over callees; each frame remembers its callee list and position.
    std::vector<std::pair<Computation*, std::vector<Computation*>>> stack;
    auto callees = [](Computation* c) {
      std::vector<Computation*> out;
      for (Instruction* inst : c->instructions())
        for (Computation* callee : inst->called_computations()) out.push_back(callee);
      std::reverse(out.begin(), out.end());  // popped from the back: text order
      return out;
    };
    stack.push_back({start, callees(start)});
    while (!stack.empty()) {
      auto& [comp, todo] = stack.back();
      if (!todo.empty()) {
        Computation* next = todo.back();
        todo.pop_back();
        if (next != nullptr && seen.insert(next).second) stack.push_back({next, callees(next)});
        continue;
      }
      order.push_back(comp);
      stack.pop_back();
    }
  };
  for (const auto& c : computations_)
    if (c.get() != entry_) visit(c.get());
  if (entry_ != nullptr) {
    // The entry may have been visited as a callee of nothing; make sure it comes last.
    auto it = std::find(order.begin(), order.end(), entry_);
    if (it != order.end()) order.erase(it);
    seen.erase(entry_);
    visit(entry_);
  }
  return order;
}

std::unique_ptr<Module> Module::Clone() const {
  auto out = std::make_unique<Module>(name_);
  out->config_ = config_;
  std::unordered_map<const Computation*, Computation*> comp_map;
  std::unordered_map<const Instruction*, Instruction*> inst_map;
  for (const auto& c : computations_) {
    auto copy = std::make_unique<Computation>(c->name());
    copy->set_execution_thread(c->execution_thread());
    copy->set_async_sugar(c->is_async_sugar());
    comp_map[c.get()] = out->AddComputation(std::move(copy), c.get() == entry_);
  }
  for (const auto& c : computations_) {
    Computation* dst = comp_map[c.get()];
    // Text order may use an operand before its definition; create all first, then link.
    for (Instruction* inst : c->instructions())
      inst_map[inst] = dst->AddInstruction(inst->CloneWithNewOperands({}));
    for (Instruction* inst : c->instructions()) {
      Instruction* copy = inst_map[inst];
      for (Instruction* op : inst->operands()) copy->AppendOperand(inst_map.at(op));
      for (Instruction* pred : inst->control_predecessors())
        inst_map.at(pred)->AddControlDependencyTo(copy);
      std::vector<CalledComputation> calls = inst->calls();
      for (auto& call : calls) call.computation = comp_map.at(call.computation);
      copy->set_calls(std::move(calls));
    }
    dst->set_root(c->root() == nullptr ? nullptr : inst_map.at(c->root()));
  }
  return out;
}

}  // namespace xs
