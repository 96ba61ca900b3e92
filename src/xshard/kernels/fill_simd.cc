// FillRun (fill_simd.h): the element broadcast to a vector and stored over the run, four vectors
// a step, the tail one element at a time; 1-byte elements go to memset.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "xshard/kernels/fill_simd.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <cstring>

#include "hwy/highway.h"
#include "xshard/kernels/fill_simd.h"

HWY_BEFORE_NAMESPACE();
namespace xs::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <class T>
void FillImpl(std::byte* dst_bytes, const std::byte* elem, int64_t n) {
  T v;
  std::memcpy(&v, elem, sizeof(T));
  T* dst = reinterpret_cast<T*>(dst_bytes);
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const auto vec = hn::Set(d, v);
  int64_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    hn::StoreU(vec, d, dst + i);
    hn::StoreU(vec, d, dst + i + N);
    hn::StoreU(vec, d, dst + i + 2 * N);
    hn::StoreU(vec, d, dst + i + 3 * N);
  }
  for (; i + N <= n; i += N) hn::StoreU(vec, d, dst + i);
  for (; i < n; ++i) dst[i] = v;
}

void Fill2(std::byte* dst, const std::byte* elem, int64_t n) { FillImpl<uint16_t>(dst, elem, n); }
void Fill4(std::byte* dst, const std::byte* elem, int64_t n) { FillImpl<uint32_t>(dst, elem, n); }
void Fill8(std::byte* dst, const std::byte* elem, int64_t n) { FillImpl<uint64_t>(dst, elem, n); }

}  // namespace xs::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace xs::kernels {

HWY_EXPORT(Fill2);
HWY_EXPORT(Fill4);
HWY_EXPORT(Fill8);

void FillRun(std::byte* dst, const std::byte* elem, int64_t n, int esize) {
  switch (esize) {
    case 1: std::memset(dst, static_cast<int>(elem[0]), static_cast<size_t>(n)); return;
    case 2: HWY_DYNAMIC_DISPATCH(Fill2)(dst, elem, n); return;
    case 4: HWY_DYNAMIC_DISPATCH(Fill4)(dst, elem, n); return;
    case 8: HWY_DYNAMIC_DISPATCH(Fill8)(dst, elem, n); return;
    default:
      for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * esize, elem, static_cast<size_t>(esize));
  }
}

}  // namespace xs::kernels
#endif  // HWY_ONCE
