// The GPU executor on 8 virtual devices of one GPU, collectives through VirtualGpuCommunicator
// (a synchronous all-reduce and an all-gather-start / -done pair), against values worked by
// hand from the per-device inputs. Without a GPU only the plan is checked, then it skips.
#include <gtest/gtest.h>

#include "xshard/cuda/platform.h"

#ifdef XSHARD_WITH_CUDA

#include <thread>
#include <unordered_map>

#include "xshard/comm/replica_groups.h"
#include "xshard/cuda/gpu_executable.h"
#include "xshard/cuda/stream.h"
#include "xshard/cuda/virtual_gpu_communicator.h"
#include "xshard/text/parser.h"

namespace xs::cuda {
namespace {

// The runtime's resolution, reduced to what the test module uses: one group of every device
// (flattened ids), sum reductions, all-gather along `dimensions`.
class TestRunner final : public GpuCollectiveRunner {
 public:
  TestRunner(Communicator& comm, int64_t rank) : comm_(comm), rank_(rank) {}
  Status Run(const Instruction& inst, std::span<const ConstBufferView> in, std::span<const BufferView> out,
             const void* key) override {
    const DeviceGroups groups = DeviceGroups::All(comm_.num_ranks());
    CollectiveCall call(rank_, inst.name(), inst.attrs().channel_id.value_or(0));
    uint64_t handle = 0;
    if (key != nullptr) call.async_handle = &handle;
    const Opcode op = inst.opcode();
    for (size_t i = 0; i < in.size(); ++i) {
      if (op == Opcode::kAllReduce || op == Opcode::kAllReduceStart) {
        XS_RETURN_IF_ERROR(comm_.AllReduce(call, groups, in[i], out[i], ReductionKind::kSum));
      } else if (op == Opcode::kAllGather || op == Opcode::kAllGatherStart) {
        XS_RETURN_IF_ERROR(comm_.AllGather(call, groups, in[i], out[i], static_cast<int>((*inst.attrs().dimensions)[0])));
      } else {
        return Unimplemented("test runner: ", OpcodeName(op));
      }
    }
    if (key != nullptr) handles_[key] = handle;
    return OkStatus();
  }
  Status Finish(const void* key) override {
    auto it = handles_.find(key);
    if (it == handles_.end()) return Internal("finish of a collective never started");
    const uint64_t h = it->second;
    handles_.erase(it);
    return comm_.Finish(rank_, h);
  }
  bool CapturableInGraph() const override { return false; }

 private:
  Communicator& comm_;
  int64_t rank_;
  std::unordered_map<const void*, uint64_t> handles_;
};

// The combiner's tuple all-reduce (passes/all_reduce_combine.h) plans as one collective action
// over its leaves, read back through get-tuple-element.
TEST(GpuExecutableCollectives, CombinedTupleAllReducePlansAsOneCollective) {
  StatusOr<std::unique_ptr<Module>> m = ParseHloModule(R"(HloModule m, num_partitions=8
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[4,64] parameter(0)
  y = f32[7] parameter(1)
  ar = (f32[4,64], f32[7]) all-reduce(x, y), channel_id=1, replica_groups={{0,1,2,3,4,5,6,7}}, use_global_device_ids=true, to_apply=sum
  a = f32[4,64] get-tuple-element(ar), index=0
  b = f32[7] get-tuple-element(ar), index=1
  ROOT t = (f32[4,64], f32[7]) tuple(a, b)
})",
                                                       "test");
  ASSERT_TRUE(m.ok()) << m.status().message();
  StatusOr<std::unique_ptr<Executable>> exec = Executable::Create(**m);
  ASSERT_TRUE(exec.ok()) << exec.status().message();
  StatusOr<std::unique_ptr<GpuPlan>> plan = GpuPlan::Create(**exec);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_TRUE((*plan)->Supported().ok()) << (*plan)->Supported().message();
  EXPECT_EQ((*plan)->report().actions.at("collective"), 1);
}

TEST(GpuExecutableCollectives, EightVirtualDevicesAllReduceAndAllGather) {
  constexpr int kRanks = 8;
  StatusOr<std::unique_ptr<Module>> m = ParseHloModule(R"(HloModule m, num_partitions=8
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[4,64] parameter(0)
  ar = f32[4,64] all-reduce(x), channel_id=1, replica_groups={{0,1,2,3,4,5,6,7}}, use_global_device_ids=true, to_apply=sum
  two = f32[] constant(2)
  b = f32[4,64] broadcast(two), dimensions={}
  y = f32[4,64] multiply(ar, b)
  ags = (f32[4,64], f32[32,64]) all-gather-start(y), channel_id=2, replica_groups={{0,1,2,3,4,5,6,7}}, dimensions={0}, use_global_device_ids=true
  ROOT ag = f32[32,64] all-gather-done(ags)
})", "test");
  ASSERT_TRUE(m.ok()) << m.status().message();
  StatusOr<std::unique_ptr<Executable>> exec = Executable::Create(**m);
  ASSERT_TRUE(exec.ok()) << exec.status().message();
  {
    // Planned everywhere: the collectives and the async pair need nothing the GPU lacks.
    StatusOr<std::unique_ptr<GpuPlan>> plan = GpuPlan::Create(**exec);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    EXPECT_TRUE((*plan)->Supported().ok()) << (*plan)->Supported().message();
    EXPECT_EQ((*plan)->report().actions.at("collective"), 2);
    EXPECT_EQ((*plan)->report().actions.at("done"), 1);
  }
  if (!DeviceCount().ok()) GTEST_SKIP() << NoGpuReason();
  StatusOr<DeviceInfo> info = GetDeviceInfo(0);
  ASSERT_TRUE(info.ok());

  // Each device's compute stream first: the communicator enqueues on them.
  std::vector<Stream> owned;
  std::vector<cudaStream_t> streams;
  for (int r = 0; r < kRanks; ++r) {
    StatusOr<Stream> s = Stream::Create(0);
    ASSERT_TRUE(s.ok()) << s.status().message();
    streams.push_back(s->get());
    owned.push_back(std::move(s).value());
  }
  VirtualGpuOptions vo;
  vo.streams = streams;
  StatusOr<std::unique_ptr<VirtualGpuCommunicator>> comm = VirtualGpuCommunicator::Create(vo);
  ASSERT_TRUE(comm.ok()) << comm.status().message();
  std::vector<std::unique_ptr<TestRunner>> runners;
  std::vector<std::unique_ptr<GpuExecutable>> gpus;
  for (int r = 0; r < kRanks; ++r) {
    runners.push_back(std::make_unique<TestRunner>(**comm, r));
    StatusOr<std::unique_ptr<GpuPlan>> plan = GpuPlan::Create(**exec, {info->major, info->minor});
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    GpuLoadOptions o;
    o.partition_id = r;
    o.stream = streams[r];
    o.collectives = runners.back().get();
    StatusOr<std::unique_ptr<GpuExecutable>> g = GpuExecutable::Load(std::move(plan).value(), o);
    ASSERT_TRUE(g.ok()) << g.status().message();
    // Not capturable: the runner meets its peers on the host.
    EXPECT_NE((*g)->graph_blocker(), "");
    gpus.push_back(std::move(g).value());
  }
  // Device r holds x[i][j] = r + j / 64: the all-reduce gives 28 + 8 j / 64, doubled, gathered 8 times.
  std::vector<Array> args;
  for (int r = 0; r < kRanks; ++r) {
    Array a(Shape(DType::kF32, {4, 64}));
    for (int64_t k = 0; k < a.num_elements(); ++k) a.SetDouble(k, r + static_cast<double>(k % 64) / 64);
    args.push_back(std::move(a));
  }
  std::vector<Status> status(kRanks);
  std::vector<std::vector<Array>> results(kRanks);
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      const Array* p[] = {&args[r]};
      StatusOr<std::vector<DeviceArray>> out = gpus[r]->Run(p);
      if (!out.ok()) {
        status[r] = out.status();
        (*comm)->Abort(out.status());
        return;
      }
      StatusOr<std::vector<Array>> host = gpus[r]->CopyToHost(*out);
      if (host.ok()) results[r] = std::move(host).value();
      status[r] = host.status();
    });
  }
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_TRUE(status[r].ok()) << "device " << r << ": " << status[r].message();
    ASSERT_EQ(results[r].size(), 1u);
    const Array& got = results[r][0];
    ASSERT_EQ(got.dims(), (std::vector<int64_t>{32, 64}));
    for (int64_t k = 0; k < got.num_elements(); ++k) {
      const double want = 2 * (28 + 8 * static_cast<double>(k % 64) / 64);
      ASSERT_NEAR(got.GetDouble(k), want, 1e-4) << "device " << r << " element " << k;
    }
  }
}

}  // namespace
}  // namespace xs::cuda

#else  // !XSHARD_WITH_CUDA

TEST(GpuExecutableCollectives, NeedsTheCudaToolkit) { GTEST_SKIP() << xs::cuda::NoGpuReason(); }

#endif
