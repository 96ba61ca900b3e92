// The planner's cost model: plans are scored by estimated time, so a plan that saves bytes by
// making every device redo the work loses. Seed 000's four cases and an MLP training step as
// JAX 0.10 lowers them with its defaults (no out_shardings, no
// allow_spmd_sharding_propagation_to_output in the header; tests/tools/gen_cost_cases.py), with
// XLA's collectives, bytes and FLOPs per device taken from JAX's compiled program.
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "xshard/base/strings.h"
#include "xshard/spmd/partitioner.h"
#include "xshard/spmd/run_partitioned.h"

namespace xs::spmd {
namespace {

const std::string kDir = std::string(XSHARD_SOURCE_DIR) + "/tests/data/spmd_partition/";

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Seed 000 case `name` as JAX lowers it, scaled from f16 x[4,16] @ y[16,4] to f32 n x n.
std::string Seed000(const std::string& name, int n = 0) {
  std::string text = Read(kDir + "seed000_" + name + "_jax.hlo");
  if (n == 0) return text;
  const std::string big = StrCat("f32[", n, ",", n, "]");
  for (const char* from : {"f16[4,16]", "f16[16,4]", "f16[4,4]"}) {
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at)) {
      text.replace(at, std::string(from).size(), big);
    }
  }
  return text;
}

struct Outcome {
  std::vector<std::string> kinds;  // collective kinds in order
  int64_t bytes = 0;
  double flops = 0;
};

// The module `text` partitioned for 8 devices on `machine` (not run); a parse or partition error
// fails the test and gives an empty outcome.
Outcome PartitionText(const std::string& text, const MachineModel& machine = {}) {
  testing::CompareOptions options{.compare = false};
  options.partition.machine = machine;
  const PartitionResult r = testing::PartitionAndCompare(text, 8, options);
  return Outcome{testing::CollectiveKinds(r), r.report.TotalCollectiveBytes(), r.report.flops};
}

// Bytes alone decide: collectives and FLOPs cost next to nothing (the planner before the model).
MachineModel BytesOnly() {
  MachineModel m;
  m.collective_latency_us = 1e-9;
  m.device_gflops = 1e12;
  return m;
}

TEST(CostModelTest, SecondsAddBytesOverLinkLatencyPerCollectiveAndFlopsOverThroughput) {
  MachineModel m;
  m.link_gbps = 2;
  m.collective_latency_us = 10;
  m.device_gflops = 4;
  // 2e6 B at 2 GB/s = 1 ms; 30 us of fixed costs; 8e6 FLOP at 4 GFLOP/s = 2 ms.
  EXPECT_DOUBLE_EQ(m.Estimate(2e6, 30, 8e6), 1e-3 + 30e-6 + 2e-3);
  // A group collective costs the whole latency, a collective-permute (one peer to wait on) 0.4
  // of it.
  EXPECT_DOUBLE_EQ(m.LatencyUs("all-gather"), 10);
  EXPECT_DOUBLE_EQ(m.LatencyUs("all-reduce"), 10);
  EXPECT_DOUBLE_EQ(m.LatencyUs("all-to-all"), 10);
  EXPECT_DOUBLE_EQ(m.LatencyUs("collective-permute"), 4);
  EXPECT_EQ(FormatSeconds(3.03e-3), "3.03 ms");
  EXPECT_EQ(FormatSeconds(20e-6), "20.0 us");
}

TEST(CostModelTest, OuterAxesAt2048PermutesAndAllReducesAsXlaInsteadOfGatheringBoth) {
  // x P('b','a'), y P('b', None), z open. XLA: collective-permute of a quarter of y (4 MiB) and
  // an all-reduce of the f32[1024,2048] partial products over a (2 x 3/4 x 8 MiB = 12 MiB):
  // 16 MiB, and each device multiplies [1024,512] x [512,2048]: 2 x 1024 x 512 x 2048 FLOP.
  const Outcome ours = PartitionText(Seed000("outer", 2048));
  EXPECT_EQ(ours.kinds, (std::vector<std::string>{"collective-permute", "all-reduce"}));
  EXPECT_EQ(ours.bytes, 16 << 20);
  EXPECT_DOUBLE_EQ(ours.flops, 2.0 * 1024 * 512 * 2048);
  // Counting bytes alone, gathering both operands (6 + 8 = 14 MiB) looks cheaper, and every
  // device then multiplies [1024,2048] x [2048,2048]: 4x the FLOPs.
  const Outcome bytes_only = PartitionText(Seed000("outer", 2048), BytesOnly());
  EXPECT_EQ(bytes_only.kinds, (std::vector<std::string>{"all-gather", "all-gather"}));
  EXPECT_EQ(bytes_only.bytes, 14 << 20);
  EXPECT_DOUBLE_EQ(bytes_only.flops, 2.0 * 1024 * 2048 * 2048);
}

// am @ am in Muon's Newton-Schulz step on a 2 x 4 mesh: both operands and the result have their
// rows over x and are replicated over y. Every plan taken from the shardings leaves y idle: the
// rows of the right operand are gathered over x and the four devices along y each compute the same
// [256,512] x [512,512] product. Given to the result's columns, y splits the work four ways: the
// right operand's columns are sliced before its rows are gathered (128 KiB) and the [256,128]
// pieces are gathered over y (384 KiB): the same 512 KiB, two collectives, a quarter of the FLOPs.
// XLA splits such a product too (over the contracting dim). A product too small for its FLOPs to
// outweigh a collective's fixed cost keeps the single all-gather.
TEST(CostModelTest, ALargeProductReplicatedOverAnIdleAxisIsSplitOverIt) {
  auto module = [](int n) {
    const std::string t = StrCat("f32[", n, ",", n, "]");
    const char* rows = "{devices=[2,1,4]<=[8] last_tile_dim_replicate}";
    return StrCat("HloModule m, num_partitions=8\n\nENTRY e {\n  a = ", t, " parameter(0), sharding=", rows,
                  "\n  b = ", t, " parameter(1), sharding=", rows, "\n  ROOT d = ", t,
                  " dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding=", rows, "\n}\n");
  };
  const Outcome big = PartitionText(module(512));
  EXPECT_EQ(big.kinds, (std::vector<std::string>{"all-gather", "all-gather"}));
  EXPECT_EQ(big.bytes, 512 << 10);
  EXPECT_DOUBLE_EQ(big.flops, 2.0 * 256 * 512 * 128);
  const Outcome small = PartitionText(module(16));
  EXPECT_EQ(small.kinds, std::vector<std::string>{"all-gather"});
  EXPECT_DOUBLE_EQ(small.flops, 2.0 * 8 * 16 * 16);
}

TEST(CostModelTest, Seed000AsJaxLowersItMovesNoMoreBytesAndDoesNoMoreFlopsThanXla) {
  // XLA's compiled programs for JAX's default lowering (no output flag), per device:
  //   inner:    all-reduce f16[4,4] over a: 2 x 3/4 x 32 = 48 B; [4,4] x [4,4]: 128 FLOP.
  //   mismatch: all-gathers of y over b (64 B) and x over a (96 B): 160 B; [4,16] x [16,4]: 512.
  //   outer:    collective-permute f16[4,4] (32 B) + all-reduce f16[2,4] over a (24 B): 56 B; 64.
  //   full:     all-gathers f16[16,1] over b (16 B) and f16[2,16] over a (48 B): 64 B; 64.
  struct Xla {
    const char* name;
    int64_t bytes;
    double flops;
    std::vector<std::string> kinds;
  };
  const std::vector<Xla> cases = {
      {"inner", 48, 128, {"all-reduce"}},
      // Moving y's rows onto a (32 B permute) and all-reducing over a (48 B) beats gathering both.
      {"mismatch", 80, 128, {"collective-permute", "all-reduce"}},
      {"outer", 56, 64, {"collective-permute", "all-reduce"}},
      {"full", 64, 64, {"all-gather", "all-gather"}},
  };
  for (const Xla& c : cases) {
    SCOPED_TRACE(c.name);
    const Outcome ours = PartitionText(Seed000(c.name));
    EXPECT_EQ(ours.kinds, c.kinds);
    EXPECT_EQ(ours.bytes, c.bytes);
    EXPECT_DOUBLE_EQ(ours.flops, c.flops);
  }
  // Mismatch at XLA's 160 B and 512 FLOP: ours is below both.
  const Outcome mismatch = PartitionText(Seed000("mismatch"));
  EXPECT_LT(mismatch.bytes, 160);
  EXPECT_LT(mismatch.flops, 512);
}

TEST(CostModelTest, OpenOutputOfTheJaxLoweringRunsLikeTheGlobalModule) {
  // The JAX lowerings carry no output flag: z is open, and the assembled result is right.
  for (const char* name : {"inner", "mismatch", "outer", "full"}) {
    SCOPED_TRACE(name);
    std::vector<float> x, y;
    for (int i = 0; i < 64; ++i) x.push_back(static_cast<float>(i % 7) - 3);
    for (int i = 0; i < 64; ++i) y.push_back(static_cast<float>(i % 5) - 2);
    const std::vector<Array> args = {Array::FromVector<float>({4, 16}, x).Convert(DType::kF16),
                                     Array::FromVector<float>({16, 4}, y).Convert(DType::kF16)};
    const PartitionResult r = testing::PartitionAndCompare(
        Seed000(name), 8,
        testing::CompareOptions{.inputs = args, .tolerance = 0, .name = StrCat("seed000_", name, "_jax.hlo")});
    ASSERT_NE(r.module, nullptr);
    // outer and full keep z's rows on b as XLA does (no gather of z at the end).
    const std::string n = name;
    if (n == "outer" || n == "full") {
      EXPECT_FALSE(r.output_sharding.IsReplicated());
    }
  }
}

TEST(CostModelTest, MlpStepComputesLocalPartialWeightGradientsAndAllReducesThem) {
  // d1024 h4096 b256 on data=4 x model=2 (bench/jax_compare's MLP workload). Per device: batch
  // 64, hidden 2048. Two forward dots and three backward dots (dg, dW2, dW1), each
  // 2 x 64 x 1024 x 2048 FLOP: 5 x 268,435,456 = 1,342,177,280, XLA's count. The weight
  // gradients are partial sums over the local batch, all-reduced over data: 2 x 3/4 x 8 MiB
  // each, plus the forward all-reduce f32[64,1024] over model (256 KiB). XLA: 25,440,262 B.
  const std::string text = Read(kDir + "mlp_step_d1024_jax.hlo");
  const Outcome ours = PartitionText(text);
  EXPECT_DOUBLE_EQ(ours.flops, 5 * 2.0 * 64 * 1024 * 2048);
  for (const std::string& k : ours.kinds) EXPECT_EQ(k, "all-reduce");
  EXPECT_LE(ours.bytes, 25440262);
  EXPECT_GE(ours.bytes, 2 * (3 * (8 << 20) / 2));
  // Bytes alone gather the activations instead and compute each full gradient on all 4 devices
  // of data: fewer bytes, more FLOPs.
  const Outcome bytes_only = PartitionText(text, BytesOnly());
  EXPECT_LT(bytes_only.bytes, ours.bytes);
  EXPECT_GT(bytes_only.flops, 2 * ours.flops);
}

}  // namespace
}  // namespace xs::spmd
