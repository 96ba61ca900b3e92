// Communicators between cuda devices: virtual devices of one GPU exchange through
// VirtualGpuCommunicator's kernels, devices on separate GPUs through NCCL (in this process). Each
// rank enqueues on its device's compute stream (CudaDevices::Stream), the one its programs use.
// Every call first checks that its buffers are GPU memory: work that runs collectives on host
// arrays (shard_map and cmm bodies, the collective benchmark) fails with one line instead of
// handing host pointers to GPU kernels.
#include <algorithm>
#include <set>

#include "xshard/platform/cuda_devices.h"

#if defined(XSHARD_WITH_CUDA)
#include <cuda_runtime.h>

#include "xshard/cuda/nccl_communicator.h"
#include "xshard/cuda/virtual_gpu_communicator.h"
#endif

namespace xs {

#if defined(XSHARD_WITH_CUDA)
namespace {

// OK when `data` is device or managed memory (or the view is empty).
Status CheckDeviceBuffer(const CollectiveCall& call, std::string_view kind, const void* data,
                         int64_t bytes) {
  if (data == nullptr || bytes == 0) return OkStatus();
  cudaPointerAttributes a{};
  const cudaError_t e = cudaPointerGetAttributes(&a, data);
  if (e == cudaSuccess &&
      (a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged)) {
    return OkStatus();
  }
  if (e != cudaSuccess) (void)cudaGetLastError();  // clear the error it left (not sticky)
  return FailedPrecondition(
      kind, " '", call.op_name.empty() ? kind : call.op_name, "' on rank ", call.rank,
      " got a host buffer: on --platform cuda collectives run on GPU memory inside compiled "
      "programs; collectives on host arrays (shard_map and cmm bodies, bench collectives) need "
      "--platform cpu");
}

// Forwards to the GPU communicator after checking every buffer of the call.
class DeviceBuffersOnly final : public Communicator {
 public:
  explicit DeviceBuffersOnly(std::unique_ptr<Communicator> inner) : inner_(std::move(inner)) {}
  int64_t num_ranks() const override { return inner_->num_ranks(); }
  Status AllGather(const CollectiveCall& c, const DeviceGroups& g, ConstBufferView in,
                   BufferView out, int dim) override {
    XS_RETURN_IF_ERROR(Check(c, "all-gather", in, out));
    return inner_->AllGather(c, g, in, out, dim);
  }
  Status AllReduce(const CollectiveCall& c, const DeviceGroups& g, ConstBufferView in,
                   BufferView out, ReductionKind r) override {
    XS_RETURN_IF_ERROR(Check(c, "all-reduce", in, out));
    return inner_->AllReduce(c, g, in, out, r);
  }
  Status ReduceScatter(const CollectiveCall& c, const DeviceGroups& g, ConstBufferView in,
                       BufferView out, int dim, ReductionKind r) override {
    XS_RETURN_IF_ERROR(Check(c, "reduce-scatter", in, out));
    return inner_->ReduceScatter(c, g, in, out, dim, r);
  }
  Status AllToAll(const CollectiveCall& c, const DeviceGroups& g, ConstBufferView in,
                  BufferView out, int split_dim, int concat_dim) override {
    XS_RETURN_IF_ERROR(Check(c, "all-to-all", in, out));
    return inner_->AllToAll(c, g, in, out, split_dim, concat_dim);
  }
  Status AllToAllTuple(const CollectiveCall& c, const DeviceGroups& g,
                       std::span<const ConstBufferView> ins,
                       std::span<const BufferView> outs) override {
    for (size_t i = 0; i < ins.size() && i < outs.size(); ++i) {
      XS_RETURN_IF_ERROR(Check(c, "all-to-all", ins[i], outs[i]));
    }
    return inner_->AllToAllTuple(c, g, ins, outs);
  }
  Status CollectivePermute(const CollectiveCall& c, const PermutePairs& p, ConstBufferView in,
                           BufferView out) override {
    XS_RETURN_IF_ERROR(Check(c, "collective-permute", in, out));
    return inner_->CollectivePermute(c, p, in, out);
  }
  Status CollectiveBroadcast(const CollectiveCall& c, const DeviceGroups& g, ConstBufferView in,
                             BufferView out) override {
    XS_RETURN_IF_ERROR(Check(c, "collective-broadcast", in, out));
    return inner_->CollectiveBroadcast(c, g, in, out);
  }
  Status Barrier(const CollectiveCall& c) override { return inner_->Barrier(c); }
  Status Finish(int64_t rank, uint64_t handle) override { return inner_->Finish(rank, handle); }
  void Abort(const Status& reason) override { inner_->Abort(reason); }
  void Leave(int64_t rank) override { inner_->Leave(rank); }
  void Reset() override { inner_->Reset(); }

 private:
  static Status Check(const CollectiveCall& c, std::string_view kind, ConstBufferView in,
                      BufferView out) {
    XS_RETURN_IF_ERROR(CheckDeviceBuffer(c, kind, in.data, in.byte_size()));
    return CheckDeviceBuffer(c, kind, out.data, out.byte_size());
  }
  std::unique_ptr<Communicator> inner_;
};

}  // namespace

std::unique_ptr<Communicator> RefuseHostBuffers(std::unique_ptr<Communicator> comm) {
  return std::make_unique<DeviceBuffersOnly>(std::move(comm));
}
#else
std::unique_ptr<Communicator> RefuseHostBuffers(std::unique_ptr<Communicator> comm) {
  return comm;
}
#endif  // XSHARD_WITH_CUDA

StatusOr<std::unique_ptr<Communicator>> CreateCudaCommunicator(const CommunicatorSpec& spec,
                                                               CudaDevices& devices) {
  std::vector<int> gpus;
  std::set<int> distinct;
  std::vector<std::string> placed;
  for (int64_t d : spec.device_ids) {
    gpus.push_back(devices.GpuOf(d).ordinal);
    distinct.insert(gpus.back());
    placed.push_back(StrCat("cuda:", d, " on ", devices.slots()[d].ToString()));
  }
  const bool one_gpu = distinct.size() == 1;
  const bool one_each = distinct.size() == gpus.size();
  if (!one_gpu && !one_each) {
    return Unimplemented("collectives between devices on ", distinct.size(), " GPUs with several "
                         "devices on a GPU (", StrJoin(placed, ", "), ") need the virtual-device "
                         "and NCCL transports together, which is not implemented; use --devices "
                         "equal to the GPU count, or CUDA_VISIBLE_DEVICES=0 for one GPU");
  }
#if defined(XSHARD_WITH_CUDA)
  std::vector<cudaStream_t> streams;
  for (int64_t d : spec.device_ids) {
    XS_ASSIGN_OR_RETURN(void* s, devices.Stream(d));
    streams.push_back(static_cast<cudaStream_t>(s));
  }
  if (one_gpu) {
    cuda::VirtualGpuOptions o;
    o.gpu = gpus[0];
    o.streams = std::move(streams);
    o.device_ids = spec.device_ids;
    o.timeout = spec.timeout;
    XS_ASSIGN_OR_RETURN(std::unique_ptr<cuda::VirtualGpuCommunicator> comm,
                        cuda::VirtualGpuCommunicator::Create(std::move(o)));
    return RefuseHostBuffers(std::move(comm));
  }
  cuda::NcclOptions o;
  o.gpus = std::move(gpus);
  o.streams = std::move(streams);
  o.device_ids = spec.device_ids;
  o.timeout = spec.timeout;
  XS_ASSIGN_OR_RETURN(std::unique_ptr<cuda::NcclCommunicator> comm,
                      cuda::NcclCommunicator::Create(std::move(o)));
  return RefuseHostBuffers(std::move(comm));
#else
  return cuda::DeviceCount().status();
#endif
}

}  // namespace xs
