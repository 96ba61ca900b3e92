// The 4-byte transposing tile copy behind kernels::Transpose (shape_ops.cc), with SIMD 4x4 block
// transposes and runtime dispatch to the CPU's instructions (Highway).
#ifndef XSHARD_KERNELS_TRANSPOSE_SIMD_H_
#define XSHARD_KERNELS_TRANSPOSE_SIMD_H_

#include <cstddef>
#include <cstdint>

namespace xs::kernels {

// For every j in [0, nj) and i in [0, ni): dst[j * dj + i] = src[j + i * si], elements of 4 bytes
// (copied as bits). src and dst must not overlap. Walks 64 x 64 tiles so the source lines a tile
// reads stay in L1; inside a tile, 4 x 4 blocks are transposed in registers.
void TransposeTile32(const std::byte* src, std::byte* dst, int64_t ni, int64_t si, int64_t nj,
                     int64_t dj);

}  // namespace xs::kernels

#endif  // XSHARD_KERNELS_TRANSPOSE_SIMD_H_
