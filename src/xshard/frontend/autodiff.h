// Reverse-mode autodiff on Jaxprs: VjpJaxpr / GradJaxpr turn a traced program into the program
// of its vector-Jacobian product, equation by equation with JAX's JVP rules transposed, so the
// result prints as JAX's `make_jaxpr(grad(f))` (forward equations and residuals first, then
// cotangent equations in reverse order, fan-out summed with `add_any`).
#ifndef XSHARD_FRONTEND_AUTODIFF_H_
#define XSHARD_FRONTEND_AUTODIFF_H_

#include <cstdint>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/frontend/jaxpr.h"

namespace xs::fe {

// f: invars -> outvars. Returns a Jaxpr with invars (f's invars..., one cotangent per outvar,
// typed like the outvar) and outvars (f's outvars..., cotangents of f's invars at positions
// `wrt`, in `wrt` order). A `wrt` input with no path to an output gets zeros; an input not in
// `wrt` gets no cotangent work. Errors: a `wrt` position out of range or repeated, a `wrt` input
// of integer or bool dtype (JAX refuses those too), a primitive without a rule (named).
StatusOr<Jaxpr> VjpJaxpr(const Jaxpr& f, const std::vector<int64_t>& wrt);

// f has exactly one output, a float scalar. Returns a Jaxpr with f's invars and outvars
// ([value,] d value / d invars[wrt[i]]...), the output cotangent seeded with the literal 1.0 —
// JAX's grad (with_value=false) and value_and_grad (with_value=true).
StatusOr<Jaxpr> GradJaxpr(const Jaxpr& f, const std::vector<int64_t>& wrt, bool with_value);

// Primitives that only autodiff emits (JAX's names). Gradients containing them run after
// ExpandAutodiffPrimitives (below), or on a lowering that knows them.
//   add_any x y    x + y (same types), the sum of two cotangent contributions.
//   select_and_scatter_add[padding select_prim=ge window_dimensions window_strides] source operand
//       typed like `operand`: the cotangent of reduce_window_max. Each window of `operand`
//       (windows as reduce_window_max's params, one per element of `source`) adds its `source`
//       element at the position of the window's maximum (the first one on ties), onto zeros.
//   rev[dimensions] x    x reversed along `dimensions` (same type); conv's lhs cotangent.
inline constexpr char kAddAny[] = "add_any";
inline constexpr char kRev[] = "rev";
inline constexpr char kSelectAndScatterAdd[] = "select_and_scatter_add";

// `j` with the primitives above rewritten into ones AbstractEval and lowering know, for running
// a gradient: add_any -> add; rev -> per reversed dim, a dot_general with the anti-identity
// (built from iota, eq, convert_element_type) and a transpose back; select_and_scatter_add ->
// for each window offset, the strided slice of the (-inf padded) operand, its first-maximum
// mask against the window max (XLA's select-and-scatter with `ge`: the first maximum in
// row-major window order wins), the selected cotangents padded back to the operand's positions,
// summed. Sub-jaxprs (pjit, custom_vjp_call) are rewritten too; other equations are copied.
// Errors: malformed params of those primitives (named).
StatusOr<Jaxpr> ExpandAutodiffPrimitives(const Jaxpr& j);

}  // namespace xs::fe

#endif  // XSHARD_FRONTEND_AUTODIFF_H_
