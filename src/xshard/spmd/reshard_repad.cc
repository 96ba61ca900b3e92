// The repad route: uneven dims whose source and target tiles do not line up. f32[29,37] from
// P('y','x') to P('x','y') on (x=2, y=4) has shards of 8 x 19 and wants 15 x 10: no all-to-all
// splits a shard of 19 into 4 pieces that are whole target shards. A halo exchange first moves
// each source tile to its block of the dims padded to a multiple of the device count (37 -> 40:
// blocks of 20, each tile taking the first elements of the next; Reshard also tries the smallest
// multiple of the two tile counts, which may move fewer halo rows), the even routes then reshard
// the padded value (one all-to-all and a permute here), and a last halo exchange moves each
// target tile from its padded block (16 rows) to its real place (15). XLA pads the same way and
// mends the boundary rows with collective-permutes; the alternative was gathering whole dims.
#include <algorithm>
#include <numeric>

#include "xshard/base/strings.h"
#include "xshard/spmd/halo.h"
#include "xshard/spmd/reshard_routes.h"

namespace xs::spmd::internal {
namespace {

// Tile k of dim d of `v` (blocks of v's layout) takes global positions [k * block, k * block +
// block) of the dim, the first min(block, real - k * block) of them real (the rest padding):
// v's buffer with dim d replaced by those windows (the buffer itself when its blocks are already
// `block` long). nullopt (after `*reason`) when the windows reach farther than the halo
// exchanges go.
StatusOr<std::optional<Instruction*>> RepadWindows(const PartitionedValue& v, int d, int64_t tiles, int64_t block,
                                                   int64_t real, std::string_view why, std::string* reason) {
  Emitter& em = v.emitter();
  Instruction* x = v.hlo();
  if (x->shape().dim(d) == block) return std::optional<Instruction*>(x);
  if (tiles == 1) {
    // One tile holds the whole dim: padding or cutting its end is local.
    std::vector<int64_t> dims = x->shape().dims();
    const bool grow = block > dims[d];
    dims[d] = block;
    return std::optional<Instruction*>(grow ? em.PadHigh(x, em.ZeroOf(x->shape().dtype()), dims) : em.Slice(x, dims));
  }
  DimWindow w;
  w.dim = d;
  w.size = block;
  for (int64_t k = 0; k < tiles; ++k) {
    w.lo.push_back(k * block);
    w.needed.push_back(std::clamp<int64_t>(real - k * block, 0, block));
  }
  StatusOr<Instruction*> window = HaloWindow(v, w, why);
  // FailedPrecondition: the windows reach too far for a halo exchange (halo.h); whole tiles then.
  if (!window.ok() && window.status().code() == StatusCode::kFailedPrecondition) window = FarWindow(v, w, why);
  if (!window.ok() && window.status().code() == StatusCode::kFailedPrecondition) {
    *reason = StrCat("the pieces cannot be lined up: ", window.status().message());
    return std::optional<Instruction*>();
  }
  if (!window.ok()) return window.status();
  return std::optional<Instruction*>(*window);
}

}  // namespace

StatusOr<RouteResult> RepadRoute(const PartitionedValue& v, const HloSharding& target, std::string_view why,
                                 bool device_multiple) {
  const HloSharding& s = v.sharding();
  if (v.partial()) return NotApplicable("the value holds partial results");
  if (!s.IsTiled() || !target.IsTiled()) return NotApplicable("a sharding is not tiled");
  Emitter& em = v.emitter();
  const int64_t n = em.num_partitions();
  const std::vector<int64_t>& real = v.global_shape().dims();
  XS_ASSIGN_OR_RETURN(ShardLayout from, v.Layout());
  XS_ASSIGN_OR_RETURN(ShardLayout to, ShardLayout::Create(target, real, n));
  const int rank = from.rank();
  // Dims whose padded source and target extents differ are padded to a multiple of both tile
  // counts (the fewest elements), or of the device count, which every tile count (the
  // intermediate ones of the even routes too) divides.
  std::vector<int64_t> padded(rank);
  bool any = false;
  for (int d = 0; d < rank; ++d) {
    const int64_t src = from.shard_dims()[d] * from.tiles()[d], dst = to.shard_dims()[d] * to.tiles()[d];
    const int64_t multiple = device_multiple ? n : std::lcm(from.tiles()[d], to.tiles()[d]);
    padded[d] = src == dst ? src : (real[d] + multiple - 1) / multiple * multiple;
    any = any || src != dst;
  }
  if (!any) return NotApplicable("the source and target tiles already line up (an even route moves them)");
  std::string reason;
  std::vector<int64_t> dims = real;
  PartitionedValue cur = v;
  // Dim d of `cur` in blocks of `block` over `tiles` tiles, the value's global dim d then
  // `global` and its sharding `sharding`; false (with `reason`) when the halo cannot reach.
  auto reblock = [&](int d, int64_t tiles, int64_t block, int64_t global,
                     const HloSharding& sharding) -> StatusOr<bool> {
    XS_ASSIGN_OR_RETURN(std::optional<Instruction*> x, RepadWindows(cur, d, tiles, block, real[d], why, &reason));
    if (!x) return false;
    dims[d] = global;
    cur = PartitionedValue(*x, v.global_shape().WithDims(dims), sharding, &em);
    return true;
  };
  // Source tiles to their padded blocks, one dim at a time.
  for (int d = 0; d < rank; ++d) {
    XS_ASSIGN_OR_RETURN(bool moved, reblock(d, from.tiles()[d], padded[d] / from.tiles()[d], padded[d], s));
    if (!moved) return NotApplicable(reason);
  }
  // The padded value's tiles line up: the even routes (or a gather, when nothing better fits:
  // then this route loses to the others on cost).
  XS_ASSIGN_OR_RETURN(cur, cur.Reshard(target, why));
  // Target tiles from their padded blocks to their real places.
  for (int d = 0; d < rank; ++d) {
    XS_ASSIGN_OR_RETURN(bool moved, reblock(d, to.tiles()[d], to.shard_dims()[d], real[d], target));
    if (!moved) return NotApplicable(reason);
  }
  return cur;
}

}  // namespace xs::spmd::internal
