// concatenate along a sharded dim (handlers_concat.cc, FarWindow in halo.cc): each partition
// fetches the source tiles its result piece covers, one collective-permute per tile a window
// spans, instead of gathering the dim; a rotation (handlers_rotate.cc) moves only the rows that
// cross tiles. Checked against the one-device run with garbage in the
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

// The collectives `cause` inserted (the slices a rotation reads around are partitioned too; their
// windows are dead code that cleanup removes).
std::vector<CollectiveRecord> CausedBy(const PartitionResult& r, const std::string& cause) {
  std::vector<CollectiveRecord> out;
  for (const CollectiveRecord& c : r.report.collectives) {
    if (c.cause == cause) out.push_back(c);
  }
  return out;
}

PartitionResult Check(const std::string& body, int64_t n) {
  return testing::PartitionAndCompare(body, n, {1, 2});
}

// jnp.concatenate([a, b]) with a, b, result P('x', None) on 8 devices: result tile k is a's tiles
// 2k and 2k + 1 (k < 4) or b's tiles 2k - 8 and 2k - 7: two rounds of permutes per operand, each
// moving one f32[8,12] tile (384 B), where gathering both operands receives 5.25 KiB (12 columns
// do not split 8 ways, so x cannot move to them).
TEST(ConcatenateHandlerTest, ShardedDimFetchesTheCoveredTilesInsteadOfGathering) {
  const PartitionResult r = Check(R"(ENTRY e {
  a = f32[64,12] parameter(0), sharding={devices=[8,1]<=[8]}
  b = f32[64,12] parameter(1), sharding={devices=[8,1]<=[8]}
  ROOT c = f32[128,12] concatenate(a, b), dimensions={0}, sharding={devices=[8,1]<=[8]}
})", 8);
  EXPECT_EQ(Kinds(r), std::vector<std::string>(4, "collective-permute"));
  for (const CollectiveRecord& c : r.report.collectives) EXPECT_EQ(c.bytes, 384);
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

// 13 + 19 rows over 8 devices (tiles of 2, 3 and 4 rows): the windows would take four permutes
// of 2, 2, 3 and 3 rows of 64 f32 (2,560 B). Moving x to the 64 columns instead (XLA's plan): an
// all-to-all per operand and one back, each device receiving 7 of 8 pieces of 2, 3 and 4 rows
// by 8 columns: 7 * (2 + 3 + 4) * 8 * 4 = 2,016 B.
TEST(ConcatenateHandlerTest, UnevenOperandsMoveTheirAxisToAnotherDimWhenThatReceivesLess) {
  const PartitionResult r = Check(R"(ENTRY e {
  a = f32[13,64] parameter(0), sharding={devices=[8,1]<=[8]}
  b = f32[19,64] parameter(1), sharding={devices=[8,1]<=[8]}
  ROOT c = f32[32,64] concatenate(a, b), dimensions={0}, sharding={devices=[8,1]<=[8]}
})", 8);
  EXPECT_EQ(Kinds(r), std::vector<std::string>(3, "all-to-all"));
  EXPECT_EQ(r.report.TotalCollectiveBytes(), 2016);
  // Even tiles too, when the other dim splits 8 ways: 7 * (8 + 8 + 16) * 2 * 4 = 1,792 B in three
  // all-to-alls against four permutes of f32[8,16] (2,048 B).
  const PartitionResult even = Check(R"(ENTRY e {
  a = f32[64,16] parameter(0), sharding={devices=[8,1]<=[8]}
  b = f32[64,16] parameter(1), sharding={devices=[8,1]<=[8]}
  ROOT c = f32[128,16] concatenate(a, b), dimensions={0}, sharding={devices=[8,1]<=[8]}
})", 8);
  EXPECT_EQ(Kinds(even), std::vector<std::string>(3, "all-to-all"));
  EXPECT_EQ(even.report.TotalCollectiveBytes(), 1792);
}

// jnp.roll(a, 3, axis=0) on 8 devices (8 rows per tile): a rotation, so each tile's piece is the
// last 3 rows of the tile before it (cyclically) and its own first 5 rows: one
// collective-permute of 3 rows (192 B; the windows of the two slices used to move 576 B, XLA
// moves the same 192 B). A roll by 13 crosses a whole tile: 3 rows from two tiles back, 5 from
// one back. Shift the other way, and uneven (a window per slice).
TEST(ConcatenateHandlerTest, RollMovesOnlyTheRowsThatCrossTiles) {
  const PartitionResult r = Check(R"(ENTRY e {
  a = f32[64,16] parameter(0), sharding={devices=[8,1]<=[8]}
  s2 = f32[3,16] slice(a), slice={[61:64], [0:16]}, sharding={devices=[8,1]<=[8]}
  s3 = f32[61,16] slice(a), slice={[0:61], [0:16]}, sharding={devices=[8,1]<=[8]}
  ROOT c = f32[64,16] concatenate(s2, s3), dimensions={0}, sharding={devices=[8,1]<=[8]}
})", 8);
  const std::vector<CollectiveRecord> c = CausedBy(r, "c");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].kind, "collective-permute");
  EXPECT_EQ(c[0].bytes, 192);
  EXPECT_EQ(c[0].groups, "{{0,1},{1,2},{2,3},{3,4},{4,5},{5,6},{6,7},{7,0}}");
  const PartitionResult r13 = Check(R"(ENTRY e {
  a = f32[64,16] parameter(0), sharding={devices=[8,1]<=[8]}
  s2 = f32[13,16] slice(a), slice={[51:64], [0:16]}
  s3 = f32[51,16] slice(a), slice={[0:51], [0:16]}
  ROOT c = f32[64,16] concatenate(s2, s3), dimensions={0}, sharding={devices=[8,1]<=[8]}
})", 8);
  const std::vector<CollectiveRecord> c13 = CausedBy(r13, "c");
  ASSERT_EQ(c13.size(), 2u);
  EXPECT_EQ(c13[0].bytes + c13[1].bytes, 512);
  // Partially replicated (each permute stays inside its replica group), and a result the
  // propagation put in another sharding (rotated in a's, then resharded).
  Check(R"(ENTRY e {
  a = f32[16,4] parameter(0), sharding={devices=[4,1,2]<=[8] last_tile_dim_replicate}
  s2 = f32[6,4] slice(a), slice={[10:16], [0:4]}
  s3 = f32[10,4] slice(a), slice={[0:10], [0:4]}
  ROOT c = f32[16,4] concatenate(s2, s3), dimensions={0}, sharding={devices=[4,1,2]<=[8] last_tile_dim_replicate}
})", 8);
  Check(R"(ENTRY e {
  a = f32[16,4] parameter(0), sharding={devices=[8,1]<=[8]}
  s2 = f32[1,4] slice(a), slice={[15:16], [0:4]}
  s3 = f32[15,4] slice(a), slice={[0:15], [0:4]}
  ROOT c = f32[16,4] concatenate(s2, s3), dimensions={0}, sharding={devices=[1,8]<=[8]}
})", 8);
  Check(R"(ENTRY e {
  a = f32[16,6] parameter(0), sharding={devices=[4,2]<=[2,4]T(1,0)}
  s2 = f32[11,6] slice(a), slice={[5:16], [0:6]}
  s3 = f32[5,6] slice(a), slice={[0:5], [0:6]}
  ROOT c = f32[16,6] concatenate(s2, s3), dimensions={0}, sharding={devices=[4,2]<=[2,4]T(1,0)}
})", 8);
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
