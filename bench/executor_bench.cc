// Executor benchmarks: per-instruction overhead on tiny arrays (a chain of 1000 scalar adds run
// through Executable::Run; target < 1000 ns per instruction) and elementwise throughput on
// 64 MiB f32 arrays against memcpy in the same binary (target >= 80 % of memcpy's bandwidth).
//   ./build/bench/executor_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// Bandwidth counts bytes read + written: memcpy moves 2 x 64 MiB, a binary add 3 x 64 MiB.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <memory>
#include <vector>

#include "xshard/kernels/elementwise.h"
#include "xshard/exec/executable.h"
#include "xshard/text/parser.h"

namespace xs {
namespace {

constexpr int64_t kBigElements = (int64_t{64} << 20) / 4;  // 64 MiB of f32

std::unique_ptr<Module> ParseOrDie(const std::string& text) {
  StatusOr<std::unique_ptr<Module>> m = ParseHloModule(text);
  XS_CHECK(m.ok(), m.status().ToString());
  return std::move(m).value();
}

// x_{i+1} = x_i + y for 1000 scalar adds.
std::string AddChain(int n) {
  std::string t = "HloModule chain\nENTRY main {\n  x0 = f32[] parameter(0)\n  y = f32[] parameter(1)\n";
  for (int i = 1; i <= n; ++i) t += StrCat("  x", i, " = f32[] add(x", i - 1, ", y)\n");
  t += StrCat("  ROOT r = f32[] negate(x", n, ")\n}\n");
  return t;
}

void BM_ScalarAddChain(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  std::unique_ptr<Module> m = ParseOrDie(AddChain(n));
  std::unique_ptr<Executable> e = *Executable::Create(*m);
  std::vector<Array> args = {Array::Scalar<float>(0.0f), Array::Scalar<float>(1.0f)};
  for (auto _ : state) {
    StatusOr<std::vector<Array>> out = e->Run(args);
    benchmark::DoNotOptimize(out);
  }
  state.counters["ns_per_instruction"] = benchmark::Counter(
      static_cast<double>(n + 1), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_ScalarAddChain)->Arg(1000)->Unit(benchmark::kMicrosecond);

void BM_Memcpy64MiB(benchmark::State& state) {
  std::vector<float> src(kBigElements, 1.0f), dst(kBigElements, 0.0f);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), kBigElements * 4);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 2 * kBigElements * 4);
}
BENCHMARK(BM_Memcpy64MiB)->Unit(benchmark::kMillisecond)->UseRealTime();

// The add kernel alone into a preallocated buffer: the kernel's own bandwidth.
void BM_AddKernel64MiB(benchmark::State& state) {
  std::vector<float> a(kBigElements, 1.0f), b(kBigElements, 2.0f), c(kBigElements, 0.0f);
  kernels::BinaryKernel add = *kernels::FindBinaryKernel(Opcode::kAdd, DType::kF32);
  for (auto _ : state) {
    add(reinterpret_cast<const std::byte*>(a.data()), reinterpret_cast<const std::byte*>(b.data()),
        reinterpret_cast<std::byte*>(c.data()), kBigElements);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 3 * kBigElements * 4);
}
BENCHMARK(BM_AddKernel64MiB)->Unit(benchmark::kMillisecond)->UseRealTime();

// Through the executor: add of two 64 MiB arguments, the result buffer
// allocated per run (first-touch page faults included).
void BM_AddExecutor64MiB(benchmark::State& state) {
  std::unique_ptr<Module> m = ParseOrDie(StrCat(
      "HloModule add\nENTRY main {\n  a = f32[", kBigElements, "] parameter(0)\n  b = f32[", kBigElements,
      "] parameter(1)\n  ROOT c = f32[", kBigElements, "] add(a, b)\n}\n"));
  std::unique_ptr<Executable> e = *Executable::Create(*m);
  std::vector<Array> args = {Array::Full(DType::kF32, {kBigElements}, 1.0),
                             Array::Full(DType::kF32, {kBigElements}, 2.0)};
  for (auto _ : state) {
    StatusOr<std::vector<Array>> out = e->Run(args);
    benchmark::DoNotOptimize(out);
  }
  state.SetBytesProcessed(state.iterations() * 3 * kBigElements * 4);
}
BENCHMARK(BM_AddExecutor64MiB)->Unit(benchmark::kMillisecond)->UseRealTime();

// memcpy into a freshly allocated Array: the baseline for an executor run whose result buffer is
// new (zero-filled by Array, then first-touch page faults).
void BM_MemcpyFreshArray64MiB(benchmark::State& state) {
  Array src = Array::Full(DType::kF32, {kBigElements}, 1.0);
  for (auto _ : state) {
    Array dst(Shape(DType::kF32, {kBigElements}));
    std::memcpy(dst.data(), src.data(), kBigElements * 4);
    benchmark::DoNotOptimize(dst.data());
  }
  state.SetBytesProcessed(state.iterations() * 2 * kBigElements * 4);
}
BENCHMARK(BM_MemcpyFreshArray64MiB)->Unit(benchmark::kMillisecond)->UseRealTime();

// Through the executor with donated arguments (a = a + b in place; b passed through): no
// allocation, so this is the executor's steady-state elementwise bandwidth.
void BM_AddExecutorDonated64MiB(benchmark::State& state) {
  std::unique_ptr<Module> m = ParseOrDie(StrCat(
      "HloModule add\nENTRY main {\n  a = f32[", kBigElements, "] parameter(0)\n  b = f32[", kBigElements,
      "] parameter(1)\n  c = f32[", kBigElements, "] add(a, b)\n  ROOT t = (f32[", kBigElements, "], f32[",
      kBigElements, "]) tuple(c, b)\n}\n"));
  std::unique_ptr<Executable> e = *Executable::Create(*m);
  std::vector<Array> io = {Array::Full(DType::kF32, {kBigElements}, 1.0),
                           Array::Full(DType::kF32, {kBigElements}, 2.0)};
  for (auto _ : state) {
    StatusOr<std::vector<Array>> out = e->RunDonated(std::move(io));
    io = std::move(out).value();
  }
  state.SetBytesProcessed(state.iterations() * 3 * kBigElements * 4);
}
BENCHMARK(BM_AddExecutorDonated64MiB)->Unit(benchmark::kMillisecond)->UseRealTime();

// bf16 -> f32 compute -> bf16: the chunked conversion path.
void BM_AddKernelBf16_64MiB(benchmark::State& state) {
  const int64_t n = kBigElements * 2;  // 64 MiB of bf16
  std::vector<BFloat16> a(n, FloatToBFloat16(1.0f)), b(n, FloatToBFloat16(2.0f)), c(n);
  kernels::BinaryKernel add = *kernels::FindBinaryKernel(Opcode::kAdd, DType::kBF16);
  for (auto _ : state) {
    add(reinterpret_cast<const std::byte*>(a.data()), reinterpret_cast<const std::byte*>(b.data()),
        reinterpret_cast<std::byte*>(c.data()), n);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 3 * n * 2);
}
BENCHMARK(BM_AddKernelBf16_64MiB)->Unit(benchmark::kMillisecond)->UseRealTime();

// One device, f32[4096,4096]: tanh(x) * sigmoid(y) + x * 0.5 (the issue's elementwise chain).
constexpr std::string_view kChain = R"(
HloModule chain
ENTRY main {
  x = f32[4096,4096] parameter(0)
  y = f32[4096,4096] parameter(1)
  t = f32[4096,4096] tanh(x)
  s = f32[4096,4096] logistic(y)
  ts = f32[4096,4096] multiply(t, s)
  half = f32[] constant(0.5)
  h = f32[4096,4096] broadcast(half), dimensions={}
  xh = f32[4096,4096] multiply(x, h)
  ROOT r = f32[4096,4096] add(ts, xh)
})";

// One SGD step of a 2-layer MLP (b256, d512, h2048): relu forward, squared-error backward,
// both weight updates.
constexpr std::string_view kMlpStep = R"(
HloModule mlp_step
ENTRY main {
  x = f32[256,512] parameter(0)
  w1 = f32[512,2048] parameter(1)
  w2 = f32[2048,512] parameter(2)
  t = f32[256,512] parameter(3)
  h = f32[256,2048] dot(x, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  zero = f32[] constant(0)
  z = f32[256,2048] broadcast(zero), dimensions={}
  a = f32[256,2048] maximum(h, z)
  y = f32[256,512] dot(a, w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  dy = f32[256,512] subtract(y, t)
  dw2 = f32[2048,512] dot(a, dy), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  da = f32[256,2048] dot(dy, w2), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  pos = pred[256,2048] compare(h, z), direction=GT
  dh = f32[256,2048] select(pos, da, z)
  dw1 = f32[512,2048] dot(x, dh), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  lr = f32[] constant(0.001)
  lr1 = f32[512,2048] broadcast(lr), dimensions={}
  lr2 = f32[2048,512] broadcast(lr), dimensions={}
  s1 = f32[512,2048] multiply(dw1, lr1)
  s2 = f32[2048,512] multiply(dw2, lr2)
  w1n = f32[512,2048] subtract(w1, s1)
  w2n = f32[2048,512] subtract(w2, s2)
  ROOT out = (f32[512,2048], f32[2048,512]) tuple(w1n, w2n)
})";

std::vector<Array> ArgsFor(const Executable& e) {
  std::vector<Array> args;
  double v = 0.01;
  for (const Shape& s : e.argument_shapes()) {
    args.push_back(Array::Full(s.dtype(), s.dims(), v));
    v += 0.01;
  }
  return args;
}

void RunCase(benchmark::State& state, std::string_view text) {
  std::unique_ptr<Module> m = ParseOrDie(std::string(text));
  std::unique_ptr<Executable> e = *Executable::Create(*m);
  std::vector<Array> args = ArgsFor(*e);
  ExecuteStats stats;
  for (auto _ : state) {
    StatusOr<std::vector<Array>> out = e->Run(args, {}, &stats);
    benchmark::DoNotOptimize(out);
  }
  state.counters["peak_MiB"] = static_cast<double>(stats.peak_bytes) / (1 << 20);
}
void BM_TanhSigmoidChain4096(benchmark::State& state) { RunCase(state, kChain); }
BENCHMARK(BM_TanhSigmoidChain4096)->Unit(benchmark::kMillisecond)->UseRealTime();
void BM_MlpStep(benchmark::State& state) { RunCase(state, kMlpStep); }
BENCHMARK(BM_MlpStep)->Unit(benchmark::kMillisecond)->UseRealTime();

// `executor_bench --calls=N chain|mlp`: N plain calls and the peak (for perf stat / time -v).
int RunCalls(int n, std::string_view which) {
  std::unique_ptr<Module> m = ParseOrDie(std::string(which == "mlp" ? kMlpStep : kChain));
  std::unique_ptr<Executable> e = *Executable::Create(*m);
  std::vector<Array> args = ArgsFor(*e);
  ExecuteStats stats;
  for (int i = 0; i < n; ++i) {
    StatusOr<std::vector<Array>> out = e->Run(args, {}, &stats);
    XS_CHECK(out.ok(), out.status().ToString());
  }
  std::printf("%s: %d calls, peak_bytes %lld\n", std::string(which).c_str(), n,
              static_cast<long long>(stats.peak_bytes));
  return 0;
}

}  // namespace
}  // namespace xs

int main(int argc, char** argv) {
  if (argc == 3 && std::string_view(argv[1]).rfind("--calls=", 0) == 0) {
    return xs::RunCalls(std::atoi(argv[1] + 8), argv[2]);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
