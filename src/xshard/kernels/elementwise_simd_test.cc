// Vector elementwise kernels (elementwise_simd.h) against the scalar reference kernels, on every
// Highway target this CPU runs: edge values (NaN, +-inf, +-0, denormals, overflow and saturation
// thresholds), random values, lengths 0..67 and misaligned pointers. Transcendentals within a
// stated ulp bound per op; everything else bit-exact (NaN matches any NaN).
#include "xshard/kernels/elementwise_simd.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <sstream>

#include "gtest/gtest.h"
#include "xshard/kernels/elementwise.h"

namespace xs::kernels {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
const DType kFloatTypes[] = {DType::kF32, DType::kF64, DType::kBF16, DType::kF16};

// Max ulp error of each approximated op in f32 / f64 against glibc (itself within 1 ulp), as
// measured on every target on these inputs (Highway documents exp 1, expm1 4, log 4, log1p 2,
// tanh 4, sin / cos 3, atan / asinh / acosh / atanh 3, asin / acos 2, sinh 4 against the true
// value). For bf16 and f16 the f32 result is rounded once
// more, so the bound there is 1 ulp of the 16-bit type. Every other op is bit-exact.
const std::map<Opcode, int> kUlpBound = {
    {Opcode::kExp, 1},
    {Opcode::kExpm1, 2},
    {Opcode::kLog, 1},
    {Opcode::kLog1p, 2},
    {Opcode::kTanh, 4},
    {Opcode::kSin, 2},
    {Opcode::kCos, 2},
    {Opcode::kLogistic, 4},
    {Opcode::kErf, 5},  // XLA's rational approximation itself; 4 with FMA (AVX2, AVX-512)
    // tanh: f32 is XLA's rational approximation (4 ulp), f64 Highway's (2 ulp).
    // logistic: 1 / (1 + e), e = exp(-x); where e is near 2^24 (x near -16.6) the rounding of
    // 1 + e adds to e's 1 ulp: 4 ulp in the dense f32 sweep below, on every target.
    {Opcode::kAtan, 2},
    {Opcode::kAsin, 2},
    {Opcode::kAcos, 1},
    {Opcode::kAsinh, 2},
    {Opcode::kAcosh, 2},
    {Opcode::kAtanh, 2},
    {Opcode::kSinh, 3},
};

// Ordered integer key of a float's bits (-0 and +0 are one apart), as int64.
int64_t Key(DType t, const std::byte* p) {
  int64_t bits = 0, sign_bit = 0;
  switch (DTypeSize(t)) {
    case 2: { uint16_t b; std::memcpy(&b, p, 2); bits = b & 0x7fff; sign_bit = b >> 15; break; }
    case 4: { uint32_t b; std::memcpy(&b, p, 4); bits = b & 0x7fffffff; sign_bit = b >> 31; break; }
    default: {
      uint64_t b;
      std::memcpy(&b, p, 8);
      bits = int64_t(b & 0x7fffffffffffffffULL);
      sign_bit = int64_t(b >> 63);
    }
  }
  return sign_bit ? -bits - 1 : bits;
}

// Largest ulp distance between two float arrays; -1 when NaN-ness or an infinity differs.
int64_t MaxUlp(const Array& a, const Array& b, int64_t* worst) {
  int64_t max_ulp = 0;
  const int64_t size = DTypeSize(a.dtype());
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    const double x = a.GetDouble(i), y = b.GetDouble(i);
    if (std::isnan(x) || std::isnan(y)) {
      if (std::isnan(x) != std::isnan(y)) { *worst = i; return -1; }
      continue;
    }
    if ((std::isinf(x) || std::isinf(y)) && x != y) { *worst = i; return -1; }
    const int64_t d =
        std::abs(Key(a.dtype(), a.data() + i * size) - Key(a.dtype(), b.data() + i * size));
    if (d > max_ulp) { max_ulp = d; *worst = i; }
  }
  return max_ulp;
}

// Edge values for the unary ops plus random ones: uniform in [lo, hi], log-uniform magnitudes
// of both signs, and random f32 bit patterns (all exponents, NaN payloads, denormals).
std::vector<double> UnaryInputs(double lo, double hi, std::mt19937& rng) {
  const double f32_denorm = std::numeric_limits<float>::denorm_min();
  std::vector<double> v = {kNaN, -kNaN, kInf, -kInf, 0.0, -0.0, f32_denorm, -f32_denorm, 1e-40,
                           -1e-40, 1.1754944e-38, 3.4028235e38, -3.4028235e38, 1, -1, 0.5, -0.5,
                           1.5, -1.5, 2.5, -2.5, 88.72, 88.7228, 88.73, 89, 100, 104, 105, -87.3,
                           -88, -100, -103.9, -104, -105, -150, 709.78, 709.8, 710, -708, -745,
                           -746, 18.7, -18.8, 9.1, -9.1, 39000, -39000, 39001, 1e5, -1, -0.9999,
                           -1.0001, 1e-8, -1e-8, 1e-30, 1e30, -1e30, 4, -4, 3.99, 0.1, 2e9, -2e9,
                           2147483647.0, 2147483648.0, -2147483648.0, -2147483904.0, 65504, 65520,
                           6e-8, 1e300, -1e300, 5e-324};
  std::uniform_real_distribution<double> uni(lo, hi), expo(-45, 38), coin(0, 1);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 1500; ++i) v.push_back(uni(rng));
  for (int i = 0; i < 800; ++i) v.push_back((coin(rng) < 0.5 ? -1 : 1) * std::pow(10.0, expo(rng)));
  for (int i = 0; i < 500; ++i) v.push_back(std::bit_cast<float>(bits(rng)));
  return v;
}

Array Make(DType t, const std::vector<double>& v) {
  return *ConvertReference(Array::FromVector<double>({static_cast<int64_t>(v.size())}, v), t);
}

// Calls call(start, length) over [0, n): element 0 alone, then pieces of length 0, 1, ..., 67,
// 0, 1, ... from element 1 (so tails of every length, and most pieces misaligned).
template <class F>
void RunInPieces(int64_t n, const F& call) {
  call(0, 1);
  int64_t len = 0;
  for (int64_t i = 1; i < n; i += len, len = (len + 1) % 68) call(i, std::min(len, n - i));
}

struct Range { double lo, hi; };
const std::map<Opcode, Range> kRanges = {
    {Opcode::kExp, {-110, 95}},  {Opcode::kExpm1, {-20, 95}}, {Opcode::kLog, {0, 100}},
    {Opcode::kLog1p, {-1, 10}},  {Opcode::kTanh, {-20, 20}},  {Opcode::kLogistic, {-110, 110}},
    {Opcode::kErf, {-5, 5}},     {Opcode::kSin, {-50, 50}},   {Opcode::kCos, {-50, 50}},
    {Opcode::kAtan, {-10, 10}},  {Opcode::kAsin, {-1, 1}},    {Opcode::kAcos, {-1, 1}},
    {Opcode::kAsinh, {-10, 10}}, {Opcode::kAcosh, {1, 10}},   {Opcode::kAtanh, {-1, 1}},
    {Opcode::kSinh, {-90, 90}},
};

const Opcode kVectorUnary[] = {
    Opcode::kAbs, Opcode::kNegate, Opcode::kSqrt, Opcode::kRsqrt, Opcode::kFloor, Opcode::kCeil,
    Opcode::kRoundNearestEven, Opcode::kRoundNearestAfz, Opcode::kSign, Opcode::kExp,
    Opcode::kExpm1, Opcode::kLog, Opcode::kLog1p, Opcode::kTanh, Opcode::kLogistic, Opcode::kErf,
    Opcode::kSin, Opcode::kCos, Opcode::kAtan, Opcode::kAsin, Opcode::kAcos, Opcode::kAsinh,
    Opcode::kAcosh, Opcode::kAtanh, Opcode::kSinh};

class SimdKernels : public ::testing::TestWithParam<int64_t> {
 protected:
  void SetUp() override { simd::UseTargetForTest(GetParam()); }
  void TearDown() override { simd::UseTargetForTest(0); }
};

TEST_P(SimdKernels, UnaryOpsWithinTheirUlpBound) {
  std::mt19937 rng(7);
  for (Opcode op : kVectorUnary) {
    const Range r = kRanges.count(op) ? kRanges.at(op) : Range{-1e4, 1e4};
    const std::vector<double> values = UnaryInputs(r.lo, r.hi, rng);
    for (DType t : kFloatTypes) {
      if (simd::FindUnary(op, t) == nullptr) continue;
      const Array in = Make(t, values);
      const Array ref = *UnaryReference(op, in);
      UnaryKernel k = *FindUnaryKernel(op, t);
      ASSERT_EQ(k, simd::FindUnary(op, t));
      Array out(ref.shape());
      const int64_t size = DTypeSize(t);
      RunInPieces(in.num_elements(), [&](int64_t i, int64_t len) {
        k(in.data() + i * size, out.data() + i * size, len);
      });
      const bool half = t == DType::kBF16 || t == DType::kF16;
      const int64_t bound = kUlpBound.count(op) ? (half ? 1 : kUlpBound.at(op)) : 0;
      int64_t worst = 0;
      const int64_t ulp = MaxUlp(out, ref, &worst);
      EXPECT_TRUE(ulp >= 0 && ulp <= bound)
          << OpcodeName(op) << " " << DTypeName(t) << " on " << simd::Table().target << ": " << ulp
          << " ulp (bound " << bound << ") at x=" << in.GetDouble(worst)
          << " got " << out.GetDouble(worst) << " want " << ref.GetDouble(worst);
      if (ulp > 0) {
        std::printf("  %-10s %-5s %-6s max %lld ulp\n", std::string(OpcodeName(op)).c_str(),
                    std::string(DTypeName(t)).c_str(), simd::Table().target, (long long)ulp);
      }
    }
  }
}

TEST_P(SimdKernels, BinaryOpsAreExactIncludingNaNAndSignedZeros) {
  std::mt19937 rng(8);
  const std::vector<double> special = {kNaN, -kNaN, kInf, -kInf, 0.0, -0.0, 1e-40, -1e-40, 1, -1,
                                       2.5, 3.4028235e38, -7, 1e-310};
  std::vector<double> a, b;
  for (double x : special) for (double y : special) { a.push_back(x); b.push_back(y); }
  std::uniform_real_distribution<double> uni(-100, 100);
  for (int i = 0; i < 2000; ++i) {
    a.push_back(uni(rng));
    b.push_back(i % 7 == 0 ? a.back() : uni(rng));
  }
  const Opcode ops[] = {Opcode::kAdd, Opcode::kSubtract, Opcode::kMultiply, Opcode::kDivide,
                        Opcode::kMaximum, Opcode::kMinimum};
  for (Opcode op : ops) {
    for (DType t : kFloatTypes) {
      if (simd::FindBinary(op, t) == nullptr) continue;
      const Array x = Make(t, a), y = Make(t, b);
      const Array ref = *BinaryReference(op, x, y);
      BinaryKernel k = *FindBinaryKernel(op, t);
      Array out(ref.shape());
      const int64_t size = DTypeSize(t);
      RunInPieces(x.num_elements(), [&](int64_t i, int64_t len) {
        k(x.data() + i * size, y.data() + i * size, out.data() + i * size, len);
      });
      int64_t worst = 0;
      EXPECT_EQ(MaxUlp(out, ref, &worst), 0)
          << OpcodeName(op) << " " << DTypeName(t) << " on " << simd::Table().target << " at "
          << x.GetDouble(worst) << ", " << y.GetDouble(worst);
    }
  }
}

// Random bit patterns, both signs' extremes, and shift amounts in, at and past the lane width
// (negative ones too: XLA reads the amount as unsigned).
template <class T>
Array IntInputs(bool amounts, std::mt19937& rng) {
  std::vector<T> v;
  const T specials[] = {T(0), T(1), T(-1), std::numeric_limits<T>::min(), std::numeric_limits<T>::max(),
                        T(7), T(T(sizeof(T) * 8) - 1), T(sizeof(T) * 8), T(sizeof(T) * 8 + 1)};
  for (T x : specials) {
    for (T y : specials) v.push_back(amounts ? y : x);
  }
  std::uniform_int_distribution<uint64_t> bits;
  std::uniform_int_distribution<int> small(-3, static_cast<int>(sizeof(T) * 8) + 3);
  for (int i = 0; i < 3000; ++i) v.push_back(amounts && i % 2 == 0 ? T(small(rng)) : T(bits(rng)));
  return Array::FromVector<T>({static_cast<int64_t>(v.size())}, v);
}

template <class T>
void CheckIntegerOps(DType t) {
  std::mt19937 rng(12);
  const Opcode ops[] = {Opcode::kAdd, Opcode::kSubtract, Opcode::kMultiply, Opcode::kAnd, Opcode::kOr,
                        Opcode::kXor, Opcode::kShiftLeft, Opcode::kShiftRightLogical,
                        Opcode::kShiftRightArithmetic};
  const Array x = IntInputs<T>(false, rng), y = IntInputs<T>(true, rng);
  for (Opcode op : ops) {
    if (simd::FindBinary(op, t) == nullptr) continue;
    const Array ref = *BinaryReference(op, x, y);
    BinaryKernel k = *FindBinaryKernel(op, t);
    EXPECT_EQ(k, simd::FindBinary(op, t));
    Array out(ref.shape());
    RunInPieces(x.num_elements(), [&](int64_t i, int64_t len) {
      k(x.data() + i * sizeof(T), y.data() + i * sizeof(T), out.data() + i * sizeof(T), len);
    });
    EXPECT_EQ(out, ref) << OpcodeName(op) << " " << DTypeName(t) << " on " << simd::Table().target;
  }
}

TEST_P(SimdKernels, IntegerBinaryOpsAreExactIncludingOutOfRangeShifts) {
  CheckIntegerOps<int32_t>(DType::kS32);
  CheckIntegerOps<uint32_t>(DType::kU32);
  CheckIntegerOps<int64_t>(DType::kS64);
  CheckIntegerOps<uint64_t>(DType::kU64);
  if (std::string(simd::Table().target) != "SCALAR") {
    EXPECT_NE(simd::FindBinary(Opcode::kShiftLeft, DType::kU32), nullptr) << simd::Table().target;
  }
}

TEST_P(SimdKernels, CompareSelectClampAndConvertAreExact) {
  std::mt19937 rng(9);
  std::vector<double> a = UnaryInputs(-3e9, 3e9, rng), b = a;
  std::shuffle(b.begin(), b.end(), rng);
  for (size_t i = 0; i < a.size(); i += 5) b[i] = a[i];  // equal pairs
  const int64_t n = static_cast<int64_t>(a.size());
  for (DType t : kFloatTypes) {
    const Array x = Make(t, a), y = Make(t, b);
    for (int dir = 0; dir < 6; ++dir) {
      const auto d = static_cast<ComparisonDirection>(dir);
      if (simd::FindCompare(d, ComparisonType::kFloat, t) == nullptr) continue;
      BinaryKernel k = *FindCompareKernel(d, ComparisonType::kNone, t);
      Array out(Shape(DType::kPred, {n}));
      RunInPieces(n, [&](int64_t i, int64_t len) {
        k(x.data() + i * DTypeSize(t), y.data() + i * DTypeSize(t), out.data() + i, len);
      });
      EXPECT_EQ(out, *CompareReference(d, ComparisonType::kFloat, x, y))
          << ComparisonDirectionName(d) << " " << DTypeName(t);
    }
    for (DType to : {DType::kF32, DType::kBF16, DType::kF16, DType::kS32}) {
      if (simd::FindConvert(t, to) == nullptr) continue;
      UnaryKernel k = *FindConvertKernel(t, to);
      const Array ref = *ConvertReference(x, to);
      Array out(ref.shape());
      RunInPieces(n, [&](int64_t i, int64_t len) {
        k(x.data() + i * DTypeSize(t), out.data() + i * DTypeSize(to), len);
      });
      int64_t worst = 0;
      EXPECT_EQ(MaxUlp(out, ref, &worst), 0)
          << DTypeName(t) << " -> " << DTypeName(to) << " at " << x.GetDouble(worst);
    }
    if (simd::FindClamp(t) != nullptr) {
      const Array h = Make(t, std::vector<double>(a.rbegin(), a.rend()));
      TernaryKernel k = *FindClampKernel(t);
      Array out(x.shape()), ref(x.shape());
      const int64_t s = DTypeSize(t);
      RunInPieces(n, [&](int64_t i, int64_t len) {
        k(x.data() + i * s, y.data() + i * s, h.data() + i * s, out.data() + i * s, len);
      });
      // Reference: the scalar rule, element by element; a NaN result is the NaN operand's bits.
      for (int64_t i = 0; i < n; ++i) {
        const double l = x.GetDouble(i), v = y.GetDouble(i), hi = h.GetDouble(i);
        const double want = std::min(hi, std::max(v, l)), got = out.GetDouble(i);
        const Array* nan_src =
            std::isnan(l) ? &x : std::isnan(v) ? &y : std::isnan(hi) ? &h : nullptr;
        if (nan_src != nullptr) {
          EXPECT_EQ(std::memcmp(out.data() + i * s, nan_src->data() + i * s, s), 0)
              << "clamp " << DTypeName(t) << " NaN bits at " << i;
        } else {
          EXPECT_TRUE(want == got && std::signbit(want) == std::signbit(got))
              << "clamp " << DTypeName(t) << " " << l << " " << v << " " << hi << " got " << got;
        }
      }
    }
  }
  for (DType t : {DType::kPred, DType::kS16, DType::kF32, DType::kF64}) {
    if (simd::FindSelect(t) == nullptr) continue;
    const int64_t s = DTypeSize(t);
    std::vector<std::byte> p(n), on_true(n * s), on_false(n * s), out(n * s), want(n * s);
    for (int64_t i = 0; i < n; ++i) p[i] = std::byte(rng() % 2);
    for (auto& c : on_true) c = std::byte(rng());
    for (auto& c : on_false) c = std::byte(rng());
    TernaryKernel k = *FindSelectKernel(t);
    RunInPieces(n, [&](int64_t i, int64_t len) {
      k(p.data() + i, on_true.data() + i * s, on_false.data() + i * s, out.data() + i * s, len);
    });
    for (int64_t i = 0; i < n; ++i) {
      const auto& src = p[i] != std::byte{0} ? on_true : on_false;
      std::memcpy(want.data() + i * s, src.data() + i * s, s);
    }
    EXPECT_EQ(out, want) << "select " << DTypeName(t);
  }
}

// f32 tanh is XLA:CPU's: on targets with FMA (AVX2, AVX-512) every value is JAX's bit for bit
// (tests/data/kernels/tanh_f32_jax.txt from tests/tools/gen_tanh_refs.py); without FMA XLA
// clamps earlier and rounds differently (and the scalar target is glibc's): both are within the
// ulp bound of the true value, so within twice the bound of each other.
TEST_P(SimdKernels, TanhF32IsJaxsOwn) {
  std::ifstream file(std::string(XSHARD_SOURCE_DIR) + "/tests/data/kernels/tanh_f32_jax.txt");
  ASSERT_TRUE(file.good()) << "missing tests/data/kernels/tanh_f32_jax.txt";
  std::vector<uint32_t> in_bits, want_bits;
  std::string line;
  while (std::getline(file, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    uint32_t a = 0, b = 0;
    fields >> std::hex >> a >> b;
    in_bits.push_back(a);
    want_bits.push_back(b);
  }
  ASSERT_GT(in_bits.size(), 1000u);
  const int64_t n = static_cast<int64_t>(in_bits.size());
  Array in(DType::kF32, {n}), want(DType::kF32, {n}), out(DType::kF32, {n});
  std::memcpy(in.data(), in_bits.data(), n * 4);
  std::memcpy(want.data(), want_bits.data(), n * 4);
  UnaryKernel k = *FindUnaryKernel(Opcode::kTanh, DType::kF32);
  RunInPieces(n, [&](int64_t i, int64_t len) { k(in.data() + i * 4, out.data() + i * 4, len); });
  const std::string target = simd::Table().target;
  int64_t worst = 0;
  const int64_t ulp = MaxUlp(out, want, &worst);
  if (target.rfind("AVX", 0) == 0) {
    EXPECT_EQ(ulp, 0) << "tanh f32 on " << target << " differs from JAX at x="
                      << in.GetDouble(worst) << ": got " << out.GetDouble(worst) << " want "
                      << want.GetDouble(worst);
  } else {
    EXPECT_TRUE(ulp >= 0 && ulp <= 2 * kUlpBound.at(Opcode::kTanh))
        << "tanh f32 on " << target << ": " << ulp << " ulp from JAX at x=" << in.GetDouble(worst);
  }
}

std::vector<int64_t> Targets() { return simd::SupportedTargets(); }

// f32 exp and logistic over a dense sweep of their whole interesting range (every 397th f32 from
// -105 to 90, and every f32 near the cuts: the subnormal band below -87 that goes to the scalar
// op, -104 below which exp is 0, 88.3 and the overflow near 88.72), within their bounds against
// glibc.
TEST_P(SimdKernels, ExpAndLogisticF32HoldTheirBoundsAcrossTheRange) {
  std::vector<float> xs;
  auto sweep = [&](float from, float to, uint32_t step) {  // same sign, |from| < |to|
    const uint32_t end = std::bit_cast<uint32_t>(to);
    for (uint32_t b = std::bit_cast<uint32_t>(from); b < end; b += step) xs.push_back(std::bit_cast<float>(b));
  };
  sweep(0.0f, 90.0f, 397);
  sweep(-0.0f, -105.0f, 397);
  for (float edge : {87.0f, 88.3f, 88.72f, 104.0f}) {  // every f32 near the cuts
    sweep(edge - 0.01f, edge + 0.01f, 1);
    sweep(-edge + 0.01f, -edge - 0.01f, 1);
  }
  const Array x = Array::FromVector<float>({static_cast<int64_t>(xs.size())}, xs);
  Array neg(x.shape());
  for (size_t i = 0; i < xs.size(); ++i) reinterpret_cast<float*>(neg.data())[i] = -xs[i];
  for (auto [op, in] : {std::pair{Opcode::kExp, &x}, std::pair{Opcode::kLogistic, static_cast<const Array*>(&neg)}}) {
    const Array ref = *UnaryReference(op, *in);
    Array out(ref.shape());
    (*FindUnaryKernel(op, DType::kF32))(in->data(), out.data(), in->num_elements());
    int64_t worst = 0;
    const int64_t ulp = MaxUlp(out, ref, &worst);
    EXPECT_TRUE(ulp >= 0 && ulp <= kUlpBound.at(op))
        << OpcodeName(op) << " on " << simd::Table().target << ": " << ulp << " ulp at x=" << in->GetDouble(worst)
        << " got " << out.GetDouble(worst) << " want " << ref.GetDouble(worst);
  }
}

// The rotate kernel of fused loops against its definition, shift-left(a, b) |
// shift-right-logical(a, bits - b) with XLA's shift rules, for every amount up to twice the width,
// huge and negative ones, on s32 / u32 / s64 / u64 and tails of every length.
template <class T>
void CheckRotateLeft() {
  using U = std::make_unsigned_t<T>;
  constexpr int kBits = sizeof(T) * 8;
  std::vector<T> a, b;
  std::mt19937_64 rng(9);
  for (int amount = 0; amount <= 2 * kBits; ++amount) {
    for (int k = 0; k < 3; ++k) {
      a.push_back(static_cast<T>(rng()));
      b.push_back(static_cast<T>(amount));
    }
  }
  for (T amount : {std::numeric_limits<T>::max(), std::numeric_limits<T>::min(), static_cast<T>(-1)}) {
    a.push_back(static_cast<T>(rng()));
    b.push_back(amount);
  }
  StatusOr<BinaryKernel> k = FindRotateLeftKernel(Array::FromVector<T>({1}, {T{}}).dtype());
  ASSERT_TRUE(k.ok()) << k.status().message();
  std::vector<T> out(a.size());
  RunInPieces(static_cast<int64_t>(a.size()), [&](int64_t i, int64_t len) {
    (*k)(reinterpret_cast<const std::byte*>(a.data() + i), reinterpret_cast<const std::byte*>(b.data() + i),
         reinterpret_cast<std::byte*>(out.data() + i), len);
  });
  for (size_t i = 0; i < a.size(); ++i) {
    const U x = static_cast<U>(a[i]), s = static_cast<U>(b[i]), rest = static_cast<U>(kBits - s);
    const U want = (s < kBits ? static_cast<U>(x << s) : U{0}) | (rest < kBits ? static_cast<U>(x >> rest) : U{0});
    ASSERT_EQ(static_cast<U>(out[i]), want) << kBits << "-bit, amount " << +b[i] << " on " << simd::Table().target;
  }
}

TEST_P(SimdKernels, RotateLeftIsTheTwoShiftsAndTheOr) {
  CheckRotateLeft<int32_t>();
  CheckRotateLeft<uint32_t>();
  CheckRotateLeft<int64_t>();
  CheckRotateLeft<uint64_t>();
}

INSTANTIATE_TEST_SUITE_P(AllTargets, SimdKernels, ::testing::ValuesIn(Targets()),
                         [](const ::testing::TestParamInfo<int64_t>& info) {
                           return simd::TargetName(info.param);
                         });

// Results of >= 4 MiB at a vector-aligned address are written with streaming stores; the same
// array from element 1 (misaligned) takes the ordinary path. Both must match the reference.
TEST(SimdDispatch, LargeArraysMatchOnTheStreamingAndTheOrdinaryPath) {
  const int64_t n = (int64_t{5} << 20) / 4 + 3;
  std::vector<double> v(n), w(n);
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> uni(-20, 20);
  for (int64_t i = 0; i < n; ++i) { v[i] = uni(rng); w[i] = uni(rng); }
  const Array x = Make(DType::kF32, v), y = Make(DType::kF32, w);
  for (int64_t offset : {0, 1}) {
    const Array exp_ref = *UnaryReference(Opcode::kExp, x);
    const Array add_ref = *BinaryReference(Opcode::kAdd, x, y);
    Array exp_out(x.shape()), add_out(x.shape());
    UnaryKernel exp = *FindUnaryKernel(Opcode::kExp, DType::kF32);
    BinaryKernel add = *FindBinaryKernel(Opcode::kAdd, DType::kF32);
    exp(x.data() + offset * 4, exp_out.data() + offset * 4, n - offset);
    add(x.data() + offset * 4, y.data() + offset * 4, add_out.data() + offset * 4, n - offset);
    if (offset == 1) {  // element 0 was not computed
      std::memcpy(exp_out.data(), exp_ref.data(), 4);
      std::memcpy(add_out.data(), add_ref.data(), 4);
    }
    int64_t worst = 0;
    EXPECT_LE(MaxUlp(exp_out, exp_ref, &worst), kUlpBound.at(Opcode::kExp)) << "offset " << offset;
    EXPECT_EQ(MaxUlp(add_out, add_ref, &worst), 0) << "offset " << offset;
  }
}

TEST(SimdDispatch, BestTargetHasVectorKernelsForTheHotOps) {
  const simd::KernelTable& t = simd::Table();
  if (std::string(t.target) == "SCALAR") GTEST_SKIP() << "no SIMD target on this CPU";
  for (Opcode op : {Opcode::kAdd, Opcode::kMultiply}) {
    EXPECT_EQ(*FindBinaryKernel(op, DType::kF32), simd::FindBinary(op, DType::kF32));
  }
  for (Opcode op : {Opcode::kExp, Opcode::kTanh, Opcode::kLogistic}) {
    EXPECT_NE(simd::FindUnary(op, DType::kF32), nullptr);
    EXPECT_NE(simd::FindUnary(op, DType::kBF16), nullptr);
  }
}

}  // namespace
}  // namespace xs::kernels
