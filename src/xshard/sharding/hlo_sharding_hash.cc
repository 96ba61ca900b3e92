// HloSharding::Hash: consistent with operator== (metadata and tile-assignment text forms do not
// count), O(rank) for iota tile assignments.
#include <functional>
#include <string>

#include "xshard/sharding/hlo_sharding.h"

namespace xs {

namespace {

size_t HashString(size_t seed, const std::string& s) {
  return HashCombine(seed, std::hash<std::string>()(s));
}

size_t HashAxes(size_t seed, const std::vector<AxisRef>& refs) {
  seed = HashCombine(seed, refs.size());
  for (const AxisRef& r : refs) {
    seed = HashString(seed, r.name);
    seed = HashCombine(HashCombine(seed, r.pre_size), r.size);
  }
  return seed;
}

size_t HashMeshAxes(const MeshAxesSharding& m) {
  size_t h = HashCombine(0, m.mesh_axes.size());
  for (const auto& [name, size] : m.mesh_axes) h = HashCombine(HashString(h, name), size);
  h = HashCombine(h, m.device_ids ? m.device_ids->Hash() : 0);
  h = HashCombine(h, m.device_ids_iota_text);
  for (const MeshAxesSharding::Dim& d : m.dims) h = HashCombine(HashAxes(h, d.axes), d.open);
  h = HashCombine(h, m.fully_replicated);
  h = HashAxes(HashAxes(HashAxes(h, m.replicated), m.unreduced), m.manual);
  h = HashString(h, m.unreduced_op);
  return HashCombine(h, m.maximal_device ? *m.maximal_device + 1 : 0);
}

}  // namespace

size_t HloSharding::Hash() const {
  size_t h = HashCombine(static_cast<size_t>(kind_), shard_as_ ? *shard_as_ + 1 : 0);
  h = HashCombine(h, shard_like_ ? *shard_like_ + 1 : 0);
  switch (kind_) {
    case Kind::kMaximal: return HashCombine(h, device_);
    case Kind::kTiled:
      h = HashCombine(HashCombine(h, tiles_.Hash()), replicate_on_last_tile_dim_);
      for (SubgroupType t : subgroup_types_) h = HashCombine(h, static_cast<size_t>(t));
      return h;
    case Kind::kTuple:
      h = HashCombine(h, tuple_.size());
      for (const HloSharding& e : tuple_) h = HashCombine(h, e.Hash());
      return h;
    case Kind::kMeshAxes: return HashCombine(h, HashMeshAxes(*mesh_axes_));
    default: return h;
  }
}

}  // namespace xs
