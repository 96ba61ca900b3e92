// Host memory of a sharded run: the estimate's parts worked out by hand for small programs, the
// refusal message, and the $XSHARD_HOST_MEMORY parsing.
#include "xshard/jit/host_memory.h"

#include <cstdlib>

#include <gtest/gtest.h>

#include "xshard/text/parser.h"
#include "xshard/testing/value_or_fail.h"

namespace xs {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

std::unique_ptr<ShardedProgram> Compile(const std::string& sharding, int64_t n) {
  std::unique_ptr<Module> m = testing::ValueOrFail(ParseHloModule(StrCat(R"(HloModule neg
ENTRY e {
  x = f32[1024,1024] parameter(0), sharding=)", sharding, R"(
  ROOT y = f32[1024,1024] negate(x), sharding=)", sharding, "\n}\n")));
  return testing::ValueOrFail(ShardedProgram::Compile(*m, n));
}

// x (4 MiB) split in 4 row blocks: 4 x 1 MiB shards and each device's 1 MiB result during the
// run (4 + 8 = 12 MiB); after it the arguments, the devices' 4 MiB of results and the reference's
// 4 MiB negation (12 MiB), and 4 MiB more when the outputs are assembled into a global copy.
TEST(HostMemoryTest, TiledArgumentsAreShardedOnceAndEachDeviceHoldsItsResult) {
  const HostMemoryEstimate e = EstimateHostMemory(*Compile("{devices=[4,1]<=[4]}", 4), true, false);
  EXPECT_EQ(e.argument_bytes, 4 * kMiB);
  EXPECT_EQ(e.device_bytes, 8 * kMiB);
  EXPECT_EQ(e.reference_bytes, 4 * kMiB);
  EXPECT_EQ(e.global_output_bytes, 0);
  EXPECT_EQ(e.peak_bytes, 12 * kMiB);
  const HostMemoryEstimate gathered = EstimateHostMemory(*Compile("{devices=[4,1]<=[4]}", 4), true, true);
  EXPECT_EQ(gathered.global_output_bytes, 4 * kMiB);
  EXPECT_EQ(gathered.peak_bytes, 16 * kMiB);
}

// A replicated argument is read by every device from the caller's array (ShardedProgram::Run makes
// no copies): the devices hold only their own 4 MiB results (16 MiB for 4 devices, not 32).
TEST(HostMemoryTest, AReplicatedArgumentCountsOnceNotOncePerDevice) {
  const HostMemoryEstimate e = EstimateHostMemory(*Compile("{replicated}", 4), false, false);
  EXPECT_EQ(e.argument_bytes, 4 * kMiB);
  EXPECT_EQ(e.device_bytes, 16 * kMiB);
  EXPECT_EQ(e.reference_bytes, 0);
  EXPECT_EQ(e.peak_bytes, 20 * kMiB);
}

TEST(HostMemoryTest, ARunOverTheLimitIsUnsupportedNamingTheParts) {
  std::unique_ptr<ShardedProgram> p = Compile("{devices=[4,1]<=[4]}", 4);
  EXPECT_TRUE(CheckHostMemory(*p, true, true, 16 * kMiB).ok());
  EXPECT_TRUE(CheckHostMemory(*p, true, false, 12 * kMiB).ok());
  Status s = CheckHostMemory(*p, true, true, 16 * kMiB - 1);
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_EQ(s.message(),
            "unsupported: running 'neg' on 4 virtual devices in this process needs about 16.00MiB of host "
            "memory (4.00MiB of global arguments, 8.00MiB on the 4 virtual devices, 4.00MiB for the assembled "
            "outputs, 4.00MiB for the --check reference), more than the 16.00MiB it may use ($XSHARD_HOST_MEMORY, "
            "else the memory available)");
}

TEST(HostMemoryTest, LimitComesFromTheEnvironmentWithBinarySuffixes) {
  const char* saved = std::getenv("XSHARD_HOST_MEMORY");
  const std::string restore = saved ? saved : "";
  setenv("XSHARD_HOST_MEMORY", "8G", 1);
  StatusOr<std::optional<int64_t>> limit = HostMemoryLimit();
  ASSERT_TRUE(limit.ok());
  EXPECT_EQ(**limit, int64_t{8} << 30);
  setenv("XSHARD_HOST_MEMORY", "1536", 1);
  EXPECT_EQ(**HostMemoryLimit(), 1536);
  setenv("XSHARD_HOST_MEMORY", "12x", 1);
  StatusOr<std::optional<int64_t>> bad = HostMemoryLimit();
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("$XSHARD_HOST_MEMORY='12x' is not a positive byte count"), std::string::npos);
  unsetenv("XSHARD_HOST_MEMORY");
  StatusOr<std::optional<int64_t>> available = HostMemoryLimit();
  ASSERT_TRUE(available.ok());
  if (*available) {
    EXPECT_GT(**available, 0);
  }
  if (saved) setenv("XSHARD_HOST_MEMORY", restore.c_str(), 1);
}

}  // namespace
}  // namespace xs
