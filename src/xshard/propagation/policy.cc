// The per-opcode propagation policy table (GSPMD's CanPropagateThroughAtAggressiveLevel,
// SupportSpatialPartitioning and PickRepresentativeOperand, as data).
#include "xshard/propagation/policy.h"

#include <array>

#include "xshard/rules/rule_registry.h"

namespace xs {
namespace {

using PolicyTable = std::array<OpPolicy, kOpcodeCount>;

void SetAll(PolicyTable& t, std::initializer_list<Opcode> ops, void (*fn)(OpPolicy&)) {
  for (Opcode op : ops) fn(t[static_cast<int>(op)]);
}

PolicyTable MakeTable() {
  PolicyTable t{};
#define XS_POLICY_ELEMENTWISE(e, name, arity, flags) \
  if ((flags)&kOpElementwise) {                      \
    OpPolicy& p = t[static_cast<int>(Opcode::e)];    \
    p.forward_level = p.backward_level = 0;          \
    p.representative_at_level0 = true;               \
  }
  XS_OPCODE_LIST(XS_POLICY_ELEMENTWISE)
#undef XS_POLICY_ELEMENTWISE
  // Pass-through ops that move shardings at level 0 (GSPMD's minimum aggressiveness list).
  SetAll(t,
         {Opcode::kTranspose, Opcode::kReshape, Opcode::kTuple, Opcode::kGetTupleElement,
          Opcode::kWhile, Opcode::kOptimizationBarrier, Opcode::kDomain, Opcode::kCall,
          Opcode::kFusion, Opcode::kAsyncStart, Opcode::kAsyncUpdate, Opcode::kAsyncDone,
          Opcode::kConditional, Opcode::kAddDependency},
         [](OpPolicy& p) { p.forward_level = p.backward_level = 0; });
  // Concatenate and dynamic-slice go forward at level 0 (with conditions), backward from 1.
  SetAll(t, {Opcode::kConcatenate, Opcode::kDynamicSlice},
         [](OpPolicy& p) { p.forward_level = 0; });
  // (Not sort: its other dims pass their axes on, as under Shardy, JAX's default; the
  // partitioner then moves or gathers the sorted dim's axes, handlers_sort.cc.)
  SetAll(t, {Opcode::kDynamicSlice, Opcode::kDynamicUpdateSlice},
         [](OpPolicy& p) { p.skip_if_need_replication_sharded = true; });
  // A dynamic-update-slice passes its sharding back to its operand and update at level 0 (a
  // stacked buffer's layout reaches the values written into it before dots choose theirs);
  // forward it waits for level 1, so that an output annotation reaches it before an update's
  // sharding does.
  SetAll(t, {Opcode::kDynamicUpdateSlice}, [](OpPolicy& p) { p.backward_level = 0; });
  SetAll(t, {Opcode::kBroadcast}, [](OpPolicy& p) {
    p.forward_level = 3;
    p.backward_level = 2;
    p.self_backward_level = 2;
    p.skip_replicated_source = true;
  });
  SetAll(t, {Opcode::kDot, Opcode::kConvolution}, [](OpPolicy& p) {
    p.larger_operand_first = true;
    p.backward_uses_other_operands = true;
    p.aggressive_resharding = false;
  });
  SetAll(t, {Opcode::kGather}, [](OpPolicy& p) {
    p.reverse_operands = true;
    p.aggressive_resharding = false;
  });
  SetAll(t, {Opcode::kScatter, Opcode::kTuple, Opcode::kWhile},
         [](OpPolicy& p) { p.aggressive_resharding = false; });
  SetAll(t, {Opcode::kSort}, [](OpPolicy& p) {
    p.representative_at_level0 = true;
    p.forward_keeps_need_replication = true;
  });
  // Operands that share reduction / index factors take them from each other going backward
  // (variadic reduce inputs, sort operands, scatter indices <-> updates).
  SetAll(t, {Opcode::kReduce, Opcode::kSort, Opcode::kScatter},
         [](OpPolicy& p) { p.backward_uses_other_operands = true; });
  // Not spatially partitionable in GSPMD: collectives of an already-partitioned program and ops
  // with side effects or device-specific meaning.
  SetAll(t,
         {Opcode::kAllGather,
          Opcode::kAllGatherStart,
          Opcode::kAllGatherDone,
          Opcode::kAllToAll,
          Opcode::kCollectivePermute,
          Opcode::kCollectivePermuteStart,
          Opcode::kCollectivePermuteDone,
          Opcode::kCollectiveBroadcast,
          Opcode::kCollectiveReduce,
          Opcode::kAllReduceStart,
          Opcode::kAllReduceDone,
          Opcode::kRaggedAllToAll,
          Opcode::kAfterAll,
          Opcode::kSend,
          Opcode::kSendDone,
          Opcode::kRecv,
          Opcode::kRecvDone,
          Opcode::kOutfeed,
          Opcode::kBitcast,
          Opcode::kGetDimensionSize,
          Opcode::kDynamicReshape,
          Opcode::kCopyStart,
          Opcode::kCopyDone,
          Opcode::kPartitionId,
          Opcode::kReplicaId,
          Opcode::kRngGetAndUpdateState,
          Opcode::kScan,
          Opcode::kShuffle,
          Opcode::kBatchNormGrad,
          Opcode::kBatchNormInference,
          Opcode::kBatchNormTraining,
          Opcode::kRaggedDot,
          Opcode::kScaledDot},
         [](OpPolicy& p) { p.partitionable = false; });
  return t;
}

}  // namespace

OpPolicy PolicyOf(const Instruction& inst) {
  static const PolicyTable table = MakeTable();  // immutable after first use
  OpPolicy p = table[static_cast<int>(inst.opcode())];
  switch (inst.opcode()) {
    case Opcode::kCustomCall: {
      const std::string target = inst.attrs().custom_call_target.value_or("");
      p.partitionable = IsPassThroughCustomCall(target) || BatchPartitionableDims(inst).has_value();
      if (target == "Sharding" || target == "xla.sdy.FuncResultSharding") p.forward_level = p.backward_level = 0;
      break;
    }
    default: break;
  }
  return p;
}

}  // namespace xs
