// Grad / ValueAndGrad / Vjp / CustomVjp: trace, transform with autodiff.h, then inline the
// result into the current trace or compile and run it.
#include "xshard/frontend/grad.h"

#include <map>
#include <mutex>
#include <unordered_map>

#include "xshard/base/strings.h"
#include "xshard/frontend/autodiff.h"
#include "xshard/frontend/trace.h"

namespace xs::fe {

namespace {

std::vector<AVal> AValsOf(const std::vector<Tensor>& args) {
  std::vector<AVal> in;
  for (const Tensor& t : args) in.push_back(AVal{t.dtype(), t.dims(), false});
  return in;
}

std::string SignatureOf(const std::vector<Tensor>& args) {
  std::string key;
  for (const Tensor& t : args) StrAppend(&key, t.aval().ToString(), ";");
  return key;
}

Tensor LiteralTensor(const Atom& a) {
  Tensor t = Tensor::FromArray(*a.literal);
  t.impl()->aval.weak_type = a.aval().weak_type;
  return t;
}

}  // namespace

StatusOr<std::vector<Tensor>> EvalJaxpr(const Jaxpr& jaxpr, const std::vector<Tensor>& args) {
  if (args.size() != jaxpr.invars.size()) {
    return InvalidArgument("EvalJaxpr: ", args.size(), " arguments for ", jaxpr.invars.size(),
                           " inputs");
  }
  std::unordered_map<int64_t, Tensor> env;
  for (size_t i = 0; i < jaxpr.constvars.size(); ++i)
    env[jaxpr.constvars[i].id] = Tensor::FromArray(jaxpr.consts[i]);
  for (size_t i = 0; i < args.size(); ++i) env[jaxpr.invars[i].id] = args[i];
  auto get = [&](const Atom& a) { return a.is_literal() ? LiteralTensor(a) : env.at(a.var.id); };
  for (const Eqn& e : jaxpr.eqns) {
    std::vector<Tensor> in;
    for (const Atom& a : e.inputs) in.push_back(get(a));
    std::vector<Tensor> out = Bind(e.primitive, in, e.params);
    XS_RETURN_IF_ERROR(FirstError(out));
    if (out.size() != e.outputs.size()) {
      return Internal("EvalJaxpr: ", e.primitive, " gave ", out.size(), " outputs for ",
                      e.outputs.size());
    }
    for (size_t i = 0; i < out.size(); ++i) env[e.outputs[i].id] = out[i];
  }
  std::vector<Tensor> outs;
  for (const Atom& a : jaxpr.outvars) outs.push_back(get(a));
  return outs;
}

struct GradFunction::Cache {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<const Jaxpr>> jaxprs;
  std::map<std::string, std::shared_ptr<CompiledJaxpr>> compiled;
};

GradFunction::GradFunction(TensorFn fn, std::vector<int64_t> argnums, bool with_value)
    : fn_(std::move(fn)), argnums_(std::move(argnums)), with_value_(with_value),
      cache_(std::make_shared<Cache>()) {}

StatusOr<std::vector<Tensor>> GradFunction::Call(const std::vector<Tensor>& args) const {
  XS_RETURN_IF_ERROR(FirstError(args));
  std::string key = SignatureOf(args);
  std::shared_ptr<const Jaxpr> g;
  std::shared_ptr<CompiledJaxpr> compiled;
  {
    std::lock_guard<std::mutex> lock(cache_->mu);
    if (auto it = cache_->jaxprs.find(key); it != cache_->jaxprs.end()) g = it->second;
    if (auto it = cache_->compiled.find(key); it != cache_->compiled.end()) compiled = it->second;
  }
  bool traced = CurrentTrace() != nullptr;
  for (const Tensor& t : args) traced |= t.is_tracer();
  std::vector<Tensor> captured;
  if (!g || traced) {
    // Traced, fn may close over tracers of the enclosing trace: they become extra inputs of the
    // gradient program (not differentiated), so that jaxpr is rebuilt on every traced call.
    XS_ASSIGN_OR_RETURN(Jaxpr f, TraceFunction(fn_, AValsOf(args), "Grad",
                                               traced ? &captured : nullptr));
    XS_ASSIGN_OR_RETURN(Jaxpr grad, GradJaxpr(f, argnums_, with_value_));
    g = std::make_shared<const Jaxpr>(std::move(grad));
    if (!traced) {
      std::lock_guard<std::mutex> lock(cache_->mu);
      cache_->jaxprs[key] = g;
    }
  }
  if (traced) {
    std::vector<Tensor> all = args;
    all.insert(all.end(), captured.begin(), captured.end());
    return EvalJaxpr(*g, all);
  }
  if (!compiled) {
    XS_ASSIGN_OR_RETURN(compiled, CompileJaxpr(*g, "grad", {}, {}));
    std::lock_guard<std::mutex> lock(cache_->mu);
    cache_->compiled[key] = compiled;
  }
  return RunCompiled(*compiled, args);
}

StatusOr<VjpResult> Vjp(const TensorFn& fn, const std::vector<Tensor>& primals) {
  XS_RETURN_IF_ERROR(FirstError(primals));
  XS_ASSIGN_OR_RETURN(Jaxpr f, TraceFunction(fn, AValsOf(primals), "Vjp"));
  std::vector<int64_t> wrt;
  for (size_t i = 0; i < primals.size(); ++i) wrt.push_back(static_cast<int64_t>(i));
  XS_ASSIGN_OR_RETURN(Jaxpr v, VjpJaxpr(f, wrt));
  auto vjp = std::make_shared<const Jaxpr>(std::move(v));
  size_t n_out = f.outvars.size();
  std::vector<AVal> out_avals;
  for (const Atom& o : f.outvars) out_avals.push_back(o.aval());
  XS_ASSIGN_OR_RETURN(std::vector<Tensor> outs, EvalJaxpr(f, primals));
  VjpResult result;
  result.outputs = outs;
  result.backward = [vjp, primals, n_out, out_avals](const std::vector<Tensor>& cts) -> StatusOr<std::vector<Tensor>> {
    if (cts.size() != n_out) {
      return InvalidArgument("Vjp backward: ", cts.size(), " cotangents for ", n_out,
                             " outputs; give one per output");
    }
    XS_RETURN_IF_ERROR(FirstError(cts));
    for (size_t i = 0; i < n_out; ++i) {
      // As jax.vjp's pullback: each cotangent has its output's shape and dtype.
      if (cts[i].dtype() != out_avals[i].dtype || cts[i].dims() != out_avals[i].dims) {
        return InvalidArgument("Vjp backward: cotangent ", i, " is ", cts[i].aval().ToString(), " but output ", i,
                               " is ", out_avals[i].ToString(), "; give each cotangent its output's shape and dtype");
      }
    }
    std::vector<Tensor> in = primals;
    in.insert(in.end(), cts.begin(), cts.end());
    XS_ASSIGN_OR_RETURN(std::vector<Tensor> all, EvalJaxpr(*vjp, in));
    return std::vector<Tensor>(all.begin() + static_cast<int64_t>(n_out), all.end());
  };
  return result;
}

TensorFn CustomVjp(TensorFn fn, TensorFn fwd, TensorFn bwd) {
  return [fn, fwd, bwd](const std::vector<Tensor>& args) -> std::vector<Tensor> {
    auto fail = [](const Status& s) { return std::vector<Tensor>{Tensor::FromStatus(s)}; };
    Status err = FirstError(args);
    if (!err.ok()) return fail(err);
    std::vector<AVal> in = AValsOf(args);
    StatusOr<Jaxpr> call = TraceFunction(fn, in, "CustomVjp fn");
    if (!call.ok()) return fail(call.status());
    StatusOr<Jaxpr> f = TraceFunction(fwd, in, "CustomVjp fwd");
    if (!f.ok()) return fail(f.status());
    int64_t num_res = static_cast<int64_t>(f->outvars.size() - call->outvars.size());
    if (num_res < 0) {
      return fail(InvalidArgument("CustomVjp: fwd returns ", f->outvars.size(),
                                  " values, fewer than fn's ", call->outvars.size(),
                                  " outputs; return the outputs then the residuals"));
    }
    std::vector<AVal> bwd_in;
    for (size_t i = call->outvars.size(); i < f->outvars.size(); ++i)
      bwd_in.push_back(f->outvars[i].aval());
    for (const Atom& a : call->outvars) bwd_in.push_back(a.aval());
    for (AVal& a : bwd_in) a.weak_type = false;
    StatusOr<Jaxpr> b = TraceFunction(bwd, bwd_in, "CustomVjp bwd");
    if (!b.ok()) return fail(b.status());
    return Bind("custom_vjp_call", args,
                {{"call_jaxpr", std::make_shared<const Jaxpr>(std::move(*call))},
                 {"fwd_jaxpr", std::make_shared<const Jaxpr>(std::move(*f))},
                 {"bwd_jaxpr", std::make_shared<const Jaxpr>(std::move(*b))},
                 {"num_res", num_res}});
  };
}

}  // namespace xs::fe
