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

// spmd_partitioner_test/PartitionCollectivePermute: a collective-permute inside a partially
// manual region (data dim split 2 ways, manual over 4) was refused. Its pairs stay inside the
// manual subgroups, so it runs on the local pieces as written. Device d holds x[d] squared; the
// pairs rotate each half (0->6, 2->0, ...; 1->7, 3->1, ...) and the result, reassembled, is x^2
// rolled left by 2: for x = 1..8, [9 16 25 36 49 64 1 4].
TEST(ConformanceRegressionTest, PartiallyManualCollectivePermuteRunsOnTheLocalPieces) {
  std::unique_ptr<Module> global = ParseOrFail(R"(HloModule m, num_partitions=8
ENTRY main {
  x = s32[8] parameter(0), sharding={devices=[8]<=[8]}
  c = s32[8] copy(x), sharding={devices=[4,2]<=[8] last_tile_dim_replicate}
  m = s32[2] custom-call(c), custom_call_target="SPMDFullToShardShape", sharding={devices=[1,4,2]<=[8] last_tile_dims={manual, replicated}}
  l = s32[2] copy(m), sharding={devices=[2,4]<=[4,2]T(1,0) last_tile_dims={manual}}
  sq = s32[2] multiply(l, l), sharding={devices=[2,4]<=[4,2]T(1,0) last_tile_dims={manual}}
  p = s32[2] collective-permute(sq), channel_id=1, source_target_pairs={{0,6},{2,0},{4,2},{6,4},{1,7},{3,1},{5,3},{7,5}}, sharding={devices=[2,4]<=[4,2]T(1,0) last_tile_dims={manual}}
  ROOT f = s32[8] custom-call(p), custom_call_target="SPMDShardToFullShape", sharding={devices=[8]<=[8]}
})");
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

}  // namespace
}  // namespace xs::spmd
