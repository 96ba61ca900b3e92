// Structured control flow over Tensor functions, as jax.lax: Cond / Switch (`cond` equation, HLO
// conditional), WhileLoop (`while`, HLO while), Scan (`scan`, lowered to a counted HLO while) and
// ForiLoop (a scan when its bounds are static, as JAX's fori_loop). Each function argument is
// traced once on the operands' types; tracers and concrete arrays it closes over become leading
// operands of the equation (JAX's consts), so the functions may use values of an enclosing trace.
// Eagerly the equation runs as one compiled program; under Jit it is part of the jitted program
// and takes the operands' shardings.
//
//   std::vector<Tensor> r = Cond(x > 0.0, [](Tensor v) { return Sin(v); },
//                                [](Tensor v) { return Cos(v); }, {x});
//   ScanResult s = Scan([](const std::vector<Tensor>& a) {      // a = {carry, x_i}
//     Tensor c = a[0] + a[1];
//     return std::vector<Tensor>{c, c};                          // {new carry, y_i}
//   }, {Tensor::Scalar(0.0)}, {xs});                             // s.carry: sum, s.ys: cumsum
//
// Gradients: Grad / Vjp differentiate through Cond / Switch (each branch split into a forward
// that also returns its residuals and a backward, JAX's partial evaluation of cond) and Scan /
// ForiLoop (a reverse scan over the stacked residuals). WhileLoop has no reverse-mode derivative
// (as in JAX): differentiating through it is an error naming ForiLoop / Scan.
//
// Errors come back as error Tensors (every result of the call is the error, one Tensor when the
// result count is unknown): a predicate that is not a scalar bool, branches returning different
// types, a loop body whose carry types change, xs of different lengths.
#ifndef XSHARD_FRONTEND_CONTROL_H_
#define XSHARD_FRONTEND_CONTROL_H_

#include <cstdint>
#include <vector>

#include "xshard/frontend/jit.h"

namespace xs::fe {

// lax.cond(pred, true_fn, false_fn, *operands): pred a bool scalar; both functions take the
// operands and return the same types. Traced: convert_element_type of pred to int32, then
// cond[branches=(false_fn, true_fn)].
std::vector<Tensor> Cond(const Tensor& pred, const TensorFn& true_fn, const TensorFn& false_fn,
                         const std::vector<Tensor>& operands);
template <typename T, typename F>
std::vector<Tensor> Cond(const Tensor& pred, T true_fn, F false_fn, const std::vector<Tensor>& operands) {
  return Cond(pred, AsTensorFn(std::move(true_fn)), AsTensorFn(std::move(false_fn)), operands);
}

// lax.switch(index, branches, *operands): an integer scalar index, clamped to the branches
// (lax.clamp, as JAX).
std::vector<Tensor> Switch(const Tensor& index, const std::vector<TensorFn>& branches,
                           const std::vector<Tensor>& operands);

// lax.while_loop(cond_fn, body_fn, init): cond_fn(carry...) -> bool scalar, body_fn(carry...) ->
// carry of the same types. Returns the final carry.
std::vector<Tensor> WhileLoop(const TensorFn& cond_fn, const TensorFn& body_fn, const std::vector<Tensor>& init);
template <typename C, typename B>
std::vector<Tensor> WhileLoop(C cond_fn, B body_fn, const std::vector<Tensor>& init) {
  return WhileLoop(AsTensorFn(std::move(cond_fn)), AsTensorFn(std::move(body_fn)), init);
}

// lax.fori_loop(lower, upper, body_fn, init) with static bounds: body_fn(i, carry...) -> carry,
// i an int32 scalar. Traced as JAX does for static bounds: a scan of length upper - lower whose
// carry is (i, carry...), so it is differentiable. Returns the final carry.
std::vector<Tensor> ForiLoop(int64_t lower, int64_t upper, const TensorFn& body_fn, const std::vector<Tensor>& init);
template <typename B>
std::vector<Tensor> ForiLoop(int64_t lower, int64_t upper, B body_fn, const std::vector<Tensor>& init) {
  return ForiLoop(lower, upper, AsTensorFn(std::move(body_fn)), init);
}

// lax.scan(f, init, xs, length, reverse): f(carry..., x...) -> (carry..., y...) where x is each
// xs's slice along its leading dim (processed last to first when reverse). Returns the final
// carry and the ys stacked along a new leading dim. length: xs' leading dim (needed when xs is
// empty; -1 takes it from xs).
struct ScanResult {
  std::vector<Tensor> carry;
  std::vector<Tensor> ys;
  bool ok() const;
  Status status() const;  // the first error among carry and ys
};
ScanResult Scan(const TensorFn& f, const std::vector<Tensor>& init, const std::vector<Tensor>& xs, int64_t length = -1,
                bool reverse = false);
template <typename F>
ScanResult Scan(F f, const std::vector<Tensor>& init, const std::vector<Tensor>& xs, int64_t length = -1,
                bool reverse = false) {
  return Scan(AsTensorFn(std::move(f)), init, xs, length, reverse);
}

}  // namespace xs::fe

#endif  // XSHARD_FRONTEND_CONTROL_H_
