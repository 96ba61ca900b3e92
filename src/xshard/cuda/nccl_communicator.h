// NcclCommunicator: collectives between devices on separate GPUs through NCCL, in one process
// (one rank per local GPU) or across processes (under mpirun: the NCCL id shared through a
// caller-provided callback, so this layer includes no MPI header). Each distinct group set gets
// its own NCCL communicator (ncclCommSplit, cached); all-to-all and collective-permute are
// ncclSend / ncclRecv pairs in one group call; layouts NCCL cannot address (gathering or
// scattering along an inner dim) go through a scratch buffer and the virtual-GPU copy kernel.
//
// NCCL calls are asynchronous: a peer that never arrives leaves the GPU waiting, not the host. A
// watchdog thread tracks every enqueued collective; one not complete within the timeout aborts
// every NCCL communicator (ncclCommAbort, which ends the waiting kernels) and makes this and every
// later call fail with an error naming the op, its channel and the devices. "Returns" means
// enqueued on the rank's compute stream, as for VirtualGpuCommunicator.
#ifndef XSHARD_CUDA_NCCL_COMMUNICATOR_H_
#define XSHARD_CUDA_NCCL_COMMUNICATOR_H_

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "xshard/comm/communicator.h"

namespace xs::cuda {

struct NcclOptions {
  // This process's ranks: the GPU and the compute stream (not owned) of each.
  std::vector<int> gpus;
  std::vector<cudaStream_t> streams;
  // Every process's ranks together; 0 means gpus.size() (one process). This process holds ranks
  // first_rank .. first_rank + gpus.size() - 1, and CollectiveCall::rank is that global rank.
  int64_t num_ranks = 0;
  int64_t first_rank = 0;
  // Multi-process only: called on every process with the id the process of rank 0 created
  // (filled in there); it must deliver that id to every other process (e.g. an MPI broadcast
  // from the process of rank 0). Unset in one process.
  std::function<Status(ncclUniqueId*)> share_id;
  std::vector<int64_t> device_ids;  // for messages; empty: rank r is device r
  std::chrono::milliseconds timeout{30000};
};

class NcclCommunicator final : public Communicator {
 public:
  // Validates the options and creates the NCCL communicators (non-blocking, so a process that
  // never joins fails the creation at the timeout instead of hanging it).
  static StatusOr<std::unique_ptr<NcclCommunicator>> Create(NcclOptions options);
  ~NcclCommunicator() override;

  int64_t num_ranks() const override;

  Status AllGather(const CollectiveCall& call, const DeviceGroups& groups, ConstBufferView in,
                   BufferView out, int dim) override;
  // Reductions map to NCCL's sum / prod / min / max; and / or only on pred (as min / max); s16,
  // u16 and complex types have no NCCL type (Unimplemented naming the op and the dtype). Floats'
  // min / max follow NCCL's handling of NaN, which XLA's NaN propagation need not match.
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
  // A one-element all-reduce, waited for on the host (bounded by the timeout).
  Status Barrier(const CollectiveCall& call) override;
  Status Finish(int64_t rank, uint64_t handle) override;

  void Abort(const Status& reason) override;
  void Leave(int64_t rank) override;
  void Reset() override;

  struct Rank;
  struct Shared;
  struct Op;

 private:
  NcclCommunicator() = default;
  Status Run(const CollectiveCall& call, Op& op);

  NcclOptions options_;
  std::unique_ptr<Shared> shared_;
  std::vector<std::unique_ptr<Rank>> ranks_;  // local ranks
};

}  // namespace xs::cuda

#endif  // XSHARD_CUDA_NCCL_COMMUNICATOR_H_
