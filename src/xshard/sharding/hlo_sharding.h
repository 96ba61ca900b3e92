// HloSharding: XLA's sharding of one value, with XLA's exact text forms:
//   {replicated}  {maximal device=3}  {manual}  {unknown}  {unreduced}
//   {devices=[2,4]0,2,4,6,1,3,5,7}  {devices=[2,4]<=[4,2]T(1,0)}
//   {devices=[1,4,2]<=[8] last_tile_dim_replicate}
//   {devices=[2,2,2]<=[8] last_tile_dims={manual, replicated}}
//   {{replicated}, {devices=[2]0,1}}                      (tuple)
//   {replicated metadata={op_name="a"}}  {manual shard_as 1}  {... shard_like 2}
//   {mesh['a'=2,'b'=4], [{'a'}, {'b':(2)2}], replicated={'c'}}   (named-axis form, see
//   MeshAxesSharding below)
// Printing reproduces XLA's canonical text byte for byte.
#ifndef XSHARD_SHARDING_HLO_SHARDING_H_
#define XSHARD_SHARDING_HLO_SHARDING_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/core/shape.h"
#include "xshard/sharding/tile_assignment.h"

namespace xs {

// Meaning of a trailing tile-assignment dim that does not split a data dim.
enum class SubgroupType { kReplicated, kManual, kUnreduced };

// A reference to a mesh axis or a sub-axis: 'b' or 'b':(2)2 (the size-2 piece of axis b that
// comes after a size-2 major piece).
struct AxisRef {
  std::string name;
  int64_t pre_size = 1;  // product of the major pieces of the axis before this one
  int64_t size = 0;      // 0: the whole axis
  friend bool operator==(const AxisRef&, const AxisRef&) = default;
};

// The named-axis (Shardy-style) sharding text XLA also accepts: a mesh, per-dim axis lists (an
// open dim prints a trailing ", ?"), and replicated / unreduced / manual axis sets; or
// `{mesh[...], replicated}`, or `{maximal_mesh[device_id=5]}`.
struct MeshAxesSharding {
  struct Dim {
    std::vector<AxisRef> axes;
    bool open = false;
    friend bool operator==(const Dim&, const Dim&) = default;
  };
  std::vector<std::pair<std::string, int64_t>> mesh_axes;  // name, size
  std::optional<TileAssignment> device_ids;  // `device_ids=(...)` when not 0..N-1
  bool device_ids_iota_text = false;         // printed as ([4,16]T(1,0)) rather than a list
  std::vector<Dim> dims;
  bool fully_replicated = false;  // the `replicated` keyword form
  std::vector<AxisRef> replicated, unreduced, manual;
  std::string unreduced_op;  // "" (sum, the default) or "max" / "min": unreduced=max{'x'}
  std::optional<int64_t> maximal_device;  // maximal_mesh[device_id=N]
  friend bool operator==(const MeshAxesSharding&, const MeshAxesSharding&) = default;
};

// XLA's NamedSharding::IsReplicated: no dim is split (axes of size 1 split nothing) and no axis
// is unreduced or manual.
bool MeshAxesIsReplicated(const MeshAxesSharding& m);

class HloSharding {
 public:
  enum class Kind { kReplicated, kMaximal, kManual, kUnknown, kTiled, kTuple, kMeshAxes,
                    kUnreduced };

  // Replicated by default.
  HloSharding() = default;
  static HloSharding Replicate();
  static HloSharding Manual();
  static HloSharding Unknown();
  // Every device holds a partial value of the whole shape that still has to be reduced.
  static HloSharding Unreduced();
  static HloSharding AssignDevice(int64_t device);
  // Tiled: one tile per device. With `replicate_on_last_tile_dim`, the last dim of the assignment
  // lists the devices that hold the same tile, normalized as XLA's PartialTile: each such group
  // is sorted (an iota form is kept or regrouped when it can be), a size-1 last dim is dropped
  // and a tiling whose data dims are all 1 is returned as Replicate().
  static HloSharding Tile(TileAssignment tiles, bool replicate_on_last_tile_dim = false);
  // Tiled with trailing subgroup dims of the given types (last_tile_dims={manual, replicated}).
  // Normalized as XLA's HloSharding::Subgroup: size-1 subgroup dims are dropped, dims of one type
  // merged and ordered manual, unreduced, replicated; a single replicated subgroup becomes
  // last_tile_dim_replicate; no data tiling and one type gives Manual()/Replicate()/Unreduced().
  // XS_CHECKs types.size() <= the assignment's rank (Parse validates user text first).
  static HloSharding Subgroup(TileAssignment tiles, std::vector<SubgroupType> types);
  static HloSharding Tuple(std::vector<HloSharding> elements);
  // A mesh-axes sharding, normalized: device_ids 0..N-1 are dropped (XLA keeps no list for an
  // iota mesh), device_ids_iota_text follows the stored form, fully_replicated is recomputed
  // (no dim axes lists and no replicated / unreduced / manual axes), and unreduced / manual lists
  // that XLA prints as {mesh[...], unreduced} / {mesh[...], manual} become all the mesh axes
  // (the parse of that text). Parse validates user text.
  static HloSharding FromMeshAxes(MeshAxesSharding named);

  // Parses XLA's text (what XLA's ParseSharding accepts, with the same normalizations, e.g.
  // last_tile_dim_replicate groups are sorted); errors name the offending token and its column.
  static StatusOr<HloSharding> Parse(std::string_view text);

  Kind kind() const { return kind_; }
  bool IsReplicated() const;  // replicated (tuple: every element)
  bool IsManual() const { return kind_ == Kind::kManual; }
  bool IsMaximal() const { return kind_ == Kind::kMaximal; }
  bool IsUnknown() const { return kind_ == Kind::kUnknown; }
  bool IsTuple() const { return kind_ == Kind::kTuple; }
  bool IsTiled() const { return kind_ == Kind::kTiled; }
  bool IsMeshAxes() const { return kind_ == Kind::kMeshAxes; }
  bool IsUnreduced() const { return kind_ == Kind::kUnreduced; }
  // XLA's IsTileMaximal: one tile is the whole value (replicated, maximal; a mesh-axes sharding
  // that is replicated or maximal; tuples: every element). Manual, unknown and unreduced are not.
  bool IsTileMaximal() const;

  int64_t device() const { return device_; }  // kMaximal only
  const TileAssignment& tile_assignment() const { return tiles_; }  // kTiled only
  bool ReplicateOnLastTileDim() const { return replicate_on_last_tile_dim_; }
  const std::vector<SubgroupType>& subgroup_types() const { return subgroup_types_; }
  // Number of leading tile-assignment dims that split data dims (= the data rank for kTiled; the
  // number of dim shardings for kMeshAxes; 0 for the other kinds).
  int TiledDataRank() const;
  // Tile counts of the data dims only ([2,4] for {devices=[2,4,2]... last_tile_dim_replicate});
  // empty for kinds without data tiling.
  std::vector<int64_t> TileCounts() const;
  // Devices holding the same tile (the replicated subgroup dim; 1 without one and for kinds
  // without a tile assignment).
  int64_t ReplicationFactor() const;
  const std::vector<HloSharding>& tuple_elements() const { return tuple_; }
  const MeshAxesSharding& mesh_axes() const { return *mesh_axes_; }  // kMeshAxes only
  // The V1/V2 equivalent of a mesh-axes sharding, as XLA's V3ToV2Sharding builds it (sub-axes
  // split the mesh axes; manual and unreduced axes become last_tile_dims subgroups, unused axes a
  // replicated one). Other kinds are returned unchanged; tuples convert element-wise. Errors when
  // the axes overlap.
  StatusOr<HloSharding> ToTiled() const;

  // Metadata entries kept verbatim (runs of white space outside quotes become one space), e.g.
  // {"op_name=\"a\""}; printed as metadata={op_name="a"} for one entry and
  // metadata={{op_name="b"}, {op_name="c"}} for several (mesh-axes form: always the list form).
  const std::vector<std::string>& metadata() const { return metadata_; }
  HloSharding WithMetadata(std::vector<std::string> metadata) const;
  HloSharding WithoutMetadata() const;
  // Sharding groups: `shard_as N` / `shard_like N`.
  std::optional<int64_t> shard_as() const { return shard_as_; }
  std::optional<int64_t> shard_like() const { return shard_like_; }
  HloSharding WithShardAs(int64_t group) const;
  HloSharding WithShardLike(int64_t group) const;

  // Checks this sharding against a value's shape and the device count, as XLA's Validate: tile
  // rank matches the shape rank (tuples: one element per leaf), every device id < num_devices,
  // each used once and (tiled) every device used.
  Status Validate(const Shape& shape, int64_t num_devices) const;

  // XLA's text, e.g. "{devices=[2,4]<=[4,2]T(1,0)}"; tiled shardings print in the form their
  // tile assignment is stored in. Tuples mark every 5th element: {{a}, ..., /*index=5*/{f}}.
  std::string ToString(bool include_metadata = true) const;

  // Equality ignores metadata (and the text form of tile assignments), as XLA's operator== does;
  // shard groups count.
  friend bool operator==(const HloSharding& a, const HloSharding& b);
  // Hash consistent with ==: equal shardings hash equal (metadata and text forms do not count).
  // O(rank) for iota tile assignments (tuples: the sum over their elements).
  size_t Hash() const;

 private:
  Kind kind_ = Kind::kReplicated;
  int64_t device_ = -1;
  TileAssignment tiles_;
  bool replicate_on_last_tile_dim_ = false;
  std::vector<SubgroupType> subgroup_types_;
  std::vector<HloSharding> tuple_;
  std::shared_ptr<const MeshAxesSharding> mesh_axes_;
  std::vector<std::string> metadata_;
  std::optional<int64_t> shard_as_, shard_like_;
  friend struct HloShardingAccess;  // normalization helpers in hlo_sharding.cc
  friend class HloShardingText;     // the parser in hlo_sharding_text.cc
};

}  // namespace xs

template <>
struct std::hash<xs::HloSharding> {
  size_t operator()(const xs::HloSharding& s) const { return s.Hash(); }
};

#endif  // XSHARD_SHARDING_HLO_SHARDING_H_
