// A small 0-1 integer linear program and its exact solution with CBC (COIN-OR branch and cut,
// Debian's coinor-libcbc-dev): minimize c.x subject to rows lo <= a.x <= hi, x binary or bounded.
#ifndef XSHARD_AUTOSHARD_ILP_H_
#define XSHARD_AUTOSHARD_ILP_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "xshard/base/status.h"

namespace xs::autoshard {

class Ilp {
 public:
  // A new variable with bounds [lo, hi] and objective coefficient `cost`; returns its index.
  int AddVariable(double cost, bool integer, double lo = 0, double hi = 1);
  void SetCost(int var, double cost) { cost_[var] = cost; }
  double Cost(int var) const { return cost_[var]; }
  // A feasible assignment of every variable the solver starts from (a MIP start).
  void SetStart(std::vector<double> x) { start_ = std::move(x); }
  // lo <= sum(coef * x[var]) <= hi.
  void AddRow(std::vector<std::pair<int, double>> terms, double lo, double hi);
  int num_variables() const { return static_cast<int>(cost_.size()); }
  int num_rows() const { return static_cast<int>(rows_.size()); }

  struct Solution {
    std::vector<double> x;
    double objective = 0;
    bool optimal = false;  // false: the time limit stopped the search at the best plan found
    double seconds = 0;
  };
  // Writes the program in MPS format as CBC writes it (gzip-compressed when CBC was built with
  // zlib, as Debian's is): to `path` without its ".mps" / ".mps.gz" ending, plus ".mps" or
  // ".mps.gz". Returns the file written.
  StatusOr<std::string> WriteMps(const std::string& path) const;
  // Solves with CBC, single-threaded (deterministic). Errors: infeasible (no assignment satisfies
  // the rows: the message says so), no solution found within `time_limit_s`.
  StatusOr<Solution> Solve(double time_limit_s) const;

 private:
  // The program as a CBC model (CBC's Cbc_Model is void).
  StatusOr<std::shared_ptr<void>> Build() const;
  struct Row {
    std::vector<std::pair<int, double>> terms;
    double lo, hi;
  };
  std::vector<double> cost_, lo_, hi_;
  std::vector<bool> integer_;
  std::vector<double> start_;
  std::vector<Row> rows_;
};

}  // namespace xs::autoshard

#endif  // XSHARD_AUTOSHARD_ILP_H_
