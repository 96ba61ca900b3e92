// Every collective on 2, 4 and 8 devices with each algorithm, staged (small) and zero-copy (large)
// sizes, several group layouts, against per-device results computed here from closed formulas:
// device r's input element i is 100 * r + i, so e.g. an all-reduce sum over group G gives
// 100 * sum(G) + |G| * i at element i.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>
#include <tuple>

#include "xshard/runtime/client.h"
#include "xshard/comm/collectives.h"

namespace xs {
namespace {

using ::testing::HasSubstr;

ClientOptions OptsCollectives(int64_t n, CollectiveAlgorithm a = CollectiveAlgorithm::kDirect) {
  ClientOptions o;
  o.num_devices = n;
  o.algorithm = a;
  return o;
}

// Device r's input: element i (row-major) = 100 * r + i.
Array Input(int64_t rank, const std::vector<int64_t>& dims, DType dtype = DType::kF32) {
  Array a(dtype, dims);
  for (int64_t i = 0; i < a.num_elements(); ++i) a.SetDouble(i, 100.0 * rank + i);
  return a;
}

std::vector<int64_t> Unravel(int64_t linear, const std::vector<int64_t>& dims) {
  std::vector<int64_t> idx(dims.size());
  for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
    idx[d] = linear % dims[d];
    linear /= dims[d];
  }
  return idx;
}

int64_t Ravel(const std::vector<int64_t>& idx, const std::vector<int64_t>& dims) {
  int64_t linear = 0;
  for (size_t d = 0; d < dims.size(); ++d) linear = linear * dims[d] + idx[d];
  return linear;
}

// Groups used by the tests, as device lists.
std::vector<std::vector<int64_t>> Layout(const std::string& name, int64_t n) {
  std::vector<std::vector<int64_t>> g;
  if (name == "all") {
    g.emplace_back(n);
    std::iota(g[0].begin(), g[0].end(), 0);
  } else if (name == "pairs") {  // {0,1},{2,3},...
    for (int64_t i = 0; i < n; i += 2) g.push_back({i, i + 1});
  } else if (name == "strided") {  // {0,2,4,..},{1,3,5,..}
    g.resize(2);
    for (int64_t i = 0; i < n; ++i) g[i % 2].push_back(i);
  } else if (name == "reversed") {  // one group, member 0 is device n-1
    g.emplace_back();
    for (int64_t i = n - 1; i >= 0; --i) g[0].push_back(i);
  } else if (name == "singletons") {
    for (int64_t i = 0; i < n; ++i) g.push_back({i});
  }
  return g;
}

const std::vector<int64_t>& GroupOf(const std::vector<std::vector<int64_t>>& groups, int64_t r) {
  for (const auto& g : groups) {
    if (std::find(g.begin(), g.end(), r) != g.end()) return g;
  }
  static const std::vector<int64_t> kNone;
  return kNone;
}

int64_t IndexIn(const std::vector<int64_t>& g, int64_t r) {
  return std::find(g.begin(), g.end(), r) - g.begin();
}

struct Param {
  int64_t devices;
  CollectiveAlgorithm algorithm;
  bool large;  // past the staging threshold: the zero-copy path
};

std::string ParamName(const ::testing::TestParamInfo<Param>& info) {
  std::string a(CollectiveAlgorithmName(info.param.algorithm));
  std::replace(a.begin(), a.end(), '-', '_');
  return StrCat(info.param.devices, "dev_", a, info.param.large ? "_large" : "_small");
}

class CollectivesTest : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    ClientOptions o;
    o.num_devices = GetParam().devices;
    o.algorithm = GetParam().algorithm;
    o.collective_timeout = std::chrono::milliseconds(20000);
    // Large params: no staging, so every call takes the zero-copy path with its second
    // rendezvous; the inputs are big enough for several tiles per piece too.
    if (GetParam().large) o.eager_bytes = 0;
    auto c = Client::Create(o);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    client_ = *std::move(c);
  }
  int64_t n() const { return GetParam().devices; }
  std::vector<int64_t> Dims(int64_t rows) const {
    return {rows, GetParam().large ? 1500 : 3};
  }

  // Runs fn on every device and returns each device's result.
  std::vector<Array> RunEach(
      const std::function<StatusOr<Array>(int64_t rank, Communicator& comm)>& fn) {
    std::vector<Array> out(n());
    Status st = client_->RunOnAllDevices([&](int64_t rank, Communicator& comm) -> Status {
      XS_ASSIGN_OR_RETURN(out[rank], fn(rank, comm));
      return OkStatus();
    });
    EXPECT_TRUE(st.ok()) << st.ToString();
    return out;
  }

  DeviceGroups Groups(const std::vector<std::vector<int64_t>>& g) {
    auto r = DeviceGroups::Create(g, n(), "test");
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return *std::move(r);
  }

  std::unique_ptr<Client> client_;
};

TEST_P(CollectivesTest, AllGatherConcatenatesGroupInputsInGroupOrder) {
  for (const std::string layout : {"all", "pairs", "strided", "reversed", "singletons"}) {
    for (int dim : {0, 1}) {
      const auto groups = Layout(layout, n());
      const DeviceGroups rg = Groups(groups);
      const std::vector<int64_t> in_dims = Dims(2);
      auto out = RunEach([&](int64_t r, Communicator& comm) {
        return AllGather(comm, CollectiveCall(r, "all-gather", 1), rg,
                         Input(r, in_dims), dim);
      });
      for (int64_t r = 0; r < n(); ++r) {
        const auto& g = GroupOf(groups, r);
        std::vector<int64_t> out_dims = in_dims;
        out_dims[dim] *= static_cast<int64_t>(g.size());
        ASSERT_EQ(out[r].dims(), out_dims) << layout;
        for (int64_t i = 0; i < out[r].num_elements(); ++i) {
          std::vector<int64_t> idx = Unravel(i, out_dims);
          const int64_t member = g[idx[dim] / in_dims[dim]];
          idx[dim] %= in_dims[dim];
          ASSERT_EQ(out[r].GetDouble(i), 100.0 * member + Ravel(idx, in_dims))
              << layout << " dim " << dim << " device " << r << " element " << i;
        }
      }
    }
  }
}

TEST_P(CollectivesTest, AllReduceSumsMaxesAndMinsOverEachGroup) {
  for (const std::string layout : {"all", "pairs", "strided", "reversed", "singletons"}) {
    const auto groups = Layout(layout, n());
    const DeviceGroups rg = Groups(groups);
    const std::vector<int64_t> dims = Dims(3);
    for (ReductionKind kind : {ReductionKind::kSum, ReductionKind::kMax, ReductionKind::kMin}) {
      auto out = RunEach([&](int64_t r, Communicator& comm) {
        return AllReduce(comm, CollectiveCall(r, "", 2), rg, Input(r, dims), kind);
      });
      for (int64_t r = 0; r < n(); ++r) {
        const auto& g = GroupOf(groups, r);
        const int64_t sum = std::accumulate(g.begin(), g.end(), int64_t{0});
        const int64_t mx = *std::max_element(g.begin(), g.end());
        const int64_t mn = *std::min_element(g.begin(), g.end());
        for (int64_t i = 0; i < out[r].num_elements(); ++i) {
          const double want = kind == ReductionKind::kSum ? 100.0 * sum + g.size() * i
                              : kind == ReductionKind::kMax ? 100.0 * mx + i
                                                            : 100.0 * mn + i;
          ASSERT_EQ(out[r].GetDouble(i), want) << layout << " " << ReductionKindName(kind)
                                               << " device " << r << " element " << i;
        }
      }
    }
  }
}

TEST_P(CollectivesTest, AllReduceProductAndBitwiseReducersOnIntegers) {
  const DeviceGroups rg = Groups(Layout("all", n()));
  const std::vector<int64_t> dims = Dims(2);
  auto value = [](int64_t r, int64_t i) { return static_cast<int32_t>((r + 1) * 3 + i % 5); };
  for (ReductionKind kind : {ReductionKind::kProduct, ReductionKind::kAnd, ReductionKind::kOr}) {
    auto out = RunEach([&](int64_t r, Communicator& comm) {
      Array x(DType::kS32, dims);
      auto v = x.values<int32_t>();
      for (size_t i = 0; i < v.size(); ++i) v[i] = value(r, static_cast<int64_t>(i));
      return AllReduce(comm, CollectiveCall(r, "", 3), rg, x, kind);
    });
    for (int64_t r = 0; r < n(); ++r) {
      auto got = out[r].values<int32_t>();
      for (size_t i = 0; i < got.size(); ++i) {
        uint32_t want = kind == ReductionKind::kProduct ? 1u
                        : kind == ReductionKind::kAnd   ? ~0u
                                                        : 0u;
        for (int64_t m = 0; m < n(); ++m) {
          const uint32_t x = static_cast<uint32_t>(value(m, static_cast<int64_t>(i)));
          want = kind == ReductionKind::kProduct ? want * x
                 : kind == ReductionKind::kAnd   ? (want & x)
                                                 : (want | x);
        }
        ASSERT_EQ(static_cast<uint32_t>(got[i]), want) << ReductionKindName(kind) << " " << i;
      }
    }
  }
}

TEST_P(CollectivesTest, ReduceScatterGivesEachMemberItsPieceOfTheSum) {
  for (const std::string layout : {"all", "pairs", "strided", "reversed"}) {
    for (int dim : {0, 1}) {
      const auto groups = Layout(layout, n());
      const DeviceGroups rg = Groups(groups);
      const int64_t gsize = static_cast<int64_t>(groups[0].size());
      std::vector<int64_t> in_dims = Dims(2);
      in_dims[dim] *= gsize;
      auto out = RunEach([&](int64_t r, Communicator& comm) {
        return ReduceScatter(comm, CollectiveCall(r, "", 4), rg, Input(r, in_dims), dim,
                             ReductionKind::kSum);
      });
      for (int64_t r = 0; r < n(); ++r) {
        const auto& g = GroupOf(groups, r);
        const int64_t pos = IndexIn(g, r);
        const int64_t sum = std::accumulate(g.begin(), g.end(), int64_t{0});
        std::vector<int64_t> out_dims = in_dims;
        out_dims[dim] /= gsize;
        ASSERT_EQ(out[r].dims(), out_dims);
        for (int64_t i = 0; i < out[r].num_elements(); ++i) {
          std::vector<int64_t> idx = Unravel(i, out_dims);
          idx[dim] += pos * out_dims[dim];
          ASSERT_EQ(out[r].GetDouble(i), 100.0 * sum + gsize * Ravel(idx, in_dims))
              << layout << " dim " << dim << " device " << r << " element " << i;
        }
      }
    }
  }
}

TEST_P(CollectivesTest, AllToAllSendsPieceJToMemberJ) {
  for (const std::string layout : {"all", "pairs", "reversed"}) {
    for (auto [split, concat] : {std::pair{0, 0}, std::pair{0, 1}, std::pair{1, 0}}) {
      const auto groups = Layout(layout, n());
      const DeviceGroups rg = Groups(groups);
      const int64_t gsize = static_cast<int64_t>(groups[0].size());
      std::vector<int64_t> in_dims = Dims(2);
      in_dims[split] *= gsize;
      auto out = RunEach([&](int64_t r, Communicator& comm) {
        return AllToAll(comm, CollectiveCall(r, "", 5), rg, Input(r, in_dims), split,
                        concat);
      });
      for (int64_t r = 0; r < n(); ++r) {
        const auto& g = GroupOf(groups, r);
        const int64_t pos = IndexIn(g, r);
        std::vector<int64_t> out_dims = in_dims;
        out_dims[split] /= gsize;
        const int64_t piece = out_dims[concat];  // before concatenation
        out_dims[concat] *= gsize;
        ASSERT_EQ(out[r].dims(), out_dims);
        for (int64_t i = 0; i < out[r].num_elements(); ++i) {
          std::vector<int64_t> idx = Unravel(i, out_dims);
          const int64_t sender = g[idx[concat] / piece];
          idx[concat] %= piece;
          idx[split] += pos * (in_dims[split] / gsize);
          ASSERT_EQ(out[r].GetDouble(i), 100.0 * sender + Ravel(idx, in_dims))
              << layout << " split " << split << " concat " << concat << " device " << r;
        }
      }
    }
  }
}

TEST_P(CollectivesTest, TupleAllToAllSwapsOperandJWithMemberJ) {
  const auto groups = Layout("strided", n());
  const DeviceGroups rg = Groups(groups);
  std::vector<std::vector<Array>> outs(n());
  Status st = client_->RunOnAllDevices([&](int64_t r, Communicator& comm) -> Status {
    std::vector<Array> xs;
    for (size_t j = 0; j < GroupOf(groups, r).size(); ++j) {
      xs.push_back(Input(r * 10 + static_cast<int64_t>(j), Dims(1)));
    }
    XS_ASSIGN_OR_RETURN(outs[r], AllToAllTuple(comm, CollectiveCall(r, "", 6), rg, xs));
    return OkStatus();
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  for (int64_t r = 0; r < n(); ++r) {
    const auto& g = GroupOf(groups, r);
    ASSERT_EQ(outs[r].size(), g.size());
    for (size_t i = 0; i < g.size(); ++i) {
      // Element i came from member i's operand number IndexIn(g, r).
      const Array want = Input(g[i] * 10 + IndexIn(g, r), Dims(1));
      EXPECT_EQ(outs[r][i], want) << "device " << r << " element " << i;
    }
  }
}

TEST_P(CollectivesTest, CollectivePermuteShiftsAndZeroFillsDevicesWithoutSource) {
  // A shift by one over all but the last device: device 0 has no source.
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (int64_t i = 0; i + 1 < n(); ++i) pairs.emplace_back(i, i + 1);
  auto p = PermutePairs::Create(pairs, n(), "collective-permute");
  ASSERT_TRUE(p.ok());
  auto out = RunEach([&](int64_t r, Communicator& comm) {
    return CollectivePermute(comm, CollectiveCall(r, "", 7), *p, Input(r, Dims(2)));
  });
  for (int64_t r = 0; r < n(); ++r) {
    const Array want = r == 0 ? Array(DType::kF32, Dims(2)) : Input(r - 1, Dims(2));
    EXPECT_EQ(out[r], want) << "device " << r;
  }
}

TEST_P(CollectivesTest, CollectiveBroadcastCopiesFirstMemberAndZeroesDevicesInNoGroup) {
  // Group {n-1, 0}: device n-1 is the source; the others are in no group and get zeros.
  auto rg = DeviceGroups::Create({{n() - 1, 0}}, n(), "collective-broadcast",
                                  DeviceGroups::Coverage::kPartial);
  ASSERT_TRUE(rg.ok()) << rg.status().ToString();
  auto out = RunEach([&](int64_t r, Communicator& comm) {
    return CollectiveBroadcast(comm, CollectiveCall(r, "", 8), *rg, Input(r, Dims(2)));
  });
  for (int64_t r = 0; r < n(); ++r) {
    const bool member = r == 0 || r == n() - 1;
    const Array want = member ? Input(n() - 1, Dims(2)) : Array(DType::kF32, Dims(2));
    EXPECT_EQ(out[r], want) << "device " << r;
  }
}

TEST_P(CollectivesTest, ManyCallsInARowReuseSlotsCorrectly) {
  // Alternating groups and ops exercise the slot-reuse guard and the step counters.
  const DeviceGroups all = Groups(Layout("all", n()));
  const DeviceGroups pairs = Groups(Layout("pairs", n()));
  auto out = RunEach([&](int64_t r, Communicator& comm) -> StatusOr<Array> {
    Array x = Input(r, Dims(1));
    for (int k = 0; k < 20; ++k) {
      const DeviceGroups& g = k % 2 ? pairs : all;
      XS_ASSIGN_OR_RETURN(x, AllReduce(comm, CollectiveCall(r, "", k), g, x,
                                       ReductionKind::kMax));
    }
    return x;
  });
  for (int64_t r = 0; r < n(); ++r) EXPECT_EQ(out[r], Input(n() - 1, Dims(1))) << r;
}

std::vector<Param> AllParams() {
  std::vector<Param> out;
  for (int64_t n : {2, 4, 8}) {
    for (auto a : {CollectiveAlgorithm::kDirect, CollectiveAlgorithm::kRing,
                   CollectiveAlgorithm::kRecursiveDoubling}) {
      for (bool large : {false, true}) out.push_back({n, a, large});
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Devices, CollectivesTest, ::testing::ValuesIn(AllParams()), ParamName);

// XLA's four group modes resolved over a replicas x partitions device assignment, run end to end
// on 2, 4 and 8 devices. The expected group of logical id r * P + p is derived here from each
// mode's definition, independently of ResolveGroupMode.
TEST(GroupModeCollectivesTest, EveryModeGathersAndSumsOverItsGroups) {
  for (int64_t n : {2, 4, 8}) {
    for (int64_t replicas : {int64_t{1}, int64_t{2}}) {
      const int64_t parts = n / replicas;
      auto client = Client::Create(OptsCollectives(n));
      ASSERT_TRUE(client.ok());
      auto assignment = DeviceAssignment::Default(replicas, parts, n);
      ASSERT_TRUE(assignment.ok());
      // Replica groups: reversed order when there are two replicas, so order is visible.
      const std::vector<std::vector<int64_t>> replica_groups =
          replicas == 2 ? std::vector<std::vector<int64_t>>{{1, 0}}
                        : std::vector<std::vector<int64_t>>{};
      std::vector<std::vector<int64_t>> partition_groups;  // two reversed halves
      if (parts >= 2) {
        partition_groups.resize(2);
        for (int64_t p = parts - 1; p >= 0; --p) partition_groups[p < parts / 2].push_back(p);
      }
      std::vector<std::vector<int64_t>> flat_groups(2);  // even and odd logical ids
      for (int64_t id = 0; id < n; ++id) flat_groups[id % 2].push_back(id);
      const std::vector<std::vector<int64_t>> per_replica_groups =
          replicas == 2 ? std::vector<std::vector<int64_t>>{{0}, {1}}
                        : std::vector<std::vector<int64_t>>{{0}};

      for (GroupMode mode : {GroupMode::kCrossReplica, GroupMode::kCrossPartition,
                             GroupMode::kCrossReplicaAndPartition, GroupMode::kFlattenedId}) {
        const auto& listed = mode == GroupMode::kCrossReplica     ? replica_groups
                             : mode == GroupMode::kCrossPartition ? partition_groups
                             : mode == GroupMode::kFlattenedId    ? flat_groups
                                                                  : per_replica_groups;
        auto groups = ResolveGroupMode(mode, listed, replicas, parts, "all-gather");
        ASSERT_TRUE(groups.ok()) << groups.status().ToString();
        // Expected members of logical id id = r * parts + p, in order.
        auto expected = [&](int64_t id) {
          const int64_t r = id / parts, p = id % parts;
          auto find = [](const std::vector<std::vector<int64_t>>& gs, int64_t v, int64_t all) {
            if (gs.empty()) {
              std::vector<int64_t> g(all);
              std::iota(g.begin(), g.end(), 0);
              return g;
            }
            for (const auto& g : gs) {
              if (std::find(g.begin(), g.end(), v) != g.end()) return g;
            }
            return std::vector<int64_t>{};
          };
          std::vector<int64_t> out;
          switch (mode) {
            case GroupMode::kCrossReplica:
              for (int64_t r2 : find(listed, r, replicas)) out.push_back(r2 * parts + p);
              break;
            case GroupMode::kCrossPartition:
              for (int64_t p2 : find(listed, p, parts)) out.push_back(r * parts + p2);
              break;
            case GroupMode::kCrossReplicaAndPartition:
              for (int64_t r2 : find(listed, r, replicas)) {
                for (int64_t p2 = 0; p2 < parts; ++p2) out.push_back(r2 * parts + p2);
              }
              break;
            case GroupMode::kFlattenedId:
              out = find(listed, id, n);
              break;
          }
          return out;
        };
        std::vector<Array> gathered(n), summed(n);
        Status st = (*client)->Run(*assignment, [&](int64_t id, Communicator& comm) -> Status {
          const Array x = Input(id, {1, 2});
          XS_ASSIGN_OR_RETURN(gathered[id],
                              AllGather(comm, CollectiveCall(id, "all-gather", 1), *groups, x, 0));
          XS_ASSIGN_OR_RETURN(summed[id], AllReduce(comm, CollectiveCall(id, "all-reduce", 2),
                                                    *groups, x, ReductionKind::kSum));
          return OkStatus();
        });
        ASSERT_TRUE(st.ok()) << st.ToString();
        for (int64_t id = 0; id < n; ++id) {
          const std::vector<int64_t> g = expected(id);
          ASSERT_EQ(gathered[id].dims(), (std::vector<int64_t>{static_cast<int64_t>(g.size()), 2}))
              << GroupModeName(mode) << " n=" << n << " id " << id;
          for (size_t j = 0; j < g.size(); ++j) {
            EXPECT_EQ(gathered[id].GetDouble(2 * j), 100.0 * g[j]) << GroupModeName(mode);
            EXPECT_EQ(gathered[id].GetDouble(2 * j + 1), 100.0 * g[j] + 1) << GroupModeName(mode);
          }
          const int64_t total = std::accumulate(g.begin(), g.end(), int64_t{0});
          EXPECT_EQ(summed[id].GetDouble(1), 100.0 * total + static_cast<double>(g.size()))
              << GroupModeName(mode) << " n=" << n << " id " << id;
        }
      }
    }
  }
}

// Two devices, literal values: the smallest cases written out by hand.
TEST(CollectivesLiteralTest, TwoDevicesByHand) {
  auto client = Client::Create(OptsCollectives(2));
  ASSERT_TRUE(client.ok());
  const DeviceGroups all = DeviceGroups::All(2);
  std::vector<Array> gathered(2), summed(2), scattered(2);
  Status st = (*client)->RunOnAllDevices([&](int64_t r, Communicator& comm) -> Status {
    const Array x = Array::FromVector<float>({2}, r == 0 ? std::vector<float>{1, 2}
                                                         : std::vector<float>{10, 20});
    XS_ASSIGN_OR_RETURN(gathered[r], AllGather(comm, CollectiveCall(r), all, x, 0));
    XS_ASSIGN_OR_RETURN(summed[r], AllReduce(comm, CollectiveCall(r), all, x, ReductionKind::kSum));
    XS_ASSIGN_OR_RETURN(scattered[r],
                        ReduceScatter(comm, CollectiveCall(r), all, x, 0, ReductionKind::kSum));
    return OkStatus();
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(gathered[r], Array::FromVector<float>({4}, {1, 2, 10, 20}));
    EXPECT_EQ(summed[r], Array::FromVector<float>({2}, {11, 22}));
  }
  EXPECT_EQ(scattered[0], Array::FromVector<float>({1}, {11}));
  EXPECT_EQ(scattered[1], Array::FromVector<float>({1}, {22}));
}

// Ring and recursive doubling combine floats in another order than direct; on random data they
// agree with it to rounding, and exactly for max.
TEST(CollectivesAgreementTest, RingAndRecursiveDoublingAgreeWithDirectOnRandomData) {
  const int64_t n = 8;
  std::vector<std::vector<Array>> results;
  for (auto a : {CollectiveAlgorithm::kDirect, CollectiveAlgorithm::kRing,
                 CollectiveAlgorithm::kRecursiveDoubling}) {
    auto client = Client::Create(OptsCollectives(n, a));
    ASSERT_TRUE(client.ok());
    std::vector<Array> out(n * 3);
    Status st = (*client)->RunOnAllDevices([&](int64_t r, Communicator& comm) -> Status {
      Array x(DType::kF32, {64, 4500});
      uint32_t seed = 12345u + static_cast<uint32_t>(r) * 7919u;
      for (float& v : x.values<float>()) {
        seed = seed * 1664525u + 1013904223u;
        v = static_cast<float>(seed >> 8) / 16777216.0f - 0.5f;
      }
      const DeviceGroups all = DeviceGroups::All(n);
      XS_ASSIGN_OR_RETURN(out[r * 3],
                          AllReduce(comm, CollectiveCall(r), all, x, ReductionKind::kSum));
      XS_ASSIGN_OR_RETURN(out[r * 3 + 1],
                          AllReduce(comm, CollectiveCall(r), all, x, ReductionKind::kMax));
      XS_ASSIGN_OR_RETURN(out[r * 3 + 2], ReduceScatter(comm, CollectiveCall(r), all, x, 0,
                                                        ReductionKind::kSum));
      return OkStatus();
    });
    ASSERT_TRUE(st.ok()) << st.ToString();
    results.push_back(std::move(out));
  }
  for (size_t a = 1; a < results.size(); ++a) {
    for (int64_t i = 0; i < n * 3; ++i) {
      const auto want = results[0][i].values<float>();
      const auto got = results[a][i].values<float>();
      ASSERT_EQ(want.size(), got.size());
      for (size_t k = 0; k < want.size(); ++k) {
        if (i % 3 == 1) {
          ASSERT_EQ(got[k], want[k]) << "max, algorithm " << a;
        } else {
          ASSERT_NEAR(got[k], want[k], 1e-5f) << "sum, algorithm " << a << " element " << k;
        }
      }
    }
  }
}

TEST(CollectivesDTypeTest, Bf16AllReduceSumsInF32AndF16RoundsEveryStepLikeXla) {
  // XLA's CPU backend promotes a bf16 all-reduce sum to f32 (convert, f32 all-reduce, convert):
  // jax.lax.psum of bf16 [256, 1, 1] over 3 devices gives 258, where rounding to bf16 (8
  // significant bits) after each step would give 256 (256 + 1 ties to even, twice). An f16 sum
  // stays f16 and rounds every step: psum of f16 [2048, 1, 1] gives 2048 (JAX 0.10.2 on CPU),
  // where f32 would give 2050 (exact in f16).
  auto client = Client::Create(OptsCollectives(3));
  ASSERT_TRUE(client.ok());
  std::vector<Array> bf(3), half(3);
  Status st = (*client)->RunOnAllDevices([&](int64_t r, Communicator& comm) -> Status {
    Array x = Array::FromVector<BFloat16>({1}, {FloatToBFloat16(r == 0 ? 256.0f : 1.0f)});
    XS_ASSIGN_OR_RETURN(bf[r], AllReduce(comm, CollectiveCall(r, "", 1), DeviceGroups::All(3), x, ReductionKind::kSum));
    Array h = Array(Shape(DType::kF16, {1}));
    h.SetDouble(0, r == 0 ? 2048.0 : 1.0);
    XS_ASSIGN_OR_RETURN(half[r],
                        AllReduce(comm, CollectiveCall(r, "", 2), DeviceGroups::All(3), h, ReductionKind::kSum));
    return OkStatus();
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  for (const Array& a : bf) EXPECT_EQ(BFloat16ToFloat(a.values<BFloat16>()[0]), 258.0f);
  for (const Array& a : half) EXPECT_EQ(a.GetDouble(0), 2048.0);
}

TEST(CollectivesDTypeTest, PredAndComplexReductions) {
  auto client = Client::Create(OptsCollectives(2));
  ASSERT_TRUE(client.ok());
  std::vector<Array> ors(2), ands(2), prods(2);
  Status st = (*client)->RunOnAllDevices([&](int64_t r, Communicator& comm) -> Status {
    const DeviceGroups all = DeviceGroups::All(2);
    Array p = Array::FromVector<bool>({2}, {r == 0, true});
    XS_ASSIGN_OR_RETURN(ors[r], AllReduce(comm, CollectiveCall(r), all, p, ReductionKind::kOr));
    XS_ASSIGN_OR_RETURN(ands[r], AllReduce(comm, CollectiveCall(r), all, p, ReductionKind::kAnd));
    Array c = Array::FromVector<std::complex<float>>({1}, {{1.0f + r, 1.0f}});
    XS_ASSIGN_OR_RETURN(prods[r],
                        AllReduce(comm, CollectiveCall(r), all, c, ReductionKind::kProduct));
    return OkStatus();
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(ors[1], Array::FromVector<bool>({2}, {true, true}));
  EXPECT_EQ(ands[1], Array::FromVector<bool>({2}, {false, true}));
  // (1 + i)(2 + i) = 1 + 3i.
  EXPECT_EQ(prods[0], Array::FromVector<std::complex<float>>({1}, {{1.0f, 3.0f}}));
}

}  // namespace
}  // namespace xs
