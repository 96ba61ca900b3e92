// jnp / flax-style contractions (DotGeneral, Matmul, Einsum), NHWC convolution and pooling, and
// array creation (Iota, Arange, Full).
#include <algorithm>
#include <numeric>

#include "xshard/base/strings.h"
#include "xshard/frontend/tensor_util.h"
#include "xshard/frontend/trace.h"

namespace xs::fe {

Tensor DotGeneral(const Tensor& a, const Tensor& b, std::vector<int64_t> lhs_contracting,
                  std::vector<int64_t> rhs_contracting, std::vector<int64_t> lhs_batch,
                  std::vector<int64_t> rhs_batch, std::optional<DType> preferred_element_type) {
  std::vector<Tensor> p = internal::Promote({a, b});
  Status err = FirstError(p);
  if (!err.ok()) return Tensor::FromStatus(err);
  Params params;
  params["dimension_numbers"] = IntLists{lhs_contracting, rhs_contracting, lhs_batch, rhs_batch};
  params["precision"] = std::monostate{};
  if (preferred_element_type) {
    params["preferred_element_type"] = *preferred_element_type;
  } else {
    params["preferred_element_type"] = std::monostate{};
  }
  return Bind1("dot_general", p, std::move(params));
}

Tensor Matmul(const Tensor& a, const Tensor& b) {
  std::vector<Tensor> p = internal::Promote({a, b});
  Status err = FirstError(p);
  if (!err.ok()) return Tensor::FromStatus(err);
  int64_t ra = p[0].rank(), rb = p[1].rank();
  if (ra == 0 || rb == 0) {
    return Tensor::FromStatus(InvalidArgument("Matmul: operands ", p[0].aval().ToString(), " and ",
                                              p[1].aval().ToString(),
                                              " must have rank >= 1; use * for scalars"));
  }
  DType t = p[0].dtype();
  int64_t ka = p[0].dims()[ra - 1], kb = p[1].dims()[rb == 1 ? 0 : rb - 2];
  if (ka != kb) {
    return Tensor::FromStatus(InvalidArgument(
        "Matmul: ", p[0].aval().ToString(), " @ ", p[1].aval().ToString(), ": the contracted dims ",
        ka, " and ", kb, " differ; transpose or reshape an operand"));
  }
  // One operand without batch dims: a single contraction gives jnp's layout (a's leading dims,
  // then b's), as (b, m, k) @ (k, n) -> (b, m, n) and (k,) @ (b, k, n) -> (b, n).
  if (rb <= 2) return DotGeneral(p[0], p[1], {ra - 1}, {rb == 1 ? 0 : rb - 2}, {}, {}, t);
  if (ra == 1) return DotGeneral(p[0], p[1], {0}, {rb - 2}, {}, {}, t);
  // Both batched: the batch dims (all but the last two) broadcast by numpy rules.
  std::vector<int64_t> ba(p[0].dims().begin(), p[0].dims().end() - 2);
  std::vector<int64_t> bb(p[1].dims().begin(), p[1].dims().end() - 2);
  size_t nb = std::max(ba.size(), bb.size());
  ba.insert(ba.begin(), nb - ba.size(), 1);
  bb.insert(bb.begin(), nb - bb.size(), 1);
  std::vector<int64_t> batch_dims;
  for (size_t i = 0; i < nb; ++i) {
    if (ba[i] != bb[i] && ba[i] != 1 && bb[i] != 1) {
      return Tensor::FromStatus(InvalidArgument("Matmul: the batch dims of ", p[0].aval().ToString(), " @ ",
                                                p[1].aval().ToString(),
                                                " do not broadcast (numpy rules: equal or 1); reshape an operand"));
    }
    batch_dims.push_back(ba[i] == 1 ? bb[i] : ba[i]);
  }
  std::vector<int64_t> da = batch_dims, db = batch_dims;
  da.insert(da.end(), p[0].dims().end() - 2, p[0].dims().end());
  db.insert(db.end(), p[1].dims().end() - 2, p[1].dims().end());
  std::vector<int64_t> batch(nb);
  std::iota(batch.begin(), batch.end(), 0);
  int64_t r = static_cast<int64_t>(nb) + 2;
  return DotGeneral(BroadcastTo(p[0], da), BroadcastTo(p[1], db), {r - 1}, {r - 2}, batch, batch, t);
}

Tensor Einsum(const std::string& spec, const Tensor& a, const Tensor& b) {
  size_t comma = spec.find(','), arrow = spec.find("->");
  if (comma == std::string::npos || arrow == std::string::npos || comma > arrow) {
    return Tensor::FromStatus(InvalidArgument("Einsum: spec '", spec,
                                              "' must look like 'ij,jk->ik' (two operands)"));
  }
  std::string la = spec.substr(0, comma), lb = spec.substr(comma + 1, arrow - comma - 1);
  std::string lo = spec.substr(arrow + 2);
  if (!a.ok()) return a;
  if (!b.ok()) return b;
  if (static_cast<int64_t>(la.size()) != a.rank() || static_cast<int64_t>(lb.size()) != b.rank()) {
    return Tensor::FromStatus(InvalidArgument("Einsum: '", spec, "' names ", la.size(), " and ",
                                              lb.size(), " dims for ", a.aval().ToString(), " and ",
                                              b.aval().ToString()));
  }
  // Letters of one operand found nowhere else are summed away first.
  auto sum_lonely = [&](Tensor x, std::string& l, const std::string& other) {
    std::vector<int64_t> axes;
    std::string kept;
    for (size_t i = 0; i < l.size(); ++i) {
      if (other.find(l[i]) == std::string::npos && lo.find(l[i]) == std::string::npos) {
        axes.push_back(static_cast<int64_t>(i));
      } else {
        kept += l[i];
      }
    }
    l = kept;
    return axes.empty() ? x : Sum(x, axes);
  };
  Tensor x = sum_lonely(a, la, lb), y = sum_lonely(b, lb, la);
  std::vector<int64_t> lc, rc, lbat, rbat;
  std::string result;
  for (size_t i = 0; i < la.size(); ++i) {
    size_t j = lb.find(la[i]);
    if (j == std::string::npos) continue;
    if (lo.find(la[i]) == std::string::npos) {
      lc.push_back(static_cast<int64_t>(i));
      rc.push_back(static_cast<int64_t>(j));
    } else {
      lbat.push_back(static_cast<int64_t>(i));
      rbat.push_back(static_cast<int64_t>(j));
      result += la[i];
    }
  }
  for (char c : la)
    if (lb.find(c) == std::string::npos) result += c;
  for (char c : lb)
    if (la.find(c) == std::string::npos) result += c;
  std::vector<Tensor> p = internal::Promote({x, y});
  Tensor out = DotGeneral(p[0], p[1], lc, rc, lbat, rbat, p[0].ok() ? p[0].dtype() : DType::kF32);
  if (result == lo || !out.ok()) return out;
  std::vector<int64_t> perm;
  for (char c : lo) {
    size_t at = result.find(c);
    if (at == std::string::npos) {
      return Tensor::FromStatus(InvalidArgument("Einsum: output letter '", std::string(1, c),
                                                "' of '", spec, "' is in neither operand"));
    }
    perm.push_back(static_cast<int64_t>(at));
  }
  return Transpose(out, perm);
}

Tensor Conv(const Tensor& x, const Tensor& kernel, std::vector<int64_t> strides,
            const std::string& padding) {
  std::vector<Tensor> p = internal::Promote({x, kernel});
  Status err = FirstError(p);
  if (!err.ok()) return Tensor::FromStatus(err);
  if (p[0].rank() != 4 || p[1].rank() != 4) {
    return Tensor::FromStatus(InvalidArgument(
        "Conv: input ", p[0].aval().ToString(), " and kernel ", p[1].aval().ToString(),
        " must be NHWC and HWIO (rank 4); add a batch dim with ExpandDims(x, 0)"));
  }
  if (strides.empty()) strides = {1, 1};
  IntLists pads;
  for (int i = 0; i < 2; ++i) {
    int64_t in = p[0].dims()[1 + i], k = p[1].dims()[i], s = strides[i];
    if (padding == "VALID") {
      pads.push_back({0, 0});
    } else if (padding == "SAME") {
      int64_t out = (in + s - 1) / s;
      int64_t total = std::max<int64_t>((out - 1) * s + k - in, 0);
      pads.push_back({total / 2, total - total / 2});
    } else {
      return Tensor::FromStatus(InvalidArgument("Conv: padding '", padding,
                                                "' must be \"SAME\" or \"VALID\""));
    }
  }
  return Bind1("conv_general_dilated", p,
               {{"window_strides", IntList(strides)},
                {"padding", pads},
                {"lhs_dilation", IntList{1, 1}},
                {"rhs_dilation", IntList{1, 1}},
                {"dimension_numbers", IntLists{{0, 3, 1, 2}, {3, 2, 0, 1}, {0, 3, 1, 2}}},
                {"feature_group_count", int64_t{1}},
                {"batch_group_count", int64_t{1}},
                {"precision", std::monostate{}},
                {"preferred_element_type", std::monostate{}}});
}

namespace {
Tensor Pool(const char* prim, const Tensor& x, const std::vector<int64_t>& window,
            const std::vector<int64_t>& strides) {
  if (!x.ok()) return x;
  if (x.rank() != 4 || window.size() != 2 || strides.size() != 2) {
    return Tensor::FromStatus(InvalidArgument(prim, ": needs NHWC input (got ",
                                              x.aval().ToString(),
                                              ") and 2 window sizes and 2 strides"));
  }
  return Bind1(prim, {x},
               {{"window_dimensions", IntList{1, window[0], window[1], 1}},
                {"window_strides", IntList{1, strides[0], strides[1], 1}},
                {"padding", IntLists{{0, 0}, {0, 0}, {0, 0}, {0, 0}}},
                {"base_dilation", IntList{1, 1, 1, 1}},
                {"window_dilation", IntList{1, 1, 1, 1}}});
}
}  // namespace

Tensor AvgPool(const Tensor& x, std::vector<int64_t> window, std::vector<int64_t> strides) {
  Tensor s = Pool("reduce_window_sum", x, window, strides);
  if (!s.ok() || window.size() != 2) return s;
  return s / static_cast<double>(window[0] * window[1]);
}

Tensor MaxPool(const Tensor& x, std::vector<int64_t> window, std::vector<int64_t> strides) {
  return Pool("reduce_window_max", x, window, strides);
}

Tensor Iota(DType dtype, std::vector<int64_t> dims, int64_t dimension) {
  return Bind1("iota", {}, {{"dtype", dtype}, {"shape", IntList(dims)}, {"dimension", dimension}});
}

Tensor Arange(int64_t start, int64_t stop, DType dtype) {
  Tensor i = Iota(dtype, {std::max<int64_t>(stop - start, 0)}, 0);
  if (start == 0) return i;
  return Add(i, internal::ConvertTo(Tensor::Weak(static_cast<double>(start)), dtype, true));
}

Tensor Full(std::vector<int64_t> dims, double value, DType dtype) {
  if (CurrentTrace() != nullptr) return BroadcastTo(Tensor::Scalar(value, dtype), dims);
  return Tensor::FromArray(Array::Full(dtype, dims, value));
}
Tensor Zeros(std::vector<int64_t> dims, DType dtype) { return Full(std::move(dims), 0, dtype); }
Tensor Ones(std::vector<int64_t> dims, DType dtype) { return Full(std::move(dims), 1, dtype); }

}  // namespace xs::fe
