// Sharding propagation cost on the 10,000-instruction MLP-like module of mlp_module.h (1,000
// layers of dot, bias broadcast + add, relu, transpose pair), on 8 and 4,096 partitions. The work
// per sharding is over the TileMesh's prime axes (at most log2(N)), and the HloShardings written
// back keep their tile assignments in iota form (shared, never materialized), so propagation
// should cost about the same at both counts.
#include <memory>
#include <string>

#include <benchmark/benchmark.h>

#include "mlp_module.h"
#include "xshard/propagation/propagation.h"
#include "xshard/text/parser.h"

namespace xs {
namespace {

void BM_PropagateMlp(benchmark::State& state) {
  const int64_t partitions = state.range(0);
  const std::string text = bench::MlpText(1000, partitions);
  auto parsed = ParseHloModule(text, "mlp.hlo");
  if (!parsed.ok()) {
    state.SkipWithError(std::string(parsed.status().message()).c_str());
    return;
  }
  int64_t instructions = 0;
  for (const Computation* c : (*parsed)->computations()) instructions += c->instruction_count();
  for (auto _ : state) {
    state.PauseTiming();
    std::unique_ptr<Module> module = (*parsed)->Clone();
    state.ResumeTiming();
    auto result = PropagateShardings(*module);
    if (!result.ok()) {
      state.SkipWithError(std::string(result.status().message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(result->iterations);
    state.PauseTiming();
    module.reset();  // freeing the shardings is not propagation's cost
    state.ResumeTiming();
  }
  state.counters["instructions"] = static_cast<double>(instructions);
  state.counters["partitions"] = static_cast<double>(partitions);
}
BENCHMARK(BM_PropagateMlp)->Arg(8)->Arg(4096)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace xs

BENCHMARK_MAIN();
