// IotaForm helpers: XLA's iota canonicalization, materializing an iota form, detecting the
// canonical iota form behind an explicit device list, and transposing an iota form without
// materializing it.
#include "xshard/sharding/iota_form.h"

#include <algorithm>
#include <numeric>

#include "xshard/core/shape.h"

namespace xs {
namespace {

// XLA's CanonicalizeIotaDims: repeatedly drop size-1 reshape dims and merge runs of the perm that
// name consecutive reshape dims in order ([3,4,5]T(1,2,0) -> [3,20]T(1,0)).
void CanonicalizeIotaDims(std::vector<int64_t>& dims, std::vector<int>& perm) {
  if (dims.size() <= 1) return;
  while (true) {
    std::vector<int> old_to_new(dims.size(), -1);
    int new_ndims = 0;
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] != 1) old_to_new[i] = new_ndims++;
    }
    if (static_cast<size_t>(new_ndims) != dims.size()) {
      std::vector<int64_t> new_dims;
      std::vector<int> new_perm;
      for (size_t i = 0; i < dims.size(); ++i) {
        if (dims[i] != 1) new_dims.push_back(dims[i]);
        if (old_to_new[perm[i]] >= 0) new_perm.push_back(old_to_new[perm[i]]);
      }
      dims = std::move(new_dims);
      perm = std::move(new_perm);
    }
    bool changed = false;
    for (size_t i = 1, base = 0; i < dims.size(); ++i) {
      if (perm[base] + static_cast<int>(i - base) == perm[i]) {
        dims[perm[base]] *= dims[perm[i]];
        dims[perm[i]] = 1;
        changed = true;
      } else {
        base = i;
      }
    }
    if (!changed) return;
  }
}

}  // namespace

namespace iota_internal {

bool IsPermutation(const std::vector<int>& perm, size_t n) {
  if (perm.size() != n) return false;
  std::vector<bool> seen(n, false);
  for (int p : perm) {
    if (p < 0 || static_cast<size_t>(p) >= n || seen[p]) return false;
    seen[p] = true;
  }
  return true;
}

std::vector<int> IdentityPerm(size_t n) {
  std::vector<int> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  return perm;
}

// Devices of iota(product(reshape)).reshape(reshape).transpose(perm), flattened.
std::vector<int64_t> MaterializeIota(const IotaForm& iota) {
  const std::vector<int64_t>& r = iota.reshape_dims;
  std::vector<int> perm =
      iota.transpose_perm.empty() ? IdentityPerm(r.size()) : iota.transpose_perm;
  std::vector<int64_t> strides = RowMajorStrides(r);
  std::vector<int64_t> t_dims(r.size()), t_strides(r.size());
  for (size_t i = 0; i < r.size(); ++i) {
    t_dims[i] = r[perm[i]];
    t_strides[i] = strides[perm[i]];
  }
  int64_t n = Product(r);
  std::vector<int64_t> out(n);
  std::vector<int64_t> index(r.size(), 0);
  int64_t value = 0;
  for (int64_t j = 0; j < n; ++j) {
    out[j] = value;
    // Advance the row-major index over t_dims, keeping `value` in step.
    for (int k = static_cast<int>(r.size()) - 1; k >= 0; --k) {
      value += t_strides[k];
      if (++index[k] < t_dims[k]) break;
      value -= t_strides[k] * t_dims[k];
      index[k] = 0;
    }
  }
  return out;
}

// Finds the canonical iota form of a flat device list, if it has one. Walks from the minor end:
// each output group is the longest run of repeats of the block found so far at a fixed stride.
// Taking the longest run merges exactly the groups XLA's canonicalization merges (a group whose
// stride is the next group's stride times its size is adjacent in both orders), so the result is
// XLA's canonical form; a final rebuild rejects lists that only look like an iota.
std::optional<IotaForm> DetectIota(const std::vector<int64_t>& devices) {
  const int64_t n = static_cast<int64_t>(devices.size());
  if (n == 0 || devices[0] != 0) return std::nullopt;
  if (n == 1) return IotaForm{{1}, {}};
  struct Group {
    int64_t size, stride;
  };
  std::vector<Group> groups;  // minor to major
  int64_t block = 1;
  while (block < n) {
    const int64_t stride = devices[block];
    if (stride <= 0) return std::nullopt;
    int64_t m = 1;
    while ((m + 1) * block <= n) {
      bool same = true;
      for (int64_t i = 0; i < block && same; ++i) {
        same = devices[m * block + i] == m * stride + devices[i];
      }
      if (!same) break;
      ++m;
    }
    if (m < 2 || n % (m * block) != 0) return std::nullopt;
    groups.push_back({m, stride});
    block *= m;
  }
  // The reshape dims are the groups ordered by falling stride; their strides must be row-major.
  std::vector<int> by_stride(groups.size());
  std::iota(by_stride.begin(), by_stride.end(), 0);
  std::sort(by_stride.begin(), by_stride.end(),
            [&](int a, int b) { return groups[a].stride > groups[b].stride; });
  int64_t expect = 1;
  for (auto it = by_stride.rbegin(); it != by_stride.rend(); ++it) {
    if (groups[*it].stride != expect) return std::nullopt;
    expect *= groups[*it].size;
  }
  IotaForm form;
  std::vector<int> reshape_pos(groups.size());
  for (size_t k = 0; k < by_stride.size(); ++k) {
    form.reshape_dims.push_back(groups[by_stride[k]].size);
    reshape_pos[by_stride[k]] = static_cast<int>(k);
  }
  for (int g = static_cast<int>(groups.size()) - 1; g >= 0; --g) {
    form.transpose_perm.push_back(reshape_pos[g]);
  }
  form = form.Canonical();
  if (MaterializeIota(form) != devices) return std::nullopt;
  return form;
}

// Splits both dims lists into fine factors from the minor end (every boundary of one must fall
// on a boundary of a split of the other, else nullopt: the caller then materializes); each fine
// factor keeps its device stride, so the transposed array is the iota over the factors ordered
// by falling stride, read in the new dim order.
std::optional<IotaForm> TransposedIota(const std::vector<int64_t>& t,
                                       const std::vector<int64_t>& t_dev_strides,
                                       const std::vector<int64_t>& dims, const std::vector<int>& perm) {
  struct Fine {
    int64_t size, stride;
    int dim;
  };
  std::vector<Fine> fine;  // minor to major
  int i = static_cast<int>(dims.size()) - 1, j = static_cast<int>(t.size()) - 1;
  int64_t rem_d = i >= 0 ? dims[i] : 1, rem_t = t[j], stride = t_dev_strides[j];
  while (true) {
    while (rem_d == 1 && i > 0) rem_d = dims[--i];
    while (rem_t == 1 && j > 0) {
      --j;
      rem_t = t[j];
      stride = t_dev_strides[j];
    }
    if (rem_d == 1 || rem_t == 1) break;
    int64_t g = 0;
    if (rem_d % rem_t == 0) {
      g = rem_t;
    } else if (rem_t % rem_d == 0) {
      g = rem_d;
    } else {
      return std::nullopt;
    }
    fine.push_back({g, stride, i});
    stride *= g;
    rem_d /= g;
    rem_t /= g;
  }
  if (fine.empty()) return IotaForm{{1}, {}};
  std::vector<int> by_stride(fine.size());
  std::iota(by_stride.begin(), by_stride.end(), 0);
  std::sort(by_stride.begin(), by_stride.end(),
            [&](int a, int b) { return fine[a].stride > fine[b].stride; });
  std::vector<int> reshape_pos(fine.size());
  IotaForm form;
  for (size_t k = 0; k < by_stride.size(); ++k) {
    form.reshape_dims.push_back(fine[by_stride[k]].size);
    reshape_pos[by_stride[k]] = static_cast<int>(k);
  }
  for (int new_dim : perm) {
    for (int f = static_cast<int>(fine.size()) - 1; f >= 0; --f) {
      if (fine[f].dim == new_dim) form.transpose_perm.push_back(reshape_pos[f]);
    }
  }
  return form.Canonical();
}

}  // namespace iota_internal

using iota_internal::IdentityPerm;
using iota_internal::IsPermutation;

std::string IotaForm::ToString() const {
  std::string out = StrCat("<=[", JoinDims(reshape_dims), "]");
  if (reshape_dims.size() > 1) {
    std::vector<int> perm = transpose_perm.empty() ? IdentityPerm(reshape_dims.size())
                                                   : transpose_perm;
    StrAppend(&out, "T(", StrJoin(perm, ","), ")");
  }
  return out;
}

IotaForm IotaForm::Canonical() const {
  std::vector<int64_t> dims = reshape_dims;
  std::vector<int> perm = transpose_perm.empty() ? IdentityPerm(dims.size()) : transpose_perm;
  XS_CHECK(!dims.empty() && IsPermutation(perm, dims.size()), "malformed iota form");
  CanonicalizeIotaDims(dims, perm);
  if (dims.empty()) return IotaForm{{1}, {}};
  if (dims.size() == 1) perm.clear();
  return IotaForm{std::move(dims), std::move(perm)};
}

}  // namespace xs
