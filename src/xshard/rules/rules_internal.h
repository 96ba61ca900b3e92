// Shared plumbing of the per-op rule files: the rule function type, the opcode table they fill,
// and small helpers. Not part of the public API.
#ifndef XSHARD_RULES_RULES_INTERNAL_H_
#define XSHARD_RULES_RULES_INTERNAL_H_

#include <array>
#include <string_view>
#include <utility>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/base/strings.h"
#include "xshard/ir/instruction.h"
#include "xshard/rules/sharding_rule.h"

namespace xs::rules_internal {

using RuleFn = StatusOr<OpShardingRule> (*)(const Instruction&);
using RuleTable = std::array<RuleFn, kOpcodeCount>;

inline void Set(RuleTable& table, Opcode op, RuleFn fn) {
  table[static_cast<int>(op)] = fn;
}

// Fill the table, one call per rule file.
void AddShapeRules(RuleTable& table);        // elementwise, broadcast, reshape, slice, pad, ...
void AddContractionRules(RuleTable& table);  // dot, convolution, reduce, gather, scatter, sort, ...
void AddStructuralRules(RuleTable& table);   // tuple, while, call, custom-call, collectives, ...

// Rules shared between files.
StatusOr<OpShardingRule> Barrier(const Instruction& inst);      // rules_structural.cc
StatusOr<OpShardingRule> GatherRule(const Instruction& inst);   // rules_gather.cc
StatusOr<OpShardingRule> ScatterRule(const Instruction& inst);  // rules_gather.cc
StatusOr<OpShardingRule> TopKRule(const Instruction& inst);     // rules_contract.cc

// A builder over the instruction's operand shapes and result shape.
RuleBuilder MakeBuilder(const Instruction& inst);
// Error for a missing / malformed attribute, naming the instruction.
Status BadAttr(const Instruction& inst, std::string_view what);
// A rule relating nothing: operands ignored, result leaves with factors of their own.
OpShardingRule BarrierRule(const Instruction& inst);
// Operand leaves and result leaves paired in order where their dims match (tuple, while,
// opt-barrier, all-reduce): one pass-through factor per dim per pair; unmatched leaves stand
// alone.
OpShardingRule PairLeavesRule(const Instruction& inst, int first_operand = 0,
                              int operand_count = -1);
// True when the two shapes are arrays with identical dims.
bool SameDims(const Shape& a, const Shape& b);
// A factor on `on`, skipped for size-1 dims (they carry no sharding).
inline void Factor(RuleBuilder& b, int64_t size, FactorKind kind,
                   const std::vector<std::pair<RuleBuilder::Ref, int>>& on) {
  if (size != 1 && !on.empty()) b.AddFactorOn(size, kind, on);
}

}  // namespace xs::rules_internal

#endif  // XSHARD_RULES_RULES_INTERNAL_H_
