// Vector compare (FLOAT, -> pred bytes), convert (f32 <-> bf16 / f16 / s32), select and clamp
// kernels, one copy per Highway target; all bit-exact against the scalar kernels, so the tails
// (and short calls: a sort compares one pair at a time) run the scalar rule.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "xshard/kernels/elementwise_simd_misc.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <limits>

#include "hwy/highway.h"
#include "xshard/kernels/elementwise_simd.h"
#include "xshard/kernels/scalar_ops.h"
#include "xshard/kernels/simd_loops-inl.h"

HWY_BEFORE_NAMESPACE();
namespace xs::kernels::simd::HWY_NAMESPACE {
namespace {
#if HWY_TARGET != HWY_SCALAR  // the SCALAR target leaves the table empty

// IEEE comparisons: false when either side is NaN, except NE (true).
template <ComparisonDirection Dir, class V>
HWY_INLINE auto CompareVec(V a, V b) {
  if constexpr (Dir == ComparisonDirection::kEq) return hn::Eq(a, b);
  if constexpr (Dir == ComparisonDirection::kNe) return hn::Not(hn::Eq(a, b));
  if constexpr (Dir == ComparisonDirection::kLt) return hn::Lt(a, b);
  if constexpr (Dir == ComparisonDirection::kLe) return hn::Le(a, b);
  if constexpr (Dir == ComparisonDirection::kGt) return hn::Gt(a, b);
  if constexpr (Dir == ComparisonDirection::kGe) return hn::Ge(a, b);
}

// Compare on f32 lanes (f32, bf16, f16 storage); writes one 0 / 1 byte per lane.
template <ComparisonDirection Dir, class S>
void CompareLoop(const std::byte* in_a, const std::byte* in_b, std::byte* out, int64_t n) {
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  const hn::Rebind<uint8_t, decltype(d)> du8;
  BinaryDriver(
      d, reinterpret_cast<const S*>(in_a), reinterpret_cast<const S*>(in_b),
      reinterpret_cast<uint8_t*>(out), n,
      [&](const S* a, const S* b, uint8_t* o) {
        const auto m = CompareVec<Dir>(Io<S>::Load(d, a), Io<S>::Load(d, b));
        const auto ones = hn::IfThenElseZero(hn::RebindMask(di, m), hn::Set(di, 1));
        hn::StoreU(hn::DemoteTo(du8, ones), du8, o);
      },
      [](const S* a, const S* b, uint8_t* o, int64_t m) {
        for (int64_t i = 0; i < m; ++i) o[i] = ops::CompareValues<Dir>(ToCompute(a[i]), ToCompute(b[i]));
      });
}

template <class From, class To>
void ScalarConvertTail(const From* a, To* o, int64_t m) {
  for (int64_t i = 0; i < m; ++i) o[i] = ConvertScalar<To>(a[i]);
}

// Storage-to-storage conversion through f32 lanes.
template <class From, class To>
void ConvertViaF32(const std::byte* in, std::byte* out, int64_t n) {
  const hn::ScalableTag<float> d;
  UnaryDriver(
      d, reinterpret_cast<const From*>(in), reinterpret_cast<To*>(out), n,
      [d](const From* a, To* o) { Io<To>::Store(Io<From>::Load(d, a), d, o); },
      ScalarConvertTail<From, To>);
}

// f32 -> s32 as ConvertScalar: truncate, saturate at the s32 range, NaN -> 0.
void F32ToS32(const std::byte* in, std::byte* out, int64_t n) {
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  UnaryDriver(d, reinterpret_cast<const float*>(in), reinterpret_cast<int32_t*>(out), n,
              [&](const float* a, int32_t* o) {
                const auto v = hn::LoadU(d, a);
                auto r = hn::ConvertTo(di, v);
                const auto hi = hn::RebindMask(di, hn::Ge(v, hn::Set(d, 2147483648.0f)));
                const auto lo = hn::RebindMask(di, hn::Le(v, hn::Set(d, -2147483648.0f)));
                r = hn::IfThenElse(hi, hn::Set(di, std::numeric_limits<int32_t>::max()), r);
                r = hn::IfThenElse(lo, hn::Set(di, std::numeric_limits<int32_t>::min()), r);
                r = hn::IfThenZeroElse(hn::RebindMask(di, hn::IsNaN(v)), r);
                hn::StoreU(r, di, o);
              },
              ScalarConvertTail<float, int32_t>);
}

void S32ToF32(const std::byte* in, std::byte* out, int64_t n) {
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  UnaryDriver(d, reinterpret_cast<const int32_t*>(in), reinterpret_cast<float*>(out), n,
              [&](const int32_t* a, float* o) {
                hn::StoreU(hn::ConvertTo(d, hn::LoadU(di, a)), d, o);
              },
              ScalarConvertTail<int32_t, float>);
}

// select(pred, t, f) on unsigned lanes of the element's size; a nonzero pred byte picks t.
template <class U>
void SelectLoop(const std::byte* p, const std::byte* t, const std::byte* f, std::byte* out,
                int64_t n) {
  const hn::ScalableTag<U> d;
  const hn::Rebind<uint8_t, decltype(d)> du8;
  const U* tv = reinterpret_cast<const U*>(t);
  const U* fv = reinterpret_cast<const U*>(f);
  const uint8_t* pv = reinterpret_cast<const uint8_t*>(p);
  U* o = reinterpret_cast<U*>(out);
  auto step = [&](const uint8_t* pp, const U* a, const U* b, U* r) {
    const auto bytes = hn::LoadU(du8, pp);
    hn::Vec<decltype(d)> wide;
    if constexpr (sizeof(U) == 1) {
      wide = bytes;
    } else if constexpr (sizeof(U) == 8) {
      wide = hn::PromoteTo(d, hn::PromoteTo(hn::Rebind<uint32_t, decltype(d)>(), bytes));
    } else {
      wide = hn::PromoteTo(d, bytes);
    }
    const auto m = hn::Ne(wide, hn::Zero(d));
    hn::StoreU(hn::IfThenElse(m, hn::LoadU(d, a), hn::LoadU(d, b)), d, r);
  };
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) step(pv + i, tv + i, fv + i, o + i);
  for (; i < n; ++i) o[i] = pv[i] != 0 ? tv[i] : fv[i];
}

// The scalar clamp rule (the tails): the NaN operand, else min(hi, max(x, lo)) with std::min /
// std::max tie-breaking; the chosen operand's bits are stored.
template <class S>
HWY_INLINE S ScalarClamp(S lo, S x, S hi) {
  const auto l = ToCompute(lo), v = ToCompute(x), h = ToCompute(hi);
  if (std::isnan(l)) return lo;
  if (std::isnan(v)) return x;
  if (std::isnan(h)) return hi;
  const S m = v < l ? lo : x;
  return ToCompute(m) < h ? m : hi;
}

// Runs step(a, b, c, out) over lanes-sized pieces and ScalarClamp over the tail.
template <class S, class Step>
HWY_INLINE void TernaryDriver(int64_t lanes, const S* a, const S* b, const S* c, S* o, int64_t n,
                              const Step& step) {
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) step(a + i, b + i, c + i, o + i);
  for (; i < n; ++i) o[i] = ScalarClamp(a[i], b[i], c[i]);
}

// clamp(lo, x, hi) = min(hi, max(x, lo)) as std::min / std::max order them (ties keep x, then
// the max), then a NaN lo, x or hi (checked in that order) is the result.
template <class T>
void ClampLoop(const std::byte* lo, const std::byte* x, const std::byte* hi, std::byte* out,
               int64_t n) {
  const hn::ScalableTag<T> d;
  TernaryDriver(static_cast<int64_t>(hn::Lanes(d)), reinterpret_cast<const T*>(lo),
                reinterpret_cast<const T*>(x), reinterpret_cast<const T*>(hi),
                reinterpret_cast<T*>(out), n, [d](const T* a, const T* b, const T* c, T* r) {
                  const auto l = hn::LoadU(d, a), v = hn::LoadU(d, b), h = hn::LoadU(d, c);
                  auto m = hn::IfThenElse(hn::Lt(v, l), l, v);
                  m = hn::IfThenElse(hn::Lt(m, h), m, h);
                  m = hn::IfThenElse(hn::IsNaN(h), h, m);
                  m = hn::IfThenElse(hn::IsNaN(v), v, m);
                  m = hn::IfThenElse(hn::IsNaN(l), l, m);
                  hn::StoreU(m, d, r);
                });
}

// The same rule on bf16 / f16: decided on exact f32 widenings, then the raw 16-bit operand is
// picked, so a NaN comes out with the bits it went in with (as the scalar kernel does).
template <class S>
void ClampHalfLoop(const std::byte* lo, const std::byte* x, const std::byte* hi, std::byte* out,
                   int64_t n) {
  const hn::ScalableTag<float> d;
  const hn::RebindToUnsigned<decltype(d)> du32;
  const hn::RebindToSigned<decltype(d)> di32;
  const hn::Rebind<uint16_t, decltype(d)> du16;
  auto raw = [&](const S* p) {
    return hn::PromoteTo(du32, hn::LoadU(du16, reinterpret_cast<const uint16_t*>(p)));
  };
  TernaryDriver(static_cast<int64_t>(hn::Lanes(d)), reinterpret_cast<const S*>(lo),
                reinterpret_cast<const S*>(x), reinterpret_cast<const S*>(hi),
                reinterpret_cast<S*>(out), n, [&](const S* a, const S* b, const S* c, S* r) {
                  const auto l = Io<S>::Load(d, a), v = Io<S>::Load(d, b), h = Io<S>::Load(d, c);
                  const auto rl = raw(a), rv = raw(b), rh = raw(c);
                  const auto take_l = hn::Lt(v, l);
                  const auto m = hn::IfThenElse(take_l, l, v);
                  auto bits = hn::IfThenElse(hn::RebindMask(du32, take_l), rl, rv);
                  bits = hn::IfThenElse(hn::RebindMask(du32, hn::Not(hn::Lt(m, h))), rh, bits);
                  bits = hn::IfThenElse(hn::RebindMask(du32, hn::IsNaN(h)), rh, bits);
                  bits = hn::IfThenElse(hn::RebindMask(du32, hn::IsNaN(v)), rv, bits);
                  bits = hn::IfThenElse(hn::RebindMask(du32, hn::IsNaN(l)), rl, bits);
                  hn::StoreU(hn::DemoteTo(du16, hn::BitCast(di32, bits)), du16,
                             reinterpret_cast<uint16_t*>(r));
                });
}

template <ComparisonDirection Dir>
void FillCompareRow(KernelTable* t) {
  auto& row = t->compare[static_cast<int>(Dir)];
  row[static_cast<int>(FType::kF32)] = &CompareLoop<Dir, float>;
  row[static_cast<int>(FType::kBF16)] = &CompareLoop<Dir, BFloat16>;
  if (kHaveF16) row[static_cast<int>(FType::kF16)] = &CompareLoop<Dir, Half>;
}

#endif  // HWY_TARGET != HWY_SCALAR
}  // namespace

void FillMisc(KernelTable* t) {
#if HWY_TARGET != HWY_SCALAR
  FillCompareRow<ComparisonDirection::kEq>(t);
  FillCompareRow<ComparisonDirection::kNe>(t);
  FillCompareRow<ComparisonDirection::kLt>(t);
  FillCompareRow<ComparisonDirection::kLe>(t);
  FillCompareRow<ComparisonDirection::kGt>(t);
  FillCompareRow<ComparisonDirection::kGe>(t);
  t->convert[static_cast<int>(CvtOp::kF32ToBF16)] = &ConvertViaF32<float, BFloat16>;
  t->convert[static_cast<int>(CvtOp::kBF16ToF32)] = &ConvertViaF32<BFloat16, float>;
  if (kHaveF16) {
    t->convert[static_cast<int>(CvtOp::kF32ToF16)] = &ConvertViaF32<float, Half>;
    t->convert[static_cast<int>(CvtOp::kF16ToF32)] = &ConvertViaF32<Half, float>;
  }
  t->convert[static_cast<int>(CvtOp::kF32ToS32)] = &F32ToS32;
  t->convert[static_cast<int>(CvtOp::kS32ToF32)] = &S32ToF32;
  t->select_by_log2_size[0] = &SelectLoop<uint8_t>;
  t->select_by_log2_size[1] = &SelectLoop<uint16_t>;
  t->select_by_log2_size[2] = &SelectLoop<uint32_t>;
  t->select_by_log2_size[3] = &SelectLoop<uint64_t>;
  t->clamp[static_cast<int>(FType::kF32)] = &ClampLoop<float>;
  t->clamp[static_cast<int>(FType::kF64)] = &ClampLoop<double>;
  t->clamp[static_cast<int>(FType::kBF16)] = &ClampHalfLoop<BFloat16>;
  if (kHaveF16) t->clamp[static_cast<int>(FType::kF16)] = &ClampHalfLoop<Half>;
#else
  (void)t;
#endif
}

}  // namespace xs::kernels::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace xs::kernels::simd {

HWY_EXPORT(FillMisc);

void FillMiscForChosenTarget(KernelTable* t) { HWY_DYNAMIC_DISPATCH(FillMisc)(t); }

}  // namespace xs::kernels::simd
#endif  // HWY_ONCE
