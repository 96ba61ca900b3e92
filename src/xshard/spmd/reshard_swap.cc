// The all-to-all + collective-permute route: for shardings whose dims trade mesh axes (P('y','x')
// -> P('x','y') on a (x=4, y=2) mesh), where the axes route can only gather (no dim's axes are a
// prefix of the target's), all-to-alls first give every dim the target's number of tiles, on
// whichever axes they reach, and one collective-permute then moves each piece to its device (none
// when the last all-to-all can send its chunks straight to the devices that need them).
// With the rebalance variant, an all-to-all may merge uneven tiles into blocks longer than the
// new shard (a halo exchange then moves the few elements each block is off by).
#include <algorithm>
#include <set>

#include "xshard/base/strings.h"
#include "xshard/spmd/halo.h"
#include "xshard/spmd/reshard_routes.h"

namespace xs::spmd::internal {
namespace {

using Axes = std::vector<int>;

struct Move {
  Axes axes;
  int from = 0, to = 0;
  // The merged dim `from` comes out in blocks of (old shard x axes size), longer than the new
  // shard of an uneven dim: a halo exchange moves each block to the new shard's start.
  bool rebalance = false;
};

struct Node {
  AxesSharding axes;
  std::vector<int64_t> local;  // padded local dims
  std::vector<Move> moves;
};

bool TileCountsMatch(const AxesSharding& a, const AxesSharding& b, const TileMesh& mesh) {
  for (int d = 0; d < a.rank(); ++d) {
    if (AxesSize(mesh, a.dims[d]) != AxesSize(mesh, b.dims[d])) return false;
  }
  return true;
}

// The fewest all-to-all moves (at most `max_moves`) from `start` to a sharding with the tile
// counts of `want`; nullopt when there is none. With `rebalance`, a move whose merged dim does
// not line up with the new padded layout (uneven dims) is allowed too, marked for a halo.
std::optional<std::vector<Move>> FindMoves(const AxesSharding& start, const AxesSharding& want,
                                           const PartitionedValue& v, int max_moves, bool rebalance) {
  const TileMesh& mesh = v.emitter().mesh();
  const int64_t n = v.emitter().num_partitions();
  const int rank = start.rank();
  std::vector<Node> frontier = {Node{start, v.hlo()->shape().dims(), {}}};
  std::set<std::vector<std::vector<int>>> seen = {start.dims};
  for (int depth = 0; depth < max_moves; ++depth) {
    std::vector<Node> next_frontier;
    for (const Node& node : frontier) {
      for (int i = 0; i < rank; ++i) {
        for (size_t k = 0; k < node.axes.dims[i].size(); ++k) {
          const Axes moved(node.axes.dims[i].begin() + static_cast<std::ptrdiff_t>(k), node.axes.dims[i].end());
          const int64_t size = AxesSize(mesh, moved);
          for (int j = 0; j < rank; ++j) {
            if (j == i) continue;
            Node next{node.axes, {}, node.moves};
            next.axes.dims[i].resize(k);
            next.axes.dims[j].insert(next.axes.dims[j].end(), moved.begin(), moved.end());
            if (!seen.insert(next.axes.dims).second) continue;
            StatusOr<ShardLayout> layout =
                ShardLayout::Create(mesh.ToHloSharding(next.axes), v.global_shape().dims(), n);
            if (!layout.ok()) continue;
            const std::vector<int64_t>& local = node.local;
            if (local[j] % size != 0 || local[j] / size != layout->shard_dims()[j]) continue;
            const bool fits = GatherFits(local, i, size, *layout);
            const bool halo = !fits && rebalance && layout->tiles()[i] > 1 &&
                              local[i] * size > layout->shard_dims()[i];
            if (!fits && !halo) continue;
            next.local = layout->shard_dims();
            next.moves.push_back(Move{moved, i, j, halo});
            if (TileCountsMatch(next.axes, want, mesh)) return next.moves;
            next_frontier.push_back(std::move(next));
          }
        }
      }
    }
    frontier = std::move(next_frontier);
  }
  return std::nullopt;
}

// The all-to-all of `m` when dim m.from comes out in blocks of (local x axes size) that the
// padded layout of `after` does not have: the all-to-all laid out as for the dim padded to
// (source tiles x source shard), then a halo exchange that moves each tile's block to its shard's
// start (XLA's all-to-all + collective-permute of the boundary rows). Does not apply when a block
// is further off than the halo exchange reaches.
StatusOr<RouteResult> AllToAllRebalance(const PartitionedValue& value, const Move& m,
                                        const HloSharding& after, const std::string& reason,
                                        std::string_view why) {
  Emitter& em = value.emitter();
  const int64_t n = em.num_partitions();
  const int i = m.from;
  std::vector<int64_t> padded = value.global_shape().dims();
  XS_ASSIGN_OR_RETURN(ShardLayout before, value.Layout());
  padded[i] = before.tiles()[i] * before.shard_dims()[i];
  const Shape padded_shape = value.global_shape().WithDims(padded);
  XS_ASSIGN_OR_RETURN(ShardLayout merged, ShardLayout::Create(after, padded, n));
  XS_ASSIGN_OR_RETURN(ShardLayout real, ShardLayout::Create(after, value.global_shape().dims(), n));
  const PartitionedValue source(value.hlo(), padded_shape, value.sharding(), &em);
  const PartitionedValue moved = AllToAllAxes(source, m.axes, i, m.to, after, merged, reason);
  DimWindow w;
  w.dim = i;
  w.size = real.shard_dims()[i];
  const int64_t dim_size = value.global_shape().dim(i);
  for (int64_t k = 0; k < real.tiles()[i]; ++k) {
    w.lo.push_back(k * w.size);
    w.needed.push_back(std::clamp<int64_t>(dim_size - k * w.size, 0, w.size));
  }
  StatusOr<Instruction*> x = HaloWindow(moved, w, why);
  // HaloWindow's FailedPrecondition means that its windows reach too far (halo.h), not a failure.
  if (!x.ok() && x.status().code() == StatusCode::kFailedPrecondition) {
    return NotApplicable(StrCat("the halo exchange does not reach: ", x.status().message()));
  }
  if (!x.ok()) return x.status();
  return PartitionedValue(*x, value.global_shape(), after, &em);
}

// When the last move's target dim takes the moved axes in another order than the target has
// them (P(('x','y','z')) -> P(None, ('z','y','x'))), and everything else already matches: the
// target's axis order on that dim (its trailing `axes.size()` entries); nullopt otherwise.
std::optional<Axes> ReorderedTail(const AxesSharding& after, const AxesSharding& want, const Move& m) {
  for (int d = 0; d < want.rank(); ++d) {
    if (d != m.to && after.dims[d] != want.dims[d]) return std::nullopt;
  }
  const Axes& got = after.dims[m.to];
  const Axes& need = want.dims[m.to];
  const size_t k = m.axes.size();
  if (got.size() != need.size() || got == need || !std::equal(got.begin(), got.end() - k, need.begin())) {
    return std::nullopt;
  }
  Axes tail(need.end() - static_cast<std::ptrdiff_t>(k), need.end());
  if (!std::is_permutation(tail.begin(), tail.end(), m.axes.begin())) return std::nullopt;
  return tail;
}

// Reorders the chunks of local dim j (one per device of `send` axes, indexed in `chunk` axes'
// mixed radix) so that slot s (in `send`'s radix) holds the chunk of the device at s: a reshape
// into one dim per axis, a transpose of those dims, and a reshape back.
Instruction* ReorderChunks(Emitter& em, Instruction* x, int j, const Axes& chunk, const Axes& send) {
  const std::vector<int64_t> local = x->shape().dims();
  const int64_t count = AxesSize(em.mesh(), chunk);
  std::vector<int64_t> split(local.begin(), local.begin() + j);
  for (int a : chunk) split.push_back(AxesSize(em.mesh(), {a}));
  split.push_back(local[j] / count);
  split.insert(split.end(), local.begin() + j + 1, local.end());
  std::vector<int64_t> perm;
  for (int d = 0; d < j; ++d) perm.push_back(d);
  for (int a : send) perm.push_back(j + (std::find(chunk.begin(), chunk.end(), a) - chunk.begin()));
  for (int64_t d = j + static_cast<int64_t>(chunk.size()); d < static_cast<int64_t>(split.size()); ++d) {
    perm.push_back(d);
  }
  return em.Reshape(em.Transpose(em.Reshape(x, split), perm), local);
}

StatusOr<RouteResult> SwapRoute(const PartitionedValue& v, const HloSharding& target,
                                std::string_view why, bool rebalance) {
  Emitter& em = v.emitter();
  const TileMesh& mesh = em.mesh();
  const int rank = v.global_shape().rank();
  std::optional<AxesSharding> cur = mesh.ToAxes(v.sharding(), rank);
  std::optional<AxesSharding> want = mesh.ToAxes(target, rank);
  if (!cur || !want) return NotApplicable("a sharding is not expressible on the module's mesh");
  if (cur->manual != 0 || want->manual != 0) return NotApplicable("a sharding has manual axes");
  if (TileCountsMatch(*cur, *want, mesh)) return NotApplicable("no dim changes its tile count");
  std::optional<std::vector<Move>> moves = FindMoves(*cur, *want, v, 2, rebalance);
  if (!moves) return NotApplicable("no all-to-all reaches the target's tile counts");
  if (rebalance && std::none_of(moves->begin(), moves->end(), [](const Move& m) { return m.rebalance; })) {
    return NotApplicable("no all-to-all needs a halo (the plain route covers it)");
  }
  PartitionedValue value = v;
  AxesSharding c = *cur;
  for (const Move& m : *moves) {
    c.dims[m.from].resize(c.dims[m.from].size() - m.axes.size());
    c.dims[m.to].insert(c.dims[m.to].end(), m.axes.begin(), m.axes.end());
    // The last all-to-all lands each chunk on its target device directly when only the order of
    // the moved axes differs: the chunks are sent in the order of the devices that need them.
    std::optional<Axes> tail;
    if (&m == &moves->back() && !m.rebalance) tail = ReorderedTail(c, *want, m);
    if (tail && value.hlo()->shape().dim(m.to) % AxesSize(mesh, m.axes) == 0) {
      XS_ASSIGN_OR_RETURN(ShardLayout layout, ShardLayout::Create(target, v.global_shape().dims(), em.num_partitions()));
      Instruction* chunks = ReorderChunks(em, value.hlo(), m.to, *tail, m.axes);
      return AllToAllAxes(PartitionedValue(chunks, value.global_shape(), value.sharding(), &em), m.axes, m.from,
                          m.to, target, layout,
                          RouteReason(why, StrCat("move a split from dim ", m.from, " to dim ", m.to,
                                                  ", chunks in the order of their devices")));
    }
    const HloSharding after = mesh.ToHloSharding(c);
    XS_ASSIGN_OR_RETURN(ShardLayout layout, ShardLayout::Create(after, v.global_shape().dims(), em.num_partitions()));
    std::string reason = RouteReason(why, StrCat("move a split from dim ", m.from, " to dim ", m.to));
    if (m.rebalance) {
      XS_ASSIGN_OR_RETURN(RouteResult rebalanced, AllToAllRebalance(value, m, after, reason, why));
      if (!rebalanced.applies()) return rebalanced;
      value = std::move(rebalanced).value();
    } else {
      value = AllToAllAxes(value, m.axes, m.from, m.to, after, layout, std::move(reason));
    }
  }
  return PermuteRoute(value, target, why);
}

}  // namespace

StatusOr<RouteResult> AllToAllPermuteRoute(const PartitionedValue& v, const HloSharding& target,
                                           std::string_view why) {
  return SwapRoute(v, target, why, /*rebalance=*/false);
}

StatusOr<RouteResult> AllToAllHaloPermuteRoute(const PartitionedValue& v, const HloSharding& target,
                                               std::string_view why) {
  return SwapRoute(v, target, why, /*rebalance=*/true);
}

}  // namespace xs::spmd::internal
