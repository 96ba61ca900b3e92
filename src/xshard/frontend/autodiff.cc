// The reverse-mode engine: activity analysis, the forward part (primal equations and the
// residuals each rule asks for), the backward part (rules' cotangent equations in reverse order,
// accumulated with add_any), and the VjpJaxpr / GradJaxpr entry points.
#include "xshard/frontend/autodiff.h"

#include <algorithm>
#include <set>
#include <utility>

#include "xshard/base/strings.h"
#include "xshard/frontend/autodiff_internal.h"

namespace xs::fe {
namespace ad {

StatusOr<Atom> Emitter::Op(const std::string& primitive, std::vector<Atom> inputs,
                           Params params) {
  return builder_.Bind1(primitive, std::move(inputs), std::move(params));
}

std::vector<Atom> Emitter::Raw(const std::string& primitive, std::vector<Atom> inputs,
                               const std::vector<AVal>& outs, Params params) {
  Eqn eqn;
  eqn.primitive = primitive;
  eqn.inputs = std::move(inputs);
  eqn.params = std::move(params);
  std::vector<Atom> result;
  for (const AVal& aval : outs) {
    eqn.outputs.push_back(NewVar(aval));
    result.push_back(Atom::OfVar(eqn.outputs.back()));
  }
  out_->eqns.push_back(std::move(eqn));
  return result;
}

Atom Emitter::Lit(double value, DType dtype) {
  return Atom::OfLiteral(Array::Full(dtype, {}, value), /*weak_type=*/false);
}

StatusOr<Atom> Emitter::Full(const AVal& aval, double value) {
  if (aval.rank() == 0) return Lit(value, aval.dtype);
  return Op("broadcast_in_dim", {Lit(value, aval.dtype)},
            {{"shape", IntList(aval.dims)}, {"broadcast_dimensions", IntList{}}});
}

Atom Emitter::AddAny(const Atom& a, const Atom& b) {
  AVal out = a.aval();
  out.weak_type = false;
  return Raw(kAddAny, {a, b}, {out})[0];
}

StatusOr<Atom> Emitter::Unbroadcast(const AVal& target, const Atom& t) {
  const AVal& have = t.aval();
  if (have.dims == target.dims) return t;
  IntList axes;
  if (target.rank() == 0) {
    for (int64_t i = 0; i < have.rank(); ++i) axes.push_back(i);
    return Op("reduce_sum", {t}, {{"axes", axes}});
  }
  if (target.rank() != have.rank()) {
    return Internal("autodiff: cannot unbroadcast a cotangent of type ", have.ToString(), " to ",
                    target.ToString());
  }
  for (int64_t i = 0; i < have.rank(); ++i) {
    if (have.dims[i] != target.dims[i]) axes.push_back(i);
  }
  XS_ASSIGN_OR_RETURN(Atom sum, Op("reduce_sum", {t}, {{"axes", axes}}));
  return Op("reshape", {sum}, {{"new_sizes", IntList(target.dims)}, {"dimensions", Param{}}});
}

StatusOr<std::vector<Atom>> Emitter::Inline(const Jaxpr& j, const std::vector<Atom>& args) {
  if (args.size() != j.invars.size()) {
    return Internal("autodiff: inlining a jaxpr of ", j.invars.size(), " inputs with ",
                    args.size(), " arguments");
  }
  std::map<int64_t, Atom> env;
  for (size_t i = 0; i < j.constvars.size(); ++i) {
    Var v = NewVar(j.constvars[i].aval);
    out_->constvars.push_back(v);
    out_->consts.push_back(j.consts[i]);
    env[j.constvars[i].id] = Atom::OfVar(v);
  }
  for (size_t i = 0; i < args.size(); ++i) env[j.invars[i].id] = args[i];
  auto map_atom = [&](const Atom& a) { return a.is_literal() ? a : env.at(a.var.id); };
  for (const Eqn& eqn : j.eqns) {
    std::vector<Atom> in;
    for (const Atom& a : eqn.inputs) in.push_back(map_atom(a));
    std::vector<AVal> outs;
    for (const Var& v : eqn.outputs) outs.push_back(v.aval);
    std::vector<Atom> res = Raw(eqn.primitive, std::move(in), outs, eqn.params);
    for (size_t k = 0; k < res.size(); ++k) env[eqn.outputs[k].id] = res[k];
  }
  std::vector<Atom> result;
  for (const Atom& a : j.outvars) result.push_back(map_atom(a));
  return result;
}

namespace {

bool IsDifferentiable(DType t) { return IsFloating(t) || IsComplex(t); }

struct TapeEntry {
  RuleInput r;
  Backward backward;
};

}  // namespace

const RuleTable& Rules() {
  static const RuleTable* table = [] {
    auto* t = new RuleTable;
    AddElementwiseRules(*t);
    AddStructuralRules(*t);
    AddLinalgRules(*t);
    AddCallRules(*t);
    AddMathRules(*t);
    AddControlRules(*t);
    return t;
  }();
  return *table;
}

bool HasZeroDerivative(const std::string& primitive) {
  static const std::set<std::string> kZero = {
      "eq", "ne", "lt", "le", "gt", "ge", "sign", "and", "or", "not", "xor", "iota",
      "argmax", "argmin", "floor", "ceil", "round", "is_finite", "stop_gradient"};
  return kZero.count(primitive) > 0;
}

StatusOr<VjpParts> EmitVjp(Emitter& e, const Jaxpr& f, const std::vector<Atom>& args,
                           const std::vector<bool>& active, const CtSource& make_ct_outs) {
  std::map<int64_t, Atom> env;
  std::set<int64_t> active_ids;
  for (size_t i = 0; i < f.constvars.size(); ++i) {
    Var v = e.NewVar(f.constvars[i].aval);
    e.jaxpr()->constvars.push_back(v);
    e.jaxpr()->consts.push_back(f.consts[i]);
    env[f.constvars[i].id] = Atom::OfVar(v);
  }
  for (size_t i = 0; i < args.size(); ++i) {
    env[f.invars[i].id] = args[i];
    if (active[i] && !args[i].is_literal()) active_ids.insert(args[i].var.id);
  }
  auto map_atom = [&](const Atom& a) { return a.is_literal() ? a : env.at(a.var.id); };
  auto is_active = [&](const Atom& a) { return !a.is_literal() && active_ids.count(a.var.id); };

  // Forward part.
  std::vector<TapeEntry> tape;
  for (size_t n = 0; n < f.eqns.size(); ++n) {
    const Eqn& eqn = f.eqns[n];
    RuleInput r;
    r.eqn = &eqn;
    bool any = false;
    for (const Atom& a : eqn.inputs) {
      r.in.push_back(map_atom(a));
      r.active.push_back(is_active(r.in.back()));
      any = any || r.active.back();
    }
    any = any && !HasZeroDerivative(eqn.primitive);
    std::vector<AVal> out_avals;
    for (const Var& v : eqn.outputs) out_avals.push_back(v.aval);
    if (!any) {
      r.out = e.Raw(eqn.primitive, r.in, out_avals, eqn.params);
    } else {
      auto it = Rules().find(eqn.primitive);
      if (it == Rules().end()) {
        return Unimplemented("autodiff: primitive '", eqn.primitive, "' (equation ", n,
                             ") has no VJP rule, and it depends on a differentiated input; "
                             "differentiate with respect to inputs that do not reach it, or "
                             "add its rule in frontend/vjp_rules_*.cc");
      }
      if (!it->second.emits_primal) r.out = e.Raw(eqn.primitive, r.in, out_avals, eqn.params);
      auto backward = it->second.forward(e, r);
      if (!backward.ok()) {
        return Annotate(backward.status(), StrCat("autodiff of '", eqn.primitive,
                                                  "' (equation ", n, ")"));
      }
      for (const Atom& o : r.out) {
        if (!o.is_literal() && IsDifferentiable(o.aval().dtype)) active_ids.insert(o.var.id);
      }
      tape.push_back({r, std::move(*backward)});
    }
    for (size_t k = 0; k < eqn.outputs.size(); ++k) env[eqn.outputs[k].id] = r.out[k];
  }
  VjpParts parts;
  std::vector<bool> out_active;
  for (const Atom& a : f.outvars) {
    parts.outs.push_back(map_atom(a));
    out_active.push_back(is_active(parts.outs.back()));
  }

  // Backward part.
  parts.backward_start = e.jaxpr()->eqns.size();
  XS_ASSIGN_OR_RETURN(std::vector<Ct> ct_outs, make_ct_outs(e, parts.outs, out_active));
  std::map<int64_t, Atom> cts;
  auto write = [&](const Atom& x, const Atom& ct) {
    if (!is_active(x)) return;
    auto it = cts.find(x.var.id);
    if (it == cts.end()) {
      cts.emplace(x.var.id, ct);
    } else {
      it->second = e.AddAny(it->second, ct);
    }
  };
  for (size_t i = 0; i < parts.outs.size(); ++i) {
    if (out_active[i] && ct_outs[i]) write(parts.outs[i], *ct_outs[i]);
  }
  for (auto t = tape.rbegin(); t != tape.rend(); ++t) {
    std::vector<Ct> ct_out;
    bool any = false;
    for (const Atom& o : t->r.out) {
      Ct ct;
      if (!o.is_literal()) {
        auto it = cts.find(o.var.id);
        if (it != cts.end()) ct = it->second;
      }
      any = any || ct.has_value();
      ct_out.push_back(ct);
    }
    if (!any) continue;
    const RuleInput& r = t->r;
    CtWriter writer = [&](size_t i, const Atom& ct) -> Status {
      if (i >= r.in.size()) return Internal("autodiff: cotangent for input ", i, " of ",
                                            r.eqn->primitive);
      if (r.active[i]) write(r.in[i], ct);
      return OkStatus();
    };
    Status s = t->backward(e, ct_out, writer);
    if (!s.ok()) return Annotate(s, StrCat("transpose of '", r.eqn->primitive, "'"));
  }
  for (size_t i = 0; i < args.size(); ++i) {
    Ct ct;
    if (active[i] && !args[i].is_literal()) {
      auto it = cts.find(args[i].var.id);
      if (it != cts.end()) ct = it->second;
    }
    parts.ct_args.push_back(ct);
  }
  return parts;
}

StatusOr<IntList> GetInts(const Eqn& eqn, const std::string& name) {
  auto it = eqn.params.find(name);
  if (it != eqn.params.end()) {
    if (const auto* v = std::get_if<IntList>(&it->second)) return *v;
    if (const auto* v = std::get_if<int64_t>(&it->second)) return IntList{*v};
  }
  return InvalidArgument(eqn.primitive, ": param '", name,
                         "' is missing or not a tuple of ints; autodiff needs it");
}

StatusOr<IntLists> GetIntLists(const Eqn& eqn, const std::string& name) {
  auto it = eqn.params.find(name);
  if (it != eqn.params.end()) {
    if (const auto* v = std::get_if<IntLists>(&it->second)) return *v;
  }
  return InvalidArgument(eqn.primitive, ": param '", name,
                         "' is missing or not a tuple of int tuples; autodiff needs it");
}

StatusOr<int64_t> GetInt(const Eqn& eqn, const std::string& name) {
  auto it = eqn.params.find(name);
  if (it != eqn.params.end()) {
    if (const auto* v = std::get_if<int64_t>(&it->second)) return *v;
  }
  return InvalidArgument(eqn.primitive, ": param '", name,
                         "' is missing or not an int; autodiff needs it");
}

const AVal& InAval(const RuleInput& r, size_t i) { return r.eqn->inputs[i].aval(); }
const AVal& OutAval(const RuleInput& r, size_t i) { return r.eqn->outputs[i].aval; }

}  // namespace ad

namespace {

Status CheckWrt(const Jaxpr& f, const std::vector<int64_t>& wrt, const char* api) {
  std::set<int64_t> seen;
  for (int64_t w : wrt) {
    if (w < 0 || w >= static_cast<int64_t>(f.invars.size())) {
      return InvalidArgument(api, ": argnum ", w, " is out of range; the function has ",
                             f.invars.size(), " inputs (argnums 0..",
                             static_cast<int64_t>(f.invars.size()) - 1, ")");
    }
    if (!seen.insert(w).second) {
      return InvalidArgument(api, ": argnum ", w, " is repeated in argnums; list each once");
    }
    DType t = f.invars[w].aval.dtype;
    if (!ad::IsDifferentiable(t)) {
      return InvalidArgument(api, ": argnum ", w, " has dtype ", DTypeNumpyName(t),
                             "; gradients are defined for float or complex inputs only "
                             "(as in JAX); cast it with convert_element_type or leave it out "
                             "of argnums");
    }
  }
  return OkStatus();
}

// Builds the VJP jaxpr; `seed` makes the output cotangents (and may add invars).
StatusOr<Jaxpr> Build(const Jaxpr& f, const std::vector<int64_t>& wrt, bool keep_outs,
                      const ad::CtSource& seed) {
  Jaxpr out;
  ad::Emitter e(&out);
  std::vector<Atom> args;
  std::vector<bool> active(f.invars.size(), false);
  for (int64_t w : wrt) active[w] = true;
  for (const Var& v : f.invars) {
    out.invars.push_back(e.NewVar(v.aval));
    args.push_back(Atom::OfVar(out.invars.back()));
  }
  XS_ASSIGN_OR_RETURN(ad::VjpParts parts, ad::EmitVjp(e, f, args, active, seed));
  if (keep_outs) out.outvars = parts.outs;
  for (int64_t w : wrt) {
    if (parts.ct_args[w]) {
      out.outvars.push_back(*parts.ct_args[w]);
    } else {
      AVal z = f.invars[w].aval;
      z.weak_type = false;
      XS_ASSIGN_OR_RETURN(Atom zeros, e.Zeros(z));
      out.outvars.push_back(zeros);
    }
  }
  return out;
}

}  // namespace

StatusOr<Jaxpr> VjpJaxpr(const Jaxpr& f, const std::vector<int64_t>& wrt) {
  XS_RETURN_IF_ERROR(CheckWrt(f, wrt, "VjpJaxpr"));
  return Build(f, wrt, /*keep_outs=*/true,
               [&](ad::Emitter& e, const std::vector<Atom>& outs,
                   const std::vector<bool>&) -> StatusOr<std::vector<ad::Ct>> {
                 std::vector<ad::Ct> cts;
                 for (const Atom& o : outs) {
                   AVal aval = o.aval();
                   aval.weak_type = false;
                   e.jaxpr()->invars.push_back(e.NewVar(aval));
                   cts.push_back(Atom::OfVar(e.jaxpr()->invars.back()));
                 }
                 return cts;
               });
}

StatusOr<Jaxpr> GradJaxpr(const Jaxpr& f, const std::vector<int64_t>& wrt, bool with_value) {
  const char* api = with_value ? "ValueAndGrad" : "Grad";
  if (f.outvars.size() != 1) {
    return InvalidArgument(api, ": the function must return exactly one value (a float "
                           "scalar), but it returns ", f.outvars.size(),
                           "; use Vjp for several or non-scalar outputs");
  }
  const AVal& out = f.outvars[0].aval();
  if (out.rank() != 0 || !ad::IsDifferentiable(out.dtype)) {
    return InvalidArgument(api, ": the function must return a float scalar, but it returns ",
                           out.ToString(), "; reduce it (e.g. Sum) or use Vjp");
  }
  XS_RETURN_IF_ERROR(CheckWrt(f, wrt, api));
  return Build(f, wrt, with_value,
               [&](ad::Emitter&, const std::vector<Atom>&,
                   const std::vector<bool>&) -> StatusOr<std::vector<ad::Ct>> {
                 return std::vector<ad::Ct>{ad::Emitter::Lit(1.0, out.dtype)};
               });
}

}  // namespace xs::fe
