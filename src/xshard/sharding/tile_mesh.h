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
//
// Device order: a mesh built over a permuted device list (torch_xla's Mesh(device_ids=...),
// jax.sharding.Mesh over a reordered device array) gives explicit device lists with no iota form.
// The mesh then carries a device order, logical position -> device id, and everything above holds
// for the logical positions: {devices=[4,2]7,5,3,1,6,4,2,0} over the order 7,5,3,1,6,4,2,0 is the
// logical iota [4,2]<=[8]. The order is read off the annotations (Builder's hints): the devices
// sorted by their tile indices in each annotation in turn, which numbers them along the mesh's
// axes whatever the order within replicated groups, and it is kept only when it makes more
// annotations expressible than the identity does.
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
    // A builder whose device order is chosen from `hints` (the leaf shardings that will be added,
    // in priority order): the identity, or a permutation when some hint is an explicit device
    // list with no iota form and the permutation makes more of the hints expressible.
    Builder(int64_t num_devices, const std::vector<HloSharding>& hints);
    // Adds the cuts of a (leaf) sharding. Returns false, adding nothing, for a tiled sharding that
    // is not an iota form over num_devices devices or whose cuts conflict with those added
    // before; non-tiled shardings add nothing and return true.
    bool Add(const HloSharding& sharding);
    TileMesh Build() const;

   private:
    bool AddLogical(const HloSharding& sharding);
    void SetOrder(std::vector<int64_t> order);
    int64_t num_devices_;
    std::vector<int64_t> cuts_;  // ascending
    std::vector<int64_t> order_, inverse_;  // logical position -> device id and back; empty: the identity
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
  // "[2,2,2]", with " order=7,5,3,..." for a permuted mesh.
  std::string ToString() const;

  // Whether devices are numbered in an order other than 0..N-1 (see the file comment).
  bool permuted() const { return !order_.empty(); }
  // The device at a logical position (row-major over the axes) and the position of a device.
  int64_t Physical(int64_t logical) const { return order_.empty() ? logical : order_[logical]; }
  int64_t Logical(int64_t device) const { return order_.empty() ? device : inverse_[device]; }
  // Axis sizes, then (permuted meshes) -1 and the device order: equal for meshes that give the
  // same shardings and groups (cache keys).
  std::vector<int64_t> Signature() const;

  // The axes view of a leaf sharding of a rank-`rank` value: replicated -> no axes; manual -> all
  // axes manual; tiled -> its dims' axes. nullopt for other kinds (maximal, unknown, unreduced,
  // tuple, mesh-axes text), for a tiled sharding whose rank is not `rank`, and for one not
  // expressible on this mesh.
  std::optional<AxesSharding> ToAxes(const HloSharding& sharding, int rank) const;
  // The HloSharding of an axes view, in XLA's canonical iota form: e.g. dim 0 on axis 2 of
  // [2,2,2], rank 2 -> {devices=[2,1,4]<=[4,2]T(1,0) last_tile_dim_replicate}. Costs O(rank):
  // the tile assignment stays in iota form (O(N) on a permuted mesh: an explicit device list).
  HloSharding ToHloSharding(const AxesSharding& axes) const;

 private:
  friend class Builder;
  std::optional<AxesSharding> LogicalToAxes(const HloSharding& sharding, int rank) const;
  struct Raw {};
  explicit TileMesh(Raw) {}
  int64_t num_devices_ = 1;
  std::vector<int64_t> sizes_;    // major to minor
  std::vector<int64_t> strides_;  // logical-position stride of each axis
  std::vector<int64_t> order_, inverse_;  // logical -> device, device -> logical; empty: identity
};

// `s` (a tiled sharding over as many devices as `map` has entries) with every device d replaced
// by map[d]; the groups of a trailing replicated dim are sorted, as XLA's PartialTile sorts them.
// Other kinds are returned unchanged.
HloSharding MapShardingDevices(const HloSharding& s, const std::vector<int64_t>& map);

}  // namespace xs

#endif  // XSHARD_SHARDING_TILE_MESH_H_
