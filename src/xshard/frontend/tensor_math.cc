// More jnp / jax.nn / lax functions over Tensors: extra elementwise math, softmax / logsumexp /
// var / std / prod, gelu / silu / softplus, argmin, the cumulative reductions, one_hot, take /
// take_along_axis (gather), sort / argsort and top_k, traced as JAX traces them.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "xshard/base/strings.h"
#include "xshard/frontend/jit.h"
#include "xshard/frontend/tensor_util.h"
#include "xshard/frontend/trace.h"

namespace xs::fe {

namespace {

// A bool or integer operand as f32 (jnp's promote_args_inexact).
Tensor Inexact(const Tensor& x) {
  if (x.ok() && internal::Category(x.dtype()) < 2) {
    return internal::ConvertTo(x, DType::kF32, x.aval().weak_type);
  }
  return x;
}

// `axis` counted from the end when negative; an error naming `op` when outside x's dims.
StatusOr<int64_t> AxisOf(const char* op, const Tensor& x, int64_t axis) {
  int64_t a = axis < 0 ? axis + x.rank() : axis;
  if (a < 0 || a >= x.rank()) {
    return InvalidArgument(op, ": axis ", axis, " is outside ", x.aval().ToString(), " (valid: ", -x.rank(), "..",
                           x.rank() - 1, ")");
  }
  return a;
}

// x's reduced value `r` (dims without `axes`) with the reduced dims back as size 1
// (keepdims=True: lax.expand_dims, a broadcast_in_dim).
Tensor KeepDims(const Tensor& r, const Tensor& x, const std::vector<int64_t>& axes) {
  if (!r.ok() || !x.ok()) return r.ok() ? x : r;
  std::vector<int64_t> shape = x.dims();
  IntList bd;
  for (int64_t i = 0; i < x.rank(); ++i) {
    if (std::count(axes.begin(), axes.end(), i)) {
      shape[i] = 1;
    } else {
      bd.push_back(i);
    }
  }
  if (shape == r.dims()) return r;
  return Bind1("broadcast_in_dim", {r}, {{"shape", IntList(shape)}, {"broadcast_dimensions", bd}});
}

Status CheckAxes(const char* op, const Tensor& x, const std::vector<int64_t>& axes) {
  for (int64_t a : axes) {
    if (a < 0 || a >= x.rank()) {
      return InvalidArgument(op, ": axis ", a, " is outside ", x.aval().ToString());
    }
  }
  return OkStatus();
}

Tensor Cumulative(const char* prim, const char* op, const Tensor& x, int64_t axis, bool reverse) {
  if (!x.ok()) return x;
  StatusOr<int64_t> a = AxisOf(op, x, axis);
  if (!a.ok()) return Tensor::FromStatus(a.status());
  Tensor in = x;
  // As jnp.cumsum / cumprod: bool and narrow integers accumulate in int32 (uint32).
  DType t = x.dtype();
  if (std::string(prim) != "cummax" && std::string(prim) != "cummin" &&
      (t == DType::kPred || (IsInteger(t) && DTypeBitWidth(t) < 32))) {
    in = Astype(x, IsUnsignedInteger(t) ? DType::kU32 : DType::kS32);
  }
  return Bind1(prim, {in}, {{"axis", *a}, {"reverse", reverse}});
}

}  // namespace

Tensor operator<(const Tensor& a, const Tensor& b) { return Lt(a, b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return Le(a, b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return Gt(a, b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return Ge(a, b); }
Tensor operator<(const Tensor& a, double b) { return Lt(a, Tensor::Weak(b)); }
Tensor operator<=(const Tensor& a, double b) { return Le(a, Tensor::Weak(b)); }
Tensor operator>(const Tensor& a, double b) { return Gt(a, Tensor::Weak(b)); }
Tensor operator>=(const Tensor& a, double b) { return Ge(a, Tensor::Weak(b)); }
Tensor operator<(const Tensor& a, int b) { return Lt(a, Tensor::WeakInt(b)); }
Tensor operator<=(const Tensor& a, int b) { return Le(a, Tensor::WeakInt(b)); }
Tensor operator>(const Tensor& a, int b) { return Gt(a, Tensor::WeakInt(b)); }
Tensor operator>=(const Tensor& a, int b) { return Ge(a, Tensor::WeakInt(b)); }
Tensor operator<(double a, const Tensor& b) { return Lt(Tensor::Weak(a), b); }
Tensor operator>(double a, const Tensor& b) { return Gt(Tensor::Weak(a), b); }
Tensor operator<(int a, const Tensor& b) { return Lt(Tensor::WeakInt(a), b); }
Tensor operator>(int a, const Tensor& b) { return Gt(Tensor::WeakInt(a), b); }

Tensor Square(const Tensor& x) { return Bind1("square", {x}); }
Tensor Log1p(const Tensor& x) { return Bind1("log1p", {Inexact(x)}); }
Tensor Expm1(const Tensor& x) { return Bind1("expm1", {Inexact(x)}); }
Tensor Erf(const Tensor& x) { return Bind1("erf", {Inexact(x)}); }
Tensor Erfc(const Tensor& x) { return Bind1("erfc", {Inexact(x)}); }

Tensor IsFinite(const Tensor& x) {
  if (!x.ok()) return x;
  if (!IsFloating(x.dtype())) return Full(x.dims(), 1, DType::kPred);
  return Bind1("is_finite", {x});
}

Tensor Clip(const Tensor& x, const Tensor& lo, const Tensor& hi) { return Minimum(hi, Maximum(lo, x)); }
Tensor Clip(const Tensor& x, double lo, double hi) { return Clip(x, Tensor::Weak(lo), Tensor::Weak(hi)); }

// As jax.nn.softmax's traced body: reduce_max, max with the -inf initial, keepdims,
// stop_gradient, sub, exp, reduce_sum, keepdims, div.
Tensor Softmax(const Tensor& x, int64_t axis) {
  if (!x.ok()) return x;
  StatusOr<int64_t> a = AxisOf("Softmax", x, axis);
  if (!a.ok()) return Tensor::FromStatus(a.status());
  Tensor xf = Inexact(x);
  Tensor m = Maximum(Tensor::Weak(-std::numeric_limits<double>::infinity()), Max(xf, {*a}));
  Tensor unnormalized = Exp(xf - StopGradient(KeepDims(m, xf, {*a})));
  return unnormalized / KeepDims(Sum(unnormalized, {*a}), xf, {*a});
}

Tensor Logsumexp(const Tensor& x, std::vector<int64_t> axes) {
  if (!x.ok()) return x;
  Tensor xf = Inexact(x);
  axes = internal::NormalizeAxes(xf, axes, true);
  Status err = CheckAxes("Logsumexp", xf, axes);
  if (!err.ok()) return Tensor::FromStatus(err);
  Tensor amax = Maximum(Tensor::Weak(-std::numeric_limits<double>::infinity()), Max(xf, axes));
  amax = StopGradient(Where(IsFinite(amax), amax, Tensor::Weak(0)));
  Tensor sumexp = Sum(Exp(xf - KeepDims(amax, xf, axes)), axes);
  return Log(Abs(sumexp)) + amax;
}

// As jnp.var: the mean with keepdims (reduce_sum, broadcast_in_dim, div), square of the centered
// values, reduce_sum, div by n - ddof.
Tensor Variance(const Tensor& x, std::vector<int64_t> axes, int64_t ddof) {
  if (!x.ok()) return x;
  Tensor xf = Inexact(x);
  axes = internal::NormalizeAxes(xf, axes, true);
  Status err = CheckAxes("Variance", xf, axes);
  if (!err.ok()) return Tensor::FromStatus(err);
  int64_t n = 1;
  for (int64_t a : axes) n *= xf.dims()[a];
  Tensor mean = KeepDims(Sum(xf, axes), xf, axes) / static_cast<double>(n);
  return Sum(Square(xf - mean), axes) / static_cast<double>(n - ddof);
}

Tensor Std(const Tensor& x, std::vector<int64_t> axes, int64_t ddof) {
  return Sqrt(Variance(x, std::move(axes), ddof));
}

Tensor Prod(const Tensor& x, std::vector<int64_t> axes) {
  if (!x.ok()) return x;
  axes = internal::NormalizeAxes(x, axes, true);
  Status err = CheckAxes("Prod", x, axes);
  if (!err.ok()) return Tensor::FromStatus(err);
  Tensor in = x;
  DType t = x.dtype();
  if (t == DType::kPred || (IsInteger(t) && DTypeBitWidth(t) < 32)) {
    in = Astype(x, IsUnsignedInteger(t) ? DType::kU32 : DType::kS32);
  }
  return Bind1("reduce_prod", {in}, {{"axes", IntList(axes)}});
}

namespace {

Tensor CallJitted(const JitFunction& f, const Tensor& x) {
  if (!x.ok()) return x;
  return f(x);
}

}  // namespace

// As jax.nn.gelu traces (inline, literals first as JAX's reflected operators bind them).
Tensor Gelu(const Tensor& x, bool approximate) {
  if (!x.ok()) return x;
  Tensor xf = Inexact(x);
  auto w = [](double v) { return Tensor::Weak(v); };
  if (approximate) {
    Tensor inner = Mul(w(std::sqrt(2 / M_PI)), xf + Mul(w(0.044715), IntegerPow(xf, 3)));
    return xf * Mul(w(0.5), Add(w(1.0), Tanh(inner)));
  }
  return Mul(w(0.5), xf) * Erfc(-xf * std::sqrt(0.5));
}

Tensor Silu(const Tensor& x) {
  static const JitFunction silu = Jit(
      [](Tensor x) {
        Tensor xf = Inexact(x);
        return xf * Logistic(xf);
      },
      {.name = "silu"});
  return CallJitted(silu, x);
}

// log(1 + exp(x)) as x + log1p(exp(-x)) for x > 0 and log1p(exp(x)) otherwise: no overflow, and
// the derivative is logistic(x) everywhere (JAX's logaddexp(x, 0) gets it from a custom_jvp).
Tensor Softplus(const Tensor& x) {
  static const JitFunction softplus = Jit(
      [](Tensor x) {
        Tensor xf = Inexact(x);
        Tensor pos = Gt(xf, Tensor::Weak(0));
        Tensor neg_abs = Where(pos, -xf, xf);
        Tensor tail = Log1p(Exp(neg_abs));
        return Where(pos, xf + tail, tail);
      },
      {.name = "softplus"});
  return CallJitted(softplus, x);
}

Tensor Argmin(const Tensor& x, int64_t axis) {
  if (!x.ok()) return x;
  if (axis < 0) axis += x.rank();
  return Bind1("argmin", {x}, {{"axes", IntList{axis}}, {"index_dtype", DType::kS32}});
}

Tensor Cumsum(const Tensor& x, int64_t axis, bool reverse) { return Cumulative("cumsum", "Cumsum", x, axis, reverse); }
Tensor Cumprod(const Tensor& x, int64_t axis, bool reverse) {
  return Cumulative("cumprod", "Cumprod", x, axis, reverse);
}
Tensor Cummax(const Tensor& x, int64_t axis, bool reverse) { return Cumulative("cummax", "Cummax", x, axis, reverse); }
Tensor Cummin(const Tensor& x, int64_t axis, bool reverse) { return Cumulative("cummin", "Cummin", x, axis, reverse); }

Tensor OneHot(const Tensor& ids, int64_t n, DType dtype) {
  if (!ids.ok()) return ids;
  if (!IsInteger(ids.dtype())) {
    return Tensor::FromStatus(
        InvalidArgument("OneHot: ids ", ids.aval().ToString(), " must be integers; convert them with Astype"));
  }
  std::vector<int64_t> shape(ids.rank(), 1);
  shape.push_back(n);
  Tensor classes = Iota(ids.dtype(), shape, ids.rank());
  return Astype(Eq(ExpandDims(ids, -1), classes), dtype);
}

namespace {

// Indices with negative entries counted from the end of a dim of `size` (jnp's index
// normalization: select_n(lt(i, 0), i, add(i, size))).
Tensor WrapNegative(const Tensor& i, int64_t size) {
  if (!IsSignedInteger(i.dtype())) return i;
  return Where(Lt(i, Tensor::WeakInt(0)), i + Tensor::WeakInt(size), i);
}

Status CheckIndices(const char* op, const Tensor& i) {
  if (!IsInteger(i.dtype())) {
    return InvalidArgument(op, ": indices ", i.aval().ToString(), " must be integers; convert them with Astype");
  }
  return OkStatus();
}

Params GatherParams(IntLists dn, IntList slice_sizes, DType t) {
  Params p = {{"dimension_numbers", std::move(dn)},
              {"slice_sizes", std::move(slice_sizes)},
              {"indices_are_sorted", false},
              {"unique_indices", false},
              {"mode", std::string("GatherScatterMode.FILL_OR_DROP")},
              {"fill_value", std::monostate{}}};
  // As jnp: an explicit NaN fill for floats, None (the dtype's default) otherwise.
  if (IsFloating(t)) p["fill_value"].emplace<double>(std::nan(""));
  return p;
}

}  // namespace

Tensor Take(const Tensor& x, const Tensor& indices, int64_t axis) {
  if (!x.ok()) return x;
  if (!indices.ok()) return indices;
  StatusOr<int64_t> a = AxisOf("Take", x, axis);
  if (!a.ok()) return Tensor::FromStatus(a.status());
  Status err = CheckIndices("Take", indices);
  if (!err.ok()) return Tensor::FromStatus(err);
  Tensor idx = ExpandDims(WrapNegative(indices, x.dims()[*a]), -1);
  IntList offset_dims;
  for (int64_t i = 0; i < x.rank() - 1; ++i) {
    offset_dims.push_back(i < *a ? i : i + indices.rank());
  }
  IntList sizes = x.dims();
  sizes[*a] = 1;
  return Bind1("gather", {x, idx}, GatherParams({offset_dims, {*a}, {*a}, {}, {}}, sizes, x.dtype()));
}

Tensor TakeAlongAxis(const Tensor& x, const Tensor& indices, int64_t axis) {
  if (!x.ok()) return x;
  if (!indices.ok()) return indices;
  StatusOr<int64_t> a = AxisOf("TakeAlongAxis", x, axis);
  if (!a.ok()) return Tensor::FromStatus(a.status());
  Status err = CheckIndices("TakeAlongAxis", indices);
  if (!err.ok()) return Tensor::FromStatus(err);
  bool fits = indices.rank() == x.rank();
  for (int64_t i = 0; fits && i < x.rank(); ++i) fits = i == *a || indices.dims()[i] == x.dims()[i];
  if (!fits) {
    return Tensor::FromStatus(InvalidArgument(
        "TakeAlongAxis: indices ", indices.aval().ToString(), " must have the rank of x ", x.aval().ToString(),
        " and its dims except along axis ", *a, "; broadcast them with BroadcastTo"));
  }
  Tensor idx = ExpandDims(WrapNegative(indices, x.dims()[*a]), -1);
  IntList batch;
  for (int64_t i = 0; i < x.rank(); ++i)
    if (i != *a) batch.push_back(i);
  return Bind1("gather", {x, idx}, GatherParams({{}, {*a}, {*a}, batch, batch}, IntList(x.rank(), 1), x.dtype()));
}

Tensor Sort(const Tensor& x, int64_t axis) {
  if (!x.ok()) return x;
  StatusOr<int64_t> a = AxisOf("Sort", x, axis);
  if (!a.ok()) return Tensor::FromStatus(a.status());
  return Bind1("sort", {x}, {{"dimension", *a}, {"is_stable", true}, {"num_keys", int64_t{1}}});
}

Tensor Argsort(const Tensor& x, int64_t axis) {
  if (!x.ok()) return x;
  StatusOr<int64_t> a = AxisOf("Argsort", x, axis);
  if (!a.ok()) return Tensor::FromStatus(a.status());
  Tensor iota = Iota(DType::kS32, x.dims(), *a);
  std::vector<Tensor> out = Bind("sort", {x, iota}, {{"dimension", *a}, {"is_stable", true}, {"num_keys", int64_t{1}}});
  return out.size() == 2 ? out[1] : out[0];
}

std::pair<Tensor, Tensor> TopK(const Tensor& x, int64_t k) {
  if (!x.ok()) return {x, x};
  if (x.rank() < 1) {
    Tensor e = Tensor::FromStatus(InvalidArgument("TopK: operand ", x.aval().ToString(), " needs at least one dim"));
    return {e, e};
  }
  std::vector<Tensor> out = Bind("top_k", {x}, {{"axis", x.rank() - 1}, {"k", k}});
  if (out.size() != 2) return {out[0], out[0]};
  return {out[0], out[1]};
}

}  // namespace xs::fe
