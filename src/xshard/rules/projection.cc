// Dim sharding <-> factor sharding projections over an OpShardingRule.
#include "xshard/rules/projection.h"

#include <algorithm>

namespace xs {

bool HasFactor(const TensorFactors& tensor, int f) {
  for (const auto& dim : tensor.dims) {
    for (int g : dim) {
      if (g == f) return true;
    }
  }
  return false;
}

FactorAxes ProjectToFactors(const AxesSharding& sharding, const TensorFactors& tensor,
                            const OpShardingRule& rule, const TileMesh& mesh, bool* lossless) {
  FactorAxes out(rule.factors.size());
  // Room for every axis up front: growing one axis at a time reallocates log2(axes) times, which
  // on a 4,096-device mesh (12 prime axes) made propagation ~15% slower than on 8 devices.
  for (std::vector<int>& axes : out) axes.reserve(mesh.num_axes());
  bool all = true;
  const int rank = std::min(sharding.rank(), static_cast<int>(tensor.dims.size()));
  if (sharding.rank() != static_cast<int>(tensor.dims.size())) all = false;
  for (int d = 0; d < rank; ++d) {
    const std::vector<int>& axes = sharding.dims[d];
    const std::vector<int>& fl = tensor.dims[d];
    size_t ai = 0;
    for (size_t k = 0; k < fl.size() && ai < axes.size(); ++k) {
      const int f = fl[k];
      if (k + 1 == fl.size()) {
        while (ai < axes.size()) out[f].push_back(axes[ai++]);
        break;
      }
      int64_t left = rule.factors[f].size;
      while (ai < axes.size() && left > 1 && left % mesh.axis_size(axes[ai]) == 0) {
        left /= mesh.axis_size(axes[ai]);
        out[f].push_back(axes[ai++]);
      }
      if (left != 1) break;  // a partially sharded major factor blocks the minor ones
    }
    if (ai < axes.size()) all = false;
  }
  if (lossless != nullptr) *lossless = all;
  return out;
}

AxesSharding ProjectFromFactors(const FactorAxes& factors, const TensorFactors& tensor,
                                const OpShardingRule& rule, const TileMesh& mesh) {
  AxesSharding out;
  out.dims.resize(tensor.dims.size());
  for (size_t d = 0; d < tensor.dims.size(); ++d) {
    const std::vector<int>& fl = tensor.dims[d];
    for (size_t k = 0; k < fl.size(); ++k) {
      const int f = fl[k];
      const std::vector<int>& axes = factors[f];
      if (k + 1 == fl.size()) {
        out.dims[d].insert(out.dims[d].end(), axes.begin(), axes.end());
        break;
      }
      int64_t prod = 1;
      for (int a : axes) prod *= mesh.axis_size(a);
      if (rule.factors[f].size % prod != 0) break;
      out.dims[d].insert(out.dims[d].end(), axes.begin(), axes.end());
      if (prod != rule.factors[f].size) break;
    }
  }
  return out;
}

}  // namespace xs
