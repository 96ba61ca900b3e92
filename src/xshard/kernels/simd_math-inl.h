// Per-target vector functors for the elementwise ops (Highway; included once per target by
// elementwise_simd.cc). Each functor has Apply(d, x) on full vectors; those whose fast formula is
// not valid everywhere also have Bad(d, x) (the lanes to recompute with the scalar op) and
// Scalar(x), the scalar_ops.h semantics. Bad lanes are rare (NaN, overflow), so cost one test.

// Per-target include guard (Highway's toggle idiom).
#if defined(XSHARD_KERNELS_SIMD_MATH_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef XSHARD_KERNELS_SIMD_MATH_INL_H_
#undef XSHARD_KERNELS_SIMD_MATH_INL_H_
#else
#define XSHARD_KERNELS_SIMD_MATH_INL_H_
#endif

#include <limits>
#include <type_traits>
#include <utility>

#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "xshard/kernels/scalar_ops.h"

HWY_BEFORE_NAMESPACE();
namespace xs::kernels::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <class D>
using T_ = hn::TFromD<D>;

template <class D>
HWY_INLINE hn::Vec<D> C(D d, double v) {
  return hn::Set(d, static_cast<T_<D>>(v));
}
template <class D>
HWY_INLINE hn::Vec<D> PosInf(D d) {
  return hn::Set(d, std::numeric_limits<T_<D>>::infinity());
}
// Largest x whose exp(x) is finite, rounded down a little (above it: the scalar op).
template <class D>
HWY_INLINE hn::Vec<D> MaxExpArg(D d) {
  return C(d, sizeof(T_<D>) == 4 ? 88.72 : 709.78);
}

// Above this exp(x) is +inf for certain (ln of the largest finite value is 88.7228 / 709.7827).
template <class D>
HWY_INLINE hn::Vec<D> ExpOverflowArg(D d) {
  return C(d, sizeof(T_<D>) == 4 ? 88.73 : 709.79);
}

// Lanes whose sign bit is set (-0 and negative NaNs included).
template <class D, class V>
HWY_INLINE auto SignBitSet(D d, V x) {
  const hn::RebindToSigned<D> di;
  return hn::RebindMask(d, hn::Lt(hn::BitCast(di, x), hn::Zero(di)));
}

// ---- exact ops ----
struct VAbs {
  template <class D, class V> static V Apply(D, V x) { return hn::Abs(x); }
};
struct VNegate {
  template <class D, class V> static V Apply(D, V x) { return hn::Neg(x); }
};
struct VSqrt {
  template <class D, class V> static V Apply(D, V x) { return hn::Sqrt(x); }
};
// 1 / sqrt(x), correctly rounded division of the correctly rounded root (as the scalar op).
struct VRsqrt {
  template <class D, class V> static V Apply(D d, V x) { return hn::Div(C(d, 1), hn::Sqrt(x)); }
};
// Rounding keeps the sign of x (floor(-0.5) = -1, ceil(-0.5) = -0); CopySign restores the -0
// that the SSSE3 emulations of Floor / Ceil / Round / Trunc lose.
struct VFloor {
  template <class D, class V> static V Apply(D, V x) { return hn::CopySign(hn::Floor(x), x); }
};
struct VCeil {
  template <class D, class V> static V Apply(D, V x) { return hn::CopySign(hn::Ceil(x), x); }
};
struct VRoundEven {
  template <class D, class V> static V Apply(D, V x) { return hn::CopySign(hn::Round(x), x); }
};
// Halves away from zero: trunc(x) plus sign(x) when |x - trunc(x)| >= 0.5 (x - trunc(x) is exact;
// infinities give a NaN fraction, which fails the test and keeps trunc(x)).
struct VRoundAfz {
  template <class D, class V> static V Apply(D d, V x) {
    const V t = hn::Trunc(x);
    const V frac = hn::Abs(hn::Sub(x, t));
    const V r = hn::IfThenElse(hn::Ge(frac, C(d, 0.5)), hn::Add(t, hn::CopySign(C(d, 1), x)), t);
    return hn::CopySign(r, x);
  }
};
// NaN stays; else +-1 or the signed zero.
struct VSign {
  template <class D, class V> static V Apply(D d, V x) {
    const V mag = hn::IfThenZeroElse(hn::Eq(x, hn::Zero(d)), C(d, 1));
    return hn::IfThenElse(hn::IsNaN(x), x, hn::CopySign(mag, x));
  }
};

// ---- transcendentals (Highway contrib/math plus the special cases it leaves out) ----

// f32 exp(x) where the result is a normal number, kExpF32Lo <= x <= kExpF32Hi; 0 below (inputs
// above are clamped: callers send them elsewhere). n = round(x log2(e)) by adding 1.5 * 2^23 + 127,
// which also leaves n + 127 in the low bits, so 2^n is those bits shifted into the exponent;
// t = x - n ln(2) in two parts (Cody and Waite); exp(t) = 1 + t + t^2 P(t) with Cephes' expf
// coefficients, and 2^n exp(t) = s + (t s) (1 + t P1(t)) as one FMA. Checked on every f32 in the
// range: at most 0.89 ulp from the true value and 1 ulp from glibc's expf (Highway's Exp: 1.03
// ulp). One AVX2 core, 4096 values in L1: 0.85 ns a value against Highway's 1.37, which covers the
// whole range with two scalings. The error bound needs FMA: targets without it keep Highway's.
inline constexpr double kExpF32Lo = -87.0, kExpF32Hi = 88.3;
template <class D, class V>
HWY_INLINE V ExpF32Normal(D d, V x) {
  const hn::RebindToSigned<D> di;
  const V magic = C(d, 12582912.0 + 127.0);
  const V xc = hn::Min(hn::Max(x, C(d, kExpF32Lo)), C(d, kExpF32Hi));
  const V v = hn::MulAdd(xc, C(d, 1.44269504088896341), magic);
  const V s = hn::BitCast(d, hn::ShiftLeft<23>(hn::BitCast(di, v)));
  const V n = hn::Sub(v, magic);
  V t = hn::MulAdd(n, C(d, -0.693145751953125), xc);
  t = hn::MulAdd(n, C(d, -1.428606765330187045e-06), t);
  V p = C(d, 1.9875691500e-4);
  p = hn::MulAdd(p, t, C(d, 1.3981999507e-3));
  p = hn::MulAdd(p, t, C(d, 8.3334519073e-3));
  p = hn::MulAdd(p, t, C(d, 4.1665795894e-2));
  p = hn::MulAdd(p, t, C(d, 1.6666665459e-1));
  p = hn::MulAdd(p, t, C(d, 5.0000001201e-1));
  p = hn::MulAdd(p, t, C(d, 1.0));
  return hn::IfThenZeroElse(hn::Lt(x, C(d, kExpF32Lo)), hn::MulAdd(hn::Mul(t, s), p, s));
}
template <class D>
inline constexpr bool kFastExpF32 = sizeof(T_<D>) == 4 && HWY_NATIVE_FMA;

// f32 with FMA: ExpF32Normal; x above kExpF32Hi (up to where exp overflows), NaN and the band
// whose results are subnormal, [-104, kExpF32Lo), go to the scalar op. Below -104 exp rounds to 0.
struct VExp {
  template <class D, class V>
  static V Apply(D d, V x) {
    if constexpr (kFastExpF32<D>) {
      return ExpF32Normal(d, x);
    } else {
      return hn::Exp(d, x);
    }
  }
  template <class D, class V>
  static auto Bad(D d, V x) {
    if constexpr (kFastExpF32<D>) {
      const auto normal_or_zero = hn::Or(hn::Ge(x, C(d, kExpF32Lo)), hn::Lt(x, C(d, -104.0)));
      return hn::Not(hn::And(hn::Le(x, C(d, kExpF32Hi)), normal_or_zero));
    } else {
      return hn::Not(hn::Le(x, MaxExpArg(d)));
    }
  }
  template <class T> static T Scalar(T x) { return ops::Exp::Apply(x); }
};
// expm1(+-0) = +-0 (Highway's polynomial loses the sign of zero).
struct VExpm1 {
  template <class D, class V> static V Apply(D d, V x) {
    return hn::IfThenElse(hn::Eq(x, hn::Zero(d)), x, hn::Expm1(d, x));
  }
  template <class D, class V> static auto Bad(D d, V x) { return hn::Not(hn::Le(x, MaxExpArg(d))); }
  template <class T> static T Scalar(T x) { return ops::Expm1::Apply(x); }
};
// log(+-0) = -inf in the vector path; negative, NaN and +inf lanes go scalar.
struct VLog {
  template <class D, class V> static V Apply(D d, V x) {
    return hn::IfThenElse(hn::Eq(x, hn::Zero(d)), hn::Neg(PosInf(d)), hn::Log(d, x));
  }
  template <class D, class V> static auto Bad(D d, V x) {
    return hn::Not(hn::And(hn::Ge(x, hn::Zero(d)), hn::Lt(x, PosInf(d))));
  }
  template <class T> static T Scalar(T x) { return ops::Log::Apply(x); }
};
struct VLog1p {
  template <class D, class V> static V Apply(D d, V x) { return hn::Log1p(d, x); }
  template <class D, class V> static auto Bad(D d, V x) {
    return hn::Not(hn::And(hn::Gt(x, C(d, -1)), hn::Lt(x, PosInf(d))));
  }
  template <class T> static T Scalar(T x) { return ops::Log1p::Apply(x); }
};
// f32: XLA CPU's tanh (the rational approximation XLA emits, Eigen's): x * P(x^2) / Q(x^2) on x
// clamped to where it reaches +-1 exactly (a wider clamp with FMA), x itself below |x| = 4e-4.
// About half the work of Highway's expm1-based Tanh, and JAX's own f32 results on CPU.
// f64: Highway's Tanh.
struct VTanh {
  template <class D, class V> static V Apply(D d, V x) {
    if constexpr (sizeof(T_<D>) == 4) {
      const V clamp = C(d, HWY_NATIVE_FMA ? 7.99881172180175781 : 7.90531110763549805);
      const V xc = hn::Min(hn::Max(x, hn::Neg(clamp)), clamp);
      const V x2 = hn::Mul(xc, xc);
      V p = C(d, -2.76076847742355e-16);
      p = hn::MulAdd(p, x2, C(d, 2.00018790482477e-13));
      p = hn::MulAdd(p, x2, C(d, -8.60467152213735e-11));
      p = hn::MulAdd(p, x2, C(d, 5.12229709037114e-08));
      p = hn::MulAdd(p, x2, C(d, 1.48572235717979e-05));
      p = hn::MulAdd(p, x2, C(d, 6.37261928875436e-04));
      p = hn::MulAdd(p, x2, C(d, 4.89352455891786e-03));
      V q = C(d, 1.19825839466702e-06);
      q = hn::MulAdd(q, x2, C(d, 1.18534705686654e-04));
      q = hn::MulAdd(q, x2, C(d, 2.26843463243900e-03));
      q = hn::MulAdd(q, x2, C(d, 4.89352518554385e-03));
      const V r = hn::Div(hn::Mul(xc, p), q);
      return hn::IfThenElse(hn::Lt(hn::Abs(x), C(d, 0.0004)), x, r);
    } else {
      return hn::Tanh(d, x);
    }
  }
  template <class D, class V> static auto Bad(D, V x) { return hn::IsNaN(x); }
  template <class T> static T Scalar(T x) { return ops::Tanh::Apply(x); }
};
// XLA's logistic: 1 / (1 + exp(-x)); exp(-x) overflows to +inf for x below -ExpOverflowArg, so
// the result is exactly 0 there and exactly 1 for large x, as in the scalar formula. f32 with FMA
// goes through ExpF32Normal, whose 0 below kExpF32Lo gives the same 1. -x between the vector exp's
// top (kExpF32Hi, else MaxExpArg) and ExpOverflowArg goes to the scalar op: exp(-x) is still
// finite there and the result a denormal.
struct VLogistic {
  template <class D>
  static hn::Vec<D> Top(D d) {
    if constexpr (kFastExpF32<D>) {
      return C(d, kExpF32Hi);
    } else {
      return MaxExpArg(d);
    }
  }
  template <class D, class V> static V Apply(D d, V x) {
    const V t = hn::Neg(x);
    V e;
    if constexpr (kFastExpF32<D>) {
      e = ExpF32Normal(d, t);
    } else {
      e = hn::Exp(d, t);
    }
    e = hn::IfThenElse(hn::Gt(t, Top(d)), PosInf(d), e);
    return hn::Div(C(d, 1), hn::Add(C(d, 1), e));
  }
  template <class D, class V>
  static auto Bad(D d, V x) {
    const V t = hn::Neg(x);
    return hn::Or(hn::IsNaN(x), hn::And(hn::Gt(t, Top(d)), hn::Le(t, ExpOverflowArg(d))));
  }
  template <class T> static T Scalar(T x) { return ops::Logistic::Apply(x); }
};
// f32 erf as XLA's CPU backend computes it: x clamped to [-4, 4], then x * P(x^2) / Q(x^2), a
// rational minimax approximation (degree 13 / 8; Eigen's generic_fast_erf_float constants),
// evaluated as (P / Q) * x so that denormal x rounds once.
struct VErf {
  template <class D, class V> static V Apply(D d, V x) {
    const V xc = hn::Min(hn::Max(x, C(d, -4.0)), C(d, 4.0));
    const V x2 = hn::Mul(xc, xc);
    V p = C(d, -2.72614225801306e-10);
    p = hn::MulAdd(p, x2, C(d, 2.77068142495902e-08));
    p = hn::MulAdd(p, x2, C(d, -2.10102402082508e-06));
    p = hn::MulAdd(p, x2, C(d, -5.69250639462346e-05));
    p = hn::MulAdd(p, x2, C(d, -7.34990630326855e-04));
    p = hn::MulAdd(p, x2, C(d, -2.95459980854025e-03));
    p = hn::MulAdd(p, x2, C(d, -1.60960333262415e-02));
    V q = C(d, -1.45660718464996e-05);
    q = hn::MulAdd(q, x2, C(d, -2.13374055278905e-04));
    q = hn::MulAdd(q, x2, C(d, -1.68282697438203e-03));
    q = hn::MulAdd(q, x2, C(d, -7.37332916720468e-03));
    q = hn::MulAdd(q, x2, C(d, -1.42647390514189e-02));
    return hn::Mul(hn::Div(p, q), xc);
  }
  template <class D, class V> static auto Bad(D, V x) { return hn::IsNaN(x); }
  template <class T> static T Scalar(T x) { return ops::Erf::Apply(x); }
};
// Highway's sin / cos reduce the argument exactly enough only for |x| <= 39000.
struct VSin {
  template <class D, class V> static V Apply(D d, V x) { return hn::Sin(d, x); }
  template <class D, class V> static auto Bad(D d, V x) {
    return hn::Not(hn::Le(hn::Abs(x), C(d, 39000.0)));
  }
  template <class T> static T Scalar(T x) { return ops::Sin::Apply(x); }
};
struct VCos {
  template <class D, class V> static V Apply(D d, V x) { return hn::Cos(d, x); }
  template <class D, class V> static auto Bad(D d, V x) {
    return hn::Not(hn::Le(hn::Abs(x), C(d, 39000.0)));
  }
  template <class T> static T Scalar(T x) { return ops::Cos::Apply(x); }
};

// Inverse trigonometric / hyperbolic functions on the domain where Highway's are valid.
#define XS_DOMAIN_UNARY_(Name, hwy_fn, scalar_op, bad_expr)                          \
  struct Name {                                                                     \
    template <class D, class V> static V Apply(D d, V x) { return hn::hwy_fn(d, x); } \
    template <class D, class V> static auto Bad(D d, V x) { return bad_expr; }      \
    template <class T> static T Scalar(T x) { return ops::scalar_op::Apply(x); }    \
  };
XS_DOMAIN_UNARY_(VAtan, Atan, Atan, hn::Not(hn::Lt(hn::Abs(x), PosInf(d))))
XS_DOMAIN_UNARY_(VAsin, Asin, Asin, hn::Not(hn::Le(hn::Abs(x), C(d, 1))))
XS_DOMAIN_UNARY_(VAcos, Acos, Acos, hn::Not(hn::Le(hn::Abs(x), C(d, 1))))
XS_DOMAIN_UNARY_(VAsinh, Asinh, Asinh, hn::Not(hn::Lt(hn::Abs(x), PosInf(d))))
XS_DOMAIN_UNARY_(VAcosh, Acosh, Acosh, hn::Not(hn::And(hn::Ge(x, C(d, 1)), hn::Lt(x, PosInf(d)))))
XS_DOMAIN_UNARY_(VAtanh, Atanh, Atanh, hn::Not(hn::Lt(hn::Abs(x), C(d, 1))))
XS_DOMAIN_UNARY_(VSinh, Sinh, Sinh, hn::Not(hn::Le(hn::Abs(x), MaxExpArg(d))))
#undef XS_DOMAIN_UNARY_

// ---- binary (bit-exact) ----
struct VAdd {
  template <class T> static T Scalar(T a, T b) { return ops::Add::Apply(a, b); }
  template <class D, class V> static V Apply(D, V a, V b) { return hn::Add(a, b); }
};
struct VSubtract {
  template <class T> static T Scalar(T a, T b) { return ops::Subtract::Apply(a, b); }
  template <class D, class V> static V Apply(D, V a, V b) { return hn::Sub(a, b); }
};
struct VMultiply {
  template <class T> static T Scalar(T a, T b) { return ops::Multiply::Apply(a, b); }
  template <class D, class V> static V Apply(D, V a, V b) { return hn::Mul(a, b); }
};
struct VDivide {
  template <class T> static T Scalar(T a, T b) { return ops::Divide::Apply(a, b); }
  template <class D, class V> static V Apply(D, V a, V b) { return hn::Div(a, b); }
};
// A NaN operand wins (a's first); equal values pick by sign so that max(-0, +0) = +0.
// Integer-only ops (the vector ops wrap like the scalar ones; shifts follow XLA: an amount
// outside [0, bits), read as unsigned, gives 0, or the sign bit's fill for an arithmetic shift).
struct VAnd {
  template <class T> static T Scalar(T a, T b) { return ops::And::Apply(a, b); }
  template <class D, class V> static V Apply(D, V a, V b) { return hn::And(a, b); }
};
struct VOr {
  template <class T> static T Scalar(T a, T b) { return ops::Or::Apply(a, b); }
  template <class D, class V> static V Apply(D, V a, V b) { return hn::Or(a, b); }
};
struct VXor {
  template <class T> static T Scalar(T a, T b) { return ops::Xor::Apply(a, b); }
  template <class D, class V> static V Apply(D, V a, V b) { return hn::Xor(a, b); }
};
// Lanes of `b` (read as unsigned) below the lane width, and `b` modulo the lane width.
template <class D, class V>
HWY_INLINE auto ShiftAmount(D, V b) {
  using T = hn::TFromD<D>;
  const hn::RebindToUnsigned<D> du;
  constexpr hn::TFromD<decltype(du)> kBits = sizeof(T) * 8;
  const auto ub = hn::BitCast(du, b);
  return std::make_pair(hn::Lt(ub, hn::Set(du, kBits)), hn::And(ub, hn::Set(du, kBits - 1)));
}
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
// x86's variable logical shifts of 32- and 64-bit lanes (vpsllv / vpsrlv) read each count as
// unsigned and give 0 for counts of the lane width or more: XLA's rule, with no compare and
// mask around them (threefry's rotations are a fifth of jax.random's work).
template <class V>
inline constexpr bool kX86VariableShift =
    (sizeof(hn::TFromV<V>) == 4 || sizeof(hn::TFromV<V>) == 8) && std::is_integral_v<hn::TFromV<V>> &&
    (std::is_same_v<decltype(V::raw), __m128i> || std::is_same_v<decltype(V::raw), __m256i>
#if HWY_TARGET <= HWY_AVX3
     || std::is_same_v<decltype(V::raw), __m512i>
#endif
    );
template <bool kLeft, class V>
HWY_INLINE V X86LogicalShift(V a, V b) {
  using Raw = decltype(a.raw);
  constexpr bool k32 = sizeof(hn::TFromV<V>) == 4;
  V r;
  if constexpr (std::is_same_v<Raw, __m128i>) {
    if constexpr (k32) {
      r.raw = kLeft ? _mm_sllv_epi32(a.raw, b.raw) : _mm_srlv_epi32(a.raw, b.raw);
    } else {
      r.raw = kLeft ? _mm_sllv_epi64(a.raw, b.raw) : _mm_srlv_epi64(a.raw, b.raw);
    }
  } else if constexpr (std::is_same_v<Raw, __m256i>) {
    if constexpr (k32) {
      r.raw = kLeft ? _mm256_sllv_epi32(a.raw, b.raw) : _mm256_srlv_epi32(a.raw, b.raw);
    } else {
      r.raw = kLeft ? _mm256_sllv_epi64(a.raw, b.raw) : _mm256_srlv_epi64(a.raw, b.raw);
    }
  }
#if HWY_TARGET <= HWY_AVX3
  else if constexpr (std::is_same_v<Raw, __m512i>) {
    if constexpr (k32) {
      r.raw = kLeft ? _mm512_sllv_epi32(a.raw, b.raw) : _mm512_srlv_epi32(a.raw, b.raw);
    } else {
      r.raw = kLeft ? _mm512_sllv_epi64(a.raw, b.raw) : _mm512_srlv_epi64(a.raw, b.raw);
    }
  }
#endif
  return r;
}
#else
template <class V>
inline constexpr bool kX86VariableShift = false;
template <bool kLeft, class V>
HWY_INLINE V X86LogicalShift(V a, V) {
  return a;
}
#endif

struct VShiftLeft {
  template <class T> static T Scalar(T a, T b) { return ops::ShiftLeft::Apply(a, b); }
  template <class D, class V> static V Apply(D d, V a, V b) {
    if constexpr (kX86VariableShift<V>) return X86LogicalShift<true>(a, b);
    const hn::RebindToUnsigned<D> du;
    const auto [in_range, amount] = ShiftAmount(d, b);
    return hn::BitCast(d, hn::IfThenElseZero(in_range, hn::Shl(hn::BitCast(du, a), amount)));
  }
};
struct VShiftRightLogical {
  template <class T> static T Scalar(T a, T b) { return ops::ShiftRightLogical::Apply(a, b); }
  template <class D, class V> static V Apply(D d, V a, V b) {
    if constexpr (kX86VariableShift<V>) return X86LogicalShift<false>(a, b);
    const hn::RebindToUnsigned<D> du;
    const auto [in_range, amount] = ShiftAmount(d, b);
    return hn::BitCast(d, hn::IfThenElseZero(in_range, hn::Shr(hn::BitCast(du, a), amount)));
  }
};
struct VShiftRightArithmetic {
  template <class T> static T Scalar(T a, T b) { return ops::ShiftRightArithmetic::Apply(a, b); }
  template <class D, class V> static V Apply(D d, V a, V b) {
    using T = hn::TFromD<D>;
    const hn::RebindToUnsigned<D> du;
    const hn::RebindToSigned<D> di;
    const auto [in_range, amount] = ShiftAmount(d, b);
    // Out of range shifts by bits - 1: the sign's fill.
    const auto clamped = hn::IfThenElse(in_range, amount, hn::Set(du, sizeof(T) * 8 - 1));
    return hn::BitCast(d, hn::Shr(hn::BitCast(di, a), hn::BitCast(di, clamped)));
  }
};

// shift-left(a, b) | shift-right-logical(a, bits - b), the bits - b wrapping as unsigned: a rotation
// for b in [0, bits], 0 for larger b (both shifts out of range), exactly what the two XLA shifts
// and the or give.
struct VRotateLeft {
  template <class T>
  static T Scalar(T a, T b) {
    using U = std::make_unsigned_t<T>;
    const T rest = static_cast<T>(static_cast<U>(sizeof(T) * 8) - static_cast<U>(b));
    return static_cast<T>(ops::ShiftLeft::Apply(a, b) | ops::ShiftRightLogical::Apply(a, rest));
  }
  template <class D, class V>
  static V Apply(D d, V a, V b) {
    using T = hn::TFromD<D>;
    const V rest = hn::Sub(hn::Set(d, static_cast<T>(sizeof(T) * 8)), b);
    return hn::Or(VShiftLeft::Apply(d, a, b), VShiftRightLogical::Apply(d, a, rest));
  }
};

struct VMaximum {
  template <class T> static T Scalar(T a, T b) { return ops::Maximum::Apply(a, b); }
  template <class D, class V> static V Apply(D d, V a, V b) {
    const auto take_b = hn::Or(hn::Gt(b, a), hn::And(hn::Eq(a, b), SignBitSet(d, a)));
    const V r = hn::IfThenElse(hn::IsNaN(b), b, hn::IfThenElse(take_b, b, a));
    return hn::IfThenElse(hn::IsNaN(a), a, r);
  }
};
struct VMinimum {
  template <class T> static T Scalar(T a, T b) { return ops::Minimum::Apply(a, b); }
  template <class D, class V> static V Apply(D d, V a, V b) {
    const auto take_b = hn::Or(hn::Lt(b, a), hn::AndNot(SignBitSet(d, a), hn::Eq(a, b)));
    const V r = hn::IfThenElse(hn::IsNaN(b), b, hn::IfThenElse(take_b, b, a));
    return hn::IfThenElse(hn::IsNaN(a), a, r);
  }
};

}  // namespace xs::kernels::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // XSHARD_KERNELS_SIMD_MATH_INL_H_
