// FindReduceRange: feeding an array's ranges in order (any cut points; multiples of kSumBlock for
// blocked f32 / f64 sums) gives Reduce's result bit for bit, for kept and reduced inner dims and
// bf16 per-step rounding; blocked sums against exact and double-precision references.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "gtest/gtest.h"
#include "xshard/kernels/elementwise_simd.h"
#include "xshard/kernels/reduce.h"
#include "xshard/kernels/reduce_simd.h"

namespace xs::kernels {
namespace {

TEST(ReduceRange, RangesInOrderEqualReduce) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<double> u(-2, 2);
  struct Case {
    DType t;
    std::vector<int64_t> dims, reduce;
    CombineKind kind;
  };
  const std::vector<Case> cases = {
      {DType::kF32, {7, 33}, {1}, CombineKind::kAdd},
      {DType::kF32, {7, 33}, {0}, CombineKind::kAdd},
      {DType::kBF16, {5, 9, 11}, {0, 2}, CombineKind::kMaximum},
      {DType::kF32, {4, 6, 5}, {1}, CombineKind::kMaximum},
      {DType::kS32, {300}, {0}, CombineKind::kMultiply},
      {DType::kF64, {3, 4}, {}, CombineKind::kMinimum},
  };
  for (const Case& c : cases) {
    Array in(c.t, c.dims);
    for (int64_t i = 0; i < in.num_elements(); ++i) in.SetDouble(i, c.t == DType::kS32 ? (i % 3) - 1 : u(rng));
    Array init(c.t, {});
    init.SetDouble(0, c.kind == CombineKind::kMultiply ? 1 : c.kind == CombineKind::kMaximum ? -10 : 0);
    const Array* ins[] = {&in};
    const Array* inits[] = {&init};
    Combiner comb;
    comb.kind = c.kind;
    std::vector<Array> want = *Reduce(ins, inits, c.reduce, comb);
    ReduceRangeFn fn = *FindReduceRange(c.kind, c.t);
    Array got = want[0];
    const int64_t es = DTypeSize(c.t);
    for (int64_t i = 0; i < got.num_elements(); ++i) std::memcpy(got.data() + i * es, init.data(), es);
    std::vector<char> reduced(c.dims.size(), 0);
    for (int64_t d : c.reduce) reduced[d] = 1;
    std::vector<int64_t> ostride(c.dims.size(), 0);
    int64_t stride = 1;
    for (int d = static_cast<int>(c.dims.size()) - 1; d >= 0; --d) {
      if (!reduced[d]) {
        ostride[d] = stride;
        stride *= c.dims[d];
      }
    }
    for (int64_t begin = 0, step = 1; begin < in.num_elements(); begin += step, step = step * 3 % 17 + 1) {
      const int64_t n = std::min(step, in.num_elements() - begin);
      fn(in.data() + begin * es, got.data(), c.dims, ostride, begin, n);
    }
    EXPECT_EQ(0, std::memcmp(got.data(), want[0].data(), got.byte_size())) << DTypeName(c.t);
  }
  EXPECT_FALSE(FindReduceRange(CombineKind::kAnd, DType::kF32).ok());
}

// Long rows take the 16-lane max / min loop: values known by construction, a NaN anywhere gives
// NaN, an all-zero row's max is +0 when any +0 is in it (Maximum's sign rule), min is -0.
TEST(ReduceRange, LongRowMaxMinKnownValues) {
  const int64_t n = 100;
  Array in(DType::kF32, {4, n});
  for (int64_t i = 0; i < n; ++i) {
    in.SetDouble(0 * n + i, -1000.0 + i);         // row 0: max 99 - 1000 = -901 (last), min -1000
    in.SetDouble(1 * n + i, i == 37 ? 5.5 : -i);  // row 1: max 5.5, min -99
    in.SetDouble(2 * n + i, i == 70 ? std::nan("") : i);
    in.SetDouble(3 * n + i, i % 2 ? -0.0 : 0.0);
  }
  Array init(DType::kF32, {});
  const Array* ins[] = {&in};
  const Array* inits[] = {&init};
  for (CombineKind kind : {CombineKind::kMaximum, CombineKind::kMinimum}) {
    const bool max = kind == CombineKind::kMaximum;
    init.SetDouble(0, max ? -INFINITY : INFINITY);
    Combiner comb;
    comb.kind = kind;
    std::vector<Array> out = *Reduce(ins, inits, std::vector<int64_t>{1}, comb);
    ASSERT_EQ(out[0].num_elements(), 4);
    EXPECT_EQ(out[0].GetDouble(0), max ? -901.0 : -1000.0);
    EXPECT_EQ(out[0].GetDouble(1), max ? 5.5 : -99.0);
    EXPECT_TRUE(std::isnan(out[0].GetDouble(2)));
    EXPECT_EQ(out[0].GetDouble(3), 0.0);
    EXPECT_EQ(std::signbit(out[0].GetDouble(3)), !max);
    // The range form (as fused loops call it) agrees, fed in uneven pieces.
    ReduceRangeFn fn = *FindReduceRange(kind, DType::kF32);
    Array got(DType::kF32, {4});
    for (int64_t i = 0; i < 4; ++i) got.SetDouble(i, init.GetDouble(0));
    for (int64_t begin = 0, step = 7; begin < in.num_elements(); begin += step, step = step * 5 % 97 + 3) {
      const int64_t len = std::min(step, in.num_elements() - begin);
      fn(in.data() + begin * 4, got.data(), {4, n}, {1, 0}, begin, len);
    }
    for (int64_t i = 0; i < 4; ++i) {
      const double g = got.GetDouble(i), w = out[0].GetDouble(i);
      EXPECT_TRUE((std::isnan(g) && std::isnan(w)) || (g == w && std::signbit(g) == std::signbit(w))) << i;
    }
  }
}

// VectorMaxMin on every Highway target this CPU runs, against the one-by-one loop: random rows of
// every length 0..300 (all vector widths' main loops and tails), the extreme planted at the first,
// the last and a middle position, and a NaN planted anywhere (first, vector body, tail) makes it
// decline; an extreme that is a zero is reported (callers check its sign themselves).
template <class T>
void CheckVectorMaxMin() {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-100, 100);
  for (int64_t n = 0; n <= 300; ++n) {
    std::vector<T> x(n);
    for (T& v : x) v = static_cast<T>(u(rng));
    for (int64_t where : {int64_t{0}, n / 2, n - 1}) {
      if (n == 0) break;
      std::vector<T> y = x;
      y[where] = static_cast<T>(where % 2 ? 1e6 : -1e6);
      for (bool max : {true, false}) {
        T want = y[0];
        for (T v : y) want = max ? (v > want ? v : want) : (v < want ? v : want);
        T got = 0;
        ASSERT_TRUE(VectorMaxMin(y.data(), n, max, &got)) << n;
        EXPECT_EQ(got, want) << "n=" << n << " where=" << where << " max=" << max;
      }
      y[(where * 7 + 3) % n] = std::numeric_limits<T>::quiet_NaN();
      T untouched = 42;
      EXPECT_FALSE(VectorMaxMin(y.data(), n, true, &untouched)) << n;
      EXPECT_FALSE(VectorMaxMin(y.data(), n, false, &untouched)) << n;
      EXPECT_EQ(untouched, 42);
    }
  }
  T r = 0;
  EXPECT_FALSE(VectorMaxMin(static_cast<const T*>(nullptr), 0, true, &r));
  std::vector<T> zeros(100, T(-0.0));
  zeros[50] = T(-3);
  ASSERT_TRUE(VectorMaxMin(zeros.data(), 100, true, &r));
  EXPECT_EQ(r, 0);
}

TEST(ReduceRange, VectorMaxMinEqualsSequentialOnEveryTarget) {
  for (int64_t target : simd::SupportedTargets()) {
    simd::UseTargetForTest(target);
    SCOPED_TRACE(simd::TargetName(target));
    CheckVectorMaxMin<float>();
    CheckVectorMaxMin<double>();
  }
  simd::UseTargetForTest(0);
}

// The documented order written out one lane at a time: 16 lanes, the pairwise tree, the blocks'
// sums added to the accumulator in turn.
template <class T>
T ScalarBlockSums(const std::vector<T>& x, T acc) {
  for (size_t b = 0; b < x.size(); b += 64) {
    T lane[16];
    for (int l = 0; l < 16; ++l) lane[l] = x[b + l];
    for (int j = 16; j < 64; j += 16) {
      for (int l = 0; l < 16; ++l) lane[l] += x[b + j + l];
    }
    for (int w = 8; w >= 1; w /= 2) {
      for (int l = 0; l < w; ++l) lane[l] += lane[l + w];
    }
    acc += lane[0];
  }
  return acc;
}

// Values whose sums round differently in almost every other order (magnitudes from 1e-8 to 1e8,
// both signs), so a lane or tree step out of place shows.
template <class T>
void CheckVectorBlockSums() {
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> mant(-1, 1), expo(-8, 8);
  for (int64_t blocks : {1, 2, 3, 7, 40}) {
    std::vector<T> x(static_cast<size_t>(blocks * 64));
    for (T& v : x) v = static_cast<T>(mant(rng) * std::pow(10.0, expo(rng)));
    const T init = static_cast<T>(0.1);
    T got = init;
    VectorBlockSums(x.data(), static_cast<int64_t>(x.size()), &got);
    const T want = ScalarBlockSums(x, init);
    EXPECT_EQ(std::memcmp(&got, &want, sizeof(T)), 0) << blocks << " blocks: " << got << " vs " << want;
  }
}

TEST(ReduceRange, VectorBlockSumsKeepTheLaneAndTreeOrderOnEveryTarget) {
  for (int64_t target : simd::SupportedTargets()) {
    simd::UseTargetForTest(target);
    SCOPED_TRACE(simd::TargetName(target));
    CheckVectorBlockSums<float>();
    CheckVectorBlockSums<double>();
  }
  simd::UseTargetForTest(0);
}

// Rows of a multiple of kSumBlock elements sum in blocks: integer-valued rows (every partial sum
// exact in f32) give the hand-computed sum whatever the order, and ranges cut at multiples of
// kSumBlock (as fused tiles are) give Reduce's value bit for bit, for f32 and f64.
TEST(ReduceRange, BlockedRowSumsKnownValuesAndBlockCuts) {
  for (DType t : {DType::kF32, DType::kF64}) {
    const int64_t rows = 3, n = 4 * kSumBlock;
    Array in(t, {rows, n});
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t i = 0; i < n; ++i) in.SetDouble(r * n + i, r == 0 ? i : r == 1 ? (i % 7) - 3 : 0.5);
    }
    Array init(t, {});
    init.SetDouble(0, 10);
    const Array* ins[] = {&in};
    const Array* inits[] = {&init};
    Combiner comb;
    comb.kind = CombineKind::kAdd;
    std::vector<Array> out = *Reduce(ins, inits, std::vector<int64_t>{1}, comb);
    // Row 0: 0 + 1 + ... + 255 = 32640; row 1: 36 full cycles of (-3..3) sum to 0, then 0..3 of the
    // next cycle (i % 7 = 0..3: -3 -2 -1 0) = -6; row 2: 256 x 0.5 = 128; each plus the init 10.
    EXPECT_EQ(out[0].GetDouble(0), 32650.0) << DTypeName(t);
    EXPECT_EQ(out[0].GetDouble(1), 4.0) << DTypeName(t);
    EXPECT_EQ(out[0].GetDouble(2), 138.0) << DTypeName(t);
  }
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(-1, 1);
  for (DType t : {DType::kF32, DType::kF64}) {
    const std::vector<int64_t> dims = {5, 3 * kSumBlock};
    Array in(t, dims);
    std::vector<double> exact(dims[0], 0.0);
    for (int64_t i = 0; i < in.num_elements(); ++i) {
      in.SetDouble(i, u(rng));
      exact[i / dims[1]] += in.GetDouble(i);
    }
    Array init(t, {});
    const Array* ins[] = {&in};
    const Array* inits[] = {&init};
    Combiner comb;
    comb.kind = CombineKind::kAdd;
    std::vector<Array> want = *Reduce(ins, inits, std::vector<int64_t>{1}, comb);
    for (int64_t r = 0; r < dims[0]; ++r) EXPECT_NEAR(want[0].GetDouble(r), exact[r], 1e-4) << r;
    ReduceRangeFn fn = *FindReduceRange(CombineKind::kAdd, t);
    Array got(t, {dims[0]});
    const int64_t es = DTypeSize(t);
    for (int64_t begin = 0, blocks = 1; begin < in.num_elements(); begin += blocks * kSumBlock, blocks = blocks % 4 + 1) {
      const int64_t len = std::min(blocks * kSumBlock, in.num_elements() - begin);
      fn(in.data() + begin * es, got.data(), dims, {1, 0}, begin, len);
    }
    EXPECT_EQ(0, std::memcmp(got.data(), want[0].data(), got.byte_size())) << DTypeName(t);
  }
}

}  // namespace
}  // namespace xs::kernels
