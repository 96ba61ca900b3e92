// The partitioner's handler table, one entry per opcode: elementwise ops from the opcode table's
// kind bits, ops declared kOpReplicatedForm to the warning fallback, the rest listed here by op
// family. Every op with a non-barrier factor rule has a local form or is declared replicated
// (checked by jit/op_table_test.cc), so nothing is replicated silently.
#include <array>

#include "xshard/base/status.h"
#include "xshard/spmd/handlers.h"
#include "xshard/spmd/partition_forms.h"

namespace xs {
namespace spmd::internal {
namespace {

struct HandlerTable {
  std::array<Handler, kOpcodeCount> handlers;
  HandlerTable() {
    handlers.fill(&HandleReplicated);
    auto set = [&](Opcode op, Handler h) {
      XS_CHECK(!HasReplicatedForm(op), OpcodeName(op), " is declared kOpReplicatedForm");
      handlers[static_cast<int>(op)] = h;
    };
    for (int i = 0; i < kOpcodeCount; ++i) {
      if (IsElementwise(static_cast<Opcode>(i))) set(static_cast<Opcode>(i), &HandleElementwise);
    }
    set(Opcode::kParameter, &HandleParameter);
    set(Opcode::kConstant, &HandleConstant);
    set(Opcode::kIota, &HandleIota);
    set(Opcode::kDot, &HandleDot);
    set(Opcode::kConvolution, &HandleConvolution);
    set(Opcode::kReduce, &HandleReduce);
    set(Opcode::kBroadcast, &HandleBroadcast);
    // Rule-driven: dims the op keeps pass through sharded, dims it transforms (sorted, windowed,
    // the fft lengths, the matrices of cholesky / triangular-solve, topk's last dim, batch norm's
    // statistics dims) are made unsharded first by the rule's need-replication factors.
    for (Opcode op : {Opcode::kTranspose, Opcode::kReshape,
                      Opcode::kDynamicSlice,
                      Opcode::kBitcastConvert, Opcode::kTopK,
                      Opcode::kFft, Opcode::kCholesky, Opcode::kTriangularSolve,
                      Opcode::kBatchNormTraining, Opcode::kBatchNormInference,
                      Opcode::kBatchNormGrad}) {
      set(op, &HandleShapeOp);
    }
    set(Opcode::kReduceWindow, &HandleReduceWindow);
    set(Opcode::kSelectAndScatter, &HandleSelectAndScatter);
    set(Opcode::kSlice, &HandleSlice);
    set(Opcode::kPad, &HandlePad);
    set(Opcode::kReverse, &HandleReverse);
    set(Opcode::kConcatenate, &HandleConcatenate);
    set(Opcode::kSort, &HandleSort);
    set(Opcode::kDynamicUpdateSlice, &HandleDynamicUpdateSlice);
    set(Opcode::kGather, &HandleGather);
    set(Opcode::kScatter, &HandleScatter);
    set(Opcode::kTuple, &HandleTuple);
    set(Opcode::kOptimizationBarrier, &HandleOptimizationBarrier);
    set(Opcode::kGetTupleElement, &HandleGetTupleElement);
    set(Opcode::kWhile, &HandleWhile);
    set(Opcode::kConditional, &HandleConditional);
    set(Opcode::kCall, &HandleCall);
    set(Opcode::kCustomCall, &HandleCustomCall);
  }
};

const HandlerTable& Table() {
  static const HandlerTable table;  // immutable after first use
  return table;
}

}  // namespace

Handler HandlerFor(Opcode op) { return Table().handlers[static_cast<int>(op)]; }

}  // namespace spmd::internal

namespace spmd {

PartitionForm PartitionFormOf(Opcode op) {
  if (IsCollective(op)) return PartitionForm::kCollective;
  if (HasReplicatedForm(op)) return PartitionForm::kReplicatedWithWarning;
  return internal::HandlerFor(op) == &internal::HandleReplicated ? PartitionForm::kReplicated
                                                                  : PartitionForm::kLocal;
}

std::string_view PartitionFormName(PartitionForm form) {
  switch (form) {
    case PartitionForm::kLocal: return "local (rule-driven)";
    case PartitionForm::kCollective: return "collective";
    case PartitionForm::kReplicatedWithWarning: return "replicated with a warning";
    case PartitionForm::kReplicated: return "replicated (barrier rule)";
  }
  return "?";
}

}  // namespace spmd
}  // namespace xs
