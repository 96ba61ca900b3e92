// SPMD programs on --platform cuda through a Client, against the CPU platform and against values
// worked out by hand: an all-reduce of a sharded dot on 1, 2 and 8 devices (virtual devices of one
// GPU on a one-GPU machine; one device per GPU where there are GPUs enough), and seed 000's
// partitioned matmul as XLA partitioned it for 8 devices. Without a GPU each test skips with one
// line (cuda::NoGpuReason()).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "xshard/cuda/platform.h"
#include "xshard/platform/cuda_devices.h"
#include "xshard/platform/platform.h"
#include "xshard/runtime/spmd_executor.h"
#include "xshard/text/parser.h"
#include "xshard/testing/value_or_fail.h"

namespace xs {
namespace {

constexpr int64_t kRows = 8, kInner = 64, kCols = 16;

// x: f32[8,64] with x[i][k] = (i + 2k) % 7 - 3; y: f32[64,16] with y[k][j] = (3k + j) % 5 - 2.
// Small integers: every product and sum is exact in f32 (and in TF32 inputs).
double X(int64_t i, int64_t k) { return static_cast<double>((i + 2 * k) % 7 - 3); }
double Y(int64_t k, int64_t j) { return static_cast<double>((3 * k + j) % 5 - 2); }

// Device d of n holds columns [d*K, (d+1)*K) of x and rows [d*K, (d+1)*K) of y, K = 64 / n; the
// partial dots are summed by an all-reduce over every device.
std::string ShardedDotModule(int64_t n) {
  const int64_t k = kInner / n;
  std::string group;
  for (int64_t d = 0; d < n; ++d) group += StrCat(d ? "," : "", d);
  return StrCat("HloModule sharded_dot, num_partitions=", n, R"(
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[8,)", k, R"(] parameter(0)
  y = f32[)", k, R"(,16] parameter(1)
  d = f32[8,16] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT ar = f32[8,16] all-reduce(d), channel_id=1, replica_groups={{)", group,
                R"(}}, use_global_device_ids=true, to_apply=sum
})");
}

std::vector<std::vector<Array>> ShardedDotArgs(int64_t n) {
  const int64_t k = kInner / n;
  std::vector<std::vector<Array>> args(n);
  for (int64_t d = 0; d < n; ++d) {
    Array x(Shape(DType::kF32, {kRows, k})), y(Shape(DType::kF32, {k, kCols}));
    for (int64_t i = 0; i < kRows; ++i) {
      for (int64_t c = 0; c < k; ++c) x.SetDouble(i * k + c, X(i, d * k + c));
    }
    for (int64_t r = 0; r < k; ++r) {
      for (int64_t j = 0; j < kCols; ++j) y.SetDouble(r * kCols + j, Y(d * k + r, j));
    }
    args[d] = {std::move(x), std::move(y)};
  }
  return args;
}

StatusOr<SpmdResult> RunOn(std::string_view platform, const Module& module,
                           const std::vector<std::vector<Array>>& args) {
  ClientOptions o;
  o.num_devices = module.config().num_partitions;
  o.collective_timeout = std::chrono::milliseconds(20000);
  XS_ASSIGN_OR_RETURN(std::unique_ptr<Client> client, CreateClient(platform, o));
  XS_ASSIGN_OR_RETURN(std::unique_ptr<SpmdExecutable> exe, SpmdExecutable::Create(module));
  // Twice: the second run reuses the compiled programs (and replays what it may).
  XS_RETURN_IF_ERROR(exe->Run(*client, args).status());
  return exe->Run(*client, args);
}

// Device outputs of the sharded dot against x @ y computed here, and (when given) against the
// CPU platform's outputs.
void ExpectShardedDot(const SpmdResult& r, int64_t n, const SpmdResult* cpu) {
  ASSERT_EQ(r.outputs.size(), static_cast<size_t>(n));
  for (int64_t d = 0; d < n; ++d) {
    ASSERT_EQ(r.outputs[d].size(), 1u);
    const Array& got = r.outputs[d][0];
    ASSERT_EQ(got.shape().ToString(false), "f32[8,16]");
    for (int64_t i = 0; i < kRows; ++i) {
      for (int64_t j = 0; j < kCols; ++j) {
        double want = 0;
        for (int64_t k = 0; k < kInner; ++k) want += X(i, k) * Y(k, j);
        ASSERT_EQ(got.GetDouble(i * kCols + j), want)
            << "device " << d << " [" << i << "," << j << "]";
        if (cpu != nullptr) {
          ASSERT_EQ(got.GetDouble(i * kCols + j), cpu->outputs[d][0].GetDouble(i * kCols + j));
        }
      }
    }
  }
}

class ShardedDotTest : public ::testing::TestWithParam<int64_t> {};

// The CPU half of the comparison (runs everywhere): module, shards and hand values agree.
TEST_P(ShardedDotTest, CpuMatchesHandValues) {
  const int64_t n = GetParam();
  auto module = testing::ValueOrFail(ParseHloModule(ShardedDotModule(n), "sharded_dot"));
  ExpectShardedDot(testing::ValueOrFail(RunOn("cpu", *module, ShardedDotArgs(n))), n, nullptr);
}

TEST_P(ShardedDotTest, CudaMatchesCpuAndHandValues) {
  if (!cuda::DeviceCount().ok()) GTEST_SKIP() << cuda::NoGpuReason();
  const int64_t n = GetParam();
  auto module = testing::ValueOrFail(ParseHloModule(ShardedDotModule(n), "sharded_dot"));
  const std::vector<std::vector<Array>> args = ShardedDotArgs(n);
  SpmdResult gpu = testing::ValueOrFail(RunOn("cuda", *module, args));
  SpmdResult cpu = testing::ValueOrFail(RunOn("cpu", *module, args));
  for (const SpmdDeviceMemory& m : gpu.memory) EXPECT_EQ(m.kind, "cuda");
  ExpectShardedDot(gpu, n, &cpu);
}

INSTANTIATE_TEST_SUITE_P(Devices, ShardedDotTest, ::testing::Values(1, 2, 8));

// Seed 000 case 1 as XLA partitioned it for 8 devices, with every device's shards.
std::unique_ptr<Module> Seed000Inner(std::vector<std::vector<Array>>& args) {
  const std::string path =
      std::string(XSHARD_SOURCE_DIR) + "/tests/data/spmd_partition/seed000_inner.xla.txt";
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  std::stringstream text;
  text << in.rdbuf();
  // x = repeat(arange(1, 5)[:, None], 16, axis=1), y = x.T: every device's f16[4,4] shard of x
  // has x[i][j] = i + 1 and of y has y[j][k] = k + 1.
  Array x(Shape(DType::kF16, {4, 4})), y(Shape(DType::kF16, {4, 4}));
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 4; ++j) {
      x.SetDouble(i * 4 + j, static_cast<double>(i + 1));
      y.SetDouble(i * 4 + j, static_cast<double>(j + 1));
    }
  }
  args.assign(8, std::vector<Array>{x, y});
  return testing::ValueOrFail(ParseHloModule(text.str(), path));
}

// z[i][k] = 16 (i + 1)(k + 1) on every device (tests/data/spmd_partition/seed000_values.txt).
void ExpectSeed000(const SpmdResult& r, const SpmdResult* cpu) {
  ASSERT_EQ(r.outputs.size(), 8u);
  for (int64_t d = 0; d < 8; ++d) {
    const Array& got = r.outputs[d][0];
    ASSERT_EQ(got.shape().ToString(false), "f16[4,4]");
    for (int64_t i = 0; i < 16; ++i) {
      EXPECT_EQ(got.GetDouble(i), 16.0 * (i / 4 + 1) * (i % 4 + 1)) << "device " << d;
      if (cpu != nullptr) {
        EXPECT_EQ(got.GetDouble(i), cpu->outputs[d][0].GetDouble(i));
      }
    }
  }
}

TEST(Seed000PartitionedTest, CpuMatchesSeedValues) {
  std::vector<std::vector<Array>> args;
  std::unique_ptr<Module> module = Seed000Inner(args);
  ExpectSeed000(testing::ValueOrFail(RunOn("cpu", *module, args)), nullptr);
}

TEST(Seed000PartitionedTest, CudaMatchesCpuOnEightDevices) {
  if (!cuda::DeviceCount().ok()) GTEST_SKIP() << cuda::NoGpuReason();
  std::vector<std::vector<Array>> args;
  std::unique_ptr<Module> module = Seed000Inner(args);
  SpmdResult gpu = testing::ValueOrFail(RunOn("cuda", *module, args));
  SpmdResult cpu = testing::ValueOrFail(RunOn("cpu", *module, args));
  ExpectSeed000(gpu, &cpu);
}

// Two GPUs with two virtual devices each (no GPU needed: nothing here touches one).
std::shared_ptr<CudaDevices> TwoByTwo() {
  std::vector<cuda::DeviceInfo> gpus(2);
  gpus[0].ordinal = 0;
  gpus[1].ordinal = 1;
  return std::make_shared<CudaDevices>(
      testing::ValueOrFail(MapDevicesToGpus(4, 2)), std::move(gpus));
}

TEST(CudaDevicesTest, DeviceTimeIsTheBusiestDevicesSumAndStartsAgain) {
  std::shared_ptr<CudaDevices> devices = TwoByTwo();
  devices->AddDeviceMicros(0, 2.0);
  devices->AddDeviceMicros(0, 3.0);
  devices->AddDeviceMicros(3, 4.0);
  EXPECT_EQ(devices->TakeDeviceMicros(), 5.0);
  EXPECT_EQ(devices->TakeDeviceMicros(), 0.0);
}

TEST(CudaDevicesTest, VirtualDevicesOnSeveralGpusInOneRunAreUnimplementedNamingTheMapping) {
  std::shared_ptr<CudaDevices> devices = TwoByTwo();
  CommunicatorSpec spec;
  spec.device_ids = {0, 1, 2, 3};
  Status st = CreateCudaCommunicator(spec, *devices).status();
  EXPECT_EQ(st.code(), StatusCode::kUnimplemented);
  EXPECT_NE(std::string(st.message()).find("cuda:1 on GPU 0, virtual 1 of 2"), std::string::npos)
      << st.message();
}

// Collectives on host arrays (what shard_map and cmm bodies run) fail with one line on cuda.
TEST(CudaPlatformHostBuffersTest, CommunicatorRefusesHostArrays) {
  if (!cuda::DeviceCount().ok()) GTEST_SKIP() << cuda::NoGpuReason();
  ClientOptions o;
  o.num_devices = 2;
  auto client = testing::ValueOrFail(CreateClient("cuda", o));
  Status st = client->RunOnAllDevices([](int64_t rank, Communicator& comm) -> Status {
    Array in = Array::FromVector<float>({2}, {1, 2}), out(Shape(DType::kF32, {2}));
    return comm.AllReduce(CollectiveCall(rank, "psum"), DeviceGroups::All(2),
                          ConstBufferView::Of(in), BufferView::Of(out), ReductionKind::kSum);
  });
  ASSERT_FALSE(st.ok());
  EXPECT_NE(std::string(st.message()).find("got a host buffer"), std::string::npos)
      << st.message();
}

}  // namespace
}  // namespace xs
