// Filling a run with copies of one element with the CPU's widest stores (Highway, runtime
// dispatch): the broadcasts that fused loops expand into their tiles (a row's max or mean along
// the last dim). Internal to kernels/ and exec/.
#ifndef XSHARD_KERNELS_FILL_SIMD_H_
#define XSHARD_KERNELS_FILL_SIMD_H_

#include <cstddef>
#include <cstdint>

namespace xs::kernels {

// dst[i] = *elem for i in [0, n), elements of `esize` bytes (1, 2, 4 and 8 vectorized, any other
// size one memcpy per element), copied as bits. `dst` needs no alignment.
void FillRun(std::byte* dst, const std::byte* elem, int64_t n, int esize);

}  // namespace xs::kernels

#endif  // XSHARD_KERNELS_FILL_SIMD_H_
