// Ilp: builds the column-major matrix CBC's C interface takes and solves it single-threaded.
#include "xshard/autoshard/ilp.h"

#include <Cbc_C_Interface.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

namespace xs::autoshard {

int Ilp::AddVariable(double cost, bool integer, double lo, double hi) {
  cost_.push_back(cost);
  integer_.push_back(integer);
  lo_.push_back(lo);
  hi_.push_back(hi);
  return static_cast<int>(cost_.size()) - 1;
}

void Ilp::AddRow(std::vector<std::pair<int, double>> terms, double lo, double hi) {
  rows_.push_back(Row{std::move(terms), lo, hi});
}

StatusOr<std::shared_ptr<void>> Ilp::Build() const {
  const int n = num_variables();
  const int m = num_rows();
  // Column-major copy of the rows.
  std::vector<std::vector<std::pair<int, double>>> cols(n);
  for (int r = 0; r < m; ++r) {
    for (const auto& [var, coef] : rows_[r].terms) {
      if (var < 0 || var >= n) return Internal("Ilp: row ", r, " names variable ", var, " of ", n);
      cols[var].push_back({r, coef});
    }
  }
  std::vector<CoinBigIndex> start(n + 1, 0);
  std::vector<int> index;
  std::vector<double> value;
  for (int c = 0; c < n; ++c) {
    start[c] = static_cast<CoinBigIndex>(index.size());
    for (const auto& [row, coef] : cols[c]) {
      index.push_back(row);
      value.push_back(coef);
    }
  }
  start[n] = static_cast<CoinBigIndex>(index.size());
  std::vector<double> row_lo(m), row_hi(m);
  for (int r = 0; r < m; ++r) {
    row_lo[r] = rows_[r].lo;
    row_hi[r] = rows_[r].hi;
  }
  std::shared_ptr<void> model(Cbc_newModel(), Cbc_deleteModel);
  Cbc_loadProblem(model.get(), n, m, start.data(), index.data(), value.data(), lo_.data(), hi_.data(),
                  cost_.data(), row_lo.data(), row_hi.data());
  for (int c = 0; c < n; ++c) {
    if (integer_[c]) Cbc_setInteger(model.get(), c);
  }
  Cbc_setObjSense(model.get(), 1);
  return model;
}

StatusOr<std::string> Ilp::WriteMps(const std::string& path) const {
  XS_ASSIGN_OR_RETURN(std::shared_ptr<void> model, Build());
  std::string base = path;
  for (const char* ending : {".gz", ".mps"}) {
    const size_t len = std::char_traits<char>::length(ending);
    if (base.size() > len && base.compare(base.size() - len, len, ending) == 0) base.resize(base.size() - len);
  }
  std::remove((base + ".mps").c_str());
  std::remove((base + ".mps.gz").c_str());
  try {
    Cbc_writeMps(model.get(), base.c_str());  // CBC appends ".mps" (and ".gz")
  } catch (...) {  // CBC reports a file it cannot open by throwing CoinError
  }
  for (const std::string& f : {base + ".mps.gz", base + ".mps"}) {
    if (std::ifstream(f).good()) return f;
  }
  return Unavailable("cannot write the program to '", base, ".mps': check the directory exists and is writable");
}

StatusOr<Ilp::Solution> Ilp::Solve(double time_limit_s) const {
  const int n = num_variables();
  if (n == 0) return Solution{{}, 0, true, 0};
  XS_ASSIGN_OR_RETURN(std::shared_ptr<void> model, Build());
  if (static_cast<int>(start_.size()) == n) {
    std::vector<int> idx(n);
    for (int c = 0; c < n; ++c) idx[c] = c;
    Cbc_setMIPStartI(model.get(), n, idx.data(), start_.data());
  }
  Cbc_setLogLevel(model.get(), 0);
  Cbc_setParameter(model.get(), "threads", "1");
  Cbc_setMaximumSeconds(model.get(), time_limit_s);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    Cbc_solve(model.get());
  } catch (...) {  // CoinError: a bug or an exhausted resource inside the solver
    return Internal("the ILP solver (CBC) failed; rerun with --max-ilp-variables 0 to use the local search alone");
  }
  Solution sol;
  sol.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (Cbc_isProvenInfeasible(model.get())) {
    return InvalidArgument("no assignment satisfies the constraints (the ILP is infeasible)");
  }
  const double* x = Cbc_getColSolution(model.get());
  if (x == nullptr) return Internal("the ILP solver returned no solution");
  sol.optimal = Cbc_isProvenOptimal(model.get()) != 0;
  if (!sol.optimal && Cbc_bestSolution(model.get()) == nullptr) {
    return DeadlineExceeded("the ILP solver found no plan within ", time_limit_s, " s; raise --time-limit");
  }
  sol.x.assign(x, x + n);
  sol.objective = Cbc_getObjValue(model.get());
  return sol;
}

}  // namespace xs::autoshard
