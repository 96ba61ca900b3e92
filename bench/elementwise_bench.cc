// Elementwise kernel throughput: the scalar loops (the reference path, elementwise_loops.h) vs
// the vector kernels FindUnaryKernel / FindBinaryKernel return, next to memcpy of the same bytes,
// on f32 arrays of 16 KiB (a fused loop's tile, L1), 1 MiB (L2 / L3) and 64 MiB (DRAM), and a
// tiled tanh(x) * logistic(y) + x * 0.5 chain, and u32 shifts and rotations on one tile. bytes_per_second counts every
// byte read and written (memcpy: 2x its size, the same as a unary op).
//   ./build/bench/elementwise_bench --benchmark_repetitions=5
//       --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <random>

#include "xshard/kernels/elementwise.h"
#include "xshard/kernels/elementwise_loops.h"
#include "xshard/kernels/elementwise_simd.h"

namespace xs::kernels {
namespace {

struct Buffer {
  explicit Buffer(int64_t bytes)
      : p(static_cast<std::byte*>(std::aligned_alloc(64, static_cast<size_t>(bytes)))) {
    std::memset(p, 0, static_cast<size_t>(bytes));
  }
  ~Buffer() { std::free(p); }
  std::byte* p;
};

void Fill(std::byte* p, int64_t n, float lo, float hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  float* f = reinterpret_cast<float*>(p);
  for (int64_t i = 0; i < n; ++i) f[i] = d(rng);
}

enum class Path { kScalar, kVector };

void BM_Unary(benchmark::State& state, Opcode op, Path path, float lo, float hi) {
  const int64_t bytes = state.range(0), n = bytes / 4;
  Buffer in(bytes), out(bytes);
  Fill(in.p, n, lo, hi, 1);
  UnaryKernel k = path == Path::kScalar ? internal::LookupUnary(op, DType::kF32)->fast
                                        : *FindUnaryKernel(op, DType::kF32);
  for (auto _ : state) {
    k(in.p, out.p, n);
    benchmark::DoNotOptimize(out.p);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 2 * bytes);
  state.SetLabel(path == Path::kScalar ? "scalar" : simd::Table().target);
}

void BM_Binary(benchmark::State& state, Opcode op, Path path) {
  const int64_t bytes = state.range(0), n = bytes / 4;
  Buffer a(bytes), b(bytes), out(bytes);
  Fill(a.p, n, -4, 4, 1);
  Fill(b.p, n, -4, 4, 2);
  BinaryKernel k = path == Path::kScalar ? internal::LookupBinary(op, DType::kF32)->fast
                                         : *FindBinaryKernel(op, DType::kF32);
  for (auto _ : state) {
    k(a.p, b.p, out.p, n);
    benchmark::DoNotOptimize(out.p);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 3 * bytes);
  state.SetLabel(path == Path::kScalar ? "scalar" : simd::Table().target);
}

// u32 shifts and JAX's rotate_left (threefry's rounds: x << r | x >> (32 - r), one op in a fused
// loop) on a fused loop's tile of 512 elements (L1), amounts in [0, 32] as a rotation's; XLA's out-of-range rule
// (0 for amounts of 32 or more) included.
void BM_U32Shift(benchmark::State& state, Opcode op) {
  constexpr int64_t n = 512, bytes = n * 4;
  Buffer a(bytes), b(bytes), out(bytes);
  std::mt19937 rng(4);
  uint32_t* x = reinterpret_cast<uint32_t*>(a.p);
  uint32_t* r = reinterpret_cast<uint32_t*>(b.p);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = static_cast<uint32_t>(rng());
    r[i] = static_cast<uint32_t>(rng() % 33);
  }
  BinaryKernel k = op == Opcode::kOr ? *FindRotateLeftKernel(DType::kU32) : *FindBinaryKernel(op, DType::kU32);
  for (auto _ : state) {
    k(a.p, b.p, out.p, n);
    benchmark::DoNotOptimize(out.p);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * n);
  state.SetLabel(simd::Table().target);
}
BENCHMARK_CAPTURE(BM_U32Shift, shift_left, Opcode::kShiftLeft);
BENCHMARK_CAPTURE(BM_U32Shift, shift_right_logical, Opcode::kShiftRightLogical);
BENCHMARK_CAPTURE(BM_U32Shift, rotate_left, Opcode::kOr);

void BM_Memcpy(benchmark::State& state) {
  const int64_t bytes = state.range(0);
  Buffer in(bytes), out(bytes);
  for (auto _ : state) {
    std::memcpy(out.p, in.p, static_cast<size_t>(bytes));
    benchmark::DoNotOptimize(out.p);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 2 * bytes);
}

// tanh(x) * logistic(y) + x * 0.5 on f32[4096, 4096] (64 MiB per operand) the way a fused loop
// runs it: every op a kernel call on a tile of state.range(0) elements (the executor's is 512,
// exec/fusion_plan.h: 2 KiB per f32 temporary, so the temporaries and the input tiles stay in L1).
// bytes_per_second counts x, y and the result once.
void BM_Chain(benchmark::State& state, Path path) {
  const int64_t kTile = state.range(0);
  const int64_t n = int64_t{4096} * 4096, bytes = n * 4;
  Buffer x(bytes), y(bytes), out(bytes), t1(kTile * 4), t2(kTile * 4), half(kTile * 4);
  Fill(x.p, n, -4, 4, 1);
  Fill(y.p, n, -4, 4, 2);
  Fill(half.p, kTile, 0.5f, 0.5f, 3);
  auto unary = [path](Opcode op) {
    return path == Path::kScalar ? internal::LookupUnary(op, DType::kF32)->fast
                                 : *FindUnaryKernel(op, DType::kF32);
  };
  auto binary = [path](Opcode op) {
    return path == Path::kScalar ? internal::LookupBinary(op, DType::kF32)->fast
                                 : *FindBinaryKernel(op, DType::kF32);
  };
  UnaryKernel tanh = unary(Opcode::kTanh), logistic = unary(Opcode::kLogistic);
  BinaryKernel mul = binary(Opcode::kMultiply), add = binary(Opcode::kAdd);
  for (auto _ : state) {
    for (int64_t i = 0; i < n; i += kTile) {
      const std::byte* xi = x.p + i * 4;
      tanh(xi, t1.p, kTile);
      logistic(y.p + i * 4, t2.p, kTile);
      mul(t1.p, t2.p, t1.p, kTile);
      mul(xi, half.p, t2.p, kTile);
      add(t1.p, t2.p, out.p + i * 4, kTile);
    }
    benchmark::DoNotOptimize(out.p);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 3 * bytes);
  state.SetLabel(path == Path::kScalar ? "scalar" : simd::Table().target);
}

// One-element calls, as a sort's comparator makes them: compare LT on f32 pairs.
void BM_CompareOneElement(benchmark::State& state, Path path) {
  constexpr int64_t kPairs = 4096;
  Buffer a(kPairs * 4), b(kPairs * 4), out(kPairs);
  Fill(a.p, kPairs, -4, 4, 1);
  Fill(b.p, kPairs, -4, 4, 2);
  BinaryKernel k =
      path == Path::kScalar
          ? internal::LookupCompare(ComparisonDirection::kLt, ComparisonType::kNone, DType::kF32)->fast
          : *FindCompareKernel(ComparisonDirection::kLt, ComparisonType::kNone, DType::kF32);
  for (auto _ : state) {
    for (int64_t i = 0; i < kPairs; ++i) k(a.p + i * 4, b.p + i * 4, out.p + i, 1);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kPairs);
}
BENCHMARK_CAPTURE(BM_CompareOneElement, scalar, Path::kScalar);
BENCHMARK_CAPTURE(BM_CompareOneElement, vector, Path::kVector);

constexpr int64_t kTileBytes = int64_t{16} << 10;
constexpr int64_t kSmall = int64_t{1} << 20, kLarge = int64_t{64} << 20;

#define XS_UNARY_BENCH(name, op, lo, hi)                                \
  BENCHMARK_CAPTURE(BM_Unary, name##_scalar, op, Path::kScalar, lo, hi) \
      ->Arg(kTileBytes)                                                 \
      ->Arg(kSmall)                                                     \
      ->Arg(kLarge);                                                    \
  BENCHMARK_CAPTURE(BM_Unary, name##_vector, op, Path::kVector, lo, hi) \
      ->Arg(kTileBytes)                                                 \
      ->Arg(kSmall)                                                     \
      ->Arg(kLarge);
XS_UNARY_BENCH(exp, Opcode::kExp, -10.0f, 10.0f)
XS_UNARY_BENCH(tanh, Opcode::kTanh, -5.0f, 5.0f)
XS_UNARY_BENCH(logistic, Opcode::kLogistic, -10.0f, 10.0f)
#undef XS_UNARY_BENCH
#define XS_BINARY_BENCH(name, op)                                                           \
  BENCHMARK_CAPTURE(BM_Binary, name##_scalar, op, Path::kScalar)                            \
      ->Arg(kTileBytes)                                                                     \
      ->Arg(kSmall)                                                                         \
      ->Arg(kLarge);                                                                        \
  BENCHMARK_CAPTURE(BM_Binary, name##_vector, op, Path::kVector)                            \
      ->Arg(kTileBytes)                                                                     \
      ->Arg(kSmall)                                                                         \
      ->Arg(kLarge);
XS_BINARY_BENCH(add, Opcode::kAdd)
XS_BINARY_BENCH(multiply, Opcode::kMultiply)
#undef XS_BINARY_BENCH
// Wall time, as `xshard bench run` reports it: under load a CPU-time rate would overstate the
// bandwidth the executor is compared against (executor_targets.py's chain target).
BENCHMARK(BM_Memcpy)->Arg(kTileBytes)->Arg(kSmall)->Arg(kLarge)->UseRealTime();
BENCHMARK_CAPTURE(BM_Chain, scalar, Path::kScalar)->Arg(512)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Chain, vector, Path::kVector)->Arg(512)->Arg(2048)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace xs::kernels

BENCHMARK_MAIN();
