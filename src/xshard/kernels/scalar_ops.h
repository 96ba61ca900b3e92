// Scalar semantics of every elementwise HLO op, one functor per op, written once and used by the
// fast loops, the reference loops and the executor's scalar fast paths. `Apply` is constrained
// on the compute type, so "does op X support dtype Y" is a compile-time question.
// Follows XLA's HloEvaluator and CPU backend (see elementwise.h for the integer / NaN rules).
#ifndef XSHARD_KERNELS_SCALAR_OPS_H_
#define XSHARD_KERNELS_SCALAR_OPS_H_

#include <bit>
#include <cmath>
#include <complex>
#include <limits>
#include <type_traits>

#include "xshard/ir/attributes.h"
#include "xshard/kernels/numeric.h"

namespace xs::kernels::ops {

template <typename T>
using Unsigned = std::make_unsigned_t<T>;

// ---- unary ----
struct Abs {
  template <SignedInt T> static T Apply(T x) { return x < 0 ? T(Unsigned<T>(0) - Unsigned<T>(x)) : x; }
  template <UnsignedInt T> static T Apply(T x) { return x; }
  template <Real T> static T Apply(T x) { return std::fabs(x); }
  template <Complex T> static auto Apply(T x) { return std::abs(x); }
};
struct Negate {
  template <Int T> static T Apply(T x) { return T(Unsigned<T>(0) - Unsigned<T>(x)); }
  template <typename T> requires Real<T> || Complex<T> static T Apply(T x) { return -x; }
};
#define XS_REAL_OR_COMPLEX_UNARY_(Name, expr)                                              \
  struct Name {                                                                          \
    template <typename T> requires Real<T> || Complex<T> static T Apply(T x) { return expr; } \
  };
#define XS_REAL_UNARY_(Name, expr) \
  struct Name {                    \
    template <Real T> static T Apply(T x) { return expr; } \
  };
XS_REAL_OR_COMPLEX_UNARY_(Exp, std::exp(x))
XS_REAL_OR_COMPLEX_UNARY_(Log, std::log(x))
XS_REAL_OR_COMPLEX_UNARY_(Sqrt, std::sqrt(x))
XS_REAL_OR_COMPLEX_UNARY_(Rsqrt, T(1) / std::sqrt(x))
XS_REAL_OR_COMPLEX_UNARY_(Tanh, std::tanh(x))
XS_REAL_OR_COMPLEX_UNARY_(Sin, std::sin(x))
XS_REAL_OR_COMPLEX_UNARY_(Cos, std::cos(x))
XS_REAL_OR_COMPLEX_UNARY_(Tan, std::tan(x))
XS_REAL_OR_COMPLEX_UNARY_(Logistic, T(1) / (T(1) + std::exp(-x)))
XS_REAL_UNARY_(Expm1, std::expm1(x))
XS_REAL_UNARY_(Log1p, std::log1p(x))
XS_REAL_UNARY_(Cbrt, std::cbrt(x))
XS_REAL_UNARY_(Erf, std::erf(x))
XS_REAL_UNARY_(Ceil, std::ceil(x))
XS_REAL_UNARY_(Floor, std::floor(x))
XS_REAL_UNARY_(RoundAfz, std::round(x))
XS_REAL_UNARY_(RoundEven, std::nearbyint(x))  // default FE_TONEAREST: ties to even
XS_REAL_UNARY_(Atan, std::atan(x))
XS_REAL_UNARY_(Acos, std::acos(x))
XS_REAL_UNARY_(Asin, std::asin(x))
XS_REAL_UNARY_(Acosh, std::acosh(x))
XS_REAL_UNARY_(Asinh, std::asinh(x))
XS_REAL_UNARY_(Atanh, std::atanh(x))
XS_REAL_UNARY_(Cosh, std::cosh(x))
XS_REAL_UNARY_(Sinh, std::sinh(x))
#undef XS_REAL_OR_COMPLEX_UNARY_
#undef XS_REAL_UNARY_
struct Sign {
  template <Int T> static T Apply(T x) { return T((T(0) < x) - (x < T(0))); }
  template <Real T> static T Apply(T x) {
    return std::isnan(x) ? x : std::copysign(x != T(0) ? T(1) : T(0), x);
  }
  template <Complex T> static T Apply(T x) {
    auto a = std::abs(x);
    return a == 0 ? T(0) : x / a;
  }
};
struct IsFinite {
  template <Real T> static bool Apply(T x) { return std::isfinite(x); }
};
struct Not {
  template <Pred T> static bool Apply(T x) { return !x; }
  template <Int T> static T Apply(T x) { return T(~x); }
};
struct PopCount {
  template <Int T> static T Apply(T x) { return T(std::popcount(Unsigned<T>(x))); }
};
struct Clz {
  template <Int T> static T Apply(T x) { return T(std::countl_zero(Unsigned<T>(x))); }
};
struct RealPart {
  template <Complex T> static auto Apply(T x) { return x.real(); }
  template <Real T> static T Apply(T x) { return x; }
};
struct ImagPart {
  template <Complex T> static auto Apply(T x) { return x.imag(); }
  template <Real T> static T Apply(T) { return T(0); }
};
struct Copy {
  template <typename T> static T Apply(T x) { return x; }
};

// ---- binary ----
// Integer add / subtract / multiply wrap (computed in the unsigned type); pred add is `or`,
// multiply `and`, subtract `xor` (as XLA's evaluator does through integer promotion).
struct Add {
  template <Int T> static T Apply(T a, T b) { return T(Unsigned<T>(a) + Unsigned<T>(b)); }
  template <Pred T> static bool Apply(T a, T b) { return a || b; }
  template <typename T> requires Real<T> || Complex<T> static T Apply(T a, T b) { return a + b; }
};
struct Subtract {
  template <Int T> static T Apply(T a, T b) { return T(Unsigned<T>(a) - Unsigned<T>(b)); }
  template <Pred T> static bool Apply(T a, T b) { return a != b; }
  template <typename T> requires Real<T> || Complex<T> static T Apply(T a, T b) { return a - b; }
};
struct Multiply {
  template <Int T> static T Apply(T a, T b) {
    using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, Unsigned<T>>;
    return T(U(Unsigned<T>(a)) * U(Unsigned<T>(b)));
  }
  template <Pred T> static bool Apply(T a, T b) { return a && b; }
  template <typename T> requires Real<T> || Complex<T> static T Apply(T a, T b) { return a * b; }
};
struct Divide {
  template <SignedInt T> static T Apply(T a, T b) {
    if (b == 0) return T(-1);
    if (b == -1 && a == std::numeric_limits<T>::min()) return a;
    return T(a / b);
  }
  template <UnsignedInt T> static T Apply(T a, T b) {
    return b == 0 ? std::numeric_limits<T>::max() : T(a / b);
  }
  template <typename T> requires Real<T> || Complex<T> static T Apply(T a, T b) { return a / b; }
};
struct Remainder {
  template <SignedInt T> static T Apply(T a, T b) {
    if (b == 0) return a;
    if (b == -1 && a == std::numeric_limits<T>::min()) return T(0);
    return T(a % b);
  }
  template <UnsignedInt T> static T Apply(T a, T b) { return b == 0 ? a : T(a % b); }
  template <Real T> static T Apply(T a, T b) { return std::fmod(a, b); }
};
// NaN wins; -0 < +0 (XLA CPU: max(-0, +0) = +0, min(-0, +0) = -0).
struct Maximum {
  template <Int T> static T Apply(T a, T b) { return a > b ? a : b; }
  template <Pred T> static bool Apply(T a, T b) { return a || b; }
  template <Real T> static T Apply(T a, T b) {
    if (std::isnan(a)) return a;
    if (std::isnan(b)) return b;
    if (a > b) return a;
    if (b > a) return b;
    return std::signbit(a) ? b : a;
  }
};
struct Minimum {
  template <Int T> static T Apply(T a, T b) { return a < b ? a : b; }
  template <Pred T> static bool Apply(T a, T b) { return a && b; }
  template <Real T> static T Apply(T a, T b) {
    if (std::isnan(a)) return a;
    if (std::isnan(b)) return b;
    if (a < b) return a;
    if (b < a) return b;
    return std::signbit(a) ? a : b;
  }
};
struct Power {
  template <Int T> static T Apply(T a, T b) {
    if (a == T(1) || b == T(0)) return T(1);
    if constexpr (std::is_signed_v<T>) {
      if (b < 0) return T(0);
    }
    // Exponentiation by squaring in the unsigned type: wraps like XLA's IPow.
    using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, Unsigned<T>>;
    U base = U(Unsigned<T>(a)), result = 1;
    Unsigned<T> e = Unsigned<T>(b);
    while (e) {
      if (e & 1) result = U(Unsigned<T>(result * base));
      base = U(Unsigned<T>(base * base));
      e >>= 1;
    }
    return T(Unsigned<T>(result));
  }
  template <Pred T> static bool Apply(T a, T b) { return a || !b; }
  template <Real T> static T Apply(T a, T b) {
    if (a == T(1) || b == T(0)) return T(1);
    return std::pow(a, b);
  }
  template <Complex T> static T Apply(T a, T b) {
    if (a == T(1) || b == T(0)) return T(1);
    return std::pow(a, b);
  }
};
struct Atan2 {
  template <Real T> static T Apply(T a, T b) { return std::atan2(a, b); }
  template <Complex T> static T Apply(T y, T x) {
    const T i(0, 1);
    return -i * std::log((x + i * y) / std::sqrt(x * x + y * y));
  }
};
struct And {
  template <Pred T> static bool Apply(T a, T b) { return a && b; }
  template <Int T> static T Apply(T a, T b) { return T(a & b); }
};
struct Or {
  template <Pred T> static bool Apply(T a, T b) { return a || b; }
  template <Int T> static T Apply(T a, T b) { return T(a | b); }
};
struct Xor {
  template <Pred T> static bool Apply(T a, T b) { return a != b; }
  template <Int T> static T Apply(T a, T b) { return T(a ^ b); }
};
template <typename T>
inline bool ShiftOutOfRange(T amount) {
  return Unsigned<T>(amount) >= Unsigned<T>(std::numeric_limits<Unsigned<T>>::digits);
}
struct ShiftLeft {
  template <Int T> static T Apply(T a, T b) {
    return ShiftOutOfRange(b) ? T(0) : T(Unsigned<T>(a) << Unsigned<T>(b));
  }
};
struct ShiftRightArithmetic {
  template <Int T> static T Apply(T a, T b) {
    using S = std::make_signed_t<T>;
    S sa = S(a);
    if (ShiftOutOfRange(b)) return T(sa < 0 ? S(-1) : S(0));
    return T(sa >> Unsigned<T>(b));
  }
};
struct ShiftRightLogical {
  template <Int T> static T Apply(T a, T b) {
    return ShiftOutOfRange(b) ? T(0) : T(Unsigned<T>(a) >> Unsigned<T>(b));
  }
};
// The high half of the double-width product, signed for signed types (CUDA's __mulhi / __umulhi).
// The empty asm keeps GCC 12 from vectorizing the loop: it turns the 16-bit "widen, multiply,
// shift" pattern into a high multiply of the wrong signedness (fast and reference loops disagreed).
struct Mulhi {
  template <Int T> static T Apply(T a, T b) {
    using W = std::conditional_t<(sizeof(T) < 8), std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>,
                                 std::conditional_t<std::is_signed_v<T>, __int128, unsigned __int128>>;
    W product = W(a) * W(b);
    asm("" : "+m"(product));
    return T(product >> (8 * sizeof(T)));
  }
};
struct MakeComplex {
  template <Real T> static std::complex<T> Apply(T a, T b) { return std::complex<T>(a, b); }
};

// ---- narrow integers (s2, s4, u2, u4) ----
// They compute in int8 / uint8 (their storage, narrow_types.h) and wrap after each op, which gives
// the narrow result for every op but these: shifts and count-leading-zeros act on the narrow
// width (XLA emits them on i4 / i2), and so does popcnt except on s4 (XLA widens s4's popcnt to
// s8 first: popcnt(s4 -1) = 8, wrapped to -8); mulhi takes the high half of the narrow product.
template <int kBits>
struct NarrowBitsOf {
  template <Int T>
  static unsigned Low(T x) {
    return unsigned(Unsigned<T>(x)) & ((1u << kBits) - 1);
  }
  template <Int T>
  static int Signed(T x) {
    const int low = static_cast<int>(Low(x)), sign = 1 << (kBits - 1);
    return (low ^ sign) - sign;
  }
};
template <int kBits>
struct NarrowShiftLeft {
  template <Int T>
  static T Apply(T a, T b) {
    const unsigned n = NarrowBitsOf<kBits>::Low(b);
    return n >= kBits ? T(0) : T(Unsigned<T>(a) << n);
  }
};
template <int kBits>
struct NarrowShiftRightLogical {
  template <Int T>
  static T Apply(T a, T b) {
    const unsigned n = NarrowBitsOf<kBits>::Low(b);
    return n >= kBits ? T(0) : T(NarrowBitsOf<kBits>::Low(a) >> n);
  }
};
template <int kBits>
struct NarrowShiftRightArithmetic {
  template <Int T>
  static T Apply(T a, T b) {
    const unsigned n = NarrowBitsOf<kBits>::Low(b);
    const int sa = NarrowBitsOf<kBits>::Signed(a);
    return T(n >= kBits ? (sa < 0 ? -1 : 0) : sa >> n);
  }
};
template <int kBits>
struct NarrowClz {
  template <Int T>
  static T Apply(T x) {
    return T(std::countl_zero(static_cast<uint8_t>(NarrowBitsOf<kBits>::Low(x))) - (8 - kBits));
  }
};
template <int kBits>
struct NarrowPopCount {
  template <Int T>
  static T Apply(T x) {
    return T(std::popcount(NarrowBitsOf<kBits>::Low(x)));
  }
};
// The high half of the 2 * kBits-wide product: the storage values are the narrow ones widened
// (sign-extended for s2 / s4), so their int product is exact.
template <int kBits>
struct NarrowMulhi {
  template <Int T>
  static T Apply(T a, T b) {
    return T((int(a) * int(b)) >> kBits);
  }
};

// The functor an op runs as on storage type S: Op itself, or its narrow-width form above.
template <class Op, class S>
struct ForStorageOf {
  using type = Op;
};
template <DType T>
struct ForStorageOf<ShiftLeft, NarrowInt<T>> {
  using type = NarrowShiftLeft<NarrowInt<T>::kBits>;
};
template <DType T>
struct ForStorageOf<ShiftRightLogical, NarrowInt<T>> {
  using type = NarrowShiftRightLogical<NarrowInt<T>::kBits>;
};
template <DType T>
struct ForStorageOf<ShiftRightArithmetic, NarrowInt<T>> {
  using type = NarrowShiftRightArithmetic<NarrowInt<T>::kBits>;
};
template <DType T>
struct ForStorageOf<Clz, NarrowInt<T>> {
  using type = NarrowClz<NarrowInt<T>::kBits>;
};
template <DType T>
struct ForStorageOf<PopCount, NarrowInt<T>> {
  using type = std::conditional_t<T == DType::kS4, PopCount, NarrowPopCount<NarrowInt<T>::kBits>>;
};
template <DType T>
struct ForStorageOf<Mulhi, NarrowInt<T>> {
  using type = NarrowMulhi<NarrowInt<T>::kBits>;
};
template <class Op, class S>
using ForStorage = typename ForStorageOf<Op, S>::type;

// ---- compare ----
template <ComparisonDirection D, typename T>
inline bool CompareValues(T a, T b) {
  if constexpr (D == ComparisonDirection::kEq) return a == b;
  if constexpr (D == ComparisonDirection::kNe) return a != b;
  if constexpr (D == ComparisonDirection::kLt) return a < b;
  if constexpr (D == ComparisonDirection::kLe) return a <= b;
  if constexpr (D == ComparisonDirection::kGt) return a > b;
  if constexpr (D == ComparisonDirection::kGe) return a >= b;
}

}  // namespace xs::kernels::ops

#endif  // XSHARD_KERNELS_SCALAR_OPS_H_
