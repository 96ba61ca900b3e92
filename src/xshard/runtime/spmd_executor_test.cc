// SPMD execution of every collective and XLA group mode on 2, 4 and 8 devices, against per-device
// results worked out by hand in the comments; plus planning errors and memory figures.
#include "xshard/ir/attributes.h"
#include "xshard/ir/module.h"
#include "xshard/ir/verifier.h"
#include "xshard/kernels/dot.h"
#include "xshard/exec/executable.h"
#include "xshard/text/parser.h"
#include "xshard/text/printer.h"
#include "xshard/runtime/client.h"
#include "xshard/comm/collectives.h"
#include "xshard/comm/communicator.h"
#include "xshard/comm/replica_groups.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "xshard/runtime/spmd_executor.h"
#include "xshard/testing/value_or_fail.h"

namespace xs {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::unique_ptr<Client> MakeClient(int64_t n) {
  ClientOptions o;
  o.num_devices = n;
  o.collective_timeout = std::chrono::milliseconds(10000);
  return testing::ValueOrFail(Client::Create(o));
}

// Parses, plans and runs `text` on a client with `devices` devices.
StatusOr<SpmdResult> RunSpmdExecutor(std::string_view text, const std::vector<std::vector<Array>>& args,
                             int64_t devices = 0) {
  XS_ASSIGN_OR_RETURN(std::unique_ptr<Module> m, ParseHloModule(text));
  XS_ASSIGN_OR_RETURN(std::unique_ptr<SpmdExecutable> exe, SpmdExecutable::Create(*m));
  std::unique_ptr<Client> client = MakeClient(devices > 0 ? devices : exe->num_devices());
  return exe->Run(*client, args);
}

Status PlanError(std::string_view text) {
  XS_ASSIGN_OR_RETURN(std::unique_ptr<Module> m, ParseHloModule(text));
  return SpmdExecutable::Create(*m).status();
}

std::vector<int32_t> I32Executor(const Array& a) {
  std::span<const int32_t> v = a.values<int32_t>();
  return {v.begin(), v.end()};
}

// Device d's single argument: s32[k] holding first + d * step, first + d * step + 1, ...
std::vector<std::vector<Array>> PerDevice(int64_t n, int64_t k, int32_t step) {
  std::vector<std::vector<Array>> args(n);
  for (int64_t d = 0; d < n; ++d) {
    std::vector<int32_t> v(k);
    for (int64_t j = 0; j < k; ++j) v[j] = static_cast<int32_t>(d * step + j);
    args[d].push_back(Array::FromVector<int32_t>({k}, v));
  }
  return args;
}

constexpr std::string_view kSumS32 = R"(
sum {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] add(a, b)
}
)";

std::string Hlo(std::string_view header, std::string_view body, std::string_view extra = "") {
  return StrCat("HloModule m, ", header, "\n", kSumS32, extra, "\nENTRY main {\n", body, "\n}\n");
}

// ---- all-gather ----

TEST(SpmdExecutor, AllGatherFlattenedIdsOnEightDevicesGathersEachGroupInOrder) {
  // Groups {0,2,4,6} and {1,3,5,7}; device d holds [d].
  const std::string text = Hlo("num_partitions=8", R"(
  p = s32[1] parameter(0)
  ROOT ag = s32[4] all-gather(p), channel_id=1, replica_groups={{0,2,4,6},{1,3,5,7}}, dimensions={0}, use_global_device_ids=true)");
  StatusOr<SpmdResult> r = RunSpmdExecutor(text, PerDevice(8, 1, 1));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(I32Executor(r->outputs[0][0]), ElementsAre(0, 2, 4, 6));
  EXPECT_THAT(I32Executor(r->outputs[4][0]), ElementsAre(0, 2, 4, 6));
  EXPECT_THAT(I32Executor(r->outputs[1][0]), ElementsAre(1, 3, 5, 7));
  EXPECT_THAT(I32Executor(r->outputs[7][0]), ElementsAre(1, 3, 5, 7));
}

TEST(SpmdExecutor, IotaReplicaGroupsMeanTheSameGroupsAsTheirExplicitList) {
  // [2,4]<=[4,2]T(1,0): arange(8).reshape(4,2).T.reshape(2,4) = {0,2,4,6},{1,3,5,7}. Along dim 1.
  const std::string text = Hlo("num_partitions=8", R"(
  p = s32[1,1] parameter(0)
  ROOT ag = s32[1,4] all-gather(p), channel_id=1, replica_groups=[2,4]<=[4,2]T(1,0), dimensions={1}, use_global_device_ids=true)");
  std::vector<std::vector<Array>> args(8);
  for (int32_t d = 0; d < 8; ++d) args[d].push_back(Array::FromVector<int32_t>({1, 1}, {d * 10}));
  StatusOr<SpmdResult> r = RunSpmdExecutor(text, args);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(I32Executor(r->outputs[2][0]), ElementsAre(0, 20, 40, 60));
  EXPECT_THAT(I32Executor(r->outputs[5][0]), ElementsAre(10, 30, 50, 70));
}

TEST(SpmdExecutor, AllGatherStartAndDoneRunAsOneAllGather) {
  const std::string text = Hlo("num_partitions=2", R"(
  p = s32[2] parameter(0)
  ags = (s32[2], s32[4]) all-gather-start(p), channel_id=3, replica_groups={{1,0}}, dimensions={0}, use_global_device_ids=true
  ROOT agd = s32[4] all-gather-done(ags))");
  // Group {1,0}: device 1's piece comes first.
  StatusOr<SpmdResult> r = RunSpmdExecutor(text, PerDevice(2, 2, 10));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(I32Executor(r->outputs[0][0]), ElementsAre(10, 11, 0, 1));
  EXPECT_THAT(I32Executor(r->outputs[1][0]), ElementsAre(10, 11, 0, 1));
}

// ---- all-reduce: reducers and group modes ----

TEST(SpmdExecutor, AllReduceCrossReplicaWithEmptyGroupsSumsEveryReplica) {
  // No channel_id: replica ids; 4 replicas x 1 partition; device d holds [d, d+1].
  const std::string text = Hlo("replica_count=4", R"(
  p = s32[2] parameter(0)
  ROOT ar = s32[2] all-reduce(p), replica_groups={}, to_apply=sum)");
  StatusOr<SpmdResult> r = RunSpmdExecutor(text, PerDevice(4, 2, 1));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (int d = 0; d < 4; ++d) EXPECT_THAT(I32Executor(r->outputs[d][0]), ElementsAre(6, 10)) << d;
}

// All-reduce and all-gather results land in the device's arena without a zero-fill first: every
// algorithm must write all of them. Two calls on one client reuse the arena, so stale values of
// the first call would show in the second; sizes below and above the eager limit, all algorithms.
TEST(SpmdExecutor, AllReduceAndAllGatherOverwriteTheirWholeArenaBufferOnEveryCall) {
  for (CollectiveAlgorithm algorithm : {CollectiveAlgorithm::kDirect, CollectiveAlgorithm::kRing,
                                        CollectiveAlgorithm::kRecursiveDoubling}) {
    for (int64_t k : {int64_t{6}, int64_t{40000}}) {
      const std::string text = Hlo("num_partitions=8", StrCat(R"(
  p = s32[)", k, R"(] parameter(0)
  ar = s32[)", k, R"(] all-reduce(p), channel_id=1, replica_groups={{0,1},{2,3},{4,5},{6,7}}, use_global_device_ids=true, to_apply=sum
  ag = s32[)", 8 * k, R"(] all-gather(p), channel_id=2, replica_groups={{0,1,2,3,4,5,6,7}}, dimensions={0}, use_global_device_ids=true
  ROOT t = (s32[)", k, "], s32[", 8 * k, R"(]) tuple(ar, ag))"));
      std::unique_ptr<Module> m = testing::ValueOrFail(ParseHloModule(text));
      std::unique_ptr<SpmdExecutable> exe = testing::ValueOrFail(SpmdExecutable::Create(*m));
      ClientOptions o;
      o.num_devices = 8;
      o.algorithm = algorithm;
      std::unique_ptr<Client> client = testing::ValueOrFail(Client::Create(o));
      for (int32_t call = 0; call < 2; ++call) {
        // Call 0: device d holds d*1000 + j; call 1: -(d + 1) everywhere (pair sums -(2d + 3)).
        std::vector<std::vector<Array>> args(8);
        for (int32_t d = 0; d < 8; ++d) {
          std::vector<int32_t> v(k);
          for (int64_t j = 0; j < k; ++j) v[j] = call == 0 ? d * 1000 + static_cast<int32_t>(j) : -(d + 1);
          args[d].push_back(Array::FromVector<int32_t>({k}, v));
        }
        StatusOr<SpmdResult> r = exe->Run(*client, args);
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        if (call == 0) continue;
        for (int32_t d = 0; d < 8; ++d) {
          const std::vector<int32_t> ar = I32Executor(r->outputs[d][0]), ag = I32Executor(r->outputs[d][1]);
          const int32_t pair = d / 2 * 2;
          for (int64_t j = 0; j < k; ++j) {
            ASSERT_EQ(ar[j], -(pair + 1) - (pair + 2)) << "device " << d << " element " << j << " k " << k;
          }
          for (int64_t j = 0; j < 8 * k; ++j) {
            ASSERT_EQ(ag[j], -(j / k + 1)) << "device " << d << " element " << j << " k " << k;
          }
        }
      }
    }
  }
}

struct ReducerCase {
  const char* op;      // to_apply root
  const char* dtype;   // element type
  std::vector<double> inputs;  // device d's scalar-like f32[1] / s32[1] / pred[1] value
  double want;
};

TEST(SpmdExecutor, AllReduceDetectsEachSupportedReducer) {
  const ReducerCase cases[] = {
      {"add", "f32", {1.5, -2, 4, 0.25}, 3.75},
      {"multiply", "f32", {1.5, -2, 4, 0.25}, -3},
      {"maximum", "s32", {3, -7, 9, 2}, 9},
      {"minimum", "s32", {3, -7, 9, 2}, -7},
      {"and", "pred", {1, 1, 0, 1}, 0},
      {"or", "pred", {0, 0, 1, 0}, 1},
      {"and", "s32", {7, 6, 14, 15}, 6},  // bitwise: 0111 & 0110 & 1110 & 1111 = 0110
  };
  for (const ReducerCase& c : cases) {
    const std::string text = StrCat(
        "HloModule m, num_partitions=4\nred {\n  a = ", c.dtype, "[] parameter(0)\n  b = ",
        c.dtype, "[] parameter(1)\n  ROOT r = ", c.dtype, "[] ", c.op, "(b, a)\n}\n",
        "ENTRY main {\n  p = ", c.dtype, "[1] parameter(0)\n  ROOT ar = ", c.dtype,
        "[1] all-reduce(p), channel_id=1, replica_groups={{0,1,2,3}}, "
        "use_global_device_ids=true, to_apply=red\n}\n");
    std::vector<std::vector<Array>> args(4);
    for (int d = 0; d < 4; ++d) {
      const std::string_view t = c.dtype;
      Array a(t == "f32" ? DType::kF32 : t == "s32" ? DType::kS32 : DType::kPred, {1});
      a.SetDouble(0, c.inputs[d]);
      args[d].push_back(std::move(a));
    }
    StatusOr<SpmdResult> r = RunSpmdExecutor(text, args);
    ASSERT_TRUE(r.ok()) << c.op << " " << c.dtype << ": " << r.status().ToString();
    for (int d = 0; d < 4; ++d) {
      EXPECT_EQ(r->outputs[d][0].GetDouble(0), c.want) << c.op << " " << c.dtype << " on " << d;
    }
  }
}

TEST(SpmdExecutor, AllReduceWithChannelAndNoGlobalIdsSpansAllPartitionsOfEachReplicaGroup) {
  // 2 replicas x 2 partitions, channel_id without use_global_device_ids: cross-replica-and-
  // partition. Group {0} -> logical {0,1}; group {1} -> logical {2,3}. Logical i holds [i+1].
  const std::string text = Hlo("num_partitions=2, replica_count=2", R"(
  p = s32[1] parameter(0)
  ROOT ar = s32[1] all-reduce(p), channel_id=1, replica_groups={{0},{1}}, to_apply=sum)");
  std::vector<std::vector<Array>> args(4);
  for (int32_t i = 0; i < 4; ++i) args[i].push_back(Array::FromVector<int32_t>({1}, {i + 1}));
  StatusOr<SpmdResult> r = RunSpmdExecutor(text, args);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(I32Executor(r->outputs[0][0]), ElementsAre(3));
  EXPECT_THAT(I32Executor(r->outputs[1][0]), ElementsAre(3));
  EXPECT_THAT(I32Executor(r->outputs[2][0]), ElementsAre(7));
  EXPECT_THAT(I32Executor(r->outputs[3][0]), ElementsAre(7));
  // XLA's default placement: partition p of replica r on device p * 2 + r.
  EXPECT_THAT(r->devices, ElementsAre(0, 2, 1, 3));
}

TEST(SpmdExecutor, AllReduceWithoutChannelGroupsReplicasWithinEachPartition) {
  // Cross-replica on 2x2: {{0,1}} is replicas 0 and 1 of each partition: logical {0,2}, {1,3}.
  const std::string text = Hlo("num_partitions=2, replica_count=2", R"(
  p = s32[1] parameter(0)
  ROOT ar = s32[1] all-reduce(p), replica_groups={{0,1}}, to_apply=sum)");
  std::vector<std::vector<Array>> args(4);
  for (int32_t i = 0; i < 4; ++i) args[i].push_back(Array::FromVector<int32_t>({1}, {i + 1}));
  StatusOr<SpmdResult> r = RunSpmdExecutor(text, args);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(I32Executor(r->outputs[0][0]), ElementsAre(4));  // 1 + 3
  EXPECT_THAT(I32Executor(r->outputs[2][0]), ElementsAre(4));
  EXPECT_THAT(I32Executor(r->outputs[1][0]), ElementsAre(6));  // 2 + 4
  EXPECT_THAT(I32Executor(r->outputs[3][0]), ElementsAre(6));
}

TEST(SpmdExecutor, VariadicAllReduceReducesEachOperand) {
  const std::string text = Hlo("num_partitions=2", R"(
  p = s32[1] parameter(0)
  q = s32[2] parameter(1)
  ROOT ar = (s32[1], s32[2]) all-reduce(p, q), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=sum)");
  std::vector<std::vector<Array>> args = {
      {Array::FromVector<int32_t>({1}, {1}), Array::FromVector<int32_t>({2}, {10, 20})},
      {Array::FromVector<int32_t>({1}, {2}), Array::FromVector<int32_t>({2}, {30, 40})}};
  StatusOr<SpmdResult> r = RunSpmdExecutor(text, args);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(I32Executor(r->outputs[1][0]), ElementsAre(3));
  EXPECT_THAT(I32Executor(r->outputs[1][1]), ElementsAre(40, 60));
}

// The combiner's tuple all-reduces: leaves of one type go through the communicator as one packed
// buffer (an empty leaf included), mixed types leaf by leaf; groups of two of four devices.
TEST(SpmdExecutor, VariadicAllReducePackedAndMixedTypesInGroups) {
  const std::string text = Hlo("num_partitions=4", R"(
  p = s32[3] parameter(0)
  q = s32[0] parameter(1)
  r = s32[2,2] parameter(2)
  f = f32[2] parameter(3)
  packed = (s32[3], s32[0], s32[2,2]) all-reduce(p, q, r), channel_id=1, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=sum
  mixed = (s32[3], f32[2]) all-reduce(p, f), channel_id=2, replica_groups={{0,2},{1,3}}, use_global_device_ids=true, to_apply=sum
  a = s32[3] get-tuple-element(packed), index=0
  c = s32[2,2] get-tuple-element(packed), index=2
  m = s32[3] get-tuple-element(mixed), index=0
  ROOT t = (s32[3], s32[2,2], s32[3]) tuple(a, c, m))");
  std::vector<std::vector<Array>> args;
  for (int32_t d = 0; d < 4; ++d) {
    args.push_back({Array::FromVector<int32_t>({3}, {d, 10 * d, 100 * d}), Array::FromVector<int32_t>({0}, {}),
                    Array::FromVector<int32_t>({2, 2}, {d, d + 1, d + 2, d + 3}),
                    Array::FromVector<float>({2}, {0.5f, 1.5f})});
  }
  StatusOr<SpmdResult> r = RunSpmdExecutor(text, args);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // Device 3 (groups {2,3} and {1,3}): p of 2 and 3 summed; r likewise; p of 1 and 3.
  EXPECT_THAT(I32Executor(r->outputs[3][0]), ElementsAre(5, 50, 500));
  EXPECT_THAT(I32Executor(r->outputs[3][1]), ElementsAre(5, 7, 9, 11));
  EXPECT_THAT(I32Executor(r->outputs[3][2]), ElementsAre(4, 40, 400));
  EXPECT_THAT(I32Executor(r->outputs[0][0]), ElementsAre(1, 10, 100));
  EXPECT_THAT(I32Executor(r->outputs[0][2]), ElementsAre(2, 20, 200));
}

// ---- reduce-scatter, all-to-all ----

TEST(SpmdExecutor, ReduceScatterGivesEachMemberItsPieceOfTheSum) {
  // Device d holds [d, d+1, d+2, d+3]; sum over 4 devices of element j = 6 + 4j = 6,10,14,18.
  const std::string text = Hlo("num_partitions=4", R"(
  p = s32[4] parameter(0)
  ROOT rs = s32[1] reduce-scatter(p), channel_id=2, replica_groups={{0,1,2,3}}, dimensions={0}, use_global_device_ids=true, to_apply=sum)");
  StatusOr<SpmdResult> r = RunSpmdExecutor(text, PerDevice(4, 4, 1));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(I32Executor(r->outputs[0][0]), ElementsAre(6));
  EXPECT_THAT(I32Executor(r->outputs[1][0]), ElementsAre(10));
  EXPECT_THAT(I32Executor(r->outputs[2][0]), ElementsAre(14));
  EXPECT_THAT(I32Executor(r->outputs[3][0]), ElementsAre(18));
}

TEST(SpmdExecutor, ArrayAllToAllExchangesPiecesAlongItsDimension) {
  // Device d holds [4d, 4d+1, 4d+2, 4d+3] and receives element d of every device, in order:
  // [d, 4+d, 8+d, 12+d]. Cross-partition (channel_id, all-to-all has no use_global_device_ids).
  const std::string text = Hlo("num_partitions=4", R"(
  p = s32[4] parameter(0)
  ROOT a2a = s32[4] all-to-all(p), channel_id=1, replica_groups={{0,1,2,3}}, dimensions={0})");
  StatusOr<SpmdResult> r = RunSpmdExecutor(text, PerDevice(4, 4, 4));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(I32Executor(r->outputs[0][0]), ElementsAre(0, 4, 8, 12));
  EXPECT_THAT(I32Executor(r->outputs[3][0]), ElementsAre(3, 7, 11, 15));
}

TEST(SpmdExecutor, TupleAllToAllSendsOperandJToMemberJ) {
  // Cross-partition on 2 replicas x 2 partitions: {{0,1}} within each replica: logical {0,1},
  // {2,3}. Logical i sends [10i + j] to member j; member m receives ([10*first + m],
  // [10*second + m]).
  const std::string text = Hlo("num_partitions=2, replica_count=2", R"(
  a = s32[1] parameter(0)
  b = s32[1] parameter(1)
  ROOT a2a = (s32[1], s32[1]) all-to-all(a, b), channel_id=1, replica_groups={{0,1}})");
  std::vector<std::vector<Array>> args(4);
  for (int32_t i = 0; i < 4; ++i) {
    args[i] = {Array::FromVector<int32_t>({1}, {10 * i}), Array::FromVector<int32_t>({1}, {10 * i + 1})};
  }
  StatusOr<SpmdResult> r = RunSpmdExecutor(text, args);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(I32Executor(r->outputs[0][0]), ElementsAre(0));
  EXPECT_THAT(I32Executor(r->outputs[0][1]), ElementsAre(10));
  EXPECT_THAT(I32Executor(r->outputs[1][0]), ElementsAre(1));
  EXPECT_THAT(I32Executor(r->outputs[1][1]), ElementsAre(11));
  EXPECT_THAT(I32Executor(r->outputs[2][0]), ElementsAre(20));
  EXPECT_THAT(I32Executor(r->outputs[3][1]), ElementsAre(31));
}

// ---- collective-permute, collective-broadcast ----

TEST(SpmdExecutor, CollectivePermuteShiftsAndDevicesWithNoSourceGetZeros) {
  // Open chain 0->1->...->7: device d gets [d-1]; device 0 gets 0. Device d holds [d + 100].
  const std::string text = Hlo("num_partitions=8", R"(
  p = s32[1] parameter(0)
  ROOT cp = s32[1] collective-permute(p), channel_id=1, source_target_pairs={{0,1},{1,2},{2,3},{3,4},{4,5},{5,6},{6,7}})");
  std::vector<std::vector<Array>> args(8);
  for (int32_t d = 0; d < 8; ++d) args[d].push_back(Array::FromVector<int32_t>({1}, {d + 100}));
  StatusOr<SpmdResult> r = RunSpmdExecutor(text, args);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(I32Executor(r->outputs[0][0]), ElementsAre(0));
  for (int d = 1; d < 8; ++d) EXPECT_THAT(I32Executor(r->outputs[d][0]), ElementsAre(d + 99)) << d;
}

TEST(SpmdExecutor, CollectivePermuteWithoutChannelPermutesReplicasOfEachPartition) {
  // 2 replicas x 2 partitions, pairs {0,1},{1,0} over replicas: logical 0<->2 and 1<->3.
  const std::string text = Hlo("num_partitions=2, replica_count=2", R"(
  p = s32[1] parameter(0)
  start = (s32[1], s32[1]) collective-permute-start(p), source_target_pairs={{0,1},{1,0}}
  ROOT done = s32[1] collective-permute-done(start))");
  std::vector<std::vector<Array>> args(4);
  for (int32_t i = 0; i < 4; ++i) args[i].push_back(Array::FromVector<int32_t>({1}, {i}));
  StatusOr<SpmdResult> r = RunSpmdExecutor(text, args);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(I32Executor(r->outputs[0][0]), ElementsAre(2));
  EXPECT_THAT(I32Executor(r->outputs[1][0]), ElementsAre(3));
  EXPECT_THAT(I32Executor(r->outputs[2][0]), ElementsAre(0));
  EXPECT_THAT(I32Executor(r->outputs[3][0]), ElementsAre(1));
}

TEST(SpmdExecutor, CollectiveBroadcastCopiesEachGroupsFirstMember) {
  const std::string text = Hlo("num_partitions=4", R"(
  p = s32[2] parameter(0)
  ROOT cb = s32[2] collective-broadcast(p), channel_id=1, replica_groups={{1,0},{3,2}})");
  StatusOr<SpmdResult> r = RunSpmdExecutor(text, PerDevice(4, 2, 10));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(I32Executor(r->outputs[0][0]), ElementsAre(10, 11));
  EXPECT_THAT(I32Executor(r->outputs[1][0]), ElementsAre(10, 11));
  EXPECT_THAT(I32Executor(r->outputs[2][0]), ElementsAre(30, 31));
  EXPECT_THAT(I32Executor(r->outputs[3][0]), ElementsAre(30, 31));
}

// ---- more group modes and device counts ----

TEST(SpmdExecutor, AllGatherWithoutChannelGathersTheReplicas) {
  // 2 replicas x 1 partition, cross-replica, empty groups: both replicas, in replica order.
  const std::string text = Hlo("replica_count=2", R"(
  p = s32[1] parameter(0)
  ROOT ag = s32[2] all-gather(p), replica_groups={}, dimensions={0})");
  StatusOr<SpmdResult> r = RunSpmdExecutor(text, PerDevice(2, 1, 7));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(I32Executor(r->outputs[0][0]), ElementsAre(0, 7));
  EXPECT_THAT(I32Executor(r->outputs[1][0]), ElementsAre(0, 7));
}

TEST(SpmdExecutor, ReduceScatterOverIotaPairsOnEightDevices) {
  // [4,2]<=[8]: {0,1},{2,3},{4,5},{6,7}. Device d holds [d, 10d + 1]; the pair (2g, 2g+1) sums
  // to [4g + 1, 40g + 12]; the first member keeps element 0, the second element 1.
  const std::string text = Hlo("num_partitions=8", R"(
  p = s32[2] parameter(0)
  ROOT rs = s32[1] reduce-scatter(p), channel_id=1, replica_groups=[4,2]<=[8], dimensions={0}, use_global_device_ids=true, to_apply=sum)");
  std::vector<std::vector<Array>> args(8);
  for (int32_t d = 0; d < 8; ++d) args[d].push_back(Array::FromVector<int32_t>({2}, {d, 10 * d + 1}));
  StatusOr<SpmdResult> r = RunSpmdExecutor(text, args);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(I32Executor(r->outputs[2][0]), ElementsAre(5));    // 2 + 3
  EXPECT_THAT(I32Executor(r->outputs[3][0]), ElementsAre(52));   // 21 + 31
  EXPECT_THAT(I32Executor(r->outputs[6][0]), ElementsAre(13));   // 6 + 7
  EXPECT_THAT(I32Executor(r->outputs[7][0]), ElementsAre(132));  // 61 + 71
}

// ragged-all-to-all on 3 devices. Device i sends (i + j) % 3 rows to device j, taken from its
// input [10i, 10i+1, ...] in member order; receivers place senders in order:
//   send sizes    0: [0,1,2]  1: [1,2,0]  2: [2,0,1]     input offsets 0: [0,0,1] 1: [0,1,3] 2: [0,2,2]
//   output offsets (where in device j's output sender i writes) 0: [0,0,0] 1: [0,1,2] 2: [1,3,2]
// Device 0 gets [10] from 1 at row 0 and [20,21] from 2 at row 1; device 1 gets [0] from 0 and
// [11,12] from 1; device 2 gets [1,2] from 0 and [22] from 2. Other rows keep the output's -1.
TEST(SpmdExecutor, RaggedAllToAllPlacesEachSendersRowsAtItsOffsets) {
  const std::string text = Hlo("num_partitions=3", R"(
  input = s32[6] parameter(0)
  output = s32[6] parameter(1)
  input_offsets = s32[3] parameter(2)
  send_sizes = s32[3] parameter(3)
  output_offsets = s32[3] parameter(4)
  recv_sizes = s32[3] parameter(5)
  ROOT r = s32[6] ragged-all-to-all(input, output, input_offsets, send_sizes, output_offsets, recv_sizes), channel_id=1, replica_groups={{0,1,2}})");
  const std::vector<std::vector<int32_t>> sizes = {{0, 1, 2}, {1, 2, 0}, {2, 0, 1}};
  const std::vector<std::vector<int32_t>> in_off = {{0, 0, 1}, {0, 1, 3}, {0, 2, 2}};
  const std::vector<std::vector<int32_t>> out_off = {{0, 0, 0}, {0, 1, 2}, {1, 3, 2}};
  std::vector<std::vector<Array>> args(3);
  for (int32_t i = 0; i < 3; ++i) {
    std::vector<int32_t> input(6);
    for (int32_t k = 0; k < 6; ++k) input[k] = 10 * i + k;
    args[i] = {Array::FromVector<int32_t>({6}, input), Array::FromVector<int32_t>({6}, std::vector<int32_t>(6, -1)),
               Array::FromVector<int32_t>({3}, in_off[i]), Array::FromVector<int32_t>({3}, sizes[i]),
               Array::FromVector<int32_t>({3}, out_off[i]), Array::FromVector<int32_t>({3}, sizes[i])};
  }
  StatusOr<SpmdResult> r = RunSpmdExecutor(text, args);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(I32Executor(r->outputs[0][0]), ElementsAre(10, 20, 21, -1, -1, -1));
  EXPECT_THAT(I32Executor(r->outputs[1][0]), ElementsAre(0, 11, 12, -1, -1, -1));
  EXPECT_THAT(I32Executor(r->outputs[2][0]), ElementsAre(1, 2, 22, -1, -1, -1));
  // A write past the receiver's rows is an error naming the sender and the rows.
  args[2][4] = Array::FromVector<int32_t>({3}, {1, 3, 6});
  r = RunSpmdExecutor(text, args);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("member 2 writes rows [6, 7) of device 2's output, which has 6 rows"));
  // Offsets arrays must have one entry per member.
  EXPECT_THAT(PlanError(Hlo("num_partitions=2", R"(
  input = s32[6] parameter(0)
  output = s32[6] parameter(1)
  o = s32[3] parameter(2)
  ROOT r = s32[6] ragged-all-to-all(input, output, o, o, o, o), channel_id=1, replica_groups={{0,1}})")).message(),
              HasSubstr("must be s32[2] or s64[2]: one offset or size per member of a group of 2"));
}

TEST(SpmdExecutor, AllToAllInTwoGroupsOfFourOnEightDevices) {
  // [2,4]<=[8]: {0,1,2,3},{4,5,6,7}. Device d holds [10d, 10d+1, 10d+2, 10d+3]; member m of a
  // group receives element m of each member: device 5 (m = 1) gets [41, 51, 61, 71].
  const std::string text = Hlo("num_partitions=8", R"(
  p = s32[4] parameter(0)
  ROOT a2a = s32[4] all-to-all(p), channel_id=1, replica_groups=[2,4]<=[8], dimensions={0})");
  StatusOr<SpmdResult> r = RunSpmdExecutor(text, PerDevice(8, 4, 10));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(I32Executor(r->outputs[5][0]), ElementsAre(41, 51, 61, 71));
  EXPECT_THAT(I32Executor(r->outputs[0][0]), ElementsAre(0, 10, 20, 30));
}

TEST(SpmdExecutor, CollectivePermuteSwapsTwoDevices) {
  const std::string text = Hlo("num_partitions=2", R"(
  p = s32[2] parameter(0)
  ROOT cp = s32[2] collective-permute(p), channel_id=1, source_target_pairs={{0,1},{1,0}})");
  StatusOr<SpmdResult> r = RunSpmdExecutor(text, PerDevice(2, 2, 10));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(I32Executor(r->outputs[0][0]), ElementsAre(10, 11));
  EXPECT_THAT(I32Executor(r->outputs[1][0]), ElementsAre(0, 1));
}

TEST(SpmdExecutor, CombinedCollectivePermuteMovesEveryOperand) {
  // XLA's combiner form: one collective-permute of two operands, a tuple of two results, each
  // operand moved as a one-operand permute with the same pairs would move it. Chain 0->1->2:
  // device d holds p0 = [10d, 10d + 1], p1 = [-d]; device 0 gets zeros.
  const std::string text = Hlo("num_partitions=3", R"(
  p0 = s32[2] parameter(0)
  p1 = s32[1] parameter(1)
  ROOT cp = (s32[2], s32[1]) collective-permute(p0, p1), channel_id=1, source_target_pairs={{0,1},{1,2}})");
  std::vector<std::vector<Array>> args(3);
  for (int32_t d = 0; d < 3; ++d) {
    args[d].push_back(Array::FromVector<int32_t>({2}, {10 * d, 10 * d + 1}));
    args[d].push_back(Array::FromVector<int32_t>({1}, {-d}));
  }
  StatusOr<SpmdResult> r = RunSpmdExecutor(text, args);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(I32Executor(r->outputs[0][0]), ElementsAre(0, 0));
  EXPECT_THAT(I32Executor(r->outputs[0][1]), ElementsAre(0));
  EXPECT_THAT(I32Executor(r->outputs[1][0]), ElementsAre(0, 1));
  EXPECT_THAT(I32Executor(r->outputs[1][1]), ElementsAre(0));
  EXPECT_THAT(I32Executor(r->outputs[2][0]), ElementsAre(10, 11));
  EXPECT_THAT(I32Executor(r->outputs[2][1]), ElementsAre(-1));
}

TEST(SpmdExecutor, CombinedCollectivePermuteStartDoneSwapsTwoDevices) {
  // The -start / -done form of a combined permute (hlo_parser_test's
  // CombinedCollectivePermuteStartAndDone): ((operands), (results)); 0 <-> 1.
  const std::string text = Hlo("num_partitions=2", R"(
  p0 = s32[2] parameter(0)
  p1 = s32[2] parameter(1)
  start = ((s32[2], s32[2]), (s32[2], s32[2])) collective-permute-start(p0, p1), channel_id=1, source_target_pairs={{0,1},{1,0}}
  ROOT done = (s32[2], s32[2]) collective-permute-done(start))");
  std::vector<std::vector<Array>> args(2);
  for (int32_t d = 0; d < 2; ++d) {
    args[d].push_back(Array::FromVector<int32_t>({2}, {d, d + 10}));
    args[d].push_back(Array::FromVector<int32_t>({2}, {d + 20, d + 30}));
  }
  StatusOr<SpmdResult> r = RunSpmdExecutor(text, args);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(I32Executor(r->outputs[0][0]), ElementsAre(1, 11));
  EXPECT_THAT(I32Executor(r->outputs[0][1]), ElementsAre(21, 31));
  EXPECT_THAT(I32Executor(r->outputs[1][0]), ElementsAre(0, 10));
  EXPECT_THAT(I32Executor(r->outputs[1][1]), ElementsAre(20, 30));
}

TEST(SpmdExecutor, CollectiveBroadcastFromDeviceThreeToEight) {
  const std::string text = Hlo("num_partitions=8", R"(
  p = s32[1] parameter(0)
  ROOT cb = s32[1] collective-broadcast(p), channel_id=1, replica_groups={{3,0,1,2,4,5,6,7}})");
  StatusOr<SpmdResult> r = RunSpmdExecutor(text, PerDevice(8, 1, 100));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (int d = 0; d < 8; ++d) EXPECT_THAT(I32Executor(r->outputs[d][0]), ElementsAre(300)) << d;
}

// ---- partition-id, memory ----

TEST(SpmdExecutor, EachDeviceSeesItsPartitionAndReplicaId) {
  const std::string text = Hlo("num_partitions=4, replica_count=2", R"(
  pid = u32[] partition-id()
  rid = u32[] replica-id()
  ten = u32[] constant(10)
  r10 = u32[] multiply(rid, ten)
  ROOT id = u32[] add(r10, pid))");
  StatusOr<SpmdResult> r = RunSpmdExecutor(text, std::vector<std::vector<Array>>(8));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(r->outputs[i][0].GetDouble(0), (i / 4) * 10 + i % 4) << i;
  }
}

TEST(SpmdExecutor, ReportsPerDeviceArgumentPeakAndLiveBytes) {
  // f32[1,2] (8 B) gathered over 2 devices into f32[2,2] (16 B): 8 + 16 at the peak.
  const std::string text = Hlo("num_partitions=2", R"(
  p = f32[1,2] parameter(0)
  ROOT ag = f32[2,2] all-gather(p), channel_id=1, replica_groups={{0,1}}, dimensions={0}, use_global_device_ids=true)");
  std::vector<std::vector<Array>> args = {{Array(DType::kF32, {1, 2})}, {Array(DType::kF32, {1, 2})}};
  StatusOr<SpmdResult> r = RunSpmdExecutor(text, args);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->memory.size(), 2u);
  EXPECT_EQ(r->memory[1].device, 1);
  EXPECT_EQ(r->memory[1].argument_bytes, 8);
  EXPECT_EQ(r->memory[1].peak_bytes, 24);
  EXPECT_EQ(r->memory[1].live_bytes, 16);
  EXPECT_EQ(FormatSpmdMemory(r->memory),
            "device   arguments    arena        peak         live\n"
            "cpu:0    8B           0B           24B          16B\n"
            "cpu:1    8B           0B           24B          16B\n"
            "total    16B          0B           48B          32B\n");
}

TEST(SpmdExecutor, ReportsTheArenaPlannedBeforeTheRun) {
  // e and f fuse into one loop; its output f, which the all-reduce reads, and the all-reduce's
  // result, alive together at the all-reduce, are the arena's two slots.
  const std::string text = Hlo("num_partitions=2", R"(
  p = s32[4,4] parameter(0)
  e = s32[4,4] negate(p)
  f = s32[4,4] multiply(p, e)
  ROOT ar = s32[4,4] all-reduce(f), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=sum)");
  std::vector<std::vector<Array>> args = {{Array::Full(DType::kS32, {4, 4}, 3)},
                                          {Array::Full(DType::kS32, {4, 4}, 3)}};
  StatusOr<SpmdResult> r = RunSpmdExecutor(text, args);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->outputs[1][0].GetDouble(2), -18.0);  // 3 * -3 on each of 2 devices
  EXPECT_EQ(r->memory[0].arena_bytes, 128);
  EXPECT_EQ(r->memory[0].peak_bytes, 64 + 128);  // arguments and the arena (f and the result)
}

// ---- errors found while planning or before running ----

TEST(SpmdExecutor, GroupsThatRepeatAnIdAreAnError) {
  Status st = PlanError(Hlo("num_partitions=4", R"(
  p = s32[1] parameter(0)
  ROOT ar = s32[1] all-reduce(p), channel_id=1, replica_groups={{0,1},{1,2,3}}, use_global_device_ids=true, to_apply=sum)"));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("all-reduce 'ar': replica groups {{0,1},{1,2,3}}"));
  EXPECT_THAT(st.message(), HasSubstr("twice"));
}

TEST(SpmdExecutor, GroupsThatLeaveADeviceOutAreAnError) {
  Status st = PlanError(Hlo("num_partitions=4", R"(
  p = s32[1] parameter(0)
  ROOT ar = s32[1] all-reduce(p), channel_id=1, replica_groups={{0,1},{2}}, use_global_device_ids=true, to_apply=sum)"));
  EXPECT_EQ(st.message(), "all-reduce 'ar': replica groups {{0,1},{2}} leave out device 3 of 4; "
                          "every device must be in exactly one group (no groups at all means one "
                          "group of every device)");
}

TEST(SpmdExecutor, GroupIdsOutOfRangeAreAnError) {
  Status st = PlanError(Hlo("num_partitions=2", R"(
  p = s32[1] parameter(0)
  ROOT ag = s32[2] all-gather(p), channel_id=1, replica_groups={{0,2}}, dimensions={0})"));
  // channel_id without use_global_device_ids on an all-gather: replica ids (1 replica here).
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("all-gather 'ag': replica groups {{0,2}} "
                                      "(cross_replica_and_partition) name replica 2"));
}

TEST(SpmdExecutor, GlobalDeviceIdsWithoutChannelAreAnError) {
  Status st = PlanError(Hlo("num_partitions=2", R"(
  p = s32[1] parameter(0)
  ROOT ar = s32[1] all-reduce(p), replica_groups={{0,1}}, use_global_device_ids=true, to_apply=sum)"));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("all-reduce 'ar': use_global_device_ids=true needs a "
                                      "channel_id"));
}

TEST(SpmdExecutor, UnsupportedReducerIsAnErrorNamingTheComputation) {
  Status st = PlanError(Hlo("num_partitions=2", R"(
  p = s32[1] parameter(0)
  ROOT ar = s32[1] all-reduce(p), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=sub)",
                               R"(
sub {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT d = s32[] subtract(a, b)
}
)"));
  EXPECT_EQ(st.message(),
            "unsupported: instruction 'ar' (all-reduce) is not supported by the executor; its "
            "to_apply computation 'sub' computes subtract 'd'; supported reducers are add, "
            "multiply, minimum, maximum, and, or of the two scalar parameters");
}

TEST(SpmdExecutor, ReducerWithShardingAnnotationAtItsRootIsItsOperation) {
  // As JAX's GSPMD lowering writes psum in a shard_map manual over some axes only.
  const std::string text = Hlo("num_partitions=2", R"(
  p = s32[2] parameter(0)
  ROOT ar = s32[2] all-reduce(p), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=sum_annotated)",
                               R"(
sum_annotated {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  s = s32[] add(a, b)
  ROOT m = s32[] custom-call(s), custom_call_target="Sharding", sharding={manual}
}
)");
  // Device d holds {10 d, 10 d + 1}: the sums are {10, 12} on both.
  StatusOr<SpmdResult> r = RunSpmdExecutor(text, PerDevice(2, 2, 10));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(I32Executor(r->outputs[0][0]), ElementsAre(10, 12));
  EXPECT_THAT(I32Executor(r->outputs[1][0]), ElementsAre(10, 12));
}

TEST(SpmdExecutor, ResultShapeThatDoesNotMatchTheGroupSizeIsAnError) {
  Status st = PlanError(Hlo("num_partitions=4", R"(
  p = s32[2] parameter(0)
  ROOT ag = s32[4] all-gather(p), channel_id=1, replica_groups={{0,1,2,3}}, dimensions={0}, use_global_device_ids=true)"));
  EXPECT_EQ(st.message(), "all-gather 'ag' over groups of 4 turns s32[2] into s32[8], but its "
                          "result 0 is s32[4]");
}

TEST(SpmdExecutor, WrongNumberOfDevicesInputsIsAnErrorBeforeRunning) {
  const std::string text = Hlo("num_partitions=4", R"(
  ROOT p = s32[2] parameter(0))");
  StatusOr<SpmdResult> r = RunSpmdExecutor(text, PerDevice(2, 2, 1), 4);
  EXPECT_EQ(r.status().message(), "module 'm' runs on 4 devices (num_partitions=4 x "
                                  "replica_count=1) but inputs for 2 device(s) were given; pass "
                                  "one list of arguments per device");
  std::vector<std::vector<Array>> args = PerDevice(4, 2, 1);
  args[3][0] = Array(DType::kS32, {8});
  r = RunSpmdExecutor(text, args);
  EXPECT_THAT(r.status().message(), HasSubstr("device 3: argument 0 has shape s32[8] but the "
                                              "module's parameter leaf 0 is s32[2]"));
}

TEST(SpmdExecutor, TooFewClientDevicesIsAnErrorNamingTheFix) {
  const std::string text = Hlo("num_partitions=4", R"(
  ROOT p = s32[2] parameter(0))");
  StatusOr<SpmdResult> r = RunSpmdExecutor(text, PerDevice(4, 2, 1), 2);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("--devices"));
}

}  // namespace
}  // namespace xs
