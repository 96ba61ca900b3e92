// A rotation along a sharded dim, concatenate(slice(x, [s:n]), slice(x, [0:s])) (what jnp.roll
// lowers to), in x's sharding: each tile's result piece is the tail of the tile s / len
// ahead (cyclically) followed by the head of the next one, so at most two collective-permutes move
// exactly the rows that cross tile boundaries (XLA's rotate handling), instead of a window per
// concatenated slice.
#include <algorithm>
#include <string>

#include "xshard/base/strings.h"
#include "xshard/spmd/halo.h"
#include "xshard/spmd/handlers.h"

namespace xs::spmd::internal {
namespace {

// The slice's [start, limit) along `d` when it takes every element of the other dims with stride
// 1; nullopt otherwise.
std::optional<std::pair<int64_t, int64_t>> RangeAlong(const Instruction& slice, int d) {
  if (slice.opcode() != Opcode::kSlice || !slice.attrs().slice) return std::nullopt;
  const std::vector<SliceDim>& dims = *slice.attrs().slice;
  const Shape& from = slice.operand(0)->shape();
  if (static_cast<int>(dims.size()) != from.rank()) return std::nullopt;
  for (int k = 0; k < from.rank(); ++k) {
    if (dims[k].stride != 1) return std::nullopt;
    if (k != d && (dims[k].start != 0 || dims[k].limit != from.dim(k))) return std::nullopt;
  }
  return std::pair<int64_t, int64_t>{dims[d].start, dims[d].limit};
}

}  // namespace

StatusOr<bool> TryRotation(const Instruction& inst, Context& ctx) {
  if (inst.operand_count() != 2 || !inst.shape().IsArray()) return false;
  const int d = static_cast<int>((*inst.attrs().dimensions)[0]);
  const Instruction* head = inst.operand(0);
  const Instruction* tail = inst.operand(1);
  if (head->operand_count() != 1 || tail->operand_count() != 1 || head->operand(0) != tail->operand(0)) {
    return false;
  }
  const int64_t n = inst.shape().dim(d);
  std::optional<std::pair<int64_t, int64_t>> a = RangeAlong(*head, d), b = RangeAlong(*tail, d);
  if (!a || !b || a->second != n || b->first != 0 || b->second != a->first || a->first <= 0 || a->first >= n) {
    return false;
  }
  const int64_t s = a->first;  // result position r holds x[(r + s) mod n]
  const PartitionedValue& x = ctx.Get(head->operand(0));
  // Rotated in x's sharding (then resharded to the target, usually the same).
  const HloSharding& sharding = x.sharding();
  if (x.partial() || !sharding.IsTiled() || !sharding.subgroup_types().empty()) return false;
  Emitter& em = ctx.em();
  XS_ASSIGN_OR_RETURN(ShardLayout layout, x.Layout());
  const int64_t tiles = layout.tiles()[d], len = layout.shard_dims()[d];
  if (tiles <= 1 || len * tiles != n) return false;  // unsharded or padded along d
  const int64_t q = s / len, r = s % len;
  const TileAssignment& ta = sharding.tile_assignment();
  const int rank = inst.shape().rank();
  auto rows = [&](int64_t from, int64_t to, int64_t shift) {
    std::vector<int64_t> starts(rank, 0), limits = x.hlo()->shape().dims();
    starts[d] = from;
    limits[d] = to;
    Instruction* piece = em.Slice(x.hlo(), starts, limits);
    const int64_t ahead = shift % tiles;
    if (ahead == 0) return piece;
    const std::string where = ahead * 2 > tiles ? StrCat(tiles - ahead, " before") : StrCat(ahead, " after");
    return em.CollectivePermute(piece, ShiftPairs(ta, d, shift, /*cyclic=*/true),
                                StrCat("rotate along dim ", d, ": ", to - from, " of ", len,
                                       " elements from the tile ", where, " (cyclically)"));
  };
  Instruction* result = rows(r, len, q);
  if (r > 0) result = em.Concatenate({result, rows(0, r, q + 1)}, d);
  XS_RETURN_IF_ERROR(ctx.Finish(inst, PartitionedValue(result, inst.shape(), sharding, &em), "rotation"));
  return true;
}

}  // namespace xs::spmd::internal
