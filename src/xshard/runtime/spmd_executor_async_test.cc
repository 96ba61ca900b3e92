// Asynchronous collectives: all-gather-start / -done, all-reduce-start / -done,
// collective-permute-start / -done and async-start wrapping a reduce-scatter, run on 8 devices with
// independent compute between start and done, against results worked out by hand; the
// communicator's start / finish calls directly, including their failure rules.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "xshard/runtime/client.h"
#include "xshard/comm/collectives.h"
#include "xshard/runtime/spmd_executor.h"
#include "xshard/comm/wait.h"
#include "xshard/text/parser.h"
#include "xshard/testing/value_or_fail.h"

namespace xs {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::unique_ptr<Client> MakeClient(int64_t n, std::chrono::milliseconds timeout) {
  ClientOptions o;
  o.num_devices = n;
  o.collective_timeout = timeout;
  return testing::ValueOrFail(Client::Create(o));
}

StatusOr<SpmdResult> RunSpmd(std::string_view text, const std::vector<std::vector<Array>>& args) {
  XS_ASSIGN_OR_RETURN(std::unique_ptr<Module> m, ParseHloModule(text));
  XS_ASSIGN_OR_RETURN(std::unique_ptr<SpmdExecutable> exe, SpmdExecutable::Create(*m));
  std::unique_ptr<Client> client = MakeClient(exe->num_devices(), std::chrono::milliseconds(10000));
  return exe->Run(*client, args);
}

std::vector<int32_t> I32(const Array& a) {
  std::span<const int32_t> v = a.values<int32_t>();
  return {v.begin(), v.end()};
}

// Device d holds [10d, 10d+1, 10d+2, 10d+3].
std::vector<std::vector<Array>> Args() {
  std::vector<std::vector<Array>> args(8);
  for (int32_t d = 0; d < 8; ++d) {
    args[d].push_back(Array::FromVector<int32_t>({4}, {10 * d, 10 * d + 1, 10 * d + 2, 10 * d + 3}));
  }
  return args;
}

constexpr std::string_view kAsyncModule = R"(HloModule m, num_partitions=8

sum {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] add(a, b)
}

rs_w {
  q = s32[8] parameter(0)
  ROOT rs = s32[4] reduce-scatter(q), channel_id=4, replica_groups={{0,1},{2,3},{4,5},{6,7}}, dimensions={0}, use_global_device_ids=true, to_apply=sum
}

ENTRY main {
  p = s32[4] parameter(0)
  ags = (s32[4], s32[8]) all-gather-start(p), channel_id=1, replica_groups={{0,1},{2,3},{4,5},{6,7}}, dimensions={0}, use_global_device_ids=true
  ars = s32[4] all-reduce-start(p), channel_id=2, replica_groups={{0,1,2,3},{4,5,6,7}}, use_global_device_ids=true, to_apply=sum
  cps = (s32[4], s32[4]) collective-permute-start(p), channel_id=3, source_target_pairs={{0,4},{4,0},{1,5},{5,1},{2,6},{6,2},{3,7},{7,3}}
  m = s32[4] multiply(p, p)
  agd = s32[8] all-gather-done(ags)
  rss = ((s32[8]), s32[4], s32[]) async-start(agd), calls=rs_w
  cpd = s32[4] collective-permute-done(cps)
  ard = s32[4] all-reduce-done(ars)
  rsd = s32[4] async-done(rss), calls=rs_w
  ROOT t = (s32[8], s32[4], s32[4], s32[4], s32[4]) tuple(agd, ard, cpd, rsd, m)
}
)";

TEST(SpmdAsyncCollectives, StartsAndDonesInterleavedWithComputeGiveTheCollectivesResults) {
  // Run it several times: the order in which devices reach each start and done varies.
  for (int rep = 0; rep < 20; ++rep) {
    StatusOr<SpmdResult> r = RunSpmd(kAsyncModule, Args());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    // Device 2: pair {2,3}, row {0,1,2,3}, receives from device 6.
    const auto& d2 = r->outputs[2];
    EXPECT_THAT(I32(d2[0]), ElementsAre(20, 21, 22, 23, 30, 31, 32, 33));
    EXPECT_THAT(I32(d2[1]), ElementsAre(60, 64, 68, 72));  // sum over d=0..3 of 10d + j
    EXPECT_THAT(I32(d2[2]), ElementsAre(60, 61, 62, 63));
    EXPECT_THAT(I32(d2[3]), ElementsAre(40, 42, 44, 46));  // first half of 2 * gathered
    EXPECT_THAT(I32(d2[4]), ElementsAre(400, 441, 484, 529));
    // Device 5: pair {4,5}, row {4..7}, receives from device 1.
    const auto& d5 = r->outputs[5];
    EXPECT_THAT(I32(d5[0]), ElementsAre(40, 41, 42, 43, 50, 51, 52, 53));
    EXPECT_THAT(I32(d5[1]), ElementsAre(220, 224, 228, 232));
    EXPECT_THAT(I32(d5[2]), ElementsAre(10, 11, 12, 13));
    EXPECT_THAT(I32(d5[3]), ElementsAre(100, 102, 104, 106));  // second half of 2 * gathered
  }
}

constexpr std::string_view kLoopModule = R"(HloModule m, num_partitions=8

cond {
  s = (s32[], s32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}

body {
  s = (s32[], s32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = s32[4] get-tuple-element(s), index=1
  cps = (s32[4], s32[4]) collective-permute-start(x), channel_id=1, source_target_pairs={{0,1},{1,2},{2,3},{3,4},{4,5},{5,6},{6,7},{7,0}}
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  cpd = s32[4] collective-permute-done(cps)
  ROOT t = (s32[], s32[4]) tuple(i1, cpd)
}

ENTRY main {
  p = s32[4] parameter(0)
  z = s32[] constant(0)
  init = (s32[], s32[4]) tuple(z, p)
  w = (s32[], s32[4]) while(init), condition=cond, body=body
  ROOT r = s32[4] get-tuple-element(w), index=1
}
)";

TEST(SpmdAsyncCollectives, PermuteStartAndDoneInAWhileBodyPairUpEveryIteration) {
  StatusOr<SpmdResult> r = RunSpmd(kLoopModule, Args());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // Five shifts to the right around the ring of 8: device d holds device (d - 5) mod 8's input.
  for (int32_t d = 0; d < 8; ++d) {
    const int32_t from = (d + 3) % 8;
    EXPECT_THAT(I32(r->outputs[d][0]),
                ElementsAre(10 * from, 10 * from + 1, 10 * from + 2, 10 * from + 3))
        << d;
  }
}

// ---- the communicator's start / finish directly ----

TEST(AsyncCommunicator, StartedCallsFinishOutOfStartOrderWithTheirResults) {
  auto client = MakeClient(8, std::chrono::milliseconds(10000));
  const DeviceGroups pairs = *DeviceGroups::Create({{0, 1}, {2, 3}, {4, 5}, {6, 7}}, 8, "t");
  const DeviceGroups rows = *DeviceGroups::Create({{0, 1, 2, 3}, {4, 5, 6, 7}}, 8, "t");
  std::vector<std::vector<float>> gathered(8), summed(8);
  const int64_t parks_before = Doorbell::TimedOutParks();
  Status st = client->Run(std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7},
                          [&](int64_t r, Communicator& comm) -> Status {
    // 128 KiB inputs: large enough that peers read this rank's buffer directly (not staged).
    const int64_t n = 32768;
    Array x(DType::kF32, {n});
    for (int64_t i = 0; i < n; ++i) x.SetDouble(i, static_cast<double>(r));
    Array ag(DType::kF32, {2 * n}), ar(DType::kF32, {n});
    uint64_t h1 = 0, h2 = 0;
    CollectiveCall c1(r, "all-gather", 1), c2(r, "all-reduce", 2);
    c1.async_handle = &h1;
    c2.async_handle = &h2;
    XS_RETURN_IF_ERROR(comm.AllGather(c1, pairs, ConstBufferView::Of(x), BufferView::Of(ag), 0));
    XS_RETURN_IF_ERROR(comm.AllReduce(c2, rows, ConstBufferView::Of(x), BufferView::Of(ar),
                                      ReductionKind::kSum));
    // A synchronous call between start and finish.
    XS_ASSIGN_OR_RETURN(Array b, AllReduce(comm, CollectiveCall(r, "all-reduce", 3), pairs, x,
                                           ReductionKind::kMax));
    if (b.GetDouble(0) != static_cast<double>(r | 1)) return Internal("max ", b.GetDouble(0));
    // Finish in reverse start order (the same order on every rank, as one program gives).
    XS_RETURN_IF_ERROR(comm.Finish(r, h2));
    XS_RETURN_IF_ERROR(comm.Finish(r, h1));
    gathered[r] = {static_cast<float>(ag.GetDouble(0)), static_cast<float>(ag.GetDouble(n))};
    summed[r] = {static_cast<float>(ar.GetDouble(0)), static_cast<float>(ar.GetDouble(n - 1))};
    return OkStatus();
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  for (int64_t r = 0; r < 8; ++r) {
    const float lo = static_cast<float>(r & ~1), row = r < 4 ? 6.0f : 22.0f;
    EXPECT_THAT(gathered[r], ElementsAre(lo, lo + 1)) << r;
    EXPECT_THAT(summed[r], ElementsAre(row, row)) << r;
  }
  EXPECT_EQ(Doorbell::TimedOutParks() - parks_before, 0);
}

TEST(AsyncCommunicator, ALargePermuteFinishesWithoutWaitingForItsPeersToFinish) {
  // 256 KiB per device (not staged): the data moves when both ends have started, on the thread of
  // whichever started last, so a device's finish does not wait for its peers' finishes.
  auto client = MakeClient(4, std::chrono::milliseconds(10000));
  const PermutePairs ring = *PermutePairs::Create({{0, 1}, {1, 2}, {2, 3}, {3, 0}}, 4, "t");
  std::atomic<int> evens_finished{0};
  std::vector<int> odd_saw_even_finish(4, -1);
  std::vector<float> got(4);
  Status st = client->Run(std::vector<int64_t>{0, 1, 2, 3},
                          [&](int64_t r, Communicator& comm) -> Status {
    const int64_t n = 65536;
    Array x(DType::kF32, {n}), out(DType::kF32, {n});
    for (int64_t i = 0; i < n; ++i) x.SetDouble(i, static_cast<double>(r * 1000 + i % 100));
    uint64_t h = 0;
    CollectiveCall c(r, "cp", 1);
    c.async_handle = &h;
    XS_RETURN_IF_ERROR(comm.CollectivePermute(c, ring, ConstBufferView::Of(x), BufferView::Of(out)));
    if (r % 2 == 0) {
      // Even devices are busy computing for a while before their -done.
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      XS_RETURN_IF_ERROR(comm.Finish(r, h));
      evens_finished.fetch_add(1);
    } else {
      XS_RETURN_IF_ERROR(comm.Finish(r, h));
      odd_saw_even_finish[r] = evens_finished.load();
    }
    got[r] = static_cast<float>(out.GetDouble(99));
    return OkStatus();
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(odd_saw_even_finish[1], 0);
  EXPECT_EQ(odd_saw_even_finish[3], 0);
  for (int64_t r = 0; r < 4; ++r) EXPECT_EQ(got[r], ((r + 3) % 4) * 1000 + 99) << r;
}

TEST(AsyncCommunicator, ADeviceThatNeverStartsFailsEveryFinishWithinTheTimeout) {
  auto client = MakeClient(4, std::chrono::milliseconds(300));
  auto result = client->RunPerRank(std::vector<int64_t>{0, 1, 2, 3},
                                   [&](int64_t r, Communicator& comm) -> Status {
    if (r == 3) return OkStatus();  // never starts the all-gather
    Array x(DType::kF32, {4}), out(DType::kF32, {16});
    uint64_t h = 0;
    CollectiveCall c(r, "ag", 7);
    c.async_handle = &h;
    XS_RETURN_IF_ERROR(comm.AllGather(c, DeviceGroups::All(4), ConstBufferView::Of(x),
                                      BufferView::Of(out), 0));
    return comm.Finish(r, h);
  });
  ASSERT_TRUE(result.ok());
  for (int64_t r = 0; r < 3; ++r) {
    EXPECT_FALSE(result->per_rank[r].ok()) << r;
    EXPECT_THAT(result->per_rank[r].message(),
                AllOf(HasSubstr("ag (all-gather, channel 7)"), HasSubstr("missing: 3")))
        << r << ": " << result->per_rank[r].ToString();
  }
}

TEST(AsyncCommunicator, MoreCallsInFlightThanCallSlotsCompleteTheOldestFirst) {
  // 40 started all-reduces (a backward pass's gradient reductions, all started before any -done)
  // with mixed sizes: starting one while 15 are in flight completes the oldest, whose -done is
  // then a no-op; every result is right and finishing in reverse order works too.
  auto client = MakeClient(4, std::chrono::milliseconds(10000));
  std::vector<std::vector<float>> got(4);
  Status st = client->Run(std::vector<int64_t>{0, 1, 2, 3}, [&](int64_t r, Communicator& comm) -> Status {
    constexpr int kCalls = 40;
    std::vector<Array> ins, outs;
    std::vector<uint64_t> handles(kCalls, 0);
    for (int i = 0; i < kCalls; ++i) {
      const int64_t n = i % 3 == 0 ? 40000 : 5;
      ins.emplace_back(DType::kF32, std::vector<int64_t>{n});
      outs.emplace_back(DType::kF32, std::vector<int64_t>{n});
      for (int64_t j = 0; j < n; ++j) ins.back().SetDouble(j, static_cast<double>(r + i));
    }
    for (int i = 0; i < kCalls; ++i) {
      CollectiveCall c(r, "all-reduce", i + 1);
      c.async_handle = &handles[i];
      XS_RETURN_IF_ERROR(comm.AllReduce(c, DeviceGroups::All(4), ConstBufferView::Of(ins[i]), BufferView::Of(outs[i]),
                                        ReductionKind::kSum));
    }
    for (int i = kCalls; i-- > 0;) XS_RETURN_IF_ERROR(comm.Finish(r, handles[i]));
    for (int i = 0; i < kCalls; ++i)
      got[r].push_back(static_cast<float>(outs[i].GetDouble(outs[i].num_elements() - 1)));
    return OkStatus();
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  for (int64_t r = 0; r < 4; ++r) {
    ASSERT_EQ(got[r].size(), 40u);
    for (int i = 0; i < 40; ++i) EXPECT_EQ(got[r][i], 6.0f + 4.0f * i) << r << " call " << i;
  }
}

TEST(AsyncCommunicator, FinishingAHandleTwiceIsAnError) {
  auto client = MakeClient(2, std::chrono::milliseconds(2000));
  auto result = client->RunPerRank(std::vector<int64_t>{0, 1},
                                   [&](int64_t r, Communicator& comm) -> Status {
    Array x(DType::kF32, {4}), out(DType::kF32, {4});
    uint64_t h = 0;
    CollectiveCall c(r, "ar", 1);
    c.async_handle = &h;
    XS_RETURN_IF_ERROR(comm.AllReduce(c, DeviceGroups::All(2), ConstBufferView::Of(x),
                                      BufferView::Of(out), ReductionKind::kSum));
    XS_RETURN_IF_ERROR(comm.Finish(r, h));
    return comm.Finish(r, h);
  });
  ASSERT_TRUE(result.ok());
  EXPECT_THAT(result->status.message(), HasSubstr("already finished"));
}

}  // namespace
}  // namespace xs
