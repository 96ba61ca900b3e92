// Fused elementwise loops against op-by-op execution and memcpy: the chain
// tanh(x) * logistic(y) + x * 0.5 on f32[4096,4096] (tests/data/fusion_chain.hlo, JAX's lowering
// of tanh(x) * sigmoid(y) + x * 0.5). Target: the fused chain at >= 80 % of memcpy's bandwidth.
//   ./build/bench/fusion_bench --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true
//       --benchmark_report_aggregates_only=true
// Bandwidth counts bytes read + written: memcpy moves 2 x 64 MiB, the chain 3 x 64 MiB (x, y in,
// result out). "Donated" runs overwrite x in place (no result allocation: the steady state of an
// arena); "Run" runs allocate and zero-fill the result each call, as the executor does today.
#include <benchmark/benchmark.h>

#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

#include "xshard/exec/executable.h"
#include "xshard/text/parser.h"

namespace xs {
namespace {

constexpr int64_t kSide = 4096;
constexpr int64_t kElements = kSide * kSide;  // 64 MiB of f32

// The same data flow with only multiply / add: memory-bound whatever the math kernels cost.
constexpr const char* kCheapChain = R"(
HloModule cheap
ENTRY main {
  x = f32[4096,4096] parameter(0)
  y = f32[4096,4096] parameter(1)
  m = f32[4096,4096] multiply(x, y)
  c = f32[] constant(0.5)
  b = f32[4096,4096] broadcast(c), dimensions={}
  xh = f32[4096,4096] multiply(x, b)
  ROOT r = f32[4096,4096] add(m, xh)
})";

// which = 0: the tanh / logistic chain; 1: the cheap chain.
const Executable& Chain(int64_t which) {
  static std::unique_ptr<Module> modules[2];
  static std::unique_ptr<Executable> exes[2];
  if (!exes[which]) {
    std::string text = kCheapChain;
    if (which == 0) {
      std::ifstream f(std::string(XSHARD_SOURCE_DIR) + "/tests/data/fusion_chain.hlo");
      std::stringstream s;
      s << f.rdbuf();
      text = s.str();
    }
    StatusOr<std::unique_ptr<Module>> m = ParseHloModule(text);
    XS_CHECK(m.ok(), m.status().ToString());
    modules[which] = std::move(m).value();
    exes[which] = *Executable::Create(*modules[which]);
  }
  return *exes[which];
}

std::vector<Array> Args() {
  Array x(DType::kF32, {kSide, kSide}), y(DType::kF32, {kSide, kSide});
  float* px = reinterpret_cast<float*>(x.data());
  float* py = reinterpret_cast<float*>(y.data());
  for (int64_t i = 0; i < kElements; ++i) {
    px[i] = static_cast<float>(i % 1000) * 0.004f - 2.0f;
    py[i] = static_cast<float>(i % 777) * 0.005f - 1.9f;
  }
  return {std::move(x), std::move(y)};
}

ExecuteOptions Options(bool fusion, int threads) {
  ExecuteOptions o;
  o.fusion = fusion;
  o.intra_op_threads = threads;
  return o;
}

// args: fusion (0/1), threads, chain (0: tanh / logistic, 1: multiply / add).
void BM_ChainRun(benchmark::State& state) {
  const Executable& e = Chain(state.range(2));
  const std::vector<Array> args = Args();
  const ExecuteOptions o = Options(state.range(0) != 0, static_cast<int>(state.range(1)));
  for (auto _ : state) {
    StatusOr<std::vector<Array>> out = e.Run(args, o);
    XS_CHECK(out.ok(), out.status().ToString());
    benchmark::DoNotOptimize(out);
  }
  state.SetBytesProcessed(state.iterations() * 3 * kElements * 4);
}
BENCHMARK(BM_ChainRun)->ArgNames({"fused", "threads", "cheap"})
    ->ArgsProduct({{0, 1}, {1, 2}, {0, 1}})->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ChainDonated(benchmark::State& state) {
  const Executable& e = Chain(state.range(2));
  const std::vector<Array> args = Args();
  const ExecuteOptions o = Options(state.range(0) != 0, static_cast<int>(state.range(1)));
  std::vector<Array> in = args;
  for (auto _ : state) {
    state.PauseTiming();
    std::memcpy(in[0].data(), args[0].data(), kElements * 4);  // pages stay mapped
    std::vector<Array> donated;
    donated.push_back(std::move(in[0]));
    donated.push_back(std::move(in[1]));
    state.ResumeTiming();
    StatusOr<std::vector<Array>> out = e.RunDonated(std::move(donated), o);
    state.PauseTiming();
    XS_CHECK(out.ok(), out.status().ToString());
    in = {std::move((*out)[0]), args[1]};
    state.ResumeTiming();
  }
  state.SetBytesProcessed(state.iterations() * 3 * kElements * 4);
}
BENCHMARK(BM_ChainDonated)->ArgNames({"fused", "threads", "cheap"})
    ->ArgsProduct({{0, 1}, {1, 2}, {0, 1}})->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Memcpy64MiB(benchmark::State& state) {
  std::vector<float> src(kElements, 1.0f), dst(kElements, 0.0f);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), kElements * 4);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 2 * kElements * 4);
}
BENCHMARK(BM_Memcpy64MiB)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace xs

BENCHMARK_MAIN();
