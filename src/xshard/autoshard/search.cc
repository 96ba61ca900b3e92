// SearchShardings: strategy graph, coarsening, the 0-1 program and its solution.
#include "xshard/autoshard/search.h"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <unordered_map>

#include "xshard/autoshard/ilp.h"
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

// Index of each distinct value of f(i) over i in [0, n), in first-seen order.
template <typename F>
std::vector<int> Classes(int n, F f, std::vector<DimAxes>& distinct) {
  std::vector<int> cls(n);
  for (int i = 0; i < n; ++i) {
    const DimAxes& v = f(i);
    auto it = std::find(distinct.begin(), distinct.end(), v);
    cls[i] = static_cast<int>(it - distinct.begin());
    if (it == distinct.end()) distinct.push_back(v);
  }
  return cls;
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
    if (!inst->shape().IsArray()) continue;
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

  // 3. The program's variables: one 0-1 choice per strategy of a group with a choice.
  Ilp ilp;
  double constant = 0;
  for (Group& g : groups) {
    out.stats.strategies += g.count;
    if (g.count == 1) continue;
    g.first_var = ilp.num_variables();
    std::vector<std::pair<int, double>> one;
    for (int s = 0; s < g.count; ++s) one.push_back({ilp.AddVariable(0, true), 1.0});
    ilp.AddRow(std::move(one), 1, 1);
  }
  out.stats.groups = static_cast<int>(groups.size());
  // Indicator of "group g takes one of `strategies`" as terms (empty + constant for fixed groups).
  auto class_terms = [&](const Group& g, const std::vector<int>& cls, int c) {
    std::vector<std::pair<int, double>> t;
    for (int s = 0; s < g.count; ++s) {
      if (cls[s] == c) t.push_back({g.first_var + s, 1.0});
    }
    return t;
  };

  // 4. Reshard costs on every operand edge.
  int edge_vars = 0;
  for (const Node& vn : nodes) {
    for (int i = 0; i < vn.inst->operand_count(); ++i) {
      auto it = node_of.find(vn.inst->operand(i));
      if (it == node_of.end()) continue;
      const Node& un = nodes[it->second];
      Group& gu = groups[un.group];
      Group& gv = groups[vn.group];
      if (!vn.strategies[vn.map[0]].operand_related[i]) continue;
      const Shape& shape = un.inst->shape();
      if (un.group == vn.group) {
        for (int s = 0; s < gv.count; ++s) {
          gv.cost[s] += ReshardSeconds(shape, un.strategies[un.map[s]].result, vn.strategies[vn.map[s]].operands[i],
                                       mesh, cost);
        }
        continue;
      }
      std::vector<DimAxes> rs, qs;
      const std::vector<int> rc = Classes(gu.count, [&](int s) -> const DimAxes& { return un.strategies[un.map[s]].result; }, rs);
      const std::vector<int> qc = Classes(gv.count, [&](int s) -> const DimAxes& { return vn.strategies[vn.map[s]].operands[i]; }, qs);
      std::vector<std::vector<double>> c(rs.size(), std::vector<double>(qs.size()));
      double lo = 1e300, hi = 0;
      for (size_t r = 0; r < rs.size(); ++r) {
        for (size_t q = 0; q < qs.size(); ++q) {
          c[r][q] = ReshardSeconds(shape, rs[r], qs[q], mesh, cost);
          lo = std::min(lo, c[r][q]);
          hi = std::max(hi, c[r][q]);
        }
      }
      if (hi - lo <= 0) {
        constant += lo;
      } else if (rs.size() == 1) {
        for (int s = 0; s < gv.count; ++s) gv.cost[s] += c[0][qc[s]];
      } else if (qs.size() == 1) {
        for (int s = 0; s < gu.count; ++s) gu.cost[s] += c[rc[s]][0];
      } else {
        // e[r][q] in [0, 1] with marginals X_r (u takes a strategy of class r) and Y_q: with X and Y
        // 0-1 the one e set to 1 is the pair chosen, so sum c e is the edge's cost.
        std::vector<std::vector<int>> e(rs.size(), std::vector<int>(qs.size()));
        for (size_t r = 0; r < rs.size(); ++r) {
          for (size_t q = 0; q < qs.size(); ++q) e[r][q] = ilp.AddVariable(c[r][q], false);
        }
        edge_vars += static_cast<int>(rs.size() * qs.size());
        for (size_t r = 0; r < rs.size(); ++r) {
          std::vector<std::pair<int, double>> t;
          for (size_t q = 0; q < qs.size(); ++q) t.push_back({e[r][q], 1.0});
          for (auto [var, coef] : class_terms(gu, rc, static_cast<int>(r))) t.push_back({var, -coef});
          ilp.AddRow(std::move(t), 0, 0);
        }
        for (size_t q = 0; q < qs.size(); ++q) {
          std::vector<std::pair<int, double>> t;
          for (size_t r = 0; r < rs.size(); ++r) t.push_back({e[r][q], 1.0});
          for (auto [var, coef] : class_terms(gv, qc, static_cast<int>(q))) t.push_back({var, -coef});
          ilp.AddRow(std::move(t), 0, 0);
        }
      }
    }
  }

  // 5. Memory: the values live at the points where the unsplit program holds the most.
  if (options.memory_per_device > 0 && !nodes.empty()) {
    const int end = static_cast<int>(order.size());
    std::vector<int> last(nodes.size());
    for (size_t v = 0; v < nodes.size(); ++v) {
      const Instruction* inst = nodes[v].inst;
      int l = nodes[v].position;
      for (const Instruction* user : inst->users()) {
        auto p = position.find(user);
        if (p != position.end()) l = std::max(l, p->second);
      }
      if (inst->opcode() == Opcode::kParameter || inst->IsRoot()) l = end;
      for (const Instruction* user : inst->users()) {
        if (user->IsRoot()) l = end;
      }
      last[v] = l;
    }
    std::vector<double> full(end + 1, 0);
    for (size_t v = 0; v < nodes.size(); ++v) {
      const int from = nodes[v].inst->opcode() == Opcode::kParameter ? 0 : nodes[v].position;
      for (int p = from; p <= last[v]; ++p) full[p] += static_cast<double>(nodes[v].inst->shape().byte_size());
    }
    std::vector<int> points(end + 1);
    std::iota(points.begin(), points.end(), 0);
    std::stable_sort(points.begin(), points.end(), [&](int a, int b) { return full[a] > full[b]; });
    points.resize(std::min<size_t>(points.size(), 16));
    for (int p : points) {
      std::map<int, double> coef;
      double fixed = 0, least = 0;
      std::map<int, std::vector<double>> per_group;
      for (size_t v = 0; v < nodes.size(); ++v) {
        const int from = nodes[v].inst->opcode() == Opcode::kParameter ? 0 : nodes[v].position;
        if (p < from || p > last[v]) continue;
        const Group& g = groups[nodes[v].group];
        auto& pg = per_group[nodes[v].group];
        pg.resize(g.count, 0);
        for (int s = 0; s < g.count; ++s) {
          pg[s] += static_cast<double>(nodes[v].strategies[nodes[v].map[s]].result_bytes);
        }
      }
      std::vector<std::pair<int, double>> terms;
      for (const auto& [gi, bytes] : per_group) {
        const Group& g = groups[gi];
        least += *std::min_element(bytes.begin(), bytes.end());
        if (g.count == 1) {
          fixed += bytes[0];
          continue;
        }
        for (int s = 0; s < g.count; ++s) terms.push_back({g.first_var + s, bytes[s]});
      }
      const auto budget = static_cast<double>(options.memory_per_device);
      if (least > budget) {
        const std::string where = p < end ? order[p]->name() : "the end of the program";
        return ResourceExhausted("autoshard: no plan fits ", spmd::FormatBytes(options.memory_per_device),
                                 " per device: at ", where, " the live values need at least ",
                                 spmd::FormatBytes(static_cast<int64_t>(least)),
                                 " per device even split as far as the mesh allows; raise --memory-per-device or use "
                                 "a bigger mesh");
      }
      ilp.AddRow(std::move(terms), -1e30, budget - fixed);
    }
  }

  // 6. Objective and solution.
  for (const Group& g : groups) {
    if (g.count == 1) {
      constant += g.cost[0];
      continue;
    }
    for (int s = 0; s < g.count; ++s) ilp.SetCost(g.first_var + s, g.cost[s]);
  }
  out.stats.variables = ilp.num_variables();
  out.stats.rows = ilp.num_rows();
  StatusOr<Ilp::Solution> sol = ilp.Solve(options.time_limit_s);
  if (!sol.ok()) {
    if (sol.status().code() == StatusCode::kInvalidArgument) {
      return ResourceExhausted("autoshard: no plan fits ", spmd::FormatBytes(options.memory_per_device),
                               " per device (the memory rows and the one-choice rows cannot all hold); raise "
                               "--memory-per-device or use a bigger mesh");
    }
    return sol.status();
  }
  out.stats.solve_seconds = sol->seconds;
  out.stats.optimal = sol->optimal;
  out.stats.objective = sol->objective + constant;
  if (!sol->optimal) {
    out.notes.push_back(StrCat("the solver stopped at --time-limit ", options.time_limit_s,
                               " s with the best plan found, not a proven optimum"));
  }
  (void)edge_vars;
  for (const Node& n : nodes) {
    const Group& g = groups[n.group];
    int s = 0;
    if (g.count > 1) {
      for (int k = 1; k < g.count; ++k) {
        if (sol->x[g.first_var + k] > sol->x[g.first_var + s]) s = k;
      }
    }
    out.chosen[n.inst] = n.strategies[n.map[s]].result;
  }
  out.stats.total_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace xs::autoshard
