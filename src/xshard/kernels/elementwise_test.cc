// Elementwise kernels: XLA's integer, NaN, rounding and conversion edge cases against values
// derived by hand or printed by JAX 0.10.2 on CPU (see each test), and every fast kernel against
// its reference twin on random data of every dtype.
#include "xshard/kernels/elementwise.h"

#include <bit>
#include <cmath>
#include <limits>
#include <random>

#include "gtest/gtest.h"

namespace xs::kernels {
namespace {

constexpr float kNaNElementwise = std::numeric_limits<float>::quiet_NaN();
constexpr float kInfElementwise = std::numeric_limits<float>::infinity();

template <typename T>
std::vector<T> ValuesElementwise(const Array& a) {
  auto v = a.values<T>();
  return std::vector<T>(v.begin(), v.end());
}

std::vector<bool> Bools(const Array& a) {
  std::vector<bool> out;
  for (int64_t i = 0; i < a.num_elements(); ++i) out.push_back(a.data()[i] != std::byte{0});
  return out;
}

Array F32(std::vector<float> v) { return Array::FromVector<float>({static_cast<int64_t>(v.size())}, v); }
Array S32(std::vector<int32_t> v) { return Array::FromVector<int32_t>({static_cast<int64_t>(v.size())}, v); }

TEST(Elementwise, SignedIntegerDivisionByZeroIsMinusOneAndRemainderIsDividend) {
  // JAX: lax.div([7,-7,INT_MIN,5,0], [0,0,-1,-2,0]) -> [-1,-1,INT_MIN,-2,-1];
  // lax.rem -> [7,-7,0,1,0].
  const int32_t kMin = std::numeric_limits<int32_t>::min();
  Array a = S32({7, -7, kMin, 5, 0}), b = S32({0, 0, -1, -2, 0});
  EXPECT_EQ(ValuesElementwise<int32_t>(*Binary(Opcode::kDivide, a, b)), (std::vector<int32_t>{-1, -1, kMin, -2, -1}));
  EXPECT_EQ(ValuesElementwise<int32_t>(*Binary(Opcode::kRemainder, a, b)), (std::vector<int32_t>{7, -7, 0, 1, 0}));
}

TEST(Elementwise, UnsignedDivisionByZeroIsAllOnes) {
  Array a = Array::FromVector<uint32_t>({2}, {7, 0}), z = Array::FromVector<uint32_t>({2}, {0, 0});
  EXPECT_EQ(ValuesElementwise<uint32_t>(*Binary(Opcode::kDivide, a, z)), (std::vector<uint32_t>{0xffffffffu, 0xffffffffu}));
  EXPECT_EQ(ValuesElementwise<uint32_t>(*Binary(Opcode::kRemainder, a, z)), (std::vector<uint32_t>{7, 0}));
}

TEST(Elementwise, MaximumAndMinimumPropagateNaNAndOrderSignedZeros) {
  // JAX: lax.max([nan,1,-0,0],[1,nan,0,-0]) -> [nan,nan,0,0]; lax.min -> [nan,nan,-0,-0].
  Array a = F32({kNaNElementwise, 1.0f, -0.0f, 0.0f}), b = F32({1.0f, kNaNElementwise, 0.0f, -0.0f});
  std::vector<float> mx = ValuesElementwise<float>(*Binary(Opcode::kMaximum, a, b));
  std::vector<float> mn = ValuesElementwise<float>(*Binary(Opcode::kMinimum, a, b));
  EXPECT_TRUE(std::isnan(mx[0]) && std::isnan(mx[1]) && std::isnan(mn[0]) && std::isnan(mn[1]));
  EXPECT_FALSE(std::signbit(mx[2]) || std::signbit(mx[3]));
  EXPECT_TRUE(std::signbit(mn[2]) && std::signbit(mn[3]));
}

TEST(Elementwise, FloatCompareTreatsNaNAsUnordered) {
  Array a = F32({kNaNElementwise, kNaNElementwise, 1.0f}), b = F32({1.0f, kNaNElementwise, 1.0f});
  EXPECT_EQ(Bools(*Compare(ComparisonDirection::kLt, ComparisonType::kNone, a, b)),
            (std::vector<bool>{false, false, false}));
  EXPECT_EQ(Bools(*Compare(ComparisonDirection::kNe, ComparisonType::kFloat, a, b)),
            (std::vector<bool>{true, true, false}));
  EXPECT_EQ(Bools(*Compare(ComparisonDirection::kEq, ComparisonType::kFloat, a, b)),
            (std::vector<bool>{false, false, true}));
}

TEST(Elementwise, TotalOrderCompareOrdersNaNsInfinitiesAndZeros) {
  // XLA's total order: -NaN < -inf < -1 < -0 < +0 < 1 < inf < +NaN.
  const std::vector<float> order = {-kNaNElementwise, -kInfElementwise, -1.0f, -0.0f, 0.0f, 1.0f, kInfElementwise, kNaNElementwise};
  for (size_t i = 0; i + 1 < order.size(); ++i) {
    Array lo = F32({order[i]}), hi = F32({order[i + 1]});
    EXPECT_EQ(Bools(*Compare(ComparisonDirection::kLt, ComparisonType::kTotalOrder, lo, hi))[0], true) << i;
    EXPECT_EQ(Bools(*Compare(ComparisonDirection::kGe, ComparisonType::kTotalOrder, lo, hi))[0], false) << i;
  }
  Array nz = F32({-0.0f}), pz = F32({0.0f});
  EXPECT_FALSE(Bools(*Compare(ComparisonDirection::kEq, ComparisonType::kTotalOrder, nz, pz))[0]);
  EXPECT_TRUE(Bools(*Compare(ComparisonDirection::kEq, ComparisonType::kFloat, nz, pz))[0]);
}

TEST(Elementwise, UnsignedCompareTypeReinterpretsSignedBits) {
  Array a = S32({-1}), b = S32({1});
  EXPECT_TRUE(Bools(*Compare(ComparisonDirection::kLt, ComparisonType::kSigned, a, b))[0]);
  EXPECT_FALSE(Bools(*Compare(ComparisonDirection::kLt, ComparisonType::kUnsigned, a, b))[0]);
}

TEST(Elementwise, FloatToIntConversionSaturatesAndMapsNaNToZero) {
  // JAX: convert_element_type(f32 [nan,1e10,-1e10,3.7,-3.7,inf,-inf,2147483520], int32/uint8/int8).
  const int32_t kMax = std::numeric_limits<int32_t>::max(), kMin = std::numeric_limits<int32_t>::min();
  Array f = F32({kNaNElementwise, 1e10f, -1e10f, 3.7f, -3.7f, kInfElementwise, -kInfElementwise, 2147483520.0f});
  EXPECT_EQ(ValuesElementwise<int32_t>(*Convert(f, DType::kS32)),
            (std::vector<int32_t>{0, kMax, kMin, 3, -3, kMax, kMin, 2147483520}));
  EXPECT_EQ(ValuesElementwise<uint8_t>(*Convert(f, DType::kU8)), (std::vector<uint8_t>{0, 255, 0, 3, 0, 255, 0, 255}));
  EXPECT_EQ(ValuesElementwise<int8_t>(*Convert(f, DType::kS8)), (std::vector<int8_t>{0, 127, -128, 3, -3, 127, -128, 127}));
  Array d = Array::FromVector<double>({3}, {1e30, -1e30, std::nan("")});
  EXPECT_EQ(ValuesElementwise<int64_t>(*Convert(d, DType::kS64)),
            (std::vector<int64_t>{std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(), 0}));
}

TEST(Elementwise, F32ToBf16RoundsToNearestEven) {
  // JAX: jnp.array([1.00390625, 1.01171875, 3.14159], f32).astype(bfloat16).view(uint16)
  // -> [16256, 16258, 16457] (1 + 2^-8 is a tie and rounds to even 1.0).
  Array bf = *Convert(F32({1.00390625f, 1.01171875f, 3.14159f}), DType::kBF16);
  std::vector<uint16_t> bits;
  for (BFloat16 b : bf.values<BFloat16>()) bits.push_back(b.bits);
  EXPECT_EQ(bits, (std::vector<uint16_t>{16256, 16258, 16457}));
}

TEST(Elementwise, F64ToBf16RoundsOnceNotTwice) {
  // 1 + 2^-8 + 2^-30 is just above the bf16 tie: one rounding gives 1 + 2^-7 (0x3F81); rounding
  // to f32 first would land on the tie and round to even 1.0 (0x3F80).
  Array d = Array::FromVector<double>({1}, {1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30)});
  EXPECT_EQ(Convert(d, DType::kBF16)->values<BFloat16>()[0].bits, 0x3F81);
}

TEST(Elementwise, Bf16ArithmeticRoundsBackAfterEachOp) {
  // JAX: bf16 1 + bf16 2^-8 -> 1 (the f32 sum 1.00390625 is a tie, rounds to even).
  Array a = Array::FromVector<BFloat16>({1}, {FloatToBFloat16(1.0f)});
  Array b = Array::FromVector<BFloat16>({1}, {FloatToBFloat16(0.00390625f)});
  EXPECT_EQ(BFloat16ToFloat(Binary(Opcode::kAdd, a, b)->values<BFloat16>()[0]), 1.0f);
}

TEST(Elementwise, F16ExpComputesInF32AndOverflowsToInf) {
  // JAX: jnp.exp(f16 [1, 10, 12]) -> [2.719, 2.203e+04, inf].
  Array h = Array::FromVector<Half>({3}, {FloatToHalf(1.0f), FloatToHalf(10.0f), FloatToHalf(12.0f)});
  Array result = *Unary(Opcode::kExp, h);
  auto out = result.values<Half>();
  EXPECT_EQ(HalfToFloat(out[0]), HalfToFloat(FloatToHalf(std::exp(1.0f))));
  EXPECT_EQ(HalfToFloat(out[1]), 22032.0f);
  EXPECT_TRUE(std::isinf(HalfToFloat(out[2])));
}

TEST(Elementwise, ShiftsByOutOfRangeAmountsGiveZeroOrSignFill) {
  // JAX: shift_left([1,1,-1],[32,-1,3]) -> [0,0,-8]; shift_right_arithmetic([-8,8,-8],[40,40,1])
  // -> [-1,0,-4]; shift_right_logical([-8,8],[32,1]) -> [0,4].
  EXPECT_EQ(ValuesElementwise<int32_t>(*Binary(Opcode::kShiftLeft, S32({1, 1, -1}), S32({32, -1, 3}))),
            (std::vector<int32_t>{0, 0, -8}));
  EXPECT_EQ(ValuesElementwise<int32_t>(*Binary(Opcode::kShiftRightArithmetic, S32({-8, 8, -8}), S32({40, 40, 1}))),
            (std::vector<int32_t>{-1, 0, -4}));
  EXPECT_EQ(ValuesElementwise<int32_t>(*Binary(Opcode::kShiftRightLogical, S32({-8, 8}), S32({32, 1}))),
            (std::vector<int32_t>{0, 4}));
}

TEST(Elementwise, RoundingAwayFromZeroAndToEven) {
  // JAX: lax.round([0.5,1.5,2.5,-0.5,-2.5]) -> [1,2,3,-1,-3]; TO_NEAREST_EVEN -> [0,2,2,-0,-2].
  Array x = F32({0.5f, 1.5f, 2.5f, -0.5f, -2.5f});
  EXPECT_EQ(ValuesElementwise<float>(*Unary(Opcode::kRoundNearestAfz, x)), (std::vector<float>{1, 2, 3, -1, -3}));
  std::vector<float> even = ValuesElementwise<float>(*Unary(Opcode::kRoundNearestEven, x));
  EXPECT_EQ(even, (std::vector<float>{0, 2, 2, -0.0f, -2}));
  EXPECT_TRUE(std::signbit(even[3]));
}

TEST(Elementwise, SignKeepsNaNAndSignedZero) {
  std::vector<float> s = ValuesElementwise<float>(*Unary(Opcode::kSign, F32({kNaNElementwise, -0.0f, 0.0f, -3.0f, 2.0f})));
  EXPECT_TRUE(std::isnan(s[0]));
  EXPECT_TRUE(s[1] == 0.0f && std::signbit(s[1]));
  EXPECT_TRUE(s[2] == 0.0f && !std::signbit(s[2]));
  EXPECT_EQ(s[3], -1.0f);
  EXPECT_EQ(s[4], 1.0f);
  EXPECT_EQ(ValuesElementwise<int32_t>(*Unary(Opcode::kSign, S32({-5, 0, 9}))), (std::vector<int32_t>{-1, 0, 1}));
}

TEST(Elementwise, CountLeadingZerosAndPopulationCount) {
  // JAX: lax.clz([0,1,-1,256]) -> [32,31,0,23]; population_count([0,1,-1,255]) -> [0,1,32,8].
  EXPECT_EQ(ValuesElementwise<int32_t>(*Unary(Opcode::kClz, S32({0, 1, -1, 256}))), (std::vector<int32_t>{32, 31, 0, 23}));
  EXPECT_EQ(ValuesElementwise<int32_t>(*Unary(Opcode::kPopulationCount, S32({0, 1, -1, 255}))),
            (std::vector<int32_t>{0, 1, 32, 8}));
}

TEST(Elementwise, IntegerPowerWrapsAndNegativeExponentsGiveZeroUnlessBaseIsOne) {
  // 2^-1 = 0, (-1)^-1 = 0 (XLA evaluator), 1^-3 = 1, 2^31 wraps to INT_MIN, 0^0 = 1,
  // 3^40 mod 2^32 = 689956897.
  EXPECT_EQ(ValuesElementwise<int32_t>(*Binary(Opcode::kPower, S32({2, -1, 1, 2, 0, 3}), S32({-1, -1, -3, 31, 0, 40}))),
            (std::vector<int32_t>{0, 0, 1, std::numeric_limits<int32_t>::min(), 1, 689956897}));
}

TEST(Elementwise, FloatPowerOfOneOrToZeroIsOneEvenWithNaN) {
  std::vector<float> p = ValuesElementwise<float>(*Binary(Opcode::kPower, F32({1.0f, kNaNElementwise, 2.0f}), F32({kNaNElementwise, 0.0f, 10.0f})));
  EXPECT_EQ(p, (std::vector<float>{1.0f, 1.0f, 1024.0f}));
}

TEST(Elementwise, ClampReturnsNaNOperandAndBoundsOthers) {
  // JAX: lax.clamp(0., [nan,-1,5], 2.) -> [nan, 0, 2].
  Array lo = F32({0, 0, 0}), x = F32({kNaNElementwise, -1.0f, 5.0f}), hi = F32({2, 2, 2}), out = F32({0, 0, 0});
  TernaryKernel k = *FindClampKernel(DType::kF32);
  k(lo.data(), x.data(), hi.data(), out.data(), 3);
  std::vector<float> v = ValuesElementwise<float>(out);
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_EQ(v[1], 0.0f);
  EXPECT_EQ(v[2], 2.0f);
}

TEST(Elementwise, SelectPicksPerElement) {
  Array p = Array::FromVector<bool>({3}, {true, false, true});
  Array t = S32({1, 2, 3}), f = S32({10, 20, 30}), out = S32({0, 0, 0});
  (*FindSelectKernel(DType::kS32))(p.data(), t.data(), f.data(), out.data(), 3);
  EXPECT_EQ(ValuesElementwise<int32_t>(out), (std::vector<int32_t>{1, 20, 3}));
}

TEST(Elementwise, TranscendentalOpsMatchLibm) {
  Array x = F32({27.0f, 4.0f, 0.0f, 1.0f});
  EXPECT_EQ(ValuesElementwise<float>(*Unary(Opcode::kCbrt, x))[0], 3.0f);
  EXPECT_EQ(ValuesElementwise<float>(*Unary(Opcode::kRsqrt, x))[1], 0.5f);
  EXPECT_EQ(ValuesElementwise<float>(*Unary(Opcode::kExpm1, x))[2], 0.0f);
  EXPECT_EQ(ValuesElementwise<float>(*Unary(Opcode::kLog1p, x))[2], 0.0f);
  EXPECT_EQ(ValuesElementwise<float>(*Unary(Opcode::kErf, x))[2], 0.0f);
  EXPECT_FLOAT_EQ(ValuesElementwise<float>(*Unary(Opcode::kLogistic, x))[2], 0.5f);
  EXPECT_FLOAT_EQ(ValuesElementwise<float>(*Unary(Opcode::kTan, x))[3], std::tan(1.0f));
  EXPECT_FLOAT_EQ(ValuesElementwise<float>(*Binary(Opcode::kAtan2, F32({1.0f}), F32({1.0f})))[0], 0.78539816f);
  EXPECT_EQ(Bools(*Unary(Opcode::kIsFinite, F32({1.0f, kInfElementwise, kNaNElementwise}))), (std::vector<bool>{true, false, false}));
}

TEST(Elementwise, LogicOpsOnPredAndIntegers) {
  Array p = Array::FromVector<bool>({4}, {false, false, true, true});
  Array q = Array::FromVector<bool>({4}, {false, true, false, true});
  EXPECT_EQ(Bools(*Binary(Opcode::kAnd, p, q)), (std::vector<bool>{false, false, false, true}));
  EXPECT_EQ(Bools(*Binary(Opcode::kOr, p, q)), (std::vector<bool>{false, true, true, true}));
  EXPECT_EQ(Bools(*Binary(Opcode::kXor, p, q)), (std::vector<bool>{false, true, true, false}));
  EXPECT_EQ(Bools(*Unary(Opcode::kNot, p)), (std::vector<bool>{true, true, false, false}));
  EXPECT_EQ(ValuesElementwise<int32_t>(*Unary(Opcode::kNot, S32({0, -1, 5}))), (std::vector<int32_t>{-1, 0, -6}));
  EXPECT_EQ(ValuesElementwise<int32_t>(*Binary(Opcode::kXor, S32({12}), S32({10}))), (std::vector<int32_t>{6}));
}

TEST(Elementwise, ComplexPartsAndConstruction) {
  Array c = *Binary(Opcode::kComplex, F32({1.0f, -2.0f}), F32({3.0f, 4.0f}));
  ASSERT_EQ(c.dtype(), DType::kC64);
  EXPECT_EQ(ValuesElementwise<float>(*Unary(Opcode::kReal, c)), (std::vector<float>{1.0f, -2.0f}));
  EXPECT_EQ(ValuesElementwise<float>(*Unary(Opcode::kImag, c)), (std::vector<float>{3.0f, 4.0f}));
  EXPECT_EQ(ValuesElementwise<float>(*Unary(Opcode::kAbs, *Binary(Opcode::kComplex, F32({3.0f}), F32({4.0f})))),
            (std::vector<float>{5.0f}));
}

TEST(Elementwise, IntegerAddAndNegateWrap) {
  const int32_t kMin = std::numeric_limits<int32_t>::min(), kMax = std::numeric_limits<int32_t>::max();
  EXPECT_EQ(ValuesElementwise<int32_t>(*Binary(Opcode::kAdd, S32({kMax}), S32({1})))[0], kMin);
  EXPECT_EQ(ValuesElementwise<int32_t>(*Unary(Opcode::kNegate, S32({kMin})))[0], kMin);
  EXPECT_EQ(ValuesElementwise<int32_t>(*Unary(Opcode::kAbs, S32({kMin, -3})))[1], 3);
}

TEST(Elementwise, BitcastConvertReinterpretsBytesAndAdjustsDims) {
  Array one = F32({1.0f, -2.0f});
  EXPECT_EQ(ValuesElementwise<int32_t>(*BitcastConvert(one, DType::kS32)),
            (std::vector<int32_t>{0x3f800000, static_cast<int32_t>(0xc0000000u)}));
  Array bytes = *BitcastConvert(one, DType::kU8);
  EXPECT_EQ(bytes.dims(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(bytes.values<uint8_t>()[3], 0x3f);
  EXPECT_EQ(ValuesElementwise<float>(*BitcastConvert(bytes, DType::kF32)), (std::vector<float>{1.0f, -2.0f}));
  EXPECT_FALSE(BitcastConvert(Array::FromVector<uint8_t>({3}, {1, 2, 3}), DType::kF32).ok());
}

TEST(Elementwise, UnsupportedOpAndTypeNameBoth) {
  StatusOr<UnaryKernel> k = FindUnaryKernel(Opcode::kSin, DType::kS32);
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.status().message().find("sine is not defined for element type s32"), std::string::npos);
  StatusOr<BinaryKernel> b = FindBinaryKernel(Opcode::kAnd, DType::kF32);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("and is not defined for element type f32"), std::string::npos);
}

// ---- fast vs reference on random data ----

Array RandomArray(DType t, int64_t n, std::mt19937& rng) {
  Array a(Shape(t, {n}));
  std::uniform_int_distribution<int> byte(0, 255);
  for (int64_t i = 0; i < a.byte_size(); ++i) a.data()[i] = std::byte(static_cast<uint8_t>(byte(rng)));
  if (t == DType::kPred) {
    for (int64_t i = 0; i < n; ++i) a.data()[i] = std::byte(static_cast<uint8_t>(a.data()[i]) & 1);
  }
  return a;
}

bool SameBitsOrBothNaN(const Array& a, const Array& b) {
  if (a.dtype() != b.dtype() || a.dims() != b.dims()) return false;
  if (a == b) return true;
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    const double x = a.GetDouble(i), y = b.GetDouble(i);
    if (!(x == y || (std::isnan(x) && std::isnan(y)))) return false;
  }
  return true;
}

const DType kAllTypes[] = {DType::kPred, DType::kS8, DType::kS16, DType::kS32, DType::kS64,
                           DType::kU8, DType::kU16, DType::kU32, DType::kU64, DType::kF16,
                           DType::kBF16, DType::kF32, DType::kF64, DType::kC64, DType::kC128};

bool IsApproximated(Opcode op) {
  switch (op) {
    case Opcode::kExp: case Opcode::kExpm1: case Opcode::kLog: case Opcode::kLog1p:
    case Opcode::kTanh: case Opcode::kLogistic: case Opcode::kErf: case Opcode::kSin:
    case Opcode::kCos: case Opcode::kAtan: case Opcode::kAsin: case Opcode::kAcos:
    case Opcode::kAsinh: case Opcode::kAcosh: case Opcode::kAtanh: case Opcode::kSinh:
      return true;
    default:
      return false;
  }
}

TEST(Elementwise, EveryFastUnaryKernelMatchesItsReference) {
  std::mt19937 rng(1);
  int checked = 0;
  for (int op = 0; op < kOpcodeCount; ++op) {
    for (DType t : kAllTypes) {
      if (!FindUnaryKernel(static_cast<Opcode>(op), t).ok()) continue;
      // Vector transcendentals are within an ulp bound, not bit-exact: elementwise_simd_test.cc.
      if (IsApproximated(static_cast<Opcode>(op)) && IsFloating(t)) continue;
      Array in = RandomArray(t, 1000, rng);  // > one f16 chunk
      StatusOr<Array> fast = Unary(static_cast<Opcode>(op), in);
      StatusOr<Array> ref = UnaryReference(static_cast<Opcode>(op), in);
      ASSERT_TRUE(fast.ok() && ref.ok());
      EXPECT_TRUE(SameBitsOrBothNaN(*fast, *ref)) << OpcodeName(static_cast<Opcode>(op)) << " " << DTypeName(t);
      ++checked;
    }
  }
  EXPECT_GT(checked, 150);
}

TEST(Elementwise, EveryFastBinaryKernelMatchesItsReference) {
  std::mt19937 rng(2);
  int checked = 0;
  for (int op = 0; op < kOpcodeCount; ++op) {
    for (DType t : kAllTypes) {
      if (!FindBinaryKernel(static_cast<Opcode>(op), t).ok()) continue;
      Array a = RandomArray(t, 1000, rng), b = RandomArray(t, 1000, rng);
      StatusOr<Array> fast = Binary(static_cast<Opcode>(op), a, b);
      StatusOr<Array> ref = BinaryReference(static_cast<Opcode>(op), a, b);
      ASSERT_TRUE(fast.ok() && ref.ok());
      EXPECT_TRUE(SameBitsOrBothNaN(*fast, *ref)) << OpcodeName(static_cast<Opcode>(op)) << " " << DTypeName(t);
      ++checked;
    }
  }
  EXPECT_GT(checked, 100);
}

TEST(Elementwise, EveryCompareAndConvertKernelMatchesItsReference) {
  std::mt19937 rng(3);
  for (DType t : kAllTypes) {
    Array a = RandomArray(t, 300, rng), b = RandomArray(t, 300, rng);
    for (ComparisonType k : {ComparisonType::kNone, ComparisonType::kTotalOrder}) {
      for (ComparisonDirection d : {ComparisonDirection::kEq, ComparisonDirection::kLt, ComparisonDirection::kGe}) {
        StatusOr<Array> fast = Compare(d, k, a, b);
        if (!fast.ok()) continue;
        EXPECT_EQ(*fast, *CompareReference(d, k, a, b)) << DTypeName(t);
      }
    }
    for (DType to : kAllTypes) {
      EXPECT_TRUE(SameBitsOrBothNaN(*Convert(a, to), *ConvertReference(a, to)))
          << DTypeName(t) << " -> " << DTypeName(to);
    }
  }
}

}  // namespace
}  // namespace xs::kernels
