// Lowering rules of the primitives in primitives_extra.cc: the extra unary math, the cumulative
// reductions as JAX lowers them (a reduce-window whose window spans the axis, padded n - 1 before:
// the prefix-scan window the CPU executor runs in one pass), gather (FILL_OR_DROP masks
// out-of-bounds rows with the fill value, as JAX's _gather_fill) and scatter-add, sort with a
// total-order comparator, top_k as a stable descending sort, and the control flow: cond as HLO
// conditional, while as HLO while, scan as a counted HLO while over dynamic slices.
#include <cmath>
#include <limits>

#include "xshard/frontend/lower_internal.h"
#include "xshard/frontend/primitive_rules.h"

namespace xs::fe::internal {
namespace {

using Ops = std::vector<Op>;

const AVal& ResultAVal(const Eqn& e) { return e.outputs[0].aval; }

// The identity of a max (lowest) or min (highest) reduction for `t`.
double ExtremeOf(DType t, bool highest) {
  if (IsFloating(t)) {
    return highest ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
  }
  if (t == DType::kPred) return highest ? 1 : 0;
  int bits = DTypeBitWidth(t);
  if (IsUnsignedInteger(t)) return highest ? std::ldexp(1.0, bits) - 1 : 0;
  return highest ? std::ldexp(1.0, bits - 1) - 1 : -std::ldexp(1.0, bits - 1);
}

LowerRule Unary(Opcode op) {
  return [op](Lowerer& L, const Eqn&, Ops in) -> StatusOr<Ops> { return Ops{L.b().Unary(op, in[0])}; };
}

StatusOr<Ops> Square(Lowerer& L, const Eqn&, Ops in) { return Ops{L.b().Mul(in[0], in[0])}; }

// erfc as 1 - erf (HLO has no erfc; XLA expands chlo.erfc with its own polynomial, more exact
// where erf(x) is close to 1).
StatusOr<Ops> Erfc(Lowerer& L, const Eqn& e, Ops in) {
  const AVal& x = e.inputs[0].aval();
  return Ops{L.b().Sub(L.Full(x.dtype, 1, x.dims), L.b().Unary(Opcode::kErf, in[0]))};
}

// cumsum / cumprod / cummax / cummin[axis reverse]: JAX's cumred_reduce_window_impl.
LowerRule CumulativeRule(Opcode op) {
  return [op](Lowerer& L, const Eqn& e, Ops in) -> StatusOr<Ops> {
    XS_ASSIGN_OR_RETURN(int64_t axis, GetInt(e.primitive, e.params, "axis"));
    auto rit = e.params.find("reverse");
    bool reverse = rit != e.params.end() && std::holds_alternative<bool>(rit->second) && std::get<bool>(rit->second);
    const AVal& x = e.inputs[0].aval();
    int64_t n = x.dims[axis];
    if (n == 0) return in;
    Window w;
    for (int64_t i = 0; i < x.rank(); ++i) {
      WindowDim d{1, 1, 0, 0, 1, 1, false};
      if (i == axis) {
        d.size = n;
        (reverse ? d.pad_high : d.pad_low) = n - 1;
      }
      w.dims.push_back(d);
    }
    double init = op == Opcode::kAdd ? 0 : op == Opcode::kMultiply ? 1 : ExtremeOf(x.dtype, op == Opcode::kMinimum);
    Op init_op = L.b().Constant(Array::Full(x.dtype, {}, init));
    return Ops{L.b().ReduceWindow(in[0], init_op, L.Reducer(op, x.dtype), w)};
  };
}

StatusOr<IntLists> DimNumbers(const Eqn& e) {
  XS_ASSIGN_OR_RETURN(IntLists dn, GetIntLists(e.primitive, e.params, "dimension_numbers"));
  if (dn.size() != 5) return InvalidArgument(e.primitive, ": dimension_numbers needs 5 lists");
  return dn;
}

bool IsFillOrDrop(const Eqn& e) {
  auto it = e.params.find("mode");
  return it != e.params.end() && std::holds_alternative<std::string>(it->second) &&
         std::get<std::string>(it->second).find("FILL_OR_DROP") != std::string::npos;
}

// JAX's default gather fill: NaN for floats, the lowest signed / highest unsigned integer, True.
double DefaultFill(DType t) {
  if (IsFloating(t) || IsComplex(t)) return std::numeric_limits<double>::quiet_NaN();
  if (t == DType::kPred) return 1;
  return ExtremeOf(t, IsUnsignedInteger(t));
}

StatusOr<Ops> Gather(Lowerer& L, const Eqn& e, Ops in) {
  XS_ASSIGN_OR_RETURN(IntLists dn, DimNumbers(e));
  XS_ASSIGN_OR_RETURN(IntList sizes, GetInts(e.primitive, e.params, "slice_sizes"));
  const AVal& op = e.inputs[0].aval();
  const AVal& idx = e.inputs[1].aval();
  const AVal& out = ResultAVal(e);
  GatherDimensionNumbers g;
  g.offset_dims = dn[0];
  g.collapsed_slice_dims = dn[1];
  g.start_index_map = dn[2];
  g.operand_batching_dims = dn[3];
  g.start_indices_batching_dims = dn[4];
  g.index_vector_dim = idx.rank() - 1;
  Op gathered = L.b().Gather(in[0], in[1], g, sizes);
  if (!IsFillOrDrop(e)) return Ops{gathered};
  // In bounds: 0 <= index <= dim - slice size for every component of the index vector.
  int64_t nv = idx.dims.back();
  Array upper(idx.dtype, {nv});
  for (int64_t k = 0; k < nv; ++k) upper.SetDouble(k, op.dims[dn[2][k]] - sizes[dn[2][k]]);
  IntList last{idx.rank() - 1};
  Op ub = L.b().BroadcastInDim(L.b().Constant(upper), idx.dims, last);
  Op ge = L.b().Compare(in[1], L.Full(idx.dtype, 0, idx.dims), ComparisonDirection::kGe);
  Op le = L.b().Compare(in[1], ub, ComparisonDirection::kLe);
  Op ok = L.b().And(ge, le);
  Op all =
      L.b().Reduce(ok, L.b().Constant(Array::Full(DType::kPred, {}, 1)), L.Reducer(Opcode::kAnd, DType::kPred), last);
  IntList batch_dims;
  for (int64_t i = 0; i < out.rank(); ++i)
    if (!std::count(dn[0].begin(), dn[0].end(), i)) batch_dims.push_back(i);
  Op mask = L.b().BroadcastInDim(all, out.dims, batch_dims);
  double fill_value = DefaultFill(out.dtype);
  auto fv = e.params.find("fill_value");
  if (fv != e.params.end() && std::holds_alternative<double>(fv->second)) {
    fill_value = std::get<double>(fv->second);
  }
  Op fill = L.Full(out.dtype, fill_value, out.dims);
  return Ops{L.b().Select(mask, gathered, fill)};
}

StatusOr<Ops> ScatterAdd(Lowerer& L, const Eqn& e, Ops in) {
  XS_ASSIGN_OR_RETURN(IntLists dn, DimNumbers(e));
  const AVal& idx = e.inputs[1].aval();
  ScatterDimensionNumbers s;
  s.update_window_dims = dn[0];
  s.inserted_window_dims = dn[1];
  s.scatter_dims_to_operand_dims = dn[2];
  s.input_batching_dims = dn[3];
  s.scatter_indices_batching_dims = dn[4];
  s.index_vector_dim = idx.rank() - 1;
  DType t = e.inputs[0].aval().dtype;
  return Ops{L.b().Scatter(in[0], in[1], in[2], L.Reducer(Opcode::kAdd, t), s)};
}

// A sort comparator over `types` (one pair of parameters per operand): lexicographic `dir` over
// the first num_keys operands, total order for floats.
ComputationBuilder& Comparator(Lowerer& L, const std::vector<DType>& types, int64_t num_keys, ComparisonDirection dir,
                               bool canonicalize) {
  ComputationBuilder& c = L.NewComputation("compare");
  std::vector<Op> a, b;
  for (size_t k = 0; k < types.size(); ++k) {
    a.push_back(c.Parameter(static_cast<int64_t>(2 * k), Shape(types[k], {}), StrCat("a", k)));
    b.push_back(c.Parameter(static_cast<int64_t>(2 * k + 1), Shape(types[k], {}), StrCat("b", k)));
  }
  auto type_of = [&](int64_t k) { return IsFloating(types[k]) ? ComparisonType::kTotalOrder : ComparisonType::kNone; };
  // Sort, as JAX's _canonicalize_float_for_sort: every NaN compares as +NaN (sorted last) and -0.0
  // as 0.0 (equal, so a stable sort keeps their order); then the total order compares. (top_k
  // compares the raw total order, as XLA's: -NaN is the smallest there.)
  for (int64_t k = 0; canonicalize && k < num_keys; ++k) {
    if (!IsFloating(types[k])) continue;
    Op nan = c.Constant(Array::Full(types[k], {}, std::numeric_limits<double>::quiet_NaN()));
    Op zero = c.Constant(Array::Full(types[k], {}, 0.0));
    for (Op* v : {&a[k], &b[k]}) {
      Op x = *v;
      Op is_nan = c.Compare(x, x, ComparisonDirection::kNe);
      Op is_zero = c.Compare(x, zero, ComparisonDirection::kEq);
      *v = c.Select(is_nan, nan, c.Select(is_zero, zero, x));
    }
  }
  Op result = c.Compare(a[num_keys - 1], b[num_keys - 1], dir, type_of(num_keys - 1));
  for (int64_t k = num_keys - 2; k >= 0; --k) {
    Op lt = c.Compare(a[k], b[k], dir, type_of(k));
    Op eq = c.Compare(a[k], b[k], ComparisonDirection::kEq, type_of(k));
    result = c.Or(lt, c.And(eq, result));
  }
  (void)result;
  return c;
}

Ops Untuple(Lowerer& L, Op x, size_t n) {
  if (!x.valid() || !x.shape().IsTuple()) return Ops{x};
  Ops out;
  for (size_t i = 0; i < n; ++i) out.push_back(L.b().GetTupleElement(x, static_cast<int64_t>(i)));
  return out;
}

StatusOr<Ops> Sort(Lowerer& L, const Eqn& e, Ops in) {
  XS_ASSIGN_OR_RETURN(int64_t dim, GetInt(e.primitive, e.params, "dimension"));
  XS_ASSIGN_OR_RETURN(int64_t num_keys, GetInt(e.primitive, e.params, "num_keys"));
  auto it = e.params.find("is_stable");
  bool stable = it != e.params.end() && std::holds_alternative<bool>(it->second) && std::get<bool>(it->second);
  std::vector<DType> types;
  for (const Atom& a : e.inputs) types.push_back(a.aval().dtype);
  ComputationBuilder& cmp = Comparator(L, types, num_keys, ComparisonDirection::kLt, /*canonicalize=*/true);
  return Untuple(L, L.b().Sort(in, cmp, dim, stable), in.size());
}

// top_k[axis k]: the k largest along `axis` (ties: the lower index first) and their indices.
StatusOr<Ops> TopK(Lowerer& L, const Eqn& e, Ops in) {
  XS_ASSIGN_OR_RETURN(int64_t k, GetInt(e.primitive, e.params, "k"));
  XS_ASSIGN_OR_RETURN(int64_t axis, GetInt(e.primitive, e.params, "axis"));
  const AVal& x = e.inputs[0].aval();
  Op iota = L.b().Iota(Shape(DType::kS32, x.dims), axis);
  ComputationBuilder& cmp = Comparator(L, {x.dtype, DType::kS32}, 1, ComparisonDirection::kGt, /*canonicalize=*/false);
  Ops sorted = Untuple(L, L.b().Sort({in[0], iota}, cmp, axis, /*is_stable=*/true), 2);
  IntList start(x.rank(), 0), limit = x.dims;
  limit[axis] = k;
  return Ops{L.b().Slice(sorted[0], start, limit), L.b().Slice(sorted[1], start, limit)};
}

// A computation taking one tuple of `shapes` and lowering `fn` on its elements; fn returns the
// root's elements (tupled when `tuple_root`).
using BodyFn = std::function<StatusOr<Ops>(Lowerer& sub, const Ops& args)>;
StatusOr<ComputationBuilder*> TupleComputation(Lowerer& L, const std::string& prefix, const std::vector<Shape>& shapes,
                                               bool tuple_root, const BodyFn& fn) {
  ComputationBuilder& c = L.NewComputation(prefix);
  Lowerer sub(L, c);
  Op p = c.Parameter(0, Shape::Tuple(shapes), "p");
  Ops args;
  for (size_t i = 0; i < shapes.size(); ++i) args.push_back(c.GetTupleElement(p, static_cast<int64_t>(i)));
  XS_ASSIGN_OR_RETURN(Ops outs, fn(sub, args));
  XS_RETURN_IF_ERROR(Annotate(c.status(), StrCat("lowering ", prefix, ": ")));
  if (tuple_root) {
    c.Tuple(outs);
  } else if (outs.size() == 1) {
    c.SetRoot(outs[0]);
  }
  return &c;
}

std::vector<Shape> ShapesOf(const std::vector<AVal>& avals) {
  std::vector<Shape> out;
  for (const AVal& a : avals) out.push_back(ShapeOf(a));
  return out;
}

StatusOr<Ops> Cond(Lowerer& L, const Eqn& e, Ops in) {
  auto bit = e.params.find("branches");
  if (bit == e.params.end() || !std::holds_alternative<JaxprList>(bit->second)) {
    return InvalidArgument("cond: missing the 'branches' parameter (a tuple of jaxprs)");
  }
  const JaxprList& branches = std::get<JaxprList>(bit->second);
  Ops ops(in.begin() + 1, in.end());
  std::vector<AVal> in_avals;
  for (size_t i = 1; i < e.inputs.size(); ++i) in_avals.push_back(e.inputs[i].aval());
  std::vector<const ComputationBuilder*> comps;
  for (const auto& j : branches) {
    XS_ASSIGN_OR_RETURN(ComputationBuilder * c,
                        TupleComputation(L, "branch", ShapesOf(in_avals), /*tuple_root=*/true,
                                         [&](Lowerer& sub, const Ops& args) { return sub.Body(*j, args); }));
    comps.push_back(c);
  }
  Op arg = L.b().Tuple(ops);
  Ops args(branches.size(), arg);
  Op r = L.b().Conditional(in[0], args, comps);
  Ops out;
  for (size_t i = 0; i < e.outputs.size(); ++i) out.push_back(L.b().GetTupleElement(r, static_cast<int64_t>(i)));
  return out;
}

StatusOr<Ops> While(Lowerer& L, const Eqn& e, Ops in) {
  XS_ASSIGN_OR_RETURN(auto cond, GetJaxpr(e.primitive, e.params, "cond_jaxpr"));
  XS_ASSIGN_OR_RETURN(auto body, GetJaxpr(e.primitive, e.params, "body_jaxpr"));
  XS_ASSIGN_OR_RETURN(int64_t cn, GetInt(e.primitive, e.params, "cond_nconsts"));
  XS_ASSIGN_OR_RETURN(int64_t bn, GetInt(e.primitive, e.params, "body_nconsts"));
  std::vector<AVal> avals;
  for (const Atom& a : e.inputs) avals.push_back(a.aval());
  std::vector<Shape> shapes = ShapesOf(avals);
  size_t n = in.size();
  XS_ASSIGN_OR_RETURN(ComputationBuilder * c,
                      TupleComputation(L, "while_cond", shapes, false, [&](Lowerer& sub, const Ops& a) {
                        Ops args(a.begin(), a.begin() + cn);
                        args.insert(args.end(), a.begin() + cn + bn, a.end());
                        return sub.Body(*cond, args);
                      }));
  XS_ASSIGN_OR_RETURN(ComputationBuilder * b,
                      TupleComputation(L, "while_body", shapes, true, [&](Lowerer& sub, const Ops& a) -> StatusOr<Ops> {
                        Ops args(a.begin() + cn, a.end());
                        XS_ASSIGN_OR_RETURN(Ops carry, sub.Body(*body, args));
                        Ops next(a.begin(), a.begin() + cn + bn);
                        next.insert(next.end(), carry.begin(), carry.end());
                        return next;
                      }));
  Op r = L.b().While(*c, *b, L.b().Tuple(in));
  Ops out;
  for (size_t i = cn + bn; i < n; ++i) out.push_back(L.b().GetTupleElement(r, static_cast<int64_t>(i)));
  return out;
}

// scan as JAX lowers it: a while over (i, consts, carry, xs, ys) whose body slices x_i out of
// each xs (index length - 1 - i when reverse), runs the body and writes y_i into each ys.
StatusOr<Ops> Scan(Lowerer& L, const Eqn& e, Ops in) {
  XS_ASSIGN_OR_RETURN(auto body, GetJaxpr(e.primitive, e.params, "jaxpr"));
  XS_ASSIGN_OR_RETURN(int64_t length, GetInt(e.primitive, e.params, "length"));
  XS_ASSIGN_OR_RETURN(int64_t nc, GetInt(e.primitive, e.params, "num_consts"));
  XS_ASSIGN_OR_RETURN(int64_t ncar, GetInt(e.primitive, e.params, "num_carry"));
  auto rit = e.params.find("reverse");
  bool reverse = rit != e.params.end() && std::holds_alternative<bool>(rit->second) && std::get<bool>(rit->second);
  int64_t nx = static_cast<int64_t>(in.size()) - nc - ncar;
  int64_t ny = static_cast<int64_t>(e.outputs.size()) - ncar;
  std::vector<Shape> shapes = {Shape(DType::kS32, {})};
  Ops init = {L.b().Constant(Array::Full(DType::kS32, {}, 0))};
  for (size_t i = 0; i < in.size(); ++i) {
    shapes.push_back(ShapeOf(e.inputs[i].aval()));
    init.push_back(in[i]);
  }
  for (int64_t k = 0; k < ny; ++k) {
    const AVal& y = e.outputs[ncar + k].aval;
    shapes.push_back(ShapeOf(y));
    init.push_back(L.Full(y.dtype, 0, y.dims));
  }
  XS_ASSIGN_OR_RETURN(ComputationBuilder * c,
                      TupleComputation(L, "scan_cond", shapes, false, [&](Lowerer& sub, const Ops& a) {
                        Op n = sub.b().Constant(Array::Full(DType::kS32, {}, static_cast<double>(length)));
                        return StatusOr<Ops>(Ops{sub.b().Compare(a[0], n, ComparisonDirection::kLt)});
                      }));
  XS_ASSIGN_OR_RETURN(
      ComputationBuilder * b,
      TupleComputation(L, "scan_body", shapes, true, [&](Lowerer& sub, const Ops& a) -> StatusOr<Ops> {
        ComputationBuilder& sb = sub.b();
        Op i = a[0];
        Op at = reverse ? sb.Sub(sb.Constant(Array::Full(DType::kS32, {}, static_cast<double>(length - 1))), i) : i;
        Op zero = sb.Constant(Array::Full(DType::kS32, {}, 0));
        Ops args(a.begin() + 1, a.begin() + 1 + nc + ncar);
        for (int64_t k = 0; k < nx; ++k) {
          const AVal& xs = e.inputs[nc + ncar + k].aval();
          Ops start(xs.rank(), zero);
          start[0] = at;
          IntList sizes = xs.dims;
          sizes[0] = 1;
          Op slice = sb.DynamicSlice(a[1 + nc + ncar + k], start, sizes);
          args.push_back(sb.Reshape(slice, IntList(xs.dims.begin() + 1, xs.dims.end())));
        }
        XS_ASSIGN_OR_RETURN(Ops outs, sub.Body(*body, args));
        Ops next = {sb.Add(i, sb.Constant(Array::Full(DType::kS32, {}, 1)))};
        next.insert(next.end(), a.begin() + 1, a.begin() + 1 + nc);
        next.insert(next.end(), outs.begin(), outs.begin() + ncar);
        next.insert(next.end(), a.begin() + 1 + nc + ncar, a.begin() + 1 + nc + ncar + nx);
        for (int64_t k = 0; k < ny; ++k) {
          const AVal& ys = e.outputs[ncar + k].aval;
          Ops start(ys.rank(), zero);
          start[0] = at;
          IntList one = ys.dims;
          one[0] = 1;
          Op y = sb.Reshape(outs[ncar + k], one);
          next.push_back(sb.DynamicUpdateSlice(a[1 + nc + ncar + nx + k], y, start));
        }
        return next;
      }));
  Op r = L.b().While(*c, *b, L.b().Tuple(init));
  Ops out;
  for (int64_t k = 0; k < ncar; ++k) out.push_back(L.b().GetTupleElement(r, 1 + nc + k));
  for (int64_t k = 0; k < ny; ++k) out.push_back(L.b().GetTupleElement(r, 1 + nc + ncar + nx + k));
  return out;
}

}  // namespace

void AddExtraLowerRules(std::map<std::string, LowerRule>& r) {
  r["square"] = Square;
  r["log1p"] = Unary(Opcode::kLog1p);
  r["expm1"] = Unary(Opcode::kExpm1);
  r["erf"] = Unary(Opcode::kErf);
  r["erfc"] = Erfc;
  r["is_finite"] = Unary(Opcode::kIsFinite);
  r["cumsum"] = CumulativeRule(Opcode::kAdd);
  r["cumprod"] = CumulativeRule(Opcode::kMultiply);
  r["cummax"] = CumulativeRule(Opcode::kMaximum);
  r["cummin"] = CumulativeRule(Opcode::kMinimum);
  r["gather"] = Gather;
  r["scatter-add"] = ScatterAdd;
  r["sort"] = Sort;
  r["top_k"] = TopK;
  r["cond"] = Cond;
  r["while"] = While;
  r["scan"] = Scan;
}

}  // namespace xs::fe::internal
