// Grad, ValueAndGrad, Vjp and CustomVjp over Tensor functions (JAX's transformations), built on
// the Jaxpr autodiff of autodiff.h. Called on tracers (inside MakeJaxpr / Jit) the gradient
// program's equations are inlined into the current trace, so `MakeJaxpr(Grad(sigmoid))(1.0)`
// prints seed 002's jaxpr (tracers the function closes over are constants of the gradient, as in
// JAX); called on concrete Tensors the gradient program is compiled once per input signature
// and run.
//
//   GradFunction g = Grad(sigmoid);              // d/dx of a scalar-valued function
//   Tensor dx = g(Tensor::Scalar(1.0));          // 0.19661193
//   auto add = CustomVjp(fwd_fn, fwd, bwd);      // seed 001's Add with its own backward
#ifndef XSHARD_FRONTEND_GRAD_H_
#define XSHARD_FRONTEND_GRAD_H_

#include <functional>
#include <memory>
#include <vector>

#include "xshard/frontend/jit.h"

namespace xs::fe {

class GradFunction {
 public:
  GradFunction(TensorFn fn, std::vector<int64_t> argnums, bool with_value);
  // Grad: one gradient per argnum; ValueAndGrad: the value first. Errors: fn's output is not
  // one float scalar, an argnum out of range or of integer dtype, a failed op inside fn.
  StatusOr<std::vector<Tensor>> Call(const std::vector<Tensor>& args) const;
  // The single result (Grad with one argnum); an error Tensor otherwise.
  template <TensorLike... Args>
  Tensor operator()(const Args&... args) const {
    StatusOr<std::vector<Tensor>> r = Call({AsTensor(args)...});
    if (!r.ok()) return Tensor::FromStatus(r.status());
    if (r->size() != 1) {
      return Tensor::FromStatus(InvalidArgument("this gradient has ", r->size(),
                                                " results; use Call() to get them all"));
    }
    return (*r)[0];
  }

 private:
  struct Cache;
  TensorFn fn_;
  std::vector<int64_t> argnums_;
  bool with_value_;
  std::shared_ptr<Cache> cache_;
};

template <typename F>
GradFunction Grad(F fn, std::vector<int64_t> argnums = {0}) {
  return GradFunction(AsTensorFn(std::move(fn)), std::move(argnums), false);
}
template <typename F>
GradFunction ValueAndGrad(F fn, std::vector<int64_t> argnums = {0}) {
  return GradFunction(AsTensorFn(std::move(fn)), std::move(argnums), true);
}

// jax.vjp(fn, *primals): the outputs and a function from output cotangents (one per output,
// typed like it) to one cotangent per primal.
struct VjpResult {
  std::vector<Tensor> outputs;
  std::function<StatusOr<std::vector<Tensor>>(const std::vector<Tensor>&)> backward;
};
StatusOr<VjpResult> Vjp(const TensorFn& fn, const std::vector<Tensor>& primals);

// jax.custom_vjp: a function computing `fn` whose derivative comes from `fwd` (primals ->
// fn's outputs followed by residuals) and `bwd` (residuals followed by output cotangents -> one
// cotangent per primal). Calling it binds one `custom_vjp_call[call_jaxpr fwd_jaxpr bwd_jaxpr
// num_res]` equation (eagerly: runs fn). Errors surface as error Tensors (jaxpr shapes that do
// not fit, named by custom_vjp_call).
TensorFn CustomVjp(TensorFn fn, TensorFn fwd, TensorFn bwd);

// Evaluates `jaxpr` on `args` by binding each equation (traced into the current trace when one
// is active, else eagerly, op by op). Constvars become concrete Tensors.
StatusOr<std::vector<Tensor>> EvalJaxpr(const Jaxpr& jaxpr, const std::vector<Tensor>& args);

}  // namespace xs::fe

#endif  // XSHARD_FRONTEND_GRAD_H_
