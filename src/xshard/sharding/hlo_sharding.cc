// HloSharding: construction with XLA's normalizations (PartialTile, Subgroup), queries and
// validation against a shape. Text (Parse / ToString) is in hlo_sharding_text.cc, the mesh-axes
// to tiled conversion (ToTiled) in named_sharding.cc.
#include "xshard/sharding/hlo_sharding.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <tuple>

#include "xshard/sharding/iota_form.h"

namespace xs {
using iota_internal::IdentityPerm;

namespace {

// XLA orders merged subgroup types manual, unreduced, replicated (kOrderedTypes).
constexpr SubgroupType kOrderedTypes[] = {SubgroupType::kManual, SubgroupType::kUnreduced,
                                          SubgroupType::kReplicated};

// XLA's GroupMinorIotaDimsSorted: regroups the minor reshape dims of an iota so that the last
// `group_size` devices of each tile form whole (possibly split) reshape dims, sorted ascending.
bool GroupMinorIotaDimsSorted(const std::vector<int64_t>& dims, const std::vector<int>& perm,
                              int64_t group_size, std::vector<int64_t>& new_dims,
                              std::vector<int>& new_perm) {
  int grouped_dims = 0;
  std::optional<std::pair<int, int64_t>> split;
  for (int i = static_cast<int>(perm.size()) - 1; i >= 0; --i) {
    const int dim = perm[i];
    const int64_t dim_size = dims[dim];
    if (dim_size <= group_size) {
      if (group_size % dim_size != 0) return false;
      group_size /= dim_size;
      ++grouped_dims;
    } else {
      if (dim_size % group_size != 0) return false;
      split.emplace(dim, dim_size / group_size);
      ++grouped_dims;
      break;
    }
  }
  if (!split) {
    new_dims = dims;
    new_perm = perm;
  } else {
    const int split_i = split->first;
    new_dims.assign(dims.begin(), dims.begin() + split_i);
    new_dims.push_back(split->second);
    new_dims.push_back(dims[split_i] / split->second);
    new_dims.insert(new_dims.end(), dims.begin() + split_i + 1, dims.end());
    new_perm.clear();
    for (int p : perm) {
      if (p == split_i) {
        new_perm.push_back(split_i);
        new_perm.push_back(split_i + 1);
      } else {
        new_perm.push_back(p < split_i ? p : p + 1);
      }
    }
  }
  std::stable_sort(new_perm.end() - grouped_dims, new_perm.end());
  return true;
}

// One leaf count per tuple shape, as XLA's ShapeUtil::GetLeafCount (an empty tuple has none).
void CollectLeaves(const Shape& shape, std::vector<const Shape*>& leaves) {
  if (!shape.IsTuple()) {
    leaves.push_back(&shape);
    return;
  }
  for (const Shape& s : shape.tuple_shapes()) CollectLeaves(s, leaves);
}

int64_t AxisSize(const MeshAxesSharding& m, const std::string& name) {
  for (const auto& [axis, size] : m.mesh_axes) {
    if (axis == name) return size;
  }
  return 0;
}

bool OnlySizeOneAxes(const MeshAxesSharding& m, const std::vector<AxisRef>& refs) {
  return std::all_of(refs.begin(), refs.end(),
                     [&](const AxisRef& r) { return r.size == 0 && AxisSize(m, r.name) == 1; });
}

// XLA's ContainsAllMeshAxesInOrder as its printer applies it: the whole axes of size > 1, in
// mesh order (size-1 axes may appear or not).
bool AllBigAxesInOrder(const MeshAxesSharding& m, const std::vector<AxisRef>& refs) {
  std::vector<std::string> want, got;
  for (const auto& [name, size] : m.mesh_axes) {
    if (size > 1) want.push_back(name);
  }
  for (const AxisRef& r : refs) {
    if (r.size != 0) return false;
    if (AxisSize(m, r.name) > 1) got.push_back(r.name);
  }
  return !refs.empty() && want == got;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Construction.

HloSharding HloSharding::Replicate() { return HloSharding(); }

HloSharding HloSharding::Manual() {
  HloSharding s;
  s.kind_ = Kind::kManual;
  return s;
}

HloSharding HloSharding::Unknown() {
  HloSharding s;
  s.kind_ = Kind::kUnknown;
  return s;
}

HloSharding HloSharding::Unreduced() {
  HloSharding s;
  s.kind_ = Kind::kUnreduced;
  return s;
}

HloSharding HloSharding::AssignDevice(int64_t device) {
  HloSharding s;
  s.kind_ = Kind::kMaximal;
  s.device_ = device;
  return s;
}

// Grants the normalization helpers below access to the private fields.
struct HloShardingAccess {
  static HloSharding Tiled(TileAssignment tiles, bool replicate_last,
                           std::vector<SubgroupType> types) {
    HloSharding s;
    s.kind_ = HloSharding::Kind::kTiled;
    s.tiles_ = std::move(tiles);
    s.replicate_on_last_tile_dim_ = replicate_last;
    s.subgroup_types_ = std::move(types);
    return s;
  }
  static void SetSubgroups(HloSharding& s, std::vector<SubgroupType> types) {
    s.replicate_on_last_tile_dim_ = false;
    s.subgroup_types_ = std::move(types);
  }
};

namespace {
// A tiled sharding exactly as given (XLA's private constructor): no normalization.
HloSharding RawTiled(TileAssignment tiles, bool replicate_last, std::vector<SubgroupType> types) {
  return HloShardingAccess::Tiled(std::move(tiles), replicate_last, std::move(types));
}

// XLA's HloSharding::PartialTile.
HloSharding PartialTile(const TileAssignment& tiles) {
  const int64_t n = tiles.num_devices();
  const std::vector<int64_t>& dims = tiles.dims();
  if (dims.size() == 1 || dims.back() == n) return HloSharding::Replicate();
  if (dims.back() == 1) {
    std::vector<int64_t> data(dims.begin(), dims.end() - 1);
    return RawTiled(tiles.Reshape(std::move(data)), false, {});
  }
  const int64_t group = dims.back();
  if (tiles.stored_as_iota()) {
    // Iota devices are ascending along the minor reshape dim; regroup when the group spans
    // several reshape dims.
    IotaForm iota = *tiles.FindIota();
    std::vector<int> perm = iota.transpose_perm.empty() ? IdentityPerm(iota.reshape_dims.size())
                                                        : iota.transpose_perm;
    if (iota.reshape_dims[perm.back()] == group) return RawTiled(tiles, true, {});
    std::vector<int64_t> new_dims;
    std::vector<int> new_perm;
    if (GroupMinorIotaDimsSorted(iota.reshape_dims, perm, group, new_dims, new_perm)) {
      return RawTiled(TileAssignment::FromIota(dims, IotaForm{new_dims, new_perm}).value(), true,
                      {});
    }
  }
  std::vector<int64_t> sorted = tiles.devices();
  for (size_t i = 0; i < sorted.size(); i += group) {
    std::sort(sorted.begin() + i, sorted.begin() + i + group);
  }
  return RawTiled(TileAssignment::FromDevices(dims, std::move(sorted)).value(), true, {});
}

// XLA's create_sharding step of Subgroup, once the subgroup dims are merged and ordered.
HloSharding CreateSubgrouped(const TileAssignment& tiles, std::vector<SubgroupType> types) {
  if (types.size() == 1 && types.back() == SubgroupType::kReplicated) return PartialTile(tiles);
  if (types.size() == 1 && types.back() == SubgroupType::kManual &&
      tiles.num_devices() == tiles.dims().back()) {
    return HloSharding::Manual();
  }
  if (!types.empty() && types.back() == SubgroupType::kReplicated) {
    HloSharding s = PartialTile(tiles);
    if (s.IsTiled()) HloShardingAccess::SetSubgroups(s, std::move(types));
    return s;
  }
  return RawTiled(tiles, false, std::move(types));
}
}  // namespace

HloSharding HloSharding::Tile(TileAssignment tiles, bool replicate_on_last_tile_dim) {
  if (replicate_on_last_tile_dim) return PartialTile(tiles);
  if (tiles.num_devices() == 1) return Replicate();
  return RawTiled(std::move(tiles), false, {});
}

HloSharding HloSharding::Subgroup(TileAssignment tiles, std::vector<SubgroupType> types) {
  XS_CHECK(types.size() <= static_cast<size_t>(tiles.num_dims()), "more subgroup types than dims");
  if (types.empty()) return RawTiled(std::move(tiles), false, {});
  const int data_dims = tiles.num_dims() - static_cast<int>(types.size());
  int64_t data_product = 1;
  for (int i = 0; i < data_dims; ++i) data_product *= tiles.dim(i);
  if (data_product == 1 &&
      std::all_of(types.begin(), types.end(), [&](SubgroupType t) { return t == types[0]; })) {
    if (types[0] == SubgroupType::kManual) return Manual();
    if (types[0] == SubgroupType::kReplicated) return Replicate();
    return Unreduced();
  }
  std::map<SubgroupType, std::vector<int>> type_to_dims;
  std::vector<int> removed;
  bool needs_merging = false;
  for (size_t i = 0; i < types.size(); ++i) {
    const int dim = data_dims + static_cast<int>(i);
    if (tiles.dim(dim) == 1) {
      removed.push_back(dim);
      needs_merging = true;
      continue;
    }
    std::vector<int>& dims = type_to_dims[types[i]];
    needs_merging |= !dims.empty();
    dims.push_back(dim);
  }
  needs_merging |= type_to_dims.size() > 1;
  if (!needs_merging) return CreateSubgrouped(tiles, std::move(types));
  std::vector<int> perm = IdentityPerm(data_dims);
  std::vector<int64_t> merged(tiles.dims().begin(), tiles.dims().begin() + data_dims);
  std::vector<SubgroupType> merged_types;
  for (SubgroupType t : kOrderedTypes) {
    auto it = type_to_dims.find(t);
    if (it == type_to_dims.end()) continue;
    int64_t size = 1;
    for (int dim : it->second) {
      perm.push_back(dim);
      size *= tiles.dim(dim);
    }
    merged.push_back(size);
    merged_types.push_back(t);
  }
  perm.insert(perm.end(), removed.begin(), removed.end());
  return CreateSubgrouped(tiles.Transpose(perm).Reshape(merged), std::move(merged_types));
}

HloSharding HloSharding::Tuple(std::vector<HloSharding> elements) {
  HloSharding s;
  s.kind_ = Kind::kTuple;
  s.tuple_ = std::move(elements);
  return s;
}

HloSharding HloSharding::FromMeshAxes(MeshAxesSharding named) {
  if (named.device_ids) {
    std::vector<int64_t> sizes;
    for (const auto& [name, size] : named.mesh_axes) sizes.push_back(size);
    TileAssignment ids = *named.device_ids;
    if (ids.dims() != sizes) ids = ids.Reshape(sizes);
    // Devices 0..N-1 in order are exactly the iota form <=[N].
    const std::optional<IotaForm> form = ids.FindIota();
    if (form && form->reshape_dims.size() == 1) {
      named.device_ids.reset();
    } else if (named.device_ids_iota_text && !ids.stored_as_iota() && ids.FindIota()) {
      ids = ids.ToIota();
    }
    if (named.device_ids) named.device_ids = ids;
  }
  named.device_ids_iota_text = named.device_ids && named.device_ids->stored_as_iota();
  // XLA prints {mesh[...], unreduced} / {mesh[...], manual} when, with no dims, the list holds
  // every mesh axis of size > 1 in order and the other list only size-1 axes; parsing that text
  // gives all the axes, so store that (size-1 axes hold nothing: the meaning is the same).
  if (named.dims.empty() && named.replicated.empty() && !named.mesh_axes.empty()) {
    std::vector<AxisRef> all;
    for (const auto& axis : named.mesh_axes) all.push_back(AxisRef{axis.first, 1, 0});
    if (OnlySizeOneAxes(named, named.manual) && AllBigAxesInOrder(named, named.unreduced)) {
      named.unreduced = all;
      named.manual.clear();
    } else if (OnlySizeOneAxes(named, named.unreduced) && AllBigAxesInOrder(named, named.manual)) {
      named.manual = all;
      named.unreduced.clear();
    }
  }
  named.fully_replicated = !named.maximal_device && named.dims.empty() &&
                           named.replicated.empty() && named.unreduced.empty() &&
                           named.manual.empty();
  HloSharding s;
  s.kind_ = Kind::kMeshAxes;
  s.mesh_axes_ = std::make_shared<const MeshAxesSharding>(std::move(named));
  return s;
}

HloSharding HloSharding::WithMetadata(std::vector<std::string> metadata) const {
  HloSharding s = *this;
  if (s.kind_ == Kind::kTuple) {
    for (HloSharding& e : s.tuple_) e.metadata_ = metadata;
  } else {
    s.metadata_ = std::move(metadata);
  }
  return s;
}

HloSharding HloSharding::WithoutMetadata() const {
  HloSharding s = *this;
  s.metadata_.clear();
  for (HloSharding& e : s.tuple_) e.metadata_.clear();
  return s;
}

HloSharding HloSharding::WithShardAs(int64_t group) const {
  HloSharding s = *this;
  s.shard_as_ = group;
  s.shard_like_.reset();
  return s;
}

HloSharding HloSharding::WithShardLike(int64_t group) const {
  HloSharding s = *this;
  s.shard_like_ = group;
  s.shard_as_.reset();
  return s;
}

// ---------------------------------------------------------------------------------------------
// Queries.

bool MeshAxesIsReplicated(const MeshAxesSharding& m) {
  auto splits = [&](const AxisRef& a) {
    if (a.size != 0) return true;
    for (const auto& [name, size] : m.mesh_axes) {
      if (name == a.name) return size > 1;
    }
    return true;
  };
  return !m.maximal_device && m.unreduced.empty() && m.manual.empty() &&
         std::none_of(m.dims.begin(), m.dims.end(), [&](const MeshAxesSharding::Dim& d) {
           return std::any_of(d.axes.begin(), d.axes.end(), splits);
         });
}

bool HloSharding::IsReplicated() const {
  switch (kind_) {
    case Kind::kReplicated: return true;
    case Kind::kTuple:
      return std::all_of(tuple_.begin(), tuple_.end(),
                         [](const HloSharding& s) { return s.IsReplicated(); });
    case Kind::kMeshAxes: return MeshAxesIsReplicated(*mesh_axes_);
    default: return false;
  }
}

bool HloSharding::IsTileMaximal() const {
  switch (kind_) {
    case Kind::kReplicated:
    case Kind::kMaximal: return true;
    case Kind::kTuple:
      return std::all_of(tuple_.begin(), tuple_.end(),
                         [](const HloSharding& s) { return s.IsTileMaximal(); });
    case Kind::kMeshAxes:
      return mesh_axes_->maximal_device.has_value() || MeshAxesIsReplicated(*mesh_axes_);
    default: return false;
  }
}

int HloSharding::TiledDataRank() const {
  if (kind_ == Kind::kMeshAxes) return static_cast<int>(mesh_axes_->dims.size());
  if (kind_ != Kind::kTiled) return 0;
  return tiles_.num_dims() - (replicate_on_last_tile_dim_ ? 1 : 0) -
         static_cast<int>(subgroup_types_.size());
}

std::vector<int64_t> HloSharding::TileCounts() const {
  if (kind_ == Kind::kMeshAxes) {
    std::map<std::string, int64_t> sizes(mesh_axes_->mesh_axes.begin(),
                                         mesh_axes_->mesh_axes.end());
    std::vector<int64_t> counts;
    for (const MeshAxesSharding::Dim& d : mesh_axes_->dims) {
      int64_t c = 1;
      for (const AxisRef& a : d.axes) c *= a.size != 0 ? a.size : sizes[a.name];
      counts.push_back(c);
    }
    return counts;
  }
  if (kind_ != Kind::kTiled) return {};
  return std::vector<int64_t>(tiles_.dims().begin(), tiles_.dims().begin() + TiledDataRank());
}

int64_t HloSharding::ReplicationFactor() const {
  if (kind_ == Kind::kMeshAxes) {
    StatusOr<HloSharding> tiled = ToTiled();
    return tiled.ok() ? tiled->ReplicationFactor() : 1;
  }
  if (kind_ != Kind::kTiled) return 1;
  if (replicate_on_last_tile_dim_) return tiles_.dims().back();
  for (size_t i = 0; i < subgroup_types_.size(); ++i) {
    if (subgroup_types_[i] == SubgroupType::kReplicated) return tiles_.dim(TiledDataRank() + i);
  }
  return 1;
}

bool operator==(const HloSharding& a, const HloSharding& b) {
  if (a.kind_ != b.kind_ || a.shard_as_ != b.shard_as_ || a.shard_like_ != b.shard_like_) {
    return false;
  }
  switch (a.kind_) {
    case HloSharding::Kind::kMaximal: return a.device_ == b.device_;
    case HloSharding::Kind::kTiled:
      return a.tiles_ == b.tiles_ &&
             a.replicate_on_last_tile_dim_ == b.replicate_on_last_tile_dim_ &&
             a.subgroup_types_ == b.subgroup_types_;
    case HloSharding::Kind::kTuple: return a.tuple_ == b.tuple_;
    case HloSharding::Kind::kMeshAxes: return *a.mesh_axes_ == *b.mesh_axes_;
    default: return true;
  }
}

// ---------------------------------------------------------------------------------------------
// Validation.

Status HloSharding::Validate(const Shape& shape, int64_t num_devices) const {
  if (shape.IsToken()) return OkStatus();
  // Built only on the error paths: printing a long device list is O(N).
  auto where = [&] { return StrCat("sharding ", ToString(false), " on shape ", shape.ToString()); };
  if (kind_ == Kind::kTuple) {
    if (!shape.IsTuple()) {
      return InvalidArgument(where(), ": a tuple sharding needs a tuple shape; give an array one "
                             "sharding like {devices=[2]0,1}");
    }
    std::vector<const Shape*> leaves;
    CollectLeaves(shape, leaves);
    if (leaves.empty() && tuple_.size() <= 1) return OkStatus();
    if (leaves.size() != tuple_.size()) {
      return InvalidArgument(where(), ": the tuple sharding has ", tuple_.size(),
                             " elements but the shape has ", leaves.size(),
                             " leaves; give one sharding per leaf, in order");
    }
    for (size_t i = 0; i < leaves.size(); ++i) {
      Status st = tuple_[i].Validate(*leaves[i], num_devices);
      if (!st.ok()) return Annotate(st, StrCat("tuple element ", i, ": "));
    }
    return OkStatus();
  }
  if (shape.IsTuple()) {
    return InvalidArgument(where(), ": the shape is a tuple but the sharding is not; write one "
                           "sharding per leaf like {{replicated}, {devices=[2]0,1}}");
  }
  if (kind_ == Kind::kMaximal) {
    if (device_ < 0 || device_ >= num_devices) {
      return InvalidArgument(where(), ": device ", device_, " is out of range for ", num_devices,
                             " devices (ids 0..", num_devices - 1, ")");
    }
    return OkStatus();
  }
  if (kind_ == Kind::kMeshAxes) {
    if (IsTileMaximal()) {
      XS_ASSIGN_OR_RETURN(HloSharding tiled, ToTiled());
      return tiled.Validate(shape, num_devices);
    }
    if (TiledDataRank() != shape.rank()) {
      return InvalidArgument(where(), ": the sharding has ", TiledDataRank(),
                             " dim shardings but the shape has rank ", shape.rank(),
                             "; give one {...} per array dim");
    }
    XS_ASSIGN_OR_RETURN(HloSharding tiled, ToTiled());
    return tiled.kind_ == Kind::kTiled ? tiled.Validate(shape, num_devices) : OkStatus();
  }
  if (kind_ != Kind::kTiled) return OkStatus();
  if (tiles_.num_devices() == 1) {
    return InvalidArgument(where(), ": the tile assignment holds a single device; use "
                           "{replicated} or {maximal device=N} instead");
  }
  if (TiledDataRank() != shape.rank()) {
    return InvalidArgument(where(), ": the tile assignment splits ", TiledDataRank(),
                           " data dims but the shape has rank ", shape.rank(),
                           "; give one tile count per array dim (subgroup dims come after)");
  }
  // An iota form holds exactly the devices 0..N-1, so only explicit lists (or an iota form with
  // too many devices, to name the first offender) need the scan.
  if (!tiles_.FindIota() || tiles_.num_devices() > num_devices) {
    for (int64_t d : tiles_.devices()) {
      if (d >= num_devices) {
        return InvalidArgument(where(), ": device ", d, " is out of range for ", num_devices,
                               " devices (ids 0..", num_devices - 1, ")");
      }
    }
  }
  if (tiles_.num_devices() != num_devices) {
    return InvalidArgument(where(), ": tile_assignment should have ", num_devices,
                           " devices but has ", tiles_.num_devices(),
                           "; a tiled sharding places a tile on every device");
  }
  return OkStatus();
}

}  // namespace xs
