// The runtime's two seams: a Client runs on the DeviceKind and CommunicatorFactory its options give
// (CPU threads and the in-process transport by default), and SpmdExecutable compiles each device's
// program through the kind once and runs it; a kind that cannot compile fails the run up front.
#include "xshard/runtime/device_kind.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>

#include "xshard/runtime/client.h"
#include "xshard/runtime/communicator_factory.h"
#include "xshard/runtime/spmd_executor.h"
#include "xshard/testing/value_or_fail.h"
#include "xshard/text/parser.h"

namespace xs {
namespace {

using ::testing::HasSubstr;

constexpr std::string_view kAllReduce = R"(
HloModule spmd, num_partitions=2
add { a = s32[] parameter(0)
      b = s32[] parameter(1)
      ROOT s = s32[] add(a, b) }
ENTRY main { p = s32[2] parameter(0)
             ROOT r = s32[2] all-reduce(p), channel_id=1, replica_groups={{0,1}}, to_apply=add,
                 use_global_device_ids=true })";

// Runs the CPU plan, counting compilations and runs; or refuses to compile, naming the device.
class CountingKind final : public DeviceKind {
 public:
  explicit CountingKind(bool refuse) : refuse_(refuse) {}
  std::string_view name() const override { return "fake"; }
  StatusOr<std::unique_ptr<DeviceProgram>> Compile(const Executable& plan,
                                                   int64_t device) const override {
    if (refuse_) return Unimplemented("device ", Describe(device), " has no executor");
    ++compiled;
    return std::unique_ptr<DeviceProgram>(new Program(plan, runs));
  }
  mutable std::atomic<int> compiled{0};
  mutable std::atomic<int> runs{0};

 private:
  class Program final : public DeviceProgram {
   public:
    Program(const Executable& plan, std::atomic<int>& runs) : plan_(plan), runs_(runs) {}
    StatusOr<std::vector<Array>> Run(std::span<const Array* const> args,
                                     const ExecuteOptions& options,
                                     ExecuteStats* stats) const override {
      ++runs_;
      return plan_.Run(args, options, stats);
    }

   private:
    const Executable& plan_;
    std::atomic<int>& runs_;
  };
  const bool refuse_;
};

// The in-process transport under another name, counting the communicators it makes.
class CountingTransport final : public CommunicatorFactory {
 public:
  std::string_view name() const override { return "counting"; }
  StatusOr<std::unique_ptr<Communicator>> Create(const CommunicatorSpec& spec) override {
    ++created;
    last_ids = spec.device_ids;
    return inner_->Create(spec);
  }
  Status AbortReason(const Communicator& comm) const override { return inner_->AbortReason(comm); }
  int created = 0;
  std::vector<int64_t> last_ids;

 private:
  std::shared_ptr<CommunicatorFactory> inner_ = InProcessCommunicators();
};

std::vector<std::vector<Array>> Args() {
  return {{Array::FromVector<int32_t>({2}, {1, 2})}, {Array::FromVector<int32_t>({2}, {10, 20})}};
}

TEST(DeviceKindTest, DefaultClientIsCpuWithTheInProcessTransport) {
  ClientOptions o;
  o.num_devices = 2;
  auto client = testing::ValueOrFail(Client::Create(o));
  EXPECT_EQ(client->device_kind().name(), "cpu");
  EXPECT_EQ(client->device(1).ToString(), "cpu:1");
  EXPECT_EQ(client->communicators().name(), "in-process");
  EXPECT_TRUE(client->communicators().honours_algorithm());
  EXPECT_FALSE(client->distributed());
}

TEST(DeviceKindTest, SpmdRunCompilesEachDeviceOnceThroughTheClientsKind) {
  auto kind = std::make_shared<CountingKind>(false);
  auto transport = std::make_shared<CountingTransport>();
  ClientOptions o;
  o.num_devices = 2;
  o.device_kind = kind;
  o.communicators = transport;
  auto client = testing::ValueOrFail(Client::Create(o));
  EXPECT_EQ(client->device(0).ToString(), "fake:0");
  auto module = testing::ValueOrFail(ParseHloModule(kAllReduce));
  auto exe = testing::ValueOrFail(SpmdExecutable::Create(*module));
  for (int call = 0; call < 3; ++call) {
    SpmdResult r = testing::ValueOrFail(exe->Run(*client, Args()));
    ASSERT_EQ(r.outputs.size(), 2u);
    EXPECT_EQ(r.outputs[1][0].values<int32_t>()[0], 11);
    EXPECT_EQ(r.outputs[1][0].values<int32_t>()[1], 22);
    EXPECT_EQ(r.memory[0].kind, "fake");
  }
  EXPECT_EQ(kind->compiled.load(), 2);  // once per device, kept for later runs
  EXPECT_EQ(kind->runs.load(), 6);
  EXPECT_EQ(transport->created, 1);  // one communicator per device list
  EXPECT_EQ(transport->last_ids, (std::vector<int64_t>{0, 1}));
  EXPECT_THAT(FormatSpmdMemory(testing::ValueOrFail(exe->Run(*client, Args())).memory),
              HasSubstr("fake:1"));
}

TEST(DeviceKindTest, AKindThatCannotCompileFailsTheRunBeforeAnyDeviceStarts) {
  auto transport = std::make_shared<CountingTransport>();
  ClientOptions o;
  o.num_devices = 2;
  o.device_kind = std::make_shared<CountingKind>(true);
  o.communicators = transport;
  auto client = testing::ValueOrFail(Client::Create(o));
  auto module = testing::ValueOrFail(ParseHloModule(kAllReduce));
  auto exe = testing::ValueOrFail(SpmdExecutable::Create(*module));
  StatusOr<SpmdResult> r = exe->Run(*client, Args());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(r.status().message(), "device fake:0 has no executor");
  EXPECT_EQ(transport->created, 0);  // nothing ran
}

TEST(DeviceKindTest, KindSuppliesTheDefaultMemoryLimit) {
  class Limited final : public DeviceKind {
   public:
    std::string_view name() const override { return "small"; }
    int64_t DefaultMemoryLimit(int64_t device) const override { return 1000 * (device + 1); }
    StatusOr<std::unique_ptr<DeviceProgram>> Compile(const Executable&, int64_t) const override {
      return Unimplemented("no");
    }
  };
  ClientOptions o;
  o.num_devices = 2;
  o.device_kind = std::make_shared<Limited>();
  auto client = testing::ValueOrFail(Client::Create(o));
  EXPECT_EQ(client->device(0).memory_limit(), 1000);
  EXPECT_EQ(client->device(1).memory_limit(), 2000);
  o.device_memory_limit = 64;  // an explicit limit wins
  client = testing::ValueOrFail(Client::Create(o));
  EXPECT_EQ(client->device(1).memory_limit(), 64);
}

}  // namespace
}  // namespace xs
