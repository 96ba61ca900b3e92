// No hangs, ever: a device that skips a collective, never arrives, leaves, fails, or calls it with
// another shape or dtype makes every device of the run return an error, within the timeout.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "xshard/runtime/client.h"
#include "xshard/comm/collectives.h"

namespace xs {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using Ms = std::chrono::milliseconds;

std::unique_ptr<Client> MakeClient(int64_t n, Ms timeout,
                                   CollectiveAlgorithm a = CollectiveAlgorithm::kDirect) {
  ClientOptions o;
  o.num_devices = n;
  o.collective_timeout = timeout;
  o.algorithm = a;
  auto c = Client::Create(o);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return *std::move(c);
}

Status SumOnce(Communicator& comm, int64_t rank, int64_t channel, int64_t size = 8,
               DType dtype = DType::kF32) {
  Array x(dtype, {size});
  return AllReduce(comm, CollectiveCall(rank, "all-reduce", channel),
                   DeviceGroups::All(comm.num_ranks()), x, ReductionKind::kSum)
      .status();
}

TEST(CollectiveFailureTest, DeviceThatNeverArrivesTimesOutEveryWaitingDevice) {
  const Ms timeout(300);
  auto client = MakeClient(8, timeout);
  std::vector<double> done_ms(8);
  const auto start = SteadyClock::now();
  auto result = client->RunPerRank(std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7},
                                   [&](int64_t r, Communicator& comm) -> Status {
    // Device 3 is busy elsewhere well past the timeout, then tries the collective it skipped.
    if (r == 3) std::this_thread::sleep_for(3 * timeout);
    Status st = SumOnce(comm, r, 1);
    done_ms[r] = std::chrono::duration<double, std::milli>(SteadyClock::now() - start).count();
    return st;
  });
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  double last_waiter = 0;
  for (int64_t r = 0; r < 8; ++r) {
    const Status& st = result->per_rank[r];
    EXPECT_EQ(st.code(), StatusCode::kDeadlineExceeded) << r << ": " << st.ToString();
    EXPECT_THAT(st.message(), AllOf(HasSubstr("all-reduce (channel 1)"),
                                    HasSubstr("timed out after 300 ms"),
                                    HasSubstr("arrived: 0,1,2,4,5,6,7"),
                                    HasSubstr("missing: 3")))
        << r;
    if (r != 3) {
      // Bounded: the timeout plus generous scheduling slack for a loaded 2-core machine.
      EXPECT_LT(done_ms[r], 300.0 + 5000.0) << r;
      last_waiter = std::max(last_waiter, done_ms[r]);
    }
  }
  // The waiting devices gave up only after the timeout, not before.
  EXPECT_GE(last_waiter, 300.0);
  EXPECT_EQ(result->status.code(), StatusCode::kDeadlineExceeded);
}

TEST(CollectiveFailureTest, SkippingOneCollectiveIsAMismatchOnEveryDevice) {
  auto client = MakeClient(8, Ms(5000));
  const auto start = SteadyClock::now();
  auto result = client->RunPerRank(std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7},
                                   [&](int64_t r, Communicator& comm) -> Status {
    if (r != 3) XS_RETURN_IF_ERROR(SumOnce(comm, r, 1));
    return SumOnce(comm, r, 2);  // device 3 starts here, skipping channel 1
  });
  ASSERT_TRUE(result.ok());
  for (int64_t r = 0; r < 8; ++r) {
    const Status& st = result->per_rank[r];
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << r << ": " << st.ToString();
    EXPECT_THAT(st.message(), AllOf(HasSubstr("collective mismatch at call #1"),
                                    HasSubstr("all-reduce (channel 1)"),
                                    HasSubstr("all-reduce (channel 2)"),
                                    HasSubstr("device 3")))
        << r;
  }
  // Detected at the rendezvous, long before the 5 s timeout.
  EXPECT_LT(std::chrono::duration<double>(SteadyClock::now() - start).count(), 2.0);
}

TEST(CollectiveFailureTest, DifferentShapesOrDtypesFailEveryDeviceNamingBoth) {
  auto client = MakeClient(4, Ms(5000));
  Status st = client->RunOnAllDevices([&](int64_t r, Communicator& comm) {
    return SumOnce(comm, r, 7, r == 2 ? 4 : 8);
  });
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), AllOf(HasSubstr("all-reduce (channel 7) of f32[8] with sum"),
                                  HasSubstr("all-reduce (channel 7) of f32[4] with sum"),
                                  HasSubstr("device 2")));

  st = client->RunOnAllDevices([&](int64_t r, Communicator& comm) {
    return SumOnce(comm, r, 9, 8, r == 1 ? DType::kS32 : DType::kF32);
  });
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), AllOf(HasSubstr("of s32[8]"), HasSubstr("of f32[8]")));
}

TEST(CollectiveFailureTest, DeviceThatFinishesWithoutJoiningFailsItsPeersAtOnce) {
  auto client = MakeClient(4, Ms(10000));
  const auto start = SteadyClock::now();
  auto result = client->RunPerRank(std::vector<int64_t>{0, 1, 2, 3},
                                   [&](int64_t r, Communicator& comm) -> Status {
    if (r == 1) return OkStatus();
    return SumOnce(comm, r, 4);
  });
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(result->per_rank[1].ok());
  for (int64_t r : {0, 2, 3}) {
    EXPECT_EQ(result->per_rank[r].code(), StatusCode::kFailedPrecondition) << r;
    EXPECT_THAT(result->per_rank[r].message(),
                AllOf(HasSubstr("all-reduce (channel 4)"),
                      HasSubstr("device 1 finished its program without joining"),
                      HasSubstr("missing: 1")));
  }
  EXPECT_LT(std::chrono::duration<double>(SteadyClock::now() - start).count(), 5.0);
}

TEST(CollectiveFailureTest, DeviceWhoseProgramFailsStopsItsPeers) {
  auto client = MakeClient(8, Ms(10000));
  const auto start = SteadyClock::now();
  auto result = client->RunPerRank(std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7},
                                   [&](int64_t r, Communicator& comm) -> Status {
    if (r == 5) return InvalidArgument("boom");
    XS_RETURN_IF_ERROR(SumOnce(comm, r, 1));
    return SumOnce(comm, r, 2);
  });
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->per_rank[5], InvalidArgument("boom"));
  EXPECT_EQ(result->status, InvalidArgument("device 5 failed: boom"));
  for (int64_t r = 0; r < 8; ++r) {
    if (r != 5) {
      EXPECT_EQ(result->per_rank[r], InvalidArgument("device 5 failed: boom")) << r;
    }
  }
  EXPECT_LT(std::chrono::duration<double>(SteadyClock::now() - start).count(), 5.0);
}

TEST(CollectiveFailureTest, BadArgumentsOnOneDeviceFailEveryDevice) {
  auto client = MakeClient(4, Ms(10000));
  Status st = client->RunOnAllDevices([&](int64_t r, Communicator& comm) -> Status {
    Array x(DType::kF32, {6});
    // Device 0 gathers along a dim the operand does not have.
    return AllGather(comm, CollectiveCall(r, "ag", 3),
                     DeviceGroups::All(4), x, r == 0 ? 2 : 0)
        .status();
  });
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("ag: all_gather_dimension 2 is out of range for an "
                                      "operand of rank 1"));
}

TEST(CollectiveFailureTest, RingAlgorithmAlsoTimesOutInsteadOfHanging) {
  auto client = MakeClient(4, Ms(300), CollectiveAlgorithm::kRing);
  auto result = client->RunPerRank(std::vector<int64_t>{0, 1, 2, 3},
                                   [&](int64_t r, Communicator& comm) -> Status {
    if (r == 2) std::this_thread::sleep_for(Ms(900));
    return SumOnce(comm, r, 1, 1 << 16);
  });
  ASSERT_TRUE(result.ok());
  for (const Status& st : result->per_rank) {
    EXPECT_EQ(st.code(), StatusCode::kDeadlineExceeded) << st.ToString();
    EXPECT_THAT(st.message(), HasSubstr("missing: 2"));
  }
}

TEST(CollectiveFailureTest, ClientRunsNormallyAfterAFailedRun) {
  auto client = MakeClient(4, Ms(200));
  Status bad = client->RunOnAllDevices([&](int64_t r, Communicator& comm) -> Status {
    if (r == 0) return InvalidArgument("first run fails");
    return SumOnce(comm, r, 1);
  });
  EXPECT_EQ(bad, InvalidArgument("device 0 failed: first run fails"));
  std::vector<Array> out(4);
  Status good = client->RunOnAllDevices([&](int64_t r, Communicator& comm) -> Status {
    Array x = Array::FromVector<float>({1}, {static_cast<float>(r)});
    XS_ASSIGN_OR_RETURN(out[r], AllReduce(comm, CollectiveCall(r), DeviceGroups::All(4), x,
                                          ReductionKind::kSum));
    return OkStatus();
  });
  ASSERT_TRUE(good.ok()) << good.ToString();
  for (const Array& a : out) EXPECT_EQ(a, Array::FromVector<float>({1}, {6}));
}

TEST(CollectiveFailureTest, RunRejectsBadDeviceLists) {
  auto client = MakeClient(4, Ms(1000));
  auto noop = [](int64_t, Communicator&) { return OkStatus(); };
  EXPECT_THAT(client->Run(std::vector<int64_t>{0, 4}, noop).message(),
              HasSubstr("device 4 does not exist: the client has 4 devices"));
  EXPECT_THAT(client->Run(std::vector<int64_t>{1, 1}, noop).message(),
              HasSubstr("device 1 appears twice in the run's device list [1,1]"));
}

}  // namespace
}  // namespace xs
