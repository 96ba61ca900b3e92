// SearchShardings: strategy graph, coarsening, the 0-1 program and its solution.
#include "xshard/autoshard/search.h"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <unordered_map>

#include "xshard/autoshard/coarse_program.h"
#include "xshard/base/strings.h"
#include "xshard/ir/opcode.h"
#include "xshard/rules/rule_registry.h"
#include "xshard/spmd/report.h"

namespace xs::autoshard {
namespace {

struct Node {
  const Instruction* inst = nullptr;
  std::vector<Strategy> strategies;
  int group = -1;
  std::vector<int> map;  // group strategy -> own strategy
  int position = 0;
};

struct Group {
  std::vector<int> members;
  int count = 0;              // strategies of the group (its leader's)
  std::vector<double> cost;   // per strategy
  int first_var = -1;         // x variables, when count > 1
};

Strategy ReplicatedStrategy(const Instruction& inst, const CostFunctions& cost) {
  Strategy s;
  s.result = Replicated(inst.shape().rank());
  s.result_bytes = inst.shape().byte_size();
  s.operands.resize(inst.operand_count());
  s.operand_related.assign(inst.operand_count(), false);
  for (int i = 0; i < inst.operand_count(); ++i) {
    if (!inst.operand(i)->shape().IsArray()) continue;
    s.operands[i] = Replicated(inst.operand(i)->shape().rank());
    s.operand_related[i] = true;
  }
  s.seconds = ComputeSeconds(inst, 1, cost);
  return s;
}

// Values an elementwise op prefers to follow: not a broadcast / constant / iota (cheap to make in
// any split), then in operand order.
bool WeakLeader(const Instruction& inst) {
  const Opcode op = inst.opcode();
  return op == Opcode::kBroadcast || op == Opcode::kConstant || op == Opcode::kIota;
}

// A 64-bit mix (splitmix64's finalizer).
uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  h ^= h >> 33;
  h *= 0xFF51AFD7ED558CCDull;
  h ^= h >> 33;
  return h;
}

uint64_t ShapeHash(const Shape& s) {
  uint64_t h = Mix(0, static_cast<uint64_t>(s.dtype()));
  for (int64_t d : s.dims()) h = Mix(h, static_cast<uint64_t>(d));
  return h;
}

// Class of each group: groups tie when their members look alike (opcode, shape, operands' opcodes
// and shapes) within the same surroundings (the 6 nodes either side in program order) and their
// choices split alike, as the layers of an unrolled model do. Classes are numbered in first-seen
// order (deterministic).
std::vector<int> TieRepeatedGroups(const std::vector<Node>& nodes, const std::vector<Group>& groups) {
  constexpr int kRadius = 6;
  const int n = static_cast<int>(nodes.size());
  std::vector<uint64_t> token(n), context(n);
  for (int v = 0; v < n; ++v) {
    const Instruction& inst = *nodes[v].inst;
    uint64_t h = Mix(ShapeHash(inst.shape()), static_cast<uint64_t>(inst.opcode()));
    for (const Instruction* o : inst.operands()) {
      h = Mix(Mix(h, static_cast<uint64_t>(o->opcode())), o->shape().IsArray() ? ShapeHash(o->shape()) : 7);
    }
    token[v] = h;
  }
  for (int v = 0; v < n; ++v) {
    uint64_t h = 0;
    for (int d = -kRadius; d <= kRadius; ++d) h = Mix(h, v + d >= 0 && v + d < n ? token[v + d] : 1);
    context[v] = h;
  }
  std::vector<int> cls(groups.size(), -1);
  std::map<uint64_t, std::vector<int>> by_key;  // key -> the first group of each class with it
  int next = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    uint64_t key = static_cast<uint64_t>(groups[g].count);
    for (int m : groups[g].members) key = Mix(key, context[m]);
    auto& reps = by_key[key];
    for (int r : reps) {
      const Node& a = nodes[groups[r].members[0]];
      const Node& b = nodes[groups[g].members[0]];
      bool same = groups[r].members.size() == groups[g].members.size() && a.strategies.size() == b.strategies.size();
      for (size_t s = 0; same && s < a.strategies.size(); ++s) same = a.strategies[s].result == b.strategies[s].result;
      if (same) {
        cls[g] = cls[r];
        break;
      }
    }
    if (cls[g] < 0) {
      cls[g] = next++;
      reps.push_back(static_cast<int>(g));
    }
  }
  return cls;
}

// Rows "the values live at a point fit the budget" at the 16 points where the unsplit program holds
// the most (parameters live throughout, a value until its last use, outputs to the end).
Status AddMemoryRows(const std::vector<Node>& nodes, const std::vector<Group>& groups, const std::vector<int>& class_of,
                     const std::vector<Instruction*>& order,
                     const std::unordered_map<const Instruction*, int>& position, int64_t budget,
                     CoarseProgram& program) {
  const int end = static_cast<int>(order.size());
  std::vector<int> first(nodes.size()), last(nodes.size());
  for (size_t v = 0; v < nodes.size(); ++v) {
    const Instruction* inst = nodes[v].inst;
    const bool param = inst->opcode() == Opcode::kParameter;
    first[v] = param ? 0 : nodes[v].position;
    int l = nodes[v].position;
    for (const Instruction* user : inst->users()) {
      auto p = position.find(user);
      if (p != position.end()) l = std::max(l, p->second);
      if (user->IsRoot()) l = end;
    }
    if (param || inst->IsRoot()) l = end;
    last[v] = l;
  }
  std::vector<double> full(end + 1, 0);
  for (size_t v = 0; v < nodes.size(); ++v) {
    for (int p = first[v]; p <= last[v]; ++p) full[p] += static_cast<double>(nodes[v].inst->shape().byte_size());
  }
  std::vector<int> points(end + 1);
  std::iota(points.begin(), points.end(), 0);
  std::stable_sort(points.begin(), points.end(), [&](int a, int b) { return full[a] > full[b]; });
  // erase, not resize: GCC 12 sees resize's growth path (which cannot run) and warns.
  if (points.size() > 16) points.erase(points.begin() + 16, points.end());
  for (int p : points) {
    CoarseProgram::MemoryRow row;
    row.budget = static_cast<double>(budget);
    for (size_t v = 0; v < nodes.size(); ++v) {
      if (p < first[v] || p > last[v]) continue;
      const Group& g = groups[nodes[v].group];
      auto& bytes = row.bytes[class_of[nodes[v].group]];
      bytes.resize(g.count, 0);
      for (int s = 0; s < g.count; ++s) {
        bytes[s] += static_cast<double>(nodes[v].strategies[nodes[v].map[s]].result_bytes);
      }
    }
    double least = 0;
    for (const auto& [c, bytes] : row.bytes) least += *std::min_element(bytes.begin(), bytes.end());
    if (least > row.budget) {
      const std::string where = p < end ? order[p]->name() : "the end of the program";
      return ResourceExhausted("autoshard: no plan fits ", spmd::FormatBytes(budget), " per device: at ", where,
                               " the live values need at least ", spmd::FormatBytes(static_cast<int64_t>(least)),
                               " per device even split as far as the mesh allows; raise --memory-per-device or use "
                               "a bigger mesh");
    }
    program.memory.push_back(std::move(row));
  }
  return OkStatus();
}

}  // namespace

StatusOr<SearchOutcome> SearchShardings(const Computation& entry, const AutoshardOptions& options,
                                        const StrategyFilter& allowed) {
  const auto t0 = std::chrono::steady_clock::now();
  const Mesh& mesh = options.mesh;
  const CostFunctions& cost = options.cost;
  SearchOutcome out;
  std::vector<Node> nodes;
  std::unordered_map<const Instruction*, int> node_of;
  const std::vector<Instruction*> order = entry.MakeInstructionPostOrder();
  std::unordered_map<const Instruction*, int> position;
  for (size_t p = 0; p < order.size(); ++p) position[order[p]] = static_cast<int>(p);

  // 1. Strategies of every array instruction.
  for (Instruction* inst : order) {
    // Async pairs (start / update / done) stay unannotated: a reshard between them would break the
    // pair; propagation gives them their operands' splits.
    if (!inst->shape().IsArray() || IsAsync(inst->opcode())) continue;
    Node n;
    n.inst = inst;
    n.position = position[inst];
    StatusOr<OpShardingRule> rule = GetRule(*inst);
    if (rule.ok() && !rule->barrier) {
      n.strategies = EnumerateStrategies(*inst, *rule, mesh, cost, options.enumerate);
    }
    if (n.strategies.empty()) n.strategies.push_back(ReplicatedStrategy(*inst, cost));
    std::vector<Strategy> kept;
    for (Strategy& s : n.strategies) {
      if (allowed(*inst, s)) kept.push_back(std::move(s));
    }
    if (kept.empty()) {
      return InvalidArgument("autoshard: no split of ", inst->name(), " (", inst->shape().ToString(false),
                             ") satisfies the kept annotation and the forbidden axes; drop --keep-annotations or a "
                             "--forbid for it");
    }
    n.strategies = std::move(kept);
    node_of[inst] = static_cast<int>(nodes.size());
    nodes.push_back(std::move(n));
  }
  out.stats.instructions = static_cast<int>(nodes.size());

  // 2. Groups: an elementwise op follows an operand of its shape when every choice of the
  // operand's group maps to one of its own strategies.
  std::vector<Group> groups;
  for (int v = 0; v < static_cast<int>(nodes.size()); ++v) {
    Node& n = nodes[v];
    if (IsElementwise(n.inst->opcode())) {
      std::vector<int> candidates;
      for (int pass = 0; pass < 2; ++pass) {
        for (const Instruction* o : n.inst->operands()) {
          auto it = node_of.find(o);
          if (it == node_of.end() || o->shape().dims() != n.inst->shape().dims()) continue;
          if ((pass == 0) == WeakLeader(*o)) continue;
          if (std::find(candidates.begin(), candidates.end(), it->second) == candidates.end()) {
            candidates.push_back(it->second);
          }
        }
      }
      for (int u : candidates) {
        const Node& un = nodes[u];
        const Group& g = groups[un.group];
        std::vector<int> map(g.count);
        bool ok = true;
        for (int s = 0; s < g.count && ok; ++s) {
          map[s] = FindUniformStrategy(n.strategies, un.strategies[un.map[s]].result);
          ok = map[s] >= 0;
        }
        if (!ok) continue;
        n.group = un.group;
        n.map = std::move(map);
        groups[n.group].members.push_back(v);
        break;
      }
    }
    if (n.group < 0) {
      n.group = static_cast<int>(groups.size());
      n.map.resize(n.strategies.size());
      std::iota(n.map.begin(), n.map.end(), 0);
      Group g;
      g.members.push_back(v);
      g.count = static_cast<int>(n.strategies.size());
      groups.push_back(std::move(g));
    }
  }
  for (Group& g : groups) {
    g.cost.assign(g.count, 0);
    for (int m : g.members) {
      for (int s = 0; s < g.count; ++s) g.cost[s] += nodes[m].strategies[nodes[m].map[s]].seconds;
    }
  }
  // Groups with very many choices (3-D meshes) keep the cheapest ones by their own cost (compute and
  // partial sums), and the first (replicated where allowed): the program stays small enough to solve.
  const int keep = options.max_strategies_per_group;
  for (Group& g : groups) {
    if (keep > 0 && g.count > keep) {
      std::vector<int> idx(g.count);
      std::iota(idx.begin(), idx.end(), 0);
      std::stable_sort(idx.begin() + 1, idx.end(), [&](int a, int b) { return g.cost[a] < g.cost[b]; });
      idx.resize(keep);
      std::sort(idx.begin(), idx.end());
      std::vector<double> cost_kept;
      for (int i : idx) cost_kept.push_back(g.cost[i]);
      for (int m : g.members) {
        std::vector<int> map;
        for (int i : idx) map.push_back(nodes[m].map[i]);
        nodes[m].map = std::move(map);
      }
      g.cost = std::move(cost_kept);
      g.count = keep;
      ++out.stats.pruned_groups;
    }
    out.stats.strategies += g.count;
  }
  out.stats.groups = static_cast<int>(groups.size());

  // 3. Reshard costs on every operand edge: inside a group onto its costs, between groups as a
  // matrix over their choices.
  struct GroupEdge {
    int u, v;
    std::vector<std::vector<double>> c;
  };
  std::vector<GroupEdge> group_edges;
  for (const Node& vn : nodes) {
    for (int i = 0; i < vn.inst->operand_count(); ++i) {
      auto it = node_of.find(vn.inst->operand(i));
      if (it == node_of.end() || !vn.strategies[vn.map[0]].operand_related[i]) continue;
      const Node& un = nodes[it->second];
      const Group& gu = groups[un.group];
      Group& gv = groups[vn.group];
      const Shape& shape = un.inst->shape();
      if (un.group == vn.group) {
        for (int s = 0; s < gv.count; ++s) {
          gv.cost[s] += ReshardSeconds(shape, un.strategies[un.map[s]].result, vn.strategies[vn.map[s]].operands[i],
                                       mesh, cost);
        }
        continue;
      }
      // Price each distinct (result, requirement) pair once.
      std::vector<DimAxes> rs, qs;
      auto id = [](std::vector<DimAxes>& distinct, const DimAxes& a) {
        auto it = std::find(distinct.begin(), distinct.end(), a);
        if (it != distinct.end()) return static_cast<int>(it - distinct.begin());
        distinct.push_back(a);
        return static_cast<int>(distinct.size()) - 1;
      };
      std::vector<int> rid(gu.count), qid(gv.count);
      for (int su = 0; su < gu.count; ++su) rid[su] = id(rs, un.strategies[un.map[su]].result);
      for (int sv = 0; sv < gv.count; ++sv) qid[sv] = id(qs, vn.strategies[vn.map[sv]].operands[i]);
      std::vector<std::vector<double>> price(rs.size(), std::vector<double>(qs.size()));
      for (size_t r = 0; r < rs.size(); ++r) {
        for (size_t q = 0; q < qs.size(); ++q) price[r][q] = ReshardSeconds(shape, rs[r], qs[q], mesh, cost);
      }
      GroupEdge e{un.group, vn.group, std::vector<std::vector<double>>(gu.count, std::vector<double>(gv.count))};
      for (int su = 0; su < gu.count; ++su) {
        for (int sv = 0; sv < gv.count; ++sv) e.c[su][sv] = price[rid[su]][qid[sv]];
      }
      group_edges.push_back(std::move(e));
    }
  }

  // 4. Repeated layers share a choice: groups whose instructions look alike in alike surroundings.
  const std::vector<int> class_of = TieRepeatedGroups(nodes, groups);
  CoarseProgram program;
  const int num_classes = class_of.empty() ? 0 : *std::max_element(class_of.begin(), class_of.end()) + 1;
  program.cost.resize(num_classes);
  for (size_t g = 0; g < groups.size(); ++g) {
    auto& c = program.cost[class_of[g]];
    if (c.empty()) c.assign(groups[g].count, 0);
    for (int s = 0; s < groups[g].count; ++s) c[s] += groups[g].cost[s];
  }
  std::map<std::pair<int, int>, size_t> edge_index;
  for (GroupEdge& e : group_edges) {
    const int cu = class_of[e.u], cv = class_of[e.v];
    if (cu == cv) {
      for (int s = 0; s < groups[e.u].count; ++s) program.cost[cu][s] += e.c[s][s];
      continue;
    }
    auto [it, fresh] = edge_index.try_emplace({cu, cv}, program.edges.size());
    if (fresh) {
      program.edges.push_back(CoarseProgram::Edge{cu, cv, std::move(e.c)});
      continue;
    }
    auto& acc = program.edges[it->second].c;
    for (size_t a = 0; a < acc.size(); ++a) {
      for (size_t b = 0; b < acc[a].size(); ++b) acc[a][b] += e.c[a][b];
    }
  }
  out.stats.classes = num_classes;

  // 5. Memory: the values live at the points where the unsplit program holds the most.
  if (options.memory_per_device > 0 && !nodes.empty()) {
    XS_RETURN_IF_ERROR(AddMemoryRows(nodes, groups, class_of, order, position, options.memory_per_device, program));
  }

  // 6. Solve.
  StatusOr<CoarseSolution> sol = SolveCoarse(program, options.time_limit_s, options.max_ilp_variables, options.write_mps);
  if (!sol.ok()) {
    if (sol.status().code() == StatusCode::kResourceExhausted) {
      return ResourceExhausted("autoshard: no plan fits ", spmd::FormatBytes(options.memory_per_device),
                               " per device: ", sol.status().message(), "; raise --memory-per-device or use a bigger mesh");
    }
    return sol.status();
  }
  out.stats.variables = sol->variables;
  out.stats.rows = sol->rows;
  out.stats.solve_seconds = sol->seconds;
  out.stats.optimal = sol->optimal;
  out.stats.objective = sol->objective;
  out.stats.method = sol->method;
  out.notes = sol->notes;
  if (sol->method != "local search" && !sol->optimal) {
    out.notes.push_back(StrCat("the solver stopped at --time-limit ", options.time_limit_s,
                               " s with the best plan found, not a proven optimum"));
  }
  for (const Node& n : nodes) {
    out.chosen[n.inst] = n.strategies[n.map[sol->choice[class_of[n.group]]]].result;
  }
  for (const std::vector<int>& alt : sol->alternatives) {
    auto& m = out.alternatives.emplace_back();
    for (const Node& n : nodes) m[n.inst] = n.strategies[n.map[alt[class_of[n.group]]]].result;
    out.alternative_estimates.push_back(Evaluate(program, alt));
  }
  out.stats.total_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace xs::autoshard
