// Two reverses of one value over the same sharded dims (handlers_halo.cc): on even dims with the
// result kept in the operand's sharding, the operand's pieces move to the mirrored devices before
// the local reverse, so the reshard cache moves them once for both (XLA: one permute, CSE'd).
// Checked against the one-device run; the collectives and their bytes are pinned.
#include <gtest/gtest.h>

#include "xshard/base/strings.h"
#include "xshard/spmd/partitioner.h"
#include "xshard/spmd/run_partitioned.h"

namespace xs::spmd {
namespace {

// x reversed along `dims_a` and along `dims_b`, the two results added; every value has `sharding`
// unless `result_sharding` names another for the second reverse.
PartitionResult TwoReverses(const std::string& shape, const std::string& sharding, const std::string& dims_a,
                            const std::string& dims_b, int64_t n, const std::string& result_sharding = "") {
  const std::string second = result_sharding.empty() ? sharding : result_sharding;
  return testing::PartitionAndCompare(
      StrCat("ENTRY e {\n  x = ", shape, " parameter(0), sharding=", sharding, "\n  a = ", shape,
             " reverse(x), dimensions={", dims_a, "}, sharding=", sharding, "\n  b = ", shape,
             " reverse(x), dimensions={", dims_b, "}, sharding=", second, "\n  ROOT s = ", shape,
             " add(a, b), sharding=", sharding, "\n}\n"),
      n);
}

// f32[4,8,6] over [2,4,1]: flip(x, 1) and flip(x, (1, 2)) (dim 2 is not sharded) need the same
// move of x's f32[2,2,6] pieces (48 B): one permute, where reversing first moved two different
// values (96 B).
TEST(ReversePairTest, ReversesOfOneValueOverOneShardedDimShareOnePermute) {
  const PartitionResult r = TwoReverses("f32[4,8,6]", "{devices=[2,4,1]<=[8]}", "1", "1,2", 8);
  ASSERT_EQ(testing::CollectiveKinds(r), std::vector<std::string>{"collective-permute"});
  EXPECT_EQ(r.report.collectives[0].bytes, 2 * 2 * 6 * 4);
  EXPECT_EQ(r.report.collectives[0].groups, "{{0,3},{1,2},{2,1},{3,0},{4,7},{5,6},{6,5},{7,4}}");
}

// Both sharded dims mirrored, partial replication and an explicit device order: still one move.
TEST(ReversePairTest, TwoShardedDimsAndDeviceOrdersShareOnePermute) {
  EXPECT_EQ(testing::CollectiveKinds(TwoReverses("f32[8,6,3]", "{devices=[2,2,1]<=[4]}", "0,1", "0,1,2", 4)),
            std::vector<std::string>{"collective-permute"});
  EXPECT_EQ(testing::CollectiveKinds(
                TwoReverses("f32[8,4]", "{devices=[2,1,2]<=[4] last_tile_dim_replicate}", "0", "0,1", 4)),
            std::vector<std::string>{"collective-permute"});
  EXPECT_EQ(testing::CollectiveKinds(TwoReverses("s32[8,4]", "{devices=[4,1]3,1,0,2}", "0", "0,1", 4)),
            std::vector<std::string>{"collective-permute"});
}

// Different sharded dims mirrored are different moves: two permutes.
TEST(ReversePairTest, DifferentShardedDimsAreTwoMoves) {
  EXPECT_EQ(testing::CollectiveKinds(TwoReverses("f32[8,6]", "{devices=[2,2]<=[4]}", "0", "1", 4)),
            std::vector<std::string>(2, "collective-permute"));
}

// Uneven dims keep the halo route, and a reverse whose result takes another sharding keeps the
// reverse-then-reshard route: right either way.
TEST(ReversePairTest, UnevenDimsAndOtherResultShardingsStayCorrect) {
  TwoReverses("f32[10,4]", "{devices=[4,1]<=[4]}", "0", "0,1", 4);
  TwoReverses("f32[7,8]", "{devices=[4,2]<=[8]}", "0,1", "0", 8);
  TwoReverses("f32[8,4]", "{devices=[4,1]<=[4]}", "0", "0,1", 4, "{devices=[1,4]<=[4]}");
  TwoReverses("f32[8,4]", "{devices=[4,1]<=[4]}", "0", "0", 4, "{replicated}");
}

}  // namespace
}  // namespace xs::spmd
