// ragged-dot by direct summation over each output element's contraction; see ragged_dot.h.
#include "xshard/kernels/ragged_dot.h"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <string_view>

#include "xshard/kernels/numeric.h"

namespace xs::kernels {
namespace {

bool Has(const std::vector<int64_t>& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

std::vector<int64_t> Strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * dims[i + 1];
  return s;
}

std::vector<double> ValuesAsDouble(const Array& a) {
  const int64_t count = a.num_elements();
  std::vector<double> v(static_cast<size_t>(count));
  if (DTypeSize(a.dtype()) == 1 && count > 256) {
    // One-byte types (the f8 / f4 formats, their scales, s8 / u8): each of the 256 bit patterns
    // decoded once.
    Array one(Shape(a.dtype(), {256}));
    for (int b = 0; b < 256; ++b) one.data()[b] = static_cast<std::byte>(b);
    double table[256];
    for (int b = 0; b < 256; ++b) table[b] = one.GetDouble(b);
    const auto* bytes = reinterpret_cast<const uint8_t*>(a.data());
    for (int64_t i = 0; i < count; ++i) v[i] = table[bytes[i]];
    return v;
  }
  for (int64_t i = 0; i < count; ++i) v[i] = a.GetDouble(i);
  return v;
}

}  // namespace

StatusOr<Array> RaggedDot(const Array& lhs, const Array& rhs, const Array& group_sizes, const RaggedDotDims& d,
                          const Shape& out_shape) {
  const DotDimensionNumbers& dn = d.dot;
  if (dn.lhs_batch.size() != dn.rhs_batch.size() || dn.lhs_contracting.size() != dn.rhs_contracting.size()) {
    return InvalidArgument("ragged-dot: batch and contracting dim lists must pair up");
  }
  if (d.lhs_ragged < 0 || d.lhs_ragged >= lhs.rank()) {
    return InvalidArgument("ragged-dot: lhs_ragged_dims={", d.lhs_ragged, "} is outside lhs rank ", lhs.rank());
  }
  const bool ragged_contracting = Has(dn.lhs_contracting, d.lhs_ragged);
  const bool ragged_batch = Has(dn.lhs_batch, d.lhs_ragged);
  if (!ragged_contracting && !ragged_batch && d.rhs_group.size() != 1) {
    return InvalidArgument("ragged-dot: a ragged non-contracting lhs dim needs rhs_group_dims={g}");
  }
  // lhs free dims and rhs free dims (group dims excluded), in order.
  std::vector<int64_t> lf, rf;
  for (int i = 0; i < lhs.rank(); ++i) {
    if (!Has(dn.lhs_batch, i) && !Has(dn.lhs_contracting, i)) lf.push_back(i);
  }
  for (int i = 0; i < rhs.rank(); ++i) {
    if (!Has(dn.rhs_batch, i) && !Has(dn.rhs_contracting, i) && !Has(d.rhs_group, i)) rf.push_back(i);
  }
  const int64_t groups = group_sizes.rank() >= 1 ? group_sizes.dims().back() : 0;
  if (group_sizes.rank() != 1 && group_sizes.rank() != 1 + static_cast<int>(dn.lhs_batch.size())) {
    return InvalidArgument("ragged-dot: group_sizes must be [g] or [batch..., g], got ", group_sizes.shape().ToString(false));
  }
  if (!ragged_contracting && !ragged_batch && rhs.dims()[d.rhs_group[0]] != groups) {
    return InvalidArgument("ragged-dot: rhs group dim has ", rhs.dims()[d.rhs_group[0]], " groups but group_sizes has ", groups);
  }
  std::vector<int64_t> out_dims;
  if (ragged_contracting) out_dims.push_back(groups);
  for (int64_t b : dn.lhs_batch) out_dims.push_back(lhs.dims()[b]);
  for (int64_t f : lf) out_dims.push_back(lhs.dims()[f]);
  for (int64_t f : rf) out_dims.push_back(rhs.dims()[f]);
  if (out_dims != out_shape.dims()) {
    return InvalidArgument("ragged-dot: result shape ", out_shape.ToString(false), " does not match the operands");
  }
  const std::vector<double> lv = ValuesAsDouble(lhs), rv = ValuesAsDouble(rhs);
  const std::vector<int64_t> ls = Strides(lhs.dims()), rs = Strides(rhs.dims());
  std::vector<int64_t> kdims;
  for (int64_t c : dn.lhs_contracting) kdims.push_back(lhs.dims()[c]);
  const int nb = static_cast<int>(dn.lhs_batch.size());
  Array out(out_shape.WithoutLayout());
  std::vector<int64_t> idx(out_dims.size(), 0), k(kdims.size(), 0);
  const bool empty_k = std::any_of(kdims.begin(), kdims.end(), [](int64_t x) { return x == 0; });
  for (int64_t o = 0; o < out.num_elements(); ++o) {
    const int lead = ragged_contracting ? 1 : 0;
    int64_t lbase = 0, rbase = 0, sizes_base = 0;
    for (int i = 0; i < nb; ++i) {
      lbase += idx[lead + i] * ls[dn.lhs_batch[i]];
      rbase += idx[lead + i] * rs[dn.rhs_batch[i]];
      if (group_sizes.rank() > 1) sizes_base = sizes_base * group_sizes.dims()[i] + idx[lead + i];
    }
    int64_t ragged_index = -1;
    for (size_t i = 0; i < lf.size(); ++i) {
      lbase += idx[lead + nb + i] * ls[lf[i]];
      if (lf[i] == d.lhs_ragged) ragged_index = idx[lead + nb + i];
    }
    for (size_t i = 0; i < rf.size(); ++i) rbase += idx[lead + nb + lf.size() + i] * rs[rf[i]];
    // The group range [start, end) along the ragged dim this element uses.
    auto group_range = [&](int64_t g, int64_t* start, int64_t* end) {
      int64_t s = 0;
      for (int64_t j = 0; j < g; ++j) s += static_cast<int64_t>(group_sizes.GetDouble(sizes_base * groups + j));
      *start = s;
      *end = s + static_cast<int64_t>(group_sizes.GetDouble(sizes_base * groups + g));
    };
    bool active = true;
    int64_t k_lo = 0, k_hi = 0;
    if (ragged_contracting) {
      group_range(idx[0], &k_lo, &k_hi);
    } else if (!ragged_batch) {
      int64_t g = 0, start = 0, end = 0;
      for (; g < groups; ++g) {
        group_range(g, &start, &end);
        if (ragged_index >= start && ragged_index < end) break;
      }
      active = g < groups;
      if (active) rbase += g * rs[d.rhs_group[0]];
    }
    double sum = 0;
    if (active && !empty_k) {
      std::fill(k.begin(), k.end(), 0);
      do {
        int64_t loff = lbase, roff = rbase;
        bool in_group = true;
        for (size_t i = 0; i < k.size(); ++i) {
          loff += k[i] * ls[dn.lhs_contracting[i]];
          roff += k[i] * rs[dn.rhs_contracting[i]];
          if (ragged_contracting && dn.lhs_contracting[i] == d.lhs_ragged) in_group = k[i] >= k_lo && k[i] < k_hi;
        }
        if (in_group) sum += lv[loff] * rv[roff];
      } while (NextIndex(k, kdims));
    }
    out.SetDouble(o, sum);
    NextIndex(idx, out_dims);
  }
  return out;
}

namespace {

// x * scale with the scale repeated over blocks: element i of x uses scale element
// (i_0 / r_0, i_1 / r_1, ...) where r_d = x.dim(d) / scale.dim(d) (the block size along dim d,
// usually 1 but along the contracting dim). Error on a scale dim that does not divide x's.
StatusOr<std::vector<double>> Scaled(const Array& x, const Array* scale, std::string_view what) {
  std::vector<double> v = ValuesAsDouble(x);
  if (scale == nullptr) return v;
  const int r = x.rank();
  bool ok = scale->rank() == r;
  for (int d = 0; ok && d < r; ++d) ok = scale->dims()[d] > 0 && x.dims()[d] % scale->dims()[d] == 0;
  if (!ok) {
    return InvalidArgument("block_scaled_dot: ", what, " scale ", scale->shape().ToString(false),
                           " must have ", what, "'s rank with every dim dividing ", x.shape().ToString(false));
  }
  std::vector<int64_t> ratio(r);
  for (int d = 0; d < r; ++d) ratio[d] = x.dims()[d] / scale->dims()[d];
  const std::vector<int64_t> ss = Strides(scale->dims());
  const std::vector<double> sv = ValuesAsDouble(*scale);
  // Rows of x's last dim: the scale offset of the row's start, then one scale per block of the
  // last dim's ratio.
  const int64_t last = x.dims()[r - 1];  // BlockScaledDot's operands have rank 2 or 3
  const int64_t block = ratio[r - 1];
  std::vector<int64_t> index(r, 0);
  for (int64_t row = 0; row * last < x.num_elements(); ++row) {
    int64_t off = 0;
    for (int d = 0; d + 1 < r; ++d) off += index[d] / ratio[d] * ss[d];
    double* out = v.data() + row * last;
    for (int64_t j = 0; j < last; ++j) out[j] *= sv[off + j / block];
    for (int d = r - 2; d >= 0; --d) {  // the next row's index
      if (++index[d] < x.dims()[d]) break;
      index[d] = 0;
    }
  }
  return v;
}

}  // namespace

StatusOr<Array> BlockScaledDot(const Array& lhs, const Array& rhs, const Array* lhs_scale, const Array* rhs_scale,
                               const Shape& out_shape) {
  const int r = lhs.rank();
  if ((r != 2 && r != 3) || rhs.rank() != r || lhs.dims()[r - 1] != rhs.dims()[r - 1] ||
      (r == 3 && lhs.dims()[0] != rhs.dims()[0])) {
    return InvalidArgument("block_scaled_dot needs lhs [B?, M, K] and rhs [B?, N, K], got ", lhs.shape().ToString(false),
                           " and ", rhs.shape().ToString(false));
  }
  const int64_t batch = r == 3 ? lhs.dims()[0] : 1;
  const int64_t m = lhs.dims()[r - 2], n = rhs.dims()[r - 2], k = lhs.dims()[r - 1];
  std::vector<int64_t> want = {m, n};
  if (r == 3) want.insert(want.begin(), batch);
  if (out_shape.dims() != want) {
    return InvalidArgument("block_scaled_dot: result ", out_shape.ToString(false), " must be [B?, M, N]");
  }
  if (std::max({m, n, k}) > int64_t{INT_MAX}) {
    return Unimplemented("block_scaled_dot: a dimension of more than 2^31 - 1 elements");
  }
  XS_ASSIGN_OR_RETURN(std::vector<double> a, Scaled(lhs, lhs_scale, "lhs"));
  XS_ASSIGN_OR_RETURN(std::vector<double> b, Scaled(rhs, rhs_scale, "rhs"));
  // The scaled operands in f64 (exact for the f8 / f4 element and e8m0 scale types), multiplied
  // with BLAS's dgemm: out[b] = a[b] (M x K) * b[b]^T (K x N), accumulated in f64.
  std::vector<double> c(static_cast<size_t>(batch * m * n), 0.0);
  if (k > 0) {
    for (int64_t bi = 0; bi < batch; ++bi) {
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(m), static_cast<blasint>(n),
                  static_cast<blasint>(k), 1.0, a.data() + bi * m * k, static_cast<blasint>(k), b.data() + bi * n * k,
                  static_cast<blasint>(k), 0.0, c.data() + bi * m * n, static_cast<blasint>(n));
    }
  }
  Array out(out_shape.WithoutLayout());
  for (int64_t i = 0; i < batch * m * n; ++i) out.SetDouble(i, c[i]);
  return out;
}

}  // namespace xs::kernels
