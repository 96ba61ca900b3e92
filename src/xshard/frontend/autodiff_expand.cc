// ExpandAutodiffPrimitives (autodiff.h): rewrites add_any, rev and select_and_scatter_add, the
// primitives only autodiff emits, into primitives the front end types and lowers.
#include <cmath>
#include <limits>

#include "xshard/frontend/autodiff.h"
#include "xshard/frontend/autodiff_internal.h"

namespace xs::fe {
namespace {

using ad::Emitter;

StatusOr<Atom> SelectAndScatterAdd(Emitter& e, const Eqn& eqn, const Atom& source,
                                   const Atom& operand) {
  XS_ASSIGN_OR_RETURN(IntList window, ad::GetInts(eqn, "window_dimensions"));
  XS_ASSIGN_OR_RETURN(IntList strides, ad::GetInts(eqn, "window_strides"));
  XS_ASSIGN_OR_RETURN(IntLists padding, ad::GetIntLists(eqn, "padding"));
  const AVal& in = operand.aval();
  const AVal& out = source.aval();
  DType t = in.dtype;
  size_t rank = window.size();
  if (strides.size() != rank || padding.size() != rank || in.rank() != static_cast<int64_t>(rank)) {
    return InvalidArgument(kSelectAndScatterAdd, ": window params of rank ", rank,
                           " for an operand ", in.ToString());
  }
  // The window maxima, and the operand padded with -inf as the windows see it.
  XS_ASSIGN_OR_RETURN(Atom maxima, e.Op("reduce_window_max", {operand},
                                        {{"window_dimensions", window},
                                         {"window_strides", strides},
                                         {"padding", padding}}));
  Atom padded = operand;
  IntLists pad_cfg;
  bool any_pad = false;
  for (size_t i = 0; i < rank; ++i) {
    pad_cfg.push_back({padding[i][0], padding[i][1], 0});
    any_pad = any_pad || padding[i][0] != 0 || padding[i][1] != 0;
  }
  if (any_pad) {
    XS_ASSIGN_OR_RETURN(padded, e.Op("pad", {operand, Emitter::Lit(
                                                 -std::numeric_limits<double>::infinity(), t)},
                                     {{"padding_config", pad_cfg}}));
  }
  AVal out_t = out;
  out_t.weak_type = false;
  XS_ASSIGN_OR_RETURN(Atom zeros, e.Zeros(out_t));
  int64_t count = 1;
  for (int64_t w : window) count *= w;
  Atom taken, acc;
  bool first = true;
  for (int64_t k = 0; k < count; ++k) {
    IntList off(rank);
    for (int64_t i = static_cast<int64_t>(rank) - 1, r = k; i >= 0; --i) {
      off[i] = r % window[i];
      r /= window[i];
    }
    IntList start(rank), limit(rank);
    IntLists back;
    for (size_t i = 0; i < rank; ++i) {
      start[i] = off[i];
      limit[i] = out.dims[i] == 0 ? off[i] : off[i] + (out.dims[i] - 1) * strides[i] + 1;
      int64_t lo = off[i] - padding[i][0];
      int64_t span = out.dims[i] == 0 ? 0 : (out.dims[i] - 1) * strides[i] + 1;
      back.push_back({lo, in.dims[i] - lo - span, strides[i] - 1});
    }
    XS_ASSIGN_OR_RETURN(Atom xk, e.Op("slice", {padded}, {{"start_indices", start},
                                                         {"limit_indices", limit},
                                                         {"strides", strides}}));
    XS_ASSIGN_OR_RETURN(Atom is_max, e.Op("eq", {xk, maxima}));
    Atom sel = is_max;
    if (!first) {
      XS_ASSIGN_OR_RETURN(Atom free, e.Op("not", {taken}));
      XS_ASSIGN_OR_RETURN(sel, e.Op("and", {is_max, free}));
      XS_ASSIGN_OR_RETURN(taken, e.Op("or", {taken, sel}));
    } else {
      taken = sel;
    }
    XS_ASSIGN_OR_RETURN(Atom picked, e.Op("select_n", {sel, zeros, source}));
    XS_ASSIGN_OR_RETURN(Atom scattered, e.Op("pad", {picked, Emitter::Lit(0.0, t)},
                                             {{"padding_config", back}}));
    if (first) {
      acc = scattered;
    } else {
      XS_ASSIGN_OR_RETURN(acc, e.Op("add", {acc, scattered}));
    }
    first = false;
  }
  if (first) return e.Zeros(AVal{t, in.dims});
  return acc;
}

// rev along each of `dims`: a dot_general with the anti-identity J[i, j] = (i + j == n - 1),
// which moves the dim last, then a transpose putting it back.
StatusOr<Atom> Rev(Emitter& e, Atom x, const IntList& dims) {
  for (int64_t d : dims) {
    const AVal xt = x.aval();
    int64_t n = xt.dims[d], r = xt.rank();
    if (n <= 1) continue;
    Params iota = {{"dtype", DType::kS32}, {"shape", IntList{n, n}}, {"dimension", int64_t{0}}};
    XS_ASSIGN_OR_RETURN(Atom i, e.Op("iota", {}, iota));
    iota["dimension"] = int64_t{1};
    XS_ASSIGN_OR_RETURN(Atom j, e.Op("iota", {}, iota));
    XS_ASSIGN_OR_RETURN(Atom sum, e.Op("add", {i, j}));
    XS_ASSIGN_OR_RETURN(Atom anti, e.Op("eq", {sum, Emitter::Lit(static_cast<double>(n - 1),
                                                                 DType::kS32)}));
    XS_ASSIGN_OR_RETURN(Atom m, e.Op("convert_element_type", {anti},
                                     {{"new_dtype", xt.dtype}, {"weak_type", false}}));
    XS_ASSIGN_OR_RETURN(x, e.Op("dot_general", {x, m},
                                {{"dimension_numbers", IntLists{{d}, {0}, {}, {}}}}));
    if (d != r - 1) {
      IntList perm;
      for (int64_t k = 0; k < r; ++k) perm.push_back(k < d ? k : k == d ? r - 1 : k - 1);
      XS_ASSIGN_OR_RETURN(x, e.Op("transpose", {x}, {{"permutation", perm}}));
    }
  }
  return x;
}

StatusOr<Jaxpr> Expand(const Jaxpr& j);

StatusOr<Params> ExpandParams(const Params& params) {
  Params out = params;
  for (auto& [name, p] : out) {
    if (auto* sub = std::get_if<std::shared_ptr<const Jaxpr>>(&p); sub && *sub) {
      XS_ASSIGN_OR_RETURN(Jaxpr x, Expand(**sub));
      p = std::shared_ptr<const Jaxpr>(std::make_shared<Jaxpr>(std::move(x)));
    } else if (auto* subs = std::get_if<JaxprList>(&p)) {
      JaxprList expanded;
      for (const auto& s : *subs) {
        if (!s) return InvalidArgument("a null jaxpr in a jaxpr tuple parameter");
        XS_ASSIGN_OR_RETURN(Jaxpr x, Expand(*s));
        expanded.push_back(std::make_shared<const Jaxpr>(std::move(x)));
      }
      p = std::move(expanded);
    }
  }
  return out;
}

StatusOr<Jaxpr> Expand(const Jaxpr& j) {
  Jaxpr out;
  Emitter e(&out);
  std::map<int64_t, Atom> env;
  for (size_t i = 0; i < j.constvars.size(); ++i) {
    out.constvars.push_back(e.NewVar(j.constvars[i].aval));
    out.consts.push_back(j.consts[i]);
    env[j.constvars[i].id] = Atom::OfVar(out.constvars.back());
  }
  for (const Var& v : j.invars) {
    out.invars.push_back(e.NewVar(v.aval));
    env[v.id] = Atom::OfVar(out.invars.back());
  }
  auto map_atom = [&](const Atom& a) { return a.is_literal() ? a : env.at(a.var.id); };
  for (const Eqn& eqn : j.eqns) {
    std::vector<Atom> in;
    for (const Atom& a : eqn.inputs) in.push_back(map_atom(a));
    std::vector<Atom> res;
    if (eqn.primitive == kAddAny) {
      XS_ASSIGN_OR_RETURN(Atom sum, e.Op("add", in));
      res = {sum};
    } else if (eqn.primitive == kRev) {
      XS_ASSIGN_OR_RETURN(IntList dims, ad::GetInts(eqn, "dimensions"));
      XS_ASSIGN_OR_RETURN(Atom r, Rev(e, in[0], dims));
      res = {r};
    } else if (eqn.primitive == kSelectAndScatterAdd) {
      if (in.size() != 2) {
        return InvalidArgument(kSelectAndScatterAdd, " takes (source, operand), got ", in.size(),
                               " inputs");
      }
      XS_ASSIGN_OR_RETURN(Atom r, SelectAndScatterAdd(e, eqn, in[0], in[1]));
      res = {r};
    } else {
      std::vector<AVal> outs;
      for (const Var& v : eqn.outputs) outs.push_back(v.aval);
      XS_ASSIGN_OR_RETURN(Params params, ExpandParams(eqn.params));
      res = e.Raw(eqn.primitive, in, outs, params);
    }
    for (size_t k = 0; k < eqn.outputs.size(); ++k) env[eqn.outputs[k].id] = res[k];
  }
  for (const Atom& a : j.outvars) out.outvars.push_back(map_atom(a));
  return out;
}

}  // namespace

StatusOr<Jaxpr> ExpandAutodiffPrimitives(const Jaxpr& j) { return Expand(j); }

}  // namespace xs::fe
