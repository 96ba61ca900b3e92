// Planning of fused elementwise loops: grouping (consumers first, a producer joins its users'
// group when that cannot create a cycle; then a group joins a producer group of its shape when no
// path leaves and re-enters them), reduces joining their operand's loop, the step reorder.
#include "xshard/exec/fusion_plan.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <unordered_set>

#include "xshard/exec/executable_plan.h"

namespace xs {

bool FusionLoopShaped(const Shape& s) {
  return s.IsArray() && s.rank() >= 1 && s.num_elements() > 0 && DTypeSize(s.dtype()) > 0;
}

namespace {

bool IsMember(const Step& step) {
  const Instruction& inst = *step.inst;
  // A bitcast-convert between real types of one width is elementwise too (a kUnary byte copy, or
  // s4 <-> u4's re-encoding).
  const bool same_size_bitcast =
      inst.opcode() == Opcode::kBitcastConvert && inst.operand_count() == 1 && inst.operand(0)->shape().IsArray() &&
      inst.shape().IsArray() &&
      DTypeBitWidth(inst.operand(0)->shape().dtype()) == DTypeBitWidth(inst.shape().dtype()) &&
      !IsComplex(inst.operand(0)->shape().dtype()) && !IsComplex(inst.shape().dtype());
  if ((!IsLoopFusible(inst.opcode()) && !same_size_bitcast) || !FusionLoopShaped(inst.shape())) return false;
  for (const Instruction* o : inst.operands()) {
    if (!o->shape().IsArray() || DTypeSize(o->shape().dtype()) <= 0) return false;
    if (o->shape().rank() != 0 && o->shape().dims() != inst.shape().dims()) return false;
  }
  switch (step.scalar_kind) {
    case ScalarKind::kUnary: return step.elementwise().unary != nullptr;
    case ScalarKind::kBinary: return step.elementwise().binary != nullptr;
    case ScalarKind::kTernary: return step.elementwise().ternary != nullptr;
    case ScalarKind::kShare: return true;
    default: return false;
  }
}

}  // namespace

bool IsIotaGenerator(const Instruction& inst) {
  if (!FusionLoopShaped(inst.shape())) return false;
  const Instruction* iota = &inst;
  if (inst.opcode() == Opcode::kSlice) {
    iota = inst.operand(0);
    const auto& slice = inst.attrs().slice;
    if (iota->opcode() != Opcode::kIota || !slice || static_cast<int>(slice->size()) != inst.shape().rank() ||
        iota->shape().rank() != inst.shape().rank() || iota->shape().dtype() != inst.shape().dtype()) {
      return false;
    }
  }
  if (iota->opcode() != Opcode::kIota) return false;
  const DType t = iota->shape().dtype();
  const auto& d = iota->attrs().iota_dimension;
  return d.has_value() && *d >= 0 && *d < iota->shape().rank() &&
         (t == DType::kS64 || kernels::FindConvertKernel(DType::kS64, t).ok());
}

bool IsConcatGenerator(const Instruction& inst) {
  if (!FusionLoopShaped(inst.shape())) return false;
  const Instruction* c = &inst;
  if (inst.opcode() == Opcode::kReshape) {
    c = inst.operand(0);
    if (!c->shape().IsArray() || c->shape().dtype() != inst.shape().dtype() ||
        c->shape().num_elements() != inst.shape().num_elements()) {
      return false;
    }
  }
  if (c->opcode() != Opcode::kConcatenate || c->dimensions().size() != 1 || !FusionLoopShaped(c->shape())) {
    return false;
  }
  const int64_t d = c->dimensions()[0];
  for (int64_t k = 0; k < d; ++k) {
    if (c->shape().dim(static_cast<int>(k)) != 1) return false;
  }
  for (const Instruction* piece : c->operands()) {
    if (!piece->shape().IsArray() || piece->shape().dtype() != c->shape().dtype()) return false;
  }
  return true;
}

std::vector<const Instruction*> GeneratorReads(const Instruction& gen) {
  if (IsIotaGenerator(gen)) return {};
  const Instruction* c = gen.opcode() == Opcode::kReshape ? gen.operand(0) : &gen;
  return std::vector<const Instruction*>(c->operands().begin(), c->operands().end());
}

bool IsFusionGenerator(const Instruction& inst) {
  if (!FusionLoopShaped(inst.shape())) return false;
  if (inst.opcode() == Opcode::kIota || inst.opcode() == Opcode::kSlice) return IsIotaGenerator(inst);
  if (inst.opcode() == Opcode::kConcatenate || inst.opcode() == Opcode::kReshape) return IsConcatGenerator(inst);
  if (inst.opcode() == Opcode::kGather) return IsRowGather(inst);
  return inst.opcode() == Opcode::kBroadcast && inst.operand(0)->shape().IsArray() &&
         inst.operand(0)->shape().dtype() == inst.shape().dtype();
}

bool IsRowGather(const Instruction& inst) {
  if (inst.opcode() != Opcode::kGather || inst.operand_count() != 2 || !inst.shape().IsArray()) return false;
  const auto& dn = inst.attrs().gather;
  const auto& sizes = inst.attrs().slice_sizes;
  if (!dn || !sizes) return false;
  const Shape& table = inst.operand(0)->shape();
  const Shape& ids = inst.operand(1)->shape();
  if (!table.IsArray() || !ids.IsArray() || table.rank() < 1 || table.dim(0) < 1 ||
      table.dtype() != inst.shape().dtype()) {
    return false;
  }
  switch (ids.dtype()) {
    case DType::kS8:
    case DType::kS16:
    case DType::kS32:
    case DType::kS64:
    case DType::kU8:
    case DType::kU16:
    case DType::kU32:
    case DType::kU64: break;
    default: return false;
  }
  if (dn->start_index_map != std::vector<int64_t>{0} || dn->collapsed_slice_dims != std::vector<int64_t>{0} ||
      !dn->operand_batching_dims.empty() || !dn->start_indices_batching_dims.empty()) {
    return false;
  }
  std::vector<int64_t> want_sizes = table.dims();
  want_sizes[0] = 1;
  if (*sizes != want_sizes) return false;
  // The batch dims: every index dim but a trailing index vector dim of size one.
  std::vector<int64_t> dims = ids.dims();
  if (dn->index_vector_dim == ids.rank() - 1 && ids.rank() >= 1 && ids.dims().back() == 1) {
    dims.pop_back();
  } else if (dn->index_vector_dim != ids.rank()) {
    return false;
  }
  const int64_t batch = static_cast<int64_t>(dims.size());
  std::vector<int64_t> offset_dims;
  for (int k = 1; k < table.rank(); ++k) {
    offset_dims.push_back(batch + k - 1);
    dims.push_back(table.dim(k));
  }
  return dn->offset_dims == offset_dims && inst.shape().dims() == dims;
}

namespace {

using Group = FusionGroup;

// Loops of fewer elements gain nothing from a reduce of their own.
constexpr int64_t kOwnReduceLoopElements = int64_t{1} << 16;

// A reduce a fused loop can compute: one operand, typed combiner, static init.
bool FusibleReduce(const Step& s) {
  const Instruction& r = *s.inst;
  if (r.opcode() != Opcode::kReduce || r.operand_count() != 2 || !r.shape().IsArray()) return false;
  const kernels::CombineKind combine = s.combine().combine;
  if (combine == kernels::CombineKind::kGeneric || combine == kernels::CombineKind::kOverwrite) return false;
  const Instruction* in = r.operand(0);
  const Opcode init = r.operand(1)->opcode();
  if (!FusionLoopShaped(in->shape()) || (init != Opcode::kConstant && init != Opcode::kParameter)) return false;
  return kernels::FindReduceRange(combine, in->shape().dtype()).ok();
}

// Whether a path of users from any of `from` reaches a member of group `g` (conservatively
// true past a visit budget).
bool Reaches(const std::vector<const Instruction*>& from,
             const std::unordered_map<const Instruction*, int>& group_of, int g) {
  std::vector<const Instruction*> stack = from;
  std::unordered_set<const Instruction*> seen(from.begin(), from.end());
  int budget = 20000;
  while (!stack.empty()) {
    const Instruction* i = stack.back();
    stack.pop_back();
    auto it = group_of.find(i);
    if (it != group_of.end() && it->second == g) return true;
    if (--budget < 0) return true;
    for (const Instruction* u : i->users()) {
      if (seen.insert(u).second) stack.push_back(u);
    }
  }
  return false;
}

// Whether a path of users (data or control) from a member of group `ga` or `gb` leaves both and
// comes back to one of them; a member of any other group stands for its whole group, which runs as
// one step. Each instruction visited takes one from `budget`; conservatively true once it is spent.
bool PathLeavesAndReturns(int ga, int gb, const std::vector<Group>& groups,
                          const std::unordered_map<const Instruction*, int>& group_of, int64_t* budget) {
  auto in_pair = [&](const Instruction* i) {
    auto it = group_of.find(i);
    return it != group_of.end() && (it->second == ga || it->second == gb);
  };
  std::vector<const Instruction*> stack;
  std::unordered_set<const Instruction*> seen;
  std::unordered_set<int> expanded;
  auto push_users = [&](const Instruction* i, bool from_pair) {
    for (const std::vector<Instruction*>* next : {&i->users(), &i->control_successors()}) {
      for (const Instruction* u : *next) {
        if (in_pair(u)) {
          if (!from_pair) return true;
          continue;
        }
        if (seen.insert(u).second) stack.push_back(u);
      }
    }
    return false;
  };
  for (int g : {ga, gb}) {
    for (const Instruction* m : groups[g].members) push_users(m, true);
  }
  while (!stack.empty()) {
    const Instruction* i = stack.back();
    stack.pop_back();
    if (--*budget < 0 || push_users(i, false)) return true;
    auto gi = group_of.find(i);
    if (gi != group_of.end() && expanded.insert(gi->second).second) {
      for (const Instruction* m : groups[gi->second].members) {
        if (push_users(m, false)) return true;
      }
    }
  }
  return false;
}

// Joins each group to a group of the same dims it reads a member of, when no path between them
// leaves both (the joined loop would then wait for itself). The grouping above puts a value whose
// users sit in two groups into one of them, and the other reads it back from memory: one threefry
// round of jax.random was a loop writing three arrays and a second loop reading two of them back.
// `keep[g]` turns off for the groups emptied; members stay in reverse post order (`position`).
void MergeProducerGroups(std::vector<Group>& groups, std::vector<char>& keep,
                         std::unordered_map<const Instruction*, int>& group_of,
                         const std::unordered_map<const Instruction*, int>& position) {
  // Bounds planning time on modules of many groups: 2^18 instructions visited in all (about 0.1 s
  // on a 2-core EPYC; a 9,000-instruction chain whose every pair meets through a transpose took
  // 8 s with a budget per pair). Once spent, the groups not yet joined stay apart.
  int64_t budget = int64_t{1} << 18;
  bool merged = true;
  while (merged) {
    merged = false;
    for (int b = 0; b < static_cast<int>(groups.size()); ++b) {
      if (!keep[b]) continue;
      int into = -1;
      std::unordered_set<int> tried;
      for (const Instruction* m : groups[b].members) {
        for (const Instruction* o : m->operands()) {
          auto it = group_of.find(o);
          if (it == group_of.end() || it->second == b || !keep[it->second]) continue;
          const int a = it->second;
          if (groups[a].dims != groups[b].dims || !tried.insert(a).second) continue;
          if (!PathLeavesAndReturns(a, b, groups, group_of, &budget)) {
            into = a;
            break;
          }
          if (budget < 0) return;
        }
        if (into >= 0) break;
      }
      if (into < 0) continue;
      for (const Instruction* m : groups[b].members) {
        group_of[m] = into;
        groups[into].members.push_back(m);
      }
      groups[b].members.clear();
      keep[b] = 0;
      std::sort(groups[into].members.begin(), groups[into].members.end(),
                [&](const Instruction* x, const Instruction* y) { return position.at(x) > position.at(y); });
      merged = true;
    }
  }
}

}  // namespace

namespace {

// One grouping attempt; false (steps untouched) when the groups would depend on each other in a
// cycle. `multi_output`: a value read outside its group may still join it (checked by Reaches,
// which does not see every group-level cycle); without it every group is acyclic by construction.
// `shared_reduce` (with `multi_output`): a reduce also joins the loop of an operand that has other
// users (the loop then writes the operand and reduces it in the same pass, as in softmax's
// max(x) / sum(exp) next to x - max and exp / sum) unless the reduce's result feeds that loop.
bool TryFuse(std::vector<Step>& steps, const std::unordered_map<const Instruction*, int>& slot,
             const Instruction* root, bool multi_output, bool shared_reduce) {
  std::unordered_map<const Instruction*, const Step*> step_of;
  for (const Step& s : steps) step_of[s.inst] = &s;
  std::unordered_map<const Instruction*, int> group_of;
  std::vector<Group> groups;
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    const Instruction* inst = it->inst;
    if (!IsMember(*it)) continue;
    int g = -1;
    bool all_in = inst != root;
    std::vector<const Instruction*> outside;
    for (const Instruction* u : inst->users()) {
      auto gi = group_of.find(u);
      if (gi == group_of.end()) {
        all_in = false;
        outside.push_back(u);
      } else if (g < 0) {
        g = gi->second;
      } else if (gi->second != g) {
        all_in = false;
        outside.push_back(u);
      }
    }
    if (g >= 0 && (all_in || (multi_output && !Reaches(outside, group_of, g)))) {
      groups[g].members.push_back(inst);
    } else {
      g = static_cast<int>(groups.size());
      groups.push_back(Group{{inst}, inst->shape().dims()});
    }
    group_of[inst] = g;
  }
  // Groups of copies alone gain nothing.
  std::vector<char> keep(groups.size(), 0);
  for (size_t g = 0; g < groups.size(); ++g) {
    for (const Instruction* m : groups[g].members) keep[g] |= step_of[m]->scalar_kind != ScalarKind::kShare;
    if (!keep[g]) {
      for (const Instruction* m : groups[g].members) group_of.erase(m);
    }
  }
  if (multi_output) {
    std::unordered_map<const Instruction*, int> position;
    for (size_t i = 0; i < steps.size(); ++i) position[steps[i].inst] = static_cast<int>(i);
    MergeProducerGroups(groups, keep, group_of, position);
  }
  // Reduces join the group of their operand, or get a loop of their own.
  for (const Step& s : steps) {
    if (!FusibleReduce(s)) continue;
    const Instruction* in = s.inst->operand(0);
    auto gi = group_of.find(in);
    if (gi != group_of.end()) {
      Group& g = groups[gi->second];
      bool only_user = !in->IsRoot();
      for (const Instruction* u : in->users()) only_user &= u == s.inst;
      if (g.reduce != nullptr) continue;
      if (!only_user) {
        const std::vector<const Instruction*> after(s.inst->users().begin(), s.inst->users().end());
        if (!multi_output || !shared_reduce || Reaches(after, group_of, gi->second)) continue;
      }
      g.reduce = s.inst;
      group_of[s.inst] = gi->second;
    } else if (in->shape().num_elements() >= kOwnReduceLoopElements) {
      group_of[s.inst] = static_cast<int>(groups.size());
      groups.push_back(Group{{}, in->shape().dims(), s.inst});
      keep.push_back(1);
    }
  }
  if (groups.empty()) return true;
  // Generators whose every user is fused, or a dropped generator that does not read it (the iota
  // under a slice of it, the concatenate under a reshape), are dropped; the groups recompute them.
  // Users come later in post order.
  std::unordered_set<const Instruction*> dropped;
  for (auto s = steps.rbegin(); s != steps.rend(); ++s) {
    if (!IsFusionGenerator(*s->inst) || s->inst == root || s->inst->users().empty()) continue;
    bool all = true;
    for (const Instruction* u : s->inst->users()) {
      if (group_of.count(u)) continue;
      const std::vector<const Instruction*> reads =
          dropped.count(u) ? GeneratorReads(*u) : std::vector<const Instruction*>{};
      all &= dropped.count(u) > 0 && std::find(reads.begin(), reads.end(), s->inst) == reads.end();
    }
    if (all) dropped.insert(s->inst);
  }
  // Fused steps, then a topological order: each node after the nodes of its operands, in the
  // original order otherwise.
  std::vector<Step> fused(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    if (!keep[g]) continue;
    std::reverse(groups[g].members.begin(), groups[g].members.end());
    fused[g] = BuildFusedStep(groups[g], slot, step_of);
  }
  // Node ids: original steps by index, groups as steps.size() + g.
  const int n0 = static_cast<int>(steps.size());
  std::unordered_map<const Instruction*, int> index;
  for (int i = 0; i < n0; ++i) index[steps[i].inst] = i;
  auto node_of = [&](const Instruction* inst) -> int {
    auto gi = group_of.find(inst);
    if (gi != group_of.end()) return n0 + gi->second;
    auto ii = index.find(inst);
    return ii == index.end() ? -1 : ii->second;  // parameters have no step
  };
  auto deps = [&](int node, std::vector<int>& out) {
    out.clear();
    // A dropped generator stands for what it reads (GeneratorReads).
    std::function<void(const Instruction*)> read = [&](const Instruction* o) {
      if (!dropped.count(o)) {
        out.push_back(node_of(o));
        return;
      }
      for (const Instruction* oo : GeneratorReads(*o)) read(oo);
    };
    auto add_operands = [&](const Instruction* inst, bool through_generators) {
      for (const Instruction* o : inst->operands()) {
        if (through_generators) {
          read(o);
        } else {
          out.push_back(node_of(o));
        }
      }
      for (const Instruction* p : inst->control_predecessors()) out.push_back(node_of(p));
    };
    if (node < n0) {
      add_operands(steps[node].inst, false);
    } else {
      for (const Instruction* m : groups[node - n0].members) add_operands(m, true);
      if (groups[node - n0].reduce != nullptr) add_operands(groups[node - n0].reduce, true);
    }
  };
  std::vector<char> state(n0 + groups.size(), 0);  // 0 new, 1 open, 2 done
  std::vector<int> order;
  std::vector<std::pair<int, size_t>> stack;
  std::vector<std::vector<int>> dep_lists(n0 + groups.size());
  for (int start = 0; start < n0; ++start) {
    const int s0 = node_of(steps[start].inst);
    if (dropped.count(steps[start].inst) || state[s0] != 0) continue;
    stack.push_back({s0, 0});
    state[s0] = 1;
    deps(s0, dep_lists[s0]);
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      const std::vector<int>& d = dep_lists[node];
      if (next < d.size()) {
        const int dn = d[next++];
        if (dn < 0 || dn == node || state[dn] == 2) continue;
        if (state[dn] == 1) return false;  // a cycle between groups
        state[dn] = 1;
        deps(dn, dep_lists[dn]);
        stack.push_back({dn, 0});
        continue;
      }
      state[node] = 2;
      order.push_back(node);
      stack.pop_back();
    }
  }
  std::vector<Step> ordered;
  for (int node : order) ordered.push_back(node < n0 ? std::move(steps[node]) : std::move(fused[node - n0]));
  steps = std::move(ordered);
  return true;
}

}  // namespace

std::vector<int> StepOutputSlots(const Step& step) {
  std::vector<int> out = {step.out};
  if (const FusedPayload* f = step.FindPayload<FusedPayload>()) {
    for (const FusedOutput& o : f->loop->outputs) {
      if (o.slot != step.out) out.push_back(o.slot);
    }
  }
  return out;
}

void FuseElementwiseSteps(std::vector<Step>& steps,
                          const std::unordered_map<const Instruction*, int>& slot,
                          const Instruction* root) {
  if (TryFuse(steps, slot, root, /*multi_output=*/true, /*shared_reduce=*/true)) return;
  if (!TryFuse(steps, slot, root, /*multi_output=*/true, /*shared_reduce=*/false)) {
    const bool ok = TryFuse(steps, slot, root, /*multi_output=*/false, /*shared_reduce=*/false);
    XS_CHECK(ok, "single-output fusion groups formed a cycle");
  }
}

}  // namespace xs
