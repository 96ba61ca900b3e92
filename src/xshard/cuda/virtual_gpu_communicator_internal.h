// Private to VirtualGpuCommunicator: per-rank streams and events, what one call asks for, and
// what each rank publishes at a call's first rendezvous.
#ifndef XSHARD_CUDA_VIRTUAL_GPU_COMMUNICATOR_INTERNAL_H_
#define XSHARD_CUDA_VIRTUAL_GPU_COMMUNICATOR_INTERNAL_H_

#include <set>
#include <vector>

#include "xshard/cuda/virtual_gpu_communicator.h"
#include "xshard/cuda/virtual_gpu_kernels.h"

namespace xs::cuda {

struct VirtualGpuCommunicator::Rank {
  cudaStream_t compute = nullptr;
  cudaStream_t comm = nullptr;
  cudaEvent_t in_ready = nullptr, read_done = nullptr, phase_done = nullptr;
  cudaEvent_t finished[16] = {};
  uint64_t calls = 0;
  std::set<uint64_t> started;  // asynchronous calls not finished yet
  std::vector<std::byte> descs, sync;

  ~Rank() {
    for (cudaEvent_t e : finished) {
      if (e != nullptr) cudaEventDestroy(e);
    }
    if (in_ready != nullptr) cudaEventDestroy(in_ready);
    if (read_done != nullptr) cudaEventDestroy(read_done);
    if (phase_done != nullptr) cudaEventDestroy(phase_done);
    if (comm != nullptr) cudaStreamDestroy(comm);
  }
};

struct VirtualGpuCommunicator::Op {
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

// What each rank publishes at the first rendezvous; followed by `ntuple` input pointers.
struct VirtualGpuCommunicator::Header {
  int32_t kind, reduction, dtype, rank;
  int32_t dim0, dim1, ntuple, pad;
  int64_t dims[kMaxCollectiveDims];
  const std::byte* in;
  std::byte* out;
  cudaEvent_t in_ready, read_done, phase_done;
};

}  // namespace xs::cuda

#endif  // XSHARD_CUDA_VIRTUAL_GPU_COMMUNICATOR_INTERNAL_H_
