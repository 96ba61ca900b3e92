// ShardLayout construction (tile indices computed from the tile assignment, nothing stored per
// partition) and the mesh-axis helpers behind replica groups.
#include "xshard/spmd/shard_layout.h"

#include <algorithm>
#include <numeric>

#include "xshard/base/strings.h"

namespace xs::spmd {

StatusOr<ShardLayout> ShardLayout::Create(const HloSharding& sharding_in,
                                          const std::vector<int64_t>& dims,
                                          int64_t num_partitions) {
  HloSharding sharding = sharding_in;
  if (sharding.IsMeshAxes()) {
    XS_ASSIGN_OR_RETURN(sharding, sharding.ToTiled());
  }
  if (sharding.IsTuple()) {
    return InvalidArgument("a tuple sharding ", sharding.ToString(), " has no layout for one array");
  }
  ShardLayout out;
  out.dims_ = dims;
  out.num_partitions_ = num_partitions;
  const int rank = static_cast<int>(dims.size());
  out.tiles_.assign(rank, 1);
  if (sharding.IsTiled()) {
    const TileAssignment& ta = sharding.tile_assignment();
    if (sharding.TiledDataRank() != rank) {
      return InvalidArgument("sharding ", sharding.ToString(), " tiles ", sharding.TiledDataRank(),
                             " dims but the value has rank ", rank);
    }
    if (ta.num_devices() != num_partitions) {
      return InvalidArgument("sharding ", sharding.ToString(), " names ", ta.num_devices(),
                             " devices but the module has ", num_partitions, " partitions");
    }
    // An iota form holds exactly 0..N-1; an explicit list is checked once per layout.
    if (!ta.FindIota()) {
      for (int64_t device : ta.devices()) {
        if (device < 0 || device >= num_partitions) {
          return InvalidArgument("sharding ", sharding.ToString(), " names device ", device,
                                 " outside 0..", num_partitions - 1);
        }
      }
    }
    for (int d = 0; d < rank; ++d) out.tiles_[d] = ta.dim(d);
    out.shard_.resize(rank);
    for (int d = 0; d < rank; ++d) out.shard_[d] = (dims[d] + out.tiles_[d] - 1) / out.tiles_[d];
    out.ta_ = ta;
    out.position_strides_ = RowMajorStrides(ta.dims());
    out.tiled_ = true;
  } else {
    out.shard_ = dims;
  }
  return out;
}

int64_t ShardLayout::TileIndex(int64_t partition, int d) const {
  if (!tiled_ || tiles_[d] == 1) return 0;
  const int64_t position = ta_.PositionOf(partition);
  XS_CHECK(position >= 0, "partition ", partition, " is not in the tile assignment");
  return position / position_strides_[d] % tiles_[d];
}

void ShardLayout::Starts(int64_t partition, std::span<int64_t> out) const {
  if (!tiled_) {
    std::fill(out.begin(), out.end(), 0);
    return;
  }
  const int64_t position = ta_.PositionOf(partition);
  XS_CHECK(position >= 0, "partition ", partition, " is not in the tile assignment");
  for (int d = 0; d < rank(); ++d) out[d] = position / position_strides_[d] % tiles_[d] * shard_[d];
}

int64_t ShardLayout::real_limit(int64_t partition, int d) const {
  return std::min(start(partition, d) + shard_[d], dims_[d]);
}

bool ShardLayout::RealEmpty(int64_t partition) const {
  for (int d = 0; d < rank(); ++d) {
    if (real_limit(partition, d) <= start(partition, d)) return true;
  }
  return false;
}

bool ShardLayout::HasPadding() const {
  for (int d = 0; d < rank(); ++d) {
    if (HasPadding(d)) return true;
  }
  return false;
}

namespace {

// Sorts terms by falling stride, sums equal digits, drops zero coefficients and merges a digit
// with the next smaller one when together they form one wider digit ((p / s1) % z1 * c * z2 +
// (p / s2) % z2 * c with s1 = s2 * z2 is (p / s2) % (z1 * z2) * c).
void Normalize(PartitionExpr& e) {
  std::vector<PartitionExpr::Term>& t = e.terms;
  std::sort(t.begin(), t.end(), [](const auto& a, const auto& b) {
    return a.stride != b.stride ? a.stride > b.stride : a.size > b.size;
  });
  std::vector<PartitionExpr::Term> out;
  for (const PartitionExpr::Term& x : t) {
    if (!out.empty() && out.back().stride == x.stride && out.back().size == x.size) {
      out.back().coef += x.coef;
    } else {
      out.push_back(x);
    }
    if (out.back().coef == 0) out.pop_back();
  }
  for (bool merged = true; merged;) {
    merged = false;
    for (size_t i = 0; i + 1 < out.size(); ++i) {
      PartitionExpr::Term& a = out[i];
      const PartitionExpr::Term& b = out[i + 1];
      if (a.stride == b.stride * b.size && a.coef == b.coef * b.size) {
        a = {b.stride, a.size * b.size, b.coef};
        out.erase(out.begin() + i + 1);
        merged = true;
        break;
      }
    }
  }
  t = std::move(out);
}

}  // namespace

int64_t PartitionExpr::Eval(int64_t partition) const {
  int64_t v = constant;
  for (const Term& t : terms) v += partition / t.stride % t.size * t.coef;
  return v;
}

PartitionExpr operator+(const PartitionExpr& a, const PartitionExpr& b) {
  PartitionExpr out = a;
  out.constant += b.constant;
  out.terms.insert(out.terms.end(), b.terms.begin(), b.terms.end());
  Normalize(out);
  return out;
}

PartitionExpr operator*(const PartitionExpr& a, int64_t c) {
  PartitionExpr out = a;
  out.constant *= c;
  for (PartitionExpr::Term& t : out.terms) t.coef *= c;
  Normalize(out);
  return out;
}

PartitionExpr operator-(const PartitionExpr& a, const PartitionExpr& b) { return a + b * -1; }

std::string PartitionExpr::ToString() const {
  std::vector<std::string> parts;
  for (const Term& t : terms) {
    parts.push_back(StrCat(t.coef == 1 ? "" : StrCat(t.coef, " * "), "(p",
                           t.stride == 1 ? "" : StrCat(" / ", t.stride), " % ", t.size, ")"));
  }
  if (constant != 0 || parts.empty()) parts.push_back(StrCat(constant));
  return StrJoin(parts, " + ");
}

std::optional<PartitionExpr> TileIndexExpr(const ShardLayout& layout, int d) {
  PartitionExpr out;
  if (layout.tiles()[d] == 1) return out;
  const TileAssignment& ta = *layout.tile_assignment();
  const std::optional<IotaForm> iota = ta.FindIota();
  if (!iota) return std::nullopt;
  // Positions (row-major over ta's dims) of dim d's digit: [lo, hi).
  const std::vector<int64_t> pos_strides = RowMajorStrides(ta.dims());
  const int64_t lo = pos_strides[d], hi = lo * ta.dim(d);
  // The transposed reshape dims, each covering positions [t_lo, t_lo * size) with device stride
  // r_strides[perm[i]]; the part of each inside [lo, hi) is a digit of the partition id.
  const std::vector<int64_t>& r = iota->reshape_dims;
  const std::vector<int64_t> r_strides = RowMajorStrides(r);
  std::vector<int> perm = iota->transpose_perm;
  if (perm.empty()) perm.push_back(0);
  std::vector<int64_t> t;
  for (int k : perm) t.push_back(r[k]);
  const std::vector<int64_t> t_strides = RowMajorStrides(t);
  for (size_t i = 0; i < t.size(); ++i) {
    const int64_t a = std::max(lo, t_strides[i]), b = std::min(hi, t_strides[i] * t[i]);
    if (a >= b) continue;
    // The piece [a, b) must be whole digits of this reshape dim.
    if (a % t_strides[i] != 0 || (t_strides[i] * t[i]) % b != 0 || b % a != 0) return std::nullopt;
    out.terms.push_back({r_strides[perm[i]] * (a / t_strides[i]), b / a, a / lo});
  }
  Normalize(out);
  return out;
}

std::optional<PartitionExpr> AffineOverMesh(const TileMesh& mesh, const std::vector<int64_t>& values) {
  const int64_t n = static_cast<int64_t>(values.size());
  if (n != mesh.num_devices() || n == 0) return std::nullopt;
  const std::vector<int64_t> strides = MeshStrides(mesh);
  PartitionExpr e;
  e.constant = values[0];
  for (int a = 0; a < mesh.num_axes(); ++a) {
    e.terms.push_back({strides[a], mesh.axis_size(a), values[strides[a]] - values[0]});
  }
  std::vector<PartitionExpr::Term> terms = e.terms;
  for (int64_t p = 0; p < n; ++p) {
    int64_t v = e.constant;
    for (const PartitionExpr::Term& t : terms) v += p / t.stride % t.size * t.coef;
    if (v != values[p]) return std::nullopt;
  }
  Normalize(e);
  return e;
}

std::vector<int64_t> MeshStrides(const TileMesh& mesh) {
  std::vector<int64_t> strides(mesh.num_axes(), 1);
  for (int a = mesh.num_axes() - 2; a >= 0; --a) strides[a] = strides[a + 1] * mesh.axis_size(a + 1);
  return strides;
}

int64_t IndexAlongAxes(const TileMesh& mesh, int64_t device, const std::vector<int>& axes) {
  const std::vector<int64_t> strides = MeshStrides(mesh);
  int64_t index = 0;
  const int64_t logical = mesh.Logical(device);
  for (int a : axes) index = index * mesh.axis_size(a) + (logical / strides[a]) % mesh.axis_size(a);
  return index;
}

int64_t AxesSize(const TileMesh& mesh, const std::vector<int>& axes) {
  int64_t n = 1;
  for (int a : axes) n *= mesh.axis_size(a);
  return n;
}

ReplicaGroups MakeReplicaGroups(std::vector<std::vector<int64_t>> groups) {
  ReplicaGroups out;
  if (!groups.empty() && !groups[0].empty()) {
    std::vector<int64_t> flat;
    for (const auto& g : groups) flat.insert(flat.end(), g.begin(), g.end());
    const int64_t size = static_cast<int64_t>(groups[0].size());
    bool uniform = true;
    for (const auto& g : groups) uniform = uniform && static_cast<int64_t>(g.size()) == size;
    if (uniform) {
      StatusOr<TileAssignment> ta = TileAssignment::FromDevices(
          {static_cast<int64_t>(groups.size()), size}, flat);
      std::optional<IotaForm> iota = ta.ok() ? ta->FindIota() : std::nullopt;
      if (iota) {
        out.iota = true;
        out.num_groups = static_cast<int64_t>(groups.size());
        out.group_size = size;
        out.reshape_dims = iota->reshape_dims;
        for (int p : iota->transpose_perm) out.transpose_perm.push_back(p);
      }
    }
  }
  out.groups = std::move(groups);
  return out;
}

ReplicaGroups GroupsOf(const TileAssignment& rows) {
  XS_CHECK(rows.num_dims() == 2, "GroupsOf needs [groups, group size], got ", rows.num_dims(), " dims");
  ReplicaGroups out;
  const int64_t num_groups = rows.dim(0), size = rows.dim(1);
  if (std::optional<IotaForm> iota = rows.FindIota()) {
    out.iota = true;
    out.num_groups = num_groups;
    out.group_size = size;
    out.reshape_dims = iota->reshape_dims;
    out.transpose_perm.assign(iota->transpose_perm.begin(), iota->transpose_perm.end());
  }
  const std::vector<int64_t>& flat = rows.devices();
  out.groups.reserve(num_groups);
  for (int64_t g = 0; g < num_groups; ++g) {
    out.groups.emplace_back(flat.begin() + g * size, flat.begin() + (g + 1) * size);
  }
  return out;
}

ReplicaGroups GroupsOverAxes(const TileMesh& mesh, const std::vector<int>& axes) {
  const int64_t n = mesh.num_devices();
  std::vector<int> perm;
  for (int a = 0; a < mesh.num_axes(); ++a) {
    if (std::find(axes.begin(), axes.end(), a) == axes.end()) perm.push_back(a);
  }
  perm.insert(perm.end(), axes.begin(), axes.end());
  const int64_t group_size = AxesSize(mesh, axes);
  ReplicaGroups out;
  out.num_groups = n / group_size;
  out.group_size = group_size;
  if (mesh.num_axes() == 0) {
    out.iota = true;
    out.reshape_dims = {1};
    out.groups = {{0}};
    return out;
  }
  // The groups are iota(N).reshape(sizes).transpose(others, axes) read as [groups, group size].
  StatusOr<TileAssignment> ta =
      TileAssignment::FromIota({out.num_groups, group_size}, IotaForm{mesh.axis_sizes(), perm});
  XS_CHECK(ta.ok(), "GroupsOverAxes: ", ta.status().ToString());
  if (!mesh.permuted()) return GroupsOf(*ta);
  // Logical positions to devices; groups ordered by their smallest device.
  std::vector<std::vector<int64_t>> groups = GroupsOf(*ta).groups;
  for (std::vector<int64_t>& g : groups) {
    for (int64_t& d : g) d = mesh.Physical(d);
  }
  std::sort(groups.begin(), groups.end(), [](const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
    return *std::min_element(a.begin(), a.end()) < *std::min_element(b.begin(), b.end());
  });
  return MakeReplicaGroups(std::move(groups));
}

}  // namespace xs::spmd
