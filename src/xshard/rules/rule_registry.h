// GetRule: the OpShardingRule of any instruction, from one table indexed by opcode. Every opcode
// of the IR's list has an entry (tested), so propagation and the partitioner never meet an op
// without a rule. Example, for
//   %r = f32[4,6] reshape(f32[24] %x)
// GetRule(*r)->ToString() == "([(ij)]) -> ([i, j]) {i=4, j=6}".
#ifndef XSHARD_RULES_RULE_REGISTRY_H_
#define XSHARD_RULES_RULE_REGISTRY_H_

#include "xshard/base/status.h"
#include "xshard/ir/instruction.h"
#include "xshard/rules/sharding_rule.h"

namespace xs {

// The rule of `inst`. Errors (InvalidArgument) name the instruction when its attributes do not
// fit its shapes (e.g. a dot without dimension numbers, a reshape dim count mismatch).
StatusOr<OpShardingRule> GetRule(const Instruction& inst);

// Custom-call targets whose result is their operand, dim for dim ("Sharding", "X64Combine",
// "LayoutConstraint", and the memory-placement markers "PinToDevice", "MoveToHost",
// "MoveToDevice", "annotate_device_placement"): shardings pass straight through them.
bool IsPassThroughCustomCall(std::string_view target);
// A custom-call JAX marks batch-partitionable (frontend attribute num_batch_dims="k", which its
// LAPACK / cuSOLVER lowerings carry): the leading k dims of every operand and result are one
// batch that may be split over devices, each device running the call on its own batch rows.
// Returns k, or nullopt when the attribute is absent or does not fit the shapes (k < 1, an
// operand or result leaf of rank < k, or leading dims that differ).
std::optional<int> BatchPartitionableDims(const Instruction& inst);

// True when the table has a rule for `op` (false only for an opcode added to the IR's list
// without a rule).
bool HasRule(Opcode op);

// True when the table's rule for `op` may relate operand and result dims (not the barrier rule of
// send / recv, infeed, scan, ...): such an op must have a partitioned form, an executor handler
// and shape inference, or be on an allow-list of jit/op_table_test.cc.
bool HasNonBarrierRule(Opcode op);

}  // namespace xs

#endif  // XSHARD_RULES_RULE_REGISTRY_H_
