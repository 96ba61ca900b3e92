// jnp-style elementwise, shape and reduction functions over Tensors: numpy broadcasting and
// dtype promotion in front of the lax primitives, as jax.numpy does it.
#include <algorithm>
#include <numeric>

#include "xshard/base/strings.h"
#include "xshard/frontend/tensor_util.h"
#include "xshard/frontend/trace.h"

namespace xs::fe {

namespace internal {

int Category(DType t) {
  if (t == DType::kPred) return 0;
  if (IsInteger(t)) return 1;
  if (IsFloating(t)) return 2;
  return 3;
}

DType PromoteStrong(DType a, DType b) {
  if (a == b) return a;
  int ca = Category(a), cb = Category(b);
  if (ca != cb) return ca > cb ? a : b;
  if ((a == DType::kBF16 && b == DType::kF16) || (a == DType::kF16 && b == DType::kBF16)) {
    return DType::kF32;
  }
  if (ca == 1 && IsUnsignedInteger(a) != IsUnsignedInteger(b)) {
    // JAX's lattice: a signed type wider than the unsigned one holds both; otherwise the signed
    // type of twice the unsigned width (u8 + s8 = s16, u32 + s32 = s64), and past 64 bits the
    // default float (u64 + s64 = f32 with x64 off).
    DType u = IsUnsignedInteger(a) ? a : b, sgn = IsUnsignedInteger(a) ? b : a;
    int uw = DTypeBitWidth(u);
    if (DTypeBitWidth(sgn) > uw) return sgn;
    if (uw <= 8) return DType::kS16;
    if (uw <= 16) return DType::kS32;
    if (uw <= 32) return DType::kS64;
    return DType::kF32;
  }
  return DTypeBitWidth(a) >= DTypeBitWidth(b) ? a : b;
}

Tensor ConvertTo(const Tensor& t, DType d, bool weak) {
  if (!t.ok() || (t.dtype() == d && t.aval().weak_type == weak)) return t;
  const TensorImpl& impl = *t.impl();
  if (!impl.trace && impl.value && t.rank() == 0 && !impl.sharding) {
    // A literal: converted now, as JAX converts Python scalars before binding.
    Tensor out = Tensor::FromArray(impl.value->Convert(d));
    out.impl()->aval.weak_type = weak;
    return out;
  }
  return Bind1("convert_element_type", {t}, {{"new_dtype", d}, {"weak_type", weak}});
}

std::vector<Tensor> Promote(const std::vector<Tensor>& xs) {
  Status err = FirstError(xs);
  if (!err.ok()) return std::vector<Tensor>(xs.size(), Tensor::FromStatus(err));
  std::optional<DType> strong, weak;
  for (const Tensor& t : xs) {
    std::optional<DType>& slot = t.aval().weak_type ? weak : strong;
    slot = slot ? PromoteStrong(*slot, t.dtype()) : t.dtype();
  }
  DType target;
  bool all_weak = !strong.has_value();
  if (!strong) target = *weak;
  else if (!weak || Category(*weak) <= Category(*strong)) target = *strong;
  else target = Category(*weak) == 2 && Category(*strong) < 2 ? DType::kF32 : *weak;
  std::vector<Tensor> out;
  for (const Tensor& t : xs) out.push_back(ConvertTo(t, target, all_weak));
  return out;
}

StatusOr<std::vector<int64_t>> BroadcastShapes(const std::string& op,
                                               const std::vector<Tensor>& xs) {
  std::vector<int64_t> out;
  for (const Tensor& t : xs) {
    if (t.rank() == 0) continue;
    const auto& d = t.dims();
    std::vector<int64_t> next(std::max(out.size(), d.size()), 1);
    for (size_t i = 0; i < next.size(); ++i) {
      int64_t a = i < next.size() - out.size() ? 1 : out[i - (next.size() - out.size())];
      int64_t b = i < next.size() - d.size() ? 1 : d[i - (next.size() - d.size())];
      if (a != b && a != 1 && b != 1) {
        std::vector<std::string> shapes;
        for (const Tensor& x : xs) shapes.push_back(x.aval().ToString());
        return InvalidArgument(op, ": shapes ", StrJoin(shapes, " and "),
                               " do not broadcast (numpy rules: trailing dims must be equal or 1); "
                               "reshape or transpose an operand");
      }
      next[i] = a == 1 ? b : a;
    }
    out = next;
  }
  return out;
}

Tensor Binary(const std::string& prim, const Tensor& a, const Tensor& b) {
  std::vector<Tensor> p = Promote({a, b});
  Status err = FirstError(p);
  if (!err.ok()) return Tensor::FromStatus(err);
  if (p[0].rank() > 0 && p[1].rank() > 0 && p[0].dims() != p[1].dims()) {
    StatusOr<std::vector<int64_t>> dims = BroadcastShapes(prim, p);
    if (!dims.ok()) return Tensor::FromStatus(dims.status());
    p[0] = BroadcastTo(p[0], *dims);
    p[1] = BroadcastTo(p[1], *dims);
  }
  return Bind1(prim, p);
}

std::vector<int64_t> NormalizeAxes(const Tensor& x, std::vector<int64_t> axes, bool all_if_empty) {
  if (axes.empty() && all_if_empty) {
    axes.resize(x.rank());
    std::iota(axes.begin(), axes.end(), 0);
  }
  for (int64_t& a : axes)
    if (a < 0) a += x.rank();
  std::sort(axes.begin(), axes.end());
  return axes;
}

}  // namespace internal

using internal::Binary;

#define XS_FE_UNARY(Name, prim) \
  Tensor Name(const Tensor& x) { return Bind1(prim, {x}); }
XS_FE_UNARY(Neg, "neg")
XS_FE_UNARY(Abs, "abs")
XS_FE_UNARY(Sign, "sign")
XS_FE_UNARY(StopGradient, "stop_gradient")
XS_FE_UNARY(LogicalNot, "not")
#undef XS_FE_UNARY

// Transcendental functions: as jnp (promote_args_inexact), a bool or integer operand is converted
// to f32 first (jnp.exp(arange(3)) is f32).
#define XS_FE_FLOAT_UNARY(Name, prim)                                                \
  Tensor Name(const Tensor& x) {                                                     \
    if (x.ok() && internal::Category(x.dtype()) < 2) {                               \
      return Bind1(prim, {internal::ConvertTo(x, DType::kF32, x.aval().weak_type)}); \
    }                                                                                \
    return Bind1(prim, {x});                                                         \
  }
XS_FE_FLOAT_UNARY(Exp, "exp")
XS_FE_FLOAT_UNARY(Log, "log")
XS_FE_FLOAT_UNARY(Tanh, "tanh")
XS_FE_FLOAT_UNARY(Logistic, "logistic")
XS_FE_FLOAT_UNARY(Sqrt, "sqrt")
XS_FE_FLOAT_UNARY(Rsqrt, "rsqrt")
XS_FE_FLOAT_UNARY(Sin, "sin")
XS_FE_FLOAT_UNARY(Cos, "cos")
#undef XS_FE_FLOAT_UNARY

// jax.nn.relu: max(x, 0) whose derivative at 0 is 0 (JAX's custom_jvp; the derivative of
// Maximum(x, 0.0) there is 0.5). A select on x <= 0 has that derivative, keeps NaN and an integer
// x's dtype.
Tensor Relu(const Tensor& x) { return Where(Le(x, Tensor::WeakInt(0)), Tensor::WeakInt(0), x); }
Tensor IntegerPow(const Tensor& x, int64_t y) { return Bind1("integer_pow", {x}, {{"y", y}}); }

Tensor Add(const Tensor& a, const Tensor& b) { return Binary("add", a, b); }
Tensor Sub(const Tensor& a, const Tensor& b) { return Binary("sub", a, b); }
Tensor Mul(const Tensor& a, const Tensor& b) { return Binary("mul", a, b); }
Tensor Div(const Tensor& a, const Tensor& b) { return Binary("div", a, b); }
Tensor Maximum(const Tensor& a, const Tensor& b) { return Binary("max", a, b); }
Tensor Minimum(const Tensor& a, const Tensor& b) { return Binary("min", a, b); }
Tensor Pow(const Tensor& a, const Tensor& b) { return Binary("pow", a, b); }
Tensor Eq(const Tensor& a, const Tensor& b) { return Binary("eq", a, b); }
Tensor Ne(const Tensor& a, const Tensor& b) { return Binary("ne", a, b); }
Tensor Lt(const Tensor& a, const Tensor& b) { return Binary("lt", a, b); }
Tensor Le(const Tensor& a, const Tensor& b) { return Binary("le", a, b); }
Tensor Gt(const Tensor& a, const Tensor& b) { return Binary("gt", a, b); }
Tensor Ge(const Tensor& a, const Tensor& b) { return Binary("ge", a, b); }
Tensor LogicalAnd(const Tensor& a, const Tensor& b) { return Binary("and", a, b); }
Tensor LogicalOr(const Tensor& a, const Tensor& b) { return Binary("or", a, b); }

Tensor operator-(const Tensor& x) { return Neg(x); }
Tensor operator+(const Tensor& a, const Tensor& b) { return Add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return Sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return Mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) {
  if (a.ok() && b.ok() && internal::Category(a.dtype()) < 2 && internal::Category(b.dtype()) < 2) {
    return Div(internal::ConvertTo(a, DType::kF32, a.aval().weak_type),
               internal::ConvertTo(b, DType::kF32, b.aval().weak_type));
  }
  return Div(a, b);
}
Tensor operator+(const Tensor& a, double b) { return Add(a, Tensor::Weak(b)); }
Tensor operator+(double a, const Tensor& b) { return Add(b, Tensor::Weak(a)); }
Tensor operator-(const Tensor& a, double b) { return Sub(a, Tensor::Weak(b)); }
Tensor operator-(double a, const Tensor& b) { return Sub(Tensor::Weak(a), b); }
Tensor operator*(const Tensor& a, double b) { return Mul(a, Tensor::Weak(b)); }
Tensor operator*(double a, const Tensor& b) { return Mul(b, Tensor::Weak(a)); }
Tensor operator/(const Tensor& a, double b) { return Div(a, Tensor::Weak(b)); }
Tensor operator/(double a, const Tensor& b) { return Div(Tensor::Weak(a), b); }
Tensor operator+(const Tensor& a, int b) { return Add(a, Tensor::WeakInt(b)); }
Tensor operator+(int a, const Tensor& b) { return Add(b, Tensor::WeakInt(a)); }
Tensor operator-(const Tensor& a, int b) { return Sub(a, Tensor::WeakInt(b)); }
Tensor operator-(int a, const Tensor& b) { return Sub(Tensor::WeakInt(a), b); }
Tensor operator*(const Tensor& a, int b) { return Mul(a, Tensor::WeakInt(b)); }
Tensor operator*(int a, const Tensor& b) { return Mul(b, Tensor::WeakInt(a)); }
Tensor operator/(const Tensor& a, int b) { return a / Tensor::WeakInt(b); }
Tensor operator/(int a, const Tensor& b) { return Tensor::WeakInt(a) / b; }

Tensor Where(const Tensor& pred, const Tensor& a, const Tensor& b) {
  std::vector<Tensor> p = internal::Promote({a, b});
  std::vector<Tensor> all = {pred, p[0], p[1]};
  Status err = FirstError(all);
  if (!err.ok()) return Tensor::FromStatus(err);
  if (pred.dtype() != DType::kPred) {
    return Tensor::FromStatus(InvalidArgument("Where: the condition ", pred.aval().ToString(),
                                              " must be bool; compare it first (Ne(x, 0.0))"));
  }
  StatusOr<std::vector<int64_t>> dims = internal::BroadcastShapes("Where", all);
  if (!dims.ok()) return Tensor::FromStatus(dims.status());
  for (Tensor& t : all) t = BroadcastTo(t, *dims);
  return Bind1("select_n", {all[0], all[2], all[1]});
}

Tensor Astype(const Tensor& x, DType dtype) { return internal::ConvertTo(x, dtype, false); }

Tensor BroadcastTo(const Tensor& x, std::vector<int64_t> dims) {
  if (!x.ok() || x.dims() == dims) return x;
  if (x.rank() > static_cast<int64_t>(dims.size())) {
    return Tensor::FromStatus(InvalidArgument("BroadcastTo: ", x.aval().ToString(),
                                              " has more dims than the target (",
                                              StrJoin(dims, ", "), ")"));
  }
  IntList bd;
  for (int64_t i = 0; i < x.rank(); ++i) bd.push_back(static_cast<int64_t>(dims.size()) - x.rank() + i);
  return Bind1("broadcast_in_dim", {x}, {{"shape", IntList(dims)}, {"broadcast_dimensions", bd}});
}

Tensor Reshape(const Tensor& x, std::vector<int64_t> dims) {
  if (!x.ok()) return x;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1 && infer < 0) infer = static_cast<int64_t>(i);
    else known *= dims[i];
  }
  if (infer >= 0 && known > 0) dims[infer] = x.aval().num_elements() / known;
  if (x.dims() == dims) return x;
  return Bind1("reshape", {x}, {{"new_sizes", IntList(dims)}, {"dimensions", std::monostate{}}});
}

Tensor Transpose(const Tensor& x, std::vector<int64_t> permutation) {
  if (!x.ok()) return x;
  if (permutation.empty()) {
    for (int64_t i = x.rank() - 1; i >= 0; --i) permutation.push_back(i);
  }
  return Bind1("transpose", {x}, {{"permutation", IntList(permutation)}});
}

Tensor Squeeze(const Tensor& x, std::vector<int64_t> axes) {
  if (!x.ok()) return x;
  return Bind1("squeeze", {x}, {{"dimensions", internal::NormalizeAxes(x, axes, false)}});
}

Tensor ExpandDims(const Tensor& x, int64_t axis) {
  if (!x.ok()) return x;
  if (axis < 0) axis += x.rank() + 1;
  std::vector<int64_t> shape = x.dims();
  if (axis < 0 || axis > x.rank()) {
    return Tensor::FromStatus(InvalidArgument("ExpandDims: axis ", axis, " is outside 0..",
                                              x.rank(), " for ", x.aval().ToString()));
  }
  shape.insert(shape.begin() + axis, 1);
  IntList bd;
  for (int64_t i = 0; i <= x.rank(); ++i)
    if (i != axis) bd.push_back(i);
  return Bind1("broadcast_in_dim", {x}, {{"shape", IntList(shape)}, {"broadcast_dimensions", bd}});
}

Tensor Slice(const Tensor& x, std::vector<int64_t> start, std::vector<int64_t> limit,
             std::vector<int64_t> strides) {
  Params params;
  params["start_indices"] = IntList(start);
  params["limit_indices"] = IntList(limit);
  if (strides.empty()) {
    params["strides"] = std::monostate{};
  } else {
    params["strides"] = IntList(strides);
  }
  return Bind1("slice", {x}, std::move(params));
}

namespace {
// lax's allow_negative_indices: a negative start index counts from the end of its dim (i + size,
// as Python indexing), before the usual clamping. A concrete index is normalized now, a traced
// one with lt / add / select_n, as JAX traces it.
std::vector<Tensor> WrapNegativeStarts(const Tensor& x, const std::vector<Tensor>& start) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < start.size(); ++i) {
    const Tensor& s = start[i];
    if (!x.ok() || !s.ok() || static_cast<int64_t>(i) >= x.rank() || s.rank() != 0 || !IsSignedInteger(s.dtype())) {
      out.push_back(s);
      continue;
    }
    int64_t size = x.dims()[i];
    const TensorImpl& impl = *s.impl();
    if (!impl.trace && impl.value && !impl.sharding) {
      double v = impl.value->GetDouble(0);
      out.push_back(v < 0 ? Tensor::FromArray(Array::Full(s.dtype(), {}, v + size)) : s);
    } else {
      out.push_back(Where(Lt(s, Tensor::WeakInt(0)), s + Tensor::WeakInt(size), s));
    }
  }
  return out;
}
}  // namespace

Tensor DynamicSlice(const Tensor& x, const std::vector<Tensor>& start,
                    std::vector<int64_t> sizes) {
  std::vector<Tensor> in = {x};
  for (const Tensor& s : WrapNegativeStarts(x, start)) in.push_back(s);
  return Bind1("dynamic_slice", in, {{"slice_sizes", IntList(sizes)}});
}

Tensor DynamicUpdateSlice(const Tensor& x, const Tensor& update, const std::vector<Tensor>& start) {
  std::vector<Tensor> in = {x, update};
  for (const Tensor& s : WrapNegativeStarts(x, start)) in.push_back(s);
  return Bind1("dynamic_update_slice", in);
}

Tensor Concatenate(const std::vector<Tensor>& xs, int64_t axis) {
  std::vector<Tensor> p = internal::Promote(xs);
  if (!p.empty() && p[0].ok() && axis < 0) axis += p[0].rank();
  return Bind1("concatenate", p, {{"dimension", axis}});
}

Tensor Pad(const Tensor& x, double value, std::vector<std::vector<int64_t>> config) {
  if (!x.ok()) return x;
  Tensor v = internal::ConvertTo(Tensor::Weak(value), x.dtype(), false);
  return Bind1("pad", {x, v}, {{"padding_config", IntLists(config)}});
}

namespace {
Tensor Reduce(const char* prim, const Tensor& x, std::vector<int64_t> axes) {
  if (!x.ok()) return x;
  return Bind1(prim, {x}, {{"axes", IntList(internal::NormalizeAxes(x, axes, true))}});
}
}  // namespace

namespace {
bool IsHalf(DType t) { return t == DType::kF16 || t == DType::kBF16; }
}  // namespace

// jnp.sum: bool and integers narrower than 32 bits are summed as int32 / uint32, f16 and bf16 in
// f32 and rounded back once.
Tensor Sum(const Tensor& x, std::vector<int64_t> axes) {
  if (!x.ok()) return x;
  DType t = x.dtype();
  if (t == DType::kPred || (IsInteger(t) && DTypeBitWidth(t) < 32)) {
    return Reduce("reduce_sum", Astype(x, IsUnsignedInteger(t) ? DType::kU32 : DType::kS32), axes);
  }
  if (IsHalf(t)) return Astype(Reduce("reduce_sum", Astype(x, DType::kF32), axes), t);
  return Reduce("reduce_sum", x, axes);
}
Tensor Max(const Tensor& x, std::vector<int64_t> axes) { return Reduce("reduce_max", x, axes); }
Tensor Min(const Tensor& x, std::vector<int64_t> axes) { return Reduce("reduce_min", x, axes); }

// jnp.mean: bool and integers averaged in f32; f16 and bf16 summed and divided in f32.
Tensor Mean(const Tensor& x, std::vector<int64_t> axes) {
  if (!x.ok()) return x;
  axes = internal::NormalizeAxes(x, axes, true);
  int64_t n = 1;
  for (int64_t a : axes) n *= (a >= 0 && a < x.rank()) ? x.dims()[a] : 1;
  DType t = x.dtype();
  bool upcast = IsHalf(t) || internal::Category(t) < 2;
  Tensor mean = Reduce("reduce_sum", upcast ? Astype(x, DType::kF32) : x, axes) / static_cast<double>(n);
  return IsHalf(t) ? Astype(mean, t) : mean;
}

Tensor Argmax(const Tensor& x, int64_t axis) {
  if (!x.ok()) return x;
  if (axis < 0) axis += x.rank();
  return Bind1("argmax", {x}, {{"axes", IntList{axis}}, {"index_dtype", DType::kS32}});
}

Tensor LogSoftmax(const Tensor& x, int64_t axis) {
  if (!x.ok()) return x;
  if (axis < 0) axis += x.rank();
  std::vector<int64_t> kept = x.dims();
  if (axis >= 0 && axis < x.rank()) kept[axis] = 1;
  Tensor shifted = x - Reshape(Max(x, {axis}), kept);
  return shifted - Reshape(Log(Sum(Exp(shifted), {axis})), kept);
}

}  // namespace xs::fe
