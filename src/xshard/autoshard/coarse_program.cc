// SolveCoarse: best-response local search from several starts, then the exact 0-1 program (CBC)
// started from its plan.
#include "xshard/autoshard/coarse_program.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <utility>

#include "xshard/autoshard/ilp.h"
#include "xshard/base/strings.h"

namespace xs::autoshard {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Seconds charged per byte over a memory budget during local search: any plan that fits beats
// any plan that does not.
constexpr double kOverBudgetPerByte = 1e-3;

// Seconds of `choice` and the bytes by which it exceeds the memory rows (each budget taken with a
// relative `slack`).
std::pair<double, double> CostAndExcess(const CoarseProgram& p, const std::vector<int>& choice, double slack) {
  double total = p.constant, excess = 0;
  for (int c = 0; c < p.num_classes(); ++c) total += p.cost[c][choice[c]];
  for (const auto& e : p.edges) total += e.c[choice[e.u]][choice[e.v]];
  for (const auto& row : p.memory) {
    double used = 0;
    for (const auto& [c, bytes] : row.bytes) used += bytes[choice[c]];
    excess += std::max(0.0, used - row.budget * (1 + slack));
  }
  return {total, excess};
}

double Penalized(const CoarseProgram& p, const std::vector<int>& choice) {
  const auto [total, excess] = CostAndExcess(p, choice, 0);
  return total + excess * kOverBudgetPerByte;
}

// Best-response sweeps until no class improves (or 100 sweeps).
void LocalSearch(const CoarseProgram& p, const std::vector<std::vector<int>>& adjacent, std::vector<int>& choice) {
  const int n = p.num_classes();
  std::vector<double> used(p.memory.size(), 0);
  std::vector<std::vector<std::pair<int, const std::vector<double>*>>> rows_of(n);
  for (size_t r = 0; r < p.memory.size(); ++r) {
    for (const auto& [c, bytes] : p.memory[r].bytes) {
      used[r] += bytes[choice[c]];
      rows_of[c].push_back({static_cast<int>(r), &bytes});
    }
  }
  for (int sweep = 0; sweep < 100; ++sweep) {
    bool changed = false;
    for (int c = 0; c < n; ++c) {
      const int k = static_cast<int>(p.cost[c].size());
      if (k == 1) continue;
      int best = choice[c];
      double best_cost = kInf;
      for (int s = 0; s < k; ++s) {
        double t = p.cost[c][s];
        for (int ei : adjacent[c]) {
          const auto& e = p.edges[ei];
          t += e.u == c ? e.c[s][choice[e.v]] : e.c[choice[e.u]][s];
        }
        for (const auto& [r, bytes] : rows_of[c]) {
          const double after = used[r] - (*bytes)[choice[c]] + (*bytes)[s];
          if (after > p.memory[r].budget) t += (after - p.memory[r].budget) * kOverBudgetPerByte;
        }
        if (t < best_cost - 1e-15) {
          best_cost = t;
          best = s;
        }
      }
      if (best != choice[c]) {
        for (const auto& [r, bytes] : rows_of[c]) used[r] += (*bytes)[best] - (*bytes)[choice[c]];
        choice[c] = best;
        changed = true;
      }
    }
    if (!changed) break;
  }
}

}  // namespace

double Evaluate(const CoarseProgram& p, const std::vector<int>& choice) {
  const auto [total, excess] = CostAndExcess(p, choice, 1e-9);
  return excess > 0 ? kInf : total;
}

StatusOr<CoarseSolution> SolveCoarse(const CoarseProgram& p, double time_limit_s, int max_ilp_variables,
                                     const std::string& write_mps) {
  const auto t0 = std::chrono::steady_clock::now();
  const int n = p.num_classes();
  std::vector<std::vector<int>> adjacent(n);
  for (size_t i = 0; i < p.edges.size(); ++i) {
    adjacent[p.edges[i].u].push_back(static_cast<int>(i));
    adjacent[p.edges[i].v].push_back(static_cast<int>(i));
  }
  // Starts: each class's own cheapest choice; every class's first choice (replicated where
  // allowed); and choices from a fixed pseudo-random sequence (deterministic).
  std::vector<std::vector<int>> starts;
  std::vector<int> own(n), first(n, 0);
  for (int c = 0; c < n; ++c) {
    own[c] = static_cast<int>(std::min_element(p.cost[c].begin(), p.cost[c].end()) - p.cost[c].begin());
  }
  starts.push_back(own);
  starts.push_back(first);
  uint64_t state = 0x9E3779B97F4A7C15ull;
  for (int r = 0; r < 4; ++r) {
    std::vector<int> s(n);
    for (int c = 0; c < n; ++c) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      s[c] = static_cast<int>((state >> 33) % p.cost[c].size());
    }
    starts.push_back(std::move(s));
  }
  CoarseSolution best;
  double best_value = kInf;
  std::vector<std::pair<double, std::vector<int>>> optima;
  for (auto& s : starts) {
    LocalSearch(p, adjacent, s);
    const double v = Penalized(p, s);
    if (std::isfinite(Evaluate(p, s))) optima.push_back({v, s});
    if (v < best_value) {
      best_value = v;
      best.choice = s;
    }
  }
  best.objective = Evaluate(p, best.choice);
  best.method = "local search";
  const bool local_fits = std::isfinite(best.objective);

  // The exact program.
  Ilp ilp;
  std::vector<int> first_var(n, -1);
  for (int c = 0; c < n; ++c) {
    const int k = static_cast<int>(p.cost[c].size());
    if (k == 1) continue;
    first_var[c] = ilp.num_variables();
    std::vector<std::pair<int, double>> one;
    for (int s = 0; s < k; ++s) one.push_back({ilp.AddVariable(p.cost[c][s], true), 1.0});
    ilp.AddRow(std::move(one), 1, 1);
  }
  // Costs of classes with one choice are the same in every plan: they stay out of the program
  // (the objective is recomputed with Evaluate).
  std::vector<double> start;
  for (int c = 0; c < n; ++c) {
    for (size_t s = 0; first_var[c] >= 0 && s < p.cost[c].size(); ++s) {
      start.push_back(static_cast<int>(s) == best.choice[c] ? 1.0 : 0.0);
    }
  }
  auto var_terms = [&](int c, const std::vector<int>& cls, int k, double sign) {
    std::vector<std::pair<int, double>> t;
    for (size_t s = 0; s < cls.size(); ++s) {
      if (cls[s] == k) t.push_back({first_var[c] + static_cast<int>(s), sign});
    }
    return t;
  };
  for (const auto& e : p.edges) {
    // Choices of u with equal rows (of v: equal columns) are one class for this edge.
    const size_t ku = e.c.size(), kv = e.c[0].size();
    std::vector<int> rc(ku), qc(kv);
    std::vector<size_t> rep_r, rep_q;
    for (size_t s = 0; s < ku; ++s) {
      size_t k = 0;
      while (k < rep_r.size() && e.c[rep_r[k]] != e.c[s]) ++k;
      if (k == rep_r.size()) rep_r.push_back(s);
      rc[s] = static_cast<int>(k);
    }
    for (size_t s = 0; s < kv; ++s) {
      size_t k = 0;
      auto same = [&](size_t a, size_t b) {
        for (size_t r = 0; r < ku; ++r) {
          if (e.c[r][a] != e.c[r][b]) return false;
        }
        return true;
      };
      while (k < rep_q.size() && !same(rep_q[k], s)) ++k;
      if (k == rep_q.size()) rep_q.push_back(s);
      qc[s] = static_cast<int>(k);
    }
    if (rep_r.size() == 1 || rep_q.size() == 1) {
      // The cost depends on one side only: it folds into that side's choice costs.
      const bool on_v = rep_r.size() == 1;
      const int c = on_v ? e.v : e.u;
      const size_t k = on_v ? kv : ku;
      for (size_t s = 0; s < k; ++s) {
        const double v = on_v ? e.c[0][s] : e.c[s][0];
        if (first_var[c] >= 0) {
          ilp.SetCost(first_var[c] + static_cast<int>(s), ilp.Cost(first_var[c] + static_cast<int>(s)) + v);
        }
      }
      continue;
    }
    std::vector<std::vector<int>> ev(rep_r.size(), std::vector<int>(rep_q.size()));
    for (size_t r = 0; r < rep_r.size(); ++r) {
      for (size_t q = 0; q < rep_q.size(); ++q) {
        ev[r][q] = ilp.AddVariable(e.c[rep_r[r]][rep_q[q]], false);
        start.push_back(rc[best.choice[e.u]] == static_cast<int>(r) && qc[best.choice[e.v]] == static_cast<int>(q));
      }
    }
    for (size_t r = 0; r < rep_r.size(); ++r) {
      std::vector<std::pair<int, double>> t = var_terms(e.u, rc, static_cast<int>(r), -1.0);
      for (size_t q = 0; q < rep_q.size(); ++q) t.push_back({ev[r][q], 1.0});
      ilp.AddRow(std::move(t), 0, 0);
    }
    for (size_t q = 0; q < rep_q.size(); ++q) {
      std::vector<std::pair<int, double>> t = var_terms(e.v, qc, static_cast<int>(q), -1.0);
      for (size_t r = 0; r < rep_r.size(); ++r) t.push_back({ev[r][q], 1.0});
      ilp.AddRow(std::move(t), 0, 0);
    }
  }
  for (const auto& row : p.memory) {
    std::vector<std::pair<int, double>> t;
    double fixed = 0;
    for (const auto& [c, bytes] : row.bytes) {
      if (first_var[c] < 0) {
        fixed += bytes[0];
        continue;
      }
      for (size_t s = 0; s < bytes.size(); ++s) t.push_back({first_var[c] + static_cast<int>(s), bytes[s]});
    }
    ilp.AddRow(std::move(t), -1e30, row.budget - fixed);
  }
  if (!write_mps.empty()) {
    XS_ASSIGN_OR_RETURN(std::string written, ilp.WriteMps(write_mps));
    best.notes.push_back(StrCat("the exact program (", ilp.num_variables(), " variables) is in ", written));
  }
  best.variables = ilp.num_variables();
  best.rows = ilp.num_rows();
  if (ilp.num_variables() > max_ilp_variables) {
    best.notes.push_back(StrCat("the exact program has ", ilp.num_variables(), " variables (more than ",
                                max_ilp_variables, "): the local search's plan is used, not a proven optimum"));
  } else {
    const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (local_fits) ilp.SetStart(start);
    StatusOr<Ilp::Solution> sol = ilp.Solve(std::max(0.1, time_limit_s - spent));
    if (sol.ok()) {
      std::vector<int> choice(n, 0);
      for (int c = 0; c < n; ++c) {
        if (first_var[c] < 0) continue;
        for (size_t s = 1; s < p.cost[c].size(); ++s) {
          if (sol->x[first_var[c] + s] > sol->x[first_var[c] + choice[c]]) choice[c] = static_cast<int>(s);
        }
      }
      const double v = Evaluate(p, choice);
      if (v <= best.objective) {
        best.choice = std::move(choice);
        best.objective = v;
        best.method = "ILP (CBC)";
        best.optimal = sol->optimal;
      }
    } else if (!local_fits) {
      if (sol.status().code() == StatusCode::kInvalidArgument) {
        return ResourceExhausted("no plan fits the memory budget (the memory rows cannot all hold)");
      }
      return sol.status();
    } else {
      best.notes.push_back(StrCat("the ILP solver gave no plan (", sol.status().message(),
                                  "): the local search's plan is used"));
    }
  }
  if (!std::isfinite(best.objective)) {
    return ResourceExhausted("no plan fits the memory budget (the best found still exceeds it)");
  }
  std::stable_sort(optima.begin(), optima.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [v, s] : optima) {
    if (s == best.choice || best.alternatives.size() >= 4) continue;
    if (std::find(best.alternatives.begin(), best.alternatives.end(), s) != best.alternatives.end()) continue;
    best.alternatives.push_back(std::move(s));
  }
  best.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return best;
}

}  // namespace xs::autoshard
