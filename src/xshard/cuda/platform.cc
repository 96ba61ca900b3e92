// Device discovery through the CUDA runtime (linked statically; it opens the driver on first use).
#include "xshard/cuda/platform.h"

#include <cuda_runtime.h>

#include <cstdio>

#include "xshard/cuda/cuda_status.h"

namespace xs::cuda {

bool BuiltWithCuda() { return true; }

StatusOr<int> DeviceCount() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    return Annotate(CudaStatus(e, "cudaGetDeviceCount"), "no usable GPU: ");
  }
  if (n <= 0) return Unavailable("no usable GPU: cudaGetDeviceCount found 0 devices");
  return n;
}

std::string DeviceInfo::ToString() const {
  char buf[256];
  std::snprintf(buf, sizeof(buf), "%s (sm_%d%d, %d SMs, %.1f GiB)", name.c_str(), major, minor,
                multiprocessors, static_cast<double>(memory_bytes) / (1 << 30));
  return buf;
}

StatusOr<DeviceInfo> GetDeviceInfo(int ordinal) {
  XS_ASSIGN_OR_RETURN(const int n, DeviceCount());
  if (ordinal < 0 || ordinal >= n) {
    return InvalidArgument("GPU " + std::to_string(ordinal) + " does not exist: this process sees " +
                           std::to_string(n) + " GPU(s) (check CUDA_VISIBLE_DEVICES)");
  }
  cudaDeviceProp p{};
  XS_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&p, ordinal));
  DeviceInfo info;
  info.ordinal = ordinal;
  info.name = p.name;
  info.major = p.major;
  info.minor = p.minor;
  info.multiprocessors = p.multiProcessorCount;
  info.memory_bytes = static_cast<int64_t>(p.totalGlobalMem);
  info.shared_per_block_optin = static_cast<int64_t>(p.sharedMemPerBlockOptin);
  info.memory_bus_bits = p.memoryBusWidth;
  return info;
}

std::string NoGpuReason() {
  StatusOr<int> n = DeviceCount();
  if (n.ok()) return "";
  return "no GPU: " + std::string(n.status().message());
}

}  // namespace xs::cuda
