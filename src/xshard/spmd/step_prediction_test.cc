// PredictStep on small SPMD modules, against seconds computed by hand from a made-up profile:
// 100 GFLOP/s of f32 GEMM, 10 GB/s of memory, all-reduce over 4 at 10 us + 2 GB/s.
#include "xshard/spmd/step_prediction.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "xshard/text/parse_test_util.h"
#include "xshard/text/parser.h"

namespace xs::spmd {
namespace {

HardwareProfile Profile() {
  HardwareProfile p;
  p.name = "hand";
  p.source = "test";
  p.gemm[DType::kF32] = {{1e9, 100}};
  p.memory_gbps = 10;
  p.collectives["all-reduce"] = {{4, {10, 2}}};
  return p;
}

using xs::testing::ParseOrFail;

TEST(PredictStepTest, DotAtTheGemmRate) {
  auto m = ParseOrFail(R"(HloModule m, num_partitions=4
ENTRY e {
  a = f32[64,128] parameter(0)
  b = f32[128,32] parameter(1)
  ROOT d = f32[64,32] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  ASSERT_NE(m, nullptr);
  const StepPrediction p = PredictStep(*m, Profile(), 4);
  // 2 * 64 * 32 * 128 = 524288 FLOP at 1e11 FLOP/s.
  EXPECT_NEAR(p.compute_s, 524288 / 1e11, 1e-15);
  EXPECT_EQ(p.memory_s, 0);
  EXPECT_EQ(p.communication_s, 0);
  EXPECT_NEAR(p.total_s, 524288 / 1e11, 1e-15);
  ASSERT_EQ(p.largest.size(), 1u);
  EXPECT_EQ(p.largest[0].second.rfind("d: f32[64,32] dot", 0), 0u) << p.largest[0].second;
}

TEST(PredictStepTest, ConvolutionAtTheConvRate) {
  auto m = ParseOrFail(R"(HloModule m, num_partitions=4
ENTRY e {
  x = f32[1,8,8,4] parameter(0)
  k = f32[3,3,4,4] parameter(1)
  ROOT y = f32[1,8,8,4] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
})");
  ASSERT_NE(m, nullptr);
  // 2 * 64 outputs * 4 features * 36 kernel elements = 18432 FLOP.
  EXPECT_NEAR(PredictStep(*m, Profile(), 4).compute_s, 18432 / 1e11, 1e-16);  // no conv table: GEMM rate
  HardwareProfile p = Profile();
  p.conv[DType::kF32] = {{1e9, 25}};
  EXPECT_NEAR(PredictStep(*m, p, 4).compute_s, 18432 / 25e9, 1e-16);
}

TEST(PredictStepTest, AllReduceByTheRingModel) {
  auto m = ParseOrFail(R"(HloModule m, num_partitions=4
sum {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  a = f32[1000] parameter(0)
  ROOT r = f32[1000] all-reduce(a), replica_groups={{0,1,2,3}}, channel_id=1, use_global_device_ids=true, to_apply=sum
})");
  ASSERT_NE(m, nullptr);
  const StepPrediction p = PredictStep(*m, Profile(), 4);
  // Each device receives 2 * 4000 * 3/4 = 6000 B: 10 us + 6000 / 2e9 s = 13 us.
  EXPECT_NEAR(p.communication_s, 13e-6, 1e-15);
  EXPECT_NEAR(p.total_s, 13e-6, 1e-15);
}

constexpr std::string_view kLoop = R"(HloModule m, num_partitions=4
cond {
  t = (s32[], f32[64,64]) parameter(0)
  i = s32[] get-tuple-element(t), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  t = (s32[], f32[64,64]) parameter(0)
  i = s32[] get-tuple-element(t), index=0
  one = s32[] constant(1)
  next = s32[] add(i, one)
  x = f32[64,64] get-tuple-element(t), index=1
  d = f32[64,64] dot(x, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT r = (s32[], f32[64,64]) tuple(next, d)
}
ENTRY e {
  x = f32[64,64] parameter(0)
  START = s32[] constant(0)
  init = (s32[], f32[64,64]) tuple(START, x)
  w = (s32[], f32[64,64]) while(init), condition=cond, body=body
  ROOT out = f32[64,64] get-tuple-element(w), index=1
})";

TEST(PredictStepTest, WhileBodyTimesItsTripCount) {
  auto m = ParseOrFail(kLoop);
  ASSERT_NE(m, nullptr);
  const Instruction* w = nullptr;
  for (const Instruction* i : m->entry()->instructions()) {
    if (i->opcode() == Opcode::kWhile) w = i;
  }
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(WhileTripCount(*w), 4);
  const StepPrediction p = PredictStep(*m, Profile(), 4);
  // Body 4 times: a 2 * 64^3 = 524288 FLOP dot, and the counter's add (reads i and 1, writes
  // next: 12 B). Condition 5 times: the compare reads i (4 B) and 4 (4 B), writes a pred (1 B).
  EXPECT_NEAR(p.compute_s, 4 * 524288 / 1e11, 1e-15);
  EXPECT_NEAR(p.memory_s, (4 * 12 + 5 * 9) / 1e10, 1e-15);
  EXPECT_TRUE(p.notes.empty());
  ASSERT_FALSE(p.largest.empty());
  EXPECT_NE(p.largest[0].second.find("(x4 in w)"), std::string::npos) << p.largest[0].second;
}

TEST(PredictStepTest, TripCountFromBackendConfigOrUnknown) {
  std::string text(kLoop);
  // A start read from a parameter: unknown, counted once with a note.
  text.replace(text.find("START = s32[] constant(0)"), 25, "START = s32[] parameter(1)");
  auto m = ParseOrFail(text);
  ASSERT_NE(m, nullptr);
  const StepPrediction p = PredictStep(*m, Profile(), 4);
  EXPECT_NEAR(p.compute_s, 524288 / 1e11, 1e-15);
  ASSERT_EQ(p.notes.size(), 1u);
  EXPECT_EQ(p.notes[0], "w: trip count unknown, body counted once");
  // XLA's annotation decides.
  text.replace(text.find("body=body"), 9, R"(body=body, backend_config={"known_trip_count":{"n":"7"}})");
  auto known = ParseOrFail(text);
  ASSERT_NE(known, nullptr);
  EXPECT_NEAR(PredictStep(*known, Profile(), 4).compute_s, 7 * 524288 / 1e11, 1e-15);
}

TEST(PredictStepTest, FusedChainReadsInputsOnceAndWritesItsResult) {
  auto m = ParseOrFail(R"(HloModule m, num_partitions=4
ENTRY e {
  p = f32[1000] parameter(0)
  q = f32[1000] parameter(1)
  a = f32[1000] add(p, q)
  b = f32[1000] multiply(a, p)
  c = f32[1000] exponential(b)
  ROOT t = f32[1000] copy(c)
})");
  ASSERT_NE(m, nullptr);
  // One loop (copy is elementwise too): reads p and q (8000 B), writes t (4000 B).
  const StepPrediction p = PredictStep(*m, Profile(), 4);
  EXPECT_NEAR(p.memory_s, 12000 / 1e10, 1e-15);
  auto t = ParseOrFail(R"(HloModule m, num_partitions=4
ENTRY e {
  p = f32[10,100] parameter(0)
  a = f32[10,100] negate(p)
  ROOT t = f32[100,10] transpose(a), dimensions={1,0}
})");
  ASSERT_NE(t, nullptr);
  // The negate's loop reads 4000 B and writes 4000 B; the transpose reads and writes 4000 B each.
  EXPECT_NEAR(PredictStep(*t, Profile(), 4).memory_s, 16000 / 1e10, 1e-15);
}

TEST(PredictStepTest, OverheadsAndSharedHost) {
  auto m = ParseOrFail(R"(HloModule m, num_partitions=4
ENTRY e {
  a = f32[64,128] parameter(0)
  b = f32[128,32] parameter(1)
  ROOT d = f32[64,32] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  ASSERT_NE(m, nullptr);
  HardwareProfile hw = Profile();
  hw.step_overhead_us = 5;
  hw.op_overhead_us = 1;
  hw.shared_host = true;
  const StepPrediction p = PredictStep(*m, hw, 4);
  EXPECT_NEAR(p.compute_s, 4 * 524288 / 1e11, 1e-15);  // a quarter of the host's rate
  EXPECT_NEAR(p.overhead_s, 6e-6, 1e-15);
  EXPECT_NEAR(p.total_s, 4 * 524288 / 1e11 + 6e-6, 1e-15);
  const std::string text = FormatPrediction(p);
  // Measured with 8 devices sharing the cores: on 4 the fixed costs halve.
  hw.devices = 8;
  EXPECT_NEAR(PredictStep(*m, hw, 4).overhead_s, 3e-6, 1e-15);
  EXPECT_EQ(text.rfind("predicted step: 27.0 us (compute 21.0 us, memory 0.00 ns, communication 0.00 ns, overhead 6.00 us)", 0), 0u) << text;
}

TEST(PredictStepTest, ConditionalCountsItsCostliestBranch) {
  auto m = ParseOrFail(R"(HloModule m, num_partitions=4
cheap {
  x = f32[64,64] parameter(0)
  ROOT n = f32[64,64] negate(x)
}
costly {
  x = f32[64,64] parameter(0)
  ROOT d = f32[64,64] dot(x, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
ENTRY e {
  p = pred[] parameter(0)
  x = f32[64,64] parameter(1)
  ROOT c = f32[64,64] conditional(p, x, x), true_computation=cheap, false_computation=costly
})");
  ASSERT_NE(m, nullptr);
  // The dot (524288 FLOP, 5.2 us) beats the negate (32 KiB moved, 3.3 us); nothing else counts.
  const StepPrediction p = PredictStep(*m, Profile(), 4);
  EXPECT_NEAR(p.compute_s, 524288 / 1e11, 1e-15);
  EXPECT_EQ(p.memory_s, 0);
}

// Never crashes, and gives finite, non-negative seconds, on every module of tests/data.
TEST(PredictStepTest, EveryTestDataModuleGetsAFinitePrediction) {
  int count = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(std::filesystem::path(XSHARD_SOURCE_DIR) / "tests" / "data")) {
    if (entry.path().extension() != ".hlo") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    StatusOr<std::unique_ptr<Module>> m = ParseHloModule(text.str());
    if (!m.ok()) continue;
    ++count;
    const StepPrediction p = PredictStep(**m, BuiltinHardwareProfile(), std::max<int64_t>((*m)->config().num_partitions, 1));
    for (double s : {p.compute_s, p.memory_s, p.communication_s, p.overhead_s, p.total_s}) {
      EXPECT_TRUE(std::isfinite(s) && s >= 0) << entry.path() << ": " << s;
    }
  }
  EXPECT_GT(count, 100);
}

}  // namespace
}  // namespace xs::spmd
