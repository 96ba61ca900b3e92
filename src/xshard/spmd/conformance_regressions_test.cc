// Regressions found by the corpus conformance run (scripts/conformance.py): each case is the
// smallest module that showed the failure, checked against values derived by hand or against the
// one-device run of the global module.
#include <gtest/gtest.h>

#include "xshard/base/strings.h"
#include "xshard/spmd/partitioner.h"
#include "xshard/spmd/run_partitioned.h"
#include "xshard/text/parse_test_util.h"
#include "xshard/text/printer.h"

namespace xs::spmd {
namespace {

using xs::testing::ParseOrFail;

// The module of the two tests below: x = 1..8 squared in a region manual over 4 devices with the
// data dim split 2 ways, then a collective-permute whose attributes end with `permute_attrs` (its
// sharding, or nothing), rotating each half by 2 pieces: [9 16 25 36 49 64 1 4], one element per device.
void ExpectPermutedSquares(const std::string& permute_attrs) {
  std::unique_ptr<Module> global = ParseOrFail(StrCat(R"(HloModule m, num_partitions=8
ENTRY main {
  x = s32[8] parameter(0), sharding={devices=[8]<=[8]}
  c = s32[8] copy(x), sharding={devices=[4,2]<=[8] last_tile_dim_replicate}
  m = s32[2] custom-call(c), custom_call_target="SPMDFullToShardShape", sharding={devices=[1,4,2]<=[8] last_tile_dims={manual, replicated}}
  l = s32[2] copy(m), sharding={devices=[2,4]<=[4,2]T(1,0) last_tile_dims={manual}}
  sq = s32[2] multiply(l, l), sharding={devices=[2,4]<=[4,2]T(1,0) last_tile_dims={manual}}
  p = s32[2] collective-permute(sq), channel_id=1, source_target_pairs={{0,6},{2,0},{4,2},{6,4},{1,7},{3,1},{5,3},{7,5}})",
                                                      permute_attrs, R"(
  ROOT f = s32[8] custom-call(p), custom_call_target="SPMDShardToFullShape", sharding={devices=[8]<=[8]}
})"));
  StatusOr<PartitionResult> r = Partition(*global, 8);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_NE(PrintHloModule(*r->module).find("s32[1] collective-permute("), std::string::npos)
      << PrintHloModule(*r->module);
  StatusOr<std::vector<std::vector<Array>>> out =
      testing::RunPartitioned(*r, {Array::FromVector<int32_t>({8}, {1, 2, 3, 4, 5, 6, 7, 8})});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const std::vector<int32_t> want = {9, 16, 25, 36, 49, 64, 1, 4};
  for (int d = 0; d < 8; ++d) {
    ASSERT_EQ((*out)[d][0].num_elements(), 1);
    EXPECT_EQ((*out)[d][0].GetDouble(0), want[d]) << "device " << d;
  }
}

// spmd_partitioner_test/PartitionCollectivePermute: a collective-permute inside a partially
// manual region (data dim split 2 ways, manual over 4) was refused. Its pairs stay inside the
// manual subgroups, so it runs on the local pieces as written. Device d holds x[d] squared; the
// pairs rotate each half (0->6, 2->0, ...; 1->7, 3->1, ...) and the result, reassembled, is x^2
// rolled left by 2: for x = 1..8, [9 16 25 36 49 64 1 4].
TEST(ConformanceRegressionTest, PartiallyManualCollectivePermuteRunsOnTheLocalPieces) {
  ExpectPermutedSquares(", sharding={devices=[2,4]<=[4,2]T(1,0) last_tile_dims={manual}}");
}

// An all-reduce whose group joins devices holding different tiles of a partially manual value has
// no per-tile meaning: refused as unsupported, naming the group.
TEST(ConformanceRegressionTest, PartiallyManualCollectiveAcrossTilesIsUnsupported) {
  std::unique_ptr<Module> global = ParseOrFail(R"(HloModule m, num_partitions=4
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[2,2] parameter(0), sharding={devices=[2,1,2]<=[2,2]T(1,0) last_tile_dims={manual}}
  ROOT r = f32[2,2] all-reduce(x), to_apply=sum, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, channel_id=1, sharding={devices=[2,1,2]<=[2,2]T(1,0) last_tile_dims={manual}}
})");
  StatusOr<PartitionResult> r = Partition(*global, 4);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(
                "unsupported: the collective has sharding {devices=[2,1,2]<=[2,2]T(1,0) last_tile_dims={manual}}; a "
                "collective written in the global program must be replicated, inside a fully manual region "
                "(sharding={manual}), or inside a partially manual region with each group on one manual subgroup "
                "(its group {0,1} joins devices holding different tiles)"),
            std::string::npos) << r.status().message();
}

// A shard_map (manual over the 4-way mesh axis) whose body, a call returning a tuple, holds a
// psum over that axis of a value tiled over the free 2-way axis (JAX's nested shard_map with an
// out_specs of P() for the psum). Propagation filled the tuple's unsharded leaf as replicated,
// outside the manual subgroup, once the other leaf was sharded; the all-reduce then took that
// sharding backward and partitioning refused the reshard out of the region. For x = iota(8, 8)
// (x[i][j] = 8i + j): out0 = -x, and out1, the column sums of -x, is -(224 + 8j).
TEST(ConformanceRegressionTest, PartiallyManualTupleLeafStaysInTheManualSubgroup) {
  std::unique_ptr<Module> global = ParseOrFail(R"(HloModule m, num_partitions=8
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
body {
  p = f32[2,8] parameter(0)
  t = f32[2,8] negate(p), sharding={devices=[1,2,4]<=[4,2]T(1,0) last_tile_dims={manual}}
  z = f32[] constant(0)
  r = f32[8] reduce(t, z), dimensions={0}, to_apply=sum
  b = f32[1,8] reshape(r)
  ar = f32[1,8] all-reduce(b), channel_id=1, replica_groups={{0,2,4,6},{1,3,5,7}}, use_global_device_ids=true, to_apply=sum
  ROOT tu = (f32[2,8], f32[1,8]) tuple(t, ar)
}
ENTRY main {
  v = f32[8,8] parameter(0), sharding={devices=[4,2]<=[8]}
  s = f32[8,8] custom-call(v), custom_call_target="Sharding", sharding={devices=[4,1,2]<=[8] last_tile_dim_replicate}
  m = f32[2,8] custom-call(s), custom_call_target="SPMDFullToShardShape", sharding={devices=[1,1,4,2]<=[8] last_tile_dims={manual, replicated}}
  c = (f32[2,8], f32[1,8]) call(m), to_apply=body
  g0 = f32[2,8] get-tuple-element(c), index=0
  s0 = f32[2,8] custom-call(g0), custom_call_target="Sharding", sharding={devices=[1,1,4,2]<=[8] last_tile_dims={manual, replicated}}
  f0 = f32[8,8] custom-call(s0), custom_call_target="SPMDShardToFullShape", sharding={devices=[4,1,2]<=[8] last_tile_dim_replicate}
  g1 = f32[1,8] get-tuple-element(c), index=1
  s1 = f32[1,8] custom-call(g1), custom_call_target="Sharding", sharding={devices=[1,1,4,2]<=[8] last_tile_dims={manual, replicated}}
  f1 = f32[1,8] custom-call(s1), custom_call_target="SPMDShardToFullShape", sharding={replicated}
  ROOT o = (f32[8,8], f32[1,8]) tuple(f0, f1)
})");
  StatusOr<PartitionResult> r = Partition(*global, 8);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::vector<float> x(64);
  for (int i = 0; i < 64; ++i) x[i] = static_cast<float>(i);
  StatusOr<std::vector<std::vector<Array>>> out = testing::RunPartitioned(*r, {Array::FromVector<float>({8, 8}, x)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  for (int d = 0; d < 8; ++d) {
    ASSERT_EQ((*out)[d][0].num_elements(), 16) << "device " << d;  // rows 2(d/2), 2(d/2)+1
    for (int k = 0; k < 16; ++k)
      EXPECT_EQ((*out)[d][0].GetDouble(k), -(16.0 * (d / 2) + k)) << "device " << d << ", " << k;
    ASSERT_EQ((*out)[d][1].num_elements(), 8) << "device " << d;
    for (int j = 0; j < 8; ++j) EXPECT_EQ((*out)[d][1].GetDouble(j), -(224.0 + 8 * j)) << "device " << d << ", " << j;
  }
}

// The same collective-permute as JAX writes it inside a shard_map over some axes: without a
// sharding. Propagation left it replicated (collectives are not spatially partitionable), outside
// the manual subgroup, and partitioning refused the reshard; it now keeps its operand's manual
// subgroup and tiles, and runs on the local pieces as above.
TEST(ConformanceRegressionTest, UnannotatedPartiallyManualCollectivePermuteKeepsItsOperandsTiles) {
  ExpectPermutedSquares("");
}

// all_gather then psum_scatter over the manual 4-way axis of a shard_map whose 2-way axis stays
// automatic, unannotated as JAX writes them: each manual subgroup holds rows 2m, 2m + 1 of x
// (device d = 2m + f). The all-gather rebuilds x in every subgroup and the reduce-scatter gives
// subgroup m rows 2m, 2m + 1 of the sum of the 4 copies: 4x. The gathered value, leaving the
// region as a [32,4] value of 4 stacked copies, is x tiled 4 times.
TEST(ConformanceRegressionTest, PartiallyManualAllGatherAndReduceScatterRunOnSubgroupValues) {
  std::unique_ptr<Module> global = ParseOrFail(R"(HloModule m, num_partitions=8
sum {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] add(a, b)
}
ENTRY main {
  x = s32[8,4] parameter(0), sharding={devices=[4,1,2]<=[8] last_tile_dim_replicate}
  m = s32[2,4] custom-call(x), custom_call_target="SPMDFullToShardShape", sharding={devices=[1,1,4,2]<=[8] last_tile_dims={manual, replicated}}
  ag = s32[8,4] all-gather(m), dimensions={0}, channel_id=1, replica_groups={{0,2,4,6},{1,3,5,7}}, use_global_device_ids=true
  rs = s32[2,4] reduce-scatter(ag), dimensions={0}, channel_id=2, replica_groups={{0,2,4,6},{1,3,5,7}}, use_global_device_ids=true, to_apply=sum
  s = s32[2,4] custom-call(rs), custom_call_target="Sharding", sharding={devices=[1,1,4,2]<=[8] last_tile_dims={manual, replicated}}
  f = s32[8,4] custom-call(s), custom_call_target="SPMDShardToFullShape", sharding={devices=[4,1,2]<=[8] last_tile_dim_replicate}
  t = s32[8,4] custom-call(ag), custom_call_target="Sharding", sharding={devices=[1,1,4,2]<=[8] last_tile_dims={manual, replicated}}
  g = s32[32,4] custom-call(t), custom_call_target="SPMDShardToFullShape", sharding={devices=[4,1,2]<=[8] last_tile_dim_replicate}
  ROOT o = (s32[8,4], s32[32,4]) tuple(f, g)
})");
  StatusOr<PartitionResult> r = Partition(*global, 8);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::vector<int32_t> x(32);
  for (int i = 0; i < 32; ++i) x[i] = i;
  StatusOr<std::vector<std::vector<Array>>> out = testing::RunPartitioned(*r, {Array::FromVector<int32_t>({8, 4}, x)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  for (int d = 0; d < 8; ++d) {
    const int m = d / 2;
    ASSERT_EQ((*out)[d][0].num_elements(), 8) << "device " << d;
    for (int k = 0; k < 8; ++k) EXPECT_EQ((*out)[d][0].GetDouble(k), 4 * (8 * m + k)) << d << ", " << k;
    ASSERT_EQ((*out)[d][1].num_elements(), 32) << "device " << d;
    for (int k = 0; k < 32; ++k) EXPECT_EQ((*out)[d][1].GetDouble(k), k) << d << ", " << k;
  }
}

}  // namespace
}  // namespace xs::spmd
