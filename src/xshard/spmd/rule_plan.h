// The plan of the rule-driven handler (handlers_rule.cc): what it knows about an op (its factor
// rule, operand values, result targets and their views on the tile mesh) and a candidate
// assignment of mesh axes to factors with the shardings and cost it implies. Internal.
#ifndef XSHARD_SPMD_RULE_PLAN_H_
#define XSHARD_SPMD_RULE_PLAN_H_

#include <optional>
#include <vector>

#include "xshard/rules/projection.h"
#include "xshard/spmd/handlers.h"

namespace xs::spmd::internal {

using Axes = std::vector<int>;

// A candidate: mesh axes per factor, the shardings the operands and result leaves get from them,
// and what getting there costs.
struct Plan {
  FactorAxes factors;
  std::vector<HloSharding> operands;  // per operand
  std::vector<HloSharding> results;   // per result leaf
  Axes partial;                       // axes of the sharded reduction factors
  // Estimated time in picoseconds (MachineModel::Estimate of the figures below), or
  // kImpossibleCost.
  int64_t cost = kImpossibleCost;
  int64_t bytes = 0;        // received per device by the operand and result reshards
  int64_t collectives = 0;  // collectives of those reshards
  double latency_us = 0;    // their fixed costs (MachineModel::LatencyUs)
  double flops = 0;         // work of the local op per device (redundant work included)
  bool like_result = false;  // made by PlanLikeResult (no factor assignment)
};


// What the handler knows about the op.
struct Op {
  const Instruction* inst;
  OpShardingRule rule;
  std::vector<PartitionedValue> operands;
  std::vector<Shape> result_shapes;        // global result leaves
  std::vector<HloSharding> result_targets;
  std::vector<std::optional<AxesSharding>> operand_axes, result_axes;
  uint64_t manual = 0;
  bool on_mesh = true;
  bool has_manual = false;  // some sharding has manual axes
  // Propagation's axes views of the results on `*propagated_mesh` (the module's mesh), when
  // propagation ran (ComputeViews uses them instead of recomputing them on that mesh).
  const std::vector<std::optional<AxesSharding>>* propagated_result_axes = nullptr;
  const TileMesh* propagated_mesh = nullptr;
};

inline bool Participates(const Op& op, int i) { return op.rule.operands[i].participates; }

// The op's rule, operand values and result targets. Unimplemented for barrier rules, non-array
// operands and nested tuple results.
StatusOr<Op> Describe(const Instruction& inst, Context& ctx);
// The op's shardings seen on `mesh` (maximal values as replicated ones: the reshard from a maximal
// value broadcasts it first). Sets on_mesh, manual and has_manual.
void ComputeViews(Op& op, const TileMesh& mesh);
// A mesh of this op's shardings alone, for when they do not all fit the module's common mesh.
std::optional<TileMesh> LocalMesh(const Op& op, int64_t n);

// The shardings a factor assignment gives each operand and result leaf.
Plan PlanFromFactors(FactorAxes fa, const Op& op, const TileMesh& mesh);
// An elementwise op whose shardings are not on the mesh: every same-rank operand takes the
// result's sharding as it is (the reshard can then still be a collective-permute).
std::optional<Plan> PlanLikeResult(const Op& op);
// The work of the op's local form under the plan, per device: the product of the local sizes of
// the factors of its tensors (its iteration space), doubled for dot and convolution (a multiply
// and an add). A factor left unsharded counts whole on every device: redundant work is counted.
double LocalFlops(const Op& op, const Plan& plan, const TileMesh& mesh, int64_t n);
// Fills in the plan's cost: the estimated time (state.machine) of its operand and result
// reshards (bytes received per device, collectives) and of its local op (LocalFlops);
// kImpossibleCost when the op's local shapes do not line up.
void Cost(Plan& plan, const Op& op, ModuleState& state);

// The op's attributes for local operand shapes (sizes that name whole dims shrink with them).
Status Localize(Instruction& local, const Instruction& global);
// Padded local shape of each result leaf under the plan.
std::vector<Shape> LocalResultShapes(const Op& op, const Plan& plan, int64_t n);

// Swaps the module state's mesh for the duration of one op.
class MeshSwap {
 public:
  MeshSwap(ModuleState& state, TileMesh mesh) : state_(state), saved_(std::move(state.mesh)) {
    state_.mesh = std::move(mesh);
  }
  ~MeshSwap() { state_.mesh = std::move(saved_); }

 private:
  ModuleState& state_;
  TileMesh saved_;
};

}  // namespace xs::spmd::internal

#endif  // XSHARD_SPMD_RULE_PLAN_H_
