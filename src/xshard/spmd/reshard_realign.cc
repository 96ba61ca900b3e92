// The realign-and-gather route: fewer tiles along one dim (f32[10] in 8 tiles of 2 to 2 tiles of
// 5, or tiles regrouped out of order) by a halo exchange that lines the pieces up with the new
// tiles, then an all-gather within each new tile's devices.
#include <algorithm>
#include <map>

#include "xshard/base/strings.h"
#include "xshard/spmd/halo.h"
#include "xshard/spmd/reshard_routes.h"

namespace xs::spmd::internal {

StatusOr<RouteResult> RealignGatherRoute(const PartitionedValue& v, const HloSharding& target, std::string_view why) {
  const HloSharding& s = v.sharding();
  if (v.partial()) return NotApplicable("the value holds partial results");
  if (!s.IsTiled() || !target.IsTiled()) return NotApplicable("a sharding is not tiled");
  if (!s.subgroup_types().empty() || !target.subgroup_types().empty()) {
    return NotApplicable("a sharding has subgroups (last_tile_dims)");
  }
  Emitter& em = v.emitter();
  const int64_t n = em.num_partitions();
  XS_ASSIGN_OR_RETURN(ShardLayout from, v.Layout());
  XS_ASSIGN_OR_RETURN(ShardLayout to, ShardLayout::Create(target, v.global_shape().dims(), n));
  const int rank = from.rank();
  // The one dim whose tiles merge: k source tiles make one target tile.
  int d = -1;
  for (int e = 0; e < rank; ++e) {
    if (from.tiles()[e] == to.tiles()[e]) continue;
    if (d >= 0) return NotApplicable("more than one dim changes its tiling");
    d = e;
  }
  if (d < 0) return NotApplicable("no dim changes its tile count");
  if (from.tiles()[d] % to.tiles()[d] != 0) {
    return NotApplicable("the dim's source tiles do not merge into its target tiles");
  }
  // Aligned consecutive tiles need no lining up (the mesh-axes route's gather, which wins ties,
  // costs the same); aligned tiles in another order (target tile = source tile mod 2) move whole.
  const int64_t k = from.tiles()[d] / to.tiles()[d];
  // Every partition keeps its tile on the other dims; source tile i of dim d goes to one target
  // tile g(i), each target tile taking k source tiles.
  std::vector<int64_t> group_of(from.tiles()[d], -1);
  for (int64_t p = 0; p < n; ++p) {
    for (int e = 0; e < rank; ++e) {
      if (e != d && from.TileIndex(p, e) != to.TileIndex(p, e)) {
        return NotApplicable("a partition changes its tile on another dim");
      }
    }
    int64_t& g = group_of[from.TileIndex(p, d)];
    if (g >= 0 && g != to.TileIndex(p, d)) return NotApplicable("a source tile goes to two target tiles");
    g = to.TileIndex(p, d);
  }
  // Source tile i's place among its target tile's k sources, in tile order.
  std::vector<int64_t> place(from.tiles()[d], -1), count(to.tiles()[d], 0);
  for (int64_t i = 0; i < from.tiles()[d]; ++i) {
    if (group_of[i] < 0) return NotApplicable("a source tile is held by no partition");
    place[i] = count[group_of[i]]++;
  }
  for (int64_t c : count) {
    if (c != k) return NotApplicable("a target tile does not take exactly k source tiles");
  }
  // Tile i takes piece place[i] (of `size` positions) of its target tile: gathering the k pieces
  // in place order gives the target tile and some padding.
  const int64_t target_len = to.shard_dims()[d], dim_size = v.global_shape().dim(d);
  DimWindow w;
  w.dim = d;
  w.size = (target_len + k - 1) / k;
  for (int64_t i = 0; i < from.tiles()[d]; ++i) {
    const int64_t lo = group_of[i] * target_len + place[i] * w.size;
    const int64_t end = std::min(group_of[i] * target_len + target_len, dim_size);
    w.lo.push_back(lo);
    w.needed.push_back(std::clamp<int64_t>(end - lo, 0, w.size));
  }
  // The gather groups: partitions with the same target tile, the same tile on every other dim
  // and the same copy number among the partitions holding the same source piece (replicas), in
  // place order.
  std::map<std::vector<int64_t>, std::vector<std::pair<int64_t, int64_t>>> groups;
  std::map<std::vector<int64_t>, int64_t> copies;
  std::vector<int64_t> key(rank + 1);
  for (int64_t p = 0; p < n; ++p) {
    for (int e = 0; e < rank; ++e) key[e] = from.TileIndex(p, e);
    key[rank] = 0;
    const int64_t copy = copies[key]++;
    const int64_t i = key[d];
    key[d] = group_of[i];
    key[rank] = copy;
    groups[key].push_back({place[i], p});
  }
  std::vector<std::vector<int64_t>> lists;
  for (auto& [unused, members] : groups) {
    std::sort(members.begin(), members.end());
    if (static_cast<int64_t>(members.size()) != k) return NotApplicable("uneven replica counts");
    std::vector<int64_t> list;
    for (int64_t j = 0; j < k; ++j) {
      if (members[j].first != j) return NotApplicable("a gather group misses a piece");
      list.push_back(members[j].second);
    }
    lists.push_back(std::move(list));
  }
  std::sort(lists.begin(), lists.end());
  StatusOr<Instruction*> window = HaloWindow(v, w, why);
  // FailedPrecondition: the windows reach too far for a halo exchange (halo.h); whole tiles then.
  if (!window.ok() && window.status().code() == StatusCode::kFailedPrecondition) window = FarWindow(v, w, why);
  if (!window.ok() && window.status().code() == StatusCode::kFailedPrecondition) {
    return NotApplicable(StrCat("the pieces cannot be lined up: ", window.status().message()));
  }
  if (!window.ok()) return window.status();
  Instruction* x = em.AllGather(*window, d, MakeReplicaGroups(std::move(lists)),
                                RouteReason(why, "gather the lined-up pieces of each new tile"));
  if (x->shape().dim(d) != target_len) {
    std::vector<int64_t> limits = x->shape().dims();
    limits[d] = target_len;
    x = em.Slice(x, limits);
  }
  return PartitionedValue(x, v.global_shape(), target, &em);
}

}  // namespace xs::spmd::internal
