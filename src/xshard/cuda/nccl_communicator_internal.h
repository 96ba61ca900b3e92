// Private to NcclCommunicator: per-rank streams and communicators, the watchdog's shared state, and
// what one call asks for.
#ifndef XSHARD_CUDA_NCCL_COMMUNICATOR_INTERNAL_H_
#define XSHARD_CUDA_NCCL_COMMUNICATOR_INTERNAL_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "xshard/cuda/nccl_api.h"
#include "xshard/cuda/nccl_communicator.h"

namespace xs::cuda {

using NcclClock = std::chrono::steady_clock;

struct NcclCommunicator::Shared {
  const NcclApi* api = nullptr;
  std::chrono::milliseconds timeout{30000};
  std::atomic<bool> aborted{false};
  std::mutex mu;
  Status abort_status;               // guarded by mu
  std::vector<ncclComm_t> comms;     // every communicator created (guarded by mu)
  struct Pending {
    cudaEvent_t event;
    NcclClock::time_point deadline;
    std::string what;
  };
  std::vector<Pending> pending;      // guarded by mu
  std::condition_variable cv;
  bool stop = false;                 // guarded by mu
  std::thread watchdog;

  // The first reason wins; aborts every NCCL communicator once (their waiting kernels end).
  void AbortAll(const Status& reason);
  Status AbortStatus();
  // Polls `comm` until its pending non-blocking operation ends; at the deadline aborts everything
  // with DeadlineExceeded "<what>: ...".
  Status Settle(ncclComm_t comm, NcclClock::time_point deadline, const std::string& what);
  void Watch();  // the watchdog thread's loop
};

struct NcclCommunicator::Rank {
  int64_t rank = 0;  // global
  int gpu = 0;
  cudaStream_t compute = nullptr, comm = nullptr;
  ncclComm_t world = nullptr;
  std::map<uint64_t, ncclComm_t> groups;  // by DeviceGroups fingerprint; null: in no group
  cudaEvent_t in_ready = nullptr;
  cudaEvent_t finished[16] = {};
  uint64_t calls = 0;
  std::set<uint64_t> started;
  void* scratch[2] = {nullptr, nullptr};
  int64_t scratch_bytes[2] = {0, 0};
  bool left = false;

  // scratch[i] with at least `bytes` bytes (grown once, kept).
  StatusOr<std::byte*> Scratch(int i, int64_t bytes);
  ~Rank();
};

struct NcclCommunicator::Op {
  CollectiveKind kind = CollectiveKind::kBarrier;
  const DeviceGroups* groups = nullptr;
  const PermutePairs* pairs = nullptr;
  ReductionKind reduction = ReductionKind::kSum;
  int dim0 = 0, dim1 = 0;
  ConstBufferView in;
  BufferView out;
  std::span<const ConstBufferView> tuple_in;
  std::span<const BufferView> tuple_out;
};

// NCCL's element type for `dtype`, or nullopt (s16, u16, complex, s4 / u4, f8 other than e4m3fn /
// e5m2). Data movement needs none: it moves bytes.
std::optional<ncclDataType_t> NcclType(DType dtype);
// NCCL's reduction for XLA's `reduction` on `dtype` (pred and / or as min / max), or
// Unimplemented naming the op and the dtype.
StatusOr<ncclRedOp_t> NcclReduction(ReductionKind reduction, DType dtype, std::string_view op);

}  // namespace xs::cuda

#endif  // XSHARD_CUDA_NCCL_COMMUNICATOR_INTERNAL_H_
