// Kernels written with the Pallas-style API (cmm/kernel.h, cmm/remote_copy.h), after seed 004:
// the tiled matmul (grid (M/bm, N/bn, K/bk), f32 scratch accumulator, write-out at the last k step
// under When), all-gather kernels over any mesh axes of a mesh of any rank (ring: n-1 steps to the
// right neighbour; recursive doubling: log2(n) exchanges of doubling blocks; direct: one step, a
// copy to every peer), and seed 004's distributed GEMM (all-gather the weights over 'x', slice,
// tiled matmul, psum over 'y') with the all-gather done by such a kernel.
#ifndef XSHARD_CMM_PALLAS_KERNELS_H_
#define XSHARD_CMM_PALLAS_KERNELS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/cmm/kernel.h"
#include "xshard/cmm/remote_copy.h"
#include "xshard/core/array.h"
#include "xshard/shard_map/shard_map.h"

namespace xs::cmm {

// Block sizes of the tiled matmul (seed 004's defaults are 128).
struct MatmulTiles {
  int64_t bm = 128, bk = 128, bn = 128;
};

// Seed 004's make_matmul for x: [m, k] and y: [k, n] of one float dtype: out [m, n] of dtype
// `out` with f32 accumulation. Errors: ranks, k disagreeing, and (from PallasCall) blocks that do
// not divide the dims.
StatusOr<PallasKernel> TiledMatmulKernel(const Shape& x, const Shape& y, MatmulTiles tiles,
                                         DType out = DType::kF32);
StatusOr<Array> TiledMatmul(const Array& x, const Array& y, MatmulTiles tiles,
                            DType out = DType::kF32);

// How an all-gather kernel moves the shards (seed 004's three grids).
enum class AllGatherKernelKind { kRing, kRecursiveDoubling, kDirect };
std::string_view AllGatherKernelName(
    AllGatherKernelKind kind);  // "ring", "recursive-doubling", ...

// jax.lax.all_gather(x, axes, axis=dim, tiled=True) as a kernel of remote copies, run on ctx's
// device; every device of the mesh calls it (same axes, kind, shapes) with the same transport.
// The group is the devices that differ only in `axes` (ordered row-major over the axes as given,
// like ShardMapContext::AxisIndex). Ring addresses peers by full mesh coordinates, recursive
// doubling by {axis: coordinate}, direct by logical id. Errors: unknown axes, dim out of range,
// recursive doubling over a group whose size is not a power of two.
StatusOr<Array> AllGatherKernel(ShardMapContext& ctx, RemoteTransport& transport, const Array& x,
                                const std::vector<std::string>& axes, AllGatherKernelKind kind,
                                int dim = 0);

// Seed 004's distributed_gemm_kernel1 on a mesh with axes `row` ('x') and `col` ('y'): x is the
// local block of P(row, col) inputs [M/R, K/C], w the local block of P(row, None) weights
// [K/R, N]; the weights are all-gathered over `row` by an AllGatherKernel of `kind`, rows
// col_index * K/C of size K/C are sliced out, multiplied by x with the tiled matmul (f32
// accumulation) and psum'd over `col`: the result is the local block of P(row, None) out [M/R, N].
StatusOr<Array> DistributedGemm(ShardMapContext& ctx, RemoteTransport& transport, const Array& x,
                                const Array& w, MatmulTiles tiles, AllGatherKernelKind kind,
                                const std::string& row = "x", const std::string& col = "y");

}  // namespace xs::cmm

#endif  // XSHARD_CMM_PALLAS_KERNELS_H_
