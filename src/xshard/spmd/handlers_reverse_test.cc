// reverse along sharded dims (handlers_halo.cc): each partition reverses its own piece and one
// collective-permute sends it to the partition of the mirrored tile. Checked against the
// one-device run with garbage in the inputs' padding; the collectives are pinned.
#include <gtest/gtest.h>

#include "xshard/base/strings.h"
#include "xshard/spmd/partitioner.h"
#include "xshard/spmd/run_partitioned.h"
#include "xshard/text/parser.h"
#include "xshard/text/printer.h"

namespace xs::spmd {
namespace {

std::vector<std::string> Kinds(const PartitionResult& r) {
  std::vector<std::string> out;
  for (const CollectiveRecord& c : r.report.collectives) out.push_back(c.kind);
  return out;
}

PartitionResult Check(const std::string& shape, const std::string& sharding, const std::string& dims,
                      int64_t n = 4) {
  const std::string text = StrCat("HloModule m, num_partitions=", n, "\nENTRY e {\n  x = ", shape,
                                  " parameter(0), sharding=", sharding, "\n  ROOT r = ", shape,
                                  " reverse(x), dimensions={", dims, "}, sharding=", sharding, "\n}\n");
  StatusOr<std::unique_ptr<Module>> global = ParseHloModule(text);
  EXPECT_TRUE(global.ok()) << global.status().ToString();
  if (!global.ok()) return PartitionResult{};
  StatusOr<PartitionResult> r = Partition(**global, n);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return PartitionResult{};
  Status s = testing::CompareWithGlobal(**global, *r, testing::TestInputs(**global, 5));
  EXPECT_TRUE(s.ok()) << text << s.ToString() << "\n" << PrintHloModule(*r->module);
  return *std::move(r);
}

// Each device receives its mirror's f32[2,16] piece: 128 bytes (XLA: the same permute).
TEST(ReverseHandlerTest, ShardedDimIsOnePermuteOfWholePieces) {
  const PartitionResult r = Check("f32[8,16]", "{devices=[4,1]<=[4]}", "0");
  ASSERT_EQ(Kinds(r), std::vector<std::string>{"collective-permute"});
  EXPECT_EQ(r.report.collectives[0].bytes, 2 * 16 * 4);
  EXPECT_EQ(r.report.collectives[0].groups, "{{0,3},{1,2},{2,1},{3,0}}");
}

TEST(ReverseHandlerTest, BothDimsOfATwoDimTilingAndAnUnshardedDim) {
  EXPECT_EQ(Kinds(Check("f32[8,6,3]", "{devices=[2,2,1]<=[4]}", "0,1,2")),
            std::vector<std::string>{"collective-permute"});
}

TEST(ReverseHandlerTest, PartiallyReplicatedAndExplicitDeviceOrders) {
  EXPECT_EQ(Kinds(Check("f32[8,4]", "{devices=[2,1,2]<=[4] last_tile_dim_replicate}", "0")),
            std::vector<std::string>{"collective-permute"});
  EXPECT_EQ(Kinds(Check("s32[8,4]", "{devices=[4,1]3,1,0,2}", "0,1")),
            std::vector<std::string>{"collective-permute"});
}

// Reversing only the unsharded dim needs nothing; an uneven sharded dim is gathered (and right).
TEST(ReverseHandlerTest, UnshardedDimIsLocalAndUnevenDimsStayCorrect) {
  EXPECT_TRUE(Kinds(Check("f32[8,5]", "{devices=[4,1]<=[4]}", "1")).empty());
  Check("f32[7,3]", "{devices=[4,1]<=[4]}", "0");
  Check("f32[6,10]", "{devices=[2,4]<=[8]}", "0,1", 8);
}

}  // namespace
}  // namespace xs::spmd
