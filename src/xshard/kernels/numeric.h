// Element-type plumbing shared by the kernels: storage type <-> compute type (f16 / bf16 compute
// in f32 as XLA's CPU backend does), type concepts, DType dispatch, and XLA's scalar conversion
// rules (float -> int saturates, NaN -> 0). Internal to kernels/ and runtime/.
#ifndef XSHARD_KERNELS_NUMERIC_H_
#define XSHARD_KERNELS_NUMERIC_H_

#include <cmath>
#include <complex>
#include <concepts>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#include "xshard/base/status.h"
#include "xshard/core/array.h"
#include "xshard/core/dtype.h"
#include "xshard/kernels/narrow_types.h"

namespace xs::kernels {

template <typename T>
struct TypeTag {
  using type = T;
};

template <typename T>
concept Complex = std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>;
template <typename T>
concept Real = std::is_same_v<T, float> || std::is_same_v<T, double>;  // compute types only
template <typename T>
concept Pred = std::is_same_v<T, bool>;
template <typename T>
concept Int = std::is_integral_v<T> && !std::is_same_v<T, bool>;
template <typename T>
concept SignedInt = Int<T> && std::is_signed_v<T>;
template <typename T>
concept UnsignedInt = Int<T> && std::is_unsigned_v<T>;
template <typename T>
concept HalfLike = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// Storage types whose arithmetic happens in a wider compute type: f16 / bf16 and the narrow types
// (narrow_types.h).
template <typename T>
concept Widened = HalfLike<T> || NarrowT<T>;

template <typename S>
struct ComputeOf {
  using type = std::conditional_t<HalfLike<S> || NarrowFloatT<S>, float, S>;
};
template <DType T>
struct ComputeOf<NarrowInt<T>> {
  using type = typename NarrowInt<T>::Wide;
};
// The type arithmetic happens in: f16 / bf16 / f8* / f4e2m1fn -> float, s2 / s4 -> int8, u2 / u4
// -> uint8, everything else itself.
template <typename S>
using ComputeT = typename ComputeOf<S>::type;

template <typename S>
inline ComputeT<S> ToCompute(S v) {
  if constexpr (std::is_same_v<S, Half>) {
    return HalfToFloat(v);
  } else if constexpr (std::is_same_v<S, BFloat16>) {
    return BFloat16ToFloat(v);
  } else if constexpr (NarrowFloatT<S>) {
    return NarrowToFloat(v);
  } else if constexpr (NarrowIntT<S>) {
    return v.v;
  } else {
    return v;
  }
}
// An op's result back to storage: rounded to nearest even (the narrow floats as XLA rounds
// arithmetic, narrow_types.h), wrapped for the narrow integers.
template <typename S>
inline S FromCompute(ComputeT<S> v) {
  if constexpr (std::is_same_v<S, Half>) {
    return FloatToHalf(v);
  } else if constexpr (std::is_same_v<S, BFloat16>) {
    return FloatToBFloat16(v);
  } else if constexpr (NarrowFloatT<S>) {
    return RoundToNarrow<DTypeOf<S>>(v);
  } else if constexpr (NarrowIntT<S>) {
    return WrapToNarrow<DTypeOf<S>>(v);
  } else {
    return v;
  }
}

// Calls f(TypeTag<S>{}) with S the host storage type of `dtype` (bool for pred, Half, BFloat16,
// std::complex<float>, ...) and returns its result; `fallback()` for types without one (s4, u4,
// fp8, token).
template <typename F, typename G>
auto VisitDType(DType dtype, F&& f, G&& fallback) {
  switch (dtype) {
    case DType::kPred: return f(TypeTag<bool>{});
    case DType::kS8: return f(TypeTag<int8_t>{});
    case DType::kS16: return f(TypeTag<int16_t>{});
    case DType::kS32: return f(TypeTag<int32_t>{});
    case DType::kS64: return f(TypeTag<int64_t>{});
    case DType::kU8: return f(TypeTag<uint8_t>{});
    case DType::kU16: return f(TypeTag<uint16_t>{});
    case DType::kU32: return f(TypeTag<uint32_t>{});
    case DType::kU64: return f(TypeTag<uint64_t>{});
    case DType::kF16: return f(TypeTag<Half>{});
    case DType::kBF16: return f(TypeTag<BFloat16>{});
    case DType::kF32: return f(TypeTag<float>{});
    case DType::kF64: return f(TypeTag<double>{});
    case DType::kC64: return f(TypeTag<std::complex<float>>{});
    case DType::kC128: return f(TypeTag<std::complex<double>>{});
    default: return fallback();
  }
}

// VisitDType, plus the narrow types (f8*, f4e2m1fn: NarrowFloat<T>; s2, s4, u2, u4:
// NarrowInt<T>) for the kernels that compute on them by widening (elementwise, convert, compare,
// clamp, reduce, scatter combiners).
template <typename F, typename G>
auto VisitDTypeOrNarrow(DType dtype, F&& f, G&& fallback) {
  switch (dtype) {
    case DType::kF8E4M3FN: return f(TypeTag<NarrowFloat<DType::kF8E4M3FN>>{});
    case DType::kF8E4M3FNUZ: return f(TypeTag<NarrowFloat<DType::kF8E4M3FNUZ>>{});
    case DType::kF8E4M3B11FNUZ: return f(TypeTag<NarrowFloat<DType::kF8E4M3B11FNUZ>>{});
    case DType::kF8E4M3: return f(TypeTag<NarrowFloat<DType::kF8E4M3>>{});
    case DType::kF8E5M2: return f(TypeTag<NarrowFloat<DType::kF8E5M2>>{});
    case DType::kF8E5M2FNUZ: return f(TypeTag<NarrowFloat<DType::kF8E5M2FNUZ>>{});
    case DType::kF8E3M4: return f(TypeTag<NarrowFloat<DType::kF8E3M4>>{});
    case DType::kF8E8M0FNU: return f(TypeTag<NarrowFloat<DType::kF8E8M0FNU>>{});
    case DType::kF4E2M1FN: return f(TypeTag<NarrowFloat<DType::kF4E2M1FN>>{});
    case DType::kS2: return f(TypeTag<NarrowInt<DType::kS2>>{});
    case DType::kS4: return f(TypeTag<NarrowInt<DType::kS4>>{});
    case DType::kU2: return f(TypeTag<NarrowInt<DType::kU2>>{});
    case DType::kU4: return f(TypeTag<NarrowInt<DType::kU4>>{});
    default: return VisitDType(dtype, std::forward<F>(f), std::forward<G>(fallback));
  }
}

// True when kernels can compute on `dtype` natively (every type VisitDType knows). The narrow
// types (IsNarrowType) are computed on by the elementwise, compare, convert, clamp, select and
// reduce kernels only, by widening; dot and convolution callers widen them first.
bool IsComputableDType(DType dtype);
// IsComputableDType or a narrow type: what the elementwise, compare, convert, clamp and select
// kernels take.
bool IsElementwiseDType(DType dtype);

// Error for a dtype the kernels do not compute on, naming `what` ("add", "convolution").
Status UnsupportedDType(std::string_view what, DType dtype);

// Converts one value between storage types with XLA's rules: float -> integer truncates toward
// zero, saturates at the integer's range and maps NaN to 0 (s2 / s4 / u2 / u4 too); integer ->
// narrower integer wraps; anything -> pred is `x != 0`; the narrow types per narrow_types.h;
// real -> complex puts 0 in the imaginary part; complex -> real keeps the real part;
// f64 -> f16 / bf16 rounds once (round-to-odd through f32 keeps it exact).
template <typename D, typename S>
inline D ConvertScalar(S s) {
  if constexpr (std::is_same_v<D, S>) {
    return s;
  } else if constexpr (NarrowFloatT<D> && std::is_same_v<S, double>) {
    return DoubleToNarrow<DTypeOf<D>>(s);
  } else if constexpr (NarrowFloatT<D> && (HalfLike<S> || NarrowFloatT<S>)) {
    return Float16ishToNarrow<DTypeOf<D>>(ToCompute(s));
  } else if constexpr (NarrowT<S>) {
    return ConvertScalar<D>(ToCompute(s));  // exact widening first
  } else if constexpr (NarrowFloatT<D>) {
    // From f32 with one rounding; integers go through f32 first, as XLA converts.
    return FloatToNarrow<DTypeOf<D>>(ConvertScalar<float>(s));
  } else if constexpr (NarrowIntT<D>) {
    if constexpr (Complex<S>) {
      return ConvertScalar<D>(s.real());
    } else if constexpr (std::is_floating_point_v<S> || HalfLike<S>) {
      return SaturateToNarrow<DTypeOf<D>>(static_cast<double>(ToCompute(s)));
    } else {
      return WrapToNarrow<DTypeOf<D>>(static_cast<int64_t>(s));
    }
  } else if constexpr (HalfLike<D> && std::is_same_v<S, double>) {
    float f = static_cast<float>(s);
    if (std::isfinite(s) && static_cast<double>(f) != s && std::isfinite(f)) {
      // Round to odd: take the f32 value toward zero and set its lowest bit, so the second
      // rounding to 16 bits sees a sticky bit exactly where a single rounding would.
      if (std::fabs(static_cast<double>(f)) > std::fabs(s)) f = std::nextafter(f, 0.0f);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      bits |= 1u;
      std::memcpy(&f, &bits, 4);
    }
    return FromCompute<D>(f);
  } else if constexpr (HalfLike<S>) {
    return ConvertScalar<D>(ToCompute(s));
  } else if constexpr (HalfLike<D>) {
    return FromCompute<D>(ConvertScalar<float>(s));
  } else if constexpr (Pred<D>) {
    return s != S(0);
  } else if constexpr (Complex<D> && Complex<S>) {
    return D(static_cast<typename D::value_type>(s.real()),
             static_cast<typename D::value_type>(s.imag()));
  } else if constexpr (Complex<S>) {
    return ConvertScalar<D>(s.real());
  } else if constexpr (Complex<D>) {
    return D(static_cast<typename D::value_type>(s), 0);
  } else if constexpr (Int<D> && std::is_floating_point_v<S>) {
    if (std::isnan(s)) return D(0);
    // Bounds as S: min is a power of two (exact); max+1 is too, so compare with >=.
    constexpr S kLow = static_cast<S>(std::numeric_limits<D>::min());
    constexpr S kHighExclusive = static_cast<S>(std::numeric_limits<D>::max() / 2 + 1) * S(2);
    if (s <= kLow) return std::numeric_limits<D>::min();
    if (s >= kHighExclusive) return std::numeric_limits<D>::max();
    return static_cast<D>(s);
  } else {
    return static_cast<D>(s);
  }
}

// XLA's total order on floats: -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN. Maps a value to
// a signed integer with the same order.
template <typename S>
inline auto TotalOrderKey(S v) {
  if constexpr (std::is_same_v<S, float>) {
    int32_t i;
    std::memcpy(&i, &v, 4);
    return i < 0 ? static_cast<int32_t>(i ^ 0x7fffffff) : i;
  } else if constexpr (std::is_same_v<S, double>) {
    int64_t i;
    std::memcpy(&i, &v, 8);
    return i < 0 ? static_cast<int64_t>(i ^ 0x7fffffffffffffffLL) : i;
  } else if constexpr (HalfLike<S>) {
    int16_t i = static_cast<int16_t>(v.bits);
    return i < 0 ? static_cast<int16_t>(i ^ 0x7fff) : i;
  } else if constexpr (NarrowFloatT<S>) {
    return TotalOrderKey(NarrowToFloat(v));  // XLA compares them widened
  } else {
    return v;
  }
}

// Linear offset of a multi-index in row-major order.
inline int64_t LinearIndex(const int64_t* index, const std::vector<int64_t>& strides) {
  int64_t off = 0;
  for (size_t i = 0; i < strides.size(); ++i) off += index[i] * strides[i];
  return off;
}

// Advances a row-major multi-index over `dims`; false after the last one.
inline bool NextIndex(std::vector<int64_t>& index, const std::vector<int64_t>& dims) {
  for (int i = static_cast<int>(dims.size()) - 1; i >= 0; --i) {
    if (++index[i] < dims[i]) return true;
    index[i] = 0;
  }
  return false;
}

}  // namespace xs::kernels

#endif  // XSHARD_KERNELS_NUMERIC_H_
