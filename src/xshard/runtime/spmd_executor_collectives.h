// The collectives of one SPMD module resolved once to communicator ranks (logical device ids,
// replica * num_partitions + partition), and the CollectiveRunner through which each device's
// Executable::Run sends them to the Communicator. Internal to SpmdExecutable.
#ifndef XSHARD_RUNTIME_SPMD_EXECUTOR_COLLECTIVES_H_
#define XSHARD_RUNTIME_SPMD_EXECUTOR_COLLECTIVES_H_

#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "xshard/ir/attributes.h"
#include "xshard/ir/module.h"
#include "xshard/ir/verifier.h"
#include "xshard/kernels/dot.h"
#include "xshard/exec/executable.h"
#include "xshard/exec/async_collectives.h"
#include "xshard/runtime/client.h"
#include "xshard/comm/collectives.h"
#include "xshard/comm/communicator.h"
#include "xshard/comm/replica_groups.h"

namespace xs {

// One collective instruction, ready to run on any rank.
struct PlannedCollective {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  std::string name;         // "all-reduce 'sum.3'": what planning errors call it
  std::string call_name;    // "sum.3": what the communicator's errors call it
  int64_t channel_id = 0;   // 0 when the instruction has none
  GroupMode mode = GroupMode::kCrossReplica;
  std::optional<DeviceGroups> groups;  // all kinds but collective-permute
  std::optional<PermutePairs> pairs;    // collective-permute
  ReductionKind reduction = ReductionKind::kSum;
  int dim = 0;                   // gathered / scattered / all-to-all split-and-concat dim
  bool tuple_all_to_all = false;  // all-to-all without dimensions={..}: operand j to member j
  bool ragged = false;            // ragged-all-to-all (kind kAllToAll): RunRaggedAllToAll
  std::vector<Shape> results;     // leaves of the (non -start) result
};

// The resolved collectives of every computation of a module.
class SpmdCollectivePlan {
 public:
  // Resolves each collective under XLA's group mode for its attributes: all-gather, all-reduce
  // and reduce-scatter take use_global_device_ids (absent = false), all-to-all,
  // collective-broadcast and collective-permute do not (channel_id alone = cross-partition).
  static StatusOr<std::unique_ptr<SpmdCollectivePlan>> Create(const Module& module,
                                                              int64_t replica_count,
                                                              int64_t num_partitions);
  // Null for an instruction that is not a planned collective.
  const PlannedCollective* Find(const Instruction* inst) const;
  int64_t num_ranks() const { return num_ranks_; }

 private:
  std::unordered_map<const Instruction*, PlannedCollective> ops_;
  int64_t num_ranks_ = 1;
};

// Runs planned collectives for one rank of a run over `comm`, synchronously or as start / finish
// pairs (Communicator::Finish).
class CommunicatorCollectiveRunner final : public AsyncCollectiveRunner {
 public:
  CommunicatorCollectiveRunner(const SpmdCollectivePlan& plan, Communicator& comm, int64_t rank)
      : plan_(plan), comm_(comm), rank_(rank) {}
  StatusOr<std::vector<Array>> RunCollective(const Instruction& inst,
                                             std::span<const Array* const> operands,
                                             std::span<Array* const> into) override;
  StatusOr<std::vector<Array>> Start(const Instruction& inst, const void* key,
                                     std::span<const Array* const> operands,
                                     std::vector<std::shared_ptr<const void>> keep) override;
  Status Finish(const void* key) override;

 private:
  // Unfinished communicator calls per device above which a start runs synchronously (the
  // in-process communicator keeps 15).
  static constexpr size_t kMaxOutstanding = 8;
  struct Pending {
    std::vector<uint64_t> handles;  // one per communicator call; empty when run at once
    std::vector<std::shared_ptr<const void>> keep;
  };
  // Runs the op; with `handles`, only starts each communicator call and appends its handle.
  // `into`: as in RunCollective.
  StatusOr<std::vector<Array>> Call(const Instruction& inst,
                                    std::span<const Array* const> operands,
                                    std::vector<uint64_t>* handles, std::span<Array* const> into = {});

  const SpmdCollectivePlan& plan_;
  Communicator& comm_;
  int64_t rank_;
  std::unordered_map<const void*, std::deque<Pending>> pending_;
  size_t outstanding_ = 0;
};

// The reduction an all-reduce / reduce-scatter's to_apply computes: its root must be add,
// multiply, minimum, maximum, and or or of parameters 0 and 1 (either order) on scalars.
// Anything else is an unsupported-instruction error naming the computation and its root.
StatusOr<ReductionKind> DetectReduction(const Instruction& inst);

}  // namespace xs

#endif  // XSHARD_RUNTIME_SPMD_EXECUTOR_COLLECTIVES_H_
