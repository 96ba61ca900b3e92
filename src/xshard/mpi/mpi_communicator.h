// MpiCommunicator: the Communicator over devices spread across MPI processes. Each process hosts
// `devices_per_process` consecutive global device ids (process p: p*L .. p*L+L-1); a run's ranks
// index its device list, as for the in-process communicator. Each call is two-level: the calling
// process's device threads meet in-process (the last to arrive drives the call), then that thread
// exchanges a signature of the call with every process hosting a member of its devices' groups
// (mismatched programs fail like in-process ones, naming both calls), sends each such process the
// inputs of its devices that process needs and receives the ones its own devices need (with the
// signature when they fit eager_bytes, else after it; non-blocking point-to-point, polled), and
// finally computes every local device's output from the inputs in the in-process direct
// algorithms' order (so results match them bitwise). Bigger all-reduces where each process holds
// one group's share use MPI_Iallreduce over a cached group communicator (MPI_Comm_create_group)
// when MPI has the reducer for the dtype.
//
// Every wait is bounded by `timeout`: a process that never arrives, died or diverged makes every
// waiting process fail with an error naming that process, its devices, the collective and its
// group. Abort() also tells every other process, so their waits end at once. Calls are
// synchronous (async handles are 0).
#ifndef XSHARD_MPI_MPI_COMMUNICATOR_H_
#define XSHARD_MPI_MPI_COMMUNICATOR_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "xshard/comm/communicator.h"

namespace xs {

namespace mpi {
struct CommState;
}  // namespace mpi

struct MpiCommunicatorOptions {
  // The global device id of every rank (a run's device list); each must be < processes * L.
  std::vector<int64_t> device_ids;
  int64_t devices_per_process = 1;
  // Bound of every wait (local peers, remote processes, MPI requests).
  std::chrono::milliseconds timeout{30000};
  // MPI_Iallreduce for all-reduces it can do (false: always the point-to-point exchange).
  bool use_mpi_reductions = true;
  // Calls whose inputs for one peer process (devices_per_process x the per-device input) fit this
  // many bytes send them with the call's signature, one message each way instead of two rounds.
  int64_t eager_bytes = 16 * 1024;
};

class MpiCommunicator final : public Communicator {
 public:
  // Needs mpi::Initialize() first. Validates the options (ids in range and distinct, L >= 1,
  // timeout > 0).
  static StatusOr<std::unique_ptr<MpiCommunicator>> Create(MpiCommunicatorOptions options);
  ~MpiCommunicator() override;

  int64_t num_ranks() const override;
  // The ranks whose devices live in this process, ascending.
  const std::vector<int64_t>& local_ranks() const;
  // The process of every rank.
  const std::vector<int64_t>& process_of() const;

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

  // Local abort: fails this process's pending and later calls, and sends `reason` to every other
  // process (their pending and next calls fail with "process P: <reason>").
  void Abort(const Status& reason) override;
  Status abort_reason() const;
  void Leave(int64_t rank) override;
  void Reset() override;

 private:
  explicit MpiCommunicator(MpiCommunicatorOptions options);
  std::unique_ptr<mpi::CommState> state_;
};

}  // namespace xs

#endif  // XSHARD_MPI_MPI_COMMUNICATOR_H_
