// Tests of the process thread pool: every index exactly once, errors propagate, nesting and
// concurrent callers finish, each concurrent caller gets its threads; the device thread share and
// the XSHARD_NUM_THREADS check.
#include "xshard/kernels/parallel.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace xs::kernels {
namespace {

TEST(ParallelFor, EveryIndexExactlyOnce) {
  for (int threads : {1, 2, 3, 8}) {
    for (int64_t n : {0, 1, 2, 7, 1000}) {
      std::vector<std::atomic<int>> hits(n);
      ParallelFor(n, threads, [&](int64_t i) { hits[i].fetch_add(1); });
      for (int64_t i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
    }
  }
  EXPECT_LE(PoolWorkerCount(), 7);
}

TEST(ParallelFor, OneThreadRunsInlineInOrder) {
  std::vector<int64_t> order;
  const std::thread::id me = std::this_thread::get_id();
  ParallelFor(5, 1, [&](int64_t i) {
    EXPECT_EQ(std::this_thread::get_id(), me);
    order.push_back(i);
  });
  EXPECT_EQ(order, (std::vector<int64_t>{0, 1, 2, 3, 4}));
}

TEST(ParallelFor, ExceptionIsRethrownAndThePoolKeepsWorking) {
  std::atomic<int> calls{0};
  EXPECT_THROW(ParallelFor(100000, 4,
                           [&](int64_t i) {
                             calls.fetch_add(1);
                             if (i == 3) throw std::runtime_error("index 3");
                           }),
               std::runtime_error);
  // How many calls ran before the stop was seen depends on scheduling (on a loaded machine the
  // other workers can finish every chunk first), so only the upper bound is certain.
  EXPECT_LE(calls.load(), 100000);
  // The pool still works afterwards.
  std::atomic<int64_t> sum{0};
  ParallelFor(100, 4, [&](int64_t i) { sum.fetch_add(i); });
  EXPECT_EQ(sum.load(), 4950);
}

TEST(ParallelFor, StatusOfTheFailingCallIsReturned) {
  Status s = ParallelForStatus(50, 3, [](int64_t i) -> Status {
    if (i == 17) return InvalidArgument("tile 17 failed");
    return OkStatus();
  });
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("tile 17"), std::string::npos);
  EXPECT_TRUE(ParallelForStatus(50, 3, [](int64_t) { return OkStatus(); }).ok());
}

TEST(ParallelFor, NestedCallsDoNotDeadlock) {
  std::atomic<int64_t> total{0};
  ParallelFor(8, 4, [&](int64_t) {
    ParallelFor(16, 4, [&](int64_t) {
      ParallelFor(4, 4, [&](int64_t j) { total.fetch_add(j + 1); });
    });
  });
  EXPECT_EQ(total.load(), 8 * 16 * 10);
}

TEST(ParallelFor, ConcurrentCallersFromManyThreads) {
  // Eight "devices" on however many cores: each loop completes with its own sum.
  std::vector<std::thread> devices;
  std::vector<int64_t> sums(8, 0);
  for (int d = 0; d < 8; ++d) {
    devices.emplace_back([&, d] {
      for (int rep = 0; rep < 20; ++rep) {
        std::atomic<int64_t> s{0};
        ParallelFor(64, 2, [&](int64_t i) { s.fetch_add(i * (d + 1)); });
        sums[d] += s.load();
      }
    });
  }
  for (std::thread& t : devices) t.join();
  for (int d = 0; d < 8; ++d) EXPECT_EQ(sums[d], 20 * 2016 * (d + 1));
}

TEST(ParallelFor, StopsStartingCallsOnceTheCallersFlagIsSet) {
  // The flag is set by call 10: calls already claimed may finish, but far fewer than all 10,000
  // run, on one thread and on four; without a flag every call runs.
  for (int threads : {1, 4}) {
    std::atomic<bool> stop{false};
    std::atomic<int64_t> calls{0};
    {
      ScopedInterrupt interrupt(&stop);
      EXPECT_FALSE(Interrupted());
      ParallelFor(10000, threads, [&](int64_t) {
        if (calls.fetch_add(1) == 10) stop.store(true);
        EXPECT_LE(calls.load(), 10 + threads + 1);
      });
      EXPECT_TRUE(Interrupted());
    }
    EXPECT_FALSE(Interrupted());  // the scope restored "no flag"
    EXPECT_LE(calls.load(), 10 + threads + 1) << threads << " threads";
  }
  std::atomic<int64_t> calls{0};
  ParallelFor(1000, 4, [&](int64_t) { calls.fetch_add(1); });
  EXPECT_EQ(calls.load(), 1000);
}

TEST(ParallelFor, CoreCountIsPositive) { EXPECT_GE(CoreCount(), 1); }

// Devices calling at once each get their own helpers: 6 callers x 3 threads = 18 calls that can
// only finish if all 18 run at the same time (the pool must grow past one caller's wants).
TEST(ParallelFor, ConcurrentCallersEachGetTheirThreads) {
  constexpr int kCallers = 6, kThreads = 3, kAll = kCallers * kThreads;
  std::atomic<int> arrived{0};
  std::atomic<int> met{0};
  auto rendezvous = [&](int64_t) {
    arrived.fetch_add(1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (arrived.load() < kAll && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    if (arrived.load() >= kAll) met.fetch_add(1);
  };
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) callers.emplace_back([&] { ParallelFor(kThreads, kThreads, rendezvous); });
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(met.load(), kAll);
  EXPECT_GE(PoolWorkerCount(), kCallers * (kThreads - 1));
}

TEST(ParallelFor, WorkersSeeTheCallersDeviceThreadShare) {
  ScopedDeviceThreadShare share({3, /*concurrent=*/true});
  std::atomic<int> wrong{0};
  ParallelFor(64, 4, [&](int64_t) {
    const DeviceThreadShare seen = CurrentDeviceThreadShare();
    if (seen.threads != 3 || !seen.concurrent) wrong.fetch_add(1);
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  });
  EXPECT_EQ(wrong.load(), 0);
  {
    ScopedDeviceThreadShare inner({1, false});
    EXPECT_EQ(CurrentDeviceThreadShare().threads, 1);
  }
  EXPECT_EQ(CurrentDeviceThreadShare().threads, 3);
}

TEST(ParallelFor, ThreadBudgetEnvIsCheckedNamingTheValue) {
  const char* saved = std::getenv("XSHARD_NUM_THREADS");
  const std::string keep = saved ? saved : "";
  setenv("XSHARD_NUM_THREADS", "two", 1);
  Status bad = CheckThreadBudgetEnv();
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("XSHARD_NUM_THREADS='two'"), std::string::npos) << bad.message();
  setenv("XSHARD_NUM_THREADS", "0", 1);
  EXPECT_FALSE(CheckThreadBudgetEnv().ok());
  setenv("XSHARD_NUM_THREADS", "3", 1);
  EXPECT_TRUE(CheckThreadBudgetEnv().ok());
  unsetenv("XSHARD_NUM_THREADS");
  EXPECT_TRUE(CheckThreadBudgetEnv().ok());
  if (saved) setenv("XSHARD_NUM_THREADS", keep.c_str(), 1);
}

}  // namespace
}  // namespace xs::kernels
