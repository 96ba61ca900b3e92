// Seed 004's numerics check with the numerics API (core/numerics.h): a bf16 GEMM,
// inputs bf16[2048,2048] @ weights bf16[2048,1024] drawn from N(0, 1), computed four ways and each
// compared with a more precise result, with seed 004's threshold 0.1, its tolerances
// (atol = rtol = 1e-2) and its 2 x 2 quadrants:
//   1. f32 accumulation, bf16 result (what jnp.matmul of two bf16 arrays returns: seed 004's
//      `basic_matmul`) against the f32 result: the seed measured 15.81 % of elements off by > 0.1.
//      The accumulation is f32 here; the error is the one rounding of each sum (|x| ~ 45) to bf16.
//   2. seed 004's `xla_matmul2` on the 2 x 2 mesh: each device's partial product over its half of
//      k rounded to bf16, then psum over 'y' in bf16 (rounded again), against the f32 result.
//   3. bf16 accumulation (every partial sum rounded to bf16), first 64 rows only (slow loop).
//   4. the fix: f32 accumulation and an f32 result (seed 004's `xla_matmul3` / Pallas kernel with
//      an f32 scratch accumulator) against an f64 reference.
// Exits 1 when a measurement leaves the range the seed and the arithmetic predict.
#include <cstdio>
#include <random>

#include "xshard/core/numerics.h"
#include "xshard/kernels/dot.h"

namespace {

using xs::Array;
using xs::DType;

Array RandomBf16(std::vector<int64_t> dims, uint64_t seed) {
  Array a(DType::kBF16, std::move(dims));
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (xs::BFloat16& v : a.values<xs::BFloat16>()) v = xs::FloatToBFloat16(normal(gen));
  return a;
}

// lhs @ rhs with the operands converted to `result` first, accumulating in `result`.
Array MatMul(const Array& lhs, const Array& rhs, DType result) {
  xs::DotDimensionNumbers d;
  d.lhs_contracting = {1};
  d.rhs_contracting = {0};
  return xs::kernels::DotGeneral(lhs, rhs, d, result).value();
}

// Rows [0, rows) of lhs @ rhs with a bf16 accumulator: acc = bf16(acc + a * b) (the product of
// two bf16 values is exact in f32).
Array MatMulBf16Accumulation(const Array& lhs, const Array& rhs, int64_t rows) {
  const int64_t k = lhs.dims()[1], n = rhs.dims()[1];
  const auto a = lhs.values<xs::BFloat16>(), b = rhs.values<xs::BFloat16>();
  Array out(DType::kBF16, {rows, n});
  auto o = out.values<xs::BFloat16>();
  std::vector<float> bf(b.size());
  for (size_t i = 0; i < b.size(); ++i) bf[i] = xs::BFloat16ToFloat(b[i]);
  for (int64_t i = 0; i < rows; ++i) {
    std::vector<float> acc(n, 0.0f);
    for (int64_t p = 0; p < k; ++p) {
      const float x = xs::BFloat16ToFloat(a[i * k + p]);
      for (int64_t j = 0; j < n; ++j) {
        acc[j] = xs::BFloat16ToFloat(xs::FloatToBFloat16(acc[j] + x * bf[p * n + j]));
      }
    }
    for (int64_t j = 0; j < n; ++j) o[i * n + j] = xs::FloatToBFloat16(acc[j]);
  }
  return out;
}

xs::NumericsReport Report(const char* title, const Array& got, const Array& want,
                          std::vector<int64_t> blocks = {2, 2}) {
  xs::NumericsOptions options;
  options.atol = options.rtol = 1e-2;  // seed 004's allclose tolerances
  options.threshold = 0.1;             // seed 004's "% > 0.1"
  options.blocks = std::move(blocks);
  xs::NumericsReport r = xs::CompareNumerics(got, want, options).value();
  std::printf("== %s\n%s\n", title, xs::FormatNumericsReport(r).c_str());
  return r;
}

}  // namespace

int main() {
  const int64_t m = 2048, k = 2048, n = 1024;
  const Array inputs = RandomBf16({m, k}, 0), weights = RandomBf16({k, n}, 1);
  const Array f32 = MatMul(inputs, weights, DType::kF32);
  const Array f64 = MatMul(inputs, weights, DType::kF64);

  // 1. The seed's comparison: bf16 result of an f32-accumulated product against the f32 result.
  const Array bf16_out = f32.Convert(DType::kBF16);
  const xs::NumericsReport seed = Report("bf16 result (f32 accumulation) vs f32 result", bf16_out, f32);

  // 2. xla_matmul2 on the 2 x 2 mesh: device (x, y) multiplies its rows of inputs, columns
  //    [1024y, 1024y + 1024) of k, by the same rows of the gathered weights, in bf16; psum over y.
  Array partial[2];
  for (int64_t y = 0; y < 2; ++y) {
    partial[y] = MatMul(inputs.Slice({0, y * k / 2}, {m, k / 2}),
                        weights.Slice({y * k / 2, 0}, {k / 2, n}), DType::kF32)
                     .Convert(DType::kBF16);
  }
  Array psum(DType::kBF16, {m, n});
  for (int64_t i = 0; i < m * n; ++i) {
    psum.values<xs::BFloat16>()[i] = xs::FloatToBFloat16(
        xs::BFloat16ToFloat(partial[0].values<xs::BFloat16>()[i]) +
        xs::BFloat16ToFloat(partial[1].values<xs::BFloat16>()[i]));
  }
  const xs::NumericsReport mesh = Report("xla_matmul2: bf16 partials, bf16 psum over 'y' vs f32 result", psum, f32);

  // 3. A bf16 accumulator, on the first 64 rows.
  const int64_t rows = 64;
  const xs::NumericsReport acc = Report("bf16 accumulation, rows 0:64, vs f32 result",
                                        MatMulBf16Accumulation(inputs, weights, rows),
                                        f32.Slice({0, 0}, {rows, n}), {1, 2});

  // 4. The fix: f32 accumulation, f32 result, against f64.
  const xs::NumericsReport fixed = Report("f32 accumulation, f32 result vs f64 reference", f32, f64);

  std::printf("elements off by > 0.1: bf16 result %.2f %% (seed 004: 15.81 %%), bf16 psum %.2f %%, "
              "bf16 accumulation %.2f %%, f32 accumulation %.2f %%\n",
              seed.error_percent(), mesh.error_percent(), acc.error_percent(), fixed.error_percent());
  bool ok = seed.error_percent() > 14 && seed.error_percent() < 18 && seed.allclose;
  ok = ok && mesh.error_percent() > seed.error_percent();
  ok = ok && acc.error_percent() > 50 && !acc.allclose;
  ok = ok && fixed.errors == 0 && fixed.allclose;
  if (!ok) {
    std::printf("FAILED: a measurement is outside the expected range\n");
    return 1;
  }
  return 0;
}
