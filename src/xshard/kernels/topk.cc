// topk by a stable partial sort of index keys per row; see topk.h.
#include "xshard/kernels/topk.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "xshard/kernels/numeric.h"

namespace xs::kernels {
namespace {

// Order keys of `in` as int64 (floats: XLA's total order through f64, which keeps NaN signs,
// signed zeros and every value's order; integers: their value).
std::vector<__int128> Keys(const Array& in) {
  std::vector<__int128> keys(static_cast<size_t>(in.num_elements()));
  if (IsFloating(in.dtype())) {
    Array w = in.Convert(DType::kF64);
    auto v = w.values<double>();
    for (size_t i = 0; i < keys.size(); ++i) keys[i] = TotalOrderKey(v[i]);
  } else if (IsUnsignedInteger(in.dtype()) || in.dtype() == DType::kPred) {
    Array w = in.Convert(DType::kU64);
    auto v = w.values<uint64_t>();
    for (size_t i = 0; i < keys.size(); ++i) keys[i] = v[i];
  } else {
    Array w = in.Convert(DType::kS64);
    auto v = w.values<int64_t>();
    for (size_t i = 0; i < keys.size(); ++i) keys[i] = v[i];
  }
  return keys;
}

}  // namespace

StatusOr<std::pair<Array, Array>> TopK(const Array& in, int64_t k, bool largest) {
  if (in.rank() < 1) return InvalidArgument("topk needs an operand of rank >= 1, got a scalar");
  if (IsComplex(in.dtype())) return InvalidArgument("topk has no order for complex ", DTypeName(in.dtype()));
  const int64_t n = in.dims().back();
  if (k < 0 || k > n) return InvalidArgument("topk: k=", k, " must be in [0, ", n, "] (the last dim)");
  std::vector<int64_t> out_dims = in.dims();
  out_dims.back() = k;
  Array values(Shape(in.dtype(), out_dims));
  Array indices(Shape(DType::kS32, out_dims));
  const int64_t rows = n == 0 ? 0 : in.num_elements() / n;
  const std::vector<__int128> keys = Keys(in);
  const int64_t esize = DTypeSize(in.dtype());
  std::vector<int32_t> order(static_cast<size_t>(n));
  auto idx = indices.values<int32_t>();
  for (int64_t r = 0; r < rows; ++r) {
    const __int128* key = keys.data() + r * n;
    std::iota(order.begin(), order.end(), 0);
    auto before = [key, largest](int32_t a, int32_t b) {
      if (key[a] != key[b]) return largest ? key[a] > key[b] : key[a] < key[b];
      return a < b;
    };
    std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
    for (int64_t j = 0; j < k; ++j) {
      idx[r * k + j] = order[j];
      std::memcpy(values.data() + (r * k + j) * esize, in.data() + (r * n + order[j]) * esize,
                  static_cast<size_t>(esize));
    }
  }
  return std::make_pair(std::move(values), std::move(indices));
}

}  // namespace xs::kernels
