// Tensor handles, the per-thread trace stack, Bind (trace or run eagerly) and TraceFunction.
#include "xshard/frontend/trace.h"

#include "xshard/base/strings.h"

namespace xs::fe {

namespace {

std::vector<std::shared_ptr<TraceState>>& Stack() {
  thread_local std::vector<std::shared_ptr<TraceState>> stack;
  return stack;
}

std::shared_ptr<TensorImpl> Concrete(Array value, bool weak) {
  auto impl = std::make_shared<TensorImpl>();
  impl->aval = AVal{value.dtype(), value.dims(), weak};
  impl->value = std::move(value);
  return impl;
}

Status LeakedError(const TensorImpl& t) {
  return FailedPrecondition("a traced Tensor ", t.aval.ToString(), " of ", t.trace->owner,
                            " is used after that trace ended (it leaked out of the traced "
                            "function, e.g. through a captured variable); return it from the "
                            "function instead");
}

// The atom for `t` in `trace`: its variable, a literal (concrete scalar) or a constvar.
StatusOr<Atom> AtomFor(TraceState& trace, const Tensor& t) {
  const TensorImpl& impl = *t.impl();
  if (impl.trace) {
    if (impl.trace.get() == &trace) return impl.atom;
    if (!impl.trace->active) return LeakedError(impl);
    if (trace.allow_capture) {
      auto it = trace.capture_vars.find(&impl);
      if (it != trace.capture_vars.end()) return Atom::OfVar(it->second);
      Var v = trace.builder->NewVar(AVal{impl.aval.dtype, impl.aval.dims, false});
      trace.capture_vars[&impl] = v;
      trace.capture_order.push_back(v);
      trace.capture_tensors.push_back(t);
      return Atom::OfVar(v);
    }
    return InvalidArgument("a traced Tensor ", impl.aval.ToString(), " of ", impl.trace->owner,
                           " is used inside the inner trace ", trace.owner,
                           "; pass it to the inner function as an argument");
  }
  if (!impl.value) return FailedPrecondition("Tensor ", impl.aval.ToString(), " has no value");
  if (impl.aval.rank() == 0) return Atom::OfLiteral(*impl.value, impl.aval.weak_type);
  auto it = trace.captured.find(&impl);
  if (it != trace.captured.end()) return Atom::OfVar(it->second);
  Var v = trace.builder->NewVar(impl.aval);
  trace.jaxpr.constvars.push_back(v);
  trace.jaxpr.consts.push_back(*impl.value);
  trace.captured[&impl] = v;
  trace.kept.push_back(t.impl());
  return Atom::OfVar(v);
}

}  // namespace

Tensor::Tensor() : impl_(ErrorTensor(FailedPrecondition("uninitialized Tensor")).impl()) {}
Tensor Tensor::FromArray(Array value) { return Tensor(Concrete(std::move(value), false)); }
Tensor Tensor::Scalar(double value, DType dtype) {
  return Tensor(Concrete(Array::Full(dtype, {}, value), false));
}
Tensor Tensor::Weak(double value) {
  return Tensor(Concrete(Array::Full(DType::kF32, {}, value), true));
}
Tensor Tensor::WeakInt(int64_t value) {
  return Tensor(Concrete(Array::Full(DType::kS32, {}, static_cast<double>(value)), true));
}
Tensor Tensor::FromStatus(Status status) { return ErrorTensor(std::move(status)); }

bool Tensor::ok() const { return impl_->status.ok(); }
const Status& Tensor::status() const { return impl_->status; }
const AVal& Tensor::aval() const { return impl_->aval; }
bool Tensor::is_tracer() const { return impl_->trace != nullptr; }

StatusOr<Array> Tensor::value() const {
  if (!ok()) return status();
  if (impl_->trace) {
    if (!impl_->trace->active) return LeakedError(*impl_);
    return FailedPrecondition("cannot read the value of a traced Tensor ", impl_->aval.ToString(),
                              " inside ", impl_->trace->owner,
                              "; return it from the function and read the result");
  }
  if (!impl_->value) {
    return FailedPrecondition("Tensor ", impl_->aval.ToString(),
                              " has no global value (per-device results); use AddressableShards");
  }
  return *impl_->value;
}

const NamedSharding* Tensor::sharding() const {
  return impl_->sharding ? &*impl_->sharding : nullptr;
}

StatusOr<std::vector<Array>> Tensor::AddressableShards() const {
  if (!impl_->shards.empty()) return impl_->shards;
  XS_ASSIGN_OR_RETURN(Array v, value());
  return std::vector<Array>{std::move(v)};
}

std::string Tensor::ToString() const {
  if (!ok()) return StrCat("Error(", status().ToString(), ")");
  if (impl_->trace) return StrCat("Traced<", impl_->aval.ToString(), ">");
  if (!impl_->value) return StrCat("PerDevice<", impl_->aval.ToString(), ">");
  return impl_->value->ToString();
}

Tensor ErrorTensor(Status status) {
  XS_CHECK(!status.ok(), "an error Tensor needs an error status");
  auto impl = std::make_shared<TensorImpl>();
  impl->status = std::move(status);
  return Tensor(impl);
}

Status FirstError(const std::vector<Tensor>& inputs) {
  for (const Tensor& t : inputs)
    if (!t.ok()) return t.status();
  return OkStatus();
}

TraceState* CurrentTrace() { return Stack().empty() ? nullptr : Stack().back().get(); }

std::vector<Tensor> BindTraced(TraceState& trace, const std::string& primitive,
                               const std::vector<Tensor>& inputs, Params params) {
  auto fail = [&](Status s) {
    if (trace.first_error.ok()) trace.first_error = s;
    return std::vector<Tensor>{ErrorTensor(std::move(s))};
  };
  std::vector<Atom> atoms;
  for (const Tensor& t : inputs) {
    StatusOr<Atom> a = AtomFor(trace, t);
    if (!a.ok()) return fail(a.status());
    atoms.push_back(*a);
  }
  StatusOr<std::vector<Var>> outs = trace.builder->Bind(primitive, atoms, std::move(params));
  if (!outs.ok()) return fail(outs.status());
  std::vector<Tensor> result;
  for (const Var& v : *outs) {
    auto impl = std::make_shared<TensorImpl>();
    impl->aval = v.aval;
    impl->trace = Stack().back();
    for (auto& s : Stack())
      if (s.get() == &trace) impl->trace = s;
    impl->atom = Atom::OfVar(v);
    result.emplace_back(impl);
  }
  return result;
}

std::vector<Tensor> Bind(const std::string& primitive, const std::vector<Tensor>& inputs,
                         Params params) {
  Status err = FirstError(inputs);
  if (!err.ok()) return {ErrorTensor(err)};
  for (const Tensor& t : inputs) {
    if (t.impl()->trace && !t.impl()->trace->active) return {ErrorTensor(LeakedError(*t.impl()))};
  }
  if (TraceState* trace = CurrentTrace()) {
    return BindTraced(*trace, primitive, inputs, std::move(params));
  }
  return BindEager(primitive, inputs, std::move(params));
}

Tensor Bind1(const std::string& primitive, const std::vector<Tensor>& inputs, Params params) {
  std::vector<Tensor> out = Bind(primitive, inputs, std::move(params));
  if (out.size() != 1) {
    return ErrorTensor(InvalidArgument(primitive, " returned ", out.size(),
                                       " outputs where one was expected"));
  }
  return out[0];
}

StatusOr<Jaxpr> TraceFunction(const TensorFn& fn, const std::vector<AVal>& in,
                              const std::string& owner, std::vector<Tensor>* captured) {
  auto trace = std::make_shared<TraceState>();
  trace->owner = owner;
  trace->allow_capture = captured != nullptr;
  trace->builder = std::make_unique<JaxprBuilder>(&trace->jaxpr);
  std::vector<Tensor> args;
  for (const AVal& a : in) {
    Var v = trace->builder->NewVar(AVal{a.dtype, a.dims, false});
    trace->jaxpr.invars.push_back(v);
    auto impl = std::make_shared<TensorImpl>();
    impl->aval = v.aval;
    impl->trace = trace;
    impl->atom = Atom::OfVar(v);
    args.emplace_back(impl);
  }
  std::vector<Tensor> outs;
  {
    // Popped however fn leaves (an exception included), so the stack never keeps a dead trace.
    struct Pop {
      TraceState* trace;
      ~Pop() {
        Stack().pop_back();
        trace->active = false;
      }
    } pop{trace.get()};
    Stack().push_back(trace);
    outs = fn(args);
  }
  Status status = FirstError(outs);
  if (status.ok()) status = trace->first_error;
  if (status.ok()) {
    for (const Tensor& t : outs) {
      StatusOr<Atom> a = AtomFor(*trace, t);
      if (!a.ok()) {
        status = Annotate(a.status(), StrCat(owner, " output: "));
        break;
      }
      trace->jaxpr.outvars.push_back(*a);
    }
  }
  trace->active = false;
  if (!status.ok()) return status;
  for (const Var& v : trace->capture_order) trace->jaxpr.invars.push_back(v);
  if (captured != nullptr) *captured = trace->capture_tensors;
  return std::move(trace->jaxpr);
}

}  // namespace xs::fe
