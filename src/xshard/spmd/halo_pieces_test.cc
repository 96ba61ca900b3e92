// Halo exchanges where tiles want different parts of their neighbour at the same distance
// (halo.cc PieceWindow; a jnp.split of a sharded dim): each tile receives only its own part
// instead of the union of what any tile needs. Checked against the one-device run with garbage
// in the inputs' padding; the collectives and their bytes are pinned.
#include <gtest/gtest.h>

#include "xshard/base/strings.h"
#include "xshard/spmd/partitioner.h"
#include "xshard/spmd/run_partitioned.h"

namespace xs::spmd {
namespace {

int64_t TotalBytes(const PartitionResult& r) {
  int64_t bytes = 0;
  for (const CollectiveRecord& c : r.report.collectives) bytes += c.bytes;
  return bytes;
}

PartitionResult Slice(const std::string& in, const std::string& out, const std::string& slice,
                      const std::string& sharding, int64_t n) {
  return testing::PartitionAndCompare(StrCat("ENTRY e {\n  x = ", in, " parameter(0), sharding=", sharding,
                                             "\n  ROOT s = ", out, " slice(x), slice=", slice,
                                             ", sharding=", sharding, "\n}\n"),
                                      n);
}

// f32[16,384] with the 384 dim over 4 (tiles of 96) split in halves (tiles of 48). The first
// half: tile 1 needs the last 48 of tile 0, tile 2 the first 48 of tile 1 (both one tile back),
// tile 3 the last 48 of tile 1. Each permute moves 16 x 48 floats (3 KiB); sending the union
// moved 96 columns one tile back (9 KiB in all).
TEST(HaloPiecesTest, SplitHalvesReceiveOnlyTheirOwnPart) {
  for (const char* slice : {"{[0:16], [0:192]}", "{[0:16], [192:384]}"}) {
    const PartitionResult r = Slice("f32[16,384]", "f32[16,192]", slice, "{devices=[1,4]<=[4]}", 4);
    ASSERT_EQ(testing::CollectiveKinds(r), std::vector<std::string>(2, "collective-permute")) << slice;
    for (const CollectiveRecord& c : r.report.collectives) EXPECT_EQ(c.bytes, 16 * 48 * 4);
  }
}

// The first of three parts (tiles of 32 from tiles of 96, 4 tiles): one tile back, tile 1 needs
// [32, 64) of tile 0; two back, tile 2 needs [64, 96) of tile 0 and tile 3 [0, 32) of tile 1.
// Two permutes of f32[4,32] (512 B each), where the unions were 64 and 96 wide (2.5 KiB). The
// same on a 2-D tiling with replication, on uneven dims and an explicit device order.
TEST(HaloPiecesTest, ThirdsUnevenAndReplicatedStayCorrect) {
  const PartitionResult thirds = Slice("f32[4,384]", "f32[4,128]", "{[0:4], [0:128]}", "{devices=[1,4]<=[4]}", 4);
  ASSERT_EQ(testing::CollectiveKinds(thirds), std::vector<std::string>(2, "collective-permute"));
  EXPECT_EQ(TotalBytes(thirds), 2 * 4 * 32 * 4);
  Slice("f32[4,384]", "f32[4,192]", "{[0:4], [192:384]}", "{devices=[2,4,2]<=[16] last_tile_dim_replicate}", 16);
  Slice("f32[3,50]", "f32[3,25]", "{[0:3], [25:50]}", "{devices=[1,4]<=[4]}", 4);
  Slice("s32[5,37]", "s32[5,18]", "{[0:5], [0:18]}", "{devices=[1,4]3,1,0,2}", 4);
}

// The halves of f32[16,384] over 8 (tiles of 48 into tiles of 24): tile k needs half of source
// tile k / 2, up to four tiles away. Every source serves two tiles, so two rounds of one permute
// each (16 x 24 floats, 1.5 KiB), where whole source tiles or per-shift unions moved far more.
TEST(HaloPiecesTest, FarSplitsGoInRoundsOfOwnParts) {
  const PartitionResult r = Slice("f32[16,384]", "f32[16,192]", "{[0:16], [0:192]}", "{devices=[1,8]<=[8]}", 8);
  ASSERT_EQ(testing::CollectiveKinds(r), std::vector<std::string>(2, "collective-permute"));
  for (const CollectiveRecord& c : r.report.collectives) EXPECT_EQ(c.bytes, 16 * 24 * 4);
  EXPECT_EQ(r.report.collectives[0].groups, "{{0,1},{1,2},{2,4},{3,6}}");
}

}  // namespace
}  // namespace xs::spmd
