// Array storage, typed access, XLA-style conversion, box copies and equality. Expected values are
// derived by hand from the rules (XLA convert semantics, IEEE rounding) or from ml_dtypes.
#include "xshard/core/array.h"
#include "xshard/core/allocation_failure.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <limits>

namespace xs {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

template <typename T>
std::vector<T> Values(const Array& a) {
  auto v = a.values<T>();
  return std::vector<T>(v.begin(), v.end());
}
std::vector<double> Doubles(const Array& a) {
  std::vector<double> out;
  for (int64_t i = 0; i < a.num_elements(); ++i) out.push_back(a.GetDouble(i));
  return out;
}

TEST(ArrayTest, DefaultIsAnF32ScalarZero) {
  Array a;
  EXPECT_EQ(a.shape().ToString(), "f32[]");
  EXPECT_EQ(a.num_elements(), 1);
  EXPECT_EQ(a.GetDouble(0), 0.0);
}

TEST(ArrayTest, StorageIs64ByteAlignedAndZeroFilled) {
  for (const std::vector<int64_t>& dims :
       std::vector<std::vector<int64_t>>{{}, {0}, {3}, {7, 5}, {2, 0, 4}, {1000}}) {
    Array a(DType::kF64, dims);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % 64, 0u);
    for (int64_t i = 0; i < a.num_elements(); ++i) EXPECT_EQ(a.GetDouble(i), 0.0);
  }
}

TEST(ArrayTest, LargeBuffersAreHugePageAlignedAndSmallOnes64Bytes) {
  EXPECT_EQ(BufferCapacity(1), 64u);
  EXPECT_EQ(BufferCapacity(100), 128u);
  EXPECT_EQ(BufferCapacity(kHugeBufferBytes - 1), kHugeBufferBytes);
  EXPECT_EQ(BufferCapacity(kHugeBufferBytes), kHugeBufferBytes);
  EXPECT_EQ(BufferCapacity(kHugeBufferBytes + 1), kHugeBufferBytes + (size_t{2} << 20));
  // f32[1100,1000] is 4.4 MB: its storage starts on a 2 MiB boundary and the values round-trip.
  Array a = Array::Full(DType::kF32, {1100, 1000}, 1.5);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % (size_t{2} << 20), 0u);
  EXPECT_EQ(a.GetDouble(1100 * 1000 - 1), 1.5);
  void* small = AllocateBuffer(1000);
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small) % 64, 0u);
  std::free(small);
}

TEST(ArrayTest, ConstructorDropsLayoutAndDynamicFlags) {
  Shape s(DType::kS32, {2, 2});
  s.set_layout(Layout{{0, 1}, ""});
  EXPECT_EQ(Array(s).shape().ToString(), "s32[2,2]");
}

TEST(ArrayTest, CopiesAreDeepAndMovesSteal) {
  Array a = Array::FromVector<float>({2}, {1, 2});
  Array b = a;
  b.SetDouble(0, 7);
  EXPECT_EQ(a.GetDouble(0), 1.0);
  EXPECT_EQ(b.GetDouble(0), 7.0);
  Array c;
  c = b;
  b.SetDouble(1, 9);
  EXPECT_EQ(c.GetDouble(1), 2.0);
  const std::byte* p = c.data();
  Array d = std::move(c);
  EXPECT_EQ(d.data(), p);
  EXPECT_EQ(d.shape().ToString(), "f32[2]");
}

TEST(ArrayTest, FromVectorAndScalarStoreNativeValues) {
  Array a = Array::FromVector<int16_t>({2, 2}, {1, -2, 3, -4});
  EXPECT_EQ(a.shape().ToString(), "s16[2,2]");
  EXPECT_THAT(Values<int16_t>(a), ElementsAre(1, -2, 3, -4));
  Array p = Array::FromVector<bool>({3}, {true, false, true});
  EXPECT_THAT(Values<uint8_t>(p), ElementsAre(1, 0, 1));
  EXPECT_EQ(Array::Scalar<double>(2.5).shape().ToString(), "f64[]");
  EXPECT_EQ(Array::Scalar<Half>(FloatToHalf(1.5f)).GetDouble(0), 1.5);
  EXPECT_EQ(Array::Scalar<std::complex<float>>({1, 2}).shape().ToString(), "c64[]");
}

TEST(ArrayTest, IotaCountsInTheTargetType) {
  EXPECT_THAT(Doubles(Array::Iota(DType::kF32, {2, 2})), ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(Values<uint8_t>(Array::Iota(DType::kPred, {3})), ElementsAre(0, 1, 1));
  // Integers wrap like jnp.arange(300).astype(int8): 200 -> -56.
  EXPECT_EQ(Array::Iota(DType::kS8, {300}).GetDouble(200), -56);
  EXPECT_EQ(Array::Iota(DType::kBF16, {300}).GetDouble(257), 256);  // 257 is a bf16 tie
}

TEST(ArrayTest, FullConvertsTheValueLikeConvert) {
  EXPECT_THAT(Values<uint16_t>(Array::Full(DType::kF16, {2}, 0.1)), ElementsAre(0x2e66, 0x2e66));
  EXPECT_THAT(Values<int32_t>(Array::Full(DType::kS32, {1}, -2.7)), ElementsAre(-2));
  EXPECT_THAT(Values<uint8_t>(Array::Full(DType::kU8, {1}, 300.5)), ElementsAre(255));
}

TEST(ArrayTest, FromBytesChecksTheByteCount) {
  const std::vector<std::byte> bytes(24, std::byte{0});
  StatusOr<Array> a = Array::FromBytes(Shape(DType::kF32, {2, 3}), bytes);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->shape().ToString(), "f32[2,3]");
  StatusOr<Array> bad = Array::FromBytes(Shape(DType::kF32, {2, 2}), bytes);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "Array::FromBytes: f32[2,2] needs 16 bytes (4 elements x 4), got 24");
  StatusOr<Array> tuple = Array::FromBytes(Shape::Tuple({}), {});
  ASSERT_FALSE(tuple.ok());
  EXPECT_THAT(tuple.status().message(), HasSubstr("() is not an array shape"));
}

struct SetGetCase {
  DType dtype;
  double in;
  double out;
};

TEST(ArrayTest, SetDoubleConvertsAndGetDoubleReadsBackForEveryRealType) {
  const SetGetCase cases[] = {
      {DType::kPred, 2.5, 1},
      {DType::kPred, 0, 0},
      {DType::kPred, NAN, 1},
      {DType::kS4, 9, 7},
      {DType::kS4, -9.5, -8},
      {DType::kS4, -3.9, -3},
      {DType::kU4, -1, 0},
      {DType::kU4, 20, 15},
      {DType::kS8, 1e10, 127},
      {DType::kS8, -1e10, -128},
      {DType::kS16, -2.5, -2},
      {DType::kS32, NAN, 0},
      {DType::kS64, 1e30, 9223372036854775807.0},
      {DType::kU8, -3, 0},
      {DType::kU16, 65535.9, 65535},
      {DType::kU32, 4e9, 4e9},
      {DType::kU64, -1, 0},
      {DType::kF16, 0.1, 0.0999755859375},
      {DType::kF16, 1e6, INFINITY},
      {DType::kBF16, 0.1, 0.10009765625},
      {DType::kF32, 0.1, static_cast<float>(0.1)},
      {DType::kF64, 0.1, 0.1},
      // 0.3 = 1.2 * 2^-2: nearest with 3 fraction bits is 1.25 * 2^-2 (2 bits: 1.25 too).
      {DType::kF8E4M3FN, 0.3, 0.3125},
      {DType::kF8E5M2, 0.3, 0.3125},
      {DType::kF8E4M3B11FNUZ, 0.3, 0.3125},
      {DType::kF8E8M0FNU, 0.3, 0.25},
      {DType::kF8E4M3FN, 1000, NAN},
      {DType::kC64, 2.5, 2.5},
      {DType::kS2, 5, 1},
      {DType::kS2, -2.9, -2},
      {DType::kU2, 3.5, 3},
      {DType::kF8E4M3FNUZ, 0.3, 0.3125},
      {DType::kF8E5M2FNUZ, 1e6, NAN},
      {DType::kF8E4M3, 1000, INFINITY},
      {DType::kF8E3M4, 0.3, 0.296875},
      {DType::kF4E2M1FN, 0.3, 0.5},
      {DType::kF4E2M1FN, -100, -6},
      {DType::kC128, -1e300, -1e300},
  };
  for (const SetGetCase& c : cases) {
    Array a(c.dtype, {2});
    a.SetDouble(1, c.in);
    if (std::isnan(c.out)) {
      EXPECT_TRUE(std::isnan(a.GetDouble(1))) << DTypeName(c.dtype) << " " << c.in;
    } else {
      EXPECT_EQ(a.GetDouble(1), c.out) << DTypeName(c.dtype) << " " << c.in;
    }
    // Untouched elements keep the zero bytes, which f8e8m0fnu (no zero) reads as 2^-127.
    EXPECT_EQ(a.GetDouble(0), c.dtype == DType::kF8E8M0FNU ? 0x1p-127 : 0) << DTypeName(c.dtype);
  }
}

TEST(ArrayTest, SubByteTypesStoreOneNibblePerByte) {
  Array s4(DType::kS4, {2});
  s4.SetDouble(0, -1);
  s4.SetDouble(1, 7);
  EXPECT_THAT(Values<int8_t>(s4), ElementsAre(-1, 7));  // a sign-extended int8 per element
  Array nibble = *Array::FromBytes(Shape(DType::kS4, {1}), std::vector<std::byte>{std::byte{0x0f}});
  EXPECT_EQ(nibble.GetDouble(0), -1);  // ml_dtypes' low-nibble form reads the same
  Array u4(DType::kU4, {1});
  u4.SetDouble(0, 12);
  EXPECT_THAT(Values<uint8_t>(u4), ElementsAre(12));
  // s2 / u2: integers wrap to the two low bits (as XLA's convert from a wider integer).
  Array s2 = Array::FromVector<int32_t>({3}, {5, 6, -3}).Convert(DType::kS2);
  EXPECT_THAT(Values<int8_t>(s2), ElementsAre(1, -2, 1));
  Array u2 = Array::FromVector<int32_t>({2}, {7, -1}).Convert(DType::kU2);
  EXPECT_THAT(Values<uint8_t>(u2), ElementsAre(3, 3));
}

TEST(ArrayTest, ComplexGetDoubleIsTheRealPart) {
  Array a = Array::FromVector<std::complex<double>>({1}, {{3.5, -1}});
  EXPECT_EQ(a.GetDouble(0), 3.5);
}

TEST(ArrayTest, AtIndexesRowMajor) {
  Array a = Array::Iota(DType::kS32, {2, 3, 4});
  EXPECT_EQ(a.At({1, 2, 3}), 23);
  EXPECT_EQ(a.At({1, 0, 2}), 14);
  EXPECT_EQ(Array::Scalar<float>(5).At({}), 5);
}

TEST(ArrayTest, SliceCopiesABox) {
  Array a = Array::Iota(DType::kS32, {3, 4});
  Array s = a.Slice({1, 1}, {2, 2});
  EXPECT_EQ(s.shape().ToString(), "s32[2,2]");
  EXPECT_THAT(Values<int32_t>(s), ElementsAre(5, 6, 9, 10));
  Array b = Array::Iota(DType::kF16, {2, 3, 4}).Slice({1, 0, 2}, {1, 3, 2});
  EXPECT_THAT(Doubles(b), ElementsAre(14, 15, 18, 19, 22, 23));
  EXPECT_EQ(a.Slice({0, 4}, {3, 0}).num_elements(), 0);
  EXPECT_EQ(Array::Scalar<int8_t>(3).Slice({}, {}).GetDouble(0), 3);
}

TEST(ArrayTest, UpdateSliceWritesABox) {
  Array a(DType::kS32, {3, 4});
  a.UpdateSlice(Array::FromVector<int32_t>({2, 2}, {1, 2, 3, 4}), {1, 2});
  EXPECT_THAT(Values<int32_t>(a), ElementsAre(0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 3, 4));
  Array b(DType::kS32, {2, 2});
  b.UpdateSlice(Array(DType::kS32, {0, 2}), {2, 0});  // empty box at the end is fine
  EXPECT_THAT(Values<int32_t>(b), ElementsAre(0, 0, 0, 0));
}

TEST(ArrayTest, ReshapeKeepsRowMajorData) {
  Array a = Array::Iota(DType::kF32, {2, 3}).Reshape({3, 2});
  EXPECT_EQ(a.shape().ToString(), "f32[3,2]");
  EXPECT_EQ(a.At({2, 1}), 5);
  EXPECT_EQ(Array::Scalar<int32_t>(4).Reshape({1, 1}).At({0, 0}), 4);
}

TEST(ArrayTest, ConvertFloatToIntTruncatesTowardZeroAndSaturates) {
  Array f = Array::FromVector<float>({6}, {-2.7f, 2.7f, 1e10f, -1e10f, NAN, -0.5f});
  EXPECT_THAT(Values<int32_t>(f.Convert(DType::kS32)),
              ElementsAre(-2, 2, std::numeric_limits<int32_t>::max(),
                          std::numeric_limits<int32_t>::min(), 0, 0));
  EXPECT_THAT(Values<uint8_t>(f.Convert(DType::kU8)), ElementsAre(0, 2, 255, 0, 0, 0));
  EXPECT_THAT(Values<int64_t>(Array::FromVector<double>({1}, {1e300}).Convert(DType::kS64)),
              ElementsAre(std::numeric_limits<int64_t>::max()));
  EXPECT_THAT(Values<uint64_t>(Array::FromVector<double>({1}, {1e300}).Convert(DType::kU64)),
              ElementsAre(std::numeric_limits<uint64_t>::max()));
}

TEST(ArrayTest, ConvertIntToIntWrapsLikeXla) {
  Array a = Array::FromVector<int32_t>({3}, {300, -129, -1});
  EXPECT_THAT(Values<int8_t>(a.Convert(DType::kS8)), ElementsAre(44, 127, -1));
  EXPECT_THAT(Values<uint16_t>(a.Convert(DType::kU16)), ElementsAre(300, 65407, 65535));
  EXPECT_THAT(Doubles(a.Convert(DType::kS4)), ElementsAre(-4, -1, -1));  // low 4 bits
}

TEST(ArrayTest, ConvertToPredIsNonZero) {
  Array f = Array::FromVector<float>({4}, {0.0f, -0.0f, NAN, 0.5f});
  EXPECT_THAT(Values<uint8_t>(f.Convert(DType::kPred)), ElementsAre(0, 0, 1, 1));
  Array i = Array::FromVector<int32_t>({3}, {0, 5, -1});
  EXPECT_THAT(Values<uint8_t>(i.Convert(DType::kPred)), ElementsAre(0, 1, 1));
  Array p = Array::FromVector<bool>({2}, {true, false});
  EXPECT_THAT(Values<float>(p.Convert(DType::kF32)), ElementsAre(1.0f, 0.0f));
}

TEST(ArrayTest, ConvertIntToFloatRoundsToNearestEven) {
  Array a = Array::FromVector<int64_t>({3}, {16777217, 16777219, 65519});
  EXPECT_THAT(Values<float>(a.Convert(DType::kF32)), ElementsAre(16777216.0f, 16777220.0f, 65519.0f));
  EXPECT_THAT(Values<uint16_t>(a.Convert(DType::kF16)), ElementsAre(0x7c00, 0x7c00, 0x7bff));
  // 2^62 + 2^54 + 1 is just above a bf16 tie: one rounding goes up (a double first would tie).
  Array big = Array::FromVector<int64_t>({1}, {(int64_t{1} << 62) + (int64_t{1} << 54) + 1});
  EXPECT_THAT(Values<uint16_t>(big.Convert(DType::kBF16)), ElementsAre(0x5e81));
  Array u = Array::FromVector<uint64_t>({1}, {std::numeric_limits<uint64_t>::max()});
  EXPECT_THAT(Values<float>(u.Convert(DType::kF32)), ElementsAre(0x1p64f));
}

TEST(ArrayTest, ConvertBetweenFloatsRoundsOnce) {
  Array d = Array::FromVector<double>({3}, {1.0 + 0x1p-8 + 0x1p-40, 1e300, -0.0});
  EXPECT_THAT(Values<uint16_t>(d.Convert(DType::kBF16)), ElementsAre(0x3f81, 0x7f80, 0x8000));
  Array h = Array::FromVector<Half>({2}, {Half{0x3555}, Half{0xfc00}});
  EXPECT_THAT(Values<float>(h.Convert(DType::kF32)), ElementsAre(0.333251953125f, -INFINITY));
  Array f8 = Array::FromVector<float>({2}, {1.0625f, 500.0f}).Convert(DType::kF8E4M3FN);
  EXPECT_THAT(Values<uint8_t>(f8), ElementsAre(0x38, 0x7f));  // tie to even; overflow to NaN
}

TEST(ArrayTest, ConvertComplexTakesTheRealPartAndRealBecomesComplex) {
  Array c = Array::FromVector<std::complex<float>>({2}, {{1.5f, 2}, {-3, 4}});
  EXPECT_THAT(Values<float>(c.Convert(DType::kF32)), ElementsAre(1.5f, -3.0f));
  EXPECT_THAT(Values<std::complex<double>>(c.Convert(DType::kC128)),
              ElementsAre(std::complex<double>(1.5, 2), std::complex<double>(-3, 4)));
  Array r = Array::FromVector<int32_t>({1}, {7});
  EXPECT_THAT(Values<std::complex<float>>(r.Convert(DType::kC64)),
              ElementsAre(std::complex<float>(7, 0)));
  Array imag_only = Array::FromVector<std::complex<float>>({1}, {{0, 1}});
  EXPECT_THAT(Values<uint8_t>(imag_only.Convert(DType::kPred)), ElementsAre(1));
}

TEST(ArrayTest, EqualityIsShapeAndBytes) {
  Array a = Array::FromVector<float>({2}, {1, NAN});
  EXPECT_TRUE(a == Array(a));  // bitwise: NaN equals itself
  EXPECT_FALSE(a == Array::FromVector<float>({2}, {1, 2}));
  EXPECT_FALSE(Array::Iota(DType::kS32, {4}) == Array::Iota(DType::kS32, {2, 2}));
  EXPECT_FALSE(Array::Iota(DType::kS32, {4}) == Array::Iota(DType::kU32, {4}));
  EXPECT_TRUE(Array(DType::kF32, {0}) == Array(DType::kF32, {0}));
}

}  // namespace
}  // namespace xs

namespace xs {
namespace {

TEST(ArrayBufferCache, AFreedLargeBufferIsReusedWithItsOwnContentsNeverAnother) {
  // A 4 MiB buffer freed and asked for again comes back (no fresh pages); a zero-initialized
  // Array is still all zeros even when its memory held other values before.
  const std::byte* first = nullptr;
  {
    Array a = Array::Full(DType::kF32, {1031, 1021}, 7.0);  // a size no other test uses
    first = a.data();
  }
  Array b(DType::kF32, {1031, 1021});
  EXPECT_EQ(b.data(), first);
  for (int64_t i = 0; i < b.num_elements(); i += 4099) ASSERT_EQ(b.GetDouble(i), 0.0) << i;
  // Two live arrays of that size never share memory.
  Array c(DType::kF32, {1031, 1021});
  EXPECT_NE(c.data(), b.data());
}

}  // namespace
}  // namespace xs
