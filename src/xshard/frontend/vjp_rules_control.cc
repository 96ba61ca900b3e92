// VJP rules of the control-flow primitives. cond: each branch is split (SplitVjp) into a forward
// that also returns its residuals and a backward; the forward cond returns every branch's
// residuals in shared slots (one slot per type a branch needs, zeros from the branches that do
// not use it, as JAX merges branch residuals) and a backward cond picks the same branch. scan:
// the body is split the same way after a fixpoint over which carries carry a tangent; the
// forward scan stacks the per-step residuals as extra outputs and a reverse scan runs the
// backward body over them, accumulating the constants' cotangents in its carry. while: no rule
// (as in JAX), an error naming the alternatives.
#include <algorithm>
#include <memory>
#include <set>

#include "xshard/base/strings.h"
#include "xshard/frontend/autodiff.h"
#include "xshard/frontend/autodiff_internal.h"

namespace xs::fe::ad {
namespace {

bool IsFloatType(const AVal& a) { return IsFloating(a.dtype) || IsComplex(a.dtype); }

AVal Strong(AVal a) {
  a.weak_type = false;
  return a;
}

bool SameType(const AVal& a, const AVal& b) { return a.dtype == b.dtype && a.dims == b.dims; }

// Which outvars of `j` depend (differentiably) on the invars marked in `in_active`.
std::vector<bool> OutActivity(const Jaxpr& j, const std::vector<bool>& in_active) {
  std::set<int64_t> active;
  for (size_t i = 0; i < j.invars.size(); ++i)
    if (in_active[i]) active.insert(j.invars[i].id);
  for (const Eqn& e : j.eqns) {
    bool any = false;
    for (const Atom& a : e.inputs) any = any || (!a.is_literal() && active.count(a.var.id));
    if (!any || HasZeroDerivative(e.primitive)) continue;
    for (const Var& v : e.outputs)
      if (IsFloatType(v.aval)) active.insert(v.id);
  }
  std::vector<bool> out;
  for (const Atom& a : j.outvars) out.push_back(!a.is_literal() && active.count(a.var.id) > 0);
  return out;
}

StatusOr<std::shared_ptr<const Jaxpr>> JaxprParam(const Eqn& eqn, const std::string& name) {
  auto it = eqn.params.find(name);
  if (it != eqn.params.end()) {
    if (const auto* j = std::get_if<std::shared_ptr<const Jaxpr>>(&it->second)) {
      if (*j) return *j;
    }
  }
  return InvalidArgument(eqn.primitive, ": param '", name, "' is missing or not a jaxpr");
}

int64_t FreshId(const Jaxpr& j) {
  int64_t next = 0;
  for (const Var& v : j.constvars) next = std::max(next, v.id + 1);
  for (const Var& v : j.invars) next = std::max(next, v.id + 1);
  for (const Eqn& e : j.eqns)
    for (const Var& v : e.outputs) next = std::max(next, v.id + 1);
  return next;
}

// ---- cond ----

StatusOr<Backward> CondForward(Emitter& e, RuleInput& r) {
  auto it = r.eqn->params.find("branches");
  const JaxprList* branches = it == r.eqn->params.end() ? nullptr : std::get_if<JaxprList>(&it->second);
  if (branches == nullptr || branches->empty()) {
    return InvalidArgument("cond: param 'branches' is missing or empty");
  }
  size_t n_ops = r.in.size() - 1;
  std::vector<bool> active(r.active.begin() + 1, r.active.end());
  std::vector<Split> splits;
  for (const auto& b : *branches) {
    XS_ASSIGN_OR_RETURN(Split s, SplitVjp(*b, active));
    splits.push_back(std::move(s));
  }
  // Residual slots shared by type across branches.
  std::vector<AVal> slots;
  std::vector<std::vector<size_t>> slot_of(splits.size());  // per branch, per extra output
  for (size_t b = 0; b < splits.size(); ++b) {
    std::vector<bool> taken(slots.size(), false);
    for (const AVal& a : splits[b].residual_avals) {
      size_t s = 0;
      while (s < slots.size() && (taken[s] || !SameType(slots[s], a))) ++s;
      if (s == slots.size()) {
        slots.push_back(Strong(a));
        taken.push_back(false);
      }
      taken[s] = true;
      slot_of[b].push_back(s);
    }
  }
  size_t n_out = r.eqn->outputs.size();
  JaxprList forwards;
  for (size_t b = 0; b < splits.size(); ++b) {
    auto f = std::make_shared<Jaxpr>(*splits[b].forward);
    std::vector<Atom> extras(f->outvars.begin() + n_out, f->outvars.end());
    f->outvars.resize(n_out);
    Emitter fe(f.get());
    for (size_t s = 0; s < slots.size(); ++s) {
      auto at = std::find(slot_of[b].begin(), slot_of[b].end(), s);
      if (at != slot_of[b].end()) {
        f->outvars.push_back(extras[at - slot_of[b].begin()]);
      } else {
        XS_ASSIGN_OR_RETURN(Atom z, fe.Zeros(slots[s]));
        f->outvars.push_back(z);
      }
    }
    forwards.push_back(std::move(f));
  }
  std::vector<AVal> outs;
  for (const Var& v : r.eqn->outputs) outs.push_back(v.aval);
  outs.insert(outs.end(), slots.begin(), slots.end());
  std::vector<Atom> all = e.Raw("cond", r.in, outs, {{"branches", forwards}});
  r.out.assign(all.begin(), all.begin() + n_out);
  std::vector<Atom> slot_atoms(all.begin() + n_out, all.end());

  // Backward branches: invars (slots..., the operands some branch reads as residuals...,
  // cotangents...).
  std::vector<size_t> ct_outputs = splits[0].ct_outputs;
  std::vector<AVal> op_avals;
  for (size_t i = 0; i < n_ops; ++i) op_avals.push_back(Strong(InAval(r, i + 1)));
  std::vector<bool> op_read(n_ops, false);
  for (const Split& s : splits)
    for (int64_t src : s.residual_sources)
      if (src >= 0) op_read[src] = true;
  JaxprList backwards;
  for (size_t b = 0; b < splits.size(); ++b) {
    const Split& s = splits[b];
    auto j = std::make_shared<Jaxpr>(*s.backward);
    int64_t next = FreshId(*j);
    size_t n_res = s.residual_sources.size();
    std::vector<Var> slot_vars, op_vars;
    for (const AVal& a : slots) slot_vars.push_back(Var{next++, a});
    for (const AVal& a : op_avals) op_vars.push_back(Var{next++, a});
    for (size_t k = 0; k < n_res; ++k) {
      int64_t src = s.residual_sources[k];
      Var& target = src >= 0 ? op_vars[src] : slot_vars[slot_of[b][-1 - src]];
      target = s.backward->invars[k];
    }
    j->invars = slot_vars;
    for (size_t i = 0; i < n_ops; ++i)
      if (op_read[i]) j->invars.push_back(op_vars[i]);
    j->invars.insert(j->invars.end(), s.backward->invars.begin() + n_res, s.backward->invars.end());
    backwards.push_back(std::move(j));
  }
  std::vector<AVal> ct_avals;
  for (size_t i = 0; i < n_ops; ++i)
    if (active[i]) ct_avals.push_back(op_avals[i]);
  Atom index = r.in[0];
  std::vector<Atom> operands;
  for (size_t i = 0; i < n_ops; ++i)
    if (op_read[i]) operands.push_back(r.in[i + 1]);
  return Backward([=](Emitter& e, const std::vector<Ct>& ct, const CtWriter& write) -> Status {
    std::vector<Atom> in = {index};
    in.insert(in.end(), slot_atoms.begin(), slot_atoms.end());
    in.insert(in.end(), operands.begin(), operands.end());
    for (size_t i : ct_outputs) {
      if (ct[i]) {
        in.push_back(*ct[i]);
      } else {
        XS_ASSIGN_OR_RETURN(Atom z, e.Zeros(Strong(outs[i])));
        in.push_back(z);
      }
    }
    std::vector<Atom> res = e.Raw("cond", in, ct_avals, {{"branches", backwards}});
    size_t k = 0;
    for (size_t i = 0; i < active.size(); ++i) {
      if (active[i]) XS_RETURN_IF_ERROR(write(i + 1, res[k++]));
    }
    return OkStatus();
  });
}

// ---- scan ----

StatusOr<Backward> ScanForward(Emitter& e, RuleInput& r) {
  XS_ASSIGN_OR_RETURN(std::shared_ptr<const Jaxpr> body, JaxprParam(*r.eqn, "jaxpr"));
  XS_ASSIGN_OR_RETURN(int64_t length, GetInt(*r.eqn, "length"));
  XS_ASSIGN_OR_RETURN(int64_t nc, GetInt(*r.eqn, "num_consts"));
  XS_ASSIGN_OR_RETURN(int64_t ncar, GetInt(*r.eqn, "num_carry"));
  auto rit = r.eqn->params.find("reverse");
  bool reverse = rit != r.eqn->params.end() && std::holds_alternative<bool>(rit->second) && std::get<bool>(rit->second);
  int64_t n_in = static_cast<int64_t>(r.in.size());
  int64_t nx = n_in - nc - ncar;
  int64_t ny = static_cast<int64_t>(r.eqn->outputs.size()) - ncar;
  // Fixpoint: a carry is active when its init is, or when the body makes it depend on an active
  // input.
  std::vector<bool> active = r.active;
  for (int64_t k = 0; k < n_in; ++k) active[k] = active[k] && IsFloatType(InAval(r, k));
  for (bool changed = true; changed;) {
    changed = false;
    std::vector<bool> out = OutActivity(*body, active);
    for (int64_t k = 0; k < ncar; ++k) {
      if (out[k] && !active[nc + k] && IsFloatType(InAval(r, nc + k))) {
        active[nc + k] = true;
        changed = true;
      }
    }
  }
  XS_ASSIGN_OR_RETURN(Split split, SplitVjp(*body, active));
  // Residual kinds: a const (passed whole), an x (its xs passed whole), or per-step values
  // stacked by the forward scan (the forward's extra outputs, and carries read as residuals).
  struct Res {
    int kind;       // 0 const, 1 xs, 2 stacked
    int64_t index;  // const / xs operand index, or stacked output index
  };
  auto fwd = std::make_shared<Jaxpr>(*split.forward);
  size_t n_body_out = static_cast<size_t>(ncar + ny);
  std::vector<Atom> extras(fwd->outvars.begin() + n_body_out, fwd->outvars.end());
  fwd->outvars.resize(n_body_out);
  std::vector<Res> res;
  std::vector<AVal> stacked_avals;
  for (int64_t src : split.residual_sources) {
    if (src >= 0 && src < nc) {
      res.push_back({0, src});
    } else if (src >= nc + ncar) {
      res.push_back({1, nc + ncar + (src - nc - ncar)});
    } else {
      Atom a = src >= 0 ? Atom::OfVar(fwd->invars[src]) : extras[-1 - src];
      fwd->outvars.push_back(a);
      AVal t = Strong(a.aval());
      t.dims.insert(t.dims.begin(), length);
      res.push_back({2, static_cast<int64_t>(stacked_avals.size())});
      stacked_avals.push_back(t);
    }
  }
  Params fparams = r.eqn->params;
  fparams["jaxpr"] = std::shared_ptr<const Jaxpr>(fwd);
  std::vector<AVal> outs;
  for (const Var& v : r.eqn->outputs) outs.push_back(v.aval);
  std::vector<AVal> fwd_outs = outs;
  fwd_outs.insert(fwd_outs.end(), stacked_avals.begin(), stacked_avals.end());
  std::vector<Atom> all = e.Raw("scan", r.in, fwd_outs, fparams);
  r.out.assign(all.begin(), all.begin() + n_body_out);
  std::vector<Atom> stacked(all.begin() + n_body_out, all.end());

  // The backward body: invars (const residuals..., zero cts of inactive carries..., const ct
  // accumulators..., carry cts..., stacked residual slices..., xs residual slices..., y cts...).
  const Jaxpr& bwd = *split.backward;
  std::vector<int64_t> act_consts, act_carries, act_xs;
  for (int64_t k = 0; k < nc; ++k)
    if (active[k]) act_consts.push_back(k);
  for (int64_t k = 0; k < ncar; ++k)
    if (active[nc + k]) act_carries.push_back(k);
  for (int64_t k = 0; k < nx; ++k)
    if (active[nc + ncar + k]) act_xs.push_back(k);
  std::vector<size_t> ct_outputs = split.ct_outputs;  // body outputs taking a cotangent
  std::vector<int64_t> const_res, xs_res;             // operand indices
  for (const Res& q : res) {
    if (q.kind == 0 && std::find(const_res.begin(), const_res.end(), q.index) == const_res.end()) {
      const_res.push_back(q.index);
    }
    if (q.kind == 1 && std::find(xs_res.begin(), xs_res.end(), q.index) == xs_res.end()) {
      xs_res.push_back(q.index);
    }
  }
  // Carry cotangents the body reads but whose carry is inactive: zeros, passed as consts.
  std::vector<size_t> zero_cts;  // positions in ct_outputs
  for (size_t p = 0; p < ct_outputs.size(); ++p) {
    int64_t o = static_cast<int64_t>(ct_outputs[p]);
    if (o < ncar && !active[nc + o]) zero_cts.push_back(p);
  }
  auto bb = std::make_shared<Jaxpr>();
  Emitter be(bb.get());
  auto in_var = [&](const AVal& a) {
    bb->invars.push_back(be.NewVar(Strong(a)));
    return Atom::OfVar(bb->invars.back());
  };
  std::map<int64_t, Atom> const_atoms, xs_atoms;
  for (int64_t k : const_res) const_atoms[k] = in_var(InAval(r, k));
  std::map<size_t, Atom> ct_in;  // by position in ct_outputs
  for (size_t p : zero_cts) ct_in[p] = in_var(body->outvars[ct_outputs[p]].aval());
  std::vector<Atom> acc;
  for (int64_t k : act_consts) acc.push_back(in_var(InAval(r, k)));
  for (int64_t k : act_carries) {
    Atom a = in_var(InAval(r, nc + k));
    for (size_t p = 0; p < ct_outputs.size(); ++p)
      if (static_cast<int64_t>(ct_outputs[p]) == k) ct_in[p] = a;
  }
  std::vector<Atom> stacked_in;
  for (const AVal& a : stacked_avals) {
    AVal slice = a;
    slice.dims.erase(slice.dims.begin());
    stacked_in.push_back(in_var(slice));
  }
  for (int64_t k : xs_res) {
    AVal slice = Strong(InAval(r, k));
    slice.dims.erase(slice.dims.begin());
    xs_atoms[k] = in_var(slice);
  }
  for (size_t p = 0; p < ct_outputs.size(); ++p) {
    if (static_cast<int64_t>(ct_outputs[p]) >= ncar) ct_in[p] = in_var(body->outvars[ct_outputs[p]].aval());
  }
  std::vector<Atom> bargs;
  for (const Res& q : res) {
    bargs.push_back(q.kind == 0 ? const_atoms[q.index] : q.kind == 1 ? xs_atoms[q.index] : stacked_in[q.index]);
  }
  for (size_t p = 0; p < ct_outputs.size(); ++p) bargs.push_back(ct_in[p]);
  XS_ASSIGN_OR_RETURN(std::vector<Atom> cts, be.Inline(bwd, bargs));
  // cts: one per active body input, in input order (consts, carries, xs).
  size_t ci = 0;
  for (size_t k = 0; k < act_consts.size(); ++k) bb->outvars.push_back(be.AddAny(acc[k], cts[ci++]));
  for (size_t k = 0; k < act_carries.size(); ++k) bb->outvars.push_back(cts[ci++]);
  for (size_t k = 0; k < act_xs.size(); ++k) bb->outvars.push_back(cts[ci++]);
  if (!bb->constvars.empty()) {
    return Unimplemented("scan: a backward body with constants (a custom_vjp inside scan)");
  }
  std::shared_ptr<const Jaxpr> bjaxpr = bb;

  int64_t b_nc = static_cast<int64_t>(const_res.size() + zero_cts.size());
  int64_t b_ncar = static_cast<int64_t>(act_consts.size() + act_carries.size());
  Params bparams = r.eqn->params;
  bparams["jaxpr"] = bjaxpr;
  bparams["num_consts"] = b_nc;
  bparams["num_carry"] = b_ncar;
  bparams["reverse"] = !reverse;
  std::vector<Atom> operands = r.in;
  std::vector<AVal> body_out;
  for (const Atom& a : body->outvars) body_out.push_back(Strong(a.aval()));
  return Backward([=](Emitter& e, const std::vector<Ct>& ct, const CtWriter& write) -> Status {
    std::vector<Atom> in;
    for (int64_t k : const_res) in.push_back(operands[k]);
    for (size_t p : zero_cts) {
      XS_ASSIGN_OR_RETURN(Atom z, e.Zeros(body_out[ct_outputs[p]]));
      in.push_back(z);
    }
    std::vector<AVal> bouts;
    for (int64_t k : act_consts) {
      AVal t = Strong(operands[k].aval());
      XS_ASSIGN_OR_RETURN(Atom z, e.Zeros(t));
      in.push_back(z);
      bouts.push_back(t);
    }
    for (int64_t k : act_carries) {
      AVal t = Strong(operands[nc + k].aval());
      if (ct[k]) {
        in.push_back(*ct[k]);
      } else {
        XS_ASSIGN_OR_RETURN(Atom z, e.Zeros(t));
        in.push_back(z);
      }
      bouts.push_back(t);
    }
    in.insert(in.end(), stacked.begin(), stacked.end());
    for (int64_t k : xs_res) in.push_back(operands[k]);
    for (size_t p = 0; p < ct_outputs.size(); ++p) {
      int64_t o = static_cast<int64_t>(ct_outputs[p]);
      if (o < ncar) continue;
      AVal t = Strong(outs[o]);
      if (ct[o]) {
        in.push_back(*ct[o]);
      } else {
        XS_ASSIGN_OR_RETURN(Atom z, e.Zeros(t));
        in.push_back(z);
      }
    }
    for (int64_t k : act_xs) bouts.push_back(Strong(operands[nc + ncar + k].aval()));
    std::vector<Atom> res_cts = e.Raw("scan", in, bouts, bparams);
    size_t i = 0;
    for (int64_t k : act_consts) XS_RETURN_IF_ERROR(write(k, res_cts[i++]));
    for (int64_t k : act_carries) XS_RETURN_IF_ERROR(write(nc + k, res_cts[i++]));
    for (int64_t k : act_xs) XS_RETURN_IF_ERROR(write(nc + ncar + k, res_cts[i++]));
    return OkStatus();
  });
}

}  // namespace

void AddControlRules(RuleTable& t) {
  t["cond"] = {CondForward, /*emits_primal=*/true};
  t["scan"] = {ScanForward, /*emits_primal=*/true};
  t["while"] = {[](Emitter&, RuleInput&) -> StatusOr<Backward> {
    return Unimplemented(
        "WhileLoop (the `while` primitive) is not reverse-differentiable, as in JAX (reverse-mode "
        "differentiation does not work for lax.while_loop or fori_loop with dynamic bounds); use "
        "ForiLoop with static bounds or Scan, which are, or StopGradient on its inputs");
  }};
}

}  // namespace xs::fe::ad
