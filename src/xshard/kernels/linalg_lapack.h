// JAX's LAPACK custom-calls on CPU (`lapack_<s|d|c|z><routine>_ffi`, jaxlib/cpu/lapack_kernels.cc)
// beyond potrf / getrf / trsm (linalg.h): each calls the LAPACK routine of the system's library
// (OpenBLAS; Fortran calling convention, 32-bit ints), so results follow the same algorithm as
// JAX's (eigenvector and singular-vector signs included).
//
// Conventions of every function: the operands are logical row-major xs::Array values whose two
// minor dims are the matrices (leading dims are a batch, looped over); each matrix is transposed
// to column-major for the call and back. Element types are f32, f64, c64 and c128 (the routine's
// s, d, c, z variants). Results come back in the order and with the shapes and dtypes of the
// custom-call's result tuple; `info` (s32, one per matrix, shape = the batch dims) is LAPACK's,
// untouched (JAX turns info != 0 into NaNs itself). Bad shapes and types are InvalidArgument.
#ifndef XSHARD_KERNELS_LINALG_LAPACK_H_
#define XSHARD_KERNELS_LINALG_LAPACK_H_

#include <vector>

#include "xshard/base/status.h"
#include "xshard/core/array.h"

namespace xs::kernels {

// ?geqrf: QR factorization of each [m, n] matrix: (a_out, tau[..., min(m, n)]); R in a_out's
// upper triangle, the Householder vectors below it.
StatusOr<std::vector<Array>> LapackGeqrf(const Array& a);

// ?geqp3: QR with column pivoting: (a_out, jpvt_out s32[..., n] (1-based), tau[..., min(m, n)]).
// `jpvt` (s32[..., n]) marks leading columns (nonzero) or free ones (0, as JAX passes).
StatusOr<std::vector<Array>> LapackGeqp3(const Array& a, const Array& jpvt);

// ?orgqr / ?ungqr: the [m, n] matrix Q (m >= n) of the k = tau's size reflectors of `a`.
StatusOr<Array> LapackOrgqr(const Array& a, const Array& tau);

// ?ormqr / ?unmqr: Q c (left), c Q (right), with Q^T / Q^H when `transpose`, Q given by the
// reflectors of `a` ([..., r, k'] with r = c's rows (left) or columns (right)) and tau[..., k].
StatusOr<Array> LapackOrmqr(const Array& a, const Array& tau, const Array& c, bool left, bool transpose);

// ?syevd / ?heevd: eigenvalues (ascending) of each Hermitian [n, n] matrix, reading its lower or
// upper triangle: (a_out, w real[..., n], info). With `vectors` (mode 'V') a_out holds the
// orthonormal eigenvectors as columns; else (mode 'N') what LAPACK leaves in a.
StatusOr<std::vector<Array>> LapackSyevd(const Array& a, bool lower, bool vectors);

struct SvdOptions {
  char mode = 'A';                 // 'A' full U / V^T, 'S' economy, 'N' singular values only
  bool divide_and_conquer = true;  // ?gesdd (JAX's default), else ?gesvd (SvdAlgorithm.QR)
  bool full_uv = true;             // mode 'N': the (unwritten, zero) u / vt are [m, m] / [n, n]
};
// ?gesdd / ?gesvd: (a_out, s real[..., k], u, vt, info), k = min(m, n); u is [m, m] (full) or
// [m, k], vt [n, n] or [k, n]; with mode 'N' u and vt are zeros. Mode 'O' is refused (JAX's
// kernel refuses it too).
StatusOr<std::vector<Array>> LapackSvd(const Array& a, const SvdOptions& options);

// ?geev: eigenvalues and left / right eigenvectors of each general [n, n] matrix. Real types:
// (wr, wi, vl, vr, info) with vl / vr complex (conjugate pairs unpacked as JAX does); complex
// types: (w, vl, vr, info). Eigenvectors not asked for are zeros, as are all outputs of a matrix
// with a non-finite element (info = -4, as jaxlib sets it).
StatusOr<std::vector<Array>> LapackGeev(const Array& a, bool left, bool right);

// ?gees (no sorting): Schur form T = Z^H a Z: real types (t, z, wr, wi, sdim, info), complex
// (t, z, w, sdim, info); z is zeros without `vectors`.
StatusOr<std::vector<Array>> LapackGees(const Array& a, bool vectors);

// ?gehrd: Hessenberg reduction of rows / columns ilo..ihi (1-based): (a_out, tau[..., n-1], info).
StatusOr<std::vector<Array>> LapackGehrd(const Array& a, int ilo, int ihi);

// ?sytrd / ?hetrd: tridiagonal reduction reading the lower or upper triangle:
// (a_out, d real[..., n], e real[..., n-1], tau[..., n-1], info).
StatusOr<std::vector<Array>> LapackSytrd(const Array& a, bool lower);

// ?gtsv: solves each tridiagonal system with sub- / main / super-diagonals dl, d, du ([..., m];
// dl[0] and du[m-1] are not read, JAX's convention) and right-hand sides b [..., m, nrhs]:
// (dl_out, d_out, du_out, x, info), the diagonals as LAPACK leaves them (its LU factors).
StatusOr<std::vector<Array>> LapackGtsv(const Array& dl, const Array& d, const Array& du, const Array& b);

}  // namespace xs::kernels

#endif  // XSHARD_KERNELS_LINALG_LAPACK_H_
