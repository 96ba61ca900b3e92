// Cond / Switch / WhileLoop / ForiLoop / Scan (control.h): each function argument traced into a
// closed jaxpr whose constants (concrete arrays and tracers it closes over) become leading
// operands, then one cond / while / scan equation bound like any primitive.
#include <algorithm>

#include "xshard/base/strings.h"
#include "xshard/frontend/control.h"
#include "xshard/frontend/primitive_rules.h"
#include "xshard/frontend/trace.h"

namespace xs::fe {

namespace {

// A traced function with its constants hoisted to leading invars.
struct ClosedFn {
  std::shared_ptr<Jaxpr> jaxpr;  // invars: consts..., declared inputs...; no constvars
  std::vector<Tensor> consts;    // the operands for the leading invars
};

StatusOr<ClosedFn> TraceClosed(const TensorFn& fn, const std::vector<AVal>& in, const std::string& owner) {
  std::vector<Tensor> captured;
  XS_ASSIGN_OR_RETURN(Jaxpr j, TraceFunction(fn, in, owner, &captured));
  ClosedFn c;
  c.jaxpr = std::make_shared<Jaxpr>();
  Jaxpr& out = *c.jaxpr;
  for (size_t i = 0; i < j.constvars.size(); ++i) {
    out.invars.push_back(j.constvars[i]);
    c.consts.push_back(Tensor::FromArray(j.consts[i]));
  }
  for (size_t i = in.size(); i < j.invars.size(); ++i) out.invars.push_back(j.invars[i]);
  c.consts.insert(c.consts.end(), captured.begin(), captured.end());
  for (size_t i = 0; i < in.size(); ++i) out.invars.push_back(j.invars[i]);
  out.eqns = std::move(j.eqns);
  out.outvars = std::move(j.outvars);
  return c;
}

std::vector<AVal> StrongAVals(const std::vector<Tensor>& ts) {
  std::vector<AVal> out;
  for (const Tensor& t : ts) out.push_back(AVal{t.dtype(), t.dims(), false});
  return out;
}

std::vector<AVal> OutTypes(const Jaxpr& j) {
  std::vector<AVal> out;
  for (const Atom& a : j.outvars) out.push_back(a.aval());
  return out;
}

bool SameTypes(const std::vector<AVal>& a, const std::vector<AVal>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].dtype != b[i].dtype || a[i].dims != b[i].dims) return false;
  return true;
}

// Records `s` as the enclosing trace's first error (so MakeJaxpr / Jit report it even when the
// results are dropped) and returns `n` error Tensors (at least one).
std::vector<Tensor> Fail(const Status& s, size_t n) {
  if (TraceState* t = CurrentTrace(); t != nullptr && t->first_error.ok()) t->first_error = s;
  return std::vector<Tensor>(std::max<size_t>(n, 1), Tensor::FromStatus(s));
}

int64_t NextId(const Jaxpr& j) {
  int64_t next = 0;
  for (const Var& v : j.constvars) next = std::max(next, v.id + 1);
  for (const Var& v : j.invars) next = std::max(next, v.id + 1);
  for (const Eqn& e : j.eqns)
    for (const Var& v : e.outputs) next = std::max(next, v.id + 1);
  return next;
}

std::vector<Tensor> SwitchImpl(const char* api, const Tensor& index, const std::vector<TensorFn>& branches,
                               const std::vector<Tensor>& operands) {
  std::vector<Tensor> all = operands;
  all.push_back(index);
  Status err = FirstError(all);
  if (!err.ok()) return Fail(err, 1);
  std::vector<AVal> in = StrongAVals(operands);
  std::vector<ClosedFn> closed;
  for (size_t b = 0; b < branches.size(); ++b) {
    StatusOr<ClosedFn> c = TraceClosed(branches[b], in, StrCat(api, " branch ", b));
    if (!c.ok()) return Fail(c.status(), 1);
    closed.push_back(*std::move(c));
  }
  std::vector<AVal> outs0 = OutTypes(*closed[0].jaxpr);
  for (size_t b = 1; b < closed.size(); ++b) {
    std::vector<AVal> outs = OutTypes(*closed[b].jaxpr);
    if (!SameTypes(outs, outs0)) {
      return Fail(InvalidArgument(api, ": branch ", b, " returns ", internal::AValsText(outs), " but branch 0 returns ",
                                  internal::AValsText(outs0),
                                  "; every branch must return the same shapes and dtypes "
                                  "(convert with Astype, broadcast with BroadcastTo)"),
                  outs0.size());
    }
  }
  // Operands: every branch's consts, then the declared operands; each branch takes them all,
  // fresh (unused) variables standing for the other branches' consts.
  std::vector<Tensor> ops = {index};
  for (const ClosedFn& c : closed) ops.insert(ops.end(), c.consts.begin(), c.consts.end());
  ops.insert(ops.end(), operands.begin(), operands.end());
  JaxprList jaxprs;
  for (size_t b = 0; b < closed.size(); ++b) {
    auto j = std::make_shared<Jaxpr>(*closed[b].jaxpr);
    int64_t next = NextId(*j);
    std::vector<Var> invars;
    for (size_t o = 0; o < closed.size(); ++o) {
      size_t n = closed[o].consts.size();
      for (size_t k = 0; k < n; ++k) {
        if (o == b) {
          invars.push_back(closed[b].jaxpr->invars[k]);
        } else {
          const Tensor& t = closed[o].consts[k];
          invars.push_back(Var{next++, AVal{t.dtype(), t.dims(), false}});
        }
      }
    }
    size_t own = closed[b].consts.size();
    invars.insert(invars.end(), closed[b].jaxpr->invars.begin() + own, closed[b].jaxpr->invars.end());
    j->invars = std::move(invars);
    jaxprs.push_back(std::move(j));
  }
  return Bind("cond", ops, {{"branches", std::move(jaxprs)}});
}

}  // namespace

std::vector<Tensor> Cond(const Tensor& pred, const TensorFn& true_fn, const TensorFn& false_fn,
                         const std::vector<Tensor>& operands) {
  if (!pred.ok()) return Fail(pred.status(), 1);
  if (pred.dtype() != DType::kPred || pred.rank() != 0) {
    return Fail(InvalidArgument("Cond: the predicate ", pred.aval().ToString(),
                                " must be a bool scalar; reduce it (e.g. Sum(x) > 0.0) or use "
                                "Where for an elementwise choice"),
                1);
  }
  Tensor index = Astype(pred, DType::kS32);
  return SwitchImpl("Cond", index, {false_fn, true_fn}, operands);
}

std::vector<Tensor> Switch(const Tensor& index, const std::vector<TensorFn>& branches,
                           const std::vector<Tensor>& operands) {
  if (!index.ok()) return Fail(index.status(), 1);
  if (!IsInteger(index.dtype()) || index.rank() != 0 || branches.empty()) {
    return Fail(InvalidArgument("Switch: the index ", index.aval().ToString(),
                                " must be an integer scalar and there must be at least one "
                                "branch (got ",
                                branches.size(), ")"),
                1);
  }
  Tensor i = Astype(index, DType::kS32);
  i = Minimum(Maximum(i, Tensor::Scalar(0, DType::kS32)),
              Tensor::Scalar(static_cast<double>(branches.size() - 1), DType::kS32));
  return SwitchImpl("Switch", i, branches, operands);
}

std::vector<Tensor> WhileLoop(const TensorFn& cond_fn, const TensorFn& body_fn, const std::vector<Tensor>& init) {
  Status err = FirstError(init);
  if (!err.ok()) return Fail(err, init.size());
  std::vector<AVal> in = StrongAVals(init);
  StatusOr<ClosedFn> cond = TraceClosed(cond_fn, in, "WhileLoop cond_fn");
  if (!cond.ok()) return Fail(cond.status(), init.size());
  std::vector<AVal> co = OutTypes(*cond->jaxpr);
  if (co.size() != 1 || co[0].dtype != DType::kPred || co[0].rank() != 0) {
    return Fail(InvalidArgument("WhileLoop: cond_fn must return one bool scalar, returns ", internal::AValsText(co)),
                init.size());
  }
  StatusOr<ClosedFn> body = TraceClosed(body_fn, in, "WhileLoop body_fn");
  if (!body.ok()) return Fail(body.status(), init.size());
  std::vector<AVal> bo = OutTypes(*body->jaxpr);
  if (!SameTypes(bo, in)) {
    return Fail(
        InvalidArgument("WhileLoop: body_fn returns ", internal::AValsText(bo), " but the carry is ",
                        internal::AValsText(in), "; return the carry's shapes and dtypes (convert with Astype)"),
        init.size());
  }
  std::vector<Tensor> ops = cond->consts;
  ops.insert(ops.end(), body->consts.begin(), body->consts.end());
  ops.insert(ops.end(), init.begin(), init.end());
  return Bind("while", ops,
              {{"body_jaxpr", std::shared_ptr<const Jaxpr>(body->jaxpr)},
               {"body_nconsts", static_cast<int64_t>(body->consts.size())},
               {"cond_jaxpr", std::shared_ptr<const Jaxpr>(cond->jaxpr)},
               {"cond_nconsts", static_cast<int64_t>(cond->consts.size())}});
}

bool ScanResult::ok() const { return status().ok(); }
Status ScanResult::status() const {
  Status s = FirstError(carry);
  return s.ok() ? FirstError(ys) : s;
}

ScanResult Scan(const TensorFn& f, const std::vector<Tensor>& init, const std::vector<Tensor>& xs, int64_t length,
                bool reverse) {
  auto fail = [&](const Status& s) {
    ScanResult r;
    r.carry = Fail(s, init.size());
    r.ys = {r.carry[0]};
    return r;
  };
  std::vector<Tensor> all = init;
  all.insert(all.end(), xs.begin(), xs.end());
  Status err = FirstError(all);
  if (!err.ok()) return fail(err);
  for (const Tensor& x : xs) {
    if (x.rank() < 1 || (length >= 0 && x.dims()[0] != length)) {
      return fail(InvalidArgument("Scan: every xs needs a leading dim of one length (",
                                  length >= 0 ? StrCat(length) : std::string("from xs[0]"), "), got ",
                                  x.aval().ToString()));
    }
    if (length < 0) length = x.dims()[0];
  }
  if (length < 0) {
    return fail(InvalidArgument("Scan: with no xs, give the number of steps as `length`"));
  }
  std::vector<AVal> in = StrongAVals(init);
  for (const Tensor& x : xs) {
    AVal a{x.dtype(), x.dims(), false};
    a.dims.erase(a.dims.begin());
    in.push_back(a);
  }
  StatusOr<ClosedFn> body = TraceClosed(f, in, "Scan f");
  if (!body.ok()) return fail(body.status());
  std::vector<AVal> bo = OutTypes(*body->jaxpr);
  std::vector<AVal> carry_in = StrongAVals(init);
  if (bo.size() < init.size() || !SameTypes(std::vector<AVal>(bo.begin(), bo.begin() + init.size()), carry_in)) {
    return fail(InvalidArgument("Scan: f returns ", internal::AValsText(bo), " whose first ", init.size(),
                                " values must be the carry ", internal::AValsText(carry_in),
                                " (same shapes and dtypes), followed by the per-step outputs"));
  }
  std::vector<Tensor> ops = body->consts;
  ops.insert(ops.end(), init.begin(), init.end());
  ops.insert(ops.end(), xs.begin(), xs.end());
  std::vector<Tensor> outs = Bind("scan", ops,
                                  {{"jaxpr", std::shared_ptr<const Jaxpr>(body->jaxpr)},
                                   {"length", length},
                                   {"num_carry", static_cast<int64_t>(init.size())},
                                   {"num_consts", static_cast<int64_t>(body->consts.size())},
                                   {"reverse", reverse},
                                   {"unroll", int64_t{1}}});
  Status bound = FirstError(outs);
  if (!bound.ok()) return fail(bound);
  ScanResult r;
  r.carry.assign(outs.begin(), outs.begin() + init.size());
  r.ys.assign(outs.begin() + init.size(), outs.end());
  return r;
}

std::vector<Tensor> ForiLoop(int64_t lower, int64_t upper, const TensorFn& body_fn, const std::vector<Tensor>& init) {
  TensorFn step = [body_fn](const std::vector<Tensor>& a) -> std::vector<Tensor> {
    std::vector<Tensor> out = {a[0] + 1};  // first, as JAX's _fori_scan_body_fun
    std::vector<Tensor> carry = body_fn(a);
    out.insert(out.end(), carry.begin(), carry.end());
    return out;
  };
  std::vector<Tensor> full = {Tensor::Scalar(static_cast<double>(lower), DType::kS32)};
  full.insert(full.end(), init.begin(), init.end());
  ScanResult r = Scan(step, full, {}, std::max<int64_t>(upper - lower, 0), false);
  if (!r.ok()) return Fail(r.status(), init.size());
  return std::vector<Tensor>(r.carry.begin() + 1, r.carry.end());
}

}  // namespace xs::fe
