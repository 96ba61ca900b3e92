// reverse along sharded dims (handlers_halo.cc): each partition reverses its own piece and one
// collective-permute sends it to the partition of the mirrored tile. Checked against the
// one-device run with garbage in the inputs' padding; the collectives are pinned.
#include <gtest/gtest.h>

#include "xshard/base/strings.h"
#include "xshard/spmd/partitioner.h"
#include "xshard/spmd/run_partitioned.h"

namespace xs::spmd {
namespace {

using testing::CollectiveKinds;

PartitionResult Check(const std::string& shape, const std::string& sharding, const std::string& dims,
                      int64_t n = 4) {
  const std::string body = StrCat("ENTRY e {\n  x = ", shape, " parameter(0), sharding=", sharding, "\n  ROOT r = ",
                                  shape, " reverse(x), dimensions={", dims, "}, sharding=", sharding, "\n}\n");
  SCOPED_TRACE(body);
  return testing::PartitionAndCompare(body, n, {5});
}

// Each device receives its mirror's f32[2,16] piece: 128 bytes (XLA: the same permute).
TEST(ReverseHandlerTest, ShardedDimIsOnePermuteOfWholePieces) {
  const PartitionResult r = Check("f32[8,16]", "{devices=[4,1]<=[4]}", "0");
  ASSERT_EQ(CollectiveKinds(r), std::vector<std::string>{"collective-permute"});
  EXPECT_EQ(r.report.collectives[0].bytes, 2 * 16 * 4);
  EXPECT_EQ(r.report.collectives[0].groups, "{{0,3},{1,2},{2,1},{3,0}}");
}

TEST(ReverseHandlerTest, BothDimsOfATwoDimTilingAndAnUnshardedDim) {
  EXPECT_EQ(CollectiveKinds(Check("f32[8,6,3]", "{devices=[2,2,1]<=[4]}", "0,1,2")),
            std::vector<std::string>{"collective-permute"});
}

TEST(ReverseHandlerTest, PartiallyReplicatedAndExplicitDeviceOrders) {
  EXPECT_EQ(CollectiveKinds(Check("f32[8,4]", "{devices=[2,1,2]<=[4] last_tile_dim_replicate}", "0")),
            std::vector<std::string>{"collective-permute"});
  EXPECT_EQ(CollectiveKinds(Check("s32[8,4]", "{devices=[4,1]3,1,0,2}", "0,1")),
            std::vector<std::string>{"collective-permute"});
}

// Reversing only the unsharded dim needs nothing; an uneven sharded dim is gathered (and right).
TEST(ReverseHandlerTest, UnshardedDimIsLocalAndUnevenDimsStayCorrect) {
  EXPECT_TRUE(CollectiveKinds(Check("f32[8,5]", "{devices=[4,1]<=[4]}", "1")).empty());
  Check("f32[7,3]", "{devices=[4,1]<=[4]}", "0");
  Check("f32[6,10]", "{devices=[2,4]<=[8]}", "0,1", 8);
}

}  // namespace
}  // namespace xs::spmd
