// Client, devices, memory accounting, device assignment and the per-device threads.
#include "xshard/runtime/client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <thread>

#include "xshard/kernels/compute_gate.h"

namespace xs {
namespace {

using ::testing::HasSubstr;

ClientOptions Opts(int64_t n, CollectiveAlgorithm a = CollectiveAlgorithm::kDirect) {
  ClientOptions o;
  o.num_devices = n;
  o.algorithm = a;
  return o;
}

TEST(FormatBytesTest, PrintsLikeXla) {
  EXPECT_EQ(FormatBytes(512), "512B");
  EXPECT_EQ(FormatBytes(1536), "1.50KiB");
  EXPECT_EQ(FormatBytes(256LL << 20), "256.00MiB");
  EXPECT_EQ(FormatBytes(3LL << 30), "3.00GiB");
}

TEST(DeviceTest, TracksLiveAndPeakBytesAndBufferCounts) {
  Device d(3, 0);
  {
    auto a = d.Allocate(Shape(DType::kF32, {256}));  // 1 KiB
    ASSERT_TRUE(a.ok());
    auto b = d.Allocate(Shape(DType::kF64, {512}));  // 4 KiB
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(d.memory_stats().live_bytes, 5120);
    EXPECT_EQ(d.memory_stats().live_buffers, 2);
    Buffer moved = *std::move(a);  // moving does not count twice
    EXPECT_EQ(d.memory_stats().live_bytes, 5120);
  }
  const MemoryStats s = d.memory_stats();
  EXPECT_EQ(s.live_bytes, 0);
  EXPECT_EQ(s.peak_bytes, 5120);
  EXPECT_EQ(s.live_buffers, 0);
  EXPECT_EQ(s.allocations, 2);
  d.ResetPeak();
  EXPECT_EQ(d.memory_stats().peak_bytes, 0);
}

TEST(DeviceTest, TakeArrayReturnsTheBytesToTheDevice) {
  Device d(0, 0);
  auto b = d.Adopt(Array::FromVector<float>({2}, {1, 2}));
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(d.memory_stats().live_bytes, 8);
  Array a = b->TakeArray();
  EXPECT_TRUE(b->empty());
  EXPECT_EQ(d.memory_stats().live_bytes, 0);
  EXPECT_EQ(a, Array::FromVector<float>({2}, {1, 2}));
}

TEST(DeviceTest, LimitRefusesAllocationsPastIt) {
  Device d(1, 1024);
  auto a = d.Allocate(Shape(DType::kF32, {200}));  // 800 B
  ASSERT_TRUE(a.ok());
  auto b = d.Allocate(Shape(DType::kF32, {100}));  // 400 B more
  EXPECT_EQ(b.status(),
            ResourceExhausted("device cpu:1 is out of memory: a buffer of 400B on top of 800B "
                              "live exceeds the device limit of 1.00KiB; free buffers earlier, "
                              "shard the data further, or raise the limit"));
  EXPECT_EQ(d.memory_stats().live_bytes, 800);
}

TEST(ClientTest, MemoryReportListsEveryDeviceAndTheTotal) {
  auto client = Client::Create(Opts(2));
  ASSERT_TRUE(client.ok());
  auto b = (*client)->device(1).Allocate(Shape(DType::kF32, {1024}));
  ASSERT_TRUE(b.ok());
  EXPECT_EQ((*client)->MemoryReport(),
            "device   live         peak         buffers\n"
            "cpu:0    0B           0B           0\n"
            "cpu:1    4.00KiB      4.00KiB      1\n"
            "total    4.00KiB      4.00KiB      1\n");
}

TEST(ClientTest, DeviceCountComesFromTheEnvironmentByDefault) {
  const char* old = std::getenv("XSHARD_DEVICES");
  const std::string saved = old ? old : "";
  unsetenv("XSHARD_DEVICES");
  EXPECT_EQ(*DefaultDeviceCount(), 8);
  setenv("XSHARD_DEVICES", "3", 1);
  EXPECT_EQ(*DefaultDeviceCount(), 3);
  auto client = Client::Create();
  ASSERT_TRUE(client.ok());
  EXPECT_EQ((*client)->num_devices(), 3);
  setenv("XSHARD_DEVICES", "three", 1);
  EXPECT_EQ(DefaultDeviceCount().status(),
            InvalidArgument("XSHARD_DEVICES='three' is not a device count; set it to an integer "
                            "from 1 to 8192 (or unset it for 8 devices)"));
  if (old) {
    setenv("XSHARD_DEVICES", saved.c_str(), 1);
  } else {
    unsetenv("XSHARD_DEVICES");
  }
}

TEST(ClientTest, RejectsBadOptions) {
  EXPECT_THAT(Client::Create(Opts(-2)).status().message(),
              HasSubstr("a client needs 1 to 8192 devices, got -2"));
  ClientOptions o;
  o.num_devices = 2;
  o.collective_timeout = std::chrono::milliseconds(0);
  EXPECT_THAT(Client::Create(o).status().message(), HasSubstr("timeout must be positive"));
  auto client = Client::Create(Opts(2));
  EXPECT_THAT((*client)->LookupDevice(2).status().message(),
              HasSubstr("device 2 does not exist: the client has 2 devices (ids 0..1)"));
}

TEST(ClientTest, IntraOpThreadsSplitTheCores) {
  ClientOptions o;
  o.num_devices = 8;
  o.num_cores = 2;
  auto client = Client::Create(o);
  ASSERT_TRUE(client.ok());
  EXPECT_EQ((*client)->IntraOpThreads(8), 1);
  EXPECT_EQ((*client)->IntraOpThreads(2), 1);
  EXPECT_EQ((*client)->IntraOpThreads(1), 2);
  o.num_cores = 16;
  auto big = Client::Create(o);
  EXPECT_EQ((*big)->IntraOpThreads(8), 2);
  EXPECT_EQ((*big)->IntraOpThreads(3), 5);
  // Big kernels of runs with more devices go through a gate of two slots per core.
  EXPECT_EQ((*client)->compute_gate().slots(), 4);
  EXPECT_EQ((*big)->compute_gate().slots(), 32);
}

TEST(ClientTest, EachDeviceKeepsItsOwnThreadAcrossRuns) {
  auto client = Client::Create(Opts(4));
  ASSERT_TRUE(client.ok());
  std::vector<std::thread::id> first(4), second(4);
  ASSERT_TRUE((*client)->RunOnAllDevices([&](int64_t r, Communicator&) {
    first[r] = std::this_thread::get_id();
    return OkStatus();
  }).ok());
  ASSERT_TRUE((*client)->RunOnAllDevices([&](int64_t r, Communicator&) {
    second[r] = std::this_thread::get_id();
    return OkStatus();
  }).ok());
  EXPECT_EQ(first, second);
  EXPECT_EQ(std::set<std::thread::id>(first.begin(), first.end()).size(), 4u);
  EXPECT_EQ(std::count(first.begin(), first.end(), std::this_thread::get_id()), 0);
}

TEST(ClientTest, RunOnASubsetMapsRanksToTheListedDevices) {
  auto client = Client::Create(Opts(8));
  ASSERT_TRUE(client.ok());
  std::vector<int64_t> seen(3, -1);
  const std::vector<int64_t> devices = {6, 2, 4};
  ASSERT_TRUE((*client)->Run(devices, [&](int64_t r, Communicator& comm) {
    seen[r] = comm.num_ranks();
    return comm.Barrier(CollectiveCall(r));
  }).ok());
  EXPECT_EQ(seen, (std::vector<int64_t>{3, 3, 3}));
}

TEST(DeviceAssignmentTest, DefaultPlacesPartitionMajorLikeXla) {
  auto a = DeviceAssignment::Default(2, 4, 8);
  ASSERT_TRUE(a.ok());
  // XLA: device(replica, partition) = partition * replicas + replica.
  EXPECT_EQ(a->DeviceOf(1, 0), 1);
  EXPECT_EQ(a->DeviceOf(0, 3), 6);
  EXPECT_EQ(a->LogicalDevices(), (std::vector<int64_t>{0, 2, 4, 6, 1, 3, 5, 7}));
  EXPECT_EQ(a->ToString(),
            "DeviceAssignment{replica_count=2, computation_count=4, Computation0{0 1} "
            "Computation1{2 3} Computation2{4 5} Computation3{6 7}}");
}

TEST(DeviceAssignmentTest, RejectsTooFewDevicesAndRepeats) {
  EXPECT_EQ(DeviceAssignment::Default(1, 16, 8).status(),
            InvalidArgument("the program needs 16 devices (1 replicas x 16 partitions) but the "
                            "client has 8; run with --devices 16 or set XSHARD_DEVICES=16"));
  EXPECT_THAT(DeviceAssignment::Create(1, 2, {3, 3}, 8).status().message(),
              HasSubstr("uses device 3 twice"));
  EXPECT_THAT(DeviceAssignment::Create(1, 2, {0, 9}, 8).status().message(),
              HasSubstr("names device 9, but the client has 8 devices"));
}

}  // namespace
}  // namespace xs
