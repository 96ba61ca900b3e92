// Forward inference: an instruction's sharding from its operands through the op's factor rule,
// call edges and manual regions. Accepting a candidate: improve.cc; backward inference:
// infer_backward.cc.
#include <algorithm>
#include <optional>

#include "xshard/propagation/engine.h"

namespace xs::propagation_internal {

uint64_t AxisMask(const std::vector<int>& axes) {
  uint64_t m = 0;
  for (int a : axes) m |= uint64_t{1} << a;
  return m;
}

bool IsCustomCall(const Instruction& inst, std::string_view target) {
  return inst.opcode() == Opcode::kCustomCall &&
         inst.attrs().custom_call_target.value_or("") == target;
}

bool IdentityMapping(const OpShardingRule& rule, const TensorFactors& from,
                     const TensorFactors& to) {
  if (from.dims.size() != to.dims.size()) return false;
  for (size_t d = 0; d < from.dims.size(); ++d) {
    if (from.dims[d] != to.dims[d] || from.dims[d].size() > 1) return false;
    if (!from.dims[d].empty() && rule.factors[from.dims[d][0]].kind == FactorKind::kNeedReplication)
      return false;
  }
  return true;
}

void DropNeedReplication(const OpShardingRule& rule, FactorAxes& fa) {
  for (int f = 0; f < rule.num_factors(); ++f) {
    if (rule.factors[f].kind == FactorKind::kNeedReplication) fa[f].clear();
  }
}

namespace {

using Kind = Leaf::Kind;

bool IsReplicatedLeaf(const Leaf& l) {
  return l.kind == Kind::kAxes && l.axes.DimAxes() == 0 && l.axes.manual == 0;
}

}  // namespace

bool Engine::FullyManual(const Node& n) const {
  return !n.leaves.empty() && std::all_of(n.leaves.begin(), n.leaves.end(),
                                          [](const Leaf& l) { return l.kind == Kind::kManual; });
}

bool Engine::AllFixed(const Node& n) const {
  return std::all_of(n.leaves.begin(), n.leaves.end(),
                     [](const Leaf& l) { return l.fixed && l.open_dims == 0; });
}

bool Engine::AnyNone(const Node& n) const {
  return std::any_of(n.leaves.begin(), n.leaves.end(),
                     [](const Leaf& l) { return l.kind == Kind::kNone && !l.fixed; });
}

int64_t Engine::OpaqueTiles(const Leaf& leaf) const {
  int64_t t = 1;
  for (int64_t c : opaque_[leaf.opaque].TileCounts()) t *= c;
  return t;
}

bool Engine::CopyLeaf(int id, int leaf, const Leaf& src, int level, ShardingOrigin origin) {
  if (leaf >= static_cast<int>(nodes_[id].leaves.size())) return false;
  Leaf& t = nodes_[id].leaves[leaf];
  switch (src.kind) {
    case Kind::kNone: return false;
    case Kind::kAxes:
      if (t.kind == Kind::kAxes || t.kind == Kind::kNone) {
        if (t.kind == Kind::kAxes && t.axes.rank() != src.axes.rank()) return false;
        return Improve(id, leaf, src.axes, level, false, origin);
      }
      return false;
    case Kind::kManual:
    case Kind::kOpaque:
      if (t.kind != Kind::kNone || t.fixed) return false;
      t.kind = src.kind;
      t.opaque = src.opaque;
      origin.level = level;
      t.origin = origin;
      return true;
  }
  return false;
}

bool Engine::SetManual(int id, ShardingOrigin origin, bool closed_too) {
  bool changed = false;
  for (Leaf& l : nodes_[id].leaves) {
    const bool closed = l.fixed && l.origin.kind == ShardingOrigin::Kind::kClosed;
    if (l.kind != Kind::kNone || (l.fixed && !(closed_too && closed))) continue;
    l.fixed = false;
    l.kind = Kind::kManual;
    l.origin = origin;
    changed = true;
  }
  return changed;
}

bool Engine::BoundaryFromOperand(int id, int level) {
  Node& n = nodes_[id];
  const int o = n.operand_ids.empty() ? -1 : n.operand_ids[0];
  if (o < 0 || nodes_[o].leaves.size() != 1) return false;
  const Leaf& src = nodes_[o].leaves[0];
  const Leaf& t = n.leaves[0];
  if (src.kind != Kind::kAxes || t.kind != Kind::kAxes || src.axes.rank() != t.axes.rank()) return false;
  // The operand's free axes per dim (manual on neither side), on the boundary's side of it; the
  // boundary takes them into its open dims that name no axes yet.
  AxesSharding cand = t.axes;
  const uint64_t manual = t.axes.manual | src.axes.manual;
  for (int d = 0; d < cand.rank(); ++d) {
    cand.dims[d].clear();
    for (int a : src.axes.dims[d]) {
      if (!(manual >> a & 1)) cand.dims[d].push_back(a);
    }
  }
  return Improve(id, 0, cand, level, false,
                 ShardingOrigin{ShardingOrigin::Kind::kForward, nodes_[o].inst, level});
}

bool Engine::InferFromOperands(int id, int level) {
  Node& n = nodes_[id];
  const Instruction& inst = *n.inst;
  if (level < n.policy.forward_level || AllFixed(n)) return false;
  // Manual shardings spread to every unsharded array result (and to reduce / sort /
  // reduce-window / custom-call tuples, whose leaves belong together).
  const bool manual_target = inst.shape().IsArray() || inst.opcode() == Opcode::kReduce ||
                             inst.opcode() == Opcode::kSort ||
                             inst.opcode() == Opcode::kReduceWindow ||
                             inst.opcode() == Opcode::kCustomCall;
  if (manual_target && AnyNone(n)) {
    for (int k = 0; k < inst.operand_count(); ++k) {
      const Instruction* op = inst.operand(k);
      const int o = n.operand_ids[k];
      if (o < 0 || !FullyManual(nodes_[o])) continue;
      if (level == 0 &&
          (inst.opcode() == Opcode::kConcatenate || inst.opcode() == Opcode::kDynamicSlice))
        return false;
      return SetManual(id, ShardingOrigin{ShardingOrigin::Kind::kForward, op, level}, false);
    }
  }
  if ((IsCustomCall(inst, "SPMDFullToShardShape") || IsCustomCall(inst, "SPMDShardToFullShape")) &&
      n.leaves.size() == 1 && n.leaves[0].fixed && n.leaves[0].open_dims != 0) {
    return BoundaryFromOperand(id, level);
  }
  if (!n.policy.partitionable || n.rule.barrier) {
    // A collective written inside a partially manual region (a shard_map over some mesh axes;
    // JAX leaves it unannotated) stays in its operand's manual subgroup: a collective-permute
    // keeps the operand's tiles (its pairs move whole local pieces), the collectives along a dim
    // start replicated over the free axes. The default, replicated outside the region, could
    // not be reached from the operand.
    if (IsCollective(inst.opcode()) && inst.shape().IsArray() && inst.operand_count() >= 1) {
      const int o = n.operand_ids[0];
      if (o >= 0 && nodes_[o].leaves.size() == 1 && nodes_[o].leaves[0].kind == Kind::kAxes &&
          nodes_[o].leaves[0].axes.manual != 0) {
        const AxesSharding& src = nodes_[o].leaves[0].axes;
        AxesSharding cand{std::vector<std::vector<int>>(inst.shape().rank()), src.manual};
        if (inst.opcode() == Opcode::kCollectivePermute && src.rank() == inst.shape().rank()) cand.dims = src.dims;
        return Improve(id, 0, cand, level, false,
                       ShardingOrigin{ShardingOrigin::Kind::kForward, inst.operand(0), level});
      }
    }
    // Not partitionable: only a replicated operand makes the (array) result replicated.
    if (!inst.shape().IsArray() || inst.operand_count() == 0 || inst.IsRoot() ||
        HasSideEffect(inst))
      return false;
    for (int k = 0; k < inst.operand_count(); ++k) {
      const Instruction* op = inst.operand(k);
      const int o = n.operand_ids[k];
      if (o >= 0 && nodes_[o].leaves.size() == 1 && IsReplicatedLeaf(nodes_[o].leaves[0])) {
        return Improve(id, 0, AxesSharding{std::vector<std::vector<int>>(inst.shape().rank()), 0},
                       level, false, ShardingOrigin{ShardingOrigin::Kind::kForward, op, level});
      }
    }
    return false;
  }
  bool changed = false;
  // Values entering a called computation take the caller's operand.
  if (inst.opcode() == Opcode::kParameter && inst.parent() != module_.entry()) {
    auto it = callers_.find(inst.parent());
    if (it == callers_.end()) return false;
    for (int c : it->second) {
      const Instruction& caller = *nodes_[c].inst;
      const int k = static_cast<int>(inst.parameter_number()) +
                    (caller.opcode() == Opcode::kConditional ? 1 : 0);
      if (caller.opcode() == Opcode::kConditional) {
        // Only the branch this parameter belongs to.
        const std::vector<Computation*> branches = caller.branch_computations();
        auto b = std::find(branches.begin(), branches.end(), inst.parent());
        if (b == branches.end()) continue;
        const int op = IdOf(caller.operand(static_cast<int>(b - branches.begin()) + 1));
        if (op < 0) continue;
        for (size_t l = 0; l < n.leaves.size() && l < nodes_[op].leaves.size(); ++l) {
          changed |=
              CopyLeaf(id, static_cast<int>(l), nodes_[op].leaves[l], level,
                       ShardingOrigin{ShardingOrigin::Kind::kCallEdge, nodes_[op].inst, level});
        }
        continue;
      }
      if (k >= caller.operand_count()) continue;
      const int op = IdOf(caller.operand(k));
      if (op < 0) continue;
      for (size_t l = 0; l < n.leaves.size() && l < nodes_[op].leaves.size(); ++l) {
        changed |=
            CopyLeaf(id, static_cast<int>(l), nodes_[op].leaves[l], level,
                     ShardingOrigin{ShardingOrigin::Kind::kCallEdge, nodes_[op].inst, level});
      }
    }
    return changed;
  }
  // Results of calls take their callee's root (async-start: its wrapped-result element).
  if (inst.opcode() == Opcode::kCall || inst.opcode() == Opcode::kFusion ||
      inst.opcode() == Opcode::kAsyncStart) {
    Computation* callee =
        inst.opcode() == Opcode::kCall ? inst.to_apply() : inst.async_wrapped_computation();
    const int root = callee ? IdOf(callee->root()) : -1;
    int begin = 0;
    if (inst.opcode() == Opcode::kAsyncStart) {
      changed |= ForwardGeneric(id, level);  // element 0: the operands
      begin = inst.shape().IsTuple() && inst.shape().tuple_size() > 1
                  ? LeafCount(inst.shape().tuple_shape(0))
                  : 0;
    }
    if (root >= 0) {
      for (size_t l = 0; l < nodes_[root].leaves.size(); ++l) {
        changed |=
            CopyLeaf(id, begin + static_cast<int>(l), nodes_[root].leaves[l], level,
                     ShardingOrigin{ShardingOrigin::Kind::kCallEdge, nodes_[root].inst, level});
      }
    }
    return changed;
  }
  if (inst.opcode() == Opcode::kConditional) return false;  // shared with the branch roots
  return ForwardGeneric(id, level);
}

bool Engine::ForwardGeneric(int id, int level) {
  Node& n = nodes_[id];
  const Instruction& inst = *n.inst;
  const OpShardingRule& rule = n.rule;
  // Level-0 concatenate only passes stacked parameters (reshape of a parameter / tuple element,
  // already tiled, not along the concatenated dim), as GSPMD does.
  if (level == 0 && inst.opcode() == Opcode::kConcatenate) {
    for (int k = 0; k < inst.operand_count(); ++k) {
      const Instruction* op = inst.operand(k);
      const int o = n.operand_ids[k];
      if (o < 0 || op->opcode() != Opcode::kReshape || nodes_[o].leaves[0].kind != Kind::kAxes ||
          nodes_[o].leaves[0].axes.DimAxes() == 0 ||
          (op->operand(0)->opcode() != Opcode::kParameter &&
           op->operand(0)->opcode() != Opcode::kGetTupleElement) ||
          !nodes_[o].leaves[0].axes.dims[inst.dimensions()[0]].empty()) {
        return false;
      }
    }
  }
  struct Source {
    int operand, leaf, node, node_leaf;
  };
  std::vector<Source> sources;
  std::vector<int> operands(inst.operand_count());
  for (int k = 0; k < inst.operand_count(); ++k) operands[k] = k;
  if (n.policy.larger_operand_first && inst.operand_count() >= 2 &&
      inst.operand(1)->shape().byte_size() > inst.operand(0)->shape().byte_size()) {
    std::swap(operands[0], operands[1]);
  }
  if (n.policy.reverse_operands) std::reverse(operands.begin(), operands.end());
  for (int k : operands) {
    const int o = n.operand_ids[k];
    if (o < 0) continue;
    const int count = rule.operand_leaf_begin[k + 1] - rule.operand_leaf_begin[k];
    for (int l = 0; l < count && l < static_cast<int>(nodes_[o].leaves.size()); ++l) {
      if (!rule.operands[rule.OperandLeaf(k, l)].participates) continue;
      const Leaf& s = nodes_[o].leaves[l];
      if (s.kind != Kind::kAxes && s.kind != Kind::kManual &&
          !(s.kind == Kind::kOpaque && opaque_[s.opaque].IsTiled())) {
        continue;
      }
      sources.push_back({k, l, o, l});
    }
  }
  {
    std::vector<const Leaf*> leaves;
    for (const Source& s : sources) leaves.push_back(&nodes_[s.node].leaves[s.node_leaf]);
    const int first = SourceUsersAgreeWith(id, leaves);
    if (first > 0) std::rotate(sources.begin(), sources.begin() + first, sources.begin() + first + 1);
  }
  if (level == 0 && n.policy.representative_at_level0 && sources.size() > 1) {
    // Per relation group (one per leaf of a tuple-shaped copy), only the most sharded source.
    auto tiles = [&](const Source& s) {
      const Leaf& l = nodes_[s.node].leaves[s.node_leaf];
      if (l.kind == Kind::kManual) return int64_t{1};
      return l.kind == Kind::kAxes ? l.axes.TileCount(mesh_) : OpaqueTiles(l);
    };
    auto group = [&](const Source& s) {
      return rule.operands[rule.OperandLeaf(s.operand, s.leaf)].group;
    };
    std::vector<Source> best;
    for (const Source& s : sources) {
      auto it = std::find_if(best.begin(), best.end(),
                             [&](const Source& b) { return group(b) == group(s); });
      if (it == best.end()) {
        best.push_back(s);
      } else if (tiles(s) > tiles(*it)) {
        *it = s;
      }
    }
    sources = std::move(best);
  }
  const bool aggressive = n.policy.aggressive_resharding && n.non_root_users == 1 &&
                          !(IsElementwise(inst.opcode()) && inst.operand_count() > 1);
  bool changed = false;
  for (const Source& src : sources) {
    const Leaf& s = nodes_[src.node].leaves[src.node_leaf];
    const TensorFactors& from = rule.operands[rule.OperandLeaf(src.operand, src.leaf)];
    const ShardingOrigin origin{ShardingOrigin::Kind::kForward, nodes_[src.node].inst, level};
    if (s.kind == Kind::kOpaque || s.kind == Kind::kManual) {
      for (int r = 0; r < static_cast<int>(rule.results.size()); ++r) {
        if (rule.results[r].participates && rule.results[r].group == from.group &&
            IdentityMapping(rule, from, rule.results[r])) {
          changed |= CopyLeaf(id, r, s, level, origin);
        }
      }
      continue;
    }
    if (n.policy.skip_replicated_source && s.axes.DimAxes() == 0) continue;
    FactorAxes fa = ProjectToFactors(s.axes, from, rule, mesh_);
    if (n.policy.skip_if_need_replication_sharded && level == 0) {
      bool blocked = false;
      for (int f = 0; f < rule.num_factors(); ++f) {
        blocked |= rule.factors[f].kind == FactorKind::kNeedReplication && !fa[f].empty();
      }
      if (blocked) continue;
    }
    auto tiles = [&](int f) {
      int64_t t = 1;
      for (int a : fa[f]) t *= mesh_.axis_size(a);
      return t;
    };
    for (int f = 0; f < rule.num_factors(); ++f) {
      if (rule.factors[f].kind != FactorKind::kNeedReplication) continue;
      // Sort keeps the sorted dim's axes where they split it evenly and another dim could take
      // them after its own (GSPMD's IsSortOperandShardingMovable; a rank-1 sort gathers).
      bool movable = n.policy.forward_keeps_need_replication && rule.factors[f].size % tiles(f) == 0;
      bool free_dim = false;
      for (int g = 0; movable && g < rule.num_factors(); ++g) {
        free_dim |= g != f && rule.factors[g].kind == FactorKind::kPassThrough &&
                    rule.factors[g].size % (tiles(g) * tiles(f)) == 0 && rule.factors[g].size > 1;
      }
      if (!movable || !free_dim) fa[f].clear();
    }
    DropDimsEveryUserGathers(id, fa);
    for (int r = 0; r < static_cast<int>(rule.results.size()); ++r) {
      if (!rule.results[r].participates || rule.results[r].group != from.group) continue;
      AxesSharding cand = ProjectFromFactors(fa, rule.results[r], rule, mesh_);
      cand.manual = s.axes.manual;
      changed |= Improve(id, r, cand, level, aggressive, origin);
    }
  }
  return changed;
}

std::optional<AxesSharding> Engine::UsersAgreeOn(int id) const {
  const Node& n = nodes_[id];
  const Instruction& inst = *n.inst;
  std::optional<AxesSharding> want;
  for (size_t j = 0; j < n.user_ids.size(); ++j) {
    const int uid = n.user_ids[j];
    if (uid < 0) continue;
    const Node& u = nodes_[uid];
    const Instruction& user = *u.inst;
    // The leaf of the user that holds this value: a tuple's element (a loop body's root, tied to
    // the loop state), or an elementwise user's result of the same shape.
    const Leaf* leaf = nullptr;
    if (user.opcode() == Opcode::kTuple) {
      for (int k = 0; k < user.operand_count(); ++k) {
        if (user.operand(k) != &inst) continue;
        const int l = u.rule.operand_leaf_begin[k];
        if (l < static_cast<int>(u.leaves.size())) leaf = &u.leaves[l];
        break;
      }
    } else if (IsElementwise(user.opcode()) && user.shape().IsArray() && user.shape().dims() == inst.shape().dims() &&
               u.leaves.size() == 1) {
      leaf = &u.leaves[0];
    }
    if (leaf == nullptr || leaf->kind != Kind::kAxes || leaf->axes.rank() != inst.shape().rank()) continue;
    if (want && *want != leaf->axes) return std::nullopt;  // users disagree: no preference
    want = leaf->axes;
  }
  return want;
}

int Engine::SourceUsersAgreeWith(int id, const std::vector<const Leaf*>& sources) const {
  const Instruction& inst = *nodes_[id].inst;
  if (sources.size() < 2 || !IsElementwise(inst.opcode()) || !inst.shape().IsArray()) return -1;
  auto split = [](const Leaf* l) { return l->kind == Kind::kAxes && l->axes.DimAxes() != 0; };
  // Only a real conflict: two operands split the value differently.
  const bool conflict = std::any_of(sources.begin() + 1, sources.end(), [&](const Leaf* l) {
    return split(sources[0]) && split(l) && l->axes != sources[0]->axes;
  });
  if (!conflict) return -1;
  const std::optional<AxesSharding> want = UsersAgreeOn(id);
  if (!want) return -1;
  for (size_t i = 0; i < sources.size(); ++i) {
    if (sources[i]->kind == Kind::kAxes && sources[i]->axes == *want) return static_cast<int>(i);
  }
  return -1;
}

void Engine::DropDimsEveryUserGathers(int id, FactorAxes& fa) const {
  const Node& n = nodes_[id];
  const Instruction& inst = *n.inst;
  if (inst.opcode() != Opcode::kConcatenate && inst.opcode() != Opcode::kPad) return;
  if (inst.IsRoot() || n.user_ids.empty() || n.rule.results.size() != 1 || !inst.shape().IsArray()) return;
  const TensorFactors& result = n.rule.results[0];
  for (int d = 0; d < static_cast<int>(result.dims.size()); ++d) {
    // A dim the op makes longer than its (first) operand's, split by a permutation factor.
    if (result.dims[d].size() != 1 || inst.shape().dim(d) <= inst.operand(0)->shape().dim(d)) continue;
    const int f = result.dims[d][0];
    if (n.rule.factors[f].kind != FactorKind::kPermutation || fa[f].empty()) continue;
    // Every use of the result by `uid` needs dim d whole (a need-replication factor there).
    auto needs_whole = [&](int uid) {
      if (uid < 0) return false;
      const Node& u = nodes_[uid];
      for (int k = 0; k < u.inst->operand_count(); ++k) {
        if (u.inst->operand(k) != &inst) continue;
        if (u.rule.operand_leaf_begin[k + 1] - u.rule.operand_leaf_begin[k] != 1) return false;
        const TensorFactors& use = u.rule.operands[u.rule.OperandLeaf(k)];
        if (!use.participates || d >= static_cast<int>(use.dims.size()) || use.dims[d].empty() ||
            u.rule.factors[use.dims[d][0]].kind != FactorKind::kNeedReplication) {
          return false;
        }
      }
      return true;
    };
    if (std::all_of(n.user_ids.begin(), n.user_ids.end(), needs_whole)) fa[f].clear();
  }
}

}  // namespace xs::propagation_internal
