// HardwareProfile: rates by hand-computed interpolation, the text format (round trip, every error
// naming file and line, no crash on any mutation of a valid file), this machine's profile, and
// every profile the repository ships in hardware/.
#include "xshard/spmd/hardware_profile.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

namespace xs::spmd {
namespace {

constexpr std::string_view kValid = R"(# a test machine
name = test box
source = made up for the test # not a comment here
shared_host = false
memory_gbps = 20   # GB/s
gemm f32 1e6 = 10
gemm f32 1e8 = 1000
gemm bf16 1e8 = 2000
collective all-reduce 2 = 10 us, 5 GB/s
collective all-reduce 8 = 40 us, 11 GB/s
collective all-gather 4 = 7 us, 3 GB/s
)";

HardwareProfile Valid() {
  StatusOr<HardwareProfile> p = ParseHardwareProfile(kValid, "t.profile");
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? *p : HardwareProfile{};
}

TEST(HardwareProfileTest, ParsesEveryField) {
  const HardwareProfile p = Valid();
  EXPECT_EQ(p.name, "test box");
  EXPECT_EQ(p.source, "made up for the test # not a comment here");
  EXPECT_FALSE(p.shared_host);
  EXPECT_EQ(p.memory_gbps, 20);
  ASSERT_EQ(p.gemm.at(DType::kF32).size(), 2u);
  EXPECT_EQ(p.gemm.at(DType::kF32)[1], (std::pair<double, double>{1e8, 1000}));
  EXPECT_EQ(p.collectives.at("all-reduce").at(8), (CollectiveRate{40, 11}));
}

TEST(HardwareProfileTest, GemmRateInterpolatesLogLogAndClamps) {
  const HardwareProfile p = Valid();
  // 1e7 is halfway between 1e6 and 1e8 in log: sqrt(10 * 1000) = 100 GFLOP/s -> 1e7 / 1e11 s.
  EXPECT_NEAR(p.DotSeconds(DType::kF32, 1e7, 8), 1e-4, 1e-12);
  // Below the first point: 10 GFLOP/s; above the last: 1000 GFLOP/s.
  EXPECT_NEAR(p.DotSeconds(DType::kF32, 1e5, 8), 1e-5, 1e-15);
  EXPECT_NEAR(p.DotSeconds(DType::kF32, 1e10, 8), 1e-2, 1e-12);
  // bf16 has its own single point; f16 has none and uses f32's.
  EXPECT_NEAR(p.DotSeconds(DType::kBF16, 1e7, 8), 1e7 / 2e12, 1e-15);
  EXPECT_NEAR(p.DotSeconds(DType::kF16, 1e7, 8), 1e-4, 1e-12);
  EXPECT_EQ(p.DotSeconds(DType::kF32, 0, 8), 0);
}

TEST(HardwareProfileTest, ConvRateFromItsTableElseTheGemmRate) {
  HardwareProfile p = Valid();
  // No conv lines: a convolution is priced as a GEMM of its FLOPs.
  EXPECT_EQ(p.ConvSeconds(DType::kF32, 1e7, 8), p.DotSeconds(DType::kF32, 1e7, 8));
  auto parsed = ParseHardwareProfile(std::string(kValid) + "conv f32 1e6 = 5\nconv f32 1e8 = 500\n", "c.profile");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  // sqrt(5 * 500) = 50 GFLOP/s at 1e7 FLOPs; bf16 has no conv table and uses f32's.
  EXPECT_NEAR(parsed->ConvSeconds(DType::kF32, 1e7, 8), 1e7 / 50e9, 1e-15);
  EXPECT_NEAR(parsed->ConvSeconds(DType::kBF16, 1e7, 8), 1e7 / 50e9, 1e-15);
  auto dup = ParseHardwareProfile(std::string(kValid) + "conv f32 1e6 = 5\nconv f32 1e6 = 6\n", "d.profile");
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("d.profile:13: conv f32 1e6 is given twice"), std::string::npos)
      << dup.status().message();
}

TEST(HardwareProfileTest, SharedHostDividesComputeAndMemoryByDevices) {
  HardwareProfile p = Valid();
  EXPECT_NEAR(p.MemorySeconds(1e9, 4), 0.05, 1e-12);  // 1e9 B at 20 GB/s
  p.shared_host = true;
  EXPECT_NEAR(p.MemorySeconds(1e9, 4), 0.2, 1e-12);
  EXPECT_NEAR(p.DotSeconds(DType::kF32, 1e7, 4), 4e-4, 1e-12);
}

TEST(HardwareProfileTest, CollectiveInterpolatesInGroupSizeAndClamps) {
  HardwareProfile p = Valid();
  // g=4 is a third of the way from 2 to 8: 20 us and 7 GB/s; 7e6 B takes 1 ms.
  EXPECT_NEAR(p.CollectiveSeconds("all-reduce", 4, 7e6, 8), 20e-6 + 1e-3, 1e-12);
  EXPECT_NEAR(p.CollectiveSeconds("all-reduce", 16, 11e6, 16), 40e-6 + 1e-3, 1e-12);
  EXPECT_NEAR(p.CollectiveSeconds("all-reduce", 2, 0, 8), 10e-6, 1e-15);
  // A kind without points uses all-gather's (one point: clamped everywhere).
  EXPECT_NEAR(p.CollectiveSeconds("all-to-all", 8, 3e6, 8), 7e-6 + 1e-3, 1e-12);
  EXPECT_EQ(p.CollectiveSeconds("all-reduce", 1, 1e9, 8), 0);
  // Shared host measured with 8 devices: on 4 each device gets twice the bandwidth.
  p.shared_host = true;
  p.devices = 8;
  EXPECT_NEAR(p.CollectiveSeconds("all-reduce", 8, 22e6, 4), 40e-6 + 1e-3, 1e-12);
}

TEST(HardwareProfileTest, BuiltinProfileIsTheSharedDevelopmentHost) {
  // 8 in-process devices on 2 cores: 20 us per collective (8 per permute), 9 GFLOP/s each. The
  // partitioner's defaults are those of a device with a core of its own: 2 us, 36 GFLOP/s.
  const HardwareProfile p = BuiltinHardwareProfile();
  const MachineModel shared = p.ToMachineModel(8);
  EXPECT_DOUBLE_EQ(shared.collective_latency_us, 20);
  EXPECT_DOUBLE_EQ(shared.LatencyUs("collective-permute"), 8);
  EXPECT_DOUBLE_EQ(shared.link_gbps, 1.5);
  EXPECT_DOUBLE_EQ(shared.device_gflops, 9);
  const MachineModel defaults;
  EXPECT_DOUBLE_EQ(defaults.collective_latency_us, 2);
  EXPECT_DOUBLE_EQ(defaults.device_gflops, 36);
  EXPECT_DOUBLE_EQ(defaults.link_gbps, shared.link_gbps);
  EXPECT_NE(p.source.find("run `xshard bench calibrate`"), std::string::npos);
}

TEST(HardwareProfileTest, ToMachineModelSummarizes) {
  const MachineModel m = Valid().ToMachineModel(8);
  EXPECT_EQ(m.link_gbps, 3);              // all-gather's only point
  EXPECT_EQ(m.collective_latency_us, 40);  // all-reduce at 8
  EXPECT_EQ(m.device_gflops, 1000);        // largest f32 size, not shared
  // No all-to-all or collective-permute figures: their shares of the latency stay the defaults.
  EXPECT_EQ(m.all_to_all_share, MachineModel{}.all_to_all_share);
  EXPECT_EQ(m.permute_share, MachineModel{}.permute_share);
  HardwareProfile with = Valid();
  with.collectives["collective-permute"][8] = CollectiveRate{10, 11};
  with.collectives["all-to-all"][8] = CollectiveRate{30, 11};
  const MachineModel w = with.ToMachineModel(8);
  EXPECT_DOUBLE_EQ(w.LatencyUs("collective-permute"), 10);
  EXPECT_DOUBLE_EQ(w.LatencyUs("all-to-all"), 30);
  EXPECT_DOUBLE_EQ(w.LatencyUs("all-gather"), 40);
}

TEST(HardwareProfileTest, FormatReadsBackEqual) {
  HardwareProfile p = Valid();
  p.shared_host = true;
  p.devices = 8;
  p.step_overhead_us = 12.5;
  p.op_overhead_us = 0.1;
  p.gemm[DType::kF32].push_back({3.3e9, 123.456789012345});
  p.conv[DType::kF32] = {{1e6, 20}, {1e8, 150}};
  const std::string text = FormatHardwareProfile(p);
  StatusOr<HardwareProfile> back = ParseHardwareProfile(text, "round.profile");
  ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << text;
  EXPECT_EQ(*back, p) << text;
}

struct BadCase {
  std::string replace, with, message;
};

TEST(HardwareProfileTest, ErrorsNameFileLineProblemAndFix) {
  const BadCase cases[] = {
      {"memory_gbps = 20", "memory_gbps 20", "t.profile:5: 'memory_gbps 20   # GB/s' has no '='; write `key = value`"},
      {"memory_gbps = 20", "memory_gbps = fast", "t.profile:5: memory_gbps is 'fast'; write GB/s as a positive number"},
      {"memory_gbps = 20", "memory_gbps = -1", "t.profile:5: memory_gbps is '-1'"},
      {"memory_gbps = 20", "memory_gbps = inf", "t.profile:5: memory_gbps is 'inf'"},
      {"shared_host = false", "shared_host = yes", "t.profile:4: shared_host is 'yes'; write true or false"},
      {"gemm f32 1e6 = 10", "gemm f32 1e6 = x", "t.profile:6: gemm rate 'x' is not a positive number; write GFLOP/s"},
      {"gemm f32 1e6 = 10", "gemm f99 1e6 = 10", "t.profile:6: gemm type 'f99' is not a numeric element type"},
      {"gemm f32 1e6 = 10", "gemm f32 = 10", "t.profile:6: a gemm line is `gemm TYPE FLOPS = GFLOPS`"},
      {"gemm f32 1e6 = 10", "gemm f32 1e8 = 10", "t.profile:7: gemm f32 1e8 is given twice; keep one line"},
      {"collective all-reduce 2 = 10 us, 5 GB/s", "collective all-reduce 2 = 10 ms, 5 GB/s",
       "t.profile:9: collective value '10 ms, 5 GB/s' is not `LATENCY us, BANDWIDTH GB/s`"},
      {"collective all-reduce 2", "collective all-sum 2", "t.profile:9: unknown collective 'all-sum'; write all-gather"},
      {"collective all-reduce 2", "collective all-reduce 1", "t.profile:9: group size '1' is not a whole number from 2"},
      {"collective all-reduce 2", "collective all-reduce 8", "t.profile:10: collective all-reduce 8 is given twice"},
      {"name = test box", "nme = test box", "t.profile:2: unknown key 'nme'; keys are: name, source"},
      {"name = test box", "name =", "t.profile:2: name is empty; say which machine this is"},
      {"name = test box", "# no name", "t.profile: no `name = ...` line; add one"},
      {"source = made up", "# no source", "t.profile: no `source = ...` line"},
      {"memory_gbps = 20", "# none", "t.profile: no `memory_gbps = ...` line"},
      {"gemm f32 1e6 = 10\ngemm f32 1e8 = 1000", "# no f32", "t.profile: no f32 GEMM rate; add at least one line"},
      {"shared_host = false", "shared_host = false\nshared_host = true", "t.profile:5: 'shared_host' is given twice"},
  };
  for (const BadCase& c : cases) {
    std::string text(kValid);
    const size_t at = text.find(c.replace);
    ASSERT_NE(at, std::string::npos) << c.replace;
    text.replace(at, c.replace.size(), c.with);
    StatusOr<HardwareProfile> p = ParseHardwareProfile(text, "t.profile");
    ASSERT_FALSE(p.ok()) << c.with;
    EXPECT_NE(p.status().message().find(c.message), std::string::npos)
        << "got: " << p.status().message() << "\nwanted: " << c.message;
  }
  // No collective at all.
  StatusOr<HardwareProfile> none = ParseHardwareProfile(
      "name = a\nsource = b\nmemory_gbps = 1\ngemm f32 1 = 1\n", "n.profile");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("n.profile: no collective line"), std::string::npos);
}

TEST(HardwareProfileTest, EveryTruncationAndByteMutationIsOkOrAClearError) {
  const std::string valid(kValid);
  auto check = [](const std::string& text) {
    StatusOr<HardwareProfile> p = ParseHardwareProfile(text, "m.profile");
    if (p.ok()) return;
    const std::string& m = p.status().message();
    // Names the file, says what to do, stays one short line.
    EXPECT_EQ(m.rfind("m.profile", 0), 0u) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    EXPECT_LT(m.size(), 400u) << m;
    for (char ch : m) EXPECT_TRUE(ch >= 0x20 && ch < 0x7f) << m;
  };
  for (size_t n = 0; n <= valid.size(); ++n) check(valid.substr(0, n));
  for (size_t i = 0; i < valid.size(); ++i) {
    for (char c : {'\0', '=', '#', 'x', '\n', ' ', '-', ',', '9', '\xff'}) {
      std::string text = valid;
      text[i] = c;
      check(text);
    }
  }
}

TEST(HardwareProfileTest, LoadNamesAMissingFile) {
  StatusOr<HardwareProfile> p = LoadHardwareProfile("/nonexistent/x.profile");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("hardware profile '/nonexistent/x.profile' cannot be opened"), std::string::npos);
}

// Points XSHARD_CACHE_DIR at `dir` for the test's life.
class CacheDir {
 public:
  explicit CacheDir(const std::string& dir) {
    if (const char* old = std::getenv("XSHARD_CACHE_DIR")) old_ = old;
    setenv("XSHARD_CACHE_DIR", dir.c_str(), 1);
  }
  ~CacheDir() {
    if (old_) setenv("XSHARD_CACHE_DIR", old_->c_str(), 1);
    else unsetenv("XSHARD_CACHE_DIR");
  }

 private:
  std::optional<std::string> old_;
};

TEST(HardwareProfileTest, ThisMachineReadsTheCalibratedFileElseBuiltin) {
  const std::string dir = ::testing::TempDir() + "/xs_hw_profile_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  CacheDir cache(dir);
  EXPECT_EQ(DefaultHardwareProfilePath(), dir + "/hardware.profile");
  EXPECT_EQ(ThisMachineProfile(), BuiltinHardwareProfile());
  std::ofstream(dir + "/hardware.profile") << kValid;
  EXPECT_EQ(ThisMachineProfile(), Valid());
  std::filesystem::remove_all(dir);
}

TEST(HardwareProfileTest, EveryShippedProfileLoads) {
  const std::filesystem::path dir = std::filesystem::path(XSHARD_SOURCE_DIR) / "hardware";
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".profile") continue;
    ++count;
    StatusOr<HardwareProfile> p = LoadHardwareProfile(entry.path().string());
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    EXPECT_FALSE(p->shared_host) << entry.path();
    EXPECT_NE(p->source.find("http"), std::string::npos) << entry.path() << ": cite a source";
    // Every kind has a figure at 8 devices, and a big GEMM is faster than a small one.
    for (std::string_view kind : kProfileCollectiveKinds) {
      EXPECT_TRUE(p->collectives.count(std::string(kind))) << entry.path() << " lacks " << kind;
    }
    EXPECT_LT(p->DotSeconds(DType::kBF16, 1e12, 8) / 1e12, p->DotSeconds(DType::kBF16, 1e8, 8) / 1e8) << entry.path();
  }
  for (const char* name : {"h100-sxm-8-nvlink", "a100-sxm-8-nvlink", "tpu-v5e-8", "h200-8-nvlink"}) {
    EXPECT_TRUE(std::filesystem::exists(dir / (std::string(name) + ".profile"))) << name;
  }
  EXPECT_GE(count, 4);
}

}  // namespace
}  // namespace xs::spmd
