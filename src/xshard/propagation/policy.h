// Propagation priorities per opcode, after GSPMD's sharding propagation: at which aggressiveness
// level an op passes shardings forward (operands -> result) and backward (result -> operands),
// whether its result may be sharded at all, and in which order its operands are consulted.
// Level 0 moves shardings only through pass-through ops (elementwise, reshape, transpose, tuple,
// while, ...; dynamic-update-slice backward), level 1 adds dots, reduces, gathers and the rest,
// level 2 lets broadcasts take their users' shardings and level 3 pushes shardings forward
// through broadcasts; each level runs to a fixed point before the next starts.
#ifndef XSHARD_PROPAGATION_POLICY_H_
#define XSHARD_PROPAGATION_POLICY_H_

#include "xshard/ir/instruction.h"

namespace xs {

inline constexpr int kMaxAggressiveness = 3;

struct OpPolicy {
  // Lowest level at which the op's result is inferred from its operands.
  int forward_level = 1;
  // Lowest level at which the op, as a user, passes its sharding back to its operands.
  int backward_level = 1;
  // Lowest level at which the op's own result is inferred from its users.
  int self_backward_level = 0;
  // GSPMD's SupportSpatialPartitioning: false for ops whose result takes no sharding from
  // propagation (unknown custom-calls, all-gather, send / recv, ...). Such a result only becomes
  // replicated when an operand is replicated.
  bool partitionable = true;
  // Forward: try the operand with the largest byte size first (dot, convolution).
  bool larger_operand_first = false;
  // Forward: consult operands in reverse order (gather: indices before the operand).
  bool reverse_operands = false;
  // Forward at level 0: only the most sharded operand (GSPMD's representative operand).
  bool representative_at_level0 = false;
  // Forward at level 0: skip a source whose need-replication factors are sharded (dynamic-slice
  // sliced dims), as GSPMD's first level does; from level 1 the other factors' axes pass on (as
  // under Shardy: a window read out of a sequence-sharded cache stays batch-sharded).
  bool skip_if_need_replication_sharded = false;
  // Forward: the result keeps the operand's axes on need-replication factors too where they split
  // the factor evenly and a pass-through factor could take them after its own axes (sort, as
  // GSPMD: the result takes the operand's sharding and the partitioner moves the sorted dim's
  // axes to another dim with all-to-alls; a rank-1 sort's result stays replicated).
  bool forward_keeps_need_replication = false;
  // Forward: a replicated operand gives nothing (broadcast, to avoid resharding after it).
  bool skip_replicated_source = false;
  // Backward: also use the other operands' factor shardings (dot / convolution contracting and
  // batch dims), as GSPMD's InferDotOperandSharding does.
  bool backward_uses_other_operands = false;
  // Forward: a more sharded candidate may replace an incompatible sharding when the op has one
  // non-root user (GSPMD's allow_aggressive_resharding).
  bool aggressive_resharding = true;
};

// The policy of `inst` (depends on the opcode and, for collectives and custom-calls, on
// attributes).
OpPolicy PolicyOf(const Instruction& inst);

}  // namespace xs

#endif  // XSHARD_PROPAGATION_POLICY_H_
