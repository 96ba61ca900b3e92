// The cuda layer of a build without the CUDA toolkit: every entry point says so, naming the CMake
// option that enables it.
#include "xshard/cuda/platform.h"

namespace xs::cuda {
namespace {

Status NotBuilt() {
  return Unimplemented("this xshard was built without CUDA support: install the CUDA toolkit "
                       "(12 or newer, with NCCL and cuDNN) and reconfigure with CMake "
                       "(XSHARD_WITH_CUDA=AUTO or ON)");
}

}  // namespace

bool BuiltWithCuda() { return false; }
StatusOr<int> DeviceCount() { return NotBuilt(); }
std::string DeviceInfo::ToString() const { return name; }
StatusOr<DeviceInfo> GetDeviceInfo(int) { return NotBuilt(); }
std::string NoGpuReason() { return "no GPU: " + std::string(NotBuilt().message()); }

}  // namespace xs::cuda
