// VirtualGpuCommunicator: collectives between N virtual devices of one GPU, each with its own
// compute stream. The host side is the in-process communicator's rendezvous (matching, timeouts
// naming the op, the channel and who arrived): each rank publishes its buffers' device addresses
// and events through an all-gather of a small descriptor. The device side runs on the streams:
//
//   rank r:  record in_ready[r] on its compute stream             (its producers of `in` are done)
//            host rendezvous 1: descriptors (pointers, events) of the group
//            on stream S (compute, or r's communication stream for a started call):
//              wait in_ready of every peer r reads; one kernel reads the peers' `in` directly
//              and writes r's `out`; record read_done[r]
//            host rendezvous 2 (so every read_done is recorded before anyone waits on it)
//            on S: wait read_done of every peer that reads r's `in`; record finished[r][call]
//
// All-reduces of 256 KiB or more per member take two phases (each member reduces its slice of
// everyone's input into its own output; after another rendezvous and the peers' phase events it
// copies the other slices from the peers' outputs): ~3 input sizes of memory traffic per member
// instead of m + 1. So each collective ends with a cross-stream event barrier: when a rank's stream passes it, no
// peer still reads its `in`, and the executor may overwrite `in` with later work on that stream.
// A call with CollectiveCall::async_handle runs on the rank's communication stream and Finish
// makes the compute stream wait for it (the compute stream keeps running in between); a plain call
// runs on the compute stream itself. "Returns" means enqueued: `out` holds the result for work
// enqueued later on the rank's compute stream, never for the host.
#ifndef XSHARD_CUDA_VIRTUAL_GPU_COMMUNICATOR_H_
#define XSHARD_CUDA_VIRTUAL_GPU_COMMUNICATOR_H_

#include <cuda_runtime.h>

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "xshard/comm/communicator.h"

namespace xs {
class InProcessCommunicator;
}

namespace xs::cuda {

struct VirtualGpuOptions {
  int gpu = 0;  // the CUDA ordinal every rank lives on
  // The compute stream of each rank (not owned; on `gpu`); num_ranks = streams.size().
  std::vector<cudaStream_t> streams;
  // Device ids for messages; empty: rank r is device r.
  std::vector<int64_t> device_ids;
  // How long a rank waits at a rendezvous before the communicator fails (DeadlineExceeded naming
  // the op, its channel and the devices that arrived and did not).
  std::chrono::milliseconds timeout{30000};
};

class VirtualGpuCommunicator final : public Communicator {
 public:
  // Validates the options (1..64 ranks, device ids, timeout). Needs no GPU: each rank creates its
  // communication stream and events on `gpu` at its first call (after checking the call's
  // arguments, so argument errors are reported the same with or without a GPU).
  static StatusOr<std::unique_ptr<VirtualGpuCommunicator>> Create(VirtualGpuOptions options);
  ~VirtualGpuCommunicator() override;

  int64_t num_ranks() const override;

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
  // A host rendezvous of every rank (no stream work).
  Status Barrier(const CollectiveCall& call) override;
  // Makes `rank`'s compute stream wait for the started call `handle` (no host wait).
  Status Finish(int64_t rank, uint64_t handle) override;

  void Abort(const Status& reason) override;
  void Leave(int64_t rank) override;
  void Reset() override;

  struct Rank;  // per-rank streams, events and call counters (virtual_gpu_communicator.cc)
  struct Op;    // what one call asks for
  struct Header;  // what a rank publishes at a call's first rendezvous

 private:
  explicit VirtualGpuCommunicator(VirtualGpuOptions options);
  Status Run(const CollectiveCall& call, Op& op);
  Status RunOnRank(const CollectiveCall& call, Op& op);
  Status TwoPhaseAllReduce(const Op& op, Rank& me, const std::vector<Header>& members,
                           int64_t me_pos, cudaStream_t stream,
                           const std::function<Status()>& rendezvous);

  VirtualGpuOptions options_;
  std::unique_ptr<InProcessCommunicator> host_;
  std::vector<std::unique_ptr<Rank>> ranks_;
};

}  // namespace xs::cuda

#endif  // XSHARD_CUDA_VIRTUAL_GPU_COMMUNICATOR_H_
