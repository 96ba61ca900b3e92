// DType tables and the narrow float conversions: f16 / bf16 / float8 (round to nearest even,
// inf / NaN handled per format).
#include "xshard/core/dtype.h"

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace xs {
namespace {

struct DTypeInfo {
  DType type;
  std::string_view name;
  int64_t bytes;
  std::string_view descr;
};

constexpr DTypeInfo kInfos[] = {
#define XS_DTYPE_INFO(e, name, bytes, descr) {DType::e, name, bytes, descr},
    XS_DTYPE_LIST(XS_DTYPE_INFO)
#undef XS_DTYPE_INFO
};

const DTypeInfo& Info(DType t) { return kInfos[static_cast<int>(t)]; }

// numpy / ml_dtypes names, in XS_DTYPE_LIST order.
// clang-format off
constexpr std::string_view kNumpyNames[] = {
    "bool", "int2", "int4", "int8", "int16", "int32", "int64",
    "uint2", "uint4", "uint8", "uint16", "uint32", "uint64",
    "float8_e4m3fn", "float8_e4m3b11fnuz", "float8_e5m2", "float8_e8m0fnu",
    "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e4m3", "float8_e3m4", "float4_e2m1fn",
    "float16", "bfloat16", "float32", "float64", "complex64", "complex128", ""};
// clang-format on
static_assert(std::size(kNumpyNames) == std::size(kInfos));

// A binary float format narrower than double, described by its fields. `special` says how the
// format spends its top exponent (or its 0x80 code) on inf / NaN; kFiniteOnly (f4e2m1fn) has
// neither: overflow saturates.
enum class Special { kIeee, kFiniteNanAllOnes, kFiniteNanNegZero, kFiniteOnly };
struct SmallFloat {
  int exp_bits;
  int man_bits;
  int bias;
  Special special;
};
constexpr SmallFloat kHalfFormat{5, 10, 15, Special::kIeee};
constexpr SmallFloat kBFloat16Format{8, 7, 127, Special::kIeee};

SmallFloat Float8Format(DType t) {
  switch (t) {
    case DType::kF8E4M3FN: return {4, 3, 7, Special::kFiniteNanAllOnes};
    case DType::kF8E4M3FNUZ: return {4, 3, 8, Special::kFiniteNanNegZero};
    case DType::kF8E4M3B11FNUZ: return {4, 3, 11, Special::kFiniteNanNegZero};
    case DType::kF8E4M3: return {4, 3, 7, Special::kIeee};
    case DType::kF8E5M2: return {5, 2, 15, Special::kIeee};
    case DType::kF8E5M2FNUZ: return {5, 2, 16, Special::kFiniteNanNegZero};
    case DType::kF8E3M4: return {3, 4, 3, Special::kIeee};
    case DType::kF4E2M1FN: return {2, 1, 1, Special::kFiniteOnly};
    default: XS_CHECK(false, "not a signed narrow float: ", DTypeName(t));
  }
  return {};
}

uint32_t NanBits(const SmallFloat& f, bool negative) {
  const uint32_t sign = negative ? 1u << (f.exp_bits + f.man_bits) : 0;
  const uint32_t exp_ones = ((1u << f.exp_bits) - 1) << f.man_bits;
  switch (f.special) {
    case Special::kIeee: return sign | exp_ones | (1u << (f.man_bits - 1));
    case Special::kFiniteNanAllOnes: return sign | exp_ones | ((1u << f.man_bits) - 1);
    case Special::kFiniteNanNegZero: return 1u << (f.exp_bits + f.man_bits);
    case Special::kFiniteOnly: return negative ? 0 : 1u << (f.exp_bits + f.man_bits);  // ml_dtypes
  }
  return 0;
}

double DecodeSmallFloat(const SmallFloat& f, uint32_t bits) {
  const uint32_t exp_mask = (1u << f.exp_bits) - 1;
  const uint32_t man_mask = (1u << f.man_bits) - 1;
  const bool negative = (bits >> (f.exp_bits + f.man_bits)) & 1u;
  const uint32_t e = (bits >> f.man_bits) & exp_mask;
  const uint32_t m = bits & man_mask;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (f.special == Special::kFiniteNanNegZero && bits == (1u << (f.exp_bits + f.man_bits))) {
    return nan;
  }
  if (f.special == Special::kIeee && e == exp_mask) {
    if (m != 0) return negative ? -nan : nan;
    return negative ? -INFINITY : INFINITY;
  }
  if (f.special == Special::kFiniteNanAllOnes && e == exp_mask && m == man_mask) {
    return negative ? -nan : nan;
  }
  const double magnitude = e == 0 ? std::ldexp(static_cast<double>(m), 1 - f.bias - f.man_bits)
                                  : std::ldexp(static_cast<double>(m | (man_mask + 1)),
                                               static_cast<int>(e) - f.bias - f.man_bits);
  return negative ? -magnitude : magnitude;
}

// Round to nearest even, computed exactly: |d| / quantum is exact in double (quantum is a power of
// two well inside double's range), and nearbyint rounds ties to even.
uint32_t EncodeSmallFloat(const SmallFloat& f, double d) {
  const bool negative = std::signbit(d);
  const uint32_t sign = negative ? 1u << (f.exp_bits + f.man_bits) : 0;
  const uint32_t exp_mask = (1u << f.exp_bits) - 1;
  const uint32_t man_mask = (1u << f.man_bits) - 1;
  if (std::isnan(d)) return NanBits(f, negative);
  // Largest finite: the top exponent is special in IEEE formats; the all-ones mantissa is NaN in
  // kFiniteNanAllOnes.
  const int top_exp = static_cast<int>(f.special == Special::kIeee ? exp_mask - 1 : exp_mask);
  const int max_exp = top_exp - f.bias;
  const uint32_t max_man = f.special == Special::kFiniteNanAllOnes ? man_mask - 1 : man_mask;
  const double max_finite =
      std::ldexp(static_cast<double>(max_man | (man_mask + 1)), max_exp - f.man_bits);
  const uint32_t max_code = (static_cast<uint32_t>(top_exp) << f.man_bits) | max_man;
  if (std::isinf(d)) {
    if (f.special == Special::kFiniteOnly) return sign | max_code;
    return f.special == Special::kIeee ? sign | (exp_mask << f.man_bits) : NanBits(f, negative);
  }
  const int min_normal_exp = 1 - f.bias;
  const double a = std::fabs(d);
  int quantum_exp = min_normal_exp - f.man_bits;
  if (a >= std::ldexp(1.0, min_normal_exp)) quantum_exp = std::ilogb(a) - f.man_bits;
  const double rounded = std::ldexp(std::nearbyint(std::ldexp(a, -quantum_exp)), quantum_exp);
  if (rounded > max_finite) {
    if (f.special == Special::kFiniteOnly) return sign | max_code;
    return f.special == Special::kIeee ? sign | (exp_mask << f.man_bits) : NanBits(f, negative);
  }
  if (rounded == 0) return f.special == Special::kFiniteNanNegZero ? 0 : sign;
  if (rounded < std::ldexp(1.0, min_normal_exp)) {
    return sign | static_cast<uint32_t>(std::ldexp(rounded, f.bias - 1 + f.man_bits));
  }
  const int e = std::ilogb(rounded);
  const uint32_t m = static_cast<uint32_t>(std::ldexp(rounded, f.man_bits - e)) & man_mask;
  return sign | (static_cast<uint32_t>(e + f.bias) << f.man_bits) | m;
}

// f8e8m0fnu: an exponent alone. ml_dtypes rounds a mantissa of 1.5 or more up, rounds everything
// strictly between 2^-127 and 2^-126 up (its subnormal path), and clamps smaller values to 2^-127.
uint8_t EncodeE8M0(double d) {
  if (!(d > 0) || std::isinf(d)) return 0xff;
  int e = std::ilogb(d);
  if (e < -127) return 0;
  if (e == -127) return d == 0x1p-127 ? 0 : 1;
  if (std::ldexp(d, -e) >= 1.5) ++e;
  if (e > 127) return 0xff;
  return static_cast<uint8_t>(e + 127);
}

}  // namespace

std::string_view DTypeName(DType t) { return Info(t).name; }
int64_t DTypeSize(DType t) { return Info(t).bytes; }
std::string_view DTypeNumpyDescr(DType t) { return Info(t).descr; }
std::string_view DTypeNumpyName(DType t) { return kNumpyNames[static_cast<int>(t)]; }

StatusOr<DType> ParseDType(std::string_view name) {
  for (const DTypeInfo& info : kInfos) {
    if (info.name == name) return info.type;
  }
  std::string known;
  for (const DTypeInfo& info : kInfos) StrAppend(&known, known.empty() ? "" : ", ", info.name);
  return InvalidArgument("unknown element type '", name, "'; expected one of ", known);
}

bool IsFloating(DType t) {
  switch (t) {
    case DType::kF16:
    case DType::kBF16:
    case DType::kF32:
    case DType::kF64: return true;
    default: return IsNarrowFloat(t);
  }
}
bool IsFloat8(DType t) {
  switch (t) {
    case DType::kF8E4M3FN:
    case DType::kF8E4M3FNUZ:
    case DType::kF8E4M3B11FNUZ:
    case DType::kF8E4M3:
    case DType::kF8E5M2:
    case DType::kF8E5M2FNUZ:
    case DType::kF8E3M4:
    case DType::kF8E8M0FNU: return true;
    default: return false;
  }
}
bool IsNarrowFloat(DType t) { return IsFloat8(t) || t == DType::kF4E2M1FN; }
bool IsNarrowInt(DType t) { return t == DType::kS2 || t == DType::kS4 || t == DType::kU2 || t == DType::kU4; }
bool IsComplex(DType t) { return t == DType::kC64 || t == DType::kC128; }
bool IsSignedInteger(DType t) {
  return t == DType::kS2 || t == DType::kS4 || t == DType::kS8 || t == DType::kS16 || t == DType::kS32 ||
         t == DType::kS64;
}
bool IsUnsignedInteger(DType t) {
  return t == DType::kU2 || t == DType::kU4 || t == DType::kU8 || t == DType::kU16 || t == DType::kU32 ||
         t == DType::kU64;
}
int DTypeBitWidth(DType t) {
  if (t == DType::kS4 || t == DType::kU4 || t == DType::kF4E2M1FN) return 4;
  if (t == DType::kS2 || t == DType::kU2) return 2;
  return static_cast<int>(DTypeSize(t) * 8);
}

Half FloatToHalf(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or nan
    const uint16_t payload = abs > 0x7f800000u ? 0x0200u | ((abs >> 13) & 0x3ffu) : 0;
    return Half{static_cast<uint16_t>(sign | 0x7c00u | payload)};
  }
  if (abs >= 0x477ff000u) {  // rounds to >= 65520: overflow to inf
    return Half{static_cast<uint16_t>(sign | 0x7c00u)};
  }
  if (abs < 0x38800000u) {  // below the smallest normal half (2^-14): subnormal or zero
    // Scale so the half subnormal unit (2^-24) becomes 1.0 and let float rounding (nearest even)
    // do the work: adding 0.5f aligns the mantissa so the low bits hold the result.
    const float scaled = std::bit_cast<float>(abs) + 0.5f;
    const uint32_t r = std::bit_cast<uint32_t>(scaled) - std::bit_cast<uint32_t>(0.5f);
    return Half{static_cast<uint16_t>(sign | r)};
  }
  // Normal: rebias exponent (127 -> 15) and round the 13 dropped mantissa bits to nearest even.
  const uint32_t mant_odd = (abs >> 13) & 1u;
  const uint32_t rounded = abs + 0xc8000fffu + mant_odd;  // -(112 << 23) + 0xfff + odd
  return Half{static_cast<uint16_t>(sign | (rounded >> 13))};
}

float HalfToFloat(Half h) {
  const uint32_t sign = static_cast<uint32_t>(h.bits & 0x8000u) << 16;
  const uint32_t exp = (h.bits >> 10) & 0x1fu;
  const uint32_t mant = h.bits & 0x3ffu;
  if (exp == 0x1f) {
    return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  }
  if (exp == 0) {
    // Subnormal (or zero): value = mant * 2^-24, exact in float.
    const float v = static_cast<float>(mant) * 0x1p-24f;
    return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(v));
  }
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

BFloat16 FloatToBFloat16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) {  // nan: keep sign, force quiet
    return BFloat16{static_cast<uint16_t>((x >> 16) | 0x0040u)};
  }
  const uint32_t lsb = (x >> 16) & 1u;
  return BFloat16{static_cast<uint16_t>((x + 0x7fffu + lsb) >> 16)};
}

float BFloat16ToFloat(BFloat16 b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b.bits) << 16);
}

Half DoubleToHalf(double d) {
  return Half{static_cast<uint16_t>(EncodeSmallFloat(kHalfFormat, d))};
}
BFloat16 DoubleToBFloat16(double d) {
  return BFloat16{static_cast<uint16_t>(EncodeSmallFloat(kBFloat16Format, d))};
}

double Float8ToDouble(DType t, uint8_t bits) {
  if (t == DType::kF8E8M0FNU) {
    return bits == 0xff ? std::numeric_limits<double>::quiet_NaN() : std::ldexp(1.0, bits - 127);
  }
  if (t == DType::kF4E2M1FN) bits &= 0xf;  // the low nibble (ml_dtypes' high bits are 0)
  return DecodeSmallFloat(Float8Format(t), bits);
}

uint8_t DoubleToFloat8(DType t, double d) {
  if (t == DType::kF8E8M0FNU) return EncodeE8M0(d);
  return static_cast<uint8_t>(EncodeSmallFloat(Float8Format(t), d));
}

}  // namespace xs
