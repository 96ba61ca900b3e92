// InProcessCommunicator: collectives between the device threads of one process. Each rank
// publishes what it contributes (pointers, dtype, dims, op and channel) in its own cache-line
// aligned slot and advances a call counter; peers wait on those counters through Doorbells (brief
// yield, then a futex with a deadline), check that everyone called the same op with the same
// shapes, and then copy directly between each other's buffers (one copy, no central buffer).
// Small messages (<= eager_bytes) are staged in the slot instead, so the call needs no second
// rendezvous before it returns. A call may be split into a start (posting) and a finish (the
// rendezvous and copies), so that the device computes in between. Ring and recursive-doubling variants of all-gather, all-reduce and
// reduce-scatter are selectable per communicator or per call.
#ifndef XSHARD_COMM_INPROCESS_COMMUNICATOR_H_
#define XSHARD_COMM_INPROCESS_COMMUNICATOR_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "xshard/comm/communicator.h"
#include "xshard/comm/wait.h"

namespace xs {

class ComputeGate;

namespace inprocess {
struct State;
struct OpSpec;
}  // namespace inprocess

struct InProcessOptions {
  int64_t num_ranks = 8;
  // The device id of each rank, used in messages; empty means rank r is device r.
  std::vector<int64_t> device_ids;
  // How long a rank waits for its peers at any one point of a call before the whole
  // communicator fails with DeadlineExceeded.
  std::chrono::milliseconds timeout{30000};
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kDirect;
  // Defaults to DefaultWaitPolicy(num_ranks, AvailableCores()).
  std::optional<WaitPolicy> wait_policy;
  // Direct-algorithm inputs up to this size are staged (copied into the communicator) so the call
  // returns without waiting for peers to finish reading.
  int64_t eager_bytes = 64 * 1024;
  // Not owned (the Client's). While a device is queued at or inside it, a wait that reaches
  // `timeout` starts another one instead of failing: the peers are computing, not hung.
  const ComputeGate* compute_gate = nullptr;
};

class InProcessCommunicator final : public Communicator {
 public:
  // Validates the options (num_ranks >= 1, device_ids size, timeout > 0).
  static StatusOr<std::unique_ptr<InProcessCommunicator>> Create(InProcessOptions options);
  ~InProcessCommunicator() override;

  int64_t num_ranks() const override;
  const InProcessOptions& options() const { return options_; }

  Status AllGather(const CollectiveCall& call, const DeviceGroups& groups, ConstBufferView in,
                   BufferView out, int dim) override;
  Status AllReduce(const CollectiveCall& call, const DeviceGroups& groups, ConstBufferView in,
                   BufferView out, ReductionKind reduction) override;
  Status ReduceScatter(const CollectiveCall& call, const DeviceGroups& groups,
                       ConstBufferView in, BufferView out, int dim,
                       ReductionKind reduction) override;
  Status AllToAll(const CollectiveCall& call, const DeviceGroups& groups, ConstBufferView in,
                  BufferView out, int split_dim, int concat_dim) override;
  Status AllToAllTuple(const CollectiveCall& call, const DeviceGroups& groups,
                       std::span<const ConstBufferView> ins,
                       std::span<const BufferView> outs) override;
  Status CollectivePermute(const CollectiveCall& call, const PermutePairs& pairs,
                           ConstBufferView in, BufferView out) override;
  Status CollectiveBroadcast(const CollectiveCall& call, const DeviceGroups& groups,
                             ConstBufferView in, BufferView out) override;
  Status Barrier(const CollectiveCall& call) override;
  Status Finish(int64_t rank, uint64_t handle) override;

  void Abort(const Status& reason) override;
  // OK, or the reason the communicator was aborted (the first failure since Reset()).
  Status abort_reason() const;
  void Leave(int64_t rank) override;
  void Reset() override;

 private:
  explicit InProcessCommunicator(InProcessOptions options);
  // Post (publish this rank's part, returning the call number) then Complete (rendezvous, data
  // movement, release), or only Post when the call is asynchronous.
  Status Run(const CollectiveCall& call, inprocess::OpSpec& spec);
  StatusOr<uint64_t> Post(const CollectiveCall& call, inprocess::OpSpec& spec);
  Status Complete(int64_t rank, uint64_t k);

  InProcessOptions options_;
  std::unique_ptr<inprocess::State> state_;
};

}  // namespace xs

#endif  // XSHARD_COMM_INPROCESS_COMMUNICATOR_H_
