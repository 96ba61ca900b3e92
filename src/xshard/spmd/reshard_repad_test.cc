// The repad route (reshard_repad.cc): uneven dims whose source and target tiles do not line up
// move through a padded layout (halo, even route, halo) instead of gathering whole dims. Numbers
// are checked against the global array on every device; the collectives and bytes are pinned.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <random>

#include "xshard/base/strings.h"
#include "xshard/spmd/partitioner.h"
#include "xshard/spmd/run_partitioned.h"

namespace xs::spmd {
namespace {

using testing::CollectiveKinds;

int64_t ReceivedBytes(const PartitionResult& r) {
  int64_t total = 0;
  for (const CollectiveRecord& c : r.report.collectives) total += c.bytes;
  return total;
}

std::string Copy(const std::string& shape, const std::string& from, const std::string& to, int n = 8) {
  return StrCat("HloModule m, num_partitions=", n, "\nENTRY e {\n  p = ", shape, " parameter(0), sharding=", from,
                "\n  ROOT c = ", shape, " copy(p), sharding=", to, "\n}\n");
}

// Mesh (x=2, y=4): f32[290,370] from P('y','x') (shards 73 x 185) to P('x','y') (145 x 93), a
// transpose a.T with both keeping P('x','y'). Padded to [292,372] (multiples of both tile counts):
// the x = 0 tiles take column 185 from x = 1 (f32[73,1], 292 B), the even case's all-to-all
// (half of f32[2,73,93]: 27,156 B) and permute (f32[146,93]: 54,312 B) follow, and the x = 1
// tiles take row 145 from x = 0 (f32[1,93], 372 B): 82,132 B per device, where gathering dim 0
// and an all-to-all received 269,360 B.
TEST(ReshardRepadTest, TransposedUnevenShardsMoveThroughAPaddedLayout) {
  const PartitionResult r = testing::PartitionAndCompare(
      Copy("f32[290,370]", "{devices=[4,2]<=[2,4]T(1,0)}", "{devices=[2,4]<=[8]}"), 8, {11});
  EXPECT_EQ(CollectiveKinds(r),
            (std::vector<std::string>{"collective-permute", "all-to-all", "collective-permute", "collective-permute"}));
  EXPECT_EQ(ReceivedBytes(r), 292 + 27156 + 54312 + 372);
}

// Every pair of a few shardings on uneven shapes of 8 devices, partitioned and run: each device
// holds its piece of the global array, whichever route wins.
TEST(ReshardRepadTest, UnevenPairsHoldTheirPieces) {
  const char* shardings[] = {
      "{devices=[4,2]<=[2,4]T(1,0)}",
      "{devices=[2,4]<=[8]}",
      "{devices=[8,1]<=[8]}",
      "{devices=[1,8]<=[8]}",
      "{devices=[2,4]<=[4,2]T(1,0)}",
      "{devices=[4,1,2]<=[8] last_tile_dim_replicate}",
      "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}",
  };
  for (const char* shape : {"f32[29,37]", "s32[13,7]", "f32[9,23]"}) {
    for (const char* from : shardings) {
      for (const char* to : shardings) {
        const std::string text = Copy(shape, from, to);
        SCOPED_TRACE(text);
        testing::PartitionAndCompare(text, 8, {5});
      }
    }
  }
}

// A random sharding of a rank-`rank` array over the 2x2x2 mesh: the three axes in a random
// order, each on a data dim (in nondecreasing dim order) or replicated.
std::string RandomSharding(std::mt19937& rng, int rank) {
  std::vector<int> perm = {0, 1, 2};
  std::shuffle(perm.begin(), perm.end(), rng);
  std::vector<int> target(3);
  for (int& t : target) t = static_cast<int>(rng() % static_cast<unsigned>(rank + 1));  // rank: replicated
  std::sort(target.begin(), target.end());
  std::vector<int64_t> tiles(rank, 1);
  int64_t repl = 1;
  for (int t : target) (t == rank ? repl : tiles[t]) *= 2;
  if (repl == 8) return "{replicated}";
  std::string text = "{devices=[";
  for (int d = 0; d < rank; ++d) text += StrCat(d ? "," : "", tiles[d]);
  if (repl > 1) text += StrCat(",", repl);
  text += StrCat("]<=[2,2,2]T(", perm[0], ",", perm[1], ",", perm[2], ")");
  return text + (repl > 1 ? " last_tile_dim_replicate}" : "}");
}

// Random uneven shapes (ranks 2 and 3) between random shardings of the 2x2x2 mesh: every device
// holds its piece, whichever route wins. XSHARD_RESHARD_CASES sets the count (default 60).
TEST(ReshardRepadTest, RandomUnevenReshardsHoldTheirPieces) {
  std::mt19937 rng(7);
  const int cases = std::getenv("XSHARD_RESHARD_CASES") ? std::atoi(std::getenv("XSHARD_RESHARD_CASES")) : 60;
  for (int c = 0; c < cases; ++c) {
    const int rank = 2 + static_cast<int>(rng() % 2);
    std::string shape = "f32[";
    // Odd cases small (the cost model's latency term often prefers gathers there), even ones
    // large enough that bytes decide.
    const unsigned lo = c % 2 ? 1 : (rank == 2 ? 100 : 20), span = c % 2 ? 23 : (rank == 2 ? 300 : 40);
    for (int d = 0; d < rank; ++d) shape += StrCat(d ? "," : "", lo + rng() % span);
    shape += "]";
    const std::string text = Copy(shape, RandomSharding(rng, rank), RandomSharding(rng, rank));
    SCOPED_TRACE(text);
    testing::PartitionAndCompare(text, 8, {static_cast<uint64_t>(c)});
    if (::testing::Test::HasFailure()) break;
  }
}

}  // namespace
}  // namespace xs::spmd
