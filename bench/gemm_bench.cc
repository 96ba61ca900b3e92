// GEMM at the machine's limit: xshard's DotPlan against the best direct library calls measured
// in the same run (OpenBLAS sgemm in one call or as column halves on 1-thread calls, oneDNN f32
// and bf16 matmul), plus the tiled transpose, and one device's products of bench/jax_compare's
// transformer block on one thread (attention q.k / v.p per engine, the projections). Targets
// (issue 9): f32 2048^3 >= 90 % of the best OpenBLAS call, bf16 2048x2048 @ 2048x1024 >= 85 % of
// the best oneDNN call. Run with
//   ./build/bench/gemm_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//       --benchmark_enable_random_interleaving=true
// and compare the medians' GFLOP/s counters.
#include <cblas.h>
#include <omp.h>

#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "oneapi/dnnl/dnnl.hpp"
#include "xshard/kernels/dot.h"
#include "xshard/kernels/elementwise.h"
#include "xshard/kernels/shape_ops.h"

namespace xs {
namespace {

Array Filled(DType dtype, std::vector<int64_t> dims, float scale) {
  Array a(Shape(DType::kF32, std::move(dims)));
  int i = 0;
  for (float& x : a.values<float>()) x = scale * static_cast<float>((i++ % 17) - 8);
  return dtype == DType::kF32 ? a : *kernels::Convert(a, dtype);
}

void Flops(benchmark::State& state, int64_t m, int64_t n, int64_t k) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * m * n * k / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

DotDimensionNumbers MatmulDn(bool rhs_transposed) {
  DotDimensionNumbers dn;
  dn.lhs_contracting = {1};
  dn.rhs_contracting = {rhs_transposed ? 1 : 0};
  return dn;
}

// xshard: a DotPlan made once, run into a preallocated result (what the executor does).
void BM_XshardDot(benchmark::State& state, DType in, DType out, bool rhs_transposed) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  const Array a = Filled(in, {m, k}, 1e-2f);
  const Array b = Filled(in, rhs_transposed ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n}, 1e-2f);
  auto plan = kernels::DotPlan::Create(a.shape(), b.shape(), MatmulDn(rhs_transposed), out);
  XS_CHECK(plan.ok(), plan.status().ToString());
  Array c((*plan)->result_shape());
  state.SetLabel((*plan)->ToString());
  for (auto _ : state) {
    XS_CHECK((*plan)->Run(a.data(), b.data(), c.data()).ok());
    benchmark::ClobberMemory();
  }
  Flops(state, m, n, k);
}

// Direct OpenBLAS sgemm, one call on the library's threads.
void BM_OpenBlasSgemm(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  std::vector<float> a(m * k, 0.01f), b(k * n, 0.02f), c(m * n);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1, a.data(), k, b.data(), n, 0,
                c.data(), n);
    benchmark::ClobberMemory();
  }
  Flops(state, m, n, k);
}

// Direct OpenBLAS sgemm as two column halves, each on its own thread with one BLAS thread.
void BM_OpenBlasSgemmColumnHalves(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2), h = n / 2;
  std::vector<float> a(m * k, 0.01f), b(k * n, 0.02f), c(m * n);
  const int saved = openblas_get_num_threads();
  openblas_set_num_threads(1);
  for (auto _ : state) {
    std::thread t([&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n - h, k, 1, a.data(), k, b.data() + h, n,
                  0, c.data() + h, n);
    });
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, h, k, 1, a.data(), k, b.data(), n, 0,
                c.data(), n);
    t.join();
    benchmark::ClobberMemory();
  }
  openblas_set_num_threads(saved);
  Flops(state, m, n, k);
}

// Direct oneDNN matmul (dense row-major), created once; `type` for the inputs, `out` the result.
void BM_OneDnnMatmul(benchmark::State& state, dnnl::memory::data_type type, dnnl::memory::data_type out) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  using tag = dnnl::memory::format_tag;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(eng);
  const dnnl::memory::desc ad({m, k}, type, tag::ab), bd({k, n}, type, tag::ab), cd({m, n}, out, tag::ab);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(ad, bd, cd), eng);
  const dnnl::matmul mm(pd);
  dnnl::memory am(ad, eng), bm(bd, eng), cm(cd, eng);
  std::memset(am.get_data_handle(), 0x3c, ad.get_size());
  std::memset(bm.get_data_handle(), 0x3c, bd.get_size());
  state.SetLabel(pd.impl_info_str());
  for (auto _ : state) {
    mm.execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
    stream.wait();
  }
  Flops(state, m, n, k);
}

// One thread's GEMMs (each of 8 devices on 2 cores runs its own): the transformer block's
// per-device projections (m = 512 rows) through DotPlan (oneDNN brgemm for f32 at this size) and
// OpenBLAS sgemm.
void BM_XshardDotOneThread(benchmark::State& state) {
  kernels::SetBlasThreads(1);
  BM_XshardDot(state, DType::kF32, DType::kF32, false);
  kernels::SetBlasThreads(0);
}
void BM_OpenBlasSgemmOneThread(benchmark::State& state) {
  kernels::SetBlasThreads(1);
  BM_OpenBlasSgemm(state);
  kernels::SetBlasThreads(0);
}

void BM_Transpose(benchmark::State& state, bool reference) {
  const int64_t n = state.range(0);
  const Array a = Filled(DType::kF32, {n, n}, 1.0f);
  for (auto _ : state) {
    Array t = reference ? kernels::TransposeReference(a, {1, 0}) : kernels::Transpose(a, {1, 0});
    benchmark::DoNotOptimize(t.data());
  }
  state.counters["GB/s"] = benchmark::Counter(2.0 * a.byte_size() / 1e9,
                                              benchmark::Counter::kIsIterationInvariantRate);
}

using dt = dnnl::memory::data_type;

// The attention's batched dots of bench/jax_compare's transformer block as one device of its 4x2
// mesh runs them (b2 s256, 4 heads of 64): scores = q . k over d (QK, 2x4 products of 256x256x64)
// and out = v . p over s (PV, 2x4 products of 64x256x256), operands as the reshapes leave them
// (heads a batch dim in the middle). Variants: xshard's DotPlan; oneDNN on the strided 4-d views
// (implementation in the label); both operands copied dense [8, rows, cols] then one oneDNN call.
enum class AttentionDot { kQk, kPv };
enum class AttentionEngine { kDotPlan, kOneDnnStrided, kOneDnnDense };

void BM_AttentionDot(benchmark::State& state, AttentionDot which, AttentionEngine engine) {
  using tag = dnnl::memory::format_tag;
  using dims = dnnl::memory::dims;
  const int64_t b = 2, s = 256, h = 4, d = 64;
  // One thread, as each of 8 devices on 2 cores runs its dots.
  omp_set_num_threads(1);
  openblas_set_num_threads(1);
  const Array qkv = Filled(DType::kF32, {b, s, h, d}, 1e-2f);
  const Array probs = Filled(DType::kF32, {b, h, s, s}, 1e-3f);
  DotDimensionNumbers dn;
  Shape lhs_shape = qkv.shape(), rhs_shape = qkv.shape();
  const Array* rhs = &qkv;
  int64_t m = s, n = s, k = d;
  // oneDNN views: [b, h, rows, cols] with the operands' strides.
  dims a_strides, w_strides;
  if (which == AttentionDot::kQk) {
    dn.lhs_batch = {0, 2}; dn.rhs_batch = {0, 2}; dn.lhs_contracting = {3}; dn.rhs_contracting = {3};
    a_strides = {s * h * d, d, h * d, 1};
    w_strides = {s * h * d, d, 1, h * d};
  } else {
    dn.lhs_batch = {0, 2}; dn.rhs_batch = {0, 1}; dn.lhs_contracting = {1}; dn.rhs_contracting = {3};
    rhs_shape = probs.shape();
    rhs = &probs;
    m = d; n = s; k = s;
    a_strides = {s * h * d, d, 1, h * d};
    w_strides = {h * s * s, s * s, 1, s};
  }
  Array out(Shape(DType::kF32, {b, h, m, n}));
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(eng);
  const dnnl::memory::desc od({b, h, m, n}, dt::f32, tag::abcd);
  const bool dense = engine == AttentionEngine::kOneDnnDense;
  const dnnl::memory::desc ad = dense ? dnnl::memory::desc({b, h, m, k}, dt::f32, tag::abcd)
                                      : dnnl::memory::desc({b, h, m, k}, dt::f32, a_strides);
  const dnnl::memory::desc wd = dense ? dnnl::memory::desc({b, h, k, n}, dt::f32, tag::abcd)
                                      : dnnl::memory::desc({b, h, k, n}, dt::f32, w_strides);
  std::vector<float> a_copy(b * h * m * k), w_copy(b * h * k * n);
  if (engine == AttentionEngine::kDotPlan) {
    auto plan = kernels::DotPlan::Create(lhs_shape, rhs_shape, dn, DType::kF32);
    XS_CHECK(plan.ok(), plan.status().ToString());
    state.SetLabel((*plan)->ToString());
    for (auto _ : state) {
      XS_CHECK((*plan)->Run(qkv.data(), rhs->data(), out.data()).ok());
      benchmark::ClobberMemory();
    }
  } else {
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(ad, wd, od), eng);
    const dnnl::matmul mm(pd);
    state.SetLabel(pd.impl_info_str());
    // Copy orders: operand dims -> [b, h, rows, cols].
    const std::vector<int64_t> a_perm = which == AttentionDot::kQk ? std::vector<int64_t>{0, 2, 1, 3}
                                                                   : std::vector<int64_t>{0, 2, 3, 1};
    const std::vector<int64_t> w_perm = which == AttentionDot::kQk ? std::vector<int64_t>{0, 2, 3, 1}
                                                                   : std::vector<int64_t>{0, 1, 3, 2};
    for (auto _ : state) {
      const void* a = qkv.data();
      const void* w = rhs->data();
      if (dense) {
        kernels::TransposeInto(qkv.data(), reinterpret_cast<std::byte*>(a_copy.data()), 4, qkv.dims(), a_perm);
        kernels::TransposeInto(rhs->data(), reinterpret_cast<std::byte*>(w_copy.data()), 4, rhs->dims(), w_perm);
        a = a_copy.data();
        w = w_copy.data();
      }
      dnnl::memory am(ad, eng, const_cast<void*>(a)), wm(wd, eng, const_cast<void*>(w)), om(od, eng, out.data());
      mm.execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, om}});
      stream.wait();
    }
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * b * h * m * n * k / 1e9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

#define GEMM_ARGS(m, n, k) ->Args({m, n, k})->Unit(benchmark::kMillisecond)->UseRealTime()
BENCHMARK_CAPTURE(BM_XshardDot, f32, DType::kF32, DType::kF32, false) GEMM_ARGS(2048, 2048, 2048) GEMM_ARGS(2048, 1024, 2048);
BENCHMARK_CAPTURE(BM_XshardDot, f32_rhs_transposed, DType::kF32, DType::kF32, true) GEMM_ARGS(2048, 2048, 2048);
// 4096^3: the global problem of seed 001's sharded matmul (bench/executor_targets.py).
BENCHMARK(BM_OpenBlasSgemm) GEMM_ARGS(2048, 2048, 2048) GEMM_ARGS(2048, 1024, 2048) GEMM_ARGS(4096, 4096, 4096);
BENCHMARK(BM_OpenBlasSgemmColumnHalves) GEMM_ARGS(2048, 2048, 2048) GEMM_ARGS(2048, 1024, 2048)
    GEMM_ARGS(4096, 4096, 4096);
BENCHMARK_CAPTURE(BM_OneDnnMatmul, f32, dt::f32, dt::f32) GEMM_ARGS(2048, 2048, 2048) GEMM_ARGS(4096, 4096, 4096);
BENCHMARK_CAPTURE(BM_XshardDot, bf16_to_f32, DType::kBF16, DType::kF32, false) GEMM_ARGS(2048, 1024, 2048);
BENCHMARK_CAPTURE(BM_XshardDot, bf16_to_bf16, DType::kBF16, DType::kBF16, false) GEMM_ARGS(2048, 1024, 2048);
BENCHMARK_CAPTURE(BM_XshardDot, bf16_rhs_transposed, DType::kBF16, DType::kBF16, true) GEMM_ARGS(2048, 1024, 2048);
BENCHMARK_CAPTURE(BM_OneDnnMatmul, bf16_to_f32, dt::bf16, dt::f32) GEMM_ARGS(2048, 1024, 2048);
BENCHMARK_CAPTURE(BM_OneDnnMatmul, bf16_to_bf16, dt::bf16, dt::bf16) GEMM_ARGS(2048, 1024, 2048);
BENCHMARK_CAPTURE(BM_XshardDot, f16, DType::kF16, DType::kF16, false) GEMM_ARGS(2048, 1024, 2048);
// Per-call overhead on small dots (plan lookup, oneDNN memory objects).
BENCHMARK_CAPTURE(BM_XshardDot, small_f32, DType::kF32, DType::kF32, false)->Args({64, 64, 64})->UseRealTime();
BENCHMARK(BM_OpenBlasSgemm)->Args({64, 64, 64})->UseRealTime();
BENCHMARK_CAPTURE(BM_XshardDot, small_bf16, DType::kBF16, DType::kF32, false)->Args({64, 64, 64})->UseRealTime();
BENCHMARK_CAPTURE(BM_OneDnnMatmul, small_bf16, dt::bf16, dt::f32)->Args({64, 64, 64})->UseRealTime();
#define PER_DEVICE ->Args({512, 256, 512})->Args({512, 512, 256})->Args({512, 1024, 512})->Args({512, 512, 1024})->Unit(benchmark::kMicrosecond)->UseRealTime()
BENCHMARK(BM_XshardDotOneThread) PER_DEVICE;
BENCHMARK(BM_OpenBlasSgemmOneThread) PER_DEVICE;
#define ATTENTION(name, which, engine) \
  BENCHMARK_CAPTURE(BM_AttentionDot, name, AttentionDot::which, AttentionEngine::engine) \
      ->Unit(benchmark::kMicrosecond)->UseRealTime();
ATTENTION(qk_dotplan, kQk, kDotPlan)
ATTENTION(qk_onednn_strided, kQk, kOneDnnStrided)
ATTENTION(qk_onednn_dense, kQk, kOneDnnDense)
ATTENTION(pv_dotplan, kPv, kDotPlan)
ATTENTION(pv_onednn_strided, kPv, kOneDnnStrided)
ATTENTION(pv_onednn_dense, kPv, kOneDnnDense)
BENCHMARK_CAPTURE(BM_Transpose, tiled, false)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Transpose, reference, true)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace xs

BENCHMARK_MAIN();
