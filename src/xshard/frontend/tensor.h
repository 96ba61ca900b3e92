// Tensor: a jnp-style array for C++. Eager by default (each op runs at once as a small program,
// compiled once per primitive, parameters and input types), traced inside MakeJaxpr / Jit /
// Grad (each op appends a JAX-named equation to the current Jaxpr). A global Tensor may carry a
// NamedSharding (DevicePut, jit.h); eager ops on sharded tensors run partitioned on the mesh's
// devices and keep a sharding on their results.
//
//   Tensor x = Tensor::FromArray(Array::Full(DType::kF32, {10}, 1.0));
//   Tensor y = 1 / (1 + Exp(-x));      // traced: neg, exp, add c 1.0, div 1.0 d (seed 002)
//   StatusOr<Array> v = y.value();
//
// Errors. Operators cannot return a Status, so a mistake (shape mismatch in `a + b`, a bad axis,
// a tracer used after its trace ended) yields an *error Tensor*: ok() is false, status() holds
// the message (naming the op, the shapes and the fix), and every op taking it returns it again.
// The error surfaces at the first value() / Jit / MakeJaxpr call, which returns that Status.
// Nothing aborts.
//
// C++ doubles in operators are weak-typed scalars (JAX's Python scalars): `x * 2.0` keeps x's
// dtype and traces as `mul x 2.0`. Binary ops broadcast by numpy rules (rank-0 operands are
// passed as they are, as JAX passes literals) and promote dtypes (weak < int < float, wider wins).
#ifndef XSHARD_FRONTEND_TENSOR_H_
#define XSHARD_FRONTEND_TENSOR_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/core/array.h"
#include "xshard/frontend/jaxpr.h"
#include "xshard/sharding/named_sharding.h"

namespace xs::fe {

struct TensorImpl;

class Tensor {
 public:
  // An error Tensor ("uninitialized Tensor"); assign a real one.
  Tensor();
  // A concrete, unsharded array.
  static Tensor FromArray(Array value);
  // A strongly typed scalar (f32 unless told).
  static Tensor Scalar(double value, DType dtype = DType::kF32);
  // A weak-typed f32 scalar: what a C++ double in an operator becomes.
  static Tensor Weak(double value);
  // A weak-typed s32 scalar: what a C++ int in an operator becomes (it takes a float operand's
  // type, as `x * 2` does in JAX).
  static Tensor WeakInt(int64_t value);
  // An error Tensor carrying `status` (which must not be OK).
  static Tensor FromStatus(Status status);

  bool ok() const;
  const Status& status() const;  // OK unless an error Tensor
  const AVal& aval() const;      // f32[] for an error Tensor
  DType dtype() const { return aval().dtype; }
  const std::vector<int64_t>& dims() const { return aval().dims; }
  int64_t rank() const { return aval().rank(); }
  // True inside a trace (MakeJaxpr / Jit / Grad): the Tensor is a variable of the trace.
  bool is_tracer() const;

  // The global value. Errors: an error Tensor's status; a tracer ("cannot read the value of a
  // traced Tensor ..."; return it from the function instead).
  StatusOr<Array> value() const;
  // The sharding of a global array, or nullptr (unsharded, or a tracer).
  const NamedSharding* sharding() const;
  // Each device's buffer (jax.Array.addressable_shards): for a sharded array, shard d is the box
  // mesh device d holds; an unsharded array has one shard, itself. Errors as value().
  StatusOr<std::vector<Array>> AddressableShards() const;
  // The value as JAX prints an array ("[1. 2.]"), "Traced<f32[10]>" for a tracer, or
  // "Error(...)".
  std::string ToString() const;

  // Internal (frontend): the shared state behind the handle.
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}
  const std::shared_ptr<TensorImpl>& impl() const { return impl_; }

 private:
  std::shared_ptr<TensorImpl> impl_;
};

// Arguments of Jit / MakeJaxpr calls: Tensors as they are, Arrays as unsharded Tensors, C++
// numbers as strongly typed f32 scalars (JAX traces a Python float argument as f32[]).
inline Tensor AsTensor(const Tensor& t) { return t; }
inline Tensor AsTensor(const Array& a) { return Tensor::FromArray(a); }
inline Tensor AsTensor(double v) { return Tensor::Scalar(v); }
template <typename T>
concept TensorLike = requires(const T& t) { AsTensor(t); };

// Binds `primitive` (a JAX primitive name with its parameters, see jaxpr.h) to `inputs`:
// traced when a trace is active, else run eagerly. No promotion or broadcasting: the inputs must
// already satisfy AbstractEval. Returns one Tensor per output (error Tensors on failure).
std::vector<Tensor> Bind(const std::string& primitive, const std::vector<Tensor>& inputs,
                         Params params = {});
Tensor Bind1(const std::string& primitive, const std::vector<Tensor>& inputs, Params params = {});

// Elementwise, unary. Exp, Log, Tanh, Logistic, Sqrt, Rsqrt, Sin and Cos convert a bool or
// integer operand to f32 first, as jnp does.
Tensor Neg(const Tensor& x);
Tensor Exp(const Tensor& x);
Tensor Log(const Tensor& x);
Tensor Tanh(const Tensor& x);
Tensor Logistic(const Tensor& x);  // jax.nn.sigmoid: one `logistic` equation
Tensor Sqrt(const Tensor& x);
Tensor Rsqrt(const Tensor& x);
Tensor Abs(const Tensor& x);
Tensor Sign(const Tensor& x);
Tensor Sin(const Tensor& x);
Tensor Cos(const Tensor& x);
Tensor Relu(const Tensor& x);  // jax.nn.relu: max(x, 0), derivative 0 at 0
Tensor IntegerPow(const Tensor& x, int64_t y);
Tensor StopGradient(const Tensor& x);

// Elementwise, binary (numpy broadcasting and promotion).
Tensor Add(const Tensor& a, const Tensor& b);
Tensor Sub(const Tensor& a, const Tensor& b);
Tensor Mul(const Tensor& a, const Tensor& b);
Tensor Div(const Tensor& a, const Tensor& b);
Tensor Maximum(const Tensor& a, const Tensor& b);
Tensor Minimum(const Tensor& a, const Tensor& b);
Tensor Pow(const Tensor& a, const Tensor& b);  // float `pow`; use IntegerPow for int exponents
Tensor Eq(const Tensor& a, const Tensor& b);
Tensor Ne(const Tensor& a, const Tensor& b);
Tensor Lt(const Tensor& a, const Tensor& b);
Tensor Le(const Tensor& a, const Tensor& b);
Tensor Gt(const Tensor& a, const Tensor& b);
Tensor Ge(const Tensor& a, const Tensor& b);
Tensor LogicalAnd(const Tensor& a, const Tensor& b);
Tensor LogicalOr(const Tensor& a, const Tensor& b);
Tensor LogicalNot(const Tensor& a);
// jnp.where(pred, a, b): select_n(pred, b, a) after broadcasting the three.
Tensor Where(const Tensor& pred, const Tensor& a, const Tensor& b);

Tensor operator-(const Tensor& x);
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
// jnp's true division: integer operands are converted to f32 first (Div is lax.div).
Tensor operator/(const Tensor& a, const Tensor& b);
// With a C++ scalar (weak-typed: a double is a weak f32, an int a weak s32). As JAX traced seed
// 002, `1 + x` binds `add x 1.0` and `1 / x` binds `div 1.0 x` (commutative ops put the Tensor
// first).
Tensor operator+(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(const Tensor& a, double b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(const Tensor& a, double b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(const Tensor& a, double b);
Tensor operator/(double a, const Tensor& b);
Tensor operator+(const Tensor& a, int b);
Tensor operator+(int a, const Tensor& b);
Tensor operator-(const Tensor& a, int b);
Tensor operator-(int a, const Tensor& b);
Tensor operator*(const Tensor& a, int b);
Tensor operator*(int a, const Tensor& b);
Tensor operator/(const Tensor& a, int b);
Tensor operator/(int a, const Tensor& b);

// Comparisons as in jnp (x > 0.0 is `gt x 0.0`; a bool Tensor): Tensor with Tensor, or with a
// C++ scalar on either side (weak-typed, as the arithmetic operators).
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, double b);
Tensor operator<=(const Tensor& a, double b);
Tensor operator>(const Tensor& a, double b);
Tensor operator>=(const Tensor& a, double b);
Tensor operator<(const Tensor& a, int b);
Tensor operator<=(const Tensor& a, int b);
Tensor operator>(const Tensor& a, int b);
Tensor operator>=(const Tensor& a, int b);
Tensor operator<(double a, const Tensor& b);
Tensor operator>(double a, const Tensor& b);
Tensor operator<(int a, const Tensor& b);
Tensor operator>(int a, const Tensor& b);

// Types and shapes.
Tensor Astype(const Tensor& x, DType dtype);  // convert_element_type[new_dtype weak_type=False]
Tensor BroadcastTo(const Tensor& x, std::vector<int64_t> dims);  // numpy rules
// jnp.reshape: one dim may be -1 (inferred).
Tensor Reshape(const Tensor& x, std::vector<int64_t> dims);
Tensor Transpose(const Tensor& x, std::vector<int64_t> permutation = {});  // {}: reversed
Tensor Squeeze(const Tensor& x, std::vector<int64_t> axes);
Tensor ExpandDims(const Tensor& x, int64_t axis);
Tensor Slice(const Tensor& x, std::vector<int64_t> start, std::vector<int64_t> limit,
             std::vector<int64_t> strides = {});
// lax.dynamic_slice: `start` holds one integer scalar Tensor per dim; a negative index counts
// from the end (i + size), then starts are clamped so that the slice fits, as in JAX.
Tensor DynamicSlice(const Tensor& x, const std::vector<Tensor>& start,
                    std::vector<int64_t> sizes);
Tensor DynamicUpdateSlice(const Tensor& x, const Tensor& update, const std::vector<Tensor>& start);
Tensor Concatenate(const std::vector<Tensor>& xs, int64_t axis);
// lax.pad with (low, high, interior) per dim.
Tensor Pad(const Tensor& x, double value, std::vector<std::vector<int64_t>> config);

// Reductions over `axes` ({}: all; negative axes count from the end). As jnp: Sum adds bool and
// narrow integers as int32 (uint32) and f16 / bf16 in f32; Mean of bool / integers is f32.
Tensor Sum(const Tensor& x, std::vector<int64_t> axes = {});
Tensor Max(const Tensor& x, std::vector<int64_t> axes = {});
Tensor Min(const Tensor& x, std::vector<int64_t> axes = {});
Tensor Mean(const Tensor& x, std::vector<int64_t> axes = {});
Tensor Argmax(const Tensor& x, int64_t axis);
// log_softmax over `axis` (flax's nn.log_softmax).
Tensor LogSoftmax(const Tensor& x, int64_t axis = -1);

// Contractions.
// lax.dot_general: contracting {lhs, rhs} and batch {lhs, rhs} dims; preferred_element_type
// sets the result dtype (nullopt: the inputs').
Tensor DotGeneral(const Tensor& a, const Tensor& b, std::vector<int64_t> lhs_contracting,
                  std::vector<int64_t> rhs_contracting, std::vector<int64_t> lhs_batch = {},
                  std::vector<int64_t> rhs_batch = {},
                  std::optional<DType> preferred_element_type = std::nullopt);
// jnp.matmul (x @ y): rank-1 operands are vectors, leading (batch) dims broadcast.
Tensor Matmul(const Tensor& a, const Tensor& b);
// jnp.einsum for two operands without repeated indices within one operand: "ij,jk->ik",
// "bij,bjk->bik".
Tensor Einsum(const std::string& spec, const Tensor& a, const Tensor& b);
// flax nn.Conv on NHWC input with an HWIO kernel: padding "SAME" or "VALID".
Tensor Conv(const Tensor& x, const Tensor& kernel, std::vector<int64_t> strides = {},
            const std::string& padding = "SAME");
// flax avg_pool / max_pool on NHWC input, VALID padding.
Tensor AvgPool(const Tensor& x, std::vector<int64_t> window, std::vector<int64_t> strides);
Tensor MaxPool(const Tensor& x, std::vector<int64_t> window, std::vector<int64_t> strides);

// More jnp / jax.nn / lax math (tensor_math.cc), each a JAX-named equation or JAX's composition
// of them, differentiable where JAX's is.
Tensor Square(const Tensor& x);    // jnp.square: `square`
Tensor Log1p(const Tensor& x);     // `log1p`; bool / integer operands convert to f32 first
Tensor Expm1(const Tensor& x);     // `expm1`
Tensor Erf(const Tensor& x);       // lax.erf / jax.scipy.special.erf: `erf`
Tensor Erfc(const Tensor& x);      // lax.erfc: `erfc` (lowered as 1 - erf)
Tensor IsFinite(const Tensor& x);  // jnp.isfinite: `is_finite` (bool; always true for integers)
// jnp.clip(x, lo, hi): max(lo, x) then min(hi, .) (C++ doubles are weak-typed literals).
Tensor Clip(const Tensor& x, const Tensor& lo, const Tensor& hi);
Tensor Clip(const Tensor& x, double lo, double hi);
// jax.nn.softmax over `axis` (the max is shifted out under stop_gradient, as JAX's softmax).
Tensor Softmax(const Tensor& x, int64_t axis = -1);
// jax.nn.logsumexp over `axes` ({}: all): a max under stop_gradient (0 where not finite),
// log(sum(exp(x - max))) + max.
Tensor Logsumexp(const Tensor& x, std::vector<int64_t> axes = {});
// jnp.var / jnp.std with ddof (divides by n - ddof); integers are computed in f32. (jnp.var is
// Variance here: `Var` names the jaxpr variable type.)
Tensor Variance(const Tensor& x, std::vector<int64_t> axes = {}, int64_t ddof = 0);
Tensor Std(const Tensor& x, std::vector<int64_t> axes = {}, int64_t ddof = 0);
// jnp.prod: `reduce_prod` (bool and narrow integers as int32, as Sum).
Tensor Prod(const Tensor& x, std::vector<int64_t> axes = {});
// jax.nn.gelu: approximate (tanh form) or exact (erfc form), traced inline as JAX 0.10 does.
Tensor Gelu(const Tensor& x, bool approximate = true);
Tensor Silu(const Tensor& x);  // jax.nn.silu: x * logistic(x) in a `pjit[name=silu]`, as JAX
// jax.nn.softplus: log(1 + exp(x)) in a `pjit[name=softplus]`, stable for large |x|, derivative
// logistic(x) everywhere. (JAX's body is a custom_jvp logaddexp(x, 0), which this front end has
// no primitive for: here x + log1p(exp(-x)) for x > 0, log1p(exp(x)) otherwise.)
Tensor Softplus(const Tensor& x);
Tensor Argmin(const Tensor& x, int64_t axis);
// lax.cumsum / cumprod / cummax / cummin[axis reverse] (jnp.cumsum is reverse=false); lowered as
// JAX does, to a reduce-window spanning the axis padded n - 1 before (after when reverse).
Tensor Cumsum(const Tensor& x, int64_t axis = 0, bool reverse = false);
Tensor Cumprod(const Tensor& x, int64_t axis = 0, bool reverse = false);
Tensor Cummax(const Tensor& x, int64_t axis = 0, bool reverse = false);
Tensor Cummin(const Tensor& x, int64_t axis = 0, bool reverse = false);
// jax.nn.one_hot(ids, n): eq of ids[..., None] with an iota, converted to `dtype`; ids outside
// 0..n-1 give all-zero rows.
Tensor OneHot(const Tensor& ids, int64_t n, DType dtype = DType::kF32);
// jnp.take(x, indices, axis): a `gather` (mode fill: out-of-bounds rows are NaN for floats);
// negative indices count from the end. The result has x's dims with `axis` replaced by
// indices' dims.
Tensor Take(const Tensor& x, const Tensor& indices, int64_t axis = 0);
// jnp.take_along_axis(x, indices, axis): indices has x's rank and x's dims except along `axis`.
Tensor TakeAlongAxis(const Tensor& x, const Tensor& indices, int64_t axis);
// jnp.sort / jnp.argsort along `axis`: stable, NaNs (of either sign) last and -0.0 equal to 0.0,
// as JAX's comparator.
Tensor Sort(const Tensor& x, int64_t axis = -1);
Tensor Argsort(const Tensor& x, int64_t axis = -1);
// lax.top_k: the k largest along the last dim and their int32 indices (ties: lower index
// first; XLA's total order, so +NaN is the largest and -NaN the smallest). Errors: k outside
// 0..last dim (both results are the error Tensor).
std::pair<Tensor, Tensor> TopK(const Tensor& x, int64_t k);

// Creation (eager unless a trace is active, where they are equations).
Tensor Iota(DType dtype, std::vector<int64_t> dims, int64_t dimension = 0);
Tensor Arange(int64_t start, int64_t stop, DType dtype = DType::kS32);
Tensor Full(std::vector<int64_t> dims, double value, DType dtype = DType::kF32);
Tensor Zeros(std::vector<int64_t> dims, DType dtype = DType::kF32);
Tensor Ones(std::vector<int64_t> dims, DType dtype = DType::kF32);

}  // namespace xs::fe

#endif  // XSHARD_FRONTEND_TENSOR_H_
