// The mesh-axes reshard route: local slices of the axes no dim uses yet, all-to-alls that move a
// split between dims (after gathering the axes that block one), all-gathers of the axes each dim
// loses, then a local slice.
#include <algorithm>

#include "xshard/base/strings.h"
#include "xshard/spmd/reshard_routes.h"

namespace xs::spmd::internal {
namespace {

using Axes = std::vector<int>;

// One all-to-all of AxesRoute's first step: the minor-most axes of some dim i (a suffix that
// must leave it) appended to a dim j whose axes stay a prefix of the target's. Updates `value`
// and `c`; false when no such move lines up with the local shapes.
StatusOr<bool> MoveAxesByAllToAll(PartitionedValue& value, AxesSharding& c, const AxesSharding& want,
                                  std::string_view why) {
  Emitter& em = value.emitter();
  const TileMesh& mesh = em.mesh();
  const int rank = c.rank();
  for (int i = 0; i < rank; ++i) {
    if (IsPrefix(c.dims[i], want.dims[i])) continue;
    for (size_t k = 0; k < c.dims[i].size(); ++k) {
      const Axes moved(c.dims[i].begin() + static_cast<std::ptrdiff_t>(k), c.dims[i].end());
      for (int j = 0; j < rank; ++j) {
        Axes wanted = c.dims[j];
        wanted.insert(wanted.end(), moved.begin(), moved.end());
        if (j == i || !IsPrefix(c.dims[j], want.dims[j]) || !IsPrefix(wanted, want.dims[j])) continue;
        AxesSharding next = c;
        next.dims[i].resize(k);
        next.dims[j] = wanted;
        const HloSharding after = mesh.ToHloSharding(next);
        XS_ASSIGN_OR_RETURN(ShardLayout layout,
                            ShardLayout::Create(after, value.global_shape().dims(), em.num_partitions()));
        const std::vector<int64_t>& local = value.hlo()->shape().dims();
        const int64_t size = AxesSize(mesh, moved);
        if (local[j] % size != 0 || local[j] / size != layout.shard_dims()[j] ||
            !GatherFits(local, i, size, layout)) {
          continue;
        }
        value = AllToAllAxes(value, moved, i, j, after, layout,
                             RouteReason(why, StrCat("move a split from dim ", i, " to dim ", j)));
        c = std::move(next);
        return true;
      }
    }
  }
  return false;
}

// Length of the common prefix of `a` and `b`.
size_t CommonPrefix(const Axes& a, const Axes& b) {
  size_t p = 0;
  while (p < a.size() && p < b.size() && a[p] == b[p]) ++p;
  return p;
}

// When no all-to-all applies: a dim j whose axes are not a prefix of the target's, while the
// axis the target wants next on j sits in another dim it must leave, gathers its excess axes (the
// axes past the common prefix, which leave j in any case). False when there is no such dim.
StatusOr<bool> GatherBlockingAxes(PartitionedValue& value, AxesSharding& c, const AxesSharding& want,
                                  std::string_view why) {
  Emitter& em = value.emitter();
  const TileMesh& mesh = em.mesh();
  const int rank = c.rank();
  for (int j = 0; j < rank; ++j) {
    const size_t p = CommonPrefix(c.dims[j], want.dims[j]);
    if (p == c.dims[j].size() || p == want.dims[j].size()) continue;
    const int next_axis = want.dims[j][p];
    bool leaving_elsewhere = false;
    for (int i = 0; i < rank && !leaving_elsewhere; ++i) {
      if (i == j) continue;
      const size_t keep = CommonPrefix(c.dims[i], want.dims[i]);
      leaving_elsewhere = std::find(c.dims[i].begin() + static_cast<std::ptrdiff_t>(keep), c.dims[i].end(),
                                    next_axis) != c.dims[i].end();
    }
    if (!leaving_elsewhere) continue;
    AxesSharding next = c;
    next.dims[j].resize(p);
    Axes lost(c.dims[j].begin() + static_cast<std::ptrdiff_t>(p), c.dims[j].end());
    HloSharding after = mesh.ToHloSharding(next);
    XS_ASSIGN_OR_RETURN(ShardLayout layout,
                        ShardLayout::Create(after, value.global_shape().dims(), em.num_partitions()));
    if (!GatherFits(value.hlo()->shape().dims(), j, AxesSize(mesh, lost), layout)) continue;
    value = GatherDim(value, j, em.GroupsOver(lost), after, layout,
                   RouteReason(why, StrCat("gather dim ", j, " so that a split can move into it")));
    c = std::move(next);
    return true;
  }
  return false;
}

}  // namespace

StatusOr<RouteResult> AxesRoute(const PartitionedValue& v, const HloSharding& target,
                                std::string_view why) {
  Emitter& em = v.emitter();
  const TileMesh& mesh = em.mesh();
  const int rank = v.global_shape().rank();
  std::optional<AxesSharding> cur = mesh.ToAxes(v.sharding(), rank);
  std::optional<AxesSharding> want = mesh.ToAxes(target, rank);
  if (!cur || !want) return NotApplicable("a sharding is not expressible on the module's mesh");
  if (cur->manual != want->manual) {
    // A partially manual value (last_tile_dims={manual}) meets a use that is manual over other
    // mesh axes, or over none: no collective can turn one into the other.
    return InvalidArgument("cannot reshard ", v.global_shape().ToString(false), " from ", v.sharding().ToString(),
                           " to ", target.ToString(), " (", why.empty() ? "a use" : why,
                           "): the two are manual over different mesh axes, and a value that is manual over "
                           "some axes only meets uses manual over the same axes; give the use the value's "
                           "manual subgroup (the same last_tile_dims={manual}), or leave the manual region "
                           "first through an SPMDShardToFullShape custom-call");
  }
  const int64_t n = em.num_partitions();
  PartitionedValue value = v;
  AxesSharding c = *cur;
  // 0. Local slices first for the axes a dim gains next that the value does not use at all: they
  //    only shrink what the collectives below move (P('y', None, None) -> P(('y','x'), 'z', None)
  //    with z unused slices dim 1 before the all-to-all).
  {
    uint64_t used = c.manual;
    for (const Axes& d : c.dims) {
      for (int a : d) used |= uint64_t{1} << a;
    }
    AxesSharding next = c;
    bool gains = false;
    for (int j = 0; j < rank; ++j) {
      if (!IsPrefix(c.dims[j], want->dims[j])) continue;
      for (size_t p = c.dims[j].size(); p < want->dims[j].size() && (used >> want->dims[j][p] & 1) == 0; ++p) {
        next.dims[j].push_back(want->dims[j][p]);
        used |= uint64_t{1} << want->dims[j][p];
        gains = true;
      }
    }
    if (gains && !(next == *want)) {
      XS_ASSIGN_OR_RETURN(RouteResult sliced, LocalSliceRoute(value, mesh.ToHloSharding(next)));
      if (sliced.applies()) {
        value = std::move(sliced).value();
        c = std::move(next);
      }
    }
  }
  // 1. all-to-all: the minor-most axes of dim i (a suffix X) that dim j wants next, all at once.
  //    When no move applies, a dim j that another dim's leaving axis wants to reach, but whose own
  //    axes are not a prefix of the target's, first gathers its excess axes (they leave it
  //    anyway), which unblocks the all-to-all: P('x','y') -> P('y', None) is all-gather x, then
  //    all-to-all y from dim 1 to dim 0, as XLA does, instead of gathering both dims.
  for (;;) {
    XS_ASSIGN_OR_RETURN(bool moved, MoveAxesByAllToAll(value, c, *want, why));
    if (moved) continue;
    XS_ASSIGN_OR_RETURN(bool unblocked, GatherBlockingAxes(value, c, *want, why));
    if (!unblocked) break;
  }
  // 2. all-gather the axes each dim must lose (the whole dim when a partial gather would not line
  //    up with the padded layout).
  for (int i = 0; i < rank; ++i) {
    size_t p = 0;
    while (p < c.dims[i].size() && p < want->dims[i].size() && c.dims[i][p] == want->dims[i][p]) ++p;
    if (p == c.dims[i].size()) continue;
    AxesSharding next = c;
    next.dims[i].resize(p);
    HloSharding after = mesh.ToHloSharding(next);
    XS_ASSIGN_OR_RETURN(ShardLayout layout, ShardLayout::Create(after, v.global_shape().dims(), n));
    Axes lost(c.dims[i].begin() + p, c.dims[i].end());
    if (!GatherFits(value.hlo()->shape().dims(), i, AxesSize(mesh, lost), layout)) {
      next.dims[i].clear();
      lost = c.dims[i];
      after = mesh.ToHloSharding(next);
      XS_ASSIGN_OR_RETURN(layout, ShardLayout::Create(after, v.global_shape().dims(), n));
    }
    value = GatherDim(value, i, em.GroupsOver(lost), after, layout,
                   RouteReason(why, StrCat("gather dim ", i)));
    c = next;
  }
  // 3. slice the axes each dim must gain.
  return LocalSliceRoute(value, target);
}

}  // namespace xs::spmd::internal
