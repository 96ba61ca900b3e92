// LowerJaxpr: one table entry per primitive, each emitting the HLO JAX emits for it through the
// builder (integer_pow by repeated squaring, argmax as a variadic reduce, broadcast_in_dim with
// size-1 dims reshaped away first, sharding_constraint as custom-call Sharding).
#include "xshard/frontend/lower.h"

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <unordered_map>

#include "xshard/base/strings.h"
#include "xshard/frontend/primitive_rules.h"
#include "xshard/ir/builder.h"

namespace xs::fe {
namespace {

using internal::GetDType;
using internal::GetInt;
using internal::GetIntLists;
using internal::GetInts;
using internal::GetIntsOr;
using internal::GetJaxpr;
using internal::GetOptDType;

Shape ShapeOf(const AVal& a) { return Shape(a.dtype, a.dims); }

class Lowerer;
using LowerRule = std::function<StatusOr<std::vector<Op>>(Lowerer& L, const Eqn& e,
                                                          std::vector<Op> in)>;
const std::map<std::string, LowerRule>& Rules();

class Lowerer {
 public:
  Lowerer(ModuleBuilder& mb, ComputationBuilder& b) : mb_(mb), b_(b) {}
  ComputationBuilder& b() { return b_; }

  // Lowers `j`'s equations with `args` bound to its invars; returns its outputs.
  StatusOr<std::vector<Op>> Body(const Jaxpr& j, const std::vector<Op>& args) {
    std::unordered_map<int64_t, Op> env;
    for (size_t i = 0; i < j.constvars.size(); ++i) env[j.constvars[i].id] = b_.Constant(j.consts[i]);
    for (size_t i = 0; i < j.invars.size(); ++i) env[j.invars[i].id] = args[i];
    for (const Eqn& e : j.eqns) {
      auto rule = Rules().find(e.primitive);
      if (rule == Rules().end()) {
        return Unimplemented("lowering: primitive '", e.primitive, "' has no HLO lowering rule");
      }
      std::vector<Op> in;
      for (const Atom& a : e.inputs) in.push_back(AtomOp(a, env));
      XS_ASSIGN_OR_RETURN(std::vector<Op> out, rule->second(*this, e, std::move(in)));
      XS_RETURN_IF_ERROR(Annotate(b_.status(), StrCat("lowering ", e.primitive, ": ")));
      for (size_t i = 0; i < e.outputs.size(); ++i) env[e.outputs[i].id] = out[i];
    }
    std::vector<Op> outs;
    for (const Atom& a : j.outvars) outs.push_back(AtomOp(a, env));
    return outs;
  }

  // A scalar op broadcast to `dims` (no-op when it already has them).
  Op Splat(Op x, const std::vector<int64_t>& dims) {
    if (x.shape().dims() == dims) return x;
    auto key = std::make_pair(x.instruction(), dims);
    auto it = splats_.find(key);
    if (it != splats_.end()) return it->second;
    return splats_[key] = b_.BroadcastInDim(x, dims, {});
  }
  Op Full(DType t, double v, const std::vector<int64_t>& dims) {
    return Splat(SharedConstant(Array::Full(t, {}, v)), dims);
  }
  // One constant per value, as JAX's lowering shares them.
  Op SharedConstant(Array v) {
    std::string key = StrCat(DTypeName(v.dtype()), v.ToString());
    auto it = constants_.find(key);
    if (it != constants_.end()) return it->second;
    return constants_[key] = b_.Constant(std::move(v));
  }

  // A two-parameter scalar computation applying `op` (add / maximum / minimum), one per kind.
  ComputationBuilder& Reducer(Opcode op, DType t) {
    auto key = std::make_pair(static_cast<int>(op), static_cast<int>(t));
    auto it = reducers_.find(key);
    if (it != reducers_.end()) return *it->second;
    ComputationBuilder& r = mb_.AddComputation(StrCat("region_", reducers_.size()));
    r.Binary(op, r.Parameter(0, Shape(t, {}), "Arg_0"), r.Parameter(1, Shape(t, {}), "Arg_1"));
    reducers_[key] = &r;
    return r;
  }
  ComputationBuilder& NewComputation(const std::string& prefix) {
    return mb_.AddComputation(StrCat(prefix, "_", extra_++));
  }

 private:
  Op AtomOp(const Atom& a, const std::unordered_map<int64_t, Op>& env) {
    if (a.is_literal()) return SharedConstant(a.literal->Convert(a.aval().dtype));
    auto it = env.find(a.var.id);
    XS_CHECK(it != env.end(), "jaxpr variable ", a.var.id, " used before its definition");
    return it->second;
  }

  ModuleBuilder& mb_;
  ComputationBuilder& b_;
  std::map<std::pair<int, int>, ComputationBuilder*> reducers_;
  std::map<std::string, Op> constants_;
  std::map<std::pair<Instruction*, std::vector<int64_t>>, Op> splats_;
  int extra_ = 0;
};

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

// argmax as JAX lowers it: a variadic reduce over (values, iota indices) keeping the larger
// value (NaN wins) and, on ties, the smaller index.
StatusOr<std::vector<Op>> ArgMax(Lowerer& L, const Eqn& e, std::vector<Op> in) {
  XS_ASSIGN_OR_RETURN(IntList axes, GetInts(e.primitive, e.params, "axes"));
  XS_ASSIGN_OR_RETURN(DType it, GetDType(e.primitive, e.params, "index_dtype"));
  if (axes.size() != 1) return InvalidArgument("argmax: needs exactly one axis");
  const AVal& src = e.inputs[0].aval();
  ComputationBuilder& r = L.NewComputation("argmax");
  Shape vs(src.dtype, {}), is(it, {});
  Op va = r.Parameter(0, vs, "a"), ia = r.Parameter(1, is, "ia");
  Op vb = r.Parameter(2, vs, "b"), ib = r.Parameter(3, is, "ib");
  Op pick = r.Or(r.Or(r.Compare(va, vb, ComparisonDirection::kGt),
                      r.Compare(va, va, ComparisonDirection::kNe)),
                 r.And(r.Compare(va, vb, ComparisonDirection::kEq),
                       r.Compare(ia, ib, ComparisonDirection::kLt)));
  r.Tuple({r.Select(pick, va, vb), r.Select(pick, ia, ib)});
  Op idx = L.b().Iota(Shape(it, src.dims), axes[0]);
  Op lowest = L.b().Constant(Array::Full(src.dtype, {}, -std::numeric_limits<double>::infinity()));
  Op red = L.b().Reduce({in[0], idx}, {lowest, L.b().Constant(Array::Full(it, {}, 0))}, r, axes);
  return std::vector<Op>{L.b().GetTupleElement(red, 1)};
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

const std::map<std::string, LowerRule>& Rules() {
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
    (*r)["sharding_constraint"] = ShardingConstraint;
    (*r)["stop_gradient"] = Identity;
    (*r)["pjit"] = InlineRule("jaxpr");
    (*r)["custom_vjp_call"] = InlineRule("call_jaxpr");
    return r;
  }();
  return *rules;
}

}  // namespace

StatusOr<std::unique_ptr<Module>> LowerJaxpr(const Jaxpr& jaxpr, const LowerOptions& options) {
  auto check = [](const char* what, size_t got, size_t want) -> Status {
    if (got != 0 && got != want) {
      return InvalidArgument("lowering: ", got, " ", what, " shardings for ", want, " ", what,
                             "s; give one per ", what, " (nullopt to leave one open)");
    }
    return OkStatus();
  };
  XS_RETURN_IF_ERROR(check("input", options.in_shardings.size(), jaxpr.invars.size()));
  XS_RETURN_IF_ERROR(check("output", options.out_shardings.size(), jaxpr.outvars.size()));
  ModuleBuilder mb(StrCat("jit_", options.name));
  if (options.num_partitions > 1) mb.mutable_config().num_partitions = options.num_partitions;
  ComputationBuilder& b = mb.AddEntry("main");
  Lowerer lowerer(mb, b);
  std::vector<Op> args;
  for (size_t i = 0; i < jaxpr.invars.size(); ++i) {
    if (!options.in_shardings.empty() && options.in_shardings[i]) {
      b.WithSharding(*options.in_shardings[i]);
    }
    args.push_back(b.Parameter(static_cast<int64_t>(i), ShapeOf(jaxpr.invars[i].aval),
                               StrCat("Arg_", i)));
  }
  XS_ASSIGN_OR_RETURN(std::vector<Op> outs, lowerer.Body(jaxpr, args));
  bool any_out = false;
  for (const auto& s : options.out_shardings) any_out |= s.has_value();
  Op root;
  if (outs.size() == 1) {
    root = outs[0];
    // A root that is a parameter (or already carries a sharding) gets a copy to hold its own.
    if (any_out && (root.instruction()->has_sharding() ||
                    root.instruction()->opcode() == Opcode::kParameter)) {
      root = b.Copy(root);
    }
    if (any_out) b.SetSharding(root, *options.out_shardings[0]);
  } else {
    root = b.Tuple(outs);
    if (any_out) {
      std::vector<HloSharding> elems;
      for (const auto& s : options.out_shardings) elems.push_back(s ? *s : HloSharding::Replicate());
      b.SetSharding(root, HloSharding::Tuple(elems));
    }
  }
  b.SetRoot(root);
  return mb.Build();
}

namespace {
HloSharding Stacked(int64_t n, int64_t rank) {
  std::vector<int64_t> tiles(rank, 1);
  tiles[0] = n;
  return *HloSharding::Parse(StrCat("{devices=[", StrJoin(tiles, ","), "]<=[", n, "]}"));
}
std::vector<int64_t> WithLead(int64_t lead, std::vector<int64_t> dims) {
  dims.insert(dims.begin(), lead);
  return dims;
}
}  // namespace

StatusOr<std::unique_ptr<Module>> LowerPmap(const Jaxpr& jaxpr, int64_t num_devices,
                                            const std::string& name) {
  if (jaxpr.invars.size() != 1 || jaxpr.outvars.size() != 1) {
    return InvalidArgument("Pmap(", name, "): the mapped function must take one Tensor and return "
                           "one (it takes ", jaxpr.invars.size(), ", returns ",
                           jaxpr.outvars.size(), ")");
  }
  const AVal& in = jaxpr.invars[0].aval;
  const AVal out = jaxpr.outvars[0].aval();
  ModuleBuilder mb(StrCat("pmap_", name));
  mb.mutable_config().num_partitions = num_devices;
  ComputationBuilder& b = mb.AddEntry("main");
  Lowerer lowerer(mb, b);
  HloSharding in_s = Stacked(num_devices, in.rank() + 1);
  HloSharding out_s = Stacked(num_devices, out.rank() + 1);
  Op arg = b.WithSharding(in_s).Parameter(0, Shape(in.dtype, WithLead(num_devices, in.dims)),
                                          "Arg_0");
  Op full = b.WithSharding(in_s).CustomCall("Sharding", {arg}, arg.shape());
  Op local = b.WithSharding(HloSharding::Manual())
                 .CustomCall("SPMDFullToShardShape", {full}, Shape(in.dtype, WithLead(1, in.dims)));
  Op x = b.WithSharding(HloSharding::Manual()).Reshape(local, in.dims);
  XS_ASSIGN_OR_RETURN(std::vector<Op> outs, lowerer.Body(jaxpr, {x}));
  Op y = b.WithSharding(HloSharding::Manual()).Reshape(outs[0], WithLead(1, out.dims));
  Op marked = b.WithSharding(HloSharding::Manual()).CustomCall("Sharding", {y}, y.shape());
  Op result = b.WithSharding(out_s).CustomCall("SPMDShardToFullShape", {marked},
                                               Shape(out.dtype, WithLead(num_devices, out.dims)));
  b.SetRoot(result);
  XS_ASSIGN_OR_RETURN(std::unique_ptr<Module> module, mb.Build());
  // Everything between the two boundaries runs per device.
  for (Instruction* inst : module->entry()->instructions()) {
    if (!inst->has_sharding()) inst->set_sharding(HloSharding::Manual());
  }
  return module;
}

}  // namespace xs::fe
