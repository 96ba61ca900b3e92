// Regression tests for the subgroup stall: chained collectives over disjoint groups (pairs, rows
// and columns of a 2x4 mesh) must never wait on ranks outside their group. Before the fix a rank
// waited for every rank to finish call k-2, but only its own group ever rang it, so it slept until
// the 1 s park cap: 200 chained pair all-reduces took 0.02 s in some runs and 30-60 s in others.
// The tests assert on Doorbell::TimedOutParks() (parks that ended without a ring), which does not
// depend on the machine's load, plus a loose wall-time bound.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <vector>

#include "xshard/runtime/client.h"
#include "xshard/comm/collectives.h"
#include "xshard/comm/wait.h"

namespace xs {
namespace {

using Ms = std::chrono::milliseconds;
constexpr int64_t kRanks = 8;

std::unique_ptr<Client> MakeClient(CollectiveAlgorithm a) {
  ClientOptions o;
  o.num_devices = kRanks;
  o.collective_timeout = Ms(20000);
  o.algorithm = a;
  auto c = Client::Create(o);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return *std::move(c);
}

// The group families of a 2x4 mesh (device = 4 * row + column).
std::vector<std::vector<int64_t>> Pairs() { return {{0, 1}, {2, 3}, {4, 5}, {6, 7}}; }
std::vector<std::vector<int64_t>> Rows() { return {{0, 1, 2, 3}, {4, 5, 6, 7}}; }
std::vector<std::vector<int64_t>> Columns() { return {{0, 4}, {1, 5}, {2, 6}, {3, 7}}; }

Array Filled(int64_t n, double v) {
  Array a(DType::kF32, {n});
  for (int64_t i = 0; i < n; ++i) a.SetDouble(i, v);
  return a;
}

// The value every element of `a` holds (an error names the first element that differs).
StatusOr<double> Uniform(const Array& a) {
  const double v = a.GetDouble(0);
  for (int64_t i = 1; i < a.num_elements(); ++i) {
    if (a.GetDouble(i) != v) {
      return Internal("element ", i, " is ", a.GetDouble(i), " but element 0 is ", v);
    }
  }
  return v;
}

Array Scaled(const Array& a, double s) {
  Array out(a.dtype(), a.dims());
  for (int64_t i = 0; i < a.num_elements(); ++i) out.SetDouble(i, a.GetDouble(i) * s);
  return out;
}

// One round over one family, for one rank whose array holds v everywhere:
//   all-reduce sum / n           -> group mean
//   all-gather, reduce-scatter   -> n * own value, / n -> own value
//   collective-permute (cyclic shift inside each group) -> the previous member's value
//   all-to-all, mean of the result -> group mean
// The reference below computes the same on plain doubles.
Status Round(Communicator& comm, int64_t r, const DeviceGroups& g, const PermutePairs& shift,
             int64_t len, Array& x, int64_t* channel) {
  const int64_t n = static_cast<int64_t>(g.GroupOf(r).size());
  auto call = [&](std::string_view name) { return CollectiveCall(r, name, ++*channel); };
  XS_ASSIGN_OR_RETURN(Array sum, AllReduce(comm, call("all-reduce"), g, x, ReductionKind::kSum));
  x = Scaled(sum, 1.0 / n);
  XS_ASSIGN_OR_RETURN(Array gathered, AllGather(comm, call("all-gather"), g, x, 0));
  XS_ASSIGN_OR_RETURN(Array piece, ReduceScatter(comm, call("reduce-scatter"), g, gathered, 0,
                                                 ReductionKind::kSum));
  x = Scaled(piece, 1.0 / n);
  XS_ASSIGN_OR_RETURN(x, CollectivePermute(comm, call("collective-permute"), shift, x));
  XS_ASSIGN_OR_RETURN(Array swapped, AllToAll(comm, call("all-to-all"), g, x, 0, 0));
  double mean = 0;
  for (int64_t i = 0; i < swapped.num_elements(); ++i) mean += swapped.GetDouble(i);
  x = Filled(len, mean / swapped.num_elements());
  return OkStatus();
}

// The same round on the values of all ranks.
void ReferenceRound(const std::vector<std::vector<int64_t>>& groups, std::vector<double>& v) {
  std::vector<double> next(v.size());
  for (const auto& grp : groups) {
    const int64_t n = static_cast<int64_t>(grp.size());
    // all-reduce mean, then permute: member i gets member i-1's value (all equal to the mean);
    // all-to-all + mean: the group mean again.
    double mean = 0;
    for (int64_t m : grp) mean += v[m];
    mean /= static_cast<double>(n);
    for (int64_t m : grp) next[m] = mean;
  }
  v = next;
}

struct ChainCase {
  CollectiveAlgorithm algorithm;
  int64_t len;  // elements per rank: 8 (staged, eager) or 32768 (128 KiB, direct reads)
  const char* name;
};

class SubgroupChainTest : public ::testing::TestWithParam<ChainCase> {};

TEST_P(SubgroupChainTest, ChainedCollectivesOverPairsRowsAndColumnsNeverStall) {
  const ChainCase& c = GetParam();
  auto client = MakeClient(c.algorithm);
  const std::vector<std::vector<std::vector<int64_t>>> families = {Pairs(), Rows(), Columns()};
  std::vector<DeviceGroups> groups;
  std::vector<PermutePairs> shifts;
  for (const auto& f : families) {
    groups.push_back(*DeviceGroups::Create(f, kRanks, "test"));
    std::vector<std::pair<int64_t, int64_t>> pairs;
    for (const auto& grp : f) {
      for (size_t i = 0; i < grp.size(); ++i) pairs.push_back({grp[i], grp[(i + 1) % grp.size()]});
    }
    shifts.push_back(*PermutePairs::Create(pairs, kRanks, "test"));
  }
  const int rounds = c.len > 1000 ? 10 : 40;
  // The rows mix the columns, so values change every round; the reference starts at rank + 1.
  std::vector<double> want(kRanks);
  for (int64_t r = 0; r < kRanks; ++r) want[r] = static_cast<double>(r + 1);
  // The pattern below starts with an uneven family order so the state is not symmetric.
  std::vector<double> got(kRanks, 0.0);
  const int64_t parks_before = Doorbell::TimedOutParks();
  const auto start = SteadyClock::now();
  auto result = client->RunPerRank(std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7},
                                   [&](int64_t r, Communicator& comm) -> Status {
    Array x = Filled(c.len, static_cast<double>(r + 1));
    int64_t channel = 0;
    for (int round = 0; round < rounds; ++round) {
      const size_t f = static_cast<size_t>(round) % families.size();
      XS_RETURN_IF_ERROR(Round(comm, r, groups[f], shifts[f], c.len, x, &channel));
      // Every third round also runs pairs twice in a row: back-to-back calls on one group.
      if (round % 3 == 2) XS_RETURN_IF_ERROR(Round(comm, r, groups[0], shifts[0], c.len, x, &channel));
    }
    XS_ASSIGN_OR_RETURN(got[r], Uniform(x));
    return OkStatus();
  });
  const double seconds = std::chrono::duration<double>(SteadyClock::now() - start).count();
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_TRUE(result->status.ok()) << result->status.ToString();
  for (int round = 0; round < rounds; ++round) {
    ReferenceRound(families[static_cast<size_t>(round) % families.size()], want);
    if (round % 3 == 2) ReferenceRound(families[0], want);
  }
  for (int64_t r = 0; r < kRanks; ++r) EXPECT_NEAR(got[r], want[r], 1e-4 * want[r]) << r;
  // No waiter slept through a 1 s park (load-independent), and the whole chain is far from the
  // many seconds a stall costs even on a loaded 2-core machine.
  EXPECT_EQ(Doorbell::TimedOutParks() - parks_before, 0) << c.name;
  EXPECT_LT(seconds, 15.0) << c.name;
}

INSTANTIATE_TEST_SUITE_P(
    Algorithms, SubgroupChainTest,
    ::testing::Values(ChainCase{CollectiveAlgorithm::kDirect, 8, "direct_eager"},
                    ChainCase{CollectiveAlgorithm::kDirect, 32768, "direct_large"},
                    ChainCase{CollectiveAlgorithm::kRing, 32768, "ring_large"},
                    ChainCase{CollectiveAlgorithm::kRecursiveDoubling, 8, "doubling"}),
    [](const ::testing::TestParamInfo<ChainCase>& info) { return std::string(info.param.name); });

// The reproduction: 200 chained all-reduces over {{0,1},{2,3},{4,5},{6,7}}.
TEST(SubgroupStallTest, TwoHundredChainedPairAllReducesNeverParkUntilTheCap) {
  auto client = MakeClient(CollectiveAlgorithm::kDirect);
  const DeviceGroups pairs = *DeviceGroups::Create(Pairs(), kRanks, "test");
  std::vector<double> got(kRanks);
  const int64_t parks_before = Doorbell::TimedOutParks();
  const auto start = SteadyClock::now();
  Status st = client->Run(std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7},
                          [&](int64_t r, Communicator& comm) -> Status {
    Array x = Filled(16, static_cast<double>(r));
    for (int i = 0; i < 200; ++i) {
      // max keeps the value bounded: each pair settles on its larger member, 2k+1.
      XS_ASSIGN_OR_RETURN(x, AllReduce(comm, CollectiveCall(r, "all-reduce", i + 1),
                                       pairs, x, ReductionKind::kMax));
    }
    XS_ASSIGN_OR_RETURN(got[r], Uniform(x));
    return OkStatus();
  });
  const double seconds = std::chrono::duration<double>(SteadyClock::now() - start).count();
  ASSERT_TRUE(st.ok()) << st.ToString();
  for (int64_t r = 0; r < kRanks; ++r) EXPECT_EQ(got[r], static_cast<double>(r | 1)) << r;
  EXPECT_EQ(Doorbell::TimedOutParks() - parks_before, 0);
  EXPECT_LT(seconds, 10.0);
}

}  // namespace
}  // namespace xs
