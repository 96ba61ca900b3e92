// VJP rules of the call-like primitives: pjit (the inner jaxpr is split into a forward pjit that
// also returns the residuals and a backward pjit of the same name, as JAX 0.10 prints them),
// custom_vjp_call (the user's fwd_jaxpr inlined in the forward part, bwd_jaxpr in the backward
// part) and sharding_constraint (the cotangent gets the same constraint).
#include <algorithm>
#include <memory>
#include <set>

#include "xshard/frontend/autodiff_internal.h"

namespace xs::fe::ad {
namespace {

StatusOr<std::shared_ptr<const Jaxpr>> GetJaxpr(const Eqn& eqn, const std::string& name) {
  auto it = eqn.params.find(name);
  if (it != eqn.params.end()) {
    if (const auto* j = std::get_if<std::shared_ptr<const Jaxpr>>(&it->second)) {
      if (*j) return *j;
    }
  }
  return InvalidArgument(eqn.primitive, ": param '", name, "' is missing or not a jaxpr");
}

bool Differentiable(const AVal& a) { return IsFloating(a.dtype) || IsComplex(a.dtype); }

}  // namespace

StatusOr<Split> SplitVjp(const Jaxpr& inner, const std::vector<bool>& active) {
  Jaxpr joint;
  Emitter e(&joint);
  std::vector<Atom> args;
  for (const Var& v : inner.invars) {
    joint.invars.push_back(e.NewVar(v.aval));
    args.push_back(Atom::OfVar(joint.invars.back()));
  }
  Split split;
  std::vector<Var> ct_vars;
  CtSource source = [&](Emitter& e, const std::vector<Atom>& outs,
                        const std::vector<bool>&) -> StatusOr<std::vector<Ct>> {
    std::vector<Ct> cts;
    for (size_t i = 0; i < outs.size(); ++i) {
      AVal aval = inner.outvars[i].aval();
      aval.weak_type = false;
      if (!Differentiable(aval)) {
        cts.push_back(std::nullopt);
        continue;
      }
      ct_vars.push_back(e.NewVar(aval));
      split.ct_outputs.push_back(i);
      cts.push_back(Atom::OfVar(ct_vars.back()));
    }
    return cts;
  };
  XS_ASSIGN_OR_RETURN(VjpParts parts, EmitVjp(e, inner, args, active, source));
  std::vector<Atom> ct_results;
  for (size_t i = 0; i < active.size(); ++i) {
    if (!active[i]) continue;
    if (parts.ct_args[i]) {
      ct_results.push_back(*parts.ct_args[i]);
    } else {
      AVal z = inner.invars[i].aval;
      z.weak_type = false;
      XS_ASSIGN_OR_RETURN(Atom zeros, e.Zeros(z));
      ct_results.push_back(zeros);
    }
  }
  // Residuals: forward-defined variables the backward part reads, in first-use order.
  std::set<int64_t> forward_defined;
  for (const Var& v : joint.invars) forward_defined.insert(v.id);
  for (const Var& v : joint.constvars) forward_defined.insert(v.id);
  for (size_t n = 0; n < parts.backward_start; ++n) {
    for (const Var& v : joint.eqns[n].outputs) forward_defined.insert(v.id);
  }
  std::vector<Var> residuals;
  std::set<int64_t> seen;
  auto use = [&](const Atom& a) {
    if (a.is_literal() || !forward_defined.count(a.var.id) || !seen.insert(a.var.id).second) {
      return;
    }
    residuals.push_back(a.var);
  };
  for (size_t n = parts.backward_start; n < joint.eqns.size(); ++n) {
    for (const Atom& a : joint.eqns[n].inputs) use(a);
  }
  for (const Atom& a : ct_results) use(a);

  split.forward = std::make_shared<Jaxpr>();
  split.backward = std::make_shared<Jaxpr>();
  Jaxpr& f = *split.forward;
  Jaxpr& b = *split.backward;
  f.constvars = b.constvars = joint.constvars;
  f.consts = b.consts = joint.consts;
  f.invars = joint.invars;
  f.eqns.assign(joint.eqns.begin(), joint.eqns.begin() + parts.backward_start);
  f.outvars = parts.outs;
  // Residuals that are invars are passed from outside, as JAX does, not through the forward.
  for (const Var& v : residuals) {
    auto it = std::find_if(joint.invars.begin(), joint.invars.end(),
                           [&](const Var& in) { return in.id == v.id; });
    if (it != joint.invars.end()) {
      split.residual_sources.push_back(it - joint.invars.begin());
      continue;
    }
    split.residual_sources.push_back(-1 - static_cast<int64_t>(split.residual_avals.size()));
    f.outvars.push_back(Atom::OfVar(v));
    split.residual_avals.push_back(v.aval);
  }
  b.invars = residuals;
  b.invars.insert(b.invars.end(), ct_vars.begin(), ct_vars.end());
  b.eqns.assign(joint.eqns.begin() + parts.backward_start, joint.eqns.end());
  b.outvars = ct_results;
  return split;
}

void AddCallRules(RuleTable& t) {
  t["sharding_constraint"] = {[](Emitter&, RuleInput& r) -> StatusOr<Backward> {
    Params params = r.eqn->params;
    return Backward([params](Emitter& e, const std::vector<Ct>& ct, const CtWriter& write) {
      XS_ASSIGN_OR_RETURN(Atom g, e.Op("sharding_constraint", {*ct[0]}, params));
      return write(0, g);
    });
  }};

  t["pjit"] = {[](Emitter& e, RuleInput& r) -> StatusOr<Backward> {
    XS_ASSIGN_OR_RETURN(std::shared_ptr<const Jaxpr> inner, GetJaxpr(*r.eqn, "jaxpr"));
    XS_ASSIGN_OR_RETURN(Split split, SplitVjp(*inner, r.active));
    Params fwd_params = r.eqn->params;
    fwd_params["jaxpr"] = std::shared_ptr<const Jaxpr>(split.forward);
    std::vector<AVal> outs;
    for (const Var& v : r.eqn->outputs) outs.push_back(v.aval);
    size_t n_out = outs.size();
    outs.insert(outs.end(), split.residual_avals.begin(), split.residual_avals.end());
    std::vector<Atom> all = e.Raw("pjit", r.in, outs, fwd_params);
    r.out.assign(all.begin(), all.begin() + n_out);
    std::vector<Atom> residuals;
    for (int64_t src : split.residual_sources) {
      residuals.push_back(src >= 0 ? r.in[src] : all[n_out + (-1 - src)]);
    }
    Params bwd_params = r.eqn->params;
    bwd_params["jaxpr"] = std::shared_ptr<const Jaxpr>(split.backward);
    std::vector<AVal> ct_avals;
    for (size_t i = 0; i < r.in.size(); ++i) {
      if (!r.active[i]) continue;
      AVal a = InAval(r, i);
      a.weak_type = false;
      ct_avals.push_back(a);
    }
    std::vector<bool> active = r.active;
    std::vector<size_t> ct_outputs = split.ct_outputs;
    return Backward([=](Emitter& e, const std::vector<Ct>& ct, const CtWriter& write) -> Status {
      std::vector<Atom> in = residuals;
      for (size_t i : ct_outputs) {
        if (ct[i]) {
          in.push_back(*ct[i]);
        } else {
          AVal z = outs[i];
          z.weak_type = false;
          XS_ASSIGN_OR_RETURN(Atom zeros, e.Zeros(z));
          in.push_back(zeros);
        }
      }
      std::vector<Atom> res = e.Raw("pjit", in, ct_avals, bwd_params);
      size_t k = 0;
      for (size_t i = 0; i < active.size(); ++i) {
        if (active[i]) XS_RETURN_IF_ERROR(write(i, res[k++]));
      }
      return OkStatus();
    });
  }, /*emits_primal=*/true};

  t["custom_vjp_call"] = {[](Emitter& e, RuleInput& r) -> StatusOr<Backward> {
    XS_ASSIGN_OR_RETURN(std::shared_ptr<const Jaxpr> fwd, GetJaxpr(*r.eqn, "fwd_jaxpr"));
    XS_ASSIGN_OR_RETURN(std::shared_ptr<const Jaxpr> bwd, GetJaxpr(*r.eqn, "bwd_jaxpr"));
    XS_ASSIGN_OR_RETURN(int64_t num_res, GetInt(*r.eqn, "num_res"));
    size_t n_out = r.eqn->outputs.size();
    if (fwd->outvars.size() != n_out + static_cast<size_t>(num_res) ||
        bwd->invars.size() != static_cast<size_t>(num_res) + n_out ||
        bwd->outvars.size() != r.in.size()) {
      return InvalidArgument(
          "custom_vjp_call: fwd_jaxpr must return the ", n_out, " outputs and num_res=",
          num_res, " residuals (it returns ", fwd->outvars.size(), "), and bwd_jaxpr must map ",
          num_res, " residuals + ", n_out, " cotangents (it takes ", bwd->invars.size(),
          ") to one cotangent per input (", r.in.size(), "; it returns ",
          bwd->outvars.size(), ")");
    }
    XS_ASSIGN_OR_RETURN(std::vector<Atom> fwd_out, e.Inline(*fwd, r.in));
    r.out.assign(fwd_out.begin(), fwd_out.begin() + n_out);
    std::vector<Atom> residuals(fwd_out.begin() + n_out, fwd_out.end());
    std::vector<AVal> out_avals;
    for (const Var& v : r.eqn->outputs) out_avals.push_back(v.aval);
    return Backward([=](Emitter& e, const std::vector<Ct>& ct, const CtWriter& write) -> Status {
      std::vector<Atom> in = residuals;
      for (size_t i = 0; i < n_out; ++i) {
        if (ct[i]) {
          in.push_back(*ct[i]);
        } else {
          AVal z = out_avals[i];
          z.weak_type = false;
          XS_ASSIGN_OR_RETURN(Atom zeros, e.Zeros(z));
          in.push_back(zeros);
        }
      }
      XS_ASSIGN_OR_RETURN(std::vector<Atom> cts, e.Inline(*bwd, in));
      for (size_t i = 0; i < cts.size(); ++i) XS_RETURN_IF_ERROR(write(i, cts[i]));
      return OkStatus();
    });
  }, /*emits_primal=*/true};
}

}  // namespace xs::fe::ad
