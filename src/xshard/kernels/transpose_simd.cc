// TransposeTile32 (transpose_simd.h), compiled once per Highway target (foreach_target.h): 4 x 4
// blocks of 32-bit elements transposed in 128-bit registers, the block edges element by element.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "xshard/kernels/transpose_simd.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <algorithm>
#include <cstring>

#include "hwy/highway.h"
#include "xshard/kernels/transpose_simd.h"

HWY_BEFORE_NAMESPACE();
namespace xs::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The elements of rows [i0, i1) x columns [j0, j1) one at a time.
inline void CopyEdge(const uint32_t* s, uint32_t* d, int64_t i0, int64_t i1, int64_t si,
                     int64_t j0, int64_t j1, int64_t dj) {
  for (int64_t j = j0; j < j1; ++j) {
    for (int64_t i = i0; i < i1; ++i) d[j * dj + i] = s[j + i * si];
  }
}

void TransposeTile32Impl(const std::byte* src, std::byte* dst, int64_t ni, int64_t si, int64_t nj,
                         int64_t dj) {
  const uint32_t* s = reinterpret_cast<const uint32_t*>(src);
  uint32_t* d = reinterpret_cast<uint32_t*>(dst);
#if HWY_TARGET == HWY_SCALAR
  CopyEdge(s, d, 0, ni, si, 0, nj, dj);
#else
  constexpr int64_t kTile = 64;
  const hn::Full128<uint32_t> d32;
  const hn::Full128<uint64_t> d64;
  for (int64_t jb = 0; jb < nj; jb += kTile) {
    const int64_t je = std::min(jb + kTile, nj);
    const int64_t je4 = jb + (je - jb) / 4 * 4;
    for (int64_t ib = 0; ib < ni; ib += kTile) {
      const int64_t ie = std::min(ib + kTile, ni);
      const int64_t ie4 = ib + (ie - ib) / 4 * 4;
      for (int64_t j = jb; j < je4; j += 4) {
        for (int64_t i = ib; i < ie4; i += 4) {
          // r_k holds source row i + k, columns j .. j + 3; output row j + l is lane l of each.
          const auto r0 = hn::LoadU(d32, s + j + (i + 0) * si);
          const auto r1 = hn::LoadU(d32, s + j + (i + 1) * si);
          const auto r2 = hn::LoadU(d32, s + j + (i + 2) * si);
          const auto r3 = hn::LoadU(d32, s + j + (i + 3) * si);
          const auto t0 = hn::BitCast(d64, hn::InterleaveLower(d32, r0, r1));  // r0[0] r1[0] r0[1] r1[1]
          const auto t1 = hn::BitCast(d64, hn::InterleaveLower(d32, r2, r3));  // r2[0] r3[0] r2[1] r3[1]
          const auto t2 = hn::BitCast(d64, hn::InterleaveUpper(d32, r0, r1));  // r0[2] r1[2] r0[3] r1[3]
          const auto t3 = hn::BitCast(d64, hn::InterleaveUpper(d32, r2, r3));  // r2[2] r3[2] r2[3] r3[3]
          hn::StoreU(hn::BitCast(d32, hn::InterleaveLower(d64, t0, t1)), d32, d + (j + 0) * dj + i);
          hn::StoreU(hn::BitCast(d32, hn::InterleaveUpper(d64, t0, t1)), d32, d + (j + 1) * dj + i);
          hn::StoreU(hn::BitCast(d32, hn::InterleaveLower(d64, t2, t3)), d32, d + (j + 2) * dj + i);
          hn::StoreU(hn::BitCast(d32, hn::InterleaveUpper(d64, t2, t3)), d32, d + (j + 3) * dj + i);
        }
        CopyEdge(s, d, ie4, ie, si, j, j + 4, dj);
      }
      CopyEdge(s, d, ib, ie, si, je4, je, dj);
    }
  }
#endif
}

}  // namespace xs::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace xs::kernels {

HWY_EXPORT(TransposeTile32Impl);

void TransposeTile32(const std::byte* src, std::byte* dst, int64_t ni, int64_t si, int64_t nj,
                     int64_t dj) {
  HWY_DYNAMIC_DISPATCH(TransposeTile32Impl)(src, dst, ni, si, nj, dj);
}

}  // namespace xs::kernels
#endif  // HWY_ONCE
