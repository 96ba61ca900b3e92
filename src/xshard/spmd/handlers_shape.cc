// Ops that move data without combining it: broadcast, transpose, reshape, reverse, slice, pad,
// concatenate, dynamic-slice, dynamic-update-slice, gather, scatter, sort, reduce-window,
// select-and-scatter, bitcast-convert. Dims an op keeps whole pass through with their sharding
// (reshape: a split or merged dim keeps it when the major-most factor carries it and splits
// evenly). Dims whose data moves (sliced, padded, concatenated, reversed, windowed, indexed,
// sorted) are made unsharded first: an all-gather along those dims only, never a full
// replication. Broadcast's new dims may be sharded for free (every slice is equal).
#include "xshard/spmd/handlers.h"

namespace xs::spmd::internal {

Status HandleShapeOp(const Instruction& inst, Context& ctx) {
  return PartitionByRule(inst, ctx, RuleConfig{});
}

Status HandleBroadcast(const Instruction& inst, Context& ctx) {
  RuleConfig config;
  config.allow_result_only = true;
  return PartitionByRule(inst, ctx, config);
}

// reduce-window: windowed dims may stay sharded (halo exchange, window_halo.h).
Status HandleReduceWindow(const Instruction& inst, Context& ctx) {
  RuleConfig config;
  config.halo_windows = true;
  return PartitionByRule(inst, ctx, config);
}

RuleConfig PositionalConfig(const Instruction& inst) {
  RuleConfig config;
  if (inst.opcode() == Opcode::kDynamicUpdateSlice) {
    config.required_operands = {0, 1};
  } else {
    const int n = (inst.operand_count() - 1) / 2;
    for (int i = 0; i < n; ++i) {
      config.required_operands.push_back(i);
      config.required_operands.push_back(n + 1 + i);
    }
  }
  return config;
}

// dynamic-update-slice and scatter write at global positions: a dim may stay sharded only when
// the base and the update (updates) share it whole.
Status HandlePositional(const Instruction& inst, Context& ctx) {
  return PartitionByRule(inst, ctx, PositionalConfig(inst));
}

}  // namespace xs::spmd::internal
