// The GPU executor against the CPU executor on the same modules (a fused elementwise chain, a
// dot, a reduce, a while loop, a transpose), plus graph replay, tracing and memory figures.
// Every test needs a GPU and skips with one line where there is none.
#include <gtest/gtest.h>

#include "xshard/cuda/platform.h"

#ifdef XSHARD_WITH_CUDA

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>

#include "xshard/cuda/gpu_executable.h"
#include "xshard/cuda/kernel_loader.h"
#include "xshard/exec/run_monitor.h"
#include "xshard/text/parser.h"

namespace xs::cuda {
namespace {

// After RunBoth: the CPU run and the GPU plan are checked everywhere; the rest needs a GPU.
#define XS_SKIP_WITHOUT_GPU(c) \
  if ((c).skipped) GTEST_SKIP() << NoGpuReason()

Array Random(const Shape& s, std::mt19937_64& rng) {
  Array a(s);
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    a.SetDouble(i, IsFloating(s.dtype()) ? d(rng) : static_cast<double>(rng() % 4));
  }
  return a;
}

struct Compared {
  bool skipped = false;  // no GPU: only the CPU run and the plan were checked
  std::unique_ptr<GpuExecutable> gpu;
  std::vector<Array> args;
};

// Runs `text` on the CPU, plans it for sm_90 (every step must be supported), and on GPU 0 runs
// it with the same random arguments: every result must agree within `tol` (absolute plus
// relative). Returns the loaded executable for further runs (skipped: no GPU).
Compared RunBoth(const std::string& text, double tol) {
  Compared c;
  StatusOr<std::unique_ptr<Module>> m = ParseHloModule(text, "test");
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (!m.ok()) return c;
  static std::vector<std::unique_ptr<Module>> keep;  // the plans refer to the modules
  keep.push_back(std::move(m).value());
  StatusOr<std::unique_ptr<Executable>> e = Executable::Create(*keep.back());
  EXPECT_TRUE(e.ok()) << e.status().message();
  if (!e.ok()) return c;
  static std::vector<std::unique_ptr<Executable>> execs;
  execs.push_back(std::move(e).value());
  const Executable& exec = *execs.back();
  std::mt19937_64 rng(7);
  for (const Shape& s : exec.argument_shapes()) c.args.push_back(Random(s, rng));
  StatusOr<std::vector<Array>> want = exec.Run(std::span<const Array>(c.args));
  EXPECT_TRUE(want.ok()) << want.status().message();
  if (!want.ok()) return c;
  StatusOr<std::unique_ptr<GpuPlan>> plan = GpuPlan::Create(exec);
  EXPECT_TRUE(plan.ok() && (*plan)->Supported().ok())
      << (plan.ok() ? (*plan)->Supported().message() : plan.status().message());
  if (!DeviceCount().ok()) {
    c.skipped = true;
    return c;
  }
  StatusOr<std::unique_ptr<GpuExecutable>> gpu = LoadOnGpu(exec, {});
  EXPECT_TRUE(gpu.ok()) << gpu.status().message();
  if (!gpu.ok()) return c;
  c.gpu = std::move(gpu).value();
  std::vector<const Array*> ptrs;
  for (const Array& a : c.args) ptrs.push_back(&a);
  StatusOr<std::vector<DeviceArray>> out = c.gpu->Run(ptrs);
  EXPECT_TRUE(out.ok()) << out.status().message();
  if (!out.ok()) return c;
  StatusOr<std::vector<Array>> got = c.gpu->CopyToHost(*out);
  EXPECT_TRUE(got.ok()) << got.status().message();
  if (!got.ok()) return c;
  EXPECT_EQ(got->size(), want->size());
  for (size_t r = 0; r < got->size() && r < want->size(); ++r) {
    const Array& g = (*got)[r];
    const Array& w = (*want)[r];
    EXPECT_EQ(g.shape(), w.shape());
    if (g.shape() != w.shape()) continue;
    int64_t bad = 0;
    for (int64_t i = 0; i < w.num_elements(); ++i) {
      const double x = g.GetDouble(i), y = w.GetDouble(i);
      if (std::abs(x - y) > tol * (1 + std::abs(y)) && bad++ < 3) {
        ADD_FAILURE() << "result " << r << " element " << i << ": GPU " << x << ", CPU " << y;
      }
    }
    EXPECT_EQ(bad, 0) << "elements outside the tolerance " << tol;
  }
  return c;
}

TEST(GpuExecutable, FusedElementwiseChainMatchesCpu) {
  Compared c = RunBoth(R"(HloModule m
ENTRY main {
  x = f32[4096,256] parameter(0)
  y = f32[4096,256] parameter(1)
  t = f32[4096,256] tanh(x)
  l = f32[4096,256] logistic(y)
  m = f32[4096,256] multiply(t, l)
  h = f32[] constant(0.5)
  b = f32[4096,256] broadcast(h), dimensions={}
  s = f32[4096,256] multiply(x, b)
  ROOT a = f32[4096,256] add(m, s)
})", 1e-5);
  XS_SKIP_WITHOUT_GPU(c);
}

TEST(GpuExecutable, DotMatchesCpu) {
  // f32 dots use TF32 by default (as XLA's GPU backend): 1e-2 relative.
  Compared c = RunBoth(R"(HloModule m
ENTRY main {
  x = f32[64,128] parameter(0)
  y = f32[128,32] parameter(1)
  ROOT d = f32[64,32] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})", 1e-2);
  XS_SKIP_WITHOUT_GPU(c);
}

TEST(GpuExecutable, ReduceMatchesCpu) {
  Compared c = RunBoth(R"(HloModule m
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[512,300] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[512] reduce(x, z), dimensions={1}, to_apply=sum
})", 1e-4);
  XS_SKIP_WITHOUT_GPU(c);
}

TEST(GpuExecutable, TransposeMatchesCpu) {
  Compared c = RunBoth(R"(HloModule m
ENTRY main {
  x = f32[33,65,7] parameter(0)
  ROOT t = f32[7,33,65] transpose(x), dimensions={2,0,1}
})", 0);
  XS_SKIP_WITHOUT_GPU(c);
}

TEST(GpuExecutable, DotWithATransposedOperandCopyMatchesCpu) {
  // The lhs's batch dim is not leading: the GEMM reads a transposed copy.
  Compared c = RunBoth(R"(HloModule m
ENTRY main {
  w = f32[32,8,64] parameter(0)
  y = f32[8,64,16] parameter(1)
  ROOT d = f32[8,32,16] dot(w, y), lhs_batch_dims={1}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
})", 1e-2);
  XS_SKIP_WITHOUT_GPU(c);
}

TEST(GpuExecutable, ConditionalAndCallMatchCpu) {
  Compared c = RunBoth(R"(HloModule m
neg {
  p = f32[128] parameter(0)
  ROOT n = f32[128] negate(p)
}
twice {
  p = f32[128] parameter(0)
  ROOT a = f32[128] add(p, p)
}
helper {
  p = f32[128] parameter(0)
  ROOT e = f32[128] exponential(p)
}
ENTRY main {
  i = s32[] parameter(0)
  x = f32[128] parameter(1)
  c = f32[128] call(x), to_apply=helper
  ROOT r = f32[128] conditional(i, c, x), branch_computations={neg, twice}
})", 1e-5);
  XS_SKIP_WITHOUT_GPU(c);
}

constexpr const char* kWhileModule = R"(HloModule m
cond {
  s = (s32[], f32[256]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[256]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  v = f32[256] get-tuple-element(s), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  h = f32[] constant(0.5)
  b = f32[256] broadcast(h), dimensions={}
  w = f32[256] multiply(v, b)
  c = f32[256] cosine(w)
  ROOT r = (s32[], f32[256]) tuple(j, c)
}
ENTRY main {
  x = f32[256] parameter(0)
  z = s32[] constant(0)
  init = (s32[], f32[256]) tuple(z, x)
  loop = (s32[], f32[256]) while(init), condition=cond, body=body
  ROOT out = f32[256] get-tuple-element(loop), index=1
})";

TEST(GpuExecutable, WhileLoopMatchesCpu) {
  Compared c = RunBoth(kWhileModule, 1e-5);
  XS_SKIP_WITHOUT_GPU(c);
  ASSERT_NE(c.gpu, nullptr);
  EXPECT_NE(c.gpu->graph_blocker().find("while"), std::string::npos) << c.gpu->graph_blocker();
}

// A device looping forever on the host (a while whose condition never turns false) stops at
// its next action once the run's monitor is stopped, as a peer's failure, --timeout or Ctrl-C
// stop it, returning the stop's reason; meanwhile the monitor shows the loop and its iteration.
TEST(GpuExecutable, AnEndlessLoopStopsWhenTheMonitorStops) {
  const std::string endless = std::string(kWhileModule).replace(std::string(kWhileModule).find("constant(5)"), 11,
                                                                "constant(2147483647)");
  StatusOr<std::unique_ptr<Module>> m = ParseHloModule(endless, "endless");
  ASSERT_TRUE(m.ok()) << m.status().message();
  StatusOr<std::unique_ptr<Executable>> e = Executable::Create(**m);
  ASSERT_TRUE(e.ok()) << e.status().message();
  if (!DeviceCount().ok()) GTEST_SKIP() << NoGpuReason();
  StatusOr<std::unique_ptr<GpuExecutable>> gpu = LoadOnGpu(**e, {});
  ASSERT_TRUE(gpu.ok()) << gpu.status().message();
  RunMonitor monitor(1);
  GpuRunOptions options;
  options.monitor = &monitor;
  std::mt19937_64 rng(1);
  const Array x = Random((*e)->argument_shapes()[0], rng);
  const std::vector<const Array*> args = {&x};
  std::thread stopper([&] {
    while (monitor.progress(0).iteration.load() < 50) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_NE(monitor.Where().find("while loop 'loop'"), std::string::npos) << monitor.Where();
    monitor.Stop(DeadlineExceeded("stopped by the test"));
  });
  const auto start = std::chrono::steady_clock::now();
  StatusOr<std::vector<DeviceArray>> out = (*gpu)->Run(args, options);
  stopper.join();
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().message(), "stopped by the test");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 30);
  // A stopped monitor stops the next run before it starts.
  EXPECT_FALSE((*gpu)->Run(args, options).ok());
}

// A kernel fault (a store to an illegal address) on the executable's stream becomes an error of
// the run or of fetching its results, saying what CUDA said, and the process goes on to exit
// normally. A fault leaves the CUDA context unusable for the rest of the process, so the run is a
// child process (a death test re-running this binary) whose exit code says what it saw.
TEST(GpuExecutableDeathTest, AKernelFaultIsAnErrorNotACrash) {
  if (!DeviceCount().ok()) GTEST_SKIP() << NoGpuReason();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        StatusOr<std::unique_ptr<Module>> m = ParseHloModule(kWhileModule, "fault");
        StatusOr<std::unique_ptr<Executable>> e = m.ok() ? Executable::Create(**m) : StatusOr<std::unique_ptr<Executable>>(m.status());
        if (!e.ok()) std::exit(2);
        StatusOr<std::unique_ptr<GpuExecutable>> gpu = LoadOnGpu(**e, {});
        if (!gpu.ok()) std::exit(3);
        StatusOr<cudaKernel_t> fault = LoadKernel(
            {"xs_test_fault", "extern \"C\" __global__ void xs_test_fault(int* p) { *p = 1; }"}, 0);
        if (!fault.ok()) std::exit(4);
        int* bad = reinterpret_cast<int*>(uintptr_t{16});
        void* kernel_args[] = {&bad};
        if (!LaunchKernel(*fault, dim3(1), dim3(1), kernel_args, 0, (*gpu)->stream()).ok()) std::exit(5);
        std::mt19937_64 rng(1);
        const Array x = Random((*e)->argument_shapes()[0], rng);
        const std::vector<const Array*> args = {&x};
        StatusOr<std::vector<DeviceArray>> out = (*gpu)->Run(args);
        StatusOr<std::vector<Array>> host = out.ok() ? (*gpu)->CopyToHost(*out) : StatusOr<std::vector<Array>>(out.status());
        std::fprintf(stderr, "run: %s\n", host.ok() ? "no error" : std::string(host.status().message()).c_str());
        std::exit(host.ok() ? 1 : 0);
      },
      ::testing::ExitedWithCode(0), "run: .*illegal");
}

TEST(GpuExecutable, RepeatedRunsReplayAGraphWithTheSameResults) {
  Compared c = RunBoth(R"(HloModule m
ENTRY main {
  x = f32[1000] parameter(0)
  e = f32[1000] exponential(x)
  ROOT a = f32[1000] add(e, x)
})", 1e-5);
  XS_SKIP_WITHOUT_GPU(c);
  ASSERT_NE(c.gpu, nullptr);
  EXPECT_EQ(c.gpu->graph_blocker(), "");
  std::vector<const Array*> ptrs = {&c.args[0]};
  StatusOr<std::vector<DeviceArray>> first = c.gpu->Run(ptrs);
  ASSERT_TRUE(first.ok()) << first.status().message();
  StatusOr<std::vector<Array>> a = c.gpu->CopyToHost(*first);
  GpuRunStats stats;
  StatusOr<std::vector<DeviceArray>> again = c.gpu->Run(ptrs, {}, &stats);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_TRUE(stats.replayed_graph);
  EXPECT_GT(stats.device_us, 0);
  StatusOr<std::vector<Array>> b = c.gpu->CopyToHost(*again);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ((*a)[0], (*b)[0]);
}

TEST(GpuExecutable, TraceTimesEveryActionAndMemoryIsReported) {
  Compared c = RunBoth(kWhileModule, 1e-5);
  XS_SKIP_WITHOUT_GPU(c);
  ASSERT_NE(c.gpu, nullptr);
  std::vector<const Array*> ptrs = {&c.args[0]};
  GpuRunOptions o;
  o.trace = true;
  GpuRunStats stats;
  ASSERT_TRUE(c.gpu->Run(ptrs, o, &stats).ok());
  EXPECT_FALSE(stats.replayed_graph);
  // 5 iterations of the body's fused loop (and integer add), plus the loop itself.
  EXPECT_GE(stats.steps.size(), 6u);
  for (const GpuStepTime& t : stats.steps) EXPECT_GE(t.duration_us, 0) << t.name;
  const GpuMemoryReport& mem = c.gpu->memory();
  EXPECT_GE(mem.arena_bytes, 2 * 256 * 4);  // the carry and the body's result at least
  EXPECT_EQ(mem.total_bytes, mem.arena_bytes + mem.argument_bytes + mem.constant_bytes + mem.workspace_bytes);
}

TEST(GpuExecutable, WrongArgumentShapeIsAnError) {
  Compared c = RunBoth(kWhileModule, 1e-5);
  XS_SKIP_WITHOUT_GPU(c);
  ASSERT_NE(c.gpu, nullptr);
  Array wrong(Shape(DType::kF32, {3}));
  std::vector<const Array*> ptrs = {&wrong};
  StatusOr<std::vector<DeviceArray>> r = c.gpu->Run(ptrs);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("argument 0 has shape f32[3]"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace xs::cuda

#else  // !XSHARD_WITH_CUDA

TEST(GpuExecutable, NeedsTheCudaToolkit) { GTEST_SKIP() << xs::cuda::NoGpuReason(); }

#endif
