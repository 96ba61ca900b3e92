// Reduces whose reducer no collective runs (variadic argmax-style reduces, custom reducers) with a
// sharded reduced dim: each device reduces locally, only the partial results are all-gathered and
// reduced again (XLA's strategy). Checked against the single-device run and hand-computed values.
#include <gtest/gtest.h>

#include "xshard/base/strings.h"
#include "xshard/spmd/partitioner.h"
#include "xshard/spmd/run_partitioned.h"

namespace xs::spmd {
namespace {

// argmax reducer as JAX emits it: larger value wins (NaN wins), ties go to the smaller index.
const char* kArgmax = R"(argmax {
  a = f32[] parameter(0)
  i = s32[] parameter(1)
  b = f32[] parameter(2)
  j = s32[] parameter(3)
  gt = pred[] compare(a, b), direction=GT
  nan = pred[] compare(a, a), direction=NE
  first = pred[] or(gt, nan)
  v = f32[] select(first, a, b)
  eq = pred[] compare(a, b), direction=EQ
  lt = pred[] compare(i, j), direction=LT
  tie = pred[] and(eq, lt)
  pick = pred[] or(first, tie)
  k = s32[] select(pick, i, j)
  ROOT t = (f32[], s32[]) tuple(v, k)
}
)";

using testing::CollectiveKinds;

// Partitions `body` for n partitions, compares every device with the single-device run on seeds
// 5, 6 and 7 (inputs of small integers, so ties are common; NaN / 77 in every padding), returns
// the result.
PartitionResult CheckVariadic(const std::string& body, int64_t n) {
  return testing::PartitionAndCompare(body, n, {5, 6, 7});
}

int64_t Bytes(const PartitionResult& r) {
  int64_t b = 0;
  for (const CollectiveRecord& c : r.report.collectives) b += c.bytes;
  return b;
}

std::string ArgmaxModule(const std::string& shape, const std::string& sharding, int dim,
                         const std::string& out_shape, const std::string& out_sharding) {
  return StrCat(kArgmax, "ENTRY e {\n  x = f32", shape, " parameter(0), sharding=", sharding,
                "\n  io = s32", shape, " iota(), iota_dimension=", dim,
                "\n  ninf = f32[] constant(-inf)\n  zero = s32[] constant(0)\n"
                "  r = (f32", out_shape, ", s32", out_shape, ") reduce(x, io, ninf, zero), dimensions={", dim,
                "}, to_apply=argmax\n  ROOT k = s32", out_shape, " get-tuple-element(r), index=1, sharding=",
                out_sharding, "\n}\n");
}

TEST(VariadicReduceTest, ArgmaxOverTheShardedDimGathersOnlyThePartialPairs) {
  // f32[4,64] P(None, 'x') on 8 devices, as jnp.argmax(x, axis=1) lowers: XLA all-gathers the
  // local (value, index) pairs, 4 x 7 received of each, 112 + 112 bytes, and reduces them.
  PartitionResult r = CheckVariadic(ArgmaxModule("[4,64]", "{devices=[1,8]<=[8]}", 1, "[4]", "{replicated}"), 8);
  ASSERT_NE(r.module, nullptr);
  EXPECT_EQ(CollectiveKinds(r), (std::vector<std::string>{"all-gather", "all-gather"}));
  EXPECT_EQ(Bytes(r), 224);  // not the 1792 of gathering both inputs

  // Hand-computed: row 0 all equal (index 0), row 1 a tie across shards (13 and 45: 13), row 2
  // the max in the last shard (63), row 3 -inf everywhere but one (30).
  std::vector<float> x(4 * 64, 1.0f);
  for (int j = 0; j < 64; ++j) x[64 + j] = static_cast<float>(j % 7);
  x[64 + 13] = 9, x[64 + 45] = 9;
  x[128 + 63] = 5;
  for (int j = 0; j < 64; ++j) x[192 + j] = -std::numeric_limits<float>::infinity();
  x[192 + 30] = -1;
  StatusOr<std::vector<std::vector<Array>>> out =
      testing::RunPartitioned(r, {Array::FromVector<float>({4, 64}, x)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  for (const std::vector<Array>& device : *out) {
    EXPECT_EQ(device[0], Array::FromVector<int32_t>({4}, {0, 13, 63, 30}));
  }
}

TEST(VariadicReduceTest, UnevenShardsFillPaddingWithTheInitPair) {
  // 10 columns over 4 devices: shards of 3, the last has one real column (padding is NaN, which
  // the reducer would pick if it were not replaced by the init value -inf).
  PartitionResult r = CheckVariadic(ArgmaxModule("[3,10]", "{devices=[1,4]<=[4]}", 1, "[3]", "{replicated}"), 4);
  ASSERT_NE(r.module, nullptr);
  EXPECT_EQ(CollectiveKinds(r), (std::vector<std::string>{"all-gather", "all-gather"}));
}

TEST(VariadicReduceTest, KeptDimStaysShardedAndOnlyTheReducedAxesGather) {
  // [8,16] on a 2 x 4 tiling, argmax over dim 1: rows stay on their 2 tiles, the pairs are
  // gathered within groups of 4: 4 rows x 3 other tiles x (4 + 4) bytes = 96 bytes.
  PartitionResult r =
      CheckVariadic(ArgmaxModule("[8,16]", "{devices=[2,4]<=[8]}", 1, "[8]", "{devices=[2,4]<=[8] last_tile_dim_replicate}"), 8);
  ASSERT_NE(r.module, nullptr);
  EXPECT_EQ(CollectiveKinds(r), (std::vector<std::string>{"all-gather", "all-gather"}));
  EXPECT_EQ(Bytes(r), 96);
  for (const CollectiveRecord& c : r.report.collectives) EXPECT_EQ(c.groups, "[2,4]<=[8]");
}

TEST(VariadicReduceTest, CustomSingleInputReducerGathersPartialsNotTheOperand) {
  // max written as select(a > b, a, b): no collective runs it, so the local maxima are gathered.
  PartitionResult r = CheckVariadic(R"(smax {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  gt = pred[] compare(a, b), direction=GT
  ROOT s = f32[] select(gt, a, b)
}
ENTRY e {
  x = f32[16,6] parameter(0), sharding={devices=[4,1]<=[4]}
  ninf = f32[] constant(-inf)
  ROOT r = f32[6] reduce(x, ninf), dimensions={0}, to_apply=smax, sharding={replicated}
}
)", 4);
  ASSERT_NE(r.module, nullptr);
  EXPECT_EQ(CollectiveKinds(r), (std::vector<std::string>{"all-gather"}));
  EXPECT_EQ(Bytes(r), 6 * 3 * 4);
}

}  // namespace
}  // namespace xs::spmd
