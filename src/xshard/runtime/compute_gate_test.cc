// ComputeGate: never more than `slots` holders at once; an SPMD run on more devices than cores
// gates its big kernels but never a loop whose body communicates (which would deadlock).
#include "xshard/kernels/compute_gate.h"

#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "xshard/runtime/client.h"
#include "xshard/comm/collectives.h"
#include "xshard/runtime/spmd_executor.h"
#include "xshard/text/parser.h"

namespace xs {
namespace {

TEST(ComputeGate, AtMostSlotsThreadsAreInsideAtOnce) {
  ComputeGate gate(2);
  std::atomic<int> inside{0}, most{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int k = 0; k < 200; ++k) {
        gate.Enter();
        const int now = ++inside;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        std::this_thread::yield();
        --inside;
        gate.Leave();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_GE(most.load(), 1);
  EXPECT_LE(most.load(), 2);
}

// 8 devices on a 1-core client: one gate slot. Each loop iteration doubles a 1 MiB s32 array
// (gated) and all-reduces it (never gated). The loop itself must not be gated: a device holding
// the only slot while it waits in the all-reduce would block its peers' doubling forever.
// Device d starts from d everywhere: after iteration 1 every element is sum_d 2d = 56, after
// iteration 2 it is 8 x 2 x 56 = 896.
TEST(ComputeGate, LoopsWhoseBodyCommunicatesAreNotGated) {
  constexpr std::string_view kText = R"(
HloModule m, num_partitions=8, is_scheduled=true

sum {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] add(a, b)
}

cond {
  p = (s32[], s32[262144]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  two = s32[] constant(2)
  ROOT lt = pred[] compare(i, two), direction=LT
}

body {
  p = (s32[], s32[262144]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = s32[262144] get-tuple-element(p), index=1
  one = s32[] constant(1)
  next = s32[] add(i, one)
  doubled = s32[262144] add(x, x)
  summed = s32[262144] all-reduce(doubled), channel_id=1, replica_groups={{0,1,2,3,4,5,6,7}}, use_global_device_ids=true, to_apply=sum
  ROOT t = (s32[], s32[262144]) tuple(next, summed)
}

ENTRY main {
  x = s32[262144] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], s32[262144]) tuple(zero, x)
  loop = (s32[], s32[262144]) while(init), condition=cond, body=body
  ROOT out = s32[262144] get-tuple-element(loop), index=1
}
)";
  StatusOr<std::unique_ptr<Module>> m = ParseHloModule(kText);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  StatusOr<std::unique_ptr<SpmdExecutable>> exe = SpmdExecutable::Create(**m);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  ClientOptions o;
  o.num_devices = 8;
  o.num_cores = 1;
  o.collective_timeout = std::chrono::milliseconds(10000);
  StatusOr<std::unique_ptr<Client>> client = Client::Create(o);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  std::vector<std::vector<Array>> args(8);
  for (int d = 0; d < 8; ++d) args[d].push_back(Array::Full(DType::kS32, {262144}, d));
  StatusOr<SpmdResult> r = (*exe)->Run(**client, args);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (int d = 0; d < 8; ++d) {
    EXPECT_EQ(r->outputs[d][0].GetDouble(0), 896);
    EXPECT_EQ(r->outputs[d][0].GetDouble(262143), 896);
  }
}

Status SumOnce(Communicator& comm, int64_t rank) {
  Array x(DType::kF32, {8});
  return AllReduce(comm, CollectiveCall(rank, "all-reduce", 1), DeviceGroups::All(comm.num_ranks()), x,
                   ReductionKind::kSum)
      .status();
}

// Device 1 computes inside the client's gate for 4 timeouts before it joins the all-reduce; device
// 0, waiting there, keeps waiting because a device is busy in the gate, and both succeed. The same
// delay outside the gate (a device that is not computing) times out, as before. The gate is
// entered before the run starts (its slots are not tied to a thread), so that a loaded machine
// starting device 1's thread late cannot let device 0's wait time out before device 1 is in it.
TEST(ComputeGate, CollectivesWaitForDevicesComputingInTheGate) {
  const std::chrono::milliseconds timeout(150);
  for (bool in_gate : {true, false}) {
    ClientOptions o;
    o.num_devices = 2;
    o.num_cores = 1;
    o.collective_timeout = timeout;
    StatusOr<std::unique_ptr<Client>> client = Client::Create(o);
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    ComputeGate& gate = (*client)->compute_gate();
    if (in_gate) gate.Enter();  // device 1's, left by its thread
    StatusOr<Client::RunResult> r =
        (*client)->RunPerRank(std::vector<int64_t>{0, 1}, [&](int64_t rank, Communicator& comm) {
          if (rank == 1) {
            std::this_thread::sleep_for(4 * timeout);
            if (in_gate) gate.Leave();
          }
          return SumOnce(comm, rank);
        });
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    if (in_gate) {
      EXPECT_TRUE(r->status.ok()) << r->status.ToString();
    } else {
      EXPECT_EQ(r->status.code(), StatusCode::kDeadlineExceeded) << r->status.ToString();
    }
  }
}

}  // namespace
}  // namespace xs
