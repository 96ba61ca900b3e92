// The cuda platform's discovery: with a GPU it reports one; without one (this build machine, CI)
// the error is one line naming what CUDA said, and GPU tests skip with that line.
#include "xshard/cuda/platform.h"

#include <gtest/gtest.h>

namespace xs::cuda {
namespace {

TEST(CudaPlatform, DeviceCountIsAGpuOrOneLineError) {
  StatusOr<int> n = DeviceCount();
  if (n.ok()) {
    EXPECT_GE(*n, 1);
    StatusOr<DeviceInfo> info = GetDeviceInfo(0);
    ASSERT_TRUE(info.ok()) << info.status().message();
    EXPECT_GE(info->major, 5);
    EXPECT_GT(info->memory_bytes, 0);
    EXPECT_FALSE(GetDeviceInfo(*n).ok());
    EXPECT_TRUE(NoGpuReason().empty());
    return;
  }
  const std::string m = n.status().message();
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  if (BuiltWithCuda()) {
    EXPECT_NE(m.find("no usable GPU"), std::string::npos) << m;
  } else {
    EXPECT_NE(m.find("without CUDA"), std::string::npos) << m;
  }
  EXPECT_EQ(NoGpuReason(), "no GPU: " + m);
}

}  // namespace
}  // namespace xs::cuda
