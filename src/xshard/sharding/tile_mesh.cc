// TileMesh construction from annotation cuts, and HloSharding <-> AxesSharding conversion.
#include "xshard/sharding/tile_mesh.h"

#include <algorithm>

#include "xshard/base/status.h"
#include "xshard/base/strings.h"

namespace xs {
namespace {

// The iota form of a tile assignment as reshape dims, strides and a full perm.
struct Iota {
  std::vector<int64_t> dims;
  std::vector<int64_t> strides;
  std::vector<int> perm;
};

std::optional<Iota> IotaOf(const TileAssignment& ta) {
  std::optional<IotaForm> form = ta.FindIota();
  if (!form) return std::nullopt;
  Iota out;
  out.dims = form->reshape_dims;
  out.strides.assign(out.dims.size(), 1);
  for (int i = static_cast<int>(out.dims.size()) - 2; i >= 0; --i)
    out.strides[i] = out.strides[i + 1] * out.dims[i + 1];
  out.perm = form->transpose_perm;
  if (out.perm.empty()) {
    for (int i = 0; i < static_cast<int>(out.dims.size()); ++i) out.perm.push_back(i);
  }
  return out;
}

// Cut strides of a tile assignment: where its reshape dims start and end, and where a tile dim
// boundary falls inside a reshape dim. nullopt when a tile dim is not a run of whole pieces.
std::optional<std::vector<int64_t>> CutsOf(const TileAssignment& ta) {
  std::optional<Iota> iota = IotaOf(ta);
  if (!iota) return std::nullopt;
  std::vector<int64_t> cuts;
  for (size_t i = 0; i < iota->dims.size(); ++i) {
    cuts.push_back(iota->strides[i]);
    cuts.push_back(iota->strides[i] * iota->dims[i]);
  }
  const std::vector<int64_t>& t = ta.dims();
  size_t ti = 0;
  int64_t rem = t.empty() ? 1 : t[0];
  for (int e : iota->perm) {
    int64_t lsz = iota->dims[e];
    while (lsz > 1) {
      while (rem == 1 && ti + 1 < t.size()) rem = t[++ti];
      if (rem == 1) return std::nullopt;
      if (rem % lsz == 0) {
        rem /= lsz;
        lsz = 1;
      } else if (lsz % rem == 0) {
        lsz /= rem;
        cuts.push_back(iota->strides[e] * lsz);
        rem = 1;
      } else {
        return std::nullopt;
      }
    }
  }
  return cuts;
}

std::vector<int64_t> PrimeFactors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t p = 2; p * p <= n; ++p) {
    while (n % p == 0) {
      out.push_back(p);
      n /= p;
    }
  }
  if (n > 1) out.push_back(n);
  return out;
}

// Whether an assignment (distinct ids >= 0 by construction) holds exactly devices 0..n-1.
bool IsDevicePermutation(const TileAssignment& ta, int64_t n) {
  if (ta.num_devices() != n) return false;
  const std::vector<int64_t>& devices = ta.devices();
  return *std::max_element(devices.begin(), devices.end()) < n;
}

// Rows of the trailing replicated dim of a tiled sharding (1 when it has none).
int64_t ReplicatedGroupSize(const HloSharding& s) {
  const std::vector<SubgroupType>& types = s.subgroup_types();
  if (s.ReplicateOnLastTileDim() || (!types.empty() && types.back() == SubgroupType::kReplicated)) {
    const TileAssignment& ta = s.tile_assignment();
    return ta.dim(ta.num_dims() - 1);
  }
  return 1;
}

// Adds `s` to a scratch copy of `b` for each hint; the number that were expressible.
int CountExpressible(TileMesh::Builder b, const std::vector<HloSharding>& hints) {
  int n = 0;
  for (const HloSharding& s : hints) n += s.IsTiled() && b.Add(s);
  return n;
}

// The device order that numbers devices along the axes of `hints`' explicit lists: devices sorted
// by their tile index (the position in the tile assignment, replicated groups merged) in each hint
// in turn, then by id. Empty when every full-size tiled hint has an iota form.
std::vector<int64_t> OrderFromHints(int64_t n, const std::vector<HloSharding>& hints) {
  bool explicit_list = false;
  for (const HloSharding& s : hints) {
    explicit_list |= s.IsTiled() && s.tile_assignment().num_devices() == n && !s.tile_assignment().FindIota();
  }
  if (!explicit_list) return {};
  std::vector<std::vector<int64_t>> keys(n);
  for (const HloSharding& s : hints) {
    if (!s.IsTiled() || s.tile_assignment().num_devices() != n) continue;
    if (!IsDevicePermutation(s.tile_assignment(), n)) continue;  // reported where it is checked
    const std::vector<int64_t>& devices = s.tile_assignment().devices();
    const int64_t group = ReplicatedGroupSize(s);
    for (int64_t pos = 0; pos < n; ++pos) keys[devices[pos]].push_back(pos / group);
  }
  std::vector<int64_t> order(n);
  for (int64_t d = 0; d < n; ++d) order[d] = d;
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return keys[a] < keys[b]; });
  return order;
}

}  // namespace

HloSharding MapShardingDevices(const HloSharding& s, const std::vector<int64_t>& map) {
  if (!s.IsTiled()) return s;
  const TileAssignment& ta = s.tile_assignment();
  std::vector<int64_t> devices = ta.devices();
  for (int64_t& d : devices) d = map[d];
  const int64_t group = ReplicatedGroupSize(s);
  if (group > 1) {
    for (auto it = devices.begin(); it != devices.end(); it += group) std::sort(it, it + group);
  }
  StatusOr<TileAssignment> mapped = TileAssignment::FromDevices(ta.dims(), std::move(devices));
  XS_CHECK(mapped.ok(), "MapShardingDevices: ", mapped.status().ToString());
  TileAssignment t = *std::move(mapped);
  if (t.FindIota()) t = t.ToIota();
  if (s.ReplicateOnLastTileDim()) return HloSharding::Tile(std::move(t), true);
  if (!s.subgroup_types().empty()) return HloSharding::Subgroup(std::move(t), s.subgroup_types());
  return HloSharding::Tile(std::move(t));
}

TileMesh::Builder::Builder(int64_t num_devices, const std::vector<HloSharding>& hints) : Builder(num_devices) {
  std::vector<int64_t> order = OrderFromHints(num_devices, hints);
  if (order.empty()) return;
  Builder permuted(num_devices);
  permuted.SetOrder(std::move(order));
  if (CountExpressible(permuted, hints) > CountExpressible(*this, hints)) {
    order_ = std::move(permuted.order_);
    inverse_ = std::move(permuted.inverse_);
  }
}

void TileMesh::Builder::SetOrder(std::vector<int64_t> order) {
  order_ = std::move(order);
  inverse_.assign(order_.size(), 0);
  for (size_t i = 0; i < order_.size(); ++i) inverse_[order_[i]] = static_cast<int64_t>(i);
}

uint64_t AxesSharding::DimAxes() const {
  uint64_t m = 0;
  for (const auto& d : dims) {
    for (int a : d) m |= uint64_t{1} << a;
  }
  return m;
}

int64_t AxesSharding::TileCount(const TileMesh& mesh) const {
  return mesh.SizeOf(DimAxes());
}

std::string AxesSharding::ToString() const {
  std::vector<std::string> parts;
  for (const auto& d : dims) parts.push_back(StrCat("{", StrJoin(d, ","), "}"));
  std::string out = StrCat("[", StrJoin(parts, ", "), "]");
  if (manual != 0) {
    std::vector<int> m;
    for (int a = 0; a < 64; ++a) {
      if (manual >> a & 1) m.push_back(a);
    }
    StrAppend(&out, " manual={", StrJoin(m, ","), "}");
  }
  return out;
}

bool TileMesh::Builder::Add(const HloSharding& sharding) {
  if (!sharding.IsTiled()) return true;
  if (sharding.tile_assignment().num_devices() != num_devices_) return false;
  if (!order_.empty()) {
    if (!IsDevicePermutation(sharding.tile_assignment(), num_devices_)) return false;
    return AddLogical(MapShardingDevices(sharding, inverse_));
  }
  return AddLogical(sharding);
}

bool TileMesh::Builder::AddLogical(const HloSharding& sharding) {
  const TileAssignment& ta = sharding.tile_assignment();
  std::optional<std::vector<int64_t>> cuts = CutsOf(ta);
  if (!cuts) return false;
  std::vector<int64_t> merged = cuts_;
  merged.insert(merged.end(), cuts->begin(), cuts->end());
  std::sort(merged.begin(), merged.end());
  merged.erase(std::unique(merged.begin(), merged.end()), merged.end());
  for (size_t i = 0; i + 1 < merged.size(); ++i) {
    if (merged[i + 1] % merged[i] != 0) return false;
  }
  cuts_ = std::move(merged);
  return true;
}

TileMesh TileMesh::Builder::Build() const {
  TileMesh mesh(Raw{});
  mesh.num_devices_ = num_devices_;
  // From the major end: each chain step split into primes, smaller primes major.
  for (size_t i = cuts_.size() - 1; i > 0; --i) {
    int64_t stride = cuts_[i];
    for (int64_t p : PrimeFactors(cuts_[i] / cuts_[i - 1])) {
      stride /= p;
      mesh.sizes_.push_back(p);
      mesh.strides_.push_back(stride);
    }
  }
  mesh.order_ = order_;
  mesh.inverse_ = inverse_;
  return mesh;
}

TileMesh::TileMesh(int64_t num_devices) {
  *this = Builder(std::max<int64_t>(1, num_devices)).Build();
}

int64_t TileMesh::SizeOf(uint64_t axes) const {
  int64_t n = 1;
  for (int a = 0; a < num_axes(); ++a) {
    if (axes >> a & 1) n *= sizes_[a];
  }
  return n;
}

std::string TileMesh::ToString() const {
  std::string out = StrCat("[", StrJoin(sizes_, ","), "]");
  if (permuted()) StrAppend(&out, " order=", StrJoin(order_, ","));
  return out;
}

std::vector<int64_t> TileMesh::Signature() const {
  std::vector<int64_t> out = sizes_;
  if (permuted()) {
    out.push_back(-1);
    out.insert(out.end(), order_.begin(), order_.end());
  }
  return out;
}

std::optional<AxesSharding> TileMesh::ToAxes(const HloSharding& s, int rank) const {
  if (permuted() && s.IsTiled()) {
    if (!IsDevicePermutation(s.tile_assignment(), num_devices_)) return std::nullopt;
    return LogicalToAxes(MapShardingDevices(s, inverse_), rank);
  }
  return LogicalToAxes(s, rank);
}

std::optional<AxesSharding> TileMesh::LogicalToAxes(const HloSharding& s, int rank) const {
  AxesSharding out;
  out.dims.resize(rank);
  if (s.IsReplicated() && !s.IsTuple()) return out;
  if (s.IsManual()) {
    out.manual = AllAxes();
    return out;
  }
  if (!s.IsTiled()) return std::nullopt;
  const TileAssignment& ta = s.tile_assignment();
  if (s.TiledDataRank() != rank || ta.num_devices() != num_devices_) return std::nullopt;
  std::optional<Iota> iota = IotaOf(ta);
  if (!iota) return std::nullopt;
  // Axes of each tile dim: walk the permuted reshape dims, each a run of mesh axes.
  std::vector<std::vector<int>> tile_axes(ta.num_dims());
  int ti = 0;
  int64_t rem = ta.num_dims() == 0 ? 1 : ta.dim(0);
  for (int e : iota->perm) {
    const int64_t lo = iota->strides[e], hi = iota->strides[e] * iota->dims[e];
    for (int a = 0; a < num_axes(); ++a) {
      if (strides_[a] < lo || strides_[a] * sizes_[a] > hi) continue;
      while (rem == 1 && ti + 1 < ta.num_dims()) rem = ta.dim(++ti);
      if (rem % sizes_[a] != 0) return std::nullopt;
      rem /= sizes_[a];
      tile_axes[ti].push_back(a);
    }
  }
  for (int d = 0; d < rank; ++d) out.dims[d] = tile_axes[d];
  std::vector<SubgroupType> types = s.subgroup_types();
  if (s.ReplicateOnLastTileDim()) types = {SubgroupType::kReplicated};
  for (size_t k = 0; k < types.size(); ++k) {
    const int dim = rank + static_cast<int>(k);
    if (dim >= ta.num_dims()) return std::nullopt;
    if (types[k] == SubgroupType::kUnreduced) return std::nullopt;
    if (types[k] == SubgroupType::kManual) {
      for (int a : tile_axes[dim]) out.manual |= uint64_t{1} << a;
    }
  }
  return out;
}

HloSharding TileMesh::ToHloSharding(const AxesSharding& s) const {
  const uint64_t dim_axes = s.DimAxes();
  if (num_axes() == 0 || (dim_axes == 0 && s.manual == 0)) return HloSharding::Replicate();
  if (dim_axes == 0 && s.manual == AllAxes()) return HloSharding::Manual();
  std::vector<int64_t> tile_dims;
  std::vector<int> perm;
  for (const auto& d : s.dims) {
    int64_t size = 1;
    for (int a : d) {
      size *= sizes_[a];
      perm.push_back(a);
    }
    tile_dims.push_back(size);
  }
  std::vector<SubgroupType> types;
  if (s.manual != 0) {
    for (int a = 0; a < num_axes(); ++a) {
      if (s.manual >> a & 1) perm.push_back(a);
    }
    tile_dims.push_back(SizeOf(s.manual));
    types.push_back(SubgroupType::kManual);
  }
  const uint64_t rest = AllAxes() & ~dim_axes & ~s.manual;
  if (rest != 0) {
    for (int a = 0; a < num_axes(); ++a) {
      if (rest >> a & 1) perm.push_back(a);
    }
    tile_dims.push_back(SizeOf(rest));
    types.push_back(SubgroupType::kReplicated);
  }
  StatusOr<TileAssignment> ta = TileAssignment::FromIota(tile_dims, IotaForm{sizes_, perm});
  XS_CHECK(ta.ok(), "TileMesh::ToHloSharding built a bad iota form: ", ta.status().ToString());
  HloSharding out = s.manual == 0 ? HloSharding::Tile(*std::move(ta), rest != 0)
                                  : HloSharding::Subgroup(*std::move(ta), std::move(types));
  return permuted() ? MapShardingDevices(out, order_) : out;
}

}  // namespace xs
