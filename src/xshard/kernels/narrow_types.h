// Storage types and scalar conversions for the narrow element types the kernels compute on by
// widening, as XLA's CPU backend does: the float8 types and f4e2m1fn compute in f32 (every value is
// exact there), s2 / s4 in s8 and u2 / u4 in u8, each op's result rounded (or wrapped) back to the
// narrow type. Internal to kernels/ (numeric.h includes it).
//
// Semantics, checked against JAX 0.10.2 on CPU (and ml_dtypes where the two agree):
//  - convert to a narrow float rounds once to nearest even, from f32 or f64 (integers go through
//    f32 first, as XLA's convert does; ml_dtypes takes f64 through f32). Values past the largest
//    finite become inf (f8e4m3, f8e5m2, f8e3m4) or NaN (the fn / fnuz types); f4e2m1fn saturates
//    at +-6 and maps every NaN to -0 (0x8, XLA; ml_dtypes gives -NaN +0). f8e8m0fnu follows core's
//    DoubleToFloat8, except that XLA makes f64 values below 2^-127 NaN.
//  - arithmetic on the f8 types and f4e2m1fn rounds each result through f16 (XLA's float
//    normalization computes them in f16: f32 result -> f16 -> narrow, two roundings); f8e8m0fnu
//    computes in f32 and rounds once. XLA's converts to f8e5m2 from f16, bf16 and the other
//    narrow floats give every NaN as 0x7f (so do its arithmetic NaNs); from f32 and f64 they keep
//    the NaN's sign (0x7e / 0xfe).
//  - decode keeps a NaN's sign, except the single NaN of the fnuz types and f8e8m0fnu (+NaN).
//  - s2 / s4 / u2 / u4 wrap after each op; a float converts to them truncating and saturating
//    (NaN -> 0), a wider integer wraps. Shifts and count-leading-zeros act on the narrow width
//    (XLA emits them on i4 / i2), popcnt too except on s4, which XLA widens to s8 first (so
//    popcnt(s4 -1) counts 8 bits, wrapped to -8).
#ifndef XSHARD_KERNELS_NARROW_TYPES_H_
#define XSHARD_KERNELS_NARROW_TYPES_H_

#include <array>
#include <bit>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "xshard/core/array.h"
#include "xshard/core/dtype.h"

namespace xs::kernels {

// One element of narrow float type T: the code in a byte (f4e2m1fn in the low nibble).
template <DType T>
struct NarrowFloat {
  uint8_t bits = 0;
};

// One element of narrow integer type T as the host stores it: s2 / s4 sign-extended into an
// int8, u2 / u4 as a uint8 below 2^bits.
template <DType T>
struct NarrowInt {
  static constexpr bool kSigned = T == DType::kS2 || T == DType::kS4;
  static constexpr int kBits = T == DType::kS2 || T == DType::kU2 ? 2 : 4;
  using Wide = std::conditional_t<kSigned, int8_t, uint8_t>;
  Wide v = 0;
};

template <typename T>
inline constexpr bool kIsNarrowFloat = false;
template <DType T>
inline constexpr bool kIsNarrowFloat<NarrowFloat<T>> = true;
template <typename T>
inline constexpr bool kIsNarrowInt = false;
template <DType T>
inline constexpr bool kIsNarrowInt<NarrowInt<T>> = true;

template <typename T>
concept NarrowFloatT = kIsNarrowFloat<T>;
template <typename T>
concept NarrowIntT = kIsNarrowInt<T>;
template <typename T>
concept NarrowT = NarrowFloatT<T> || NarrowIntT<T>;

namespace narrow {

// How a format spends its special codes. kIeee: inf and NaNs at the all-ones exponent; kFn: no
// inf, NaN = S.1111.111; kFnuz: no inf, no -0, NaN = 0x80; kFinite: neither (f4e2m1fn).
enum class Kind { kIeee, kFn, kFnuz, kFinite, kE8M0 };
struct Format {
  int exp_bits, man_bits, bias;
  Kind kind;
};

constexpr Format FormatOf(DType t) {
  switch (t) {
    case DType::kF8E4M3FN: return {4, 3, 7, Kind::kFn};
    case DType::kF8E4M3FNUZ: return {4, 3, 8, Kind::kFnuz};
    case DType::kF8E4M3B11FNUZ: return {4, 3, 11, Kind::kFnuz};
    case DType::kF8E4M3: return {4, 3, 7, Kind::kIeee};
    case DType::kF8E5M2: return {5, 2, 15, Kind::kIeee};
    case DType::kF8E5M2FNUZ: return {5, 2, 16, Kind::kFnuz};
    case DType::kF8E3M4: return {3, 4, 3, Kind::kIeee};
    case DType::kF4E2M1FN: return {2, 1, 1, Kind::kFinite};
    default: return {8, 0, 127, Kind::kE8M0};  // f8e8m0fnu
  }
}

// The f32 bits of code `c` of format `f` (exact; NaN as the quiet NaN, signed as above).
constexpr uint32_t DecodeBits(const Format& f, uint32_t c) {
  constexpr uint32_t kQuietNan = 0x7fc00000u;
  if (f.kind == Kind::kE8M0) {
    if (c == 0xff) return kQuietNan;
    if (c == 0) return 0x00400000u;  // 2^-127: an f32 subnormal
    return c << 23;
  }
  const int sign_shift = f.exp_bits + f.man_bits;
  c &= (1u << (sign_shift + 1)) - 1;
  const uint32_t sign = ((c >> sign_shift) & 1u) << 31;
  const uint32_t emask = (1u << f.exp_bits) - 1, mmask = (1u << f.man_bits) - 1;
  const uint32_t e = (c >> f.man_bits) & emask, m = c & mmask;
  if (f.kind == Kind::kFnuz && c == (1u << sign_shift)) return kQuietNan;
  if (f.kind == Kind::kFn && e == emask && m == mmask) return sign | kQuietNan;
  if (f.kind == Kind::kIeee && e == emask) return sign | (m != 0 ? kQuietNan : 0x7f800000u);
  if (e == 0 && m == 0) return sign;
  if (e == 0) {  // subnormal: normalize (every narrow subnormal is an f32 normal)
    int exp = 1 - f.bias;
    uint32_t mm = m;
    while ((mm & (1u << f.man_bits)) == 0) {
      mm <<= 1;
      --exp;
    }
    return sign | (static_cast<uint32_t>(exp + 127) << 23) | ((mm & mmask) << (23 - f.man_bits));
  }
  return sign | (static_cast<uint32_t>(static_cast<int>(e) - f.bias + 127) << 23) | (m << (23 - f.man_bits));
}

// Code of f32 `u` (its bits) in format `f`: XLA's convert (see the file comment).
constexpr uint8_t EncodeBits(const Format& f, uint32_t u) {
  const uint32_t a = u & 0x7fffffffu;
  const bool negative = (u >> 31) != 0;
  if (f.kind == Kind::kE8M0) {
    // ml_dtypes: a mantissa >= 1.5 rounds up; (2^-127, 2^-126) rounds up to 2^-126; smaller
    // positives clamp to 2^-127; zero, negatives, inf and NaN are NaN.
    if (negative || a == 0 || a >= 0x7f800000u) return 0xff;
    if (a < 0x00800000u) return a > 0x00400000u ? 1 : 0;
    const uint32_t e = (a >> 23) + ((a >> 22) & 1u);
    return e > 254 ? 0xff : static_cast<uint8_t>(e);
  }
  const int sign_shift = f.exp_bits + f.man_bits;
  const uint32_t sign = negative ? 1u << sign_shift : 0;
  const uint32_t emask = (1u << f.exp_bits) - 1, mmask = (1u << f.man_bits) - 1;
  uint32_t max_code = (emask << f.man_bits) | mmask;
  if (f.kind == Kind::kIeee) max_code = ((emask - 1) << f.man_bits) | mmask;
  if (f.kind == Kind::kFn) max_code = (emask << f.man_bits) | (mmask - 1);
  const uint32_t nan = f.kind == Kind::kIeee   ? sign | (emask << f.man_bits) | (1u << (f.man_bits - 1))
                       : f.kind == Kind::kFn   ? sign | (emask << f.man_bits) | mmask
                       : f.kind == Kind::kFnuz ? 1u << sign_shift
                                               : 1u << sign_shift;  // kFinite: -0, as XLA
  const uint32_t overflow = f.kind == Kind::kIeee     ? sign | (emask << f.man_bits)
                            : f.kind == Kind::kFinite ? sign | max_code
                                                      : nan;
  if (a > 0x7f800000u) return static_cast<uint8_t>(nan);
  if (a == 0x7f800000u) return static_cast<uint8_t>(overflow);
  int exp = static_cast<int>(a >> 23);
  uint32_t mant = a & 0x7fffffu;
  if (exp == 0) {
    exp = 1;
  } else {
    mant |= 0x800000u;
  }
  // value = mant * 2^(exp - 150); te is the target's biased exponent for a normal result.
  const int te = exp - 127 + f.bias;
  const int shift = 23 - f.man_bits + (te >= 1 ? 0 : 1 - te);
  uint32_t q = 0;
  if (shift < 32) {
    q = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;
  }
  const uint64_t code = te >= 1 ? (static_cast<uint64_t>(te - 1) << f.man_bits) + q : q;
  if (code > max_code) return static_cast<uint8_t>(overflow);
  if (code == 0) return static_cast<uint8_t>(f.kind == Kind::kFnuz ? 0 : sign);
  return static_cast<uint8_t>(sign | static_cast<uint32_t>(code));
}

template <DType T>
constexpr std::array<float, 256> MakeDecodeTable() {
  std::array<float, 256> t{};
  for (uint32_t c = 0; c < 256; ++c) t[c] = std::bit_cast<float>(DecodeBits(FormatOf(T), c));
  return t;
}
template <DType T>
inline constexpr std::array<float, 256> kDecode = MakeDecodeTable<T>();

}  // namespace narrow

// The f32 value of a narrow float (exact).
template <DType T>
inline float NarrowToFloat(NarrowFloat<T> v) {
  return narrow::kDecode<T>[v.bits];
}
// XLA's convert from f32 (one rounding, see the file comment).
template <DType T>
inline NarrowFloat<T> FloatToNarrow(float f) {
  return {narrow::EncodeBits(narrow::FormatOf(T), std::bit_cast<uint32_t>(f))};
}
// XLA's convert from f64: one rounding from the double (core's DoubleToFloat8), except that NaN
// -> f4e2m1fn is 0x8 and positive values below 2^-127 -> f8e8m0fnu are NaN (from f32 they clamp
// to 2^-127).
template <DType T>
inline NarrowFloat<T> DoubleToNarrow(double d) {
  if constexpr (T == DType::kF4E2M1FN) {
    if (d != d) return {0x8};
  }
  if constexpr (T == DType::kF8E8M0FNU) {
    if (d > 0 && d < 0x1p-127) return {0xff};
  }
  return {DoubleToFloat8(T, d)};
}
// XLA's convert from f16, bf16 or another narrow float (`f`, their exact f32 value): as from f32,
// except that f8e5m2 (f16's top byte, which XLA reaches through f16) gets every NaN as 0x7f.
template <DType T>
inline NarrowFloat<T> Float16ishToNarrow(float f) {
  if constexpr (T == DType::kF8E5M2) {
    if (f != f) return {0x7f};
  }
  return FloatToNarrow<T>(f);
}
// An arithmetic result rounded back to T: through f16 for the f8 types and f4e2m1fn, once for
// f8e8m0fnu.
template <DType T>
inline NarrowFloat<T> RoundToNarrow(float f) {
  if constexpr (T == DType::kF8E8M0FNU) {
    return FloatToNarrow<T>(f);
  } else {
    return Float16ishToNarrow<T>(HalfToFloat(FloatToHalf(f)));
  }
}

// The value of a wider integer (two's complement) wrapped to T's width.
template <DType T>
inline NarrowInt<T> WrapToNarrow(int64_t x) {
  using N = NarrowInt<T>;
  constexpr uint64_t kMask = (uint64_t{1} << N::kBits) - 1, kSign = uint64_t{1} << (N::kBits - 1);
  const uint64_t low = static_cast<uint64_t>(x) & kMask;
  if constexpr (N::kSigned) {
    return {static_cast<int8_t>(static_cast<int64_t>(low ^ kSign) - static_cast<int64_t>(kSign))};
  } else {
    return {static_cast<uint8_t>(low)};
  }
}
// A float converted to T: truncated toward zero, saturated at T's range, NaN -> 0.
template <DType T>
inline NarrowInt<T> SaturateToNarrow(double x) {
  using N = NarrowInt<T>;
  constexpr double kLow = N::kSigned ? -static_cast<double>(1 << (N::kBits - 1)) : 0.0;
  constexpr double kHigh =
      N::kSigned ? static_cast<double>((1 << (N::kBits - 1)) - 1) : static_cast<double>((1 << N::kBits) - 1);
  if (x != x) return {};
  const double t = x < kLow ? kLow : x > kHigh ? kHigh : static_cast<double>(static_cast<int>(x));
  return {static_cast<typename N::Wide>(t)};
}

}  // namespace xs::kernels

namespace xs {
template <DType T>
struct DTypeOfT<kernels::NarrowFloat<T>> {
  static constexpr DType value = T;
};
template <DType T>
struct DTypeOfT<kernels::NarrowInt<T>> {
  static constexpr DType value = T;
};
}  // namespace xs

#endif  // XSHARD_KERNELS_NARROW_TYPES_H_
