// The per-op handlers of the partitioner (one file per op family) and the Context they share:
// each handler reads its operands' PartitionedValues, emits the local computation and the
// resharding it needs, and records the value of the instruction. Internal to spmd/.
#ifndef XSHARD_SPMD_HANDLERS_H_
#define XSHARD_SPMD_HANDLERS_H_

#include <functional>
#include <unordered_map>
#include <vector>

#include "xshard/spmd/partitioned_value.h"

namespace xs::spmd::internal {

// Partitioning state of one computation.
class Context {
 public:
  Context(ModuleState* state, Emitter* emitter, std::vector<HloSharding> parameter_shardings)
      : state_(state), em_(emitter), parameter_shardings_(std::move(parameter_shardings)) {}

  ModuleState& state() const { return *state_; }
  Emitter& em() const { return *em_; }
  bool is_entry() const { return parameter_shardings_.empty(); }
  // The sharding a caller gives parameter i of a called computation.
  const HloSharding& ParameterSharding(int64_t i) const { return parameter_shardings_[i]; }
  int64_t num_parameter_shardings() const { return static_cast<int64_t>(parameter_shardings_.size()); }

  const PartitionedValue& Get(const Instruction* global) const { return values_.at(global); }
  void Set(const Instruction* global, PartitionedValue v) { values_[global] = std::move(v); }
  // The instruction's sharding (canonical; replicated when absent; tuple shapes get a tuple).
  HloSharding TargetOf(const Instruction& inst) const;
  // Reshards `v` to inst's target and records it as inst's value.
  Status Finish(const Instruction& inst, const PartitionedValue& v, std::string_view why = "");

  void Warn(std::string message) { state_->report.warnings.push_back(std::move(message)); }
  void Note(std::string message) { state_->report.notes.push_back(std::move(message)); }

 private:
  ModuleState* state_;
  Emitter* em_;
  std::vector<HloSharding> parameter_shardings_;
  std::unordered_map<const Instruction*, PartitionedValue> values_;
};

// Partitions a computation called by a while / conditional / call with the given parameter
// shardings; its root is resharded to `root_target`. Returns the computation, added to the SPMD
// module. (The entry is partitioned by the driver in partitioner.cc.)
StatusOr<Computation*> PartitionCalledComputation(ModuleState& state, const Computation& global,
                                                  std::vector<HloSharding> parameter_shardings,
                                                  const HloSharding& root_target);
// Partitions every instruction of `global` into ctx's computation; returns the root's value
// (resharded to `root_target`).
StatusOr<PartitionedValue> PartitionInstructions(const Computation& global, Context& ctx,
                                                 const HloSharding& root_target);

// How the rule-driven handler treats one op (see handlers_rule.cc).
struct RuleConfig {
  // Makes the SPMD computation that combines partial results of sharded reduction factors (dot,
  // convolution: add; reduce: a copy of its reducer); called only when a plan shards one.
  // Empty: reduction factors stay unsharded.
  std::function<Computation*()> reducer;
  // Per operand: the local scalar that fills padding along sharded reduction dims (null: zero).
  std::vector<Instruction*> identities;
  // Factors that only the result has may be sharded (broadcast's new dims: every slice is equal).
  bool allow_result_only = false;
  // Every sharded factor must appear in each of these operands (positional ops such as
  // dynamic-update-slice and scatter, whose indices address global positions).
  std::vector<int> required_operands;
  // Windowed dims of convolution / reduce-window inputs may stay sharded: each partition gets
  // its result tile's window by halo exchange (window_halo.h).
  bool halo_windows = false;
  // Choose the plan that receives the fewest bytes (then the fewest collectives) instead of the
  // shortest estimated time: for handlers that weigh their own collective-permute plans by bytes
  // against the rule handler's (concatenate).
  bool fewest_bytes = false;
};

// Partitions an op through its factor rule (rules/): picks mesh axes per factor (from the result,
// the operands, or none, whichever moves fewest bytes), reshards the operands to the
// projections, masks padding along sharded reduction dims, emits the local op, and reshards the
// (possibly partial) result to the target. Unimplemented when the rule is a barrier.
Status PartitionByRule(const Instruction& inst, Context& ctx, const RuleConfig& config);
// The cost (bytes received per device, plus one per collective) of the plan PartitionByRule would
// pick (chosen by estimated time); kImpossibleCost when it has none. Lets a handler with its own
// strategy compare its ReshardCost / Emitter::cost() against it.
int64_t RulePlanCost(const Instruction& inst, Context& ctx, const RuleConfig& config);
// dynamic-update-slice's and scatter's config: every sharded factor is in the base (operands)
// and the update (updates), since they address global positions.
RuleConfig PositionalConfig(const Instruction& inst);

// True when `c` is (x, y) -> x op y for an op all-reduce can combine with (add, multiply,
// maximum, minimum, and, or; handlers_reduce.cc).
bool IsCollectiveReducer(const Computation& c);

// Handlers, one per op family.
using Handler = Status (*)(const Instruction&, Context&);
// The handler of `op` (handler_table.cc); HandleReplicated for ops without a partitioned form.
Handler HandlerFor(Opcode op);
Status HandleElementwise(const Instruction& inst, Context& ctx);  // handlers_elementwise.cc
Status HandleDot(const Instruction& inst, Context& ctx);          // handlers_dot.cc
Status HandleConvolution(const Instruction& inst, Context& ctx);
Status HandleReduce(const Instruction& inst, Context& ctx);       // handlers_reduce.cc
Status HandleShapeOp(const Instruction& inst, Context& ctx);      // handlers_shape.cc: by rule
Status HandleBroadcast(const Instruction& inst, Context& ctx);
Status HandleReduceWindow(const Instruction& inst, Context& ctx);
Status HandleSelectAndScatter(const Instruction& inst, Context& ctx);  // handlers_select_scatter.cc
Status HandlePositional(const Instruction& inst, Context& ctx);
Status HandleDynamicUpdateSlice(const Instruction& inst, Context& ctx);  // handlers_dus.cc
Status HandleGather(const Instruction& inst, Context& ctx);       // handlers_gather.cc
Status HandleScatter(const Instruction& inst, Context& ctx);
Status HandleSlice(const Instruction& inst, Context& ctx);        // handlers_halo.cc
Status HandlePad(const Instruction& inst, Context& ctx);
Status HandleReverse(const Instruction& inst, Context& ctx);
Status HandleConcatenate(const Instruction& inst, Context& ctx);  // handlers_concat.cc
// concatenate(slice(x, [s:n]), slice(x, [0:s])) along a dim x is evenly sharded on: partitioned
// as a rotation in x's sharding (at most two collective-permutes of the rows
// that cross tiles). False (nothing emitted) when the concatenate is not such a rotation
// (handlers_rotate.cc).
StatusOr<bool> TryRotation(const Instruction& inst, Context& ctx);
Status HandleSort(const Instruction& inst, Context& ctx);         // handlers_sort.cc
Status HandleParameter(const Instruction& inst, Context& ctx);    // handlers_source.cc
Status HandleConstant(const Instruction& inst, Context& ctx);
Status HandleIota(const Instruction& inst, Context& ctx);
Status HandleTuple(const Instruction& inst, Context& ctx);        // handlers_control.cc
Status HandleOptimizationBarrier(const Instruction& inst, Context& ctx);  // handlers_control.cc
Status HandleGetTupleElement(const Instruction& inst, Context& ctx);
Status HandleWhile(const Instruction& inst, Context& ctx);
Status HandleConditional(const Instruction& inst, Context& ctx);
Status HandleCall(const Instruction& inst, Context& ctx);
Status HandleCustomCall(const Instruction& inst, Context& ctx);   // handlers_custom_call.cc
Status HandleManual(const Instruction& inst, Context& ctx);       // handlers_fallback.cc
Status HandleReplicated(const Instruction& inst, Context& ctx);
Status HandleCollective(const Instruction& inst, Context& ctx);

}  // namespace xs::spmd::internal

#endif  // XSHARD_SPMD_HANDLERS_H_
