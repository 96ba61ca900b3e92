// Per-target loop templates for the vector elementwise kernels: Io<S> loads a storage type into
// compute vectors and stores back (bf16 rounds to nearest even with quiet NaNs, exactly as
// FloatToBFloat16; f16 through F16C), and unary / binary loops with a buffered tail (any n, any
// alignment) and streaming stores for large f32 / f64 results. Included per target.
#if defined(XSHARD_KERNELS_SIMD_LOOPS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef XSHARD_KERNELS_SIMD_LOOPS_INL_H_
#undef XSHARD_KERNELS_SIMD_LOOPS_INL_H_
#else
#define XSHARD_KERNELS_SIMD_LOOPS_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "xshard/core/dtype.h"
#include "xshard/kernels/numeric.h"

HWY_BEFORE_NAMESPACE();
namespace xs::kernels::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Upper bound on lanes of any vector used here (AVX-512 u8 would be 64).
inline constexpr int64_t kMaxLanes = 64;
// Results at least this large are written with non-temporal stores when aligned.
inline constexpr int64_t kStreamBytes = int64_t{4} << 20;

template <class S>
struct Io {  // float, double: the storage is the compute type
  using C = S;
  template <class D> static HWY_INLINE hn::Vec<D> Load(D d, const S* p) { return hn::LoadU(d, p); }
  template <class D> static HWY_INLINE void Store(hn::Vec<D> v, D d, S* p) { hn::StoreU(v, d, p); }
};
template <>
struct Io<BFloat16> {
  using C = float;
  template <class D> static HWY_INLINE hn::Vec<D> Load(D d, const BFloat16* p) {
    const hn::Rebind<uint16_t, D> du16;
    const hn::RebindToUnsigned<D> du32;
    const auto w = hn::PromoteTo(du32, hn::LoadU(du16, reinterpret_cast<const uint16_t*>(p)));
    return hn::BitCast(d, hn::ShiftLeft<16>(w));
  }
  template <class D> static HWY_INLINE void Store(hn::Vec<D> v, D /*d*/, BFloat16* p) {
    const hn::RebindToUnsigned<D> du32;
    const hn::RebindToSigned<D> di32;
    const hn::Rebind<uint16_t, D> du16;
    const auto x = hn::BitCast(du32, v);
    const auto lsb = hn::And(hn::ShiftRight<16>(x), hn::Set(du32, 1u));
    const auto rounded = hn::ShiftRight<16>(hn::Add(hn::Add(x, hn::Set(du32, 0x7fffu)), lsb));
    const auto quiet_nan = hn::Or(hn::ShiftRight<16>(x), hn::Set(du32, 0x40u));
    const auto r = hn::IfThenElse(hn::RebindMask(du32, hn::IsNaN(v)), quiet_nan, rounded);
    hn::StoreU(hn::DemoteTo(du16, hn::BitCast(di32, r)), du16, reinterpret_cast<uint16_t*>(p));
  }
};
template <>
struct Io<Half> {
  using C = float;
  template <class D> static HWY_INLINE hn::Vec<D> Load(D d, const Half* p) {
    const hn::Rebind<hwy::float16_t, D> df16;
    return hn::PromoteTo(d, hn::LoadU(df16, reinterpret_cast<const hwy::float16_t*>(p)));
  }
  template <class D> static HWY_INLINE void Store(hn::Vec<D> v, D d, Half* p) {
    (void)d;
    const hn::Rebind<hwy::float16_t, D> df16;
    hn::StoreU(hn::DemoteTo(df16, v), df16, reinterpret_cast<hwy::float16_t*>(p));
  }
};
// f16 vectors are exact only with F16C (the SSE4 / SSSE3 emulation truncates), so AVX2 and up.
inline constexpr bool kHaveF16 = HWY_TARGET <= HWY_AVX2;

template <class Op>
concept HasBad = requires(float x) { Op::Scalar(x); };

// Op on one vector; lanes flagged by Op::Bad are recomputed with the scalar op.
template <class Op, class D, class V>
HWY_INLINE V ApplyUnary(D d, V x) {
  V r = Op::Apply(d, x);
  if constexpr (HasBad<Op>) {
    const auto bad = Op::Bad(d, x);
    if (HWY_UNLIKELY(!hn::AllFalse(d, bad))) {
      using T = hn::TFromD<D>;
      HWY_ALIGN T xs[kMaxLanes];
      HWY_ALIGN T rs[kMaxLanes];
      uint8_t bits[kMaxLanes / 8] = {};
      hn::Store(x, d, xs);
      hn::Store(r, d, rs);
      hn::StoreMaskBits(d, bad, bits);
      const size_t lanes = hn::Lanes(d);
      for (size_t i = 0; i < lanes; ++i) {
        if ((bits[i / 8] >> (i % 8)) & 1) rs[i] = Op::Scalar(xs[i]);
      }
      r = hn::Load(d, rs);
    }
  }
  return r;
}

// Calls step(in, out) (binary: step(a, b, out)) on each full vector of Lanes(d) elements and
// tail(in, out, m) (binary: tail(a, b, out, m)) on the m < Lanes(d) elements left.
template <class S, class O, class D, class Step, class Tail>
HWY_INLINE void UnaryDriver(D d, const S* a, O* o, int64_t n, const Step& step, const Tail& tail) {
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) step(a + i, o + i);
  if (i < n) tail(a + i, o + i, n - i);
}
template <class S, class O, class D, class Step, class Tail>
HWY_INLINE void BinaryDriver(D d, const S* a, const S* b, O* o, int64_t n, const Step& step,
                             const Tail& tail) {
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) step(a + i, b + i, o + i);
  if (i < n) tail(a + i, b + i, o + i, n - i);
}

// A tail that runs `step` once on zero-padded copies of the m elements, so that they go through
// the same vector code as the rest (used where the vector op is not bit-identical to the scalar
// one: the transcendentals).
template <class D, class Step>
HWY_INLINE auto PaddedUnaryTail(D, const Step& step) {
  return [&step](const auto* a, auto* o, int64_t m) {
    using S = std::remove_cv_t<std::remove_pointer_t<decltype(a)>>;
    using O = std::remove_pointer_t<decltype(o)>;
    constexpr size_t kLanes = hn::MaxLanes(D());
    HWY_ALIGN S ib[kLanes] = {};
    HWY_ALIGN O ob[kLanes];
    std::memcpy(ib, a, static_cast<size_t>(m) * sizeof(S));
    step(ib, ob);
    std::memcpy(o, ob, static_cast<size_t>(m) * sizeof(O));
  };
}

// True when a float / double result of n elements should bypass the cache.
template <class S, class D>
HWY_INLINE bool UseStream(D d, const S* o, int64_t n) {
  const size_t vec_bytes = hn::Lanes(d) * sizeof(S);
  return n * static_cast<int64_t>(sizeof(S)) >= kStreamBytes &&
         reinterpret_cast<uintptr_t>(o) % vec_bytes == 0;
}

template <class Op, class S>
void UnaryLoop(const std::byte* in, std::byte* out, int64_t n) {
  using C = typename Io<S>::C;
  const hn::ScalableTag<C> d;
  const S* a = reinterpret_cast<const S*>(in);
  S* o = reinterpret_cast<S*>(out);
  if constexpr (std::is_same_v<S, C>) {
    if (UseStream(d, o, n)) {
      const int64_t full = n / static_cast<int64_t>(hn::Lanes(d)) * hn::Lanes(d);
      auto step = [d](const S* x, S* y) { hn::Stream(ApplyUnary<Op>(d, hn::LoadU(d, x)), d, y); };
      UnaryDriver(d, a, o, full, step, PaddedUnaryTail(d, step));
      hwy::FlushStream();
      a += full;
      o += full;
      n -= full;
    }
  }
  auto step = [d](const S* x, S* y) { Io<S>::Store(ApplyUnary<Op>(d, Io<S>::Load(d, x)), d, y); };
  UnaryDriver(d, a, o, n, step, PaddedUnaryTail(d, step));
}

// The binary ops are bit-exact, so tails (and short calls, e.g. one element from a sort) take
// the scalar op: no padding copies.
template <class Op, class S>
void ScalarBinaryTail(const S* a, const S* b, S* o, int64_t m) {
  for (int64_t i = 0; i < m; ++i) o[i] = FromCompute<S>(Op::Scalar(ToCompute(a[i]), ToCompute(b[i])));
}

template <class Op, class S>
void BinaryLoop(const std::byte* in_a, const std::byte* in_b, std::byte* out, int64_t n) {
  using C = typename Io<S>::C;
  const hn::ScalableTag<C> d;
  const S* a = reinterpret_cast<const S*>(in_a);
  const S* b = reinterpret_cast<const S*>(in_b);
  S* o = reinterpret_cast<S*>(out);
  if constexpr (std::is_same_v<S, C>) {
    if (UseStream(d, o, n)) {
      const int64_t full = n / static_cast<int64_t>(hn::Lanes(d)) * hn::Lanes(d);
      BinaryDriver(
          d, a, b, o, full,
          [d](const S* x, const S* y, S* z) {
            hn::Stream(Op::Apply(d, hn::LoadU(d, x), hn::LoadU(d, y)), d, z);
          },
          ScalarBinaryTail<Op, S>);
      hwy::FlushStream();
      a += full;
      b += full;
      o += full;
      n -= full;
    }
  }
  BinaryDriver(
      d, a, b, o, n,
      [d](const S* x, const S* y, S* z) {
        Io<S>::Store(Op::Apply(d, Io<S>::Load(d, x), Io<S>::Load(d, y)), d, z);
      },
      ScalarBinaryTail<Op, S>);
}

}  // namespace xs::kernels::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // XSHARD_KERNELS_SIMD_LOOPS_INL_H_
