// Element types (XLA's PrimitiveType names) and f16 / bf16 / float8 scalar conversion.
// One X-macro list drives the enum, the HLO name, the numpy descr and the byte size.
#ifndef XSHARD_CORE_DTYPE_H_
#define XSHARD_CORE_DTYPE_H_

#include <cstdint>
#include <optional>
#include <string_view>


#include "xshard/base/status.h"

namespace xs {

// X(enum, hlo name, bytes per element, numpy descr ("" when numpy has none))
// Sub-byte and fp8 types are stored one element per byte on the host: s4 / s2 as a sign-extended
// int8 (-1 is 0xff), u4 as 0..15, u2 as 0..3, f4e2m1fn in the low nibble. (ml_dtypes keeps int4 /
// int2 in the low bits, -1 as 0x0f / 0x03; .npy I/O converts.)
#define XS_DTYPE_LIST(X)                    \
  X(kPred, "pred", 1, "|b1")                \
  X(kS2, "s2", 1, "")                       \
  X(kS4, "s4", 1, "")                       \
  X(kS8, "s8", 1, "|i1")                    \
  X(kS16, "s16", 2, "<i2")                  \
  X(kS32, "s32", 4, "<i4")                  \
  X(kS64, "s64", 8, "<i8")                  \
  X(kU2, "u2", 1, "")                       \
  X(kU4, "u4", 1, "")                       \
  X(kU8, "u8", 1, "|u1")                    \
  X(kU16, "u16", 2, "<u2")                  \
  X(kU32, "u32", 4, "<u4")                  \
  X(kU64, "u64", 8, "<u8")                  \
  X(kF8E4M3FN, "f8e4m3fn", 1, "")           \
  X(kF8E4M3B11FNUZ, "f8e4m3b11fnuz", 1, "") \
  X(kF8E5M2, "f8e5m2", 1, "")               \
  X(kF8E8M0FNU, "f8e8m0fnu", 1, "")         \
  X(kF8E4M3FNUZ, "f8e4m3fnuz", 1, "")       \
  X(kF8E5M2FNUZ, "f8e5m2fnuz", 1, "")       \
  X(kF8E4M3, "f8e4m3", 1, "")               \
  X(kF8E3M4, "f8e3m4", 1, "")               \
  X(kF4E2M1FN, "f4e2m1fn", 1, "")           \
  X(kF16, "f16", 2, "<f2")                  \
  X(kBF16, "bf16", 2, "<V2")                \
  X(kF32, "f32", 4, "<f4")                  \
  X(kF64, "f64", 8, "<f8")                  \
  X(kC64, "c64", 8, "<c8")                  \
  X(kC128, "c128", 16, "<c16")              \
  X(kToken, "token", 0, "")

enum class DType : uint8_t {
#define XS_DTYPE_ENUM(e, name, bytes, descr) e,
  XS_DTYPE_LIST(XS_DTYPE_ENUM)
#undef XS_DTYPE_ENUM
};

// The HLO spelling: DTypeName(DType::kBF16) == "bf16".
std::string_view DTypeName(DType t);
// Bytes one element takes in a host Array (0 for token).
int64_t DTypeSize(DType t);
// numpy's descr string for the type ("<f4"), or "" when numpy has no such type.
std::string_view DTypeNumpyDescr(DType t);
// Parses an HLO type name ("f32", "bf16", "pred"); error names the unknown spelling.
StatusOr<DType> ParseDType(std::string_view name);

bool IsFloating(DType t);        // f4e2m1fn, f8*, f16, bf16, f32, f64
bool IsComplex(DType t);         // c64, c128
bool IsSignedInteger(DType t);   // s2..s64
bool IsUnsignedInteger(DType t);  // u2..u64
inline bool IsInteger(DType t) { return IsSignedInteger(t) || IsUnsignedInteger(t); }
// Bit width of the value: s4/u4/f4e2m1fn -> 4, s2/u2 -> 2, pred -> 8 (as stored), f16 -> 16,
// c64 -> 64.
int DTypeBitWidth(DType t);
// The dtype name numpy / JAX print: "float32", "bfloat16", "bool", "int4", "float8_e4m3fn",
// "complex64" ("" for token).
std::string_view DTypeNumpyName(DType t);

// IEEE binary16 and bfloat16 stored as raw bits. Conversions from float round to nearest even and
// keep infinities and NaNs (a NaN stays a quiet NaN with its sign).
struct Half {
  uint16_t bits = 0;
  friend bool operator==(Half a, Half b) { return a.bits == b.bits; }
};
struct BFloat16 {
  uint16_t bits = 0;
  friend bool operator==(BFloat16 a, BFloat16 b) { return a.bits == b.bits; }
};

Half FloatToHalf(float f);
float HalfToFloat(Half h);
BFloat16 FloatToBFloat16(float f);
float BFloat16ToFloat(BFloat16 b);
// Correctly rounded (one rounding, nearest even) from double; a NaN becomes the quiet NaN with
// its sign. Going through float instead would round twice.
Half DoubleToHalf(double d);
BFloat16 DoubleToBFloat16(double d);

// The narrow float types (the 8-bit ones and f4e2m1fn), stored one per byte, with ml_dtypes'
// semantics (what JAX computes with on the host):
//   f8e4m3fn      bias 7, no inf, NaN = S.1111.111, max 448
//   f8e4m3fnuz    bias 8, no inf, no -0, NaN = 0x80, max 240
//   f8e4m3b11fnuz bias 11, no inf, no -0, NaN = 0x80, max 30
//   f8e4m3        bias 7, IEEE-like with inf, max 240
//   f8e5m2        bias 15, IEEE-like with inf, max 57344
//   f8e5m2fnuz    bias 16, no inf, no -0, NaN = 0x80, max 57344
//   f8e3m4        bias 3, IEEE-like with inf, max 15.5
//   f8e8m0fnu     2^(bits-127), unsigned, no zero, NaN = 0xff
//   f4e2m1fn      bias 1, 4 bits (low nibble), no inf, no NaN, max 6
// Float8ToDouble is exact; a NaN keeps its sign, except the fnuz types' (and f8e8m0fnu's) single
// NaN, which decodes as +NaN (as XLA does; ml_dtypes gives the fnuz NaN a sign). DoubleToFloat8
// rounds once to nearest even (ml_dtypes goes through float first, so the two agree on every float
// input; XLA's convert from f64 rounds once too, see kernels/narrow_types.h); values past
// the largest finite become inf (IEEE-like types) or NaN (the types without inf), and inf becomes
// NaN there too; f4e2m1fn saturates at +-6 and maps NaN to a zero of the other sign (ml_dtypes:
// +NaN -> -0, -NaN -> +0; XLA gives -0 for both, kernels/narrow_types.h). f8e8m0fnu follows
// ml_dtypes: a mantissa >= 1.5 rounds up, values in (2^-127, 2^-126) round up to 2^-126, smaller
// positives clamp to 2^-127, and zero, negatives, inf and NaN become NaN.
// XS_CHECK: IsNarrowFloat(t).
double Float8ToDouble(DType t, uint8_t bits);
uint8_t DoubleToFloat8(DType t, double d);
bool IsFloat8(DType t);       // the f8* types
bool IsNarrowFloat(DType t);  // f8* and f4e2m1fn
bool IsNarrowInt(DType t);    // s2, s4, u2, u4
// The types stored one per byte that the kernels compute on by widening (f8* and f4e2m1fn to
// f32, s2 / s4 / u2 / u4 to s8 / u8), as XLA's CPU backend does.
inline bool IsNarrowType(DType t) { return IsNarrowFloat(t) || IsNarrowInt(t); }

}  // namespace xs

#endif  // XSHARD_CORE_DTYPE_H_
