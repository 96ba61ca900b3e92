// Rules of the ops that route whole values: tuple / get-tuple-element, while, conditional, call,
// fusion, async ops, custom-calls, collectives, and the side-effecting ops (barriers). Values
// that cross into called computations are linked by propagation (call edges), not by rules.
#include "xshard/rules/rule_registry.h"
#include "xshard/rules/rules_internal.h"

namespace xs::rules_internal {
namespace {

using Ref = RuleBuilder::Ref;

StatusOr<OpShardingRule> PairAll(const Instruction& inst) {
  return PairLeavesRule(inst);
}
StatusOr<OpShardingRule> PairFirst(const Instruction& inst) {
  return PairLeavesRule(inst, 0, 1);
}

// Results related to nothing through the rule, without the barrier mark: call-like ops whose
// values flow through the called computations' parameters and roots instead.
StatusOr<OpShardingRule> CallLike(const Instruction& inst) {
  OpShardingRule rule = BarrierRule(inst);
  rule.barrier = false;
  return rule;
}

// get-tuple-element(t), index=i: the leaves of element i pass through; the other leaves of t are
// not related.
StatusOr<OpShardingRule> GetTupleElement(const Instruction& inst) {
  const Shape& tuple = inst.operand(0)->shape();
  const int index = static_cast<int>(inst.tuple_index());
  if (!tuple.IsTuple() || index < 0 || index >= tuple.tuple_size())
    return BadAttr(inst, "index= is not an element of the operand tuple");
  RuleBuilder b = MakeBuilder(inst);
  int begin = 0;
  for (int e = 0; e < index; ++e) begin += LeafCount(tuple.tuple_shape(e));
  const int count = LeafCount(tuple.tuple_shape(index));
  for (int l = 0; l < LeafCount(tuple); ++l) {
    if (l < begin || l >= begin + count) b.Ignore(b.Operand(0, l));
  }
  for (int l = 0; l < count; ++l) {
    b.SetGroup(RuleBuilder::Result(l), l + 1);
    if (SameDims(b.ShapeOf(b.Operand(0, begin + l)), b.ShapeOf(RuleBuilder::Result(l)))) {
      b.AddPointwise({RuleBuilder::Result(l), b.Operand(0, begin + l)});
      b.SetGroup(b.Operand(0, begin + l), l + 1);
    } else {
      b.Ignore(b.Operand(0, begin + l));
    }
  }
  return std::move(b).Build();
}

// The `n` result leaves starting at `begin` of a tuple-shaped result pair with the operand
// leaves; every other leaf stands alone (async-start's wrapped result and context, copy-start's
// context).
OpShardingRule PairResultRange(const Instruction& inst, int begin) {
  RuleBuilder b = MakeBuilder(inst);
  std::vector<Ref> ops;
  for (int i = 0; i < b.operand_count(); ++i) {
    for (int l = 0; l < LeafCount(inst.operand(i)->shape()); ++l) ops.push_back(b.Operand(i, l));
  }
  std::vector<bool> used(ops.size(), false);
  for (int l = 0; l < b.num_result_leaves(); ++l) {
    const int k = l - begin;
    const Ref r = RuleBuilder::Result(l);
    if (k >= 0 && k < static_cast<int>(ops.size()) && SameDims(b.ShapeOf(ops[k]), b.ShapeOf(r))) {
      b.AddPointwise({r, ops[k]});
      b.SetGroup(r, l + 1);
      b.SetGroup(ops[k], l + 1);
      used[k] = true;
    } else {
      b.AddOwnFactors(r);
      b.SetGroup(r, -1 - l);
    }
  }
  for (size_t k = 0; k < ops.size(); ++k) {
    if (!used[k]) b.Ignore(ops[k]);
  }
  return std::move(b).Build();
}

// async-start / copy-start / the collective -start ops: the first result leaves hold the operands.
StatusOr<OpShardingRule> Start(const Instruction& inst) {
  if (!inst.shape().IsTuple()) return PairLeavesRule(inst);  // all-reduce-start: same as all-reduce
  return PairResultRange(inst, 0);
}

// async-done / copy-done / the collective -done ops: the result is one element of the operand
// tuple (the last whose leaves match it: async-done's wrapped result, collective-permute-done's
// output); a non-tuple operand is the result itself.
StatusOr<OpShardingRule> Done(const Instruction& inst) {
  const Shape& in = inst.operand(0)->shape();
  if (!in.IsTuple()) return PairLeavesRule(inst);
  RuleBuilder b = MakeBuilder(inst);
  int begin = -1, offset = 0;
  for (int e = 0; e < in.tuple_size(); ++e) {
    if (in.tuple_shape(e).Compatible(inst.shape()) || (SameDims(in.tuple_shape(e), inst.shape()))) {
      begin = offset;
    }
    offset += LeafCount(in.tuple_shape(e));
  }
  const int count = b.num_result_leaves();
  for (int l = 0; l < LeafCount(in); ++l) {
    if (begin < 0 || l < begin || l >= begin + count) b.Ignore(b.Operand(0, l));
  }
  for (int l = 0; l < count; ++l) {
    const Ref r = RuleBuilder::Result(l);
    b.SetGroup(r, l + 1);
    if (begin >= 0 && SameDims(b.ShapeOf(b.Operand(0, begin + l)), b.ShapeOf(r))) {
      b.AddPointwise({r, b.Operand(0, begin + l)});
      b.SetGroup(b.Operand(0, begin + l), l + 1);
    } else {
      b.AddOwnFactors(r);
      if (begin >= 0) b.Ignore(b.Operand(0, begin + l));
    }
  }
  return std::move(b).Build();
}

// all-gather / reduce-scatter / array all-to-all, dimensions={d}: every other dim passes
// through each operand/result pair; dim d changes size across devices and needs replication.
StatusOr<OpShardingRule> CollectiveAlongDim(const Instruction& inst) {
  if (inst.dimensions().size() != 1) return PairLeavesRule(inst);  // tuple all-to-all
  const int cd = static_cast<int>(inst.dimensions()[0]);
  RuleBuilder b = MakeBuilder(inst);
  const int n = std::min(b.operand_count(), b.num_result_leaves());
  for (int i = 0; i < b.operand_count(); ++i) {
    if (i >= n) b.Ignore(b.Operand(i));
  }
  for (int i = 0; i < n; ++i) {
    const Ref op = b.Operand(i), res = RuleBuilder::Result(i);
    b.SetGroup(op, i + 1);
    b.SetGroup(res, i + 1);
    const Shape& a = b.ShapeOf(op);
    const Shape& r = b.ShapeOf(res);
    if (!a.IsArray() || !r.IsArray() || a.rank() != r.rank() || cd >= a.rank()) {
      b.Ignore(op);
      b.AddOwnFactors(res);
      continue;
    }
    for (int d = 0; d < a.rank(); ++d) {
      if (d == cd || a.dim(d) != r.dim(d)) {
        if (a.dim(d) != 1) b.AddFactorOn(a.dim(d), FactorKind::kNeedReplication, {{op, d}});
        if (r.dim(d) != 1) b.AddFactorOn(r.dim(d), FactorKind::kNeedReplication, {{res, d}});
      } else if (a.dim(d) != 1) {
        b.AddFactorOn(a.dim(d), FactorKind::kPassThrough, {{op, d}, {res, d}});
      }
    }
  }
  for (int l = n; l < b.num_result_leaves(); ++l) {
    b.AddOwnFactors(RuleBuilder::Result(l));
    b.SetGroup(RuleBuilder::Result(l), -1 - l);
  }
  return std::move(b).Build();
}

// A batch-partitionable custom-call (BatchPartitionableDims = k): the leading k dims of every
// operand and result leaf pass through together; each leaf's other dims need replication.
StatusOr<OpShardingRule> BatchPartitionable(const Instruction& inst, int k) {
  RuleBuilder b = MakeBuilder(inst);
  std::vector<Ref> tensors;
  for (int i = 0; i < b.operand_count(); ++i) tensors.push_back(b.Operand(i));
  for (int l = 0; l < b.num_result_leaves(); ++l) tensors.push_back(RuleBuilder::Result(l));
  for (int d = 0; d < k; ++d) {
    DimList on;
    for (Ref t : tensors) on.push_back({t, d});
    Factor(b, b.ShapeOf(tensors.front()).dim(d), FactorKind::kPassThrough, on);
  }
  for (Ref t : tensors) {
    const Shape& s = b.ShapeOf(t);
    for (int d = k; d < s.rank(); ++d) Factor(b, s.dim(d), FactorKind::kNeedReplication, {{t, d}});
  }
  return std::move(b).Build();
}

// custom-call: pass-through targets (IsPassThroughCustomCall) relate every dim; batch-
// partitionable ones (JAX's linear algebra) their batch dims; "TopK" is topk; everything else,
// including the manual-region converters SPMDFullToShardShape / SPMDShardToFullShape, is a
// barrier.
StatusOr<OpShardingRule> CustomCall(const Instruction& inst) {
  const std::string target = inst.attrs().custom_call_target.value_or("");
  if (std::optional<int> k = BatchPartitionableDims(inst)) return BatchPartitionable(inst, *k);
  if (IsPassThroughCustomCall(target)) {
    if (inst.shape().IsTuple()) return PairLeavesRule(inst);
    RuleBuilder b = MakeBuilder(inst);
    std::vector<Ref> tensors = {RuleBuilder::Result()};
    for (int i = 0; i < b.operand_count(); ++i) {
      if (SameDims(inst.operand(i)->shape(), inst.shape()))
        tensors.push_back(b.Operand(i));
      else
        for (int l = 0; l < LeafCount(inst.operand(i)->shape()); ++l) b.Ignore(b.Operand(i, l));
    }
    b.AddPointwise(tensors);
    return std::move(b).Build();
  }
  if (target == "TopK" && inst.operand_count() == 1) return TopKRule(inst);
  return BarrierRule(inst);
}

}  // namespace

StatusOr<OpShardingRule> Barrier(const Instruction& inst) {
  return BarrierRule(inst);
}

void AddStructuralRules(RuleTable& table) {
  for (Opcode op : {Opcode::kTuple, Opcode::kWhile, Opcode::kOptimizationBarrier, Opcode::kDomain,
                    Opcode::kAllReduce, Opcode::kCollectivePermute, Opcode::kCollectiveBroadcast,
                    Opcode::kCollectiveReduce, Opcode::kAsyncUpdate}) {
    Set(table, op, PairAll);
  }
  Set(table, Opcode::kAddDependency, PairFirst);
  Set(table, Opcode::kGetTupleElement, GetTupleElement);
  // rng-bit-generator's values relate to no operand, but (unlike a barrier) may take any
  // sharding its users want.
  for (Opcode op :
       {Opcode::kConditional, Opcode::kCall, Opcode::kFusion, Opcode::kRngBitGenerator}) {
    Set(table, op, CallLike);
  }
  for (Opcode op : {Opcode::kAsyncStart, Opcode::kCopyStart, Opcode::kAllGatherStart,
                    Opcode::kAllReduceStart, Opcode::kCollectivePermuteStart}) {
    Set(table, op, Start);
  }
  for (Opcode op : {Opcode::kAsyncDone, Opcode::kCopyDone, Opcode::kAllGatherDone,
                    Opcode::kAllReduceDone, Opcode::kCollectivePermuteDone}) {
    Set(table, op, Done);
  }
  for (Opcode op : {Opcode::kAllGather, Opcode::kReduceScatter, Opcode::kAllToAll}) {
    Set(table, op, CollectiveAlongDim);
  }
  Set(table, Opcode::kCustomCall, CustomCall);
  for (Opcode op : {Opcode::kAfterAll, Opcode::kInfeed, Opcode::kOutfeed, Opcode::kSend,
                    Opcode::kSendDone, Opcode::kRecv, Opcode::kRecvDone, Opcode::kDynamicReshape,
                    Opcode::kScan, Opcode::kShuffle, Opcode::kRaggedAllToAll, Opcode::kRaggedDot,
                    Opcode::kScaledDot, Opcode::kGetDimensionSize}) {
    Set(table, op, Barrier);
  }
}

}  // namespace xs::rules_internal
