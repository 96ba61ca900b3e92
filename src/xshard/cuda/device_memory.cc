// RAII device and pinned host memory over the CUDA runtime.
#include "xshard/cuda/device_memory.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <utility>

#include "xshard/cuda/cuda_status.h"

namespace xs::cuda {

std::string BytesText(int64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[64];
  if (u == 0) {
    std::snprintf(buf, sizeof(buf), "%lld B", static_cast<long long>(bytes));
  } else {
    std::snprintf(buf, sizeof(buf), "%.2f %s", v, kUnits[u]);
  }
  return buf;
}

ScopedDevice::ScopedDevice(int device) {
  if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
  if (previous_ != device) status_ = CudaStatus(cudaSetDevice(device), StrCat("cudaSetDevice(", device, ")"));
}

ScopedDevice::~ScopedDevice() {
  int now = -1;
  if (previous_ >= 0 && cudaGetDevice(&now) == cudaSuccess && now != previous_) cudaSetDevice(previous_);
}

StatusOr<DeviceMemoryInfo> GetDeviceMemoryInfo(int device) {
  ScopedDevice scope(device);
  XS_RETURN_IF_ERROR(scope.status());
  size_t free = 0, total = 0;
  XS_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free, &total));
  return DeviceMemoryInfo{static_cast<int64_t>(free), static_cast<int64_t>(total)};
}

StatusOr<DeviceBuffer> DeviceBuffer::Allocate(int device, int64_t bytes, std::string_view what) {
  if (bytes < 0) return Internal("DeviceBuffer::Allocate of ", bytes, " bytes for ", what);
  DeviceBuffer b;
  b.device_ = device;
  if (bytes == 0) return b;
  ScopedDevice scope(device);
  XS_RETURN_IF_ERROR(scope.status());
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, static_cast<size_t>(bytes));
  if (e != cudaSuccess) {
    const std::string call = StrCat("cudaMalloc(", BytesText(bytes), ") on GPU ", device, " for ", what);
    if (e != cudaErrorMemoryAllocation) return CudaStatus(e, call);
    cudaGetLastError();  // clear the sticky-free error state of the failed allocation
    std::string free_text;
    StatusOr<DeviceMemoryInfo> info = GetDeviceMemoryInfo(device);
    if (info.ok()) {
      free_text = StrCat("; ", BytesText(info->free_bytes), " of ", BytesText(info->total_bytes), " free");
    }
    return ResourceExhausted(call, " failed: out of memory", free_text,
                             " (fewer devices per GPU or smaller shards need less)");
  }
  b.data_ = static_cast<std::byte*>(p);
  b.bytes_ = bytes;
  return b;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    Free();
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    device_ = std::exchange(other.device_, -1);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() { Free(); }

void DeviceBuffer::Free() {
  if (data_ == nullptr) return;
  ScopedDevice scope(device_);
  cudaFree(data_);  // an error here (a lost device) has no one to report to
  data_ = nullptr;
}

StatusOr<PinnedHostBuffer> PinnedHostBuffer::Allocate(int64_t bytes, std::string_view what) {
  PinnedHostBuffer b;
  if (bytes <= 0) return b;
  void* p = nullptr;
  XS_RETURN_IF_ERROR(CudaStatus(cudaMallocHost(&p, static_cast<size_t>(bytes)),
                                StrCat("cudaMallocHost(", BytesText(bytes), ") for ", what)));
  b.data_ = static_cast<std::byte*>(p);
  b.bytes_ = bytes;
  return b;
}

PinnedHostBuffer& PinnedHostBuffer::operator=(PinnedHostBuffer&& other) noexcept {
  if (this != &other) {
    Free();
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

PinnedHostBuffer::~PinnedHostBuffer() { Free(); }

void PinnedHostBuffer::Free() {
  if (data_ != nullptr) cudaFreeHost(data_);
  data_ = nullptr;
}

}  // namespace xs::cuda
