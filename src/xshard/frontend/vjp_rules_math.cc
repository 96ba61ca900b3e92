// VJP rules of primitives_extra.cc's differentiable primitives: square, log1p, expm1, erf, erfc
// (JAX's JVPs, jax/_src/lax/lax.py and special.py), reduce_prod (the product of the other
// elements, from exclusive prefix and suffix products), the cumulative reductions (cumsum
// transposes to the reversed cumsum; cumprod and cummax / cummin as below), gather (scatter-add
// of the cotangent, JAX's _gather_transpose_rule), sort (the cotangent sorted back by the
// permutation) and top_k (the cotangent put back at the chosen indices).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "xshard/frontend/autodiff.h"
#include "xshard/frontend/autodiff_internal.h"

namespace xs::fe::ad {
namespace {

DType DTypeOfAtom(const Atom& a) { return a.aval().dtype; }

AVal NotWeak(AVal a) {
  a.weak_type = false;
  return a;
}

// A unary rule whose JVP is mul(g, jac), jac computed from (x, ans) in the forward part.
using MathJacFn = std::function<StatusOr<Atom>(Emitter& e, const Atom& x, const Atom& ans)>;
VjpRule TimesJacobian(MathJacFn jac) {
  return {[jac](Emitter& e, RuleInput& r) -> StatusOr<Backward> {
    XS_ASSIGN_OR_RETURN(Atom j, jac(e, r.in[0], r.out[0]));
    return Backward([j](Emitter& e, const std::vector<Ct>& ct, const CtWriter& write) {
      XS_ASSIGN_OR_RETURN(Atom g, e.Op("mul", {*ct[0], j}));
      return write(0, g);
    });
  }};
}

// c * exp(-x^2): the derivative of erf (c = 2 / sqrt(pi)) and erfc (c = -2 / sqrt(pi)).
StatusOr<Atom> ErfJacobian(Emitter& e, const Atom& x, double c) {
  XS_ASSIGN_OR_RETURN(Atom sq, e.Op("square", {x}));
  XS_ASSIGN_OR_RETURN(Atom n, e.Op("neg", {sq}));
  XS_ASSIGN_OR_RETURN(Atom ex, e.Op("exp", {n}));
  return e.Op("mul", {Emitter::Lit(c, DTypeOfAtom(x)), ex});
}

StatusOr<Atom> Cum(Emitter& e, const char* prim, const Atom& x, int64_t axis, bool reverse) {
  return e.Op(prim, {x}, {{"axis", axis}, {"reverse", reverse}});
}

Params SliceParams(const AVal& a, int64_t axis, int64_t lo, int64_t hi) {
  IntList start(a.rank(), 0), limit = a.dims;
  start[axis] = lo;
  limit[axis] = hi;
  return {{"start_indices", start}, {"limit_indices", limit}, {"strides", Param{}}};
}

// Along the last axis of `x` (n elements): the product of all other elements of each row, as
// exclusive prefix products times exclusive suffix products (exact with zeros).
StatusOr<Atom> ProductOfOthers(Emitter& e, const Atom& x) {
  const AVal a = x.aval();
  int64_t last = a.rank() - 1, n = a.dims[last];
  AVal one_t = a;
  one_t.dims[last] = 1;
  one_t.weak_type = false;
  XS_ASSIGN_OR_RETURN(Atom ones, e.Full(one_t, 1.0));
  if (n == 1) return ones;
  XS_ASSIGN_OR_RETURN(Atom pre, Cum(e, "cumprod", x, last, false));
  XS_ASSIGN_OR_RETURN(Atom suf, Cum(e, "cumprod", x, last, true));
  XS_ASSIGN_OR_RETURN(Atom pre_cut, e.Op("slice", {pre}, SliceParams(a, last, 0, n - 1)));
  XS_ASSIGN_OR_RETURN(Atom suf_cut, e.Op("slice", {suf}, SliceParams(a, last, 1, n)));
  XS_ASSIGN_OR_RETURN(Atom left, e.Op("concatenate", {ones, pre_cut}, {{"dimension", last}}));
  XS_ASSIGN_OR_RETURN(Atom right, e.Op("concatenate", {suf_cut, ones}, {{"dimension", last}}));
  return e.Op("mul", {left, right});
}

// reduce_prod[axes]: d/dx_i = prod of the other reduced elements; the reduced axes are moved
// last and flattened to compute it.
VjpRule ReduceProd() {
  return {[](Emitter& e, RuleInput& r) -> StatusOr<Backward> {
    XS_ASSIGN_OR_RETURN(IntList axes, GetInts(*r.eqn, "axes"));
    const AVal x = InAval(r, 0);
    IntList perm, kept, kept_dims, moved_dims;
    for (int64_t i = 0; i < x.rank(); ++i) {
      if (std::find(axes.begin(), axes.end(), i) == axes.end()) {
        perm.push_back(i);
        kept.push_back(i);
        kept_dims.push_back(x.dims[i]);
      }
    }
    int64_t n = 1;
    for (int64_t a : axes) {
      perm.push_back(a);
      moved_dims.push_back(x.dims[a]);
      n *= x.dims[a];
    }
    Atom t = r.in[0];
    IntList identity(x.rank());
    std::iota(identity.begin(), identity.end(), 0);
    if (perm != identity) {
      XS_ASSIGN_OR_RETURN(t, e.Op("transpose", {t}, {{"permutation", perm}}));
    }
    IntList flat = kept_dims;
    flat.push_back(n);
    XS_ASSIGN_OR_RETURN(t, e.Op("reshape", {t}, {{"new_sizes", flat}, {"dimensions", Param{}}}));
    XS_ASSIGN_OR_RETURN(Atom others, ProductOfOthers(e, t));
    IntList transposed = kept_dims;
    transposed.insert(transposed.end(), moved_dims.begin(), moved_dims.end());
    XS_ASSIGN_OR_RETURN(others, e.Op("reshape", {others}, {{"new_sizes", transposed}, {"dimensions", Param{}}}));
    if (perm != identity) {
      IntList inverse(perm.size());
      for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = static_cast<int64_t>(i);
      XS_ASSIGN_OR_RETURN(others, e.Op("transpose", {others}, {{"permutation", inverse}}));
    }
    return Backward([=](Emitter& e, const std::vector<Ct>& ct, const CtWriter& write) {
      XS_ASSIGN_OR_RETURN(
          Atom b, e.Op("broadcast_in_dim", {*ct[0]}, {{"shape", IntList(x.dims)}, {"broadcast_dimensions", kept}}));
      XS_ASSIGN_OR_RETURN(Atom g, e.Op("mul", {b, others}));
      return write(0, g);
    });
  }};
}

StatusOr<std::pair<int64_t, bool>> AxisReverse(const Eqn& eqn) {
  XS_ASSIGN_OR_RETURN(int64_t axis, GetInt(eqn, "axis"));
  auto it = eqn.params.find("reverse");
  bool reverse = it != eqn.params.end() && std::holds_alternative<bool>(it->second) && std::get<bool>(it->second);
  return std::make_pair(axis, reverse);
}

// cumsum's transpose: the cumsum in the other direction.
VjpRule CumsumRule() {
  return {[](Emitter&, RuleInput& r) -> StatusOr<Backward> {
    XS_ASSIGN_OR_RETURN(auto ar, AxisReverse(*r.eqn));
    return Backward([ar](Emitter& e, const std::vector<Ct>& ct, const CtWriter& write) {
      XS_ASSIGN_OR_RETURN(Atom g, Cum(e, "cumsum", *ct[0], ar.first, !ar.second));
      return write(0, g);
    });
  }};
}

// cumprod (forward; reverse mirrors it): d out_j / d x_i = prod_{k < i} x_k * prod_{i < k <= j} x_k
// for i <= j, exact with zeros. The second factor, Q[j, i], is the cumprod over k of
// select(k > i, x_k, 1), built over a new last dim holding i; x_i's cotangent is
// prod_{k < i} x_k * sum_{j >= i} ct_j Q[j, i].
VjpRule CumprodRule() {
  return {[](Emitter& e, RuleInput& r) -> StatusOr<Backward> {
    XS_ASSIGN_OR_RETURN(auto ar, AxisReverse(*r.eqn));
    auto [axis, reverse] = ar;
    const AVal x = NotWeak(InAval(r, 0));
    int64_t n = x.dims[axis], rank = x.rank();
    IntList big = x.dims;
    big.push_back(n);
    IntList lead(rank);
    std::iota(lead.begin(), lead.end(), 0);
    Params k_iota = {{"dtype", DType::kS32}, {"shape", big}, {"dimension", axis}};
    Params i_iota = {{"dtype", DType::kS32}, {"shape", big}, {"dimension", rank}};
    XS_ASSIGN_OR_RETURN(Atom k, e.Op("iota", {}, k_iota));
    XS_ASSIGN_OR_RETURN(Atom i, e.Op("iota", {}, i_iota));
    XS_ASSIGN_OR_RETURN(Atom xb, e.Op("broadcast_in_dim", {r.in[0]}, {{"shape", big}, {"broadcast_dimensions", lead}}));
    AVal big_t{x.dtype, big, false};
    XS_ASSIGN_OR_RETURN(Atom ones, e.Full(big_t, 1.0));
    XS_ASSIGN_OR_RETURN(Atom after, e.Op(reverse ? "lt" : "gt", {k, i}));
    XS_ASSIGN_OR_RETURN(Atom t, e.Op("select_n", {after, ones, xb}));
    XS_ASSIGN_OR_RETURN(Atom q, Cum(e, "cumprod", t, axis, reverse));
    XS_ASSIGN_OR_RETURN(Atom reach, e.Op(reverse ? "le" : "ge", {k, i}));
    // prod_{k < i} x_k (prod_{k > i} when reverse): the exclusive cumprod.
    Atom before;
    AVal one_t = x;
    one_t.dims[axis] = 1;
    XS_ASSIGN_OR_RETURN(Atom one, e.Full(one_t, 1.0));
    if (n == 1) {
      before = one;
    } else {
      XS_ASSIGN_OR_RETURN(Atom c, Cum(e, "cumprod", r.in[0], axis, reverse));
      if (reverse) {
        XS_ASSIGN_OR_RETURN(Atom cut, e.Op("slice", {c}, SliceParams(x, axis, 1, n)));
        XS_ASSIGN_OR_RETURN(before, e.Op("concatenate", {cut, one}, {{"dimension", axis}}));
      } else {
        XS_ASSIGN_OR_RETURN(Atom cut, e.Op("slice", {c}, SliceParams(x, axis, 0, n - 1)));
        XS_ASSIGN_OR_RETURN(before, e.Op("concatenate", {one, cut}, {{"dimension", axis}}));
      }
    }
    return Backward([=](Emitter& e, const std::vector<Ct>& ct, const CtWriter& write) -> Status {
      XS_ASSIGN_OR_RETURN(Atom ct_b,
                          e.Op("broadcast_in_dim", {*ct[0]}, {{"shape", big}, {"broadcast_dimensions", lead}}));
      XS_ASSIGN_OR_RETURN(Atom m, e.Op("mul", {ct_b, q}));
      XS_ASSIGN_OR_RETURN(Atom zeros, e.Zeros(big_t));
      XS_ASSIGN_OR_RETURN(Atom kept, e.Op("select_n", {reach, zeros, m}));
      XS_ASSIGN_OR_RETURN(Atom s, e.Op("reduce_sum", {kept}, {{"axes", IntList{axis}}}));
      IntList perm(rank);
      for (int64_t a = 0, b = 0; a < rank; ++a) perm[a] = a == axis ? rank - 1 : b++;
      if (axis != rank - 1) {
        XS_ASSIGN_OR_RETURN(s, e.Op("transpose", {s}, {{"permutation", perm}}));
      }
      XS_ASSIGN_OR_RETURN(Atom g, e.Op("mul", {before, s}));
      return write(0, g);
    });
  }};
}

// cummax / cummin: output j is input idx_j, the last position <= j (>= j when reverse) holding
// the running extreme: idx = cummax(select(x == ans, iota, -1)) (cummin of select(.., iota, n)
// when reverse). Each ct_j goes to x[idx_j], through a one-hot over a new last dim.
VjpRule CumExtremeRule() {
  return {[](Emitter& e, RuleInput& r) -> StatusOr<Backward> {
    XS_ASSIGN_OR_RETURN(auto ar, AxisReverse(*r.eqn));
    auto [axis, reverse] = ar;
    const AVal x = InAval(r, 0);
    int64_t n = x.dims[axis], rank = x.rank();
    AVal it{DType::kS32, x.dims, false};
    XS_ASSIGN_OR_RETURN(Atom iota,
                        e.Op("iota", {}, {{"dtype", DType::kS32}, {"shape", IntList(x.dims)}, {"dimension", axis}}));
    XS_ASSIGN_OR_RETURN(Atom hit, e.Op("eq", {r.in[0], r.out[0]}));
    XS_ASSIGN_OR_RETURN(Atom none, e.Full(it, reverse ? static_cast<double>(n) : -1.0));
    XS_ASSIGN_OR_RETURN(Atom cand, e.Op("select_n", {hit, none, iota}));
    XS_ASSIGN_OR_RETURN(Atom idx, Cum(e, reverse ? "cummin" : "cummax", cand, axis, reverse));
    IntList big = x.dims;
    big.push_back(n);
    IntList lead(rank);
    std::iota(lead.begin(), lead.end(), 0);
    XS_ASSIGN_OR_RETURN(Atom idx_b, e.Op("broadcast_in_dim", {idx}, {{"shape", big}, {"broadcast_dimensions", lead}}));
    XS_ASSIGN_OR_RETURN(Atom pos, e.Op("iota", {}, {{"dtype", DType::kS32}, {"shape", big}, {"dimension", rank}}));
    XS_ASSIGN_OR_RETURN(Atom onehot_b, e.Op("eq", {idx_b, pos}));
    XS_ASSIGN_OR_RETURN(Atom onehot,
                        e.Op("convert_element_type", {onehot_b}, {{"new_dtype", x.dtype}, {"weak_type", false}}));
    return Backward([=](Emitter& e, const std::vector<Ct>& ct, const CtWriter& write) -> Status {
      XS_ASSIGN_OR_RETURN(Atom ct_b,
                          e.Op("broadcast_in_dim", {*ct[0]}, {{"shape", big}, {"broadcast_dimensions", lead}}));
      XS_ASSIGN_OR_RETURN(Atom m, e.Op("mul", {ct_b, onehot}));
      XS_ASSIGN_OR_RETURN(Atom s, e.Op("reduce_sum", {m}, {{"axes", IntList{axis}}}));
      // s has x's dims without `axis`, then the position dim last: move it back to `axis`.
      IntList perm(rank);
      for (int64_t i = 0, k = 0; i < rank; ++i) perm[i] = i == axis ? rank - 1 : k++;
      Atom g = s;
      bool identity = true;
      for (int64_t i = 0; i < rank; ++i) identity = identity && perm[i] == i;
      if (!identity) {
        XS_ASSIGN_OR_RETURN(g, e.Op("transpose", {s}, {{"permutation", perm}}));
      }
      return write(0, g);
    });
  }};
}

// gather's transpose: scatter-add of the cotangent into zeros (JAX's _gather_transpose_rule).
VjpRule GatherRule() {
  return {[](Emitter&, RuleInput& r) -> StatusOr<Backward> {
    XS_ASSIGN_OR_RETURN(IntLists dn, GetIntLists(*r.eqn, "dimension_numbers"));
    AVal operand = InAval(r, 0);
    operand.weak_type = false;
    Atom indices = r.in[1];
    Params p;
    p["dimension_numbers"] = dn;
    for (const char* k : {"indices_are_sorted", "unique_indices", "mode"}) {
      auto it = r.eqn->params.find(k);
      if (it != r.eqn->params.end()) p[k] = it->second;
    }
    p["update_consts"] = IntList{};
    p["update_jaxpr"] = std::monostate{};
    return Backward([=](Emitter& e, const std::vector<Ct>& ct, const CtWriter& write) {
      XS_ASSIGN_OR_RETURN(Atom zeros, e.Zeros(operand));
      XS_ASSIGN_OR_RETURN(Atom g, e.Op("scatter-add", {zeros, indices, *ct[0]}, p));
      return write(0, g);
    });
  }};
}

// scatter-add's transpose (JAX's _scatter_add_transpose_rule): the operand's cotangent is ct,
// the updates' the gather of ct at the same indices (the window sizes from the updates; rows
// out of bounds, which the scatter dropped, get 0).
VjpRule ScatterAddRule() {
  return {[](Emitter&, RuleInput& r) -> StatusOr<Backward> {
    XS_ASSIGN_OR_RETURN(IntLists dn, GetIntLists(*r.eqn, "dimension_numbers"));
    if (dn.size() != 5) return InvalidArgument("scatter-add: dimension_numbers needs 5 lists");
    const AVal operand = InAval(r, 0), updates = InAval(r, 2);
    IntList slice_sizes;
    size_t pos = 0;
    for (int64_t i = 0; i < operand.rank(); ++i) {
      bool gone = std::count(dn[1].begin(), dn[1].end(), i) || std::count(dn[3].begin(), dn[3].end(), i);
      if (gone) {
        slice_sizes.push_back(1);
      } else {
        if (pos >= dn[0].size()) return InvalidArgument("scatter-add: update_window_dims too short");
        slice_sizes.push_back(updates.dims[dn[0][pos++]]);
      }
    }
    Params p = {{"dimension_numbers", dn}, {"slice_sizes", slice_sizes}, {"fill_value", 0.0}};
    for (const char* k : {"indices_are_sorted", "unique_indices", "mode"}) {
      auto it = r.eqn->params.find(k);
      if (it != r.eqn->params.end()) p[k] = it->second;
    }
    Atom indices = r.in[1];
    bool want_operand = r.active[0], want_updates = r.active[2];
    return Backward([=](Emitter& e, const std::vector<Ct>& ct, const CtWriter& write) -> Status {
      if (want_operand) XS_RETURN_IF_ERROR(write(0, *ct[0]));
      if (want_updates) {
        XS_ASSIGN_OR_RETURN(Atom g, e.Op("gather", {*ct[0], indices}, p));
        XS_RETURN_IF_ERROR(write(2, g));
      }
      return OkStatus();
    });
  }};
}

// sort: the primal sort also carries an iota, giving each output's source position; an active
// operand's cotangent is its output cotangent sorted by those positions (the inverse
// permutation).
VjpRule SortRule() {
  return {[](Emitter& e, RuleInput& r) -> StatusOr<Backward> {
            XS_ASSIGN_OR_RETURN(int64_t dim, GetInt(*r.eqn, "dimension"));
            const AVal x = InAval(r, 0);
            XS_ASSIGN_OR_RETURN(
                Atom iota, e.Op("iota", {}, {{"dtype", DType::kS32}, {"shape", IntList(x.dims)}, {"dimension", dim}}));
            std::vector<Atom> in = r.in;
            in.push_back(iota);
            std::vector<AVal> outs;
            for (const Var& v : r.eqn->outputs) outs.push_back(v.aval);
            outs.push_back(AVal{DType::kS32, x.dims, false});
            std::vector<Atom> all = e.Raw("sort", in, outs, r.eqn->params);
            r.out.assign(all.begin(), all.end() - 1);
            Atom perm = all.back();
            std::vector<bool> active = r.active;
            return Backward([=](Emitter& e, const std::vector<Ct>& ct, const CtWriter& write) -> Status {
              for (size_t k = 0; k < active.size(); ++k) {
                if (!active[k] || !ct[k]) continue;
                AVal t = ct[k]->aval();
                std::vector<Atom> back = e.Raw("sort", {perm, *ct[k]}, {AVal{DType::kS32, x.dims, false}, t},
                                               {{"dimension", dim}, {"is_stable", true}, {"num_keys", int64_t{1}}});
                XS_RETURN_IF_ERROR(write(k, back[1]));
              }
              return OkStatus();
            });
          },
          /*emits_primal=*/true};
}

// top_k[axis k]: ct_j goes to x[indices_j] along `axis`, through a one-hot over a new last dim.
VjpRule TopKRule() {
  return {[](Emitter& e, RuleInput& r) -> StatusOr<Backward> {
    XS_ASSIGN_OR_RETURN(int64_t axis, GetInt(*r.eqn, "axis"));
    const AVal x = InAval(r, 0);
    const AVal v = OutAval(r, 0);
    int64_t n = x.dims[axis], rank = x.rank();
    IntList big = v.dims;
    big.push_back(n);
    IntList lead(rank);
    std::iota(lead.begin(), lead.end(), 0);
    XS_ASSIGN_OR_RETURN(Atom idx_b,
                        e.Op("broadcast_in_dim", {r.out[1]}, {{"shape", big}, {"broadcast_dimensions", lead}}));
    XS_ASSIGN_OR_RETURN(Atom pos, e.Op("iota", {}, {{"dtype", DType::kS32}, {"shape", big}, {"dimension", rank}}));
    XS_ASSIGN_OR_RETURN(Atom hit, e.Op("eq", {idx_b, pos}));
    XS_ASSIGN_OR_RETURN(Atom onehot,
                        e.Op("convert_element_type", {hit}, {{"new_dtype", x.dtype}, {"weak_type", false}}));
    return Backward([=](Emitter& e, const std::vector<Ct>& ct, const CtWriter& write) -> Status {
      if (!ct[0]) return OkStatus();
      XS_ASSIGN_OR_RETURN(Atom ct_b,
                          e.Op("broadcast_in_dim", {*ct[0]}, {{"shape", big}, {"broadcast_dimensions", lead}}));
      XS_ASSIGN_OR_RETURN(Atom m, e.Op("mul", {ct_b, onehot}));
      XS_ASSIGN_OR_RETURN(Atom s, e.Op("reduce_sum", {m}, {{"axes", IntList{axis}}}));
      IntList perm(rank);
      for (int64_t i = 0, k = 0; i < rank; ++i) perm[i] = i == axis ? rank - 1 : k++;
      Atom g = s;
      if (axis != rank - 1) {
        XS_ASSIGN_OR_RETURN(g, e.Op("transpose", {s}, {{"permutation", perm}}));
      }
      return write(0, g);
    });
  }};
}

}  // namespace

void AddMathRules(RuleTable& t) {
  // square: mul(g, mul(2, x)).
  t["square"] = TimesJacobian([](Emitter& e, const Atom& x, const Atom&) {
    return e.Op("mul", {Emitter::Lit(2.0, DTypeOfAtom(x)), x});
  });
  // log1p: div(g, add(1, x)), written as mul by the reciprocal.
  t["log1p"] = {[](Emitter& e, RuleInput& r) -> StatusOr<Backward> {
    XS_ASSIGN_OR_RETURN(Atom d, e.Op("add", {r.in[0], Emitter::Lit(1.0, DTypeOfAtom(r.in[0]))}));
    return Backward([d](Emitter& e, const std::vector<Ct>& ct, const CtWriter& write) {
      XS_ASSIGN_OR_RETURN(Atom g, e.Op("div", {*ct[0], d}));
      return write(0, g);
    });
  }};
  // expm1: mul(g, add(ans, 1)).
  t["expm1"] = TimesJacobian([](Emitter& e, const Atom&, const Atom& ans) {
    return e.Op("add", {ans, Emitter::Lit(1.0, DTypeOfAtom(ans))});
  });
  t["erf"] =
      TimesJacobian([](Emitter& e, const Atom& x, const Atom&) { return ErfJacobian(e, x, 2.0 / std::sqrt(M_PI)); });
  t["erfc"] =
      TimesJacobian([](Emitter& e, const Atom& x, const Atom&) { return ErfJacobian(e, x, -2.0 / std::sqrt(M_PI)); });
  t["reduce_prod"] = ReduceProd();
  t["cumsum"] = CumsumRule();
  t["cumprod"] = CumprodRule();
  t["cummax"] = CumExtremeRule();
  t["cummin"] = CumExtremeRule();
  t["gather"] = GatherRule();
  t["scatter-add"] = ScatterAddRule();
  t["sort"] = SortRule();
  t["top_k"] = TopKRule();
}

}  // namespace xs::fe::ad
