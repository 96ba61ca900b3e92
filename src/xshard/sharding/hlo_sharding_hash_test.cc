// Tests for HloSharding::Hash: equal shardings hash equal whatever their text form or metadata,
// so they work as unordered_set / unordered_map keys.
#include "xshard/sharding/hlo_sharding.h"

#include <string_view>
#include <unordered_set>

#include <gtest/gtest.h>

namespace xs {
namespace {

HloSharding ParseOk(std::string_view text) {
  StatusOr<HloSharding> s = HloSharding::Parse(text);
  EXPECT_TRUE(s.ok()) << text << ": " << s.status().ToString();
  return s.ok() ? *s : HloSharding::Unknown();
}

TEST(HloShardingHashTest, EqualHloShardingsHashEqual) {
  const std::pair<const char*, const char*> kEqual[] = {
      {"{devices=[2,4]0,2,4,6,1,3,5,7}", "{devices=[2,4]<=[4,2]T(1,0)}"},
      {"{devices=[1,4,2]0,1,2,3,4,5,6,7 last_tile_dim_replicate}",
       "{devices=[1,4,2]<=[8] last_tile_dim_replicate}"},
      {"{replicated metadata={op_name=\"a\"}}", "{replicated}"},
      {"{devices=[2]0,1 metadata={op_name=\"x\"}}", "{devices=[2]<=[2]}"},
      {"{{replicated}, {devices=[2]1,0}}", "{{replicated}, {devices=[2]1,0}}"},
      {"{maximal device=3}", "{maximal device=3}"},
      {"{mesh['a'=2,'b'=4], [{'a'}, {'b'}]}", "{mesh['a'=2,'b'=4], [{'a'}, {'b'}]}"},
  };
  for (const auto& [a, b] : kEqual) {
    HloSharding x = ParseOk(a), y = ParseOk(b);
    ASSERT_EQ(x, y) << a << " vs " << b;
    EXPECT_EQ(x.Hash(), y.Hash()) << a << " vs " << b;
    EXPECT_EQ(std::hash<HloSharding>()(x), std::hash<HloSharding>()(y)) << a;
  }
}

TEST(HloShardingHashTest, HloShardingsDeduplicateInAnUnorderedSet) {
  std::unordered_set<HloSharding> set;
  for (const char* text : {"{devices=[2,4]0,2,4,6,1,3,5,7}", "{devices=[2,4]<=[4,2]T(1,0)}",
                           "{devices=[2,4]<=[8]}", "{devices=[8]<=[8]}", "{replicated}",
                           "{replicated metadata={op_name=\"r\"}}", "{manual}",
                           "{manual shard_as 1}", "{maximal device=0}", "{maximal device=1}",
                           "{devices=[2,2]<=[4] last_tile_dim_replicate}",
                           "{devices=[2,2]0,1,2,3 last_tile_dim_replicate}"}) {
    set.insert(ParseOk(text));
  }
  // Distinct: [2,4]T, [2,4] iota, [8], replicated, manual, manual shard_as, two maximal, and the
  // partially replicated one.
  EXPECT_EQ(set.size(), 9u);
  EXPECT_EQ(set.count(ParseOk("{devices=[2,4]<=[4,2]T(1,0) metadata={op_name=\"m\"}}")), 1u);
  EXPECT_EQ(set.count(ParseOk("{devices=[4,2]<=[8]}")), 0u);
}

}  // namespace
}  // namespace xs
