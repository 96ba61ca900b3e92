// Platform selection: names (given, from $XSHARD_PLATFORM, unknown), the cpu platform's kind and
// transports, and the cuda platform's one-line error where no GPU is usable (this test machine).
#include "xshard/platform/platform.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "xshard/cuda/platform.h"
#include "xshard/testing/value_or_fail.h"

namespace xs {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// Sets $XSHARD_PLATFORM for one test (unset when `value` is null), restoring it after.
class ScopedPlatformEnv {
 public:
  explicit ScopedPlatformEnv(const char* value) {
    if (const char* old = std::getenv("XSHARD_PLATFORM")) old_ = old;
    if (value == nullptr) {
      unsetenv("XSHARD_PLATFORM");
    } else {
      setenv("XSHARD_PLATFORM", value, 1);
    }
  }
  ~ScopedPlatformEnv() {
    if (old_.empty()) {
      unsetenv("XSHARD_PLATFORM");
    } else {
      setenv("XSHARD_PLATFORM", old_.c_str(), 1);
    }
  }

 private:
  std::string old_;
};

TEST(PlatformTest, NamesResolveFromTheArgumentThenTheEnvironmentThenCpu) {
  ScopedPlatformEnv env(nullptr);
  EXPECT_EQ(testing::ValueOrFail(ResolvePlatformName("")), "cpu");
  EXPECT_EQ(testing::ValueOrFail(ResolvePlatformName("cuda")), "cuda");
  setenv("XSHARD_PLATFORM", "cuda", 1);
  EXPECT_EQ(testing::ValueOrFail(ResolvePlatformName("")), "cuda");
  EXPECT_EQ(testing::ValueOrFail(ResolvePlatformName("cpu")), "cpu");  // the argument wins
}

TEST(PlatformTest, UnknownNamesListTheValidOnes) {
  ScopedPlatformEnv env("tpu");
  EXPECT_EQ(ResolvePlatformName("gpu").status().message(),
            "unknown platform 'gpu'; the platforms are cpu, cuda");
  EXPECT_EQ(ResolvePlatformName("").status().message(),
            "unknown XSHARD_PLATFORM 'tpu'; the platforms are cpu, cuda");
  ClientOptions o;
  EXPECT_EQ(CreateClient("gpu", o).status().code(), StatusCode::kInvalidArgument);
}

TEST(PlatformTest, CpuClientsAreHostThreadsInOneProcess) {
  ClientOptions o;
  o.num_devices = 3;
  auto client = testing::ValueOrFail(CreateClient("cpu", o));
  EXPECT_EQ(client->num_devices(), 3);
  EXPECT_EQ(client->device_kind().name(), "cpu");
  EXPECT_EQ(client->communicators().name(), "in-process");
  EXPECT_EQ(client->device(2).ToString(), "cpu:2");
  ASSERT_TRUE(ConfigureClient("cpu", /*distributed=*/true, o).ok());
  EXPECT_EQ(o.communicators->name(), "mpi");
  EXPECT_TRUE(o.communicators->distributed());
}

TEST(PlatformTest, CudaWithoutAGpuIsOneLineNamingWhatCudaSaid) {
  if (cuda::DeviceCount().ok()) GTEST_SKIP() << "a GPU is visible here";
  const Status check = CheckPlatform("cuda");
  ASSERT_FALSE(check.ok());
  ClientOptions o;
  o.num_devices = 2;
  StatusOr<std::unique_ptr<Client>> made = CreateClient("cuda", o);
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.status().message(), check.message());
  EXPECT_EQ(std::string(check.message()).find('\n'), std::string::npos);
  if (cuda::BuiltWithCuda()) {
    EXPECT_THAT(std::string(check.message()),
                StartsWith("no usable GPU: cudaGetDeviceCount failed: "));
  } else {
    EXPECT_THAT(std::string(check.message()), HasSubstr("built without CUDA"));
  }
  EXPECT_TRUE(CheckPlatform("cpu").ok());
}

}  // namespace
}  // namespace xs
