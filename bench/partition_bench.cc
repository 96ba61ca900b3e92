// SPMD partitioning cost on the 10,000-instruction MLP-like module of mlp_module.h, on 8 and
// 4,096 partitions: Partition() (including its sharding propagation), and separately the cleanup
// pipeline (CSE, DCE) the partitioned module gets. The partitioned program adjusts by
// partition-id, so its time and size should not grow with the partition count; the counters
// report the SPMD module's instruction count, printed text size and constant elements so that a
// growth shows up even when the time hides it.
#include <memory>
#include <string>

#include <benchmark/benchmark.h>

#include "mlp_module.h"
#include "xshard/passes/pipeline.h"
#include "xshard/spmd/partitioner.h"
#include "xshard/text/parser.h"
#include "xshard/text/printer.h"

namespace xs {
namespace {

std::unique_ptr<Module> ParseMlp(benchmark::State& state, int64_t partitions) {
  auto parsed = ParseHloModule(bench::MlpText(1000, partitions), "mlp.hlo");
  if (!parsed.ok()) {
    state.SkipWithError(std::string(parsed.status().message()).c_str());
    return nullptr;
  }
  return std::move(parsed).value();
}

int64_t InstructionCount(const Module& module) {
  int64_t n = 0;
  for (const Computation* c : module.computations()) n += c->instruction_count();
  return n;
}

// Elements of every array constant: per-partition tables would make this grow with N.
int64_t ConstantElements(const Module& module) {
  int64_t n = 0;
  for (const Computation* c : module.computations()) {
    for (const Instruction* inst : c->instructions()) {
      if (inst->opcode() == Opcode::kConstant) n += inst->shape().IsArray() ? inst->shape().num_elements() : 0;
    }
  }
  return n;
}

void SetCounters(benchmark::State& state, const Module& global, const Module& spmd) {
  state.counters["partitions"] = static_cast<double>(state.range(0));
  state.counters["instructions"] = static_cast<double>(InstructionCount(global));
  state.counters["spmd_instructions"] = static_cast<double>(InstructionCount(spmd));
  state.counters["spmd_text_bytes"] = static_cast<double>(PrintHloModule(spmd).size());
  state.counters["constant_elements"] = static_cast<double>(ConstantElements(spmd));
}

void BM_PartitionMlp(benchmark::State& state) {
  const int64_t partitions = state.range(0);
  std::unique_ptr<Module> global = ParseMlp(state, partitions);
  if (global == nullptr) return;
  std::unique_ptr<Module> last;
  for (auto _ : state) {
    StatusOr<PartitionResult> r = Partition(*global, partitions);
    if (!r.ok()) {
      state.SkipWithError(std::string(r.status().message()).c_str());
      return;
    }
    state.PauseTiming();
    last = std::move(r->module);  // freeing the previous result is not partitioning's cost
    state.ResumeTiming();
  }
  SetCounters(state, *global, *last);
}
BENCHMARK(BM_PartitionMlp)->Arg(8)->Arg(4096)->Unit(benchmark::kMillisecond);

void BM_CleanupMlp(benchmark::State& state) {
  const int64_t partitions = state.range(0);
  std::unique_ptr<Module> global = ParseMlp(state, partitions);
  if (global == nullptr) return;
  StatusOr<PartitionResult> r = Partition(*global, partitions);
  if (!r.ok()) {
    state.SkipWithError(std::string(r.status().message()).c_str());
    return;
  }
  std::unique_ptr<Module> cleaned;
  for (auto _ : state) {
    state.PauseTiming();
    cleaned.reset();
    cleaned = r->module->Clone();
    state.ResumeTiming();
    Status s = RunPipeline(*cleaned, CleanupPasses());
    if (!s.ok()) {
      state.SkipWithError(std::string(s.message()).c_str());
      return;
    }
  }
  SetCounters(state, *global, *cleaned);
}
BENCHMARK(BM_CleanupMlp)->Arg(8)->Arg(4096)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace xs

BENCHMARK_MAIN();
