// TileAssignment: explicit and iota device arrays in shared, immutable storage, with arithmetic
// lookups for iota forms (the iota helpers themselves are in iota_form.cc).
#include "xshard/sharding/tile_assignment.h"

#include <algorithm>
#include <limits>
#include <mutex>
#include <numeric>

#include "xshard/core/shape.h"
#include "xshard/sharding/iota_form.h"

namespace xs {

using iota_internal::DetectIota;
using iota_internal::IdentityPerm;
using iota_internal::IsPermutation;
using iota_internal::MaterializeIota;
using iota_internal::TransposedIota;

namespace {

// Product of dims, or -1 when it overflows int64 or any dim is < 1.
int64_t CheckedProduct(const std::vector<int64_t>& dims) {
  int64_t p = 1;
  for (int64_t d : dims) {
    if (d < 1 || p > std::numeric_limits<int64_t>::max() / d) return -1;
    p *= d;
  }
  return p;
}

}  // namespace

// The shared device array. An array with an iota form keeps the canonical form plus the strides
// its arithmetic lookups need (the form is unique: its digit runs are the maximal arithmetic runs
// of the array, which is also why comparing and hashing forms compares arrays); `list` is filled
// for arrays built from a list (and, lazily, for iota forms whose devices() is asked for).
struct TileAssignment::Storage {
  int64_t count = 0;
  std::optional<IotaForm> iota;
  std::vector<int64_t> list;  // set at construction for explicit lists
  // Iota arithmetic: reshape dims r (device strides r_strides), transposed dims t (position
  // strides t_strides, device stride t_dev_strides[i] = r_strides[perm[i]]), and the position
  // stride of each reshape dim's digit.
  std::vector<int64_t> r, r_strides, t, t_strides, t_dev_strides, pos_weight;
  size_t hash = 0;
  mutable std::once_flag materialize_once;
  mutable std::vector<int64_t> materialized;  // iota forms without a list: devices()
  mutable std::once_flag by_id_once;
  mutable std::vector<std::pair<int64_t, int64_t>> by_id;  // lists: (device, position), sorted

  static std::shared_ptr<const Storage> OfIota(IotaForm canonical, std::vector<int64_t> list = {});
  static std::shared_ptr<const Storage> OfList(std::vector<int64_t> devices);
  const std::vector<int64_t>& Devices() const;
  int64_t DeviceAt(int64_t position) const;
  int64_t PositionOf(int64_t device) const;
};

namespace {

size_t HashInts(size_t seed, const std::vector<int64_t>& v) {
  seed = HashCombine(seed, v.size());
  for (int64_t x : v) seed = HashCombine(seed, std::hash<int64_t>()(x));
  return seed;
}

}  // namespace

std::shared_ptr<const TileAssignment::Storage> TileAssignment::Storage::OfIota(
    IotaForm canonical, std::vector<int64_t> list) {
  auto st = std::make_shared<Storage>();
  st->r = canonical.reshape_dims;
  st->count = Product(st->r);
  const std::vector<int> perm = canonical.transpose_perm.empty() ? IdentityPerm(st->r.size())
                                                                 : canonical.transpose_perm;
  st->r_strides = RowMajorStrides(st->r);
  for (int p : perm) {
    st->t.push_back(st->r[p]);
    st->t_dev_strides.push_back(st->r_strides[p]);
  }
  st->t_strides = RowMajorStrides(st->t);
  st->pos_weight.resize(st->r.size());
  for (size_t i = 0; i < perm.size(); ++i) st->pos_weight[perm[i]] = st->t_strides[i];
  size_t h = HashInts(1, canonical.reshape_dims);
  h = HashInts(h, std::vector<int64_t>(perm.begin(), perm.end()));
  st->hash = h;
  st->iota = std::move(canonical);
  st->list = std::move(list);
  return st;
}

std::shared_ptr<const TileAssignment::Storage> TileAssignment::Storage::OfList(
    std::vector<int64_t> devices) {
  if (std::optional<IotaForm> iota = DetectIota(devices)) {
    return OfIota(std::move(*iota), std::move(devices));
  }
  auto st = std::make_shared<Storage>();
  st->count = static_cast<int64_t>(devices.size());
  st->hash = HashInts(2, devices);
  st->list = std::move(devices);
  return st;
}

const std::vector<int64_t>& TileAssignment::Storage::Devices() const {
  if (!iota || !list.empty()) return list;
  std::call_once(materialize_once, [this] { materialized = MaterializeIota(*iota); });
  return materialized;
}

int64_t TileAssignment::Storage::DeviceAt(int64_t position) const {
  if (!iota) return list[position];
  int64_t device = 0;
  for (size_t i = 0; i < t.size(); ++i) device += (position / t_strides[i]) % t[i] * t_dev_strides[i];
  return device;
}

int64_t TileAssignment::Storage::PositionOf(int64_t device) const {
  if (iota) {
    if (device < 0 || device >= count) return -1;
    int64_t position = 0;
    for (size_t k = 0; k < r.size(); ++k) position += (device / r_strides[k]) % r[k] * pos_weight[k];
    return position;
  }
  std::call_once(by_id_once, [this] {
    by_id.reserve(list.size());
    for (size_t i = 0; i < list.size(); ++i) by_id.push_back({list[i], static_cast<int64_t>(i)});
    std::sort(by_id.begin(), by_id.end());
  });
  auto it = std::lower_bound(by_id.begin(), by_id.end(), std::pair<int64_t, int64_t>{device, 0});
  return it != by_id.end() && it->first == device ? it->second : -1;
}

StatusOr<TileAssignment> TileAssignment::FromDevices(std::vector<int64_t> dims,
                                                     std::vector<int64_t> devices) {
  const int64_t count = CheckedProduct(dims);
  if (count < 0) {
    return InvalidArgument("tile assignment dims [", JoinDims(dims),
                           "] must each be >= 1 with a product that fits in int64");
  }
  if (count > kMaxDevices) {
    return InvalidArgument("tile assignment [", JoinDims(dims), "] has ", count,
                           " devices; xshard supports at most ", kMaxDevices);
  }
  if (count != static_cast<int64_t>(devices.size())) {
    return InvalidArgument("tile assignment [", JoinDims(dims), "] needs ", count,
                           " device ids (the product of its dims) but ", devices.size(),
                           " were given");
  }
  std::vector<int64_t> sorted = devices;
  std::sort(sorted.begin(), sorted.end());
  if (!sorted.empty() && sorted.front() < 0) {
    return InvalidArgument("tile assignment device id ", sorted.front(),
                           " is negative; device ids are >= 0");
  }
  auto dup = std::adjacent_find(sorted.begin(), sorted.end());
  if (dup != sorted.end()) {
    return InvalidArgument("tile assignment lists device ", *dup,
                           " twice; each device holds one tile");
  }
  TileAssignment t;
  t.dims_ = std::move(dims);
  t.storage_ = Storage::OfList(std::move(devices));
  return t;
}

StatusOr<TileAssignment> TileAssignment::FromIota(std::vector<int64_t> dims, IotaForm iota) {
  const int64_t count = CheckedProduct(dims);
  const int64_t iota_count = CheckedProduct(iota.reshape_dims);
  if (count < 0 || iota_count < 0 || iota.reshape_dims.empty()) {
    return InvalidArgument("iota tile assignment [", JoinDims(dims), "]", iota.ToString(),
                           " needs dims and reshape dims >= 1 (at least one reshape dim)");
  }
  if (!iota.transpose_perm.empty() &&
      !IsPermutation(iota.transpose_perm, iota.reshape_dims.size())) {
    return InvalidArgument("iota tile assignment T(", StrJoin(iota.transpose_perm, ","),
                           ") is not a permutation of the ", iota.reshape_dims.size(),
                           " reshape dims [", JoinDims(iota.reshape_dims), "]");
  }
  if (count != iota_count) {
    return InvalidArgument("iota tile assignment size ", iota_count,
                           " does not match the tile assignment dimensions product ", count,
                           " (dims [", JoinDims(dims), "], reshape dims [",
                           JoinDims(iota.reshape_dims), "])");
  }
  if (count > kMaxDevices) {
    return InvalidArgument("tile assignment [", JoinDims(dims), "] has ", count,
                           " devices; xshard supports at most ", kMaxDevices);
  }
  TileAssignment t;
  t.dims_ = std::move(dims);
  t.storage_ = Storage::OfIota(iota.Canonical());
  t.print_iota_ = true;
  return t;
}

TileAssignment TileAssignment::Iota(std::vector<int64_t> dims) {
  const int64_t count = CheckedProduct(dims);
  XS_CHECK(count >= 1 && count <= kMaxDevices, "bad iota dims [", JoinDims(dims), "]");
  StatusOr<TileAssignment> t = FromIota(std::move(dims), IotaForm{{count}, {}});
  return std::move(t).value();
}

int64_t TileAssignment::num_devices() const { return storage_ ? storage_->count : 0; }

const std::vector<int64_t>& TileAssignment::devices() const {
  static const std::vector<int64_t> kNone;
  return storage_ ? storage_->Devices() : kNone;
}

int64_t TileAssignment::operator()(const std::vector<int64_t>& index) const {
  XS_CHECK(index.size() == dims_.size(), "index rank ", index.size(), " vs ", dims_.size());
  int64_t linear = 0;
  for (size_t i = 0; i < dims_.size(); ++i) {
    XS_CHECK(index[i] >= 0 && index[i] < dims_[i], "tile index out of range");
    linear = linear * dims_[i] + index[i];
  }
  return DeviceAt(linear);
}

int64_t TileAssignment::DeviceAt(int64_t position) const {
  XS_CHECK(position >= 0 && position < num_devices(), "tile position ", position, " out of range");
  return storage_->DeviceAt(position);
}

int64_t TileAssignment::PositionOf(int64_t device) const {
  return storage_ ? storage_->PositionOf(device) : -1;
}

std::optional<std::vector<int64_t>> TileAssignment::IndexOf(int64_t device) const {
  int64_t linear = PositionOf(device);
  if (linear < 0) return std::nullopt;
  std::vector<int64_t> index(dims_.size());
  for (int i = static_cast<int>(dims_.size()) - 1; i >= 0; --i) {
    index[i] = linear % dims_[i];
    linear /= dims_[i];
  }
  return index;
}

std::optional<IotaForm> TileAssignment::FindIota() const {
  return storage_ ? storage_->iota : std::nullopt;
}

TileAssignment TileAssignment::Reshape(std::vector<int64_t> dims) const {
  XS_CHECK(CheckedProduct(dims) == num_devices(), "reshape [", JoinDims(dims_), "] to [",
           JoinDims(dims), "] changes the device count");
  TileAssignment t = *this;
  t.dims_ = std::move(dims);
  return t;
}

TileAssignment TileAssignment::Transpose(const std::vector<int>& perm) const {
  XS_CHECK(IsPermutation(perm, dims_.size()), "bad transpose perm");
  std::vector<int64_t> new_dims(dims_.size());
  for (size_t i = 0; i < perm.size(); ++i) new_dims[i] = dims_[perm[i]];
  TileAssignment t;
  t.dims_ = new_dims;
  if (storage_ && storage_->iota) {
    if (std::optional<IotaForm> form = TransposedIota(storage_->t, storage_->t_dev_strides, dims_, perm)) {
      t.storage_ = Storage::OfIota(std::move(*form));
      t.print_iota_ = print_iota_;
      return t;
    }
  }
  const std::vector<int64_t>& devices = this->devices();
  std::vector<int64_t> old_strides = RowMajorStrides(dims_);
  std::vector<int64_t> moved(devices.size());
  std::vector<int64_t> index(new_dims.size(), 0);
  for (size_t j = 0; j < devices.size(); ++j) {
    int64_t src = 0;
    for (size_t k = 0; k < index.size(); ++k) src += index[k] * old_strides[perm[k]];
    moved[j] = devices[src];
    for (int k = static_cast<int>(index.size()) - 1; k >= 0; --k) {
      if (++index[k] < new_dims[k]) break;
      index[k] = 0;
    }
  }
  t.storage_ = Storage::OfList(std::move(moved));
  t.print_iota_ = print_iota_ && t.storage_->iota.has_value();
  return t;
}

TileAssignment TileAssignment::ToV1() const {
  TileAssignment t = *this;
  t.print_iota_ = false;
  return t;
}

TileAssignment TileAssignment::ToIota() const {
  TileAssignment t = *this;
  t.print_iota_ = FindIota().has_value();
  return t;
}

std::string TileAssignment::ToString() const {
  if (print_iota_) return StrCat("[", JoinDims(dims_), "]", storage_->iota->ToString());
  return StrCat("[", JoinDims(dims_), "]", StrJoin(devices(), ","));
}

std::string TileAssignment::ArrayToString() const {
  if (print_iota_) return storage_->iota->ToString().substr(2);  // drop the "<="
  return StrJoin(devices(), ",");
}

bool operator==(const TileAssignment& a, const TileAssignment& b) {
  if (a.dims_ != b.dims_) return false;
  if (a.storage_ == b.storage_) return true;
  if (a.num_devices() != b.num_devices()) return false;
  if (a.num_devices() == 0) return true;
  const TileAssignment::Storage& x = *a.storage_;
  const TileAssignment::Storage& y = *b.storage_;
  if (x.iota.has_value() != y.iota.has_value()) return false;
  if (x.iota) return *x.iota == *y.iota;
  return x.list == y.list;
}

size_t TileAssignment::Hash() const {
  size_t h = HashInts(3, dims_);
  return storage_ && storage_->count > 0 ? HashCombine(h, storage_->hash) : h;
}

}  // namespace xs
