// The CUDA device kind's entry points that the layers above may call whether or not the build has
// CUDA: whether it was built, how many GPUs the driver shows, and what each one is. No CUDA header
// is included here, so callers compile the same either way (a build without the toolkit links
// cuda_unavailable.cc, whose calls say so).
#ifndef XSHARD_CUDA_PLATFORM_H_
#define XSHARD_CUDA_PLATFORM_H_

#include <cstdint>
#include <string>

#include "xshard/base/status.h"

namespace xs::cuda {

// True when this xshard was built with the CUDA toolkit (XSHARD_WITH_CUDA).
bool BuiltWithCuda();

// GPUs the driver shows to this process (CUDA_VISIBLE_DEVICES applies). No driver, no GPU or a
// build without CUDA is an error of one line naming what CUDA said, e.g.
//   "--platform cuda: no usable GPU: cudaGetDeviceCount failed: CUDA driver version is
//    insufficient for CUDA runtime version (cudaErrorInsufficientDriver)"
StatusOr<int> DeviceCount();

struct DeviceInfo {
  int ordinal = 0;
  std::string name;               // "NVIDIA H200"
  int major = 0, minor = 0;       // compute capability (9.0 on Hopper)
  int multiprocessors = 0;        // SMs
  int64_t memory_bytes = 0;       // global memory
  int64_t shared_per_block_optin = 0;
  int memory_bus_bits = 0;
  std::string ToString() const;   // "NVIDIA H200 (sm_90, 132 SMs, 139.8 GiB)"
};
// Properties of GPU `ordinal` (0 <= ordinal < DeviceCount()).
StatusOr<DeviceInfo> GetDeviceInfo(int ordinal);

// The one line tests print when they skip for want of a GPU: "no GPU: <DeviceCount's error>".
std::string NoGpuReason();

}  // namespace xs::cuda

#endif  // XSHARD_CUDA_PLATFORM_H_
