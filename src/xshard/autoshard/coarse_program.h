// The search's program after coarsening: classes (groups of instructions that take one choice
// together), a cost per choice, pairwise costs on edges between classes and memory rows; and its
// solution, exact with CBC where the program is small enough, else by local search.
#ifndef XSHARD_AUTOSHARD_COARSE_PROGRAM_H_
#define XSHARD_AUTOSHARD_COARSE_PROGRAM_H_

#include <map>
#include <string>
#include <vector>

#include "xshard/base/status.h"

namespace xs::autoshard {

struct CoarseProgram {
  std::vector<std::vector<double>> cost;  // per class, per choice (seconds)
  struct Edge {
    int u = 0, v = 0;                     // classes, u != v
    std::vector<std::vector<double>> c;   // c[choice of u][choice of v]
  };
  std::vector<Edge> edges;
  struct MemoryRow {
    std::map<int, std::vector<double>> bytes;  // class -> bytes per choice
    double budget = 0;
  };
  std::vector<MemoryRow> memory;
  double constant = 0;
  int num_classes() const { return static_cast<int>(cost.size()); }
};

struct CoarseSolution {
  std::vector<int> choice;  // per class
  double objective = 0;     // including the constant
  bool optimal = false;
  std::string method;       // "ILP (CBC)", "local search", ...
  double seconds = 0;
  int variables = 0, rows = 0;
  std::vector<std::string> notes;
  // Other local optima the local search reached (distinct, fitting, cheapest first, at most 4):
  // plans the model ranks close, for checking with the real compiler or by measurement.
  std::vector<std::vector<int>> alternatives;
};

// Objective of `choice` (infinity when a memory row is exceeded).
double Evaluate(const CoarseProgram& p, const std::vector<int>& choice);

// Local search (from several starts, best-response sweeps) always; then the exact 0-1 program,
// started from the local search's plan, when it has at most `max_ilp_variables` variables. The
// better plan wins. `write_mps`: also write the exact program there (MPS). Errors: no choice satisfies the memory rows (ResourceExhausted).
StatusOr<CoarseSolution> SolveCoarse(const CoarseProgram& p, double time_limit_s, int max_ilp_variables,
                                     const std::string& write_mps = "");

}  // namespace xs::autoshard

#endif  // XSHARD_AUTOSHARD_COARSE_PROGRAM_H_
