// The kernels behind collectives between virtual devices of one GPU: one kernel reads the peers'
// buffers directly (one address space) and writes the caller's output. Two generated sources: a
// strided multi-piece copy (all-gather, all-to-all, permute, broadcast), and an element-wise
// reduction per (reducer, dtype) with XLA's semantics (comm/reduction.h: left to right in group
// order, 16-bit floats rounded after every step, integers wrapping, NaN-propagating min / max).
// Both load and store 16 bytes at a time when every pointer and stride allows it.
#ifndef XSHARD_CUDA_VIRTUAL_GPU_KERNELS_H_
#define XSHARD_CUDA_VIRTUAL_GPU_KERNELS_H_

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/comm/communicator.h"
#include "xshard/cuda/kernel_source.h"

namespace xs::cuda {

// The most peers one kernel reads (pointers travel in the kernel's parameters).
inline constexpr int kMaxCollectivePeers = 64;
// The most dims a strided copy keeps after merging contiguous dims.
inline constexpr int kMaxCopyDims = 6;

// The most dims of an array a GPU collective takes.
inline constexpr int kMaxCollectiveDims = 8;

// One rank's collective arguments, checked before it publishes anything (XLA's shape rules from
// comm/collective_shapes.h, the reducer against the dtype, tuple operand counts and shapes).
// `n` is the size of the rank's group.
struct CollectiveArgs {
  CollectiveKind kind = CollectiveKind::kBarrier;
  ReductionKind reduction = ReductionKind::kSum;
  int dim0 = 0, dim1 = 0;
  ConstBufferView in;
  BufferView out;
  std::span<const ConstBufferView> tuple_in;
  std::span<const BufferView> tuple_out;
};
Status CheckCollectiveArgs(const CollectiveArgs& args, std::string_view name, int64_t n);

// The copy kernel's source (entry point xs_collective_copy).
KernelSource CollectiveCopySource();
// The reduction kernel of `reduction` over `dtype` (entry point xs_collective_reduce). Error
// (Unimplemented, naming both) for complex, s4 / u4 and f8 types; and / or on floats are
// InvalidArgument as in comm/reduction.h.
StatusOr<KernelSource> CollectiveReduceSource(ReductionKind reduction, DType dtype);
// Every source the virtual-GPU communicator can generate (for compile checks).
std::vector<KernelSource> AllCollectiveSources();

// One strided copy of several pieces of equal shape: piece p copies `dims` elements (row-major
// index space) from src[p] (element strides src_strides) to dst[p] (dst_strides).
struct CopyJob {
  std::vector<const std::byte*> src;
  std::vector<std::byte*> dst;
  std::vector<int64_t> dims, src_strides, dst_strides;  // in elements
  int64_t element_bytes = 4;
};
// Enqueues `job` on `stream` of GPU `device` (merging contiguous dims, widening the unit to 16
// bytes where the pointers and strides allow). Error when more than kMaxCollectivePeers pieces or
// more than kMaxCopyDims dims remain after merging.
Status EnqueueCopy(const CopyJob& job, int device, cudaStream_t stream);

// out[r, i] = srcs[0][r, i] (op) srcs[1][r, i] (op) ... for `rows` rows of `row_elements`
// elements; source rows start src_row_stride elements apart, output rows row_elements apart.
struct ReduceJob {
  ReductionKind reduction = ReductionKind::kSum;
  DType dtype = DType::kF32;
  std::vector<const std::byte*> srcs;
  std::byte* out = nullptr;
  int64_t rows = 1, row_elements = 0, src_row_stride = 0;
};
Status EnqueueReduce(const ReduceJob& job, int device, cudaStream_t stream);

// A launch of xs_collective_copy / xs_collective_reduce prepared without a GPU (what Enqueue*
// launches; tests run it on the host): the kernel's one by-value parameter as bytes (empty when
// there is nothing to do) and the geometry (blockIdx.y is the piece of a copy).
struct CollectiveLaunch {
  std::vector<std::byte> params;
  dim3 grid, block;
};
StatusOr<CollectiveLaunch> PrepareCopy(const CopyJob& job);
StatusOr<CollectiveLaunch> PrepareReduce(const ReduceJob& job);

}  // namespace xs::cuda

#endif  // XSHARD_CUDA_VIRTUAL_GPU_KERNELS_H_
