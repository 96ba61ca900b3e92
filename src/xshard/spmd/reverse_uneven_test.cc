// reverse along an unevenly sharded dim (handlers_halo.cc): each tile fetches the input window
// its reversed tile reads by halo exchange and reverses it locally, instead of gathering the dim.
// Checked against the one-device run with garbage in the inputs' padding; the collectives and
// their bytes are pinned.
#include <gtest/gtest.h>

#include "xshard/base/strings.h"
#include "xshard/spmd/partitioner.h"
#include "xshard/spmd/run_partitioned.h"

namespace xs::spmd {
namespace {

PartitionResult Reverse(const std::string& shape, const std::string& sharding, const std::string& dims, int64_t n) {
  return testing::PartitionAndCompare(StrCat("ENTRY e {\n  x = ", shape, " parameter(0), sharding=", sharding,
                                             "\n  ROOT r = ", shape, " reverse(x), dimensions={", dims,
                                             "}, sharding=", sharding, "\n}\n"),
                                      n);
}

int64_t TotalBytesUneven(const PartitionResult& r) {
  int64_t bytes = 0;
  for (const CollectiveRecord& c : r.report.collectives) bytes += c.bytes;
  return bytes;
}

// f32[2,3] rows over 8 (tiles of one row, six empty): reversed in place, rows 1 and 0 sit on the
// mirrored tiles 6 and 7; one permute brings them to tiles 0 and 1 of the mirrored order, one
// sends them home (12 B each), where summing the zero-padded pieces received 42 B.
TEST(ReverseUnevenTest, TwoRowsOnEightDevicesSwapByPermutes) {
  const PartitionResult r = Reverse("f32[2,3]", "{devices=[8,1]<=[8]}", "0", 8);
  for (const std::string& kind : testing::CollectiveKinds(r)) EXPECT_EQ(kind, "collective-permute");
  EXPECT_EQ(TotalBytesUneven(r), 2 * 12);
}

// f32[10,4] rows over 4 (tiles of 3, the last holding one row): reversed in place, the pieces
// are off by the two padding rows; each tile takes two rows from the next (32 B), then one
// permute sends the mirrored tiles home (48 B), where gathering the dim received 144 B.
TEST(ReverseUnevenTest, StraddlingWindowsMoveOnlyTheirRows) {
  const PartitionResult r = Reverse("f32[10,4]", "{devices=[4,1]<=[4]}", "0", 4);
  ASSERT_EQ(testing::CollectiveKinds(r), std::vector<std::string>(2, "collective-permute"));
  EXPECT_EQ(r.report.collectives[0].bytes, 2 * 4 * 4);
  EXPECT_EQ(r.report.collectives[1].bytes, 3 * 4 * 4);
}

// Uneven and even dims reversed together, partial replication, explicit device orders.
TEST(ReverseUnevenTest, MixedDimsAndDeviceOrdersStayCorrect) {
  Reverse("f32[7,8]", "{devices=[4,2]<=[8]}", "0,1", 8);
  Reverse("s32[5,6]", "{devices=[2,1,2]<=[4] last_tile_dim_replicate}", "0", 4);
  Reverse("f32[9,3]", "{devices=[4,1]3,1,0,2}", "0,1", 4);
  Reverse("f32[6,10]", "{devices=[4,2]<=[8]}", "0,1", 8);
}

}  // namespace
}  // namespace xs::spmd
