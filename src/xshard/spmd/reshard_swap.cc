// The all-to-all + collective-permute route: for shardings whose dims trade mesh axes (P('y','x')
// -> P('x','y') on a (x=4, y=2) mesh), where the axes route can only gather (no dim's axes are a
// prefix of the target's), all-to-alls first give every dim the target's number of tiles, on
// whichever axes they reach, and one collective-permute then moves each piece to its device.
#include <set>

#include "xshard/base/strings.h"
#include "xshard/spmd/reshard_routes.h"

namespace xs::spmd::internal {
namespace {

using Axes = std::vector<int>;

struct Move {
  Axes axes;
  int from = 0, to = 0;
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
// counts of `want`; nullopt when there is none.
std::optional<std::vector<Move>> FindMoves(const AxesSharding& start, const AxesSharding& want,
                                           const PartitionedValue& v, int max_moves) {
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
            if (local[j] % size != 0 || local[j] / size != layout->shard_dims()[j] ||
                !GatherFits(local, i, size, *layout)) {
              continue;
            }
            next.local = layout->shard_dims();
            next.moves.push_back(Move{moved, i, j});
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

}  // namespace

StatusOr<PartitionedValue> AllToAllPermuteRoute(const PartitionedValue& v, const HloSharding& target,
                                                std::string_view why) {
  Emitter& em = v.emitter();
  const TileMesh& mesh = em.mesh();
  const int rank = v.global_shape().rank();
  std::optional<AxesSharding> cur = mesh.ToAxes(v.sharding(), rank);
  std::optional<AxesSharding> want = mesh.ToAxes(target, rank);
  if (!cur || !want) return FailedPrecondition("not on the mesh");
  if (cur->manual != 0 || want->manual != 0) return FailedPrecondition("manual axes");
  if (TileCountsMatch(*cur, *want, mesh)) return FailedPrecondition("no dim changes its tile count");
  std::optional<std::vector<Move>> moves = FindMoves(*cur, *want, v, 2);
  if (!moves) return FailedPrecondition("no all-to-all reaches the target's tile counts");
  PartitionedValue value = v;
  AxesSharding c = *cur;
  for (const Move& m : *moves) {
    c.dims[m.from].resize(c.dims[m.from].size() - m.axes.size());
    c.dims[m.to].insert(c.dims[m.to].end(), m.axes.begin(), m.axes.end());
    const HloSharding after = mesh.ToHloSharding(c);
    XS_ASSIGN_OR_RETURN(ShardLayout layout, ShardLayout::Create(after, v.global_shape().dims(), em.num_partitions()));
    value = AllToAllAxes(value, m.axes, m.from, m.to, after, layout,
                         why.empty() ? StrCat("move a split from dim ", m.from, " to dim ", m.to)
                                     : StrCat(why, ": move a split from dim ", m.from, " to dim ", m.to));
  }
  return PermuteRoute(value, target, why);
}

}  // namespace xs::spmd::internal
