// The lowering rules: one entry per primitive, each emitting the HLO JAX emits for it through
// the builder (integer_pow by repeated squaring, argmax as a variadic reduce, broadcast_in_dim
// with size-1 dims reshaped away first, sharding_constraint as custom-call Sharding,
// select_and_scatter_add as select-and-scatter).
#include <cmath>
#include <limits>

#include "xshard/frontend/lower_internal.h"
#include "xshard/frontend/primitive_rules.h"

namespace xs::fe::internal {
namespace {

const AVal& OutAVal(const Eqn& e) { return e.outputs[0].aval; }

LowerRule UnaryRule(Opcode op) {
  return [op](Lowerer& L, const Eqn&, std::vector<Op> in) -> StatusOr<std::vector<Op>> {
    return std::vector<Op>{L.b().Unary(op, in[0])};
  };
}

LowerRule BinaryRule(Opcode op) {
  return [op](Lowerer& L, const Eqn& e, std::vector<Op> in) -> StatusOr<std::vector<Op>> {
    const auto& dims = OutAVal(e).dims;
    return std::vector<Op>{L.b().Binary(op, L.Splat(in[0], dims), L.Splat(in[1], dims))};
  };
}

LowerRule CompareRule(ComparisonDirection dir) {
  return [dir](Lowerer& L, const Eqn& e, std::vector<Op> in) -> StatusOr<std::vector<Op>> {
    const auto& dims = OutAVal(e).dims;
    return std::vector<Op>{L.b().Compare(L.Splat(in[0], dims), L.Splat(in[1], dims), dir)};
  };
}

StatusOr<std::vector<Op>> IntegerPow(Lowerer& L, const Eqn& e, std::vector<Op> in) {
  XS_ASSIGN_OR_RETURN(int64_t y, GetInt(e.primitive, e.params, "y"));
  const AVal& out = OutAVal(e);
  if (y == 0) return std::vector<Op>{L.Full(out.dtype, 1, out.dims)};
  Op x = in[0], acc;
  for (int64_t n = y < 0 ? -y : y; n; n >>= 1) {
    if (n & 1) acc = acc.valid() ? L.b().Mul(acc, x) : x;
    if (n >> 1) x = L.b().Mul(x, x);
  }
  if (y < 0) acc = L.b().Div(L.Full(out.dtype, 1, out.dims), acc);
  return std::vector<Op>{acc};
}

StatusOr<std::vector<Op>> SelectN(Lowerer& L, const Eqn& e, std::vector<Op> in) {
  if (in.size() == 2) return std::vector<Op>{in[1]};
  if (in.size() != 3 || e.inputs[0].aval().dtype != DType::kPred) {
    return Unimplemented("lowering select_n: only a bool predicate with two cases is supported");
  }
  Op pred = L.Splat(in[0], OutAVal(e).dims);
  return std::vector<Op>{L.b().Select(pred, in[2], in[1])};
}

StatusOr<std::vector<Op>> Convert(Lowerer& L, const Eqn& e, std::vector<Op> in) {
  return std::vector<Op>{L.b().Convert(in[0], OutAVal(e).dtype)};
}

StatusOr<std::vector<Op>> BroadcastInDim(Lowerer& L, const Eqn& e, std::vector<Op> in) {
  XS_ASSIGN_OR_RETURN(IntList bd, GetInts(e.primitive, e.params, "broadcast_dimensions"));
  const AVal& src = e.inputs[0].aval();
  const AVal& out = OutAVal(e);
  IntList kept_dims, kept_bd;
  for (size_t i = 0; i < bd.size(); ++i) {
    if (src.dims[i] == out.dims[bd[i]]) {
      kept_dims.push_back(src.dims[i]);
      kept_bd.push_back(bd[i]);
    }
  }
  Op x = in[0];
  if (kept_dims.size() != bd.size()) x = L.b().Reshape(x, kept_dims);
  return std::vector<Op>{L.b().BroadcastInDim(x, out.dims, kept_bd)};
}

StatusOr<std::vector<Op>> ReshapeLike(Lowerer& L, const Eqn& e, std::vector<Op> in) {
  return std::vector<Op>{L.b().Reshape(in[0], OutAVal(e).dims)};
}

StatusOr<std::vector<Op>> Transpose(Lowerer& L, const Eqn& e, std::vector<Op> in) {
  XS_ASSIGN_OR_RETURN(IntList perm, GetInts(e.primitive, e.params, "permutation"));
  return std::vector<Op>{L.b().Transpose(in[0], perm)};
}

LowerRule ReduceRule(Opcode op, double init_float) {
  return [op, init_float](Lowerer& L, const Eqn& e, std::vector<Op> in) -> StatusOr<std::vector<Op>> {
    XS_ASSIGN_OR_RETURN(IntList axes, GetInts(e.primitive, e.params, "axes"));
    DType t = e.inputs[0].aval().dtype;
    double init = init_float;
    if (std::isinf(init) && IsInteger(t)) {
      init = init > 0 ? std::ldexp(1.0, DTypeBitWidth(t) - (IsSignedInteger(t) ? 1 : 0)) - 1
                      : (IsSignedInteger(t) ? -std::ldexp(1.0, DTypeBitWidth(t) - 1) : 0);
    }
    Op init_op = L.b().Constant(Array::Full(t, {}, init));
    return std::vector<Op>{L.b().Reduce(in[0], init_op, L.Reducer(op, t), axes)};
  };
}

// argmax / argmin as JAX lowers them: a variadic reduce over (values, iota indices) keeping the
// larger (smaller) value (NaN wins) and, on ties, the smaller index.
StatusOr<std::vector<Op>> ArgSelect(Lowerer& L, const Eqn& e, std::vector<Op> in, bool is_max) {
  XS_ASSIGN_OR_RETURN(IntList axes, GetInts(e.primitive, e.params, "axes"));
  XS_ASSIGN_OR_RETURN(DType it, GetDType(e.primitive, e.params, "index_dtype"));
  if (axes.size() != 1) return InvalidArgument(e.primitive, ": needs exactly one axis");
  const AVal& src = e.inputs[0].aval();
  ComputationBuilder& r = L.NewComputation(e.primitive);
  Shape vs(src.dtype, {}), is(it, {});
  Op va = r.Parameter(0, vs, "a"), ia = r.Parameter(1, is, "ia");
  Op vb = r.Parameter(2, vs, "b"), ib = r.Parameter(3, is, "ib");
  Op better = r.Compare(va, vb, is_max ? ComparisonDirection::kGt : ComparisonDirection::kLt);
  if (IsFloating(src.dtype)) better = r.Or(better, r.Compare(va, va, ComparisonDirection::kNe));
  Op pick =
      r.Or(better, r.And(r.Compare(va, vb, ComparisonDirection::kEq), r.Compare(ia, ib, ComparisonDirection::kLt)));
  r.Tuple({r.Select(pick, va, vb), r.Select(pick, ia, ib)});
  Op idx = L.b().Iota(Shape(it, src.dims), axes[0]);
  double init;
  if (IsFloating(src.dtype)) {
    init = (is_max ? -1 : 1) * std::numeric_limits<double>::infinity();
  } else if (src.dtype == DType::kPred) {
    init = is_max ? 0 : 1;
  } else {
    int bits = DTypeBitWidth(src.dtype);
    bool u = IsUnsignedInteger(src.dtype);
    init =
        is_max ? (u ? 0 : -std::ldexp(1.0, bits - 1)) : (u ? std::ldexp(1.0, bits) - 1 : std::ldexp(1.0, bits - 1) - 1);
  }
  Op start = L.b().Constant(Array::Full(src.dtype, {}, init));
  Op red = L.b().Reduce({in[0], idx}, {start, L.b().Constant(Array::Full(it, {}, 0))}, r, axes);
  return std::vector<Op>{L.b().GetTupleElement(red, 1)};
}
StatusOr<std::vector<Op>> ArgMax(Lowerer& L, const Eqn& e, std::vector<Op> in) {
  return ArgSelect(L, e, std::move(in), true);
}
StatusOr<std::vector<Op>> ArgMin(Lowerer& L, const Eqn& e, std::vector<Op> in) {
  return ArgSelect(L, e, std::move(in), false);
}

StatusOr<std::vector<Op>> Slice(Lowerer& L, const Eqn& e, std::vector<Op> in) {
  XS_ASSIGN_OR_RETURN(IntList start, GetInts(e.primitive, e.params, "start_indices"));
  XS_ASSIGN_OR_RETURN(IntList limit, GetInts(e.primitive, e.params, "limit_indices"));
  XS_ASSIGN_OR_RETURN(IntList strides,
                      GetIntsOr(e.primitive, e.params, "strides", IntList(start.size(), 1)));
  return std::vector<Op>{L.b().Slice(in[0], start, limit, strides)};
}

StatusOr<std::vector<Op>> DynamicSlice(Lowerer& L, const Eqn& e, std::vector<Op> in) {
  XS_ASSIGN_OR_RETURN(IntList sizes, GetInts(e.primitive, e.params, "slice_sizes"));
  std::vector<Op> idx(in.begin() + 1, in.end());
  return std::vector<Op>{L.b().DynamicSlice(in[0], idx, sizes)};
}

StatusOr<std::vector<Op>> DynamicUpdateSlice(Lowerer& L, const Eqn&, std::vector<Op> in) {
  std::vector<Op> idx(in.begin() + 2, in.end());
  return std::vector<Op>{L.b().DynamicUpdateSlice(in[0], in[1], idx)};
}

StatusOr<std::vector<Op>> Concatenate(Lowerer& L, const Eqn& e, std::vector<Op> in) {
  XS_ASSIGN_OR_RETURN(int64_t dim, GetInt(e.primitive, e.params, "dimension"));
  return std::vector<Op>{L.b().Concatenate(in, dim)};
}

StatusOr<std::vector<Op>> Pad(Lowerer& L, const Eqn& e, std::vector<Op> in) {
  XS_ASSIGN_OR_RETURN(IntLists cfg, GetIntLists(e.primitive, e.params, "padding_config"));
  std::vector<PaddingDim> pads;
  for (const IntList& c : cfg) pads.push_back(PaddingDim{c[0], c[1], c[2]});
  return std::vector<Op>{L.b().Pad(in[0], in[1], pads)};
}

StatusOr<std::vector<Op>> DotGeneral(Lowerer& L, const Eqn& e, std::vector<Op> in) {
  XS_ASSIGN_OR_RETURN(IntLists dn, GetIntLists(e.primitive, e.params, "dimension_numbers"));
  DotDimensionNumbers d;
  d.lhs_contracting = dn[0];
  d.rhs_contracting = dn[1];
  d.lhs_batch = dn[2];
  d.rhs_batch = dn[3];
  std::optional<DType> result;
  if (OutAVal(e).dtype != e.inputs[0].aval().dtype) result = OutAVal(e).dtype;
  return std::vector<Op>{L.b().Dot(in[0], in[1], d, result)};
}

StatusOr<std::vector<Op>> Conv(Lowerer& L, const Eqn& e, std::vector<Op> in) {
  const std::string& p = e.primitive;
  size_t ns = e.inputs[0].aval().dims.size() - 2;
  XS_ASSIGN_OR_RETURN(IntList strides, GetInts(p, e.params, "window_strides"));
  XS_ASSIGN_OR_RETURN(IntLists padding, GetIntLists(p, e.params, "padding"));
  XS_ASSIGN_OR_RETURN(IntList lhs_dil, GetIntsOr(p, e.params, "lhs_dilation", IntList(ns, 1)));
  XS_ASSIGN_OR_RETURN(IntList rhs_dil, GetIntsOr(p, e.params, "rhs_dilation", IntList(ns, 1)));
  XS_ASSIGN_OR_RETURN(IntLists dn, GetIntLists(p, e.params, "dimension_numbers"));
  XS_ASSIGN_OR_RETURN(int64_t fgc, GetInt(p, e.params, "feature_group_count"));
  XS_ASSIGN_OR_RETURN(int64_t bgc, GetInt(p, e.params, "batch_group_count"));
  ConvolutionDimensionNumbers c;
  c.input_batch = dn[0][0];
  c.input_feature = dn[0][1];
  c.kernel_output_feature = dn[1][0];
  c.kernel_input_feature = dn[1][1];
  c.output_batch = dn[2][0];
  c.output_feature = dn[2][1];
  Window w;
  for (size_t i = 0; i < ns; ++i) {
    c.input_spatial.push_back(dn[0][i + 2]);
    c.kernel_spatial.push_back(dn[1][i + 2]);
    c.output_spatial.push_back(dn[2][i + 2]);
    WindowDim wd;
    wd.size = e.inputs[1].aval().dims[dn[1][i + 2]];
    wd.stride = strides[i];
    wd.pad_low = padding[i][0];
    wd.pad_high = padding[i][1];
    wd.lhs_dilation = lhs_dil[i];
    wd.rhs_dilation = rhs_dil[i];
    w.dims.push_back(wd);
  }
  return std::vector<Op>{L.b().Convolution(in[0], in[1], w, c, fgc, bgc)};
}

LowerRule ReduceWindowRule(Opcode op, double init) {
  return [op, init](Lowerer& L, const Eqn& e, std::vector<Op> in) -> StatusOr<std::vector<Op>> {
    const std::string& p = e.primitive;
    size_t r = e.inputs[0].aval().dims.size();
    XS_ASSIGN_OR_RETURN(IntList window, GetInts(p, e.params, "window_dimensions"));
    XS_ASSIGN_OR_RETURN(IntList strides, GetInts(p, e.params, "window_strides"));
    XS_ASSIGN_OR_RETURN(IntLists padding, GetIntLists(p, e.params, "padding"));
    XS_ASSIGN_OR_RETURN(IntList base, GetIntsOr(p, e.params, "base_dilation", IntList(r, 1)));
    XS_ASSIGN_OR_RETURN(IntList wdil, GetIntsOr(p, e.params, "window_dilation", IntList(r, 1)));
    Window w;
    for (size_t i = 0; i < r; ++i) {
      w.dims.push_back(WindowDim{window[i], strides[i], padding[i][0], padding[i][1], base[i],
                                 wdil[i], false});
    }
    DType t = e.inputs[0].aval().dtype;
    Op init_op = L.b().Constant(Array::Full(t, {}, init));
    return std::vector<Op>{L.b().ReduceWindow(in[0], init_op, L.Reducer(op, t), w)};
  };
}

// autodiff's cotangent of reduce_window_max: inputs (source, operand); each window of operand
// picks its first maximum (select `ge`) and receives the window's source element there.
StatusOr<std::vector<Op>> SelectAndScatterAdd(Lowerer& L, const Eqn& e, std::vector<Op> in) {
  const std::string& p = e.primitive;
  XS_ASSIGN_OR_RETURN(IntList window, GetInts(p, e.params, "window_dimensions"));
  XS_ASSIGN_OR_RETURN(IntList strides, GetInts(p, e.params, "window_strides"));
  XS_ASSIGN_OR_RETURN(IntLists padding, GetIntLists(p, e.params, "padding"));
  Window w;
  for (size_t i = 0; i < window.size(); ++i) {
    w.dims.push_back(WindowDim{window[i], strides[i], padding[i][0], padding[i][1], 1, 1, false});
  }
  DType t = e.inputs[1].aval().dtype;
  ComputationBuilder& select = L.NewComputation("select");
  select.Compare(select.Parameter(0, Shape(t, {}), "a"), select.Parameter(1, Shape(t, {}), "b"),
                 ComparisonDirection::kGe);
  Op zero = L.b().Constant(Array::Full(t, {}, 0));
  return std::vector<Op>{
      L.b().SelectAndScatter(in[1], select, w, in[0], zero, L.Reducer(Opcode::kAdd, t))};
}

StatusOr<std::vector<Op>> Rev(Lowerer& L, const Eqn& e, std::vector<Op> in) {
  XS_ASSIGN_OR_RETURN(IntList dims, GetInts(e.primitive, e.params, "dimensions"));
  return std::vector<Op>{L.b().Reverse(in[0], dims)};
}

StatusOr<std::vector<Op>> Iota(Lowerer& L, const Eqn& e, std::vector<Op>) {
  XS_ASSIGN_OR_RETURN(int64_t dim, GetInt(e.primitive, e.params, "dimension"));
  return std::vector<Op>{L.b().Iota(ShapeOf(OutAVal(e)), dim)};
}

StatusOr<std::vector<Op>> ShardingConstraint(Lowerer& L, const Eqn& e, std::vector<Op> in) {
  auto it = e.params.find("sharding");
  if (it == e.params.end() || !std::holds_alternative<std::string>(it->second)) {
    return InvalidArgument("sharding_constraint: missing the 'sharding' parameter (text)");
  }
  XS_ASSIGN_OR_RETURN(NamedSharding ns,
                      internal::ParseNamedShardingText(std::get<std::string>(it->second)));
  XS_ASSIGN_OR_RETURN(HloSharding s, ns.ToHloSharding(static_cast<int>(OutAVal(e).rank())));
  return std::vector<Op>{L.b().WithSharding(s).CustomCall("Sharding", {in[0]},
                                                         ShapeOf(OutAVal(e)))};
}

LowerRule InlineRule(const char* param) {
  return [param](Lowerer& L, const Eqn& e, std::vector<Op> in) -> StatusOr<std::vector<Op>> {
    XS_ASSIGN_OR_RETURN(auto j, GetJaxpr(e.primitive, e.params, param));
    return L.Body(*j, in);
  };
}

StatusOr<std::vector<Op>> Identity(Lowerer&, const Eqn&, std::vector<Op> in) { return in; }

}  // namespace

const std::map<std::string, LowerRule>& LowerRules() {
  static const auto* rules = [] {
    auto* r = new std::map<std::string, LowerRule>;
    const std::pair<const char*, Opcode> unary[] = {
        {"neg", Opcode::kNegate}, {"exp", Opcode::kExp},     {"log", Opcode::kLog},
        {"tanh", Opcode::kTanh},  {"logistic", Opcode::kLogistic}, {"sqrt", Opcode::kSqrt},
        {"rsqrt", Opcode::kRsqrt}, {"abs", Opcode::kAbs},    {"sign", Opcode::kSign},
        {"sin", Opcode::kSin},    {"cos", Opcode::kCos},     {"not", Opcode::kNot}};
    for (auto [name, op] : unary) (*r)[name] = UnaryRule(op);
    const std::pair<const char*, Opcode> binary[] = {
        {"add", Opcode::kAdd},     {"add_any", Opcode::kAdd}, {"sub", Opcode::kSubtract}, {"mul", Opcode::kMultiply},
        {"div", Opcode::kDivide},  {"max", Opcode::kMaximum},  {"min", Opcode::kMinimum},
        {"pow", Opcode::kPower},   {"rem", Opcode::kRemainder}, {"and", Opcode::kAnd},
        {"or", Opcode::kOr},       {"xor", Opcode::kXor}};
    for (auto [name, op] : binary) (*r)[name] = BinaryRule(op);
    const std::pair<const char*, ComparisonDirection> cmp[] = {
        {"eq", ComparisonDirection::kEq}, {"ne", ComparisonDirection::kNe},
        {"lt", ComparisonDirection::kLt}, {"le", ComparisonDirection::kLe},
        {"gt", ComparisonDirection::kGt}, {"ge", ComparisonDirection::kGe}};
    for (auto [name, d] : cmp) (*r)[name] = CompareRule(d);
    const double inf = std::numeric_limits<double>::infinity();
    (*r)["integer_pow"] = IntegerPow;
    (*r)["select_n"] = SelectN;
    (*r)["convert_element_type"] = Convert;
    (*r)["broadcast_in_dim"] = BroadcastInDim;
    for (const char* p : {"reshape", "squeeze", "expand_dims"}) (*r)[p] = ReshapeLike;
    (*r)["transpose"] = Transpose;
    (*r)["reduce_sum"] = ReduceRule(Opcode::kAdd, 0);
    (*r)["reduce_max"] = ReduceRule(Opcode::kMaximum, -inf);
    (*r)["reduce_min"] = ReduceRule(Opcode::kMinimum, inf);
    (*r)["argmax"] = ArgMax;
    (*r)["slice"] = Slice;
    (*r)["dynamic_slice"] = DynamicSlice;
    (*r)["dynamic_update_slice"] = DynamicUpdateSlice;
    (*r)["concatenate"] = Concatenate;
    (*r)["pad"] = Pad;
    (*r)["dot_general"] = DotGeneral;
    (*r)["conv_general_dilated"] = Conv;
    (*r)["reduce_window_sum"] = ReduceWindowRule(Opcode::kAdd, 0);
    (*r)["reduce_window_max"] = ReduceWindowRule(Opcode::kMaximum, -inf);
    (*r)["iota"] = Iota;
    (*r)["rev"] = Rev;
    (*r)["select_and_scatter_add"] = SelectAndScatterAdd;
    (*r)["sharding_constraint"] = ShardingConstraint;
    (*r)["stop_gradient"] = Identity;
    (*r)["pjit"] = InlineRule("jaxpr");
    (*r)["custom_vjp_call"] = InlineRule("call_jaxpr");
    (*r)["reduce_prod"] = ReduceRule(Opcode::kMultiply, 1);
    (*r)["argmin"] = ArgMin;
    AddExtraLowerRules(*r);
    return r;
  }();
  return *rules;
}


}  // namespace xs::fe::internal
