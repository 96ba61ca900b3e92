// concatenate along a sharded dim (handlers_concat.cc, FarWindow in halo.cc): each partition
// fetches the source tiles its result piece covers, one collective-permute per tile a window
// spans, instead of gathering the dim. Checked against the one-device run with garbage in the
// inputs' padding; the collectives are pinned.
#include <gtest/gtest.h>

#include "xshard/base/strings.h"
#include "xshard/spmd/partitioner.h"
#include "xshard/spmd/run_partitioned.h"
#include "xshard/text/parser.h"
#include "xshard/text/printer.h"

namespace xs::spmd {
namespace {

std::vector<std::string> Kinds(const PartitionResult& r) { return testing::CollectiveKinds(r); }

PartitionResult Check(const std::string& body, int64_t n) {
  return testing::PartitionAndCompare(body, n, {1, 2});
}

// jnp.concatenate([a, b]) with a, b, result P('x', None) on 8 devices: result tile k is a's tiles
// 2k and 2k + 1 (k < 4) or b's tiles 2k - 8 and 2k - 7: two rounds of permutes per operand, each
// moving one f32[8,16] tile (512 B), where gathering both operands receives 7 KiB.
TEST(ConcatenateHandlerTest, ShardedDimFetchesTheCoveredTilesInsteadOfGathering) {
  const PartitionResult r = Check(R"(ENTRY e {
  a = f32[64,16] parameter(0), sharding={devices=[8,1]<=[8]}
  b = f32[64,16] parameter(1), sharding={devices=[8,1]<=[8]}
  ROOT c = f32[128,16] concatenate(a, b), dimensions={0}, sharding={devices=[8,1]<=[8]}
})", 8);
  EXPECT_EQ(Kinds(r), std::vector<std::string>(4, "collective-permute"));
  for (const CollectiveRecord& c : r.report.collectives) EXPECT_EQ(c.bytes, 512);
  EXPECT_EQ(r.report.collectives[0].groups, "{{0,0},{2,1},{4,2},{6,3}}");
}

// Uneven operands and result, three operands, a two-dim tiling with the concatenated dim on the
// minor axis.
TEST(ConcatenateHandlerTest, UnevenOperandsAndTwoDimTilingsStayCorrect) {
  Check(R"(ENTRY e {
  a = f32[5,3] parameter(0), sharding={devices=[4,1]<=[4]}
  b = f32[7,3] parameter(1), sharding={devices=[4,1]<=[4]}
  d = f32[2,3] parameter(2), sharding={devices=[4,1]<=[4]}
  ROOT c = f32[14,3] concatenate(a, b, d), dimensions={0}, sharding={devices=[4,1]<=[4]}
})", 4);
  Check(R"(ENTRY e {
  a = s32[4,12] parameter(0), sharding={devices=[2,4]<=[8]}
  b = s32[4,20] parameter(1), sharding={devices=[2,4]<=[8]}
  ROOT c = s32[4,32] concatenate(a, b), dimensions={1}, sharding={devices=[2,4]<=[8]}
})", 8);
  Check(R"(ENTRY e {
  a = f32[16,4] parameter(0), sharding={devices=[4,1,2]<=[8] last_tile_dim_replicate}
  b = f32[3,4] parameter(1), sharding={devices=[4,1,2]<=[8] last_tile_dim_replicate}
  ROOT c = f32[19,4] concatenate(a, b), dimensions={0}, sharding={devices=[4,1,2]<=[8] last_tile_dim_replicate}
})", 8);
}

// jnp.roll(a, 3, axis=0) on 8 devices: the tail slice reaches 5..7 tiles away (one permute per
// distance, 1 row each) and the head slice lands one tile on; only the used rows travel (576 B
// as the report counts them; gathering received 7.4 KiB). Shift the other way, and uneven.
TEST(ConcatenateHandlerTest, RollFetchesOnlyTheRowsItUses) {
  const PartitionResult r = Check(R"(ENTRY e {
  a = f32[64,16] parameter(0), sharding={devices=[8,1]<=[8]}
  s2 = f32[3,16] slice(a), slice={[61:64], [0:16]}, sharding={devices=[8,1]<=[8]}
  s3 = f32[61,16] slice(a), slice={[0:61], [0:16]}, sharding={devices=[8,1]<=[8]}
  ROOT c = f32[64,16] concatenate(s2, s3), dimensions={0}, sharding={devices=[8,1]<=[8]}
})", 8);
  int64_t bytes = 0;
  for (const CollectiveRecord& c : r.report.collectives) {
    EXPECT_EQ(c.kind, "collective-permute");
    bytes += c.bytes;
  }
  EXPECT_EQ(bytes, 576);
  Check(R"(ENTRY e {
  a = f32[13,2] parameter(0), sharding={devices=[4,1]<=[4]}
  s2 = f32[11,2] slice(a), slice={[2:13], [0:2]}, sharding={devices=[4,1]<=[4]}
  s3 = f32[2,2] slice(a), slice={[0:2], [0:2]}, sharding={devices=[4,1]<=[4]}
  ROOT c = f32[13,2] concatenate(s2, s3), dimensions={0}, sharding={devices=[4,1]<=[4]}
})", 4);
}

// A concatenation along an unsharded dim stays local.
TEST(ConcatenateHandlerTest, UnshardedDimNeedsNoCollectives) {
  const PartitionResult r = Check(R"(ENTRY e {
  a = f32[8,3] parameter(0), sharding={devices=[4,1]<=[4]}
  b = f32[8,5] parameter(1), sharding={devices=[4,1]<=[4]}
  ROOT c = f32[8,8] concatenate(a, b), dimensions={1}, sharding={devices=[4,1]<=[4]}
})", 4);
  EXPECT_TRUE(Kinds(r).empty());
}

}  // namespace
}  // namespace xs::spmd
