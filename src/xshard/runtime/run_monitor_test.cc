// RunMonitor stops runs that would never end: a one-device endless while loop, and an SPMD run
// where one device loops forever while its peer waits at an all-reduce (whose wait restarts its
// timeout while a peer is busy, so only the stop can end it). Where() names the instruction, the
// loop and its iteration, or the collective.
#include "xshard/exec/run_monitor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "xshard/runtime/client.h"
#include "xshard/exec/executable.h"
#include "xshard/runtime/spmd_executor.h"
#include "xshard/text/parser.h"

namespace xs {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

constexpr std::string_view kLoopForever = R"(
HloModule forever
cond {
  s = (s32[], f32[4]) parameter(0)
  ROOT t = pred[] constant(true)
}
body {
  s = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  x = f32[4] get-tuple-element(s), index=1
  ROOT t = (s32[], f32[4]) tuple(i1, x)
}
ENTRY e {
  x = f32[4] parameter(0)
  z = s32[] constant(0)
  t = (s32[], f32[4]) tuple(z, x)
  w = (s32[], f32[4]) while(t), condition=cond, body=body
  ROOT r = f32[4] get-tuple-element(w), index=1
})";

// Partition 0 loops forever; partition 1 goes straight to the all-reduce.
constexpr std::string_view kOneDeviceLoops = R"(
HloModule one_loops, num_partitions=2
cond {
  s = (s32[], f32[4]) parameter(0)
  pid = u32[] partition-id()
  zero = u32[] constant(0)
  ROOT on_0 = pred[] compare(pid, zero), direction=EQ
}
body {
  s = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  x = f32[4] get-tuple-element(s), index=1
  ROOT t = (s32[], f32[4]) tuple(i1, x)
}
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[4] parameter(0)
  z = s32[] constant(0)
  t = (s32[], f32[4]) tuple(z, x)
  w = (s32[], f32[4]) while(t), condition=cond, body=body
  y = f32[4] get-tuple-element(w), index=1
  ROOT ar = f32[4] all-reduce(y), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=sum
})";

// Stops `monitor` after `after` from another thread.
std::thread StopLater(RunMonitor& monitor, std::chrono::milliseconds after, std::string* where) {
  return std::thread([&monitor, after, where] {
    std::this_thread::sleep_for(after);
    *where = monitor.Where();
    monitor.Stop(Cancelled("interrupted for the test"));
  });
}

TEST(RunMonitor, StopsAnEndlessLoopOnOneDeviceAndSaysWhere) {
  StatusOr<std::unique_ptr<Module>> m = ParseHloModule(kLoopForever);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  StatusOr<std::unique_ptr<Executable>> exe = Executable::Create(**m);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  RunMonitor monitor(1);
  ExecuteOptions options;
  options.monitor = &monitor;
  std::string where;
  std::thread stopper = StopLater(monitor, std::chrono::milliseconds(200), &where);
  const auto start = std::chrono::steady_clock::now();
  const std::vector<Array> args = {Array(DType::kF32, {4})};
  StatusOr<std::vector<Array>> out = (*exe)->Run(args, options);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stopper.join();
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kCancelled);
  EXPECT_THAT(out.status().message(), HasSubstr("interrupted for the test"));
  EXPECT_LT(seconds, 1.2);
  // After 200 ms the loop has run many iterations: "at 'i1' (add) in while loop 'w' iteration 51234".
  EXPECT_THAT(where, MatchesRegex("at '[a-z0-9]+' \\([a-z-]+\\) in while loop 'w' iteration [1-9][0-9]*"));
}

TEST(RunMonitor, StopReachesAPeerWaitingAtACollectiveForABusyDevice) {
  StatusOr<std::unique_ptr<Module>> m = ParseHloModule(kOneDeviceLoops);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  StatusOr<std::unique_ptr<SpmdExecutable>> exe = SpmdExecutable::Create(**m);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  ClientOptions co;
  co.num_devices = 2;
  StatusOr<std::unique_ptr<Client>> client = Client::Create(co);
  ASSERT_TRUE(client.ok());
  RunMonitor monitor(2);
  SpmdRunOptions options;
  options.monitor = &monitor;
  std::vector<std::vector<Array>> args(2);
  for (auto& a : args) a.push_back(Array(DType::kF32, {4}));
  std::string where;
  std::thread stopper = StopLater(monitor, std::chrono::milliseconds(300), &where);
  const auto start = std::chrono::steady_clock::now();
  StatusOr<SpmdResult> out = (*exe)->Run(**client, args, options);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stopper.join();
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("interrupted for the test"));
  EXPECT_LT(seconds, 1.3);  // 300 ms, then the stop reaches both devices (well under a second)
  EXPECT_THAT(where, HasSubstr("device 0 at '"));
  EXPECT_THAT(where, HasSubstr("in while loop 'w' iteration"));
  EXPECT_THAT(where, HasSubstr("device 1 waits at all-reduce 'ar'"));
}

TEST(RunMonitor, GroupsDevicesDoingTheSameThing) {
  RunMonitor monitor(4);
  EXPECT_EQ(monitor.Where(), "devices 0-3 not started");
  monitor.progress(3).finished.store(true);
  EXPECT_EQ(monitor.Where({4, 5, 6, 7}), "devices 4-6 not started; device 7 finished");
}

}  // namespace
}  // namespace xs
