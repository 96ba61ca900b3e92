// Tests of the linear algebra, fft, topk, random, batch-norm and ragged-dot kernels against hand
// computations, naive transforms and known-answer vectors.
#include <cmath>
#include <random>
#include <complex>
#include <numbers>

#include "gtest/gtest.h"
#include "xshard/kernels/batch_norm.h"
#include "xshard/kernels/fft.h"
#include "xshard/kernels/linalg.h"
#include "xshard/kernels/ragged_dot.h"
#include "xshard/kernels/random.h"
#include "xshard/kernels/topk.h"

namespace xs::kernels {
namespace {

using C = std::complex<float>;

std::vector<double> Doubles(const Array& a) {
  std::vector<double> v;
  for (int64_t i = 0; i < a.num_elements(); ++i) v.push_back(a.GetDouble(i));
  return v;
}

void ExpectNear(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

void ExpectComplexNear(const Array& got, const std::vector<std::complex<double>>& want, double tol) {
  Array w = got.Convert(DType::kC128);
  auto v = w.values<std::complex<double>>();
  ASSERT_EQ(v.size(), want.size());
  for (size_t i = 0; i < v.size(); ++i) {
    EXPECT_NEAR(v[i].real(), want[i].real(), tol) << "element " << i;
    EXPECT_NEAR(v[i].imag(), want[i].imag(), tol) << "element " << i;
  }
}

TEST(Cholesky, FactorsLowerAndUpperOfABatch) {
  Array a = Array::FromVector<float>({2, 2, 2}, {4, 2, 2, 3, 9, 3, 3, 5});
  StatusOr<Array> lower = Cholesky(a, true);
  ASSERT_TRUE(lower.ok()) << lower.status().ToString();
  // [[4,2],[2,3]] = L L^T with L = [[2,0],[1,sqrt 2]]; [[9,3],[3,5]]: L = [[3,0],[1,2]].
  ExpectNear(Doubles(*lower), {2, 0, 1, std::sqrt(2.0), 3, 0, 1, 2}, 1e-6);
  StatusOr<Array> upper = Cholesky(a, false);
  ASSERT_TRUE(upper.ok());
  ExpectNear(Doubles(*upper), {2, 1, 0, std::sqrt(2.0), 3, 1, 0, 2}, 1e-6);
}

TEST(Cholesky, ReadsOnlyTheNamedTriangle) {
  // The upper triangle holds junk that a lower factorization must ignore.
  Array a = Array::FromVector<double>({2, 2}, {4, 1000, 2, 3});
  StatusOr<Array> l = Cholesky(a, true);
  ASSERT_TRUE(l.ok());
  ExpectNear(Doubles(*l), {2, 0, 1, std::sqrt(2.0)}, 1e-12);
}

TEST(Cholesky, NotPositiveDefiniteGivesNaN) {
  StatusOr<Array> l = Cholesky(Array::FromVector<float>({2, 2}, {1, 2, 2, 1}), true);
  ASSERT_TRUE(l.ok());
  for (double x : Doubles(*l)) EXPECT_TRUE(std::isnan(x));
}

TEST(Cholesky, ComplexHermitian) {
  // [[4, 2i], [-2i, 3]] = L L^H with L = [[2, 0], [-i, sqrt 2]].
  Array a = Array::FromVector<C>({2, 2}, {C(4, 0), C(0, 2), C(0, -2), C(3, 0)});
  StatusOr<Array> l = Cholesky(a, true);
  ASSERT_TRUE(l.ok());
  ExpectComplexNear(*l, {{2, 0}, {0, 0}, {0, -1}, {std::sqrt(2.0), 0}}, 1e-6);
}

TEST(Cholesky, RejectsNonSquareAndIntegers) {
  EXPECT_FALSE(Cholesky(Array(DType::kF32, {2, 3}), true).ok());
  EXPECT_FALSE(Cholesky(Array(DType::kS32, {2, 2}), true).ok());
}

TEST(TriangularSolve, LeftLowerAndTransposed) {
  Array a = Array::FromVector<float>({2, 2}, {2, 0, 1, 4});
  TriangularSolveOptions o;
  StatusOr<Array> x = TriangularSolve(a, Array::FromVector<float>({2, 1}, {2, 9}), o);
  ASSERT_TRUE(x.ok()) << x.status().ToString();
  ExpectNear(Doubles(*x), {1, 2}, 1e-6);  // 2*1 = 2, 1*1 + 4*2 = 9
  o.transpose_a = TransposeA::kTranspose;  // [[2,1],[0,4]] x = [4, 8]
  x = TriangularSolve(a, Array::FromVector<float>({2, 1}, {4, 8}), o);
  ASSERT_TRUE(x.ok());
  ExpectNear(Doubles(*x), {1, 2}, 1e-6);
}

TEST(TriangularSolve, RightSideUpperAndUnitDiagonal) {
  // x a = b with a = [[2,1],[0,4]] (upper): x = [1, 2] gives [2, 1 + 8].
  Array a = Array::FromVector<double>({2, 2}, {2, 1, 0, 4});
  TriangularSolveOptions o;
  o.left_side = false;
  o.lower = false;
  StatusOr<Array> x = TriangularSolve(a, Array::FromVector<double>({1, 2}, {2, 9}), o);
  ASSERT_TRUE(x.ok()) << x.status().ToString();
  ExpectNear(Doubles(*x), {1, 2}, 1e-12);
  // Unit diagonal: [[1,0],[3,1]] x = [1, 5] -> [1, 2]; the stored diagonal is ignored.
  TriangularSolveOptions u;
  u.left_side = true;
  u.unit_diagonal = true;
  x = TriangularSolve(Array::FromVector<double>({2, 2}, {5, 0, 3, 7}), Array::FromVector<double>({2, 1}, {1, 5}), u);
  ASSERT_TRUE(x.ok());
  ExpectNear(Doubles(*x), {1, 2}, 1e-12);
}

TEST(TriangularSolve, RejectsMismatchedSizes) {
  TriangularSolveOptions o;
  EXPECT_FALSE(TriangularSolve(Array(DType::kF32, {2, 2}), Array(DType::kF32, {3, 1}), o).ok());
  EXPECT_FALSE(TriangularSolve(Array(DType::kF32, {2, 2}), Array(DType::kF64, {2, 1}), o).ok());
}

// Direct O(n^2) DFT of one line: the independent reference for the fast transform.
std::vector<std::complex<double>> NaiveDft(const std::vector<std::complex<double>>& x, int sign) {
  const size_t n = x.size();
  std::vector<std::complex<double>> y(n);
  for (size_t k = 0; k < n; ++k) {
    for (size_t j = 0; j < n; ++j) {
      y[k] += x[j] * std::polar(1.0, sign * 2 * std::numbers::pi * double(j * k % n) / double(n));
    }
  }
  return y;
}

TEST(Fft, HandComputedLengthsFourAndThree) {
  StatusOr<Array> y = Fft(Array::FromVector<C>({4}, {1, 2, 3, 4}), FftType::kFft, {4});
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  ExpectComplexNear(*y, {{10, 0}, {-2, 2}, {-2, 0}, {-2, -2}}, 1e-5);
  y = Fft(Array::FromVector<C>({3}, {1, 2, 3}), FftType::kFft, {3});
  ASSERT_TRUE(y.ok());
  ExpectComplexNear(*y, {{6, 0}, {-1.5, std::sqrt(3.0) / 2}, {-1.5, -std::sqrt(3.0) / 2}}, 1e-5);
}

TEST(Fft, OddLengthsMatchTheNaiveDftAndInvert) {
  for (int n : {1, 5, 7, 12, 17, 30}) {
    std::vector<std::complex<double>> x;
    std::vector<std::complex<double>> xd;
    for (int i = 0; i < n; ++i) xd.push_back({std::sin(i * 1.3), std::cos(i * 0.7)});
    Array a(Shape(DType::kC128, {n}));
    std::copy(xd.begin(), xd.end(), a.values<std::complex<double>>().begin());
    StatusOr<Array> y = Fft(a, FftType::kFft, {n});
    ASSERT_TRUE(y.ok());
    ExpectComplexNear(*y, NaiveDft(xd, -1), 1e-9 * n);
    StatusOr<Array> back = Fft(*y, FftType::kIfft, {n});
    ASSERT_TRUE(back.ok());
    ExpectComplexNear(*back, xd, 1e-9 * n);
  }
}

TEST(Fft, TwoDimensionalIsSeparable) {
  // 2x3 transform = DFT along rows then columns.
  std::vector<std::complex<double>> x = {{1, 0}, {2, 1}, {0, -1}, {3, 0}, {-1, 2}, {0.5, 0}};
  Array a(Shape(DType::kC128, {2, 3}));
  std::copy(x.begin(), x.end(), a.values<std::complex<double>>().begin());
  std::vector<std::complex<double>> want(6);
  for (int r = 0; r < 2; ++r) {
    auto row = NaiveDft({x[r * 3], x[r * 3 + 1], x[r * 3 + 2]}, -1);
    for (int c = 0; c < 3; ++c) want[r * 3 + c] = row[c];
  }
  for (int c = 0; c < 3; ++c) {
    auto col = NaiveDft({want[c], want[3 + c]}, -1);
    want[c] = col[0];
    want[3 + c] = col[1];
  }
  StatusOr<Array> y = Fft(a, FftType::kFft, {2, 3});
  ASSERT_TRUE(y.ok());
  ExpectComplexNear(*y, want, 1e-9);
}

TEST(Fft, RealTransformsRoundTrip) {
  StatusOr<Array> y = Fft(Array::FromVector<float>({4}, {1, 2, 3, 4}), FftType::kRfft, {4});
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  EXPECT_EQ(y->dtype(), DType::kC64);
  ExpectComplexNear(*y, {{10, 0}, {-2, 2}, {-2, 0}}, 1e-5);
  for (int n : {4, 5}) {
    std::vector<float> x;
    for (int i = 0; i < 2 * n; ++i) x.push_back(static_cast<float>(std::sin(i + 0.5)));
    Array a = Array::FromVector<float>({2, n}, x);
    StatusOr<Array> f = Fft(a, FftType::kRfft, {2, n});
    ASSERT_TRUE(f.ok());
    EXPECT_EQ(f->dims(), (std::vector<int64_t>{2, n / 2 + 1}));
    StatusOr<Array> back = Fft(*f, FftType::kIrfft, {2, n});
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back->dtype(), DType::kF32);
    ExpectNear(Doubles(*back), Doubles(a), 1e-5);
  }
}

TEST(Fft, RejectsWrongTypesAndLengths) {
  EXPECT_FALSE(Fft(Array(DType::kF32, {4}), FftType::kFft, {4}).ok());
  EXPECT_FALSE(Fft(Array(DType::kC64, {4}), FftType::kRfft, {4}).ok());
  EXPECT_FALSE(Fft(Array(DType::kC64, {4}), FftType::kFft, {8}).ok());
  EXPECT_FALSE(Fft(Array(DType::kC64, {4}), FftType::kIrfft, {4}).ok());  // needs 3 = 4/2+1
}

TEST(TopK, LargestWithTiesAndNaN) {
  StatusOr<std::pair<Array, Array>> r = TopK(Array::FromVector<float>({2, 5}, {3, 1, 4, 1, 5, 2, 2, 7, 2, 0}), 3, true);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectNear(Doubles(r->first), {5, 4, 3, 7, 2, 2}, 0);
  ExpectNear(Doubles(r->second), {4, 2, 0, 2, 0, 1}, 0);  // ties: lower index first
  r = TopK(Array::FromVector<float>({4}, {1, NAN, INFINITY, -1}), 2, true);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(std::isnan(r->first.GetDouble(0)));
  EXPECT_EQ(r->first.GetDouble(1), INFINITY);
  r = TopK(Array::FromVector<int32_t>({5}, {3, 1, 4, 1, 5}), 2, false);
  ASSERT_TRUE(r.ok());
  ExpectNear(Doubles(r->first), {1, 1}, 0);
  ExpectNear(Doubles(r->second), {1, 3}, 0);
}

TEST(TopK, RejectsKOutOfRange) {
  EXPECT_FALSE(TopK(Array(DType::kF32, {4}), 5, true).ok());
  EXPECT_FALSE(TopK(Array(DType::kF32, {4}), -1, true).ok());
  EXPECT_FALSE(TopK(Array(DType::kF32, {}), 1, true).ok());
}

TEST(Random, PhiloxAndThreefryKnownAnswers) {
  // Known-answer vectors of Random123 (philox4x32_10, threefry2x32_20).
  uint32_t out[4];
  const uint32_t zero_key[2] = {0, 0}, zero_ctr[4] = {0, 0, 0, 0};
  Philox4x32(zero_key, zero_ctr, out);
  EXPECT_EQ(out[0], 0x6627e8d5u);
  EXPECT_EQ(out[1], 0xe169c58du);
  EXPECT_EQ(out[2], 0xbc57ac4cu);
  EXPECT_EQ(out[3], 0x9b00dbd8u);
  const uint32_t ones_key[2] = {0xffffffffu, 0xffffffffu};
  const uint32_t ones_ctr[4] = {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu};
  Philox4x32(ones_key, ones_ctr, out);
  EXPECT_EQ(out[0], 0x408f276du);
  EXPECT_EQ(out[1], 0x41c83b0eu);
  EXPECT_EQ(out[2], 0xa20bc7c6u);
  EXPECT_EQ(out[3], 0x6d5451fdu);
  uint32_t tf[2];
  const uint32_t tf_ctr[2] = {0, 0};
  Threefry2x32(zero_key, tf_ctr, tf);
  EXPECT_EQ(tf[0], 0x6b200159u);
  EXPECT_EQ(tf[1], 0x99ba4efeu);
  // The vector JAX's threefry tests use.
  const uint32_t jk[2] = {0x13198a2eu, 0x03707344u}, jc[2] = {0x243f6a88u, 0x85a308d3u};
  Threefry2x32(jk, jc, tf);
  EXPECT_EQ(tf[0], 0xc4923a9cu);
  EXPECT_EQ(tf[1], 0x483df7a0u);
}

// Known answers from JAX 0.10.2 on CPU: jax.jit(lambda s: lax.rng_bit_generator(s, shape,
// dtype=..., algorithm=lax.RandomAlgorithm.RNG_...))(state) with jax_enable_x64, printed in hex.
template <typename T>
void ExpectBits(RngAlgorithm algorithm, std::vector<uint64_t> state, std::vector<int64_t> dims, DType t,
                std::vector<uint64_t> want_state, std::vector<uint64_t> want_bits) {
  const int64_t n = static_cast<int64_t>(state.size());
  StatusOr<std::pair<Array, Array>> r =
      RngBitGenerator(algorithm, Array::FromVector<uint64_t>({n}, state), Shape(t, dims));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto ns = r->first.values<uint64_t>();
  ASSERT_EQ(ns.size(), want_state.size());
  for (size_t i = 0; i < want_state.size(); ++i) EXPECT_EQ(ns[i], want_state[i]) << "state word " << i;
  auto bits = r->second.values<T>();
  ASSERT_EQ(bits.size(), want_bits.size());
  for (size_t i = 0; i < want_bits.size(); ++i)
    EXPECT_EQ(static_cast<uint64_t>(bits[i]), want_bits[i]) << "element " << i;
}

TEST(Random, BitGeneratorGivesXlasPhiloxStream) {
  // u32[4] key (0x11111111, ..., 0x44444444) as JAX's rbg keys hold it: u64[2] state.
  ExpectBits<uint32_t>(
      RngAlgorithm::kPhilox, {0x2222222211111111ull, 0x4444444433333333ull}, {4, 8}, DType::kU32,
      {0x2222222211111111ull, 0x444444443333333bull},
      {0x5a9d17f3, 0xfeef2938, 0xfa55d3b0, 0xbbb043,   0x54bdf30c, 0x7d515ee2, 0xc9d9f41e, 0x1d73520,
       0x357b6964, 0xe54eb37e, 0x107cc410, 0xf6095f28, 0xfb7eac28, 0x81b3cf36, 0xe6d7b321, 0x14a1011,
       0xabf801f0, 0xa98a1665, 0x67e44e3,  0xadfbea6,  0x248a15f0, 0x4c5b8aaa, 0x5d68f8f1, 0xad034195,
       0xd6579a70, 0x3363a8be, 0x3aa0b8d9, 0xe4a69383, 0x30a811cc, 0x28ce3215, 0xdbf697f5, 0x24889fdb});
  // 64-bit elements take two words each; the counter's low word wraps (the carry is dropped).
  ExpectBits<uint64_t>(RngAlgorithm::kPhilox, {5, 0xFFFFFFFFFFFFFFFEull}, {3}, DType::kU64, {5, 0},
                       {0xd796e003761c7a50ull, 0x529f5587e41b133aull, 0xf08b44004e5aa1baull});
  // Narrow elements keep the low byte of one word each (5 words: two blocks).
  ExpectBits<uint8_t>(RngAlgorithm::kPhilox, {5, 7}, {5}, DType::kU8, {5, 9}, {0xf1, 0xa8, 0xa7, 0x39, 0x3c});
  // rng_default is Philox on XLA's CPU.
  ExpectBits<uint32_t>(RngAlgorithm::kDefault, {5, 7}, {6}, DType::kU32, {5, 9},
                       {0x74a851f1, 0xc4a35ba8, 0x82800aa7, 0xaf5f7739, 0xf093503c, 0xcdb47eb1});
}

TEST(Random, BitGeneratorGivesXlasThreefryLayout) {
  // No even dim: pairs along the larger dim (5 -> 3 counters a row).
  ExpectBits<uint32_t>(RngAlgorithm::kThreeFry, {5, 7}, {3, 5}, DType::kU32, {5, 16},
                       {0xee74f173, 0x3f6592d8, 0xa74d45, 0x7aa38252, 0xe2c00f71, 0xba630292, 0x21346aa2, 0x18ab7d7,
                        0xeca4aa7b, 0x43f5f0cc, 0x9de8de6b, 0x25570b16, 0x3e407ba3, 0xc8bdc0aa, 0xc1ae966c});
  // The first even dim is the outer one: rows 2i and 2i + 1 share counters.
  ExpectBits<uint32_t>(
      RngAlgorithm::kThreeFry, {5, 7}, {4, 6}, DType::kU32, {5, 19},
      {0xee74f173, 0xa74d45,   0xe2c00f71, 0xba630292, 0x18ab7d7,  0x43f5f0cc, 0x3f6592d8, 0x7aa38252,
       0x5fa40d2a, 0x21346aa2, 0xeca4aa7b, 0x37648446, 0x9de8de6b, 0x3e407ba3, 0xc1ae966c, 0xdc2db586,
       0x93b98825, 0x88597812, 0x25570b16, 0xc8bdc0aa, 0xa59fd9b1, 0x922ee40b, 0x65971aed, 0x80db8f1a});
  ExpectBits<uint32_t>(RngAlgorithm::kThreeFry, {5, 7}, {}, DType::kU32, {5, 8}, {0xee74f173});
  ExpectBits<uint64_t>(RngAlgorithm::kThreeFry, {5, 7}, {5}, DType::kU64, {5, 12},
                       {0x3f6592d8ee74f173ull, 0x7aa3825200a74d45ull, 0x5fa40d2ae2c00f71ull, 0x21346aa2ba630292ull,
                        0xeca4aa7b018ab7d7ull});
  ExpectBits<uint16_t>(RngAlgorithm::kThreeFry, {5, 7}, {3, 2}, DType::kU16, {5, 10},
                       {0xf173, 0x92d8, 0x4d45, 0x8252, 0xf71, 0xd2a});
}

TEST(Random, BitGeneratorStateRules) {
  // Philox with a u64[3] state counts in (state[1], state[2]) and carries into state[2].
  Array state = Array::FromVector<uint64_t>({3}, {7, 0xFFFFFFFFFFFFFFFFull, 4});
  StatusOr<std::pair<Array, Array>> r = RngBitGenerator(RngAlgorithm::kPhilox, state, Shape(DType::kU32, {8}));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->first.values<uint64_t>()[1], 1u);
  EXPECT_EQ(r->first.values<uint64_t>()[2], 5u);
  uint32_t block[4];
  const uint32_t key[2] = {7, 0}, ctr[4] = {0, 0, 5, 0};  // the second block: counter 2^64 * 5 + 0
  Philox4x32(key, ctr, block);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(r->second.values<uint32_t>()[4 + i], block[i]);
  EXPECT_FALSE(RngBitGenerator(RngAlgorithm::kThreeFry, Array(DType::kU64, {3}), Shape(DType::kU32, {1})).ok());
  EXPECT_FALSE(RngBitGenerator(RngAlgorithm::kPhilox, Array(DType::kU32, {2}), Shape(DType::kU32, {1})).ok());
}

TEST(Random, UniformAndNormalMoments) {
  const int64_t n = 200000;
  StatusOr<Array> u = Rng(RngDistribution::kUniform, Array::Scalar<float>(2), Array::Scalar<float>(4),
                          Shape(DType::kF32, {n}), 1);
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  double sum = 0;
  for (double x : Doubles(*u)) {
    ASSERT_GE(x, 2);
    ASSERT_LT(x, 4);
    sum += x;
  }
  EXPECT_NEAR(sum / n, 3.0, 0.01);
  StatusOr<Array> g = Rng(RngDistribution::kNormal, Array::Scalar<double>(1), Array::Scalar<double>(2),
                          Shape(DType::kF64, {n}), 2);
  ASSERT_TRUE(g.ok());
  double m = 0, m2 = 0;
  for (double x : Doubles(*g)) {
    m += x;
    m2 += x * x;
  }
  m /= n;
  EXPECT_NEAR(m, 1.0, 0.02);
  EXPECT_NEAR(std::sqrt(m2 / n - m * m), 2.0, 0.02);
  StatusOr<Array> ints = Rng(RngDistribution::kUniform, Array::Scalar<int32_t>(-3), Array::Scalar<int32_t>(3),
                             Shape(DType::kS32, {1000}), 3);
  ASSERT_TRUE(ints.ok());
  for (double x : Doubles(*ints)) {
    EXPECT_GE(x, -3);
    EXPECT_LT(x, 3);
  }
  EXPECT_FALSE(Rng(RngDistribution::kNormal, Array::Scalar<int32_t>(0), Array::Scalar<int32_t>(1),
                   Shape(DType::kS32, {2}), 1).ok());
}

TEST(BatchNorm, TrainingHandComputed) {
  // Features along dim 1: feature 0 = {1, 3}, feature 1 = {2, 6}.
  Array x = Array::FromVector<float>({2, 2}, {1, 2, 3, 6});
  StatusOr<std::vector<Array>> r = BatchNormTraining(x, Array::FromVector<float>({2}, {1, 2}),
                                                     Array::FromVector<float>({2}, {0, 10}), 0, 1);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectNear(Doubles((*r)[1]), {2, 4}, 1e-6);
  ExpectNear(Doubles((*r)[2]), {1, 4}, 1e-6);
  ExpectNear(Doubles((*r)[0]), {-1, 10 - 2, 1, 10 + 2}, 1e-6);
}

TEST(BatchNorm, GradMatchesFiniteDifferences) {
  // d/dx of sum(dy * training_output(x)) by central differences in f64.
  const std::vector<double> xs = {0.3, -1.2, 2.0, 0.7, 1.1, -0.4};
  const std::vector<double> dys = {0.5, -1.0, 0.25, 2.0, -0.3, 0.8};
  Array scale = Array::FromVector<double>({2}, {1.5, -0.5}), offset = Array::FromVector<double>({2}, {0.1, 0.2});
  auto objective = [&](const std::vector<double>& v) {
    auto out = BatchNormTraining(Array::FromVector<double>({3, 2}, v), scale, offset, 1e-3, 1);
    double s = 0;
    for (int i = 0; i < 6; ++i) s += dys[i] * (*out)[0].GetDouble(i);
    return s;
  };
  auto stats = BatchNormTraining(Array::FromVector<double>({3, 2}, xs), scale, offset, 1e-3, 1);
  ASSERT_TRUE(stats.ok());
  StatusOr<std::vector<Array>> g = BatchNormGrad(Array::FromVector<double>({3, 2}, xs), scale, (*stats)[1],
                                                 (*stats)[2], Array::FromVector<double>({3, 2}, dys), 1e-3, 1);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  for (int i = 0; i < 6; ++i) {
    std::vector<double> hi = xs, lo = xs;
    hi[i] += 1e-6;
    lo[i] -= 1e-6;
    EXPECT_NEAR((*g)[0].GetDouble(i), (objective(hi) - objective(lo)) / 2e-6, 1e-5) << "x " << i;
  }
  // grad offset = sum of dy per feature.
  ExpectNear(Doubles((*g)[2]), {0.5 + 0.25 - 0.3, -1.0 + 2.0 + 0.8}, 1e-12);
}

TEST(RaggedDot, NonContractingRowsPickTheirGroup) {
  // lhs [4, 2]; rhs [2 groups, 2, 1]; sizes {1, 2}: row 0 -> group 0, rows 1-2 -> group 1,
  // row 3 is past every group -> 0.
  Array lhs = Array::FromVector<float>({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  Array rhs = Array::FromVector<float>({2, 2, 1}, {1, 1, 10, -1});
  RaggedDotDims d;
  d.dot.lhs_contracting = {1};
  d.dot.rhs_contracting = {1};
  d.lhs_ragged = 0;
  d.rhs_group = {0};
  StatusOr<Array> out = RaggedDot(lhs, rhs, Array::FromVector<int32_t>({2}, {1, 2}), d, Shape(DType::kF32, {4, 1}));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ExpectNear(Doubles(*out), {1 + 2, 30 - 4, 50 - 6, 0}, 1e-6);
}

TEST(RaggedDot, ContractingSplitsTheSum) {
  // lhs [1, 4] ragged along k; rhs [4, 1] of ones; sizes {3, 1}: group sums 1+2+3 and 4.
  Array lhs = Array::FromVector<float>({1, 4}, {1, 2, 3, 4});
  Array rhs = Array::FromVector<float>({4, 1}, {1, 1, 1, 1});
  RaggedDotDims d;
  d.dot.lhs_contracting = {1};
  d.dot.rhs_contracting = {0};
  d.lhs_ragged = 1;
  StatusOr<Array> out = RaggedDot(lhs, rhs, Array::FromVector<int32_t>({2}, {3, 1}), d, Shape(DType::kF32, {2, 1, 1}));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ExpectNear(Doubles(*out), {6, 4}, 1e-6);
  EXPECT_FALSE(RaggedDot(lhs, rhs, Array::FromVector<int32_t>({2}, {3, 1}), d, Shape(DType::kF32, {1, 1})).ok());
}

}  // namespace
}  // namespace xs::kernels

namespace xs::kernels {
namespace {

TEST(BlockScaledDot, ScalesRepeatOverBlocksOfK) {
  // K = 4 in blocks of 2: lhs row scales {2, 0.5}, rhs row scales {1, 4}.
  Array lhs = Array::FromVector<float>({1, 4}, {1, 2, 3, 4});
  Array rhs = Array::FromVector<float>({1, 4}, {1, 1, 1, 1});
  Array ls = Array::FromVector<float>({1, 2}, {2, 0.5});
  Array rs = Array::FromVector<float>({1, 2}, {1, 4});
  StatusOr<Array> out = BlockScaledDot(lhs, rhs, &ls, &rs, Shape(DType::kF32, {1, 1}));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  // (1*2 + 2*2) * 1 + (3*0.5 + 4*0.5) * 4 = 6 + 14.
  EXPECT_DOUBLE_EQ(out->GetDouble(0), 20);
  StatusOr<Array> plain = BlockScaledDot(lhs, rhs, nullptr, nullptr, Shape(DType::kF32, {1, 1}));
  ASSERT_TRUE(plain.ok());
  EXPECT_DOUBLE_EQ(plain->GetDouble(0), 10);
  Array bad = Array::FromVector<float>({1, 3}, {1, 1, 1});
  EXPECT_FALSE(BlockScaledDot(lhs, rhs, &bad, nullptr, Shape(DType::kF32, {1, 1})).ok());
}

// Batched f8 operands with e8m0 scales (the MX formats; more than 256 elements, so the decode
// goes through the byte table) and scales blocked over a middle dim as well as K: against a
// direct summation of the decoded products in this test.
TEST(BlockScaledDot, BatchedF8OperandsMatchDirectSummation) {
  const int64_t batch = 2, m = 3, n = 5, k = 128;
  std::mt19937 rng(7);
  auto random_f8 = [&](std::vector<int64_t> dims) {
    Array a(Shape(DType::kF8E4M3FN, dims));
    for (int64_t i = 0; i < a.num_elements(); ++i) {
      uint8_t b = static_cast<uint8_t>(rng());
      if ((b & 0x7f) == 0x7f) b = 0x38;  // not NaN: 1.0
      a.data()[i] = static_cast<std::byte>(b);
    }
    return a;
  };
  auto random_scale = [&](std::vector<int64_t> dims) {
    Array a(Shape(DType::kF8E8M0FNU, dims));
    for (int64_t i = 0; i < a.num_elements(); ++i) a.data()[i] = static_cast<std::byte>(120 + rng() % 15);
    return a;
  };
  const Array lhs = random_f8({batch, m, k}), rhs = random_f8({batch, n, k});
  const Array ls = random_scale({batch, 1, k / 32}), rs = random_scale({batch, n, k / 16});
  StatusOr<Array> out = BlockScaledDot(lhs, rhs, &ls, &rs, Shape(DType::kF32, {batch, m, n}));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double want = 0;
        for (int64_t t = 0; t < k; ++t) {
          want += lhs.GetDouble((b * m + i) * k + t) * ls.GetDouble(b * (k / 32) + t / 32) *
                  rhs.GetDouble((b * n + j) * k + t) * rs.GetDouble((b * n + j) * (k / 16) + t / 16);
        }
        const float w = static_cast<float>(want);
        EXPECT_NEAR(out->GetDouble((b * m + i) * n + j), w, std::abs(w) * 1e-6) << b << "," << i << "," << j;
      }
    }
  }
}

}  // namespace
}  // namespace xs::kernels

namespace xs::kernels {
namespace {

TEST(LapackPotrf, KeepsTheOtherTriangleAndReportsInfo) {
  StatusOr<std::vector<Array>> r = LapackPotrf(Array::FromVector<float>({2, 2}, {4, 7, 2, 3}), true);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // Lower factor [[2, .], [1, sqrt 2]]; the upper entry keeps a's 7 (LAPACK leaves it).
  EXPECT_DOUBLE_EQ((*r)[0].GetDouble(1), 7);
  EXPECT_NEAR((*r)[0].GetDouble(3), std::sqrt(2.0), 1e-6);
  EXPECT_EQ((*r)[1].GetDouble(0), 0);
  r = LapackPotrf(Array::FromVector<float>({2, 2}, {1, 0, 2, 1}), true);  // minor of order 2 fails
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[1].GetDouble(0), 2);
}

TEST(LapackGetrf, PivotsOnTheLargestEntry) {
  // [[1, 2], [3, 4]]: pivot row 2 (1-based); L = [[1, 0], [1/3, 1]], U = [[3, 4], [0, 2/3]].
  StatusOr<std::vector<Array>> r = LapackGetrf(Array::FromVector<double>({2, 2}, {1, 2, 3, 4}));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::vector<double> lu = {3, 4, 1.0 / 3, 2.0 / 3};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR((*r)[0].GetDouble(i), lu[i], 1e-12);
  EXPECT_EQ((*r)[1].GetDouble(0), 2);
  EXPECT_EQ((*r)[1].GetDouble(1), 2);
  EXPECT_EQ((*r)[2].GetDouble(0), 0);
  r = LapackGetrf(Array::FromVector<double>({2, 2}, {0, 0, 0, 1}));  // singular: U[0,0] = 0
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[2].GetDouble(0), 1);
}

}  // namespace
}  // namespace xs::kernels
