// pad with interior padding along a sharded dim (handlers_halo.cc, what associative_scan lowers
// to): each partition builds its output tile from its own input tile plus halos of its
// neighbours', pads it locally and slices its offset, instead of gathering the dim. Checked
// against the one-device run with garbage in the inputs' padding; the collectives are pinned.
#include <gtest/gtest.h>

#include "xshard/base/strings.h"
#include "xshard/spmd/partitioner.h"
#include "xshard/spmd/run_partitioned.h"

namespace xs::spmd {
namespace {

std::vector<std::string> KindsInterior(const PartitionResult& r) { return testing::CollectiveKinds(r); }

PartitionResult Pad(const std::string& in, const std::string& out, const std::string& padding,
                    const std::string& in_sharding, const std::string& out_sharding, int64_t n) {
  return testing::PartitionAndCompare(StrCat("ENTRY e {\n  x = ", in, " parameter(0), sharding=", in_sharding,
                                             "\n  v = f32[] constant(-3)\n  ROOT p = ", out,
                                             " pad(x, v), padding=", padding, ", sharding=", out_sharding, "\n}\n"),
                                      n);
}

// f32[64,16] rows over 8 -> f32[128,16] (interior 1, high 1): output tile k (16 rows) is input
// tile k (8 rows) with holes, so nothing moves (the rule handler gathered the dim: 3.5 KiB).
TEST(InteriorPadTest, OutputTilesOfTheirOwnInputTileMoveNothing) {
  EXPECT_TRUE(KindsInterior(Pad("f32[64,16]", "f32[128,16]", "0_1_1x0_0_0", "{devices=[8,1]<=[8]}",
                        "{devices=[8,1]<=[8]}", 8))
                  .empty());
  EXPECT_TRUE(KindsInterior(Pad("f32[64,16]", "f32[128,16]", "1_0_1x0_0_0", "{devices=[8,1]<=[8]}",
                        "{devices=[8,1]<=[8]}", 8))
                  .empty());
}

// low 3, interior 1: f32[64,16] -> f32[130,16] in shards of 17. Output position 3 + 2i holds
// input i; tile k starts at input ceil((17k - 3) / 2): tile 1 needs row 7 of tile 0, tiles 3..6
// one or two rows of the next tile. Every tile sends to one tile and receives from one, so one
// permute of two rows (128 B) does it (by shift: 64 B back and 128 B forward).
TEST(InteriorPadTest, ShiftedTilesExchangeOnlyTheirHalos) {
  const PartitionResult r = Pad("f32[64,16]", "f32[130,16]", "3_0_1x0_0_0", "{devices=[8,1]<=[8]}",
                                "{devices=[8,1]<=[8]}", 8);
  ASSERT_EQ(KindsInterior(r), std::vector<std::string>{"collective-permute"});
  EXPECT_EQ(r.report.collectives[0].bytes, 128);
}

// Interior 2, negative low padding, uneven input and output shards, a sharded dim next to a
// padded unsharded one, two sharded dims, partial replication and tiles that hold no input: only
// halo permutes, never a gather.
TEST(InteriorPadTest, UnevenNegativeAndMultiDimPadsStayCorrect) {
  for (const PartitionResult& r :
       {Pad("f32[13,3]", "f32[38,5]", "1_0_2x1_1_0", "{devices=[4,1]<=[4]}", "{devices=[4,1]<=[4]}", 4),
        Pad("f32[16,4]", "f32[30,4]", "-1_0_1x0_0_0", "{devices=[4,1]<=[4]}", "{devices=[4,1]<=[4]}", 4),
        Pad("f32[6,10]", "f32[12,19]", "0_1_1x0_0_1", "{devices=[2,4]<=[8]}", "{devices=[2,4]<=[8]}", 8),
        Pad("f32[8,4]", "f32[17,4]", "1_1_1x0_0_0", "{devices=[2,1,2]<=[4] last_tile_dim_replicate}",
            "{devices=[2,1,2]<=[4] last_tile_dim_replicate}", 4),
        Pad("f32[8,4]", "f32[17,4]", "1_1_1x0_0_0", "{devices=[4,1]3,1,0,2}", "{devices=[4,1]3,1,0,2}", 4)}) {
    for (const std::string& kind : KindsInterior(r)) EXPECT_EQ(kind, "collective-permute");
  }
}

// associative_scan's tiny pads on 8 devices: f32[2,4] and f32[4,4] (most tiles empty) padded to
// twice their length, low or high; output tile 2j needs input tile j (up to 3 tiles away).
TEST(InteriorPadTest, TinyScanPadsFetchFarTilesWithoutGathering) {
  for (const char* padding : {"0_1_1x0_0_0", "1_0_1x0_0_0"}) {
    const PartitionResult r =
        Pad("f32[4,4]", "f32[8,4]", padding, "{devices=[8,1]<=[8]}", "{devices=[8,1]<=[8]}", 8);
    for (const CollectiveRecord& c : r.report.collectives) {
      EXPECT_EQ(c.kind, "collective-permute");
      EXPECT_EQ(c.bytes, 16);
    }
    EXPECT_LE(r.report.collectives.size(), 1u);
    Pad("f32[2,4]", "f32[4,4]", padding, "{devices=[8,1]<=[8]}", "{devices=[8,1]<=[8]}", 8);
    Pad("f32[1,4]", "f32[2,4]", padding, "{devices=[8,1]<=[8]}", "{devices=[8,1]<=[8]}", 8);
  }
}

}  // namespace
}  // namespace xs::spmd
