// Auto-sharding: given a module and a mesh, chooses a split for every parameter, output and
// intermediate of the entry so that the predicted step time is lowest and each device's live
// values fit a memory budget. Example:
//   AutoshardOptions o{.mesh = *Mesh::Parse("x=4,y=2"), .cost = ..., .evaluate = ...};
//   StatusOr<AutoshardResult> r = Autoshard(module, o);  // r->annotated runs under `xshard run`
// How: each instruction's strategies come from its factor rule (strategy.h); elementwise chains
// follow their operand (one choice for the chain); the choice minimizing compute + in-op
// collectives + reshards on edges, under a per-device memory row at the peaks of liveness, is an
// exact 0-1 program solved with CBC (ilp.h). The chosen plan, the same plan with only parameters
// and outputs pinned, the other local optima of the search (up to 4) and full replication are then
// compiled with the real pipeline (propagate, partition, cleanup) and priced by `evaluate`; the
// fastest that fits wins, so what is printed is what `xshard run` will do.
#ifndef XSHARD_AUTOSHARD_AUTOSHARD_H_
#define XSHARD_AUTOSHARD_AUTOSHARD_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "xshard/autoshard/strategy.h"
#include "xshard/base/status.h"
#include "xshard/ir/module.h"
#include "xshard/sharding/mesh.h"
#include "xshard/spmd/report.h"

namespace xs::autoshard {

// Seconds one step of a partitioned (SPMD) module takes on the target.
using StepEvaluator = std::function<double(const Module& spmd, const spmd::PartitionReport& report)>;

struct AutoshardOptions {
  Mesh mesh;
  // Bytes of live values one device may hold (0: no limit).
  int64_t memory_per_device = 0;
  // Keep the module's own shardings where it has them (those values are not chosen).
  bool keep_annotations = false;
  // A mesh axis a parameter's dim must not be split over. `value` is a parameter's name as printed
  // (PlannedTensor::name), its HLO name, or "*" for every parameter.
  struct Forbid {
    std::string value;
    int dim = 0;
    std::string axis;
  };
  std::vector<Forbid> forbid;
  CostFunctions cost;
  StepEvaluator evaluate;  // required
  double time_limit_s = 60;
  // Above this many variables the exact program is not solved; local search's plan is used.
  int max_ilp_variables = 250000;
  // Choices kept per group (the cheapest by their own cost); 0: all.
  int max_strategies_per_group = 32;
  EnumerateOptions enumerate;
  // When set, the exact program is also written here in MPS format (for other solvers).
  std::string write_mps;
};

// A parameter or output with the split a plan gives it.
struct PlannedTensor {
  // JAX's name (metadata op_name) where present, else the HLO name without JAX's ".N" suffix when
  // that is unambiguous ("w1.1" -> "w1"); "output N" for outputs.
  std::string name;
  Shape shape;
  std::string spec;  // "P('x', None)"; an HloSharding text where no spec on the mesh expresses it
  // The spec as mesh axis names per dim (major to minor); empty with `expressible` false when no
  // spec on the mesh expresses the sharding.
  std::vector<std::vector<std::string>> axes;
  bool expressible = true;
};

// One plan as the real pipeline runs it.
struct PlanEvaluation {
  std::string label;  // "search", "search (parameters and outputs)", "replicated", "module's own"
  double seconds = 0;       // the evaluator's step time
  int64_t peak_bytes = 0;   // per device, live values of the SPMD module (spmd::EstimateMemory)
  spmd::PartitionReport report;
  std::vector<PlannedTensor> parameters, outputs;
};

struct SearchStats {
  int instructions = 0;   // entry instructions with a choice
  int groups = 0;         // after elementwise chains joined their operand
  int classes = 0;        // after repeated layers tied their groups
  int strategies = 0;     // over all groups
  int pruned_groups = 0;  // groups that kept only max_strategies_per_group choices
  int variables = 0, rows = 0;
  double solve_seconds = 0, total_seconds = 0;
  bool optimal = false;
  std::string method;     // "ILP (CBC)" or "local search"
  double objective = 0;   // the search's own estimate (seconds)
};

struct AutoshardResult {
  std::unique_ptr<Module> annotated;  // the winning plan's module (num_partitions = mesh devices)
  PlanEvaluation plan;
  std::vector<PlanEvaluation> candidates;  // every plan evaluated, the winner among them
  std::vector<std::unique_ptr<Module>> candidate_modules;  // their modules, in the same order
  int chosen = 0;                          // index of the winner in `candidates`
  SearchStats stats;
  std::vector<std::string> notes;
};

// Errors: no entry, manual (shard_map) regions, a mesh of another device count than the module's
// (when --keep-annotations), memory no plan fits (the message names the need and the limit),
// and every compile error of the candidate plans.
StatusOr<AutoshardResult> Autoshard(const Module& module, const AutoshardOptions& options);

// The module's own shardings compiled and priced the same way (`--compare`).
StatusOr<PlanEvaluation> EvaluateAnnotated(const Module& annotated, const Mesh& mesh, const StepEvaluator& evaluate,
                                           std::string label);

// The printed form: the chosen specs, time, memory, collectives and their cost, and the search's
// figures.
std::string FormatResult(const AutoshardResult& result, const CostFunctions& cost);
std::string FormatEvaluation(const PlanEvaluation& plan);

}  // namespace xs::autoshard

#endif  // XSHARD_AUTOSHARD_AUTOSHARD_H_
