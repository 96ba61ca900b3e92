// No SPMD run hangs: a device that skips a collective (a conditional on partition-id) or fails
// (a while loop over its limit) makes every device of the run return an error, well within the
// collective timeout; a device stuck in a loop stops once its peers time out.
#include "xshard/ir/attributes.h"
#include "xshard/ir/module.h"
#include "xshard/ir/verifier.h"
#include "xshard/kernels/dot.h"
#include "xshard/exec/executable.h"
#include "xshard/exec/run_monitor.h"
#include "xshard/text/parser.h"
#include "xshard/text/printer.h"
#include "xshard/runtime/client.h"
#include "xshard/comm/collectives.h"
#include "xshard/comm/communicator.h"
#include "xshard/comm/replica_groups.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>

#include "xshard/runtime/spmd_executor.h"
#include "xshard/testing/value_or_fail.h"

namespace xs {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;

constexpr std::chrono::milliseconds kTimeout(20000);

struct Outcome {
  Status status;
  std::vector<Status> devices;
  double seconds = 0;
};

Outcome RunAndTime(std::string_view text, int64_t n, const SpmdRunOptions& options = {},
                   std::chrono::milliseconds timeout = kTimeout) {
  std::unique_ptr<Module> m = testing::ValueOrFail(ParseHloModule(text));
  std::unique_ptr<SpmdExecutable> exe = testing::ValueOrFail(SpmdExecutable::Create(*m));
  ClientOptions o;
  o.num_devices = n;
  o.collective_timeout = timeout;
  std::unique_ptr<Client> client = testing::ValueOrFail(Client::Create(o));
  std::vector<std::vector<Array>> args(n);
  for (auto& a : args) a.push_back(Array(DType::kF32, {2}));
  Outcome out;
  const auto start = std::chrono::steady_clock::now();
  out.status = exe->Run(*client, args, options, &out.devices).status();
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

// Partition 0 all-reduces in the true branch; the other partitions take the false branch.
constexpr std::string_view kSkip = R"(
HloModule skip, num_partitions=4
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
with_ar {
  p = f32[2] parameter(0)
  ROOT ar.7 = f32[2] all-reduce(p), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=sum
}
without {
  ROOT p = f32[2] parameter(0)
}
ENTRY main {
  x = f32[2] parameter(0)
  pid = u32[] partition-id()
  zero = u32[] constant(0)
  first = pred[] compare(pid, zero), direction=EQ
  ROOT r = f32[2] conditional(first, x, x), true_computation=with_ar, false_computation=without
})";

TEST(SpmdExecutorFailure, DeviceThatSkipsACollectiveFailsEveryDeviceQuickly) {
  Outcome out = RunAndTime(kSkip, 4);
  ASSERT_FALSE(out.status.ok());
  EXPECT_THAT(out.status.message(), HasSubstr("ar.7 (all-reduce, channel 1)"));
  ASSERT_EQ(out.devices.size(), 4u);
  for (int d = 0; d < 4; ++d) {
    EXPECT_FALSE(out.devices[d].ok()) << d;
    EXPECT_THAT(out.devices[d].message(), HasSubstr("ar.7 (all-reduce, channel 1)")) << d;
  }
  // The partitions that skipped it are named on the device left waiting.
  EXPECT_THAT(out.devices[0].message(), HasSubstr("missing: 1,2,3"));
  // A device that skipped it either finished first (and learns the run was aborted) or was still
  // running when device 0 failed (and is stopped by that failure): which one is a race.
  EXPECT_THAT(out.devices[2].message(), AnyOf(HasSubstr("device 2 finished, but the run was aborted"),
                                              HasSubstr("device 0 failed: instruction 'ar.7'")));
  EXPECT_LT(out.seconds, 5.0);  // departures are noticed at once, not at the 20 s timeout
}

// Partition 3 loops 100 times, the others once; then everyone all-reduces.
constexpr std::string_view kLongLoop = R"(
HloModule long_loop, num_partitions=4
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
cond {
  c = (s32[], s32[]) parameter(0)
  i = s32[] get-tuple-element(c), index=0
  n = s32[] get-tuple-element(c), index=1
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  c = (s32[], s32[]) parameter(0)
  i = s32[] get-tuple-element(c), index=0
  n = s32[] get-tuple-element(c), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  ROOT t = (s32[], s32[]) tuple(j, n)
}
ENTRY main {
  x = f32[2] parameter(0)
  pid = u32[] partition-id()
  three = u32[] constant(3)
  last = pred[] compare(pid, three), direction=EQ
  hundred = s32[] constant(100)
  one = s32[] constant(1)
  n = s32[] select(last, hundred, one)
  zero = s32[] constant(0)
  init = (s32[], s32[]) tuple(zero, n)
  loop = (s32[], s32[]) while(init), condition=cond, body=body
  ROOT ar = f32[2] all-reduce(x), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=sum
})";

TEST(SpmdExecutorFailure, DeviceWhoseProgramFailsAbortsItsWaitingPeers) {
  SpmdRunOptions options;
  options.max_while_iterations = 10;
  Outcome out = RunAndTime(kLongLoop, 4, options);
  ASSERT_FALSE(out.status.ok());
  EXPECT_THAT(out.status.message(), HasSubstr("device 3 failed"));
  EXPECT_THAT(out.devices[3].message(), HasSubstr("10"));
  for (int d = 0; d < 3; ++d) {
    EXPECT_FALSE(out.devices[d].ok()) << d;
    EXPECT_THAT(out.devices[d].message(), HasSubstr("device 3 failed")) << d;
  }
  EXPECT_LT(out.seconds, 5.0);

  // With a limit the loop stays under, the same module runs to the end.
  options.max_while_iterations = 1000;
  Outcome again = RunAndTime(kLongLoop, 4, options);
  EXPECT_TRUE(again.status.ok()) << again.status.ToString();
}

// Partition 0 loops forever and never reaches the all-reduce the others wait at.
constexpr std::string_view kStuck = R"(
HloModule stuck, num_partitions=4
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
cond {
  c = s32[] parameter(0)
  pid = u32[] partition-id()
  zero = u32[] constant(0)
  ROOT forever_on_0 = pred[] compare(pid, zero), direction=EQ
}
body {
  c = s32[] parameter(0)
  one = s32[] constant(1)
  ROOT j = s32[] add(c, one)
}
ENTRY main {
  x = f32[2] parameter(0)
  zero = s32[] constant(0)
  loop = s32[] while(zero), condition=cond, body=body
  ROOT ar.3 = f32[2] all-reduce(x), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=sum
})";

// Without a monitor of the caller's (the runtime makes its own) and with one: the peers time out
// after the collective timeout and the stuck device stops too, within a second of it; the run
// fails with the collective's error naming who arrived and who did not.
TEST(SpmdExecutorFailure, StuckDeviceStopsWhenItsPeersTimeOut) {
  for (bool own_monitor : {false, true}) {
    RunMonitor monitor(4);
    SpmdRunOptions options;
    if (own_monitor) options.monitor = &monitor;
    Outcome out = RunAndTime(kStuck, 4, options, std::chrono::milliseconds(1000));
    ASSERT_FALSE(out.status.ok());
    EXPECT_EQ(out.status.code(), StatusCode::kDeadlineExceeded) << out.status.ToString();
    EXPECT_THAT(out.status.message(), HasSubstr("ar.3 (all-reduce, channel 1)"));
    EXPECT_THAT(out.status.message(), HasSubstr("timed out after 1000 ms"));
    EXPECT_THAT(out.status.message(), HasSubstr("arrived: 1,2,3; missing: 0"));
    ASSERT_EQ(out.devices.size(), 4u);
    EXPECT_FALSE(out.devices[0].ok());  // stopped in its loop
    EXPECT_THAT(out.devices[0].message(), HasSubstr("missing: 0"));
    EXPECT_GE(out.seconds, 1.0);
    EXPECT_LT(out.seconds, 2.0);
    if (own_monitor) {
      EXPECT_TRUE(monitor.stopped());
    }
  }
}

}  // namespace
}  // namespace xs
