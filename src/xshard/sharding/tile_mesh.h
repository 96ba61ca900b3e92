// TileMesh and AxesSharding: HloShardings (which have no axis names) seen as shardings over one
// shared device mesh, so that shardings of different values over the same devices can be
// compared, projected onto factors and combined.
//
// The choice: the mesh is the coarsest grid of prime-sized axes in which every annotation's tile
// assignment is a transpose of whole axes. Each iota tile assignment
// `[t...]<=[r...]T(perm)` cuts the device id range at the strides where its reshape dims and its
// tile dims begin; the cuts of all annotations (in priority order) must form a divisibility
// chain 1 | c1 | c2 | ... | N, and each step of the chain is split into prime axes (major to
// minor, smaller primes first). Example, 8 devices with P('b','a') on mesh (a=4, b=2)
// = {devices=[2,4]<=[4,2]T(1,0)}: cuts {1, 2, 8}, axes [2,2,2] with strides 4, 2, 1; dim 0 is
// axis 2 (b), dim 1 is axes 0,1 (a). Prime axes make any factor split land on an axis boundary
// for the common power-of-two device counts, and there are at most log2(N) of them, so the
// work per sharding does not grow with the device count. An annotation that is not an iota form,
// or whose cuts conflict with earlier ones, is not expressible on the mesh; propagation then only
// copies it verbatim through ops that keep every dim.
#ifndef XSHARD_SHARDING_TILE_MESH_H_
#define XSHARD_SHARDING_TILE_MESH_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "xshard/sharding/hlo_sharding.h"

namespace xs {

class TileMesh;

// A tiled sharding on a TileMesh: for each tensor dim the mesh axes that split it (major to
// minor); axes in `manual` form a manual subgroup; every other axis replicates.
struct AxesSharding {
  std::vector<std::vector<int>> dims;
  uint64_t manual = 0;  // bit a: axis a is manual

  int rank() const { return static_cast<int>(dims.size()); }
  // Bit set of the axes that split some dim.
  uint64_t DimAxes() const;
  // Number of tiles (product of the sizes of the dim axes).
  int64_t TileCount(const TileMesh& mesh) const;
  // "[{0,1}, {}, {2}]" plus " manual={3}".
  std::string ToString() const;
  friend bool operator==(const AxesSharding&, const AxesSharding&) = default;
};

class TileMesh {
 public:
  // Collects the cuts of annotations in priority order.
  class Builder {
   public:
    explicit Builder(int64_t num_devices) : num_devices_(num_devices), cuts_{1, num_devices} {}
    // Adds the cuts of a (leaf) sharding. Returns false, adding nothing, for a tiled sharding that
    // is not an iota form over num_devices devices or whose cuts conflict with those added
    // before; non-tiled shardings add nothing and return true.
    bool Add(const HloSharding& sharding);
    TileMesh Build() const;

   private:
    int64_t num_devices_;
    std::vector<int64_t> cuts_;  // ascending
  };

  // A mesh of `num_devices` (>= 1) with no annotations: its device count split into prime axes.
  explicit TileMesh(int64_t num_devices = 1);

  int64_t num_devices() const { return num_devices_; }
  int num_axes() const { return static_cast<int>(sizes_.size()); }
  int64_t axis_size(int axis) const { return sizes_[axis]; }
  const std::vector<int64_t>& axis_sizes() const { return sizes_; }
  uint64_t AllAxes() const {
    return num_axes() == 64 ? ~uint64_t{0} : (uint64_t{1} << num_axes()) - 1;
  }
  // Product of the sizes of a set of axes.
  int64_t SizeOf(uint64_t axes) const;
  // "[2,2,2]".
  std::string ToString() const;

  // The axes view of a leaf sharding of a rank-`rank` value: replicated -> no axes; manual -> all
  // axes manual; tiled -> its dims' axes. nullopt for other kinds (maximal, unknown, unreduced,
  // tuple, mesh-axes text), for a tiled sharding whose rank is not `rank`, and for one not
  // expressible on this mesh.
  std::optional<AxesSharding> ToAxes(const HloSharding& sharding, int rank) const;
  // The HloSharding of an axes view, in XLA's canonical iota form: e.g. dim 0 on axis 2 of
  // [2,2,2], rank 2 -> {devices=[2,1,4]<=[4,2]T(1,0) last_tile_dim_replicate}. Costs O(rank):
  // the tile assignment stays in iota form.
  HloSharding ToHloSharding(const AxesSharding& axes) const;

 private:
  friend class Builder;
  struct Raw {};
  explicit TileMesh(Raw) {}
  int64_t num_devices_ = 1;
  std::vector<int64_t> sizes_;    // major to minor
  std::vector<int64_t> strides_;  // device-id stride of each axis
};

}  // namespace xs

#endif  // XSHARD_SHARDING_TILE_MESH_H_
