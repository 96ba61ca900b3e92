// ScheduleAsyncCollectives: convert, then order with control edges. Each collective is scheduled
// against the graph as it stands after the previous ones (control edges included), so edges added
// for one pair can never close a cycle through another.
#include "xshard/passes/collective_schedule.h"

#include <unordered_set>
#include <vector>

namespace xs {
namespace {

struct AsyncForm {
  Opcode sync, start, done;
};
constexpr AsyncForm kForms[] = {
    {Opcode::kAllGather, Opcode::kAllGatherStart, Opcode::kAllGatherDone},
    {Opcode::kAllReduce, Opcode::kAllReduceStart, Opcode::kAllReduceDone},
    {Opcode::kCollectivePermute, Opcode::kCollectivePermuteStart, Opcode::kCollectivePermuteDone},
};

const AsyncForm* FormOf(Opcode op) {
  for (const AsyncForm& f : kForms) {
    if (f.sync == op) return &f;
  }
  return nullptr;
}

// Work worth overlapping with communication.
bool IsCompute(Opcode op) {
  switch (op) {
    case Opcode::kDot:
    case Opcode::kConvolution:
    case Opcode::kFusion:
    case Opcode::kReduce:
    case Opcode::kReduceWindow:
    case Opcode::kWhile:
    case Opcode::kCall:
    case Opcode::kSort:
    case Opcode::kCustomCall:
      return true;
    default:
      return false;
  }
}

bool Convertible(const Instruction& inst) {
  if (FormOf(inst.opcode()) == nullptr || inst.operand_count() != 1) return false;
  if (!inst.shape().IsArray() || !inst.operand(0)->shape().IsArray()) return false;
  return inst.control_predecessors().empty() && inst.control_successors().empty();
}

// The start / done pair replacing `c` (which is removed).
std::pair<Instruction*, Instruction*> Convert(Computation& comp, Instruction* c) {
  const AsyncForm& f = *FormOf(c->opcode());
  Shape start_shape = c->shape();
  if (f.start != Opcode::kAllReduceStart) {
    start_shape = Shape::Tuple({c->operand(0)->shape().WithoutLayout(), c->shape()});
  }
  auto start = Instruction::Create(f.start, start_shape, {c->operand(0)}, c->name() + "-start");
  start->mutable_attrs() = c->attrs();
  start->set_calls(c->calls());
  Instruction* s = comp.AddInstruction(std::move(start));
  Instruction* d =
      comp.AddInstruction(Instruction::Create(f.done, c->shape(), {s}, c->name() + "-done"));
  if (c->has_sharding()) d->set_sharding(c->sharding());
  c->ReplaceAllUsesWith(d);
  XS_CHECK(comp.RemoveInstruction(c).ok(), "could not remove ", c->name());
  return {s, d};
}

// Everything `from` reaches through `next` (operands and control predecessors, or users and
// control successors), `from` excluded.
template <typename Next>
std::unordered_set<const Instruction*> Reach(const Instruction* from, Next next) {
  std::unordered_set<const Instruction*> seen;
  std::vector<const Instruction*> stack{from};
  while (!stack.empty()) {
    const Instruction* x = stack.back();
    stack.pop_back();
    auto visit = [&](const Instruction* y) {
      if (seen.insert(y).second) stack.push_back(y);
    };
    next(x, visit);
  }
  return seen;
}

void Schedule(Computation& comp, Instruction* start, Instruction* done) {
  const auto before = Reach(start, [](const Instruction* x, auto visit) {
    for (const Instruction* o : x->operands()) visit(o);
    for (const Instruction* p : x->control_predecessors()) visit(p);
  });
  const auto after = Reach(done, [](const Instruction* x, auto visit) {
    for (const Instruction* u : x->users()) visit(u);
    for (const Instruction* s : x->control_successors()) visit(s);
  });
  for (Instruction* x : comp.instructions()) {
    if (x == start || x == done || !IsCompute(x->opcode())) continue;
    if (before.count(x) || after.count(x)) continue;
    start->AddControlDependencyTo(x);
    x->AddControlDependencyTo(done);
  }
}

}  // namespace

StatusOr<bool> ScheduleAsyncCollectives(Module& module) {
  bool changed = false;
  // Computations wrapped by an async-start already run asynchronously as a whole.
  std::unordered_set<const Computation*> wrapped;
  for (const Computation* comp : module.computations()) {
    for (const Instruction* inst : comp->instructions()) {
      if (inst->opcode() == Opcode::kAsyncStart) wrapped.insert(inst->async_wrapped_computation());
    }
  }
  for (Computation* comp : module.computations()) {
    if (wrapped.count(comp)) continue;
    std::vector<Instruction*> todo;
    for (Instruction* inst : comp->MakeInstructionPostOrder()) {
      if (Convertible(*inst)) todo.push_back(inst);
    }
    for (Instruction* c : todo) {
      auto [start, done] = Convert(*comp, c);
      Schedule(*comp, start, done);
      changed = true;
    }
  }
  return changed;
}

}  // namespace xs
