// ScheduleAsyncCollectives: convert, then order with control edges. Each collective is scheduled
// against the graph as it stands after the previous ones (control edges included), so edges added
// for one pair can never close a cycle through another.
#include "xshard/passes/collective_schedule.h"

#include <algorithm>
#include <limits>
#include <unordered_map>
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
  if ((FormOf(inst.opcode()) == nullptr && inst.opcode() != Opcode::kReduceScatter) ||
      inst.operand_count() != 1) {
    return false;
  }
  if (!inst.shape().IsArray() || !inst.operand(0)->shape().IsArray()) return false;
  return inst.control_predecessors().empty() && inst.control_successors().empty();
}

// reduce-scatter has no -start form: XLA wraps it in a computation run by async-start /
// async-done, ((operand), result, s32[] context).
std::pair<Instruction*, Instruction*> WrapAsync(Module& module, Computation& comp, Instruction* c) {
  const Shape in = c->operand(0)->shape().WithoutLayout();
  auto wrapped = std::make_unique<Computation>(c->name() + ".async");
  auto param = Instruction::Create(Opcode::kParameter, in, {}, "p0");
  param->mutable_attrs().parameter_number = 0;
  Instruction* p = wrapped->AddInstruction(std::move(param));
  Instruction* root = wrapped->AddInstruction(c->CloneWithNewOperands({p}));
  wrapped->set_root(root);
  Computation* w = module.AddComputation(std::move(wrapped));
  const Shape start_shape =
      Shape::Tuple({Shape::Tuple({in}), c->shape(), Shape(DType::kS32, std::vector<int64_t>{})});
  auto start = Instruction::Create(Opcode::kAsyncStart, start_shape, {c->operand(0)},
                                   c->name() + "-start");
  start->AddCall(CallRole::kCalls, w);
  Instruction* st = comp.AddInstruction(std::move(start));
  auto done = Instruction::Create(Opcode::kAsyncDone, c->shape(), {st}, c->name() + "-done");
  done->AddCall(CallRole::kCalls, w);
  Instruction* d = comp.AddInstruction(std::move(done));
  if (c->has_sharding()) d->set_sharding(c->sharding());
  c->ReplaceAllUsesWith(d);
  XS_CHECK(comp.RemoveInstruction(c).ok(), "could not remove ", c->name());
  return {st, d};
}

// The start / done pair replacing `c` (which is removed).
std::pair<Instruction*, Instruction*> Convert(Module& module, Computation& comp, Instruction* c) {
  if (c->opcode() == Opcode::kReduceScatter) return WrapAsync(module, comp, c);
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

std::unordered_set<const Instruction*> Ancestors(const Instruction* x) {
  return Reach(x, [](const Instruction* y, auto visit) {
    for (const Instruction* o : y->operands()) visit(o);
    for (const Instruction* p : y->control_predecessors()) visit(p);
  });
}

std::unordered_set<const Instruction*> Descendants(const Instruction* x) {
  return Reach(x, [](const Instruction* y, auto visit) {
    for (const Instruction* u : y->users()) visit(u);
    for (const Instruction* s : y->control_successors()) visit(s);
  });
}

// `pos`: each instruction's place in the computation's order before any conversion (a start and
// its done take the place of the collective they replace). The compute instructions placed after
// the collective's operand was produced and before its first user run between the start and the
// done (when still independent of it): the transfer overlaps the work the original order did
// between the two, and a done is never pushed past the compute of a later step, which would
// delay the collectives that depend on it (the next shift of a ring).
void Schedule(Computation& comp, Instruction* start, Instruction* done,
              const std::unordered_map<const Instruction*, int>& pos) {
  const auto before = Ancestors(start);
  const auto after = Descendants(done);
  int first_use = std::numeric_limits<int>::max();
  for (const Instruction* u : done->users()) first_use = std::min(first_use, pos.at(u));
  int ready = -1;
  for (const Instruction* o : start->operands()) ready = std::max(ready, pos.at(o));
  for (Instruction* x : comp.instructions()) {
    if (x == start || x == done || !IsCompute(x->opcode())) continue;
    if (before.count(x) || after.count(x)) continue;
    const int at = pos.at(x);
    if (at <= ready || at >= first_use) continue;
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
    // (computations() is a snapshot: the ones this pass adds are not visited.)
    if (wrapped.count(comp)) continue;
    std::vector<Instruction*> todo;
    std::unordered_map<const Instruction*, int> pos;
    for (Instruction* inst : comp->MakeInstructionPostOrder()) {
      pos[inst] = static_cast<int>(pos.size());
      if (Convertible(*inst)) todo.push_back(inst);
    }
    // Convert all first (so users that are collectives have their final form), then schedule.
    std::vector<std::pair<Instruction*, Instruction*>> pairs;
    for (Instruction* c : todo) {
      const int at = pos.at(c);
      auto [start, done] = Convert(module, *comp, c);
      pos.erase(c);
      pos[start] = at;
      pos[done] = at;
      pairs.push_back({start, done});
      changed = true;
    }
    for (auto [start, done] : pairs) Schedule(*comp, start, done, pos);
  }
  return changed;
}

}  // namespace xs
