// VectorMaxMin (reduce_simd.h): four vector accumulators of Max / Min and a NaN mask per Highway
// target, the tail one element at a time. VectorBlockSums: reduce.cc's fixed-order block sums.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "xshard/kernels/reduce_simd.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "xshard/kernels/reduce_simd.h"

HWY_BEFORE_NAMESPACE();
namespace xs::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <class T>
bool MaxMinImpl(const T* x, int64_t n, bool max, T* result) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  if (n < 4 * N) {
    if (n == 0) return false;
    T m = x[0];
    for (int64_t i = 0; i < n; ++i) {
      if (x[i] != x[i]) return false;
      m = max ? (x[i] > m ? x[i] : m) : (x[i] < m ? x[i] : m);
    }
    *result = m;
    return true;
  }
  auto a0 = hn::LoadU(d, x), a1 = hn::LoadU(d, x + N), a2 = hn::LoadU(d, x + 2 * N),
       a3 = hn::LoadU(d, x + 3 * N);
  auto nan = hn::Or(hn::Or(hn::IsNaN(a0), hn::IsNaN(a1)), hn::Or(hn::IsNaN(a2), hn::IsNaN(a3)));
  int64_t i = 4 * N;
  if (max) {
    for (; i + 4 * N <= n; i += 4 * N) {
      const auto v0 = hn::LoadU(d, x + i), v1 = hn::LoadU(d, x + i + N),
                 v2 = hn::LoadU(d, x + i + 2 * N), v3 = hn::LoadU(d, x + i + 3 * N);
      nan = hn::Or(nan, hn::Or(hn::Or(hn::IsNaN(v0), hn::IsNaN(v1)), hn::Or(hn::IsNaN(v2), hn::IsNaN(v3))));
      a0 = hn::Max(a0, v0);
      a1 = hn::Max(a1, v1);
      a2 = hn::Max(a2, v2);
      a3 = hn::Max(a3, v3);
    }
    a0 = hn::Max(hn::Max(a0, a1), hn::Max(a2, a3));
  } else {
    for (; i + 4 * N <= n; i += 4 * N) {
      const auto v0 = hn::LoadU(d, x + i), v1 = hn::LoadU(d, x + i + N),
                 v2 = hn::LoadU(d, x + i + 2 * N), v3 = hn::LoadU(d, x + i + 3 * N);
      nan = hn::Or(nan, hn::Or(hn::Or(hn::IsNaN(v0), hn::IsNaN(v1)), hn::Or(hn::IsNaN(v2), hn::IsNaN(v3))));
      a0 = hn::Min(a0, v0);
      a1 = hn::Min(a1, v1);
      a2 = hn::Min(a2, v2);
      a3 = hn::Min(a3, v3);
    }
    a0 = hn::Min(hn::Min(a0, a1), hn::Min(a2, a3));
  }
  if (!hn::AllFalse(d, nan)) return false;
  T m = hn::GetLane(max ? hn::MaxOfLanes(d, a0) : hn::MinOfLanes(d, a0));
  for (; i < n; ++i) {
    if (x[i] != x[i]) return false;
    m = max ? (x[i] > m ? x[i] : m) : (x[i] < m ? x[i] : m);
  }
  *result = m;
  return true;
}

// The pairwise tree inside one vector: the upper half of the lanes added into the lower half
// until one lane is left.
template <class D>
HWY_INLINE hn::TFromD<D> HalvingSum(D d, hn::Vec<D> v) {
#if HWY_TARGET == HWY_SCALAR
  (void)d;
  return hn::GetLane(v);
#else
  if constexpr (hn::MaxLanes(d) == 1) {
    return hn::GetLane(v);
  } else {
    const hn::Half<D> dh;
    return HalvingSum(dh, hn::Add(hn::LowerHalf(dh, v), hn::UpperHalf(dh, v)));
  }
#endif
}

// 16 lanes as K = 16 / L vectors of L lanes: vector k holds lanes [k L, k L + L). The tree's
// steps of 8, 4, ... lanes are vector adds while they span whole vectors, then HalvingSum.
template <class T>
void BlockSumsImpl(const T* x, int64_t n, T* acc) {
  constexpr int64_t kLanes = 16, kBlock = 64;
  const hn::CappedTag<T, kLanes> d;
  constexpr int64_t L = static_cast<int64_t>(hn::MaxLanes(d));
  static_assert(kLanes % L == 0);
  constexpr int64_t K = kLanes / L;
  T a = *acc;
  for (int64_t b = 0; b < n; b += kBlock) {
    const T* p = x + b;
    hn::Vec<decltype(d)> v[K];
    for (int64_t k = 0; k < K; ++k) v[k] = hn::LoadU(d, p + k * L);
    for (int64_t j = kLanes; j < kBlock; j += kLanes) {
      for (int64_t k = 0; k < K; ++k) v[k] = hn::Add(v[k], hn::LoadU(d, p + j + k * L));
    }
    for (int64_t w = K / 2; w >= 1; w /= 2) {
      for (int64_t k = 0; k < w; ++k) v[k] = hn::Add(v[k], v[k + w]);
    }
    a += HalvingSum(d, v[0]);
  }
  *acc = a;
}

bool MaxMinF32(const float* x, int64_t n, bool max, float* result) { return MaxMinImpl(x, n, max, result); }
bool MaxMinF64(const double* x, int64_t n, bool max, double* result) { return MaxMinImpl(x, n, max, result); }
void BlockSumsF32(const float* x, int64_t n, float* acc) { BlockSumsImpl(x, n, acc); }
void BlockSumsF64(const double* x, int64_t n, double* acc) { BlockSumsImpl(x, n, acc); }

}  // namespace xs::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace xs::kernels {

HWY_EXPORT(MaxMinF32);
HWY_EXPORT(MaxMinF64);
HWY_EXPORT(BlockSumsF32);
HWY_EXPORT(BlockSumsF64);
void VectorBlockSums(const float* x, int64_t n, float* acc) { HWY_DYNAMIC_DISPATCH(BlockSumsF32)(x, n, acc); }
void VectorBlockSums(const double* x, int64_t n, double* acc) { HWY_DYNAMIC_DISPATCH(BlockSumsF64)(x, n, acc); }

bool VectorMaxMin(const float* x, int64_t n, bool max, float* result) {
  return HWY_DYNAMIC_DISPATCH(MaxMinF32)(x, n, max, result);
}
bool VectorMaxMin(const double* x, int64_t n, bool max, double* result) {
  return HWY_DYNAMIC_DISPATCH(MaxMinF64)(x, n, max, result);
}

}  // namespace xs::kernels
#endif  // HWY_ONCE
