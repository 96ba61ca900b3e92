// Engine::Improve: the rule for accepting a candidate sharding of a leaf (GSPMD's
// MaybeImproveInstructionSharding in factor terms): a finer sharding that refines the current
// one, a merge of prefix-related dims from level 1 on, or (aggressive) any finer one; open dims
// of an annotation only.
#include <algorithm>
#include <optional>

#include "xshard/propagation/engine.h"

namespace xs::propagation_internal {
namespace {

using Kind = Leaf::Kind;

bool IsPrefix(const std::vector<int>& a, const std::vector<int>& b) {
  return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin());
}

// `b` keeps every dim of `a` as a prefix.
bool Refines(const AxesSharding& a, const AxesSharding& b) {
  if (a.rank() != b.rank()) return false;
  for (int d = 0; d < a.rank(); ++d) {
    if (!IsPrefix(a.dims[d], b.dims[d])) return false;
  }
  return true;
}

// Per dim the longer of two prefix-related axis lists; nullopt when a dim conflicts or an axis
// would be used twice.
std::optional<AxesSharding> Merge(const AxesSharding& a, const AxesSharding& b) {
  if (a.rank() != b.rank() || a.manual != b.manual) return std::nullopt;
  AxesSharding out = a;
  uint64_t used = a.manual;
  for (int d = 0; d < a.rank(); ++d) {
    if (IsPrefix(a.dims[d], b.dims[d]))
      out.dims[d] = b.dims[d];
    else if (!IsPrefix(b.dims[d], a.dims[d]))
      return std::nullopt;
    const uint64_t m = AxisMask(out.dims[d]);
    if (used & m) return std::nullopt;
    used |= m;
  }
  return out;
}

}  // namespace

bool Engine::Improve(int id, int leaf_index, const AxesSharding& cand, int level, bool aggressive,
                     ShardingOrigin origin) {
  Leaf& t = nodes_[id].leaves[leaf_index];
  origin.level = level;
  if (t.fixed) {
    // Only the open dims of an annotation, and only once partial shardings may combine.
    if (t.open_dims == 0 || level == 0 || t.kind != Kind::kAxes || cand.rank() != t.axes.rank() ||
        cand.manual != t.axes.manual) {
      return false;
    }
    AxesSharding merged = t.axes;
    uint64_t used = merged.DimAxes() | merged.manual;
    for (int d = 0; d < merged.rank(); ++d) {
      if (!(t.open_dims >> d & 1) || !merged.dims[d].empty() || (AxisMask(cand.dims[d]) & used))
        continue;
      merged.dims[d] = cand.dims[d];
      used |= AxisMask(cand.dims[d]);
    }
    if (merged == t.axes) return false;
    t.axes = std::move(merged);
    t.refined = true;
    t.origin = origin;
    return true;
  }
  if (t.kind == Kind::kNone) {
    t.kind = Kind::kAxes;
    t.axes = cand;
    t.origin = origin;
    return true;
  }
  if (t.kind != Kind::kAxes || cand == t.axes || cand.manual != t.axes.manual ||
      cand.rank() != t.axes.rank()) {
    return false;
  }
  const int64_t ct = cand.TileCount(mesh_), tt = t.axes.TileCount(mesh_);
  std::optional<AxesSharding> next;
  if (ct > tt && Refines(t.axes, cand)) {
    next = cand;
  } else if (level > 0) {
    std::optional<AxesSharding> merged = Merge(t.axes, cand);
    if (merged && merged->TileCount(mesh_) > std::max(ct, tt)) next = std::move(merged);
  }
  if (!next && aggressive && ct > tt) next = cand;
  if (!next) return false;
  t.axes = std::move(*next);
  t.origin = origin;
  return true;
}

}  // namespace xs::propagation_internal
