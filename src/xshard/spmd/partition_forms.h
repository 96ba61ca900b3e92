// How the partitioner treats each opcode, derived from the opcode table (ir/opcode.h) and the spmd
// handler table: the public view the cross-table test (jit/op_table_test.cc) checks against the
// factor rules, shape inference and the executor.
#ifndef XSHARD_SPMD_PARTITION_FORMS_H_
#define XSHARD_SPMD_PARTITION_FORMS_H_

#include "xshard/ir/opcode.h"

namespace xs::spmd {

enum class PartitionForm {
  // Partitioned through its factor rule or a local form of its own (elementwise, dot, reduce,
  // shape ops, fft / cholesky / ..., parameters, control flow, custom-calls).
  kLocal,
  // A collective written in the global program (kept as written; see handlers_fallback.cc).
  kCollective,
  // Declared kOpReplicatedForm in the opcode table: computed on replicated operands, with a
  // `partition --report` warning whenever that gathers an operand or slices the result.
  kReplicatedWithWarning,
  // No partitioned form: the op's factor rule is a barrier (send / recv, infeed, scan, ...), so
  // propagation never shards it; computed on replicated operands (warned when one is sharded).
  kReplicated,
};

PartitionForm PartitionFormOf(Opcode op);
std::string_view PartitionFormName(PartitionForm form);

}  // namespace xs::spmd

#endif  // XSHARD_SPMD_PARTITION_FORMS_H_
