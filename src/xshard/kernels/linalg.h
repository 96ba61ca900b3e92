// Dense linear algebra ops of XLA on batches of matrices: cholesky and triangular-solve. Each
// works on the two minor dims of its operands (leading dims are a batch) and computes in f64 /
// c128 whatever the element type (f16, bf16, f32, f64, c64, c128), rounding once at the end.
#ifndef XSHARD_KERNELS_LINALG_H_
#define XSHARD_KERNELS_LINALG_H_

#include <vector>

#include "xshard/base/status.h"
#include "xshard/core/array.h"
#include "xshard/ir/attributes.h"

namespace xs::kernels {

// cholesky(a), lower=L: a = L L^H (lower) or U^H U (upper) for each [n, n] matrix of `a`. Only
// the named triangle of `a` is read; the other triangle of the result is zero. A matrix that is
// not positive definite comes back all NaN (as jnp.linalg.cholesky gives).
StatusOr<Array> Cholesky(const Array& a, bool lower);

// triangular-solve's transpose_a attribute (Attributes::transpose_a).
using TransposeA = ::xs::TransposeKind;

struct TriangularSolveOptions {
  bool left_side = true;       // solve op(a) x = b (true) or x op(a) = b (false)
  bool lower = true;           // a's lower triangle is read (else the upper)
  bool unit_diagonal = false;  // a's diagonal is taken as ones
  TransposeA transpose_a = TransposeA::kNoTranspose;
};

// triangular-solve(a, b): a is [..., m, m], b is [..., m, n] (left side) or [..., n, m]; the
// batch dims agree. Returns x with b's shape. A zero on the diagonal gives inf / NaN, as
// back substitution does.
StatusOr<Array> TriangularSolve(const Array& a, const Array& b, const TriangularSolveOptions& options);

// LAPACK's potrf as JAX's CPU lowering calls it (the `lapack_?potrf_ffi` custom-calls): returns
// (factor, info). The factor's named triangle holds the Cholesky factor, the other triangle keeps
// a's values (LAPACK does not touch it); info (s32, one per matrix, shape = batch dims) is 0, or
// j+1 when the leading minor of order j+1 is not positive definite.
StatusOr<std::vector<Array>> LapackPotrf(const Array& a, bool lower);

// LAPACK's getrf (`lapack_?getrf_ffi`): LU with partial pivoting of each [m, n] matrix: returns
// (lu, pivots s32[..., min(m, n)], info s32[...]) with L's unit diagonal implicit, 1-based pivot
// rows as LAPACK gives them, and info = j+1 for the first exactly zero pivot U[j, j] (else 0).
StatusOr<std::vector<Array>> LapackGetrf(const Array& a);

}  // namespace xs::kernels

#endif  // XSHARD_KERNELS_LINALG_H_
