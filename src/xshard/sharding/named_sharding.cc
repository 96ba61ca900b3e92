// NamedSharding (JAX's mesh + PartitionSpec) and its HloSharding, as JAX's
// named_sharding_to_xla_hlo_sharding builds it; also HloSharding::ToTiled for XLA's own
// mesh-axes form.
#include "xshard/sharding/named_sharding.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace xs {
namespace {

std::string SpecAxes(const Mesh& mesh) {
  std::vector<std::string> names;
  for (const std::string& n : mesh.axis_names()) names.push_back(StrCat("'", n, "'"));
  return StrJoin(names, ", ");
}

}  // namespace

StatusOr<NamedSharding> NamedSharding::Create(Mesh mesh, PartitionSpec spec) {
  std::map<std::string, int> used;  // axis -> dim
  for (int dim = 0; dim < spec.size(); ++dim) {
    for (const std::string& axis : spec.entries()[dim]) {
      if (!mesh.HasAxis(axis)) {
        return InvalidArgument("PartitionSpec ", spec.ToString(), " names mesh axis '", axis,
                               "', which ", mesh.ToString(), " does not have; use one of ",
                               SpecAxes(mesh));
      }
      auto [it, inserted] = used.emplace(axis, dim);
      if (!inserted) {
        return InvalidArgument("PartitionSpec ", spec.ToString(), " uses mesh axis '", axis,
                               "' twice (dims ", it->second, " and ", dim,
                               "); a mesh axis may shard at most one dim, once");
      }
    }
  }
  return NamedSharding(std::move(mesh), std::move(spec));
}

StatusOr<HloSharding> NamedSharding::ToHloSharding(int rank) const {
  if (rank < spec_.size()) {
    return InvalidArgument(ToString(), " has ", spec_.size(), " spec entries, which implies an "
                           "array of rank at least ", spec_.size(), ", but the array has rank ",
                           rank, "; drop entries or reshape the array");
  }
  // JAX drops size-1 mesh axes first (get_non_one_sized_mesh_spec).
  std::vector<int> axes;  // mesh axis index of each kept axis
  std::map<std::string, int> kept;  // name -> position among kept axes
  std::vector<int64_t> reshape_dims;
  for (int i = 0; i < mesh_.num_axes(); ++i) {
    if (mesh_.AxisSize(i) == 1) continue;
    kept[mesh_.axis_names()[i]] = static_cast<int>(axes.size());
    axes.push_back(i);
    reshape_dims.push_back(mesh_.AxisSize(i));
  }
  std::vector<int64_t> dims(rank, 1);
  std::vector<int> perm;
  std::vector<bool> in_spec(axes.size(), false);
  for (int dim = 0; dim < spec_.size(); ++dim) {
    for (const std::string& axis : spec_.entries()[dim]) {
      auto it = kept.find(axis);
      if (it == kept.end()) continue;
      dims[dim] *= reshape_dims[it->second];
      perm.push_back(it->second);
      in_spec[it->second] = true;
    }
  }
  if (perm.empty()) return HloSharding::Replicate();
  std::vector<SubgroupType> types;
  int64_t replicated = 1;
  for (size_t k = 0; k < axes.size(); ++k) {
    if (in_spec[k]) continue;
    perm.push_back(static_cast<int>(k));
    replicated *= reshape_dims[k];
  }
  if (replicated > 1) {
    dims.push_back(replicated);
    types.push_back(SubgroupType::kReplicated);
  }
  bool iota = true;
  for (int64_t i = 0; i < mesh_.num_devices(); ++i) iota &= mesh_.device_ids()[i] == i;
  TileAssignment tiles;
  if (iota) {
    XS_ASSIGN_OR_RETURN(tiles, TileAssignment::FromIota(dims, IotaForm{reshape_dims, perm}));
  } else {
    XS_ASSIGN_OR_RETURN(TileAssignment ids,
                        TileAssignment::FromDevices(reshape_dims, mesh_.device_ids()));
    tiles = ids.Transpose(perm).Reshape(dims).ToIota();
  }
  return HloSharding::Subgroup(std::move(tiles), std::move(types));
}

namespace {

bool SamePlacement(const HloSharding& a, const HloSharding& b) {
  return a.IsTiled() && b.IsTiled() && a.tile_assignment() == b.tile_assignment() &&
         a.ReplicateOnLastTileDim() == b.ReplicateOnLastTileDim() &&
         a.subgroup_types() == b.subgroup_types();
}

// Depth-first search over specs whose per-dim axis products are the target's tile counts; the
// first spec whose sharding places every device like the target wins.
struct SpecSearch {
  const Mesh& mesh;
  const HloSharding& target;
  std::vector<int64_t> counts;
  std::vector<PartitionSpec::Entry> spec;
  std::vector<bool> used;

  bool Dim(size_t d) {
    if (d == counts.size()) {
      StatusOr<NamedSharding> named = NamedSharding::Create(mesh, PartitionSpec(spec));
      if (!named.ok()) return false;
      StatusOr<HloSharding> hlo = named->ToHloSharding(static_cast<int>(counts.size()));
      return hlo.ok() && SamePlacement(*hlo, target);
    }
    return Extend(d, counts[d]);
  }
  bool Extend(size_t d, int64_t remaining) {
    if (remaining == 1) return Dim(d + 1);
    for (int k = 0; k < mesh.num_axes(); ++k) {
      const int64_t size = mesh.AxisSize(k);
      if (used[k] || size == 1 || remaining % size != 0) continue;
      used[k] = true;
      spec[d].push_back(mesh.axis_names()[k]);
      if (Extend(d, remaining / size)) return true;
      spec[d].pop_back();
      used[k] = false;
    }
    return false;
  }
};

}  // namespace

StatusOr<NamedSharding> NamedSharding::FromHloSharding(const Mesh& mesh,
                                                       const HloSharding& sharding) {
  XS_ASSIGN_OR_RETURN(HloSharding target, sharding.ToTiled());
  if (target.IsReplicated()) return Create(mesh, PartitionSpec());
  const bool only_replicated_subgroups =
      std::all_of(target.subgroup_types().begin(), target.subgroup_types().end(),
                  [](SubgroupType t) { return t == SubgroupType::kReplicated; });
  if (!target.IsTiled() || !only_replicated_subgroups) {
    return InvalidArgument("sharding ", sharding.ToString(false), " has no PartitionSpec: only "
                           "replicated and tiled (optionally partially replicated) shardings do");
  }
  if (target.tile_assignment().num_devices() != mesh.num_devices()) {
    return InvalidArgument("sharding ", sharding.ToString(false), " uses ",
                           target.tile_assignment().num_devices(), " devices but ",
                           mesh.ToString(), " has ", mesh.num_devices());
  }
  SpecSearch search{mesh, target, target.TileCounts(), {}, {}};
  search.spec.resize(search.counts.size());
  search.used.assign(mesh.num_axes(), false);
  if (!search.Dim(0)) {
    return InvalidArgument("sharding ", sharding.ToString(false), " cannot be written as a "
                           "PartitionSpec on ", mesh.ToString(), ": no choice of its axes per "
                           "dim places the devices the same way");
  }
  while (!search.spec.empty() && search.spec.back().empty()) search.spec.pop_back();
  return Create(mesh, PartitionSpec(std::move(search.spec)));
}

std::string NamedSharding::ToString() const {
  return StrCat("NamedSharding(mesh=", mesh_.ToString(), ", spec=", spec_.ToString(), ")");
}

// ---------------------------------------------------------------------------------------------
// HloSharding::ToTiled: XLA's V3ToV2Sharding. Lives here, beside the JAX NamedSharding, because
// both turn named mesh axes into a tile assignment.

namespace {
// An axis piece: mesh axis index, pre-size and size (a whole axis is pre 1, size = axis size).
using AxisPiece = std::tuple<int, int64_t, int64_t>;

StatusOr<AxisPiece> ToAxisPiece(const MeshAxesSharding& m, const AxisRef& a) {
  for (size_t i = 0; i < m.mesh_axes.size(); ++i) {
    if (m.mesh_axes[i].first == a.name) {
      return AxisPiece{static_cast<int>(i), a.size == 0 ? 1 : a.pre_size,
                   a.size == 0 ? m.mesh_axes[i].second : a.size};
    }
  }
  return InvalidArgument("axis '", a.name, "' is not in the sharding's mesh");
}
}  // namespace

StatusOr<HloSharding> HloSharding::ToTiled() const {
  if (kind_ == Kind::kTuple) {
    std::vector<HloSharding> elements;
    for (const HloSharding& e : tuple_) {
      XS_ASSIGN_OR_RETURN(HloSharding t, e.ToTiled());
      elements.push_back(std::move(t));
    }
    return Tuple(std::move(elements));
  }
  if (kind_ != Kind::kMeshAxes) return *this;
  const MeshAxesSharding& m = *mesh_axes_;
  HloSharding result;
  if (m.maximal_device) {
    result = AssignDevice(*m.maximal_device);
  } else if (MeshAxesIsReplicated(m)) {
    result = Replicate();
  } else {
    std::vector<int64_t> tile_dims;
    std::map<AxisPiece, int> position;  // piece -> position in the transposed mesh
    std::vector<std::vector<int64_t>> cuts(m.mesh_axes.size());  // pre-size boundaries per axis
    for (size_t i = 0; i < m.mesh_axes.size(); ++i) cuts[i] = {1, m.mesh_axes[i].second};
    int next = 0;
    auto use = [&](const AxisRef& a) -> Status {
      XS_ASSIGN_OR_RETURN(AxisPiece p, ToAxisPiece(m, a));
      if (std::get<2>(p) == 1) return OkStatus();  // a size-1 axis tiles nothing
      if (!position.emplace(p, next++).second) {
        return InvalidArgument("axis '", a.name, "' is used twice in ", ToString(false));
      }
      cuts[std::get<0>(p)].push_back(std::get<1>(p));
      cuts[std::get<0>(p)].push_back(std::get<1>(p) * std::get<2>(p));
      return OkStatus();
    };
    for (const MeshAxesSharding::Dim& d : m.dims) {
      int64_t count = 1;
      for (const AxisRef& a : d.axes) {
        XS_RETURN_IF_ERROR(use(a));
        count *= std::get<2>(ToAxisPiece(m, a).value());
      }
      tile_dims.push_back(count);
    }
    std::vector<SubgroupType> types;
    for (auto [axes, type] : {std::pair{&m.manual, SubgroupType::kManual},
                              std::pair{&m.unreduced, SubgroupType::kUnreduced}}) {
      if (axes->empty()) continue;
      int64_t count = 1;
      for (const AxisRef& a : *axes) {
        XS_RETURN_IF_ERROR(use(a));
        count *= std::get<2>(ToAxisPiece(m, a).value());
      }
      tile_dims.push_back(count);
      types.push_back(type);
    }
    // The mesh split into the pieces the sharding names (XLA's GetOrderedAxisRefs).
    std::vector<int64_t> reshape_dims;
    std::vector<int> perm(next);
    int64_t replicated = 1;
    size_t found = 0;
    for (size_t i = 0; i < cuts.size(); ++i) {
      std::sort(cuts[i].begin(), cuts[i].end());
      cuts[i].erase(std::unique(cuts[i].begin(), cuts[i].end()), cuts[i].end());
      for (size_t j = 0; j + 1 < cuts[i].size(); ++j) {
        const int64_t size = cuts[i][j + 1] / cuts[i][j];
        const int index = static_cast<int>(reshape_dims.size());
        reshape_dims.push_back(size);
        auto it = position.find(AxisPiece{static_cast<int>(i), cuts[i][j], size});
        if (it != position.end()) {
          perm[it->second] = index;
          ++found;
        } else {
          perm.push_back(index);
          replicated *= size;
        }
      }
    }
    if (found != position.size()) {
      return InvalidArgument("the axes of ", ToString(false), " overlap; each piece of a mesh "
                             "axis may be used once");
    }
    if (replicated > 1) {
      tile_dims.push_back(replicated);
      types.push_back(SubgroupType::kReplicated);
    }
    if (reshape_dims.empty()) {  // every mesh axis has size 1
      reshape_dims.push_back(1);
      perm.push_back(0);
    }
    TileAssignment tiles;
    if (!m.device_ids) {
      XS_ASSIGN_OR_RETURN(tiles, TileAssignment::FromIota(tile_dims, IotaForm{reshape_dims, perm}));
    } else {
      tiles = m.device_ids->Reshape(reshape_dims).Transpose(perm).Reshape(tile_dims);
    }
    result = Subgroup(std::move(tiles), std::move(types));
  }
  result.metadata_ = metadata_;
  return result;
}

}  // namespace xs
