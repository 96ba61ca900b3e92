// Propagation engine: setup (visited computations, nodes, call edges and sharing groups; the
// annotations are read in annotations.cc), the level-by-level fixed-point loop, and the
// write-back.
#include "xshard/propagation/engine.h"

#include <algorithm>
#include <map>
#include <set>

#include "xshard/rules/rule_registry.h"

namespace xs::propagation_internal {
namespace {

// Computations whose values are partitioned with their caller's (bodies of while, branches of
// conditional, call / fusion / async targets); to_apply reducers are scalar helpers and stay out.
bool FollowsCalls(Opcode op) {
  return op == Opcode::kWhile || op == Opcode::kConditional || op == Opcode::kCall ||
         op == Opcode::kFusion || op == Opcode::kAsyncStart;
}

// The computation a call-like op runs with its operands as parameters.
Computation* CalleeOf(const Instruction& inst) {
  switch (inst.opcode()) {
    case Opcode::kCall: return inst.to_apply();
    case Opcode::kFusion:
    case Opcode::kAsyncStart: return inst.async_wrapped_computation();
    default: return nullptr;
  }
}

}  // namespace

void Engine::CollectComputations() {
  std::set<const Computation*> seen = {module_.entry()};
  std::vector<const Computation*> work = {module_.entry()};
  while (!work.empty()) {
    const Computation* c = work.back();
    work.pop_back();
    for (const Instruction* inst : c->instructions()) {
      if (!FollowsCalls(inst->opcode())) continue;
      for (Computation* callee : inst->called_computations()) {
        if (seen.insert(callee).second) work.push_back(callee);
      }
    }
  }
  for (Computation* c : module_.MakeComputationPostOrder()) {
    if (seen.count(c)) comps_.push_back(c);
  }
}

Status Engine::AddNodes() {
  for (Computation* c : comps_) {
    std::vector<int> order;
    for (Instruction* inst : c->MakeInstructionPostOrder()) {
      const int id = static_cast<int>(nodes_.size());
      ids_[inst] = id;
      order.push_back(id);
      Node n;
      n.inst = inst;
      n.leaves.resize(LeafCount(inst->shape()));
      n.policy = PolicyOf(*inst);
      for (const Instruction* u : inst->users()) n.non_root_users += u != c->root() ? 1 : 0;
      XS_ASSIGN_OR_RETURN(n.rule, GetRule(*inst));
      nodes_.push_back(std::move(n));
    }
    post_order_.push_back(std::move(order));
  }
  for (Node& n : nodes_) {
    for (const Instruction* op : n.inst->operands()) n.operand_ids.push_back(IdOf(op));
    for (const Instruction* u : n.inst->users()) n.user_ids.push_back(IdOf(u));
  }
  done_fwd_.assign(nodes_.size(), 0);
  done_bwd_.assign(nodes_.size(), 0);
  return OkStatus();
}

void Engine::BuildEdgesAndGroups() {
  auto link = [&](int from, int to) {  // `to`'s forward reads `from`; `from`'s backward reads `to`
    if (from < 0 || to < 0) return;
    nodes_[from].fwd_readers.push_back(to);
    nodes_[to].bwd_readers.push_back(from);
  };
  for (int id = 0; id < static_cast<int>(nodes_.size()); ++id) {
    const Instruction* inst = nodes_[id].inst;
    for (int k = 0; k < inst->operand_count(); ++k) {
      const int op = IdOf(inst->operand(k));
      link(op, id);
      if (!nodes_[id].policy.backward_uses_other_operands || op < 0) continue;
      for (int k2 = 0; k2 < inst->operand_count(); ++k2) {
        const int other = IdOf(inst->operand(k2));
        if (k2 != k && other >= 0) nodes_[other].bwd_readers.push_back(op);
      }
    }
    std::vector<int> group;
    if (Computation* callee = CalleeOf(*inst)) {
      callers_[callee].push_back(id);
      for (int k = 0; k < inst->operand_count() && k < callee->num_parameters(); ++k) {
        if (callee->parameter(k)) link(IdOf(inst->operand(k)), IdOf(callee->parameter(k)));
      }
      link(IdOf(callee->root()), id);
    } else if (inst->opcode() == Opcode::kConditional) {
      group.push_back(id);
      const std::vector<Computation*> branches = inst->branch_computations();
      for (size_t b = 0; b < branches.size(); ++b) {
        callers_[branches[b]].push_back(id);
        if (b + 1 < static_cast<size_t>(inst->operand_count()) &&
            branches[b]->num_parameters() > 0) {
          link(IdOf(inst->operand(static_cast<int>(b) + 1)), IdOf(branches[b]->parameter(0)));
        }
        group.push_back(IdOf(branches[b]->root()));
      }
    } else if (inst->opcode() == Opcode::kWhile && inst->while_body() && inst->while_condition()) {
      group = {id, IdOf(inst->while_body()->root())};
      if (inst->while_body()->num_parameters() > 0)
        group.push_back(IdOf(inst->while_body()->parameter(0)));
      if (inst->while_condition()->num_parameters() > 0)
        group.push_back(IdOf(inst->while_condition()->parameter(0)));
    }
    group.erase(std::remove(group.begin(), group.end(), -1), group.end());
    if (group.size() < 2) continue;
    for (int m : group) group_of_[m].push_back(static_cast<int>(groups_.size()));
    groups_.push_back(group);
  }
  // An annotated member gives its sharding to the unannotated members of its group, which then
  // count as annotated too (GSPMD does this before collecting the provided shardings).
  for (const std::vector<int>& g : groups_) {
    int src = -1;
    for (int m : g) {
      if (nodes_[m].annotated && src < 0) src = m;
    }
    if (src < 0) continue;
    for (int m : g) {
      if (m == src || nodes_[m].annotated || nodes_[m].leaves.size() != nodes_[src].leaves.size())
        continue;
      for (size_t l = 0; l < nodes_[m].leaves.size(); ++l) {
        nodes_[m].leaves[l] = nodes_[src].leaves[l];
        nodes_[m].leaves[l].origin =
            ShardingOrigin{ShardingOrigin::Kind::kCallEdge, nodes_[src].inst, 0};
      }
      nodes_[m].annotated = true;
    }
  }
}

void Engine::SyncGroups(int id) {
  auto it = group_of_.find(id);
  if (it == group_of_.end()) return;
  for (int g : it->second) {
    for (int m : groups_[g]) {
      if (m == id || nodes_[m].leaves.size() != nodes_[id].leaves.size()) continue;
      bool changed = false;
      for (size_t l = 0; l < nodes_[m].leaves.size(); ++l) {
        Leaf& dst = nodes_[m].leaves[l];
        const Leaf& src = nodes_[id].leaves[l];
        if (dst.fixed || (dst.kind == src.kind && dst.axes == src.axes && dst.opaque == src.opaque))
          continue;
        dst.kind = src.kind;
        dst.axes = src.axes;
        dst.opaque = src.opaque;
        dst.origin =
            ShardingOrigin{ShardingOrigin::Kind::kCallEdge, nodes_[id].inst, src.origin.level};
        changed = true;
      }
      if (changed) OnChanged(m);
    }
  }
}

void Engine::FillTupleLeaves(int id) {
  // A tuple sharding is all or nothing, as in GSPMD: once one leaf of a tuple-shaped value is
  // sharded, its unsharded leaves start as replicated (still refinable, but no longer open to a
  // manual sharding arriving later).
  Node& n = nodes_[id];
  if (!n.inst->shape().IsTuple()) return;
  // Inside a partially manual region (a shard_map over some mesh axes) the tuple's leaves all
  // live in that region: they start replicated over the free axes but manual over the region's
  // axes, as the sharded leaves are (a replicated leaf would meet the region's values, e.g. a
  // psum's result, only through a reshard out of the manual subgroup, which cannot exist).
  uint64_t manual = 0;
  bool agree = true;
  for (const Leaf& leaf : n.leaves) {
    if (leaf.kind != Leaf::Kind::kAxes) continue;
    if (manual == 0) manual = leaf.axes.manual;
    agree &= leaf.axes.manual == manual;
  }
  if (!agree) manual = 0;
  const std::vector<const Shape*> shapes = ShapeLeaves(n.inst->shape());
  for (size_t l = 0; l < n.leaves.size(); ++l) {
    Leaf& leaf = n.leaves[l];
    if (leaf.kind != Leaf::Kind::kNone || leaf.fixed) continue;
    leaf.kind = Leaf::Kind::kAxes;
    leaf.axes = AxesSharding{std::vector<std::vector<int>>(shapes[l]->IsArray() ? shapes[l]->rank() : 0),
                             shapes[l]->IsArray() ? manual : 0};
    leaf.origin = ShardingOrigin{};
  }
}

void Engine::OnChanged(int id) {
  FillTupleLeaves(id);
  for (int r : nodes_[id].fwd_readers) done_fwd_[r] = 0;
  for (int r : nodes_[id].bwd_readers) done_bwd_[r] = 0;
  SyncGroups(id);
}

Status Engine::Setup() {
  if (module_.entry() == nullptr)
    return InvalidArgument("module '", module_.name(), "' has no entry computation");
  CollectComputations();
  XS_RETURN_IF_ERROR(AddNodes());
  XS_RETURN_IF_ERROR(ReadAnnotations());
  CloseEntryBoundary();
  BuildEdgesAndGroups();
  return OkStatus();
}

Status Engine::Run() {
  constexpr int kMaxPasses = 100000;  // each pass strictly refines some sharding; never reached
  const int max_level = std::clamp(options_.max_aggressiveness, 0, kMaxAggressiveness);
  for (int level = 0; level <= max_level; ++level) {
    std::fill(done_fwd_.begin(), done_fwd_.end(), 0);
    std::fill(done_bwd_.begin(), done_bwd_.end(), 0);
    bool changed = true;
    while (changed) {
      changed = false;
      if (++iterations_ > kMaxPasses) return Internal("sharding propagation did not converge");
      for (const std::vector<int>& order : post_order_) {
        for (int id : order) {
          if (done_fwd_[id]) continue;
          done_fwd_[id] = 1;
          if (InferFromOperands(id, level)) {
            changed = true;
            OnChanged(id);
          }
        }
        for (auto it = order.rbegin(); it != order.rend(); ++it) {
          if (done_bwd_[*it]) continue;
          done_bwd_[*it] = 1;
          if (InferFromUsers(*it, level)) {
            changed = true;
            OnChanged(*it);
          }
        }
      }
    }
  }
  return OkStatus();
}

PropagationResult Engine::Finish() {
  ReplicateUnevenBoundaries();
  PropagationResult result;
  std::map<std::pair<std::vector<std::vector<int>>, uint64_t>, HloSharding> cache;
  auto to_hlo = [&](const Leaf& l) -> HloSharding {
    if (l.kind == Leaf::Kind::kManual) return HloSharding::Manual();
    if (l.kind == Leaf::Kind::kOpaque) return opaque_[l.opaque];
    auto key = std::make_pair(l.axes.dims, l.axes.manual);
    auto it = cache.find(key);
    if (it == cache.end()) it = cache.emplace(key, mesh_.ToHloSharding(l.axes)).first;
    return it->second;
  };
  result.values.reserve(nodes_.size());
  for (Node& n : nodes_) {
    PropagatedValue& value = result.values[n.inst];
    std::vector<ShardingOrigin>& origins = value.origins;
    value.axes.reserve(n.leaves.size());
    bool refined = false;
    const std::vector<const Shape*> shapes = ShapeLeaves(n.inst->shape());
    for (size_t l = 0; l < n.leaves.size(); ++l) {
      Leaf& leaf = n.leaves[l];
      if (leaf.kind == Leaf::Kind::kNone) {
        leaf.kind = Leaf::Kind::kAxes;
        leaf.axes = AxesSharding{
            std::vector<std::vector<int>>(shapes[l]->IsArray() ? shapes[l]->rank() : 0), 0};
        if (leaf.origin.kind != ShardingOrigin::Kind::kClosed) leaf.origin = ShardingOrigin{};
      }
      refined |= leaf.refined;
      origins.push_back(leaf.origin);
      const int rank = shapes[l]->IsArray() ? shapes[l]->rank() : 0;
      value.axes.push_back(leaf.kind == Leaf::Kind::kAxes     ? std::optional<AxesSharding>(leaf.axes)
                           : leaf.kind == Leaf::Kind::kManual ? mesh_.ToAxes(HloSharding::Manual(), rank)
                                                              : std::nullopt);
      switch (leaf.origin.kind) {
        case ShardingOrigin::Kind::kUser: ++result.user_leaves; break;
        case ShardingOrigin::Kind::kDefault:
        case ShardingOrigin::Kind::kUneven:
        case ShardingOrigin::Kind::kClosed: ++result.default_leaves; break;
        default: ++result.propagated_leaves; break;
      }
    }
    // A written sharding stays as written unless refined; {unknown} leaves (a tuple's outputs left
    // to propagation, as a None in jax.jit's out_shardings) take what propagation found.
    const HloSharding* written = n.inst->has_sharding() ? &*n.inst->sharding() : nullptr;
    const bool open_leaves =
        written != nullptr &&
        (written->IsUnknown() ||
         (written->IsTuple() && std::any_of(written->tuple_elements().begin(), written->tuple_elements().end(),
                                            [](const HloSharding& e) { return e.IsUnknown(); })));
    if (written != nullptr && !open_leaves && !refined) continue;
    const ShardingOrigin& o = n.leaves.empty() ? ShardingOrigin{} : n.leaves[0].origin;
    if (!refined && o.kind == ShardingOrigin::Kind::kUser && o.from != nullptr &&
        o.from->has_sharding()) {
      n.inst->set_sharding(
          *o.from->sharding());  // folded Sharding custom-call: its text as written
      continue;
    }
    HloSharding s;
    if (n.inst->shape().IsTuple()) {
      std::vector<HloSharding> elements;
      for (const Leaf& l : n.leaves) elements.push_back(to_hlo(l));
      s = HloSharding::Tuple(std::move(elements));
    } else {
      s = to_hlo(n.leaves[0]);
    }
    if (n.inst->has_sharding()) s = s.WithMetadata(n.inst->sharding()->metadata());
    n.inst->set_sharding(std::move(s));
  }
  result.mesh = mesh_;
  result.num_devices = num_devices_;
  result.iterations = iterations_;
  result.notes = std::move(notes_);
  return result;
}

}  // namespace xs::propagation_internal
