// Tests for TileAssignment: construction checks, indexing, reshape/transpose, and XLA's iota
// canonicalization (expected forms come from XLA itself, see kXlaIotaCases).
#include "xshard/sharding/tile_assignment.h"

#include <algorithm>
#include <numeric>
#include <unordered_set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace xs {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TileAssignment DevicesAssignment(std::vector<int64_t> dims, std::vector<int64_t> devices) {
  StatusOr<TileAssignment> t = TileAssignment::FromDevices(std::move(dims), std::move(devices));
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return *t;
}

TileAssignment Iota(std::vector<int64_t> dims, std::vector<int64_t> reshape,
                    std::vector<int> perm) {
  StatusOr<TileAssignment> t = TileAssignment::FromIota(std::move(dims), {reshape, perm});
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return *t;
}

TEST(TileAssignmentTest, ExplicitListPrintsAsGiven) {
  TileAssignment t = DevicesAssignment({2, 4}, {0, 2, 4, 6, 1, 3, 5, 7});
  EXPECT_EQ(t.ToString(), "[2,4]0,2,4,6,1,3,5,7");
  EXPECT_FALSE(t.stored_as_iota());
  EXPECT_EQ(t.num_devices(), 8);
  EXPECT_EQ(t.num_dims(), 2);
}

TEST(TileAssignmentTest, IotaMaterializesNumpyOrder) {
  // np.arange(8).reshape(4,2).transpose(1,0).reshape(2,4) = [[0,2,4,6],[1,3,5,7]].
  TileAssignment t = Iota({2, 4}, {4, 2}, {1, 0});
  EXPECT_THAT(t.devices(), ElementsAre(0, 2, 4, 6, 1, 3, 5, 7));
  EXPECT_EQ(t.ToString(), "[2,4]<=[4,2]T(1,0)");
  EXPECT_EQ(t.ArrayToString(), "[4,2]T(1,0)");
  EXPECT_TRUE(t.stored_as_iota());
}

TEST(TileAssignmentTest, PlainIotaIsRowMajor) {
  TileAssignment t = TileAssignment::Iota({2, 3});
  EXPECT_THAT(t.devices(), ElementsAre(0, 1, 2, 3, 4, 5));
  EXPECT_EQ(t.ToString(), "[2,3]<=[6]");
}

TEST(TileAssignmentTest, FromIotaStoresXlasCanonicalForm) {
  // Identity transposes merge into one reshape dim; size-1 dims drop out.
  EXPECT_EQ(Iota({2, 4}, {2, 4}, {0, 1}).ToString(), "[2,4]<=[8]");
  EXPECT_EQ(Iota({2}, {2, 1}, {1, 0}).ToString(), "[2]<=[2]");
  // [3,4,5]T(1,2,0): dims 1 and 2 stay adjacent and in order -> [3,20]T(1,0) (XLA's own example).
  EXPECT_EQ(Iota({60}, {3, 4, 5}, {1, 2, 0}).ToString(), "[60]<=[3,20]T(1,0)");
  EXPECT_EQ(Iota({60}, {1, 3, 1, 4, 1, 5}, {4, 3, 2, 5, 1, 0}).ToString(), "[60]<=[3,20]T(1,0)");
  EXPECT_EQ(Iota({8}, {2, 2, 2}, {2, 1, 0}).ToString(), "[8]<=[2,2,2]T(2,1,0)");
  EXPECT_EQ(Iota({1}, {1, 1}, {1, 0}).ToString(), "[1]<=[1]");
}

TEST(TileAssignmentTest, FindIotaDetectsTheCanonicalForm) {
  EXPECT_EQ(DevicesAssignment({2, 2}, {0, 1, 2, 3}).FindIota()->ToString(), "<=[4]");
  EXPECT_EQ(DevicesAssignment({2, 4}, {0, 2, 4, 6, 1, 3, 5, 7}).FindIota()->ToString(), "<=[4,2]T(1,0)");
  EXPECT_EQ(DevicesAssignment({2, 2, 2}, {0, 4, 2, 6, 1, 5, 3, 7}).FindIota()->ToString(),
            "<=[2,2,2]T(2,1,0)");
  std::optional<IotaForm> one = DevicesAssignment({1, 1}, {0}).FindIota();
  ASSERT_TRUE(one.has_value());
  EXPECT_EQ(*one, (IotaForm{{1}, {}}));
}

TEST(TileAssignmentTest, FindIotaRejectsNonIotaLists) {
  EXPECT_FALSE(DevicesAssignment({2}, {1, 0}).FindIota().has_value());
  EXPECT_FALSE(DevicesAssignment({4}, {0, 3, 1, 2}).FindIota().has_value());
  EXPECT_FALSE(DevicesAssignment({4}, {0, 1, 3, 2}).FindIota().has_value());
  EXPECT_FALSE(DevicesAssignment({2, 2}, {0, 2, 3, 1}).FindIota().has_value());
  EXPECT_FALSE(DevicesAssignment({2, 2}, {2, 3, 5, 7}).FindIota().has_value());
  // Looks like stride 2 then stride 1, but the strides are not those of one reshape.
  EXPECT_FALSE(DevicesAssignment({6}, {0, 2, 4, 1, 3, 6}).FindIota().has_value());
}

TEST(TileAssignmentTest, ToIotaAndToV1SwitchTheTextOnly) {
  TileAssignment v1 = DevicesAssignment({2, 4}, {0, 2, 4, 6, 1, 3, 5, 7});
  TileAssignment v2 = v1.ToIota();
  EXPECT_EQ(v2.ToString(), "[2,4]<=[4,2]T(1,0)");
  EXPECT_EQ(v2.ToV1().ToString(), "[2,4]0,2,4,6,1,3,5,7");
  EXPECT_EQ(v1, v2);
  EXPECT_EQ(DevicesAssignment({2}, {1, 0}).ToIota().ToString(), "[2]1,0");
}

TEST(TileAssignmentTest, IndexingAndIndexOf) {
  TileAssignment t = Iota({2, 4}, {4, 2}, {1, 0});
  EXPECT_EQ(t({0, 0}), 0);
  EXPECT_EQ(t({0, 3}), 6);
  EXPECT_EQ(t({1, 2}), 5);
  EXPECT_THAT(*t.IndexOf(5), ElementsAre(1, 2));
  EXPECT_THAT(*t.IndexOf(6), ElementsAre(0, 3));
  EXPECT_FALSE(t.IndexOf(8).has_value());
}

TEST(TileAssignmentTest, ReshapeKeepsDevicesAndForm) {
  TileAssignment t = Iota({2, 4}, {4, 2}, {1, 0}).Reshape({4, 2});
  EXPECT_EQ(t.ToString(), "[4,2]<=[4,2]T(1,0)");
  EXPECT_THAT(t.devices(), ElementsAre(0, 2, 4, 6, 1, 3, 5, 7));
  EXPECT_EQ(DevicesAssignment({2, 2}, {3, 1, 2, 0}).Reshape({4}).ToString(), "[4]3,1,2,0");
}

TEST(TileAssignmentTest, TransposeMovesDims) {
  // [[0,1,2],[3,4,5]] transposed -> [[0,3],[1,4],[2,5]].
  TileAssignment t = TileAssignment::Iota({2, 3}).Transpose({1, 0});
  EXPECT_THAT(t.dims(), ElementsAre(3, 2));
  EXPECT_THAT(t.devices(), ElementsAre(0, 3, 1, 4, 2, 5));
  EXPECT_EQ(t.ToString(), "[3,2]<=[2,3]T(1,0)");
  // An explicit list stays explicit.
  TileAssignment v1 = DevicesAssignment({2, 2}, {3, 1, 2, 0}).Transpose({1, 0});
  EXPECT_EQ(v1.ToString(), "[2,2]3,2,1,0");
  // Three dims: result dim i is source dim perm[i].
  TileAssignment t3 = TileAssignment::Iota({2, 3, 4}).Transpose({2, 0, 1});
  EXPECT_THAT(t3.dims(), ElementsAre(4, 2, 3));
  EXPECT_EQ(t3({1, 1, 2}), 1 * 12 + 2 * 4 + 1);
}

TEST(TileAssignmentTest, EqualityIgnoresTheTextForm) {
  EXPECT_EQ(DevicesAssignment({4}, {0, 1, 2, 3}), TileAssignment::Iota({4}));
  EXPECT_FALSE(DevicesAssignment({4}, {0, 1, 2, 3}) == TileAssignment::Iota({2, 2}));
  EXPECT_FALSE(DevicesAssignment({4}, {0, 1, 3, 2}) == TileAssignment::Iota({4}));
}

TEST(TileAssignmentTest, FromDevicesErrorsNameTheProblem) {
  EXPECT_THAT(TileAssignment::FromDevices({2, 2}, {0, 1, 2}).status().message(),
              HasSubstr("needs 4 device ids (the product of its dims) but 3 were given"));
  EXPECT_THAT(TileAssignment::FromDevices({2}, {1, 1}).status().message(),
              HasSubstr("lists device 1 twice"));
  EXPECT_THAT(TileAssignment::FromDevices({2}, {-1, 0}).status().message(),
              HasSubstr("device id -1 is negative"));
  EXPECT_THAT(TileAssignment::FromDevices({0}, {}).status().message(),
              HasSubstr("must each be >= 1"));
  EXPECT_THAT(TileAssignment::FromDevices({1 << 21}, {}).status().message(),
              HasSubstr("xshard supports at most 8192"));
}

TEST(TileAssignmentTest, FromIotaErrorsNameTheProblem) {
  EXPECT_THAT(TileAssignment::FromIota({8}, {{2, 2}, {1, 0}}).status().message(),
              HasSubstr("iota tile assignment size 4 does not match the tile assignment "
                        "dimensions product 8"));
  EXPECT_THAT(TileAssignment::FromIota({4}, {{2, 2}, {0, 0}}).status().message(),
              HasSubstr("is not a permutation of the 2 reshape dims"));
  EXPECT_THAT(TileAssignment::FromIota({4}, {{}, {}}).status().message(),
              HasSubstr("at least one reshape dim"));
}

// dims, reshape dims, perm -> XLA's printed tile assignment and its devices.
struct IotaCase {
  std::vector<int64_t> dims, reshape;
  std::vector<int> perm;
  const char* canonical;
  std::vector<int64_t> devices;
};
const IotaCase kXlaIotaCases[] = {
    // BEGIN GENERATED kXlaIotaCases by tests/tools/gen_named_sharding_cases.py; do not edit.
    {{24, 1}, {4, 2, 3}, {1, 2, 0}, "[24,1]<=[4,6]T(1,0)", {0, 6, 12, 18, 1, 7, 13, 19, 2, 8, 14, 20, 3, 9, 15, 21, 4, 10, 16, 22, 5, 11, 17, 23}},
    {{24, 1, 1}, {24, 1, 1}, {0, 1, 2}, "[24,1,1]<=[24]", {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23}},
    {{6}, {2, 3}, {1, 0}, "[6]<=[2,3]T(1,0)", {0, 3, 1, 4, 2, 5}},
    {{1, 2, 1, 8}, {16}, {0}, "[1,2,1,8]<=[16]", {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}},
    {{32}, {16, 2}, {0, 1}, "[32]<=[32]", {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31}},
    {{1, 2, 8}, {1, 16}, {0, 1}, "[1,2,8]<=[16]", {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}},
    {{1, 2, 2, 1, 2}, {1, 4, 2}, {1, 0, 2}, "[1,2,2,1,2]<=[8]", {0, 1, 2, 3, 4, 5, 6, 7}},
    {{1, 4, 3}, {4, 3, 1, 1}, {1, 3, 0, 2}, "[1,4,3]<=[4,3]T(1,0)", {0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11}},
    {{1, 2, 4, 2}, {1, 4, 4}, {0, 1, 2}, "[1,2,4,2]<=[16]", {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}},
    {{2, 1}, {2}, {0}, "[2,1]<=[2]", {0, 1}},
    {{1, 1, 4, 2}, {2, 1, 4}, {1, 2, 0}, "[1,1,4,2]<=[2,4]T(1,0)", {0, 4, 1, 5, 2, 6, 3, 7}},
    {{2, 4, 3, 1, 1}, {2, 12}, {1, 0}, "[2,4,3,1,1]<=[2,12]T(1,0)", {0, 12, 1, 13, 2, 14, 3, 15, 4, 16, 5, 17, 6, 18, 7, 19, 8, 20, 9, 21, 10, 22, 11, 23}},
    {{1, 8}, {4, 1, 2, 1}, {2, 1, 0, 3}, "[1,8]<=[4,2]T(1,0)", {0, 2, 4, 6, 1, 3, 5, 7}},
    {{2, 16}, {4, 4, 2}, {2, 0, 1}, "[2,16]<=[16,2]T(1,0)", {0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31}},
    {{2, 1, 4, 3, 1}, {4, 3, 2}, {0, 2, 1}, "[2,1,4,3,1]<=[4,3,2]T(0,2,1)", {0, 2, 4, 1, 3, 5, 6, 8, 10, 7, 9, 11, 12, 14, 16, 13, 15, 17, 18, 20, 22, 19, 21, 23}},
    {{1, 16, 1}, {2, 8}, {1, 0}, "[1,16,1]<=[2,8]T(1,0)", {0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15}},
    {{3, 2, 1}, {1, 2, 3}, {0, 2, 1}, "[3,2,1]<=[2,3]T(1,0)", {0, 3, 1, 4, 2, 5}},
    {{2, 1, 3}, {1, 2, 3}, {1, 0, 2}, "[2,1,3]<=[6]", {0, 1, 2, 3, 4, 5}},
    {{2, 1}, {2}, {0}, "[2,1]<=[2]", {0, 1}},
    {{1, 2, 1}, {1, 2}, {0, 1}, "[1,2,1]<=[2]", {0, 1}},
    {{2}, {2, 1}, {0, 1}, "[2]<=[2]", {0, 1}},
    {{6, 2, 2}, {1, 24, 1}, {0, 1, 2}, "[6,2,2]<=[24]", {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23}},
    {{1, 8, 2}, {4, 1, 4}, {2, 1, 0}, "[1,8,2]<=[4,4]T(1,0)", {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15}},
    {{2, 4, 1}, {1, 2, 4}, {1, 2, 0}, "[2,4,1]<=[8]", {0, 1, 2, 3, 4, 5, 6, 7}},
    {{2, 3, 2, 1, 1}, {12}, {0}, "[2,3,2,1,1]<=[12]", {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}},
    {{2, 1, 3}, {1, 1, 3, 2}, {2, 3, 0, 1}, "[2,1,3]<=[6]", {0, 1, 2, 3, 4, 5}},
    {{1, 1, 16}, {4, 4, 1}, {2, 1, 0}, "[1,1,16]<=[4,4]T(1,0)", {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15}},
    {{2, 1}, {1, 2}, {0, 1}, "[2,1]<=[2]", {0, 1}},
    {{2, 2, 2}, {4, 1, 2}, {1, 2, 0}, "[2,2,2]<=[4,2]T(1,0)", {0, 2, 4, 6, 1, 3, 5, 7}},
    {{4, 3, 1}, {1, 1, 12}, {2, 1, 0}, "[4,3,1]<=[12]", {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}},
    {{2, 2, 2, 1, 1}, {4, 1, 2}, {1, 0, 2}, "[2,2,2,1,1]<=[8]", {0, 1, 2, 3, 4, 5, 6, 7}},
    {{2, 2, 2, 1, 1, 2}, {16, 1, 1}, {0, 2, 1}, "[2,2,2,1,1,2]<=[16]", {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}},
    {{3, 2}, {2, 1, 3, 1}, {0, 3, 2, 1}, "[3,2]<=[6]", {0, 1, 2, 3, 4, 5}},
    {{1, 1, 4}, {1, 2, 1, 2}, {2, 3, 0, 1}, "[1,1,4]<=[2,2]T(1,0)", {0, 2, 1, 3}},
    {{3, 1, 8}, {1, 6, 1, 4}, {1, 2, 0, 3}, "[3,1,8]<=[24]", {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23}},
    {{2, 16}, {16, 2}, {1, 0}, "[2,16]<=[16,2]T(1,0)", {0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31}},
    {{2, 8, 2}, {4, 2, 4}, {1, 2, 0}, "[2,8,2]<=[4,8]T(1,0)", {0, 8, 16, 24, 1, 9, 17, 25, 2, 10, 18, 26, 3, 11, 19, 27, 4, 12, 20, 28, 5, 13, 21, 29, 6, 14, 22, 30, 7, 15, 23, 31}},
    {{6, 2}, {4, 1, 3, 1}, {1, 0, 3, 2}, "[6,2]<=[12]", {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}},
    {{1, 2, 1}, {2, 1}, {0, 1}, "[1,2,1]<=[2]", {0, 1}},
    {{4, 8}, {2, 8, 2, 1}, {0, 3, 1, 2}, "[4,8]<=[32]", {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31}},
    {{2, 1, 2, 1, 2}, {1, 2, 2, 2, 1}, {4, 0, 2, 1, 3}, "[2,1,2,1,2]<=[2,2,2]T(1,0,2)", {0, 1, 4, 5, 2, 3, 6, 7}},
    {{1, 1, 2, 8, 2}, {4, 4, 1, 2}, {0, 1, 3, 2}, "[1,1,2,8,2]<=[32]", {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31}},
    {{2}, {2}, {0}, "[2]<=[2]", {0, 1}},
    {{1, 2, 8, 2, 1}, {16, 2, 1, 1}, {1, 0, 3, 2}, "[1,2,8,2,1]<=[16,2]T(1,0)", {0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31}},
    {{1, 1, 2, 3}, {1, 1, 6}, {0, 1, 2}, "[1,1,2,3]<=[6]", {0, 1, 2, 3, 4, 5}},
    {{2, 2}, {4, 1, 1}, {0, 1, 2}, "[2,2]<=[4]", {0, 1, 2, 3}},
    {{8, 1, 1}, {2, 2, 2}, {0, 1, 2}, "[8,1,1]<=[8]", {0, 1, 2, 3, 4, 5, 6, 7}},
    {{8, 2, 2}, {1, 32}, {0, 1}, "[8,2,2]<=[32]", {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31}},
    {{4, 3, 2}, {2, 3, 2, 2}, {0, 1, 3, 2}, "[4,3,2]<=[6,2,2]T(0,2,1)", {0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15, 16, 18, 17, 19, 20, 22, 21, 23}},
    {{6, 2, 2}, {12, 2, 1, 1}, {0, 2, 3, 1}, "[6,2,2]<=[24]", {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23}},
    {{1, 4, 2}, {2, 1, 2, 2}, {1, 0, 2, 3}, "[1,4,2]<=[8]", {0, 1, 2, 3, 4, 5, 6, 7}},
    {{2, 1}, {2}, {0}, "[2,1]<=[2]", {0, 1}},
    {{1, 3, 2, 2, 1}, {6, 2}, {0, 1}, "[1,3,2,2,1]<=[12]", {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}},
    {{4, 2, 1}, {8, 1}, {1, 0}, "[4,2,1]<=[8]", {0, 1, 2, 3, 4, 5, 6, 7}},
    {{1, 2, 3}, {3, 2, 1}, {0, 1, 2}, "[1,2,3]<=[6]", {0, 1, 2, 3, 4, 5}},
    {{16, 1}, {2, 1, 4, 2, 1}, {3, 2, 0, 4, 1}, "[16,1]<=[2,4,2]T(2,1,0)", {0, 8, 2, 10, 4, 12, 6, 14, 1, 9, 3, 11, 5, 13, 7, 15}},
    {{2, 8}, {1, 4, 4}, {1, 2, 0}, "[2,8]<=[16]", {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}},
    {{1, 1, 6}, {2, 1, 3}, {0, 2, 1}, "[1,1,6]<=[6]", {0, 1, 2, 3, 4, 5}},
    {{2}, {1, 1, 2}, {0, 1, 2}, "[2]<=[2]", {0, 1}},
    {{1, 2}, {1, 2, 1}, {0, 2, 1}, "[1,2]<=[2]", {0, 1}},
    // END GENERATED kXlaIotaCases
};

TEST(TileAssignmentTest, IotaCanonicalizationMatchesXla) {
  for (const IotaCase& c : kXlaIotaCases) {
    TileAssignment t = Iota(c.dims, c.reshape, c.perm);
    EXPECT_EQ(t.ToString(), c.canonical);
    EXPECT_EQ(t.devices(), c.devices) << c.canonical;
    // The same devices given as a list find the same canonical form.
    TileAssignment v1 = DevicesAssignment(c.dims, c.devices);
    ASSERT_TRUE(v1.FindIota().has_value()) << c.canonical;
    EXPECT_EQ(v1.ToIota().ToString(), c.canonical);
  }
}

// Row-major transpose of a flat array of `dims`: result dim i is source dim perm[i]. Written
// here independently of TileAssignment (the reference for the tests below).
std::vector<int64_t> TransposeList(const std::vector<int64_t>& list, const std::vector<int64_t>& dims,
                                   const std::vector<int>& perm) {
  const int rank = static_cast<int>(dims.size());
  std::vector<int64_t> strides(rank, 1), new_dims(rank);
  for (int i = rank - 2; i >= 0; --i) strides[i] = strides[i + 1] * dims[i + 1];
  for (int i = 0; i < rank; ++i) new_dims[i] = dims[perm[i]];
  std::vector<int64_t> out;
  for (size_t j = 0; j < list.size(); ++j) {
    int64_t rem = static_cast<int64_t>(j), src = 0;
    for (int i = rank - 1; i >= 0; --i) {
      src += rem % new_dims[i] * strides[perm[i]];
      rem /= new_dims[i];
    }
    out.push_back(list[src]);
  }
  return out;
}

TEST(TileAssignmentTest, CopiesShareTheDeviceArray) {
  TileAssignment a = Iota({64, 64}, {64, 64}, {1, 0});
  TileAssignment b = a;
  TileAssignment c = a.Reshape({4096});
  EXPECT_EQ(&a.devices(), &b.devices());
  EXPECT_EQ(&a.devices(), &c.devices());
  TileAssignment v1 = DevicesAssignment({2}, {1, 0});
  TileAssignment v1_copy = v1.ToV1();
  EXPECT_EQ(&v1.devices(), &v1_copy.devices());
}

TEST(TileAssignmentTest, IotaLookupsAreArithmeticAndMatchTheList) {
  // [2,4]<=[4,2]T(1,0) = 0,2,4,6,1,3,5,7.
  TileAssignment t = Iota({2, 4}, {4, 2}, {1, 0});
  EXPECT_EQ(t.DeviceAt(5), 3);
  EXPECT_EQ(t.DeviceAt(3), 6);
  EXPECT_EQ(t.PositionOf(3), 5);
  EXPECT_EQ(t.PositionOf(6), 3);
  EXPECT_EQ(t.PositionOf(8), -1);
  EXPECT_EQ(t.PositionOf(-1), -1);
  TileAssignment v1 = DevicesAssignment({2, 2}, {3, 1, 2, 0});
  EXPECT_EQ(v1.PositionOf(2), 2);
  EXPECT_EQ(v1.PositionOf(4), -1);
  EXPECT_THAT(*v1.IndexOf(0), ElementsAre(1, 1));
  // Every XLA case: lookups agree with XLA's device list.
  for (const IotaCase& c : kXlaIotaCases) {
    TileAssignment x = Iota(c.dims, c.reshape, c.perm);
    for (size_t p = 0; p < c.devices.size(); ++p) {
      EXPECT_EQ(x.DeviceAt(static_cast<int64_t>(p)), c.devices[p]) << c.canonical;
      EXPECT_EQ(x.PositionOf(c.devices[p]), static_cast<int64_t>(p)) << c.canonical;
    }
  }
}

TEST(TileAssignmentTest, TransposeOfIotaMatchesTheTransposedList) {
  for (const IotaCase& c : kXlaIotaCases) {
    std::vector<int> perm(c.dims.size());
    std::iota(perm.begin(), perm.end(), 0);
    do {
      TileAssignment t = Iota(c.dims, c.reshape, c.perm).Transpose(perm);
      const std::vector<int64_t> want = TransposeList(c.devices, c.dims, perm);
      EXPECT_EQ(t.devices(), want) << c.canonical;
      TileAssignment from_list = DevicesAssignment(t.dims(), want);
      EXPECT_EQ(t.FindIota(), from_list.FindIota()) << c.canonical;
      EXPECT_EQ(t, from_list) << c.canonical;
      EXPECT_EQ(t.Hash(), from_list.Hash()) << c.canonical;
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
}

TEST(TileAssignmentTest, TransposeWithoutACommonSplitFallsBackToTheList) {
  // <=[3,2]T(1,0) = 0,2,4,1,3,5 viewed as [3,2] = [[0,2],[4,1],[3,5]]; its transpose
  // [[0,4,3],[2,1,5]] has no iota form, so it prints as a list.
  TileAssignment t = Iota({3, 2}, {3, 2}, {1, 0}).Transpose({1, 0});
  EXPECT_EQ(t.ToString(), "[2,3]0,4,3,2,1,5");
  EXPECT_FALSE(t.FindIota().has_value());
}

TEST(TileAssignmentTest, EqualArraysHashEqualWhateverTheForm) {
  TileAssignment v1 = DevicesAssignment({2, 4}, {0, 2, 4, 6, 1, 3, 5, 7});
  TileAssignment v2 = Iota({2, 4}, {4, 2}, {1, 0});
  EXPECT_EQ(v1, v2);
  EXPECT_EQ(v1.Hash(), v2.Hash());
  EXPECT_EQ(std::hash<TileAssignment>()(v1), std::hash<TileAssignment>()(v2.ToV1()));
  // Same devices, other dims: different values.
  EXPECT_FALSE(v1 == v2.Reshape({8}));
  std::unordered_set<TileAssignment> set = {v1, v2, v2.Reshape({8}), DevicesAssignment({2}, {1, 0}),
                                            DevicesAssignment({2}, {1, 0}), TileAssignment::Iota({2})};
  EXPECT_EQ(set.size(), 4u);
}

}  // namespace
}  // namespace xs
