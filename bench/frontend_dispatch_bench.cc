// Dispatch overhead of the C++ front end: a cached jitted call (trace and compile happen once,
// outside the timing), an eager op, and a jitted call on 8 devices with sharded inputs. The JAX
// counterpart is bench/jax_compare/frontend_dispatch.py (jax.jit(f)(x).block_until_ready()).
//   ./build/bench/frontend_dispatch_bench --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true   (one command line)
#include <benchmark/benchmark.h>

#include "xshard/frontend/jit.h"

namespace xs::fe {
namespace {

Tensor Sigmoid(Tensor x) { return 1 / (1 + Exp(-x)); }

void Check(const Tensor& t) {
  if (!t.ok()) {
    std::fprintf(stderr, "%s\n", t.status().ToString().c_str());
    std::abort();
  }
}

// jax.jit(sigmoid)(x) with x f32[n], the executable cached.
void BM_JitSigmoid(benchmark::State& state) {
  JitFunction f = Jit(Sigmoid, {.name = "sigmoid"});
  Tensor x = Ones({state.range(0)});
  Check(f(x));  // trace + compile
  for (auto _ : state) {
    Tensor y = f(x);
    benchmark::DoNotOptimize(y.impl().get());
  }
}
BENCHMARK(BM_JitSigmoid)->Arg(1)->Arg(1000)->Unit(benchmark::kMicrosecond);

// jnp.exp(x) outside jit: one eager primitive, its program cached.
void BM_EagerExp(benchmark::State& state) {
  Tensor x = Ones({state.range(0)});
  Check(Exp(x));
  for (auto _ : state) {
    Tensor y = Exp(x);
    benchmark::DoNotOptimize(y.impl().get());
  }
}
BENCHMARK(BM_EagerExp)->Arg(1000)->Unit(benchmark::kMicrosecond);

// jax.jit(jnp.matmul)(x, y) with seed 000's shardings on 8 devices (x f32[4,16] P(None, 'a'),
// y f32[16,4] P('a', None), mesh a=4 b=2).
void BM_JitShardedMatmul(benchmark::State& state) {
  Mesh mesh = *Mesh::Create({"a", "b"}, {4, 2});
  Tensor x = DevicePut(Ones({4, 16}), *MakeSharding(mesh, "P(None, 'a')"));
  Tensor y = DevicePut(Ones({16, 4}), *MakeSharding(mesh, "P('a', None)"));
  JitFunction f = Jit([](Tensor a, Tensor b) { return Matmul(a, b); }, {.name = "matmul"});
  Check(f(x, y));
  for (auto _ : state) {
    Tensor z = f(x, y);
    benchmark::DoNotOptimize(z.impl().get());
  }
}
BENCHMARK(BM_JitShardedMatmul)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace xs::fe

BENCHMARK_MAIN();
