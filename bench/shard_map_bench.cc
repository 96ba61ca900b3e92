// shard_map end to end: split the arguments, run the per-device function with its collectives on
// 8 devices, assemble the results. Each benchmark iteration times kCalls calls and reports their
// median (manual time): on a loaded 2-core machine a parked device thread now and then waits
// milliseconds for a core, which would dominate a mean. Small arrays measure the fixed cost of a
// call; seed 004's
// weight all-gather (bf16 [2048,1024] split over 'x' of the 4x2 mesh) measures a real payload.
//
//   ./build/bench/shard_map_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <memory>

#include "xshard/shard_map/shard_map.h"

namespace xs {
namespace {

Client& SharedClient() {
  static std::unique_ptr<Client> client = [] {
    ClientOptions o;
    o.num_devices = 8;
    return *Client::Create(o);
  }();
  return *client;
}

PartitionSpec Spec(std::vector<PartitionSpec::Entry> entries) {
  return PartitionSpec(std::move(entries));
}

using Arrays = std::vector<Array>;

constexpr int kCalls = 15;

// Runs f(args) kCalls times; sets the iteration time to the median call.
void TimeCalls(benchmark::State& state, const ShardMapped& f, const Arrays& args) {
  std::vector<double> seconds;
  for (int i = 0; i < kCalls; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    auto out = f(SharedClient(), args);
    seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (!out.ok()) state.SkipWithError(out.status().ToString().c_str());
    benchmark::DoNotOptimize(out);
  }
  std::sort(seconds.begin(), seconds.end());
  state.SetIterationTime(seconds[seconds.size() / 2]);
}

const Mesh& Mesh42() {
  static const Mesh mesh = *Mesh::Create({"x", "y"}, {4, 2});
  return mesh;
}

// A call with one tiny psum over both axes: the fixed cost of shard_map.
void BM_ShardMapPsumTiny(benchmark::State& state) {
  const PartitionSpec spec = Spec({{"x", "y"}});
  auto f = *ShardMap(Mesh42(), {spec}, {spec},
                     [](ShardMapContext& ctx, Arrays in) -> StatusOr<Arrays> {
                       XS_ASSIGN_OR_RETURN(Array s, ctx.Psum(in[0], {"x", "y"}));
                       return Arrays{std::move(s)};
                     });
  const std::vector<Array> args = {Array::Iota(DType::kF32, {8})};
  for (auto _ : state) TimeCalls(state, f, args);
}
BENCHMARK(BM_ShardMapPsumTiny)->UseManualTime()->Unit(benchmark::kMicrosecond);

// Ten psums in one call: the per-collective cost inside shard_map.
void BM_ShardMapTenPsums(benchmark::State& state) {
  const PartitionSpec spec = Spec({{"x", "y"}});
  auto f = *ShardMap(Mesh42(), {spec}, {spec},
                     [](ShardMapContext& ctx, Arrays in) -> StatusOr<Arrays> {
                       Array x = std::move(in[0]);
                       for (int i = 0; i < 10; ++i) {
                         const AxisNames axis = i % 2 ? AxisNames("x") : AxisNames("y");
                         XS_ASSIGN_OR_RETURN(x, ctx.Psum(x, axis));
                       }
                       return Arrays{std::move(x)};
                     });
  const std::vector<Array> args = {Array::Iota(DType::kF32, {8})};
  for (auto _ : state) TimeCalls(state, f, args);
}
BENCHMARK(BM_ShardMapTenPsums)->UseManualTime()->Unit(benchmark::kMicrosecond);

// seed 004's xla_allgather: bf16 weights [2048, 1024] split over 'x', gathered, out_specs P().
void BM_ShardMapWeightAllGather(benchmark::State& state) {
  auto f = *ShardMap(Mesh42(), {Spec({{"x"}, {}})}, {PartitionSpec()},
                     [](ShardMapContext& ctx, Arrays in) -> StatusOr<Arrays> {
                       XS_ASSIGN_OR_RETURN(Array w, ctx.AllGather(in[0], "x", 0, true));
                       return Arrays{std::move(w)};
                     });
  const std::vector<Array> args = {Array::Full(DType::kBF16, {2048, 1024}, 1.0)};
  for (auto _ : state) TimeCalls(state, f, args);
}
BENCHMARK(BM_ShardMapWeightAllGather)->UseManualTime()->Iterations(3)->Unit(
    benchmark::kMillisecond);

}  // namespace
}  // namespace xs

BENCHMARK_MAIN();
