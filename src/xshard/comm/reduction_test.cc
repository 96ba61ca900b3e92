// Reduction kernels: each dtype family against values worked out by hand.
#include "xshard/comm/reduction.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <complex>
#include <limits>
#include <type_traits>

#include "xshard/core/array.h"

namespace xs {
namespace {

using ::testing::HasSubstr;

template <typename T>
std::vector<T> CombineOnce(ReductionKind kind, std::vector<T> a, const std::vector<T>& b) {
  Array x = Array::FromVector<T>({static_cast<int64_t>(a.size())}, a);
  const Array y = Array::FromVector<T>({static_cast<int64_t>(b.size())}, b);
  Combine(kind, DTypeOf<T>, x.data(), x.data(), y.data(), x.num_elements());
  auto v = x.values<T>();
  return std::vector<T>(v.begin(), v.end());
}

TEST(ReductionTest, IntegersWrapAndTakeBitwiseAndOr) {
  EXPECT_EQ(CombineOnce<int8_t>(ReductionKind::kSum, {127, -128}, {1, -1}),
            (std::vector<int8_t>{-128, 127}));
  EXPECT_EQ(CombineOnce<int32_t>(ReductionKind::kProduct, {6, -3}, {7, 5}),
            (std::vector<int32_t>{42, -15}));
  EXPECT_EQ(CombineOnce<uint16_t>(ReductionKind::kAnd, {0b1100, 0xffff}, {0b1010, 0x00f0}),
            (std::vector<uint16_t>{0b1000, 0x00f0}));
  EXPECT_EQ(CombineOnce<int64_t>(ReductionKind::kOr, {0b1100}, {0b0011}),
            (std::vector<int64_t>{15}));
  EXPECT_EQ(CombineOnce<int32_t>(ReductionKind::kMin, {3, -5}, {-2, 4}),
            (std::vector<int32_t>{-2, -5}));
  EXPECT_EQ(CombineOnce<uint64_t>(ReductionKind::kMax, {3, 9}, {7, 1}),
            (std::vector<uint64_t>{7, 9}));
}

TEST(ReductionTest, FloatMinMaxPropagateNan) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto mx = CombineOnce<float>(ReductionKind::kMax, {1.0f, nan, -0.5f}, {nan, 2.0f, -1.5f});
  EXPECT_TRUE(std::isnan(mx[0]));
  EXPECT_TRUE(std::isnan(mx[1]));
  EXPECT_EQ(mx[2], -0.5f);
  auto mn = CombineOnce<double>(ReductionKind::kMin, {1.0, 3.0}, {std::nan(""), 2.0});
  EXPECT_TRUE(std::isnan(mn[0]));
  EXPECT_EQ(mn[1], 2.0);
}

TEST(ReductionTest, Bf16AndF16RoundAfterEachCombine) {
  // bf16 has 8 significant bits: 256 + 1 = 257 is a tie and rounds to even, 256.
  auto b = CombineOnce<BFloat16>(ReductionKind::kSum, {FloatToBFloat16(256), FloatToBFloat16(1.5f)},
                         {FloatToBFloat16(1), FloatToBFloat16(2.25f)});
  EXPECT_EQ(BFloat16ToFloat(b[0]), 256.0f);
  EXPECT_EQ(BFloat16ToFloat(b[1]), 3.75f);
  // f16 has 11 significant bits: 2048 + 1 rounds to 2048; 3 * 0.5 is exact.
  auto h = CombineOnce<Half>(ReductionKind::kSum, {FloatToHalf(2048), FloatToHalf(3)},
                     {FloatToHalf(1), FloatToHalf(0.5f)});
  EXPECT_EQ(HalfToFloat(h[0]), 2048.0f);
  EXPECT_EQ(HalfToFloat(h[1]), 3.5f);
  auto p = CombineOnce<Half>(ReductionKind::kProduct, {FloatToHalf(3)}, {FloatToHalf(0.5f)});
  EXPECT_EQ(HalfToFloat(p[0]), 1.5f);
}

TEST(ReductionTest, ComplexSumsAndMultiplies) {
  using C = std::complex<double>;
  EXPECT_EQ(CombineOnce<C>(ReductionKind::kSum, {C(1, 2)}, {C(3, -1)}), (std::vector<C>{C(4, 1)}));
  EXPECT_EQ(CombineOnce<C>(ReductionKind::kProduct, {C(1, 2)}, {C(3, -1)}),
            (std::vector<C>{C(5, 5)}));
}

TEST(ReductionTest, PredSumIsOrAndProductIsAnd) {
  Array a = Array::FromVector<bool>({4}, {false, false, true, true});
  const Array b = Array::FromVector<bool>({4}, {false, true, false, true});
  Array s(DType::kPred, {4}), p(DType::kPred, {4});
  Combine(ReductionKind::kSum, DType::kPred, s.data(), a.data(), b.data(), 4);
  Combine(ReductionKind::kProduct, DType::kPred, p.data(), a.data(), b.data(), 4);
  EXPECT_EQ(s, Array::FromVector<bool>({4}, {false, true, true, true}));
  EXPECT_EQ(p, Array::FromVector<bool>({4}, {false, false, false, true}));
}

TEST(ReductionTest, ReduceManyFoldsEverySourceAcrossTiles) {
  // 10000 floats span several 16 KiB tiles.
  const int64_t n = 10000;
  std::vector<Array> srcs;
  for (int k = 0; k < 5; ++k) {
    Array a(DType::kF32, {n});
    for (int64_t i = 0; i < n; ++i) a.values<float>()[i] = static_cast<float>(k * 1000 + i % 7);
    srcs.push_back(std::move(a));
  }
  std::vector<const std::byte*> ptrs;
  for (const Array& a : srcs) ptrs.push_back(a.data());
  Array out(DType::kF32, {n});
  ReduceMany(ReductionKind::kSum, DType::kF32, out.data(), ptrs, n);
  for (int64_t i = 0; i < n; ++i) {
    // sum over k of (1000k + i%7) = 10000 + 5 * (i % 7)
    ASSERT_EQ(out.values<float>()[i], 10000.0f + 5 * (i % 7)) << i;
  }
}

// f32 / f64 sums and products (vector kernels) equal the one-by-one IEEE operations, bit for
// bit, in place and not, at every length 0..100 (vector bodies and tails); ReduceMany over three
// sources of 5000 elements (several 16 KiB tiles) is ((s0 + s1) + s2) per element.
template <typename T>
void CheckFloatSumProduct() {
  std::vector<T> a(100), b(100);
  for (int i = 0; i < 100; ++i) {
    a[i] = static_cast<T>(std::sin(i * 1.7) * 1e3);
    b[i] = static_cast<T>(std::cos(i * 0.3) / 7);
  }
  for (ReductionKind kind : {ReductionKind::kSum, ReductionKind::kProduct}) {
    for (int n = 0; n <= 100; ++n) {
      std::vector<T> out(n + 1, T(-1)), in_place(a.begin(), a.begin() + n);
      Combine(kind, DTypeOf<T>, reinterpret_cast<std::byte*>(out.data()), reinterpret_cast<const std::byte*>(a.data()),
              reinterpret_cast<const std::byte*>(b.data()), n);
      Combine(kind, DTypeOf<T>, reinterpret_cast<std::byte*>(in_place.data()),
              reinterpret_cast<const std::byte*>(in_place.data()), reinterpret_cast<const std::byte*>(b.data()), n);
      for (int i = 0; i < n; ++i) {
        const T want = kind == ReductionKind::kSum ? a[i] + b[i] : a[i] * b[i];
        ASSERT_EQ(out[i], want) << n << " " << i;
        ASSERT_EQ(in_place[i], want) << n << " " << i;
      }
      ASSERT_EQ(out[n], T(-1)) << "wrote past the end, n = " << n;
    }
  }
  const int64_t count = 5000;
  std::vector<T> s0(count), s1(count), s2(count), dst(count);
  for (int64_t i = 0; i < count; ++i) {
    s0[i] = static_cast<T>(i) / 3;
    s1[i] = static_cast<T>(std::sqrt(static_cast<double>(i)));
    s2[i] = static_cast<T>(-i) / 7;
  }
  const std::byte* srcs[] = {reinterpret_cast<const std::byte*>(s0.data()), reinterpret_cast<const std::byte*>(s1.data()),
                             reinterpret_cast<const std::byte*>(s2.data())};
  ReduceMany(ReductionKind::kSum, DTypeOf<T>, reinterpret_cast<std::byte*>(dst.data()), srcs, count);
  for (int64_t i = 0; i < count; ++i) ASSERT_EQ(dst[i], (s0[i] + s1[i]) + s2[i]) << i;
}

TEST(ReductionTest, FloatSumsAndProductsAreTheIeeeOperationsBitForBit) {
  CheckFloatSumProduct<float>();
  CheckFloatSumProduct<double>();
}

// bf16 / f16 sums and products (vector kernels) equal widening, the f32 operation and one
// round-to-nearest-even, bit for bit, over every 16-bit pattern (NaNs, infinities, subnormals,
// ties) against a spread of second operands, at lengths that end in vector tails.
template <typename H>
void CheckHalfSumProduct(float (*to_f32)(H), H (*from_f32)(float)) {
  std::vector<H> a, b;
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    a.push_back(std::bit_cast<H>(static_cast<uint16_t>(bits)));
    b.push_back(std::bit_cast<H>(static_cast<uint16_t>((bits * 40503u + 12345u) & 0xffffu)));
  }
  const DType dtype = std::is_same_v<H, BFloat16> ? DType::kBF16 : DType::kF16;
  for (ReductionKind kind : {ReductionKind::kSum, ReductionKind::kProduct}) {
    for (int64_t n : {int64_t{65536}, int64_t{65533}, int64_t{7}}) {
      std::vector<H> out(n);
      Combine(kind, dtype, reinterpret_cast<std::byte*>(out.data()), reinterpret_cast<const std::byte*>(a.data()),
              reinterpret_cast<const std::byte*>(b.data()), n);
      for (int64_t i = 0; i < n; ++i) {
        const float x = to_f32(a[i]), y = to_f32(b[i]);
        const H want = from_f32(kind == ReductionKind::kSum ? x + y : x * y);
        const uint16_t got_bits = std::bit_cast<uint16_t>(out[i]), want_bits = std::bit_cast<uint16_t>(want);
        if (std::isnan(to_f32(want))) {
          ASSERT_TRUE(std::isnan(to_f32(out[i]))) << i;
        } else {
          ASSERT_EQ(got_bits, want_bits) << "n=" << n << " i=" << i << " x=" << x << " y=" << y;
        }
      }
    }
  }
}

TEST(ReductionTest, HalfSumsAndProductsRoundOnceBitForBit) {
  CheckHalfSumProduct<BFloat16>([](BFloat16 h) { return BFloat16ToFloat(h); },
                                [](float f) { return FloatToBFloat16(f); });
  CheckHalfSumProduct<Half>([](Half h) { return HalfToFloat(h); }, [](float f) { return FloatToHalf(f); });
}

TEST(ReductionTest, CheckNamesTheReducerAndType) {
  EXPECT_EQ(CheckReduction(ReductionKind::kAnd, DType::kF32, "psum"),
            InvalidArgument("psum: reduction 'and' is not defined for f32; floating-point values "
                            "take sum, product, min or max"));
  EXPECT_EQ(CheckReduction(ReductionKind::kMax, DType::kC64, "all-reduce"),
            InvalidArgument("all-reduce: reduction 'max' is not defined for c64; complex values "
                            "take sum or product"));
  EXPECT_TRUE(CheckReduction(ReductionKind::kSum, DType::kF8E5M2, "ar").ok());
  EXPECT_TRUE(CheckReduction(ReductionKind::kOr, DType::kS4, "ar").ok());
  EXPECT_EQ(CheckReduction(ReductionKind::kAnd, DType::kF8E4M3FN, "ar"),
            InvalidArgument("ar: reduction 'and' is not defined for f8e4m3fn; floating-point values "
                            "take sum, product, min or max"));
  EXPECT_TRUE(CheckReduction(ReductionKind::kOr, DType::kU8, "ar").ok());
  EXPECT_TRUE(CheckReduction(ReductionKind::kMin, DType::kBF16, "ar").ok());
}

Array NarrowArray(DType t, const std::vector<double>& v) {
  Array a(Shape(t, {static_cast<int64_t>(v.size())}));
  for (size_t i = 0; i < v.size(); ++i) a.SetDouble(static_cast<int64_t>(i), v[i]);
  return a;
}

TEST(ReductionTest, Bf16SumsAccumulateInF32AndRoundOnce) {
  // One 256 and fifteen 1s: 271 in f32, rounded once to bf16 (spacing 2 at 256: a tie, to even
  // 272). Rounding every step would stay at 256. Max is exact in bf16; f16 sums stay f16 (XLA's
  // CPU backend promotes bf16 sums and products only).
  std::vector<Array> parts;
  parts.push_back(Array::Full(DType::kBF16, {3}, 256.0));
  for (int i = 0; i < 15; ++i) parts.push_back(Array::Full(DType::kBF16, {3}, 1.0));
  std::vector<const std::byte*> srcs;
  for (const Array& p : parts) srcs.push_back(p.data());
  Array out(Shape(DType::kBF16, {3}));
  ReduceMany(ReductionKind::kSum, DType::kBF16, out.data(), srcs, 3);
  for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(out.GetDouble(i), 272.0);
  ReduceMany(ReductionKind::kMax, DType::kBF16, out.data(), srcs, 3);
  EXPECT_EQ(out.GetDouble(0), 256.0);
  std::vector<Array> halves;
  halves.push_back(Array::Full(DType::kF16, {1}, 2048.0));
  for (int i = 0; i < 4; ++i) halves.push_back(Array::Full(DType::kF16, {1}, 1.0));
  std::vector<const std::byte*> hsrcs;
  for (const Array& p : halves) hsrcs.push_back(p.data());
  Array hout(Shape(DType::kF16, {1}));
  ReduceMany(ReductionKind::kSum, DType::kF16, hout.data(), hsrcs, 1);
  EXPECT_EQ(hout.GetDouble(0), 2048.0);  // f16 spacing is 2 at 2048: each + 1 ties back to even
}

// Past the first 4096-element tile of the widened loop every element still reduces its own
// sources: element i of source j holds (i % 61) + j, so the sum of three is 3 (i % 61) + 3 (exact
// in bf16 and f16: at most 183).
TEST(ReductionTest, WidenedReductionsOfManyTilesReduceEveryElementInPlace) {
  for (DType t : {DType::kBF16, DType::kF16}) {
    const int64_t n = 3 * 4096 + 17;
    std::vector<Array> parts;
    for (int j = 0; j < 3; ++j) {
      Array a(Shape(t, {n}));
      for (int64_t i = 0; i < n; ++i) a.SetDouble(i, static_cast<double>(i % 61 + j));
      parts.push_back(std::move(a));
    }
    std::vector<const std::byte*> srcs;
    for (const Array& p : parts) srcs.push_back(p.data());
    Array out(Shape(t, {n}));
    ReduceMany(ReductionKind::kSum, t, out.data(), srcs, n);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(out.GetDouble(i), static_cast<double>(3 * (i % 61) + 3)) << DTypeName(t) << " element " << i;
    }
  }
}

TEST(ReductionTest, NarrowFloatsReduceInF16AndRoundOnceCombinesRoundEachStep) {
  // e4m3fn spacing is 2 at 16: ReduceMany adds 16 + 0.5 + 0.5 + 0.5 + 0.5 = 18 in f16, as XLA's
  // CPU backend runs the all-reduce, then rounds once (18); pairwise Combine rounds each step
  // back to f8 (16.5 -> 16 every time).
  std::vector<Array> parts = {NarrowArray(DType::kF8E4M3FN, {16, 1}), NarrowArray(DType::kF8E4M3FN, {0.5, 1}),
                              NarrowArray(DType::kF8E4M3FN, {0.5, 1}), NarrowArray(DType::kF8E4M3FN, {0.5, 1}),
                              NarrowArray(DType::kF8E4M3FN, {0.5, -448})};
  std::vector<const std::byte*> srcs;
  for (const Array& p : parts) srcs.push_back(p.data());
  Array out(Shape(DType::kF8E4M3FN, {2}));
  ReduceMany(ReductionKind::kSum, DType::kF8E4M3FN, out.data(), srcs, 2);
  EXPECT_EQ(out.GetDouble(0), 18.0);
  EXPECT_EQ(out.GetDouble(1), -448.0);  // 4 - 448 = -444: the nearest e4m3fn is -448 (spacing 32)
  Array acc = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) {
    Combine(ReductionKind::kSum, DType::kF8E4M3FN, acc.data(), acc.data(), parts[i].data(), 2);
  }
  EXPECT_EQ(acc.GetDouble(0), 16.0);
  // s4 wraps: 7 + 7 = -2; max of sign-extended values.
  Array a = NarrowArray(DType::kS4, {7, -8}), b = NarrowArray(DType::kS4, {7, 3});
  Combine(ReductionKind::kSum, DType::kS4, a.data(), a.data(), b.data(), 2);
  EXPECT_EQ(a.GetDouble(0), -2.0);
  EXPECT_EQ(a.GetDouble(1), -5.0);
  Combine(ReductionKind::kMax, DType::kS4, a.data(), a.data(), b.data(), 2);
  EXPECT_EQ(a.GetDouble(0), 7.0);
  EXPECT_EQ(a.GetDouble(1), 3.0);
}

}  // namespace
}  // namespace xs
