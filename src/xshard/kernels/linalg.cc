// Cholesky and triangular solve (XLA semantics) in f64 / c128 on batches of matrices. These run
// on small matrices in the corpus and in jnp.linalg programs; plain loops over a copy in the
// wide type keep one code path for every element type.
#include "xshard/kernels/linalg.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <vector>

namespace xs::kernels {
namespace {

using C = std::complex<double>;

// The elements of `a` widened to c128 (the imaginary part is 0 for real types).
std::vector<C> Widen(const Array& a) {
  std::vector<C> out(static_cast<size_t>(a.num_elements()));
  if (IsComplex(a.dtype())) {
    Array w = a.Convert(DType::kC128);
    auto v = w.values<C>();
    std::copy(v.begin(), v.end(), out.begin());
  } else {
    for (int64_t i = 0; i < a.num_elements(); ++i) out[static_cast<size_t>(i)] = a.GetDouble(i);
  }
  return out;
}

// Writes `v` into an array of `shape` (real types keep the real part).
Array Narrow(const std::vector<C>& v, const Shape& shape) {
  if (IsComplex(shape.dtype())) {
    Array w(Shape(DType::kC128, shape.dims()));
    auto out = w.values<C>();
    std::copy(v.begin(), v.end(), out.begin());
    return w.Convert(shape.dtype());
  }
  Array out(Shape(shape.dtype(), shape.dims()));
  for (int64_t i = 0; i < out.num_elements(); ++i) out.SetDouble(i, v[static_cast<size_t>(i)].real());
  return out;
}

bool SupportedType(DType t) { return IsFloating(t) || IsComplex(t); }

C Conj(C x, bool conjugate) { return conjugate ? std::conj(x) : x; }

// Factors the lower triangle of one n x n matrix in place (row major), column by column; returns
// the 1-based order of the first leading minor that is not positive definite (columns from it on
// are left as they were), or 0.
int64_t FactorLower(C* m, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    double d = m[j * n + j].real();
    for (int64_t k = 0; k < j; ++k) d -= std::norm(m[j * n + k]);
    if (!(d > 0)) return j + 1;
    const double l = std::sqrt(d);
    m[j * n + j] = l;
    for (int64_t i = j + 1; i < n; ++i) {
      C s = m[i * n + j];
      for (int64_t k = 0; k < j; ++k) s -= m[i * n + k] * std::conj(m[j * n + k]);
      m[i * n + j] = s / l;
    }
  }
  return 0;
}

}  // namespace

StatusOr<Array> Cholesky(const Array& a, bool lower) {
  if (!SupportedType(a.dtype())) {
    return InvalidArgument("cholesky needs a floating-point or complex operand, got ", DTypeName(a.dtype()));
  }
  if (a.rank() < 2 || a.dims()[a.rank() - 1] != a.dims()[a.rank() - 2]) {
    return InvalidArgument("cholesky needs square matrices in its two minor dims, got ", a.shape().ToString(false));
  }
  const int64_t n = a.dims().back();
  const int64_t mat = n * n;
  const int64_t batch = mat == 0 ? 0 : a.num_elements() / mat;
  std::vector<C> v = Widen(a);
  std::vector<C> m(static_cast<size_t>(mat));
  for (int64_t b = 0; b < batch; ++b) {
    C* src = v.data() + b * mat;
    // The lower factor of the named triangle: for upper, L = U^H, read a's upper triangle
    // transposed and conjugated.
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        m[i * n + j] = j > i ? C(0) : (lower ? src[i * n + j] : std::conj(src[j * n + i]));
      }
    }
    const bool ok = FactorLower(m.data(), n) == 0;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        C x = !ok ? C(std::numeric_limits<double>::quiet_NaN(), 0)
                  : (lower ? (j <= i ? m[i * n + j] : C(0)) : (j >= i ? std::conj(m[j * n + i]) : C(0)));
        if (!ok && !IsComplex(a.dtype())) x = std::numeric_limits<double>::quiet_NaN();
        src[i * n + j] = x;
      }
    }
  }
  return Narrow(v, a.shape());
}

StatusOr<Array> TriangularSolve(const Array& a, const Array& b, const TriangularSolveOptions& o) {
  if (!SupportedType(a.dtype()) || a.dtype() != b.dtype()) {
    return InvalidArgument("triangular-solve needs two floating-point or complex operands of one type, got ",
                           DTypeName(a.dtype()), " and ", DTypeName(b.dtype()));
  }
  const int r = a.rank();
  if (r < 2 || b.rank() != r || a.dims()[r - 1] != a.dims()[r - 2]) {
    return InvalidArgument("triangular-solve needs a of shape [..., m, m] and b of the same rank, got ",
                           a.shape().ToString(false), " and ", b.shape().ToString(false));
  }
  const int64_t m = a.dims()[r - 1];
  const int64_t rows = b.dims()[r - 2], cols = b.dims()[r - 1];
  if ((o.left_side ? rows : cols) != m) {
    return InvalidArgument("triangular-solve: b's ", o.left_side ? "rows" : "columns", " (",
                           o.left_side ? rows : cols, ") must equal a's size ", m);
  }
  for (int d = 0; d < r - 2; ++d) {
    if (a.dims()[d] != b.dims()[d]) {
      return InvalidArgument("triangular-solve: batch dim ", d, " differs: ", a.dims()[d], " vs ", b.dims()[d]);
    }
  }
  std::vector<C> av = Widen(a), bv = Widen(b);
  const int64_t amat = m * m, bmat = rows * cols;
  const int64_t batch = bmat == 0 || amat == 0 ? 0 : b.num_elements() / bmat;
  const bool conj = o.transpose_a == TransposeA::kAdjoint;
  const bool trans = o.transpose_a != TransposeA::kNoTranspose;
  // op(a)[i][j], reading only the named triangle.
  std::vector<C> t(static_cast<size_t>(amat));
  for (int64_t bi = 0; bi < batch; ++bi) {
    const C* am = av.data() + bi * amat;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < m; ++j) {
        const bool in_triangle = o.lower ? j <= i : j >= i;
        C x = in_triangle ? am[i * m + j] : C(0);
        if (i == j && o.unit_diagonal) x = 1;
        if (trans) {
          t[j * m + i] = Conj(x, conj);
        } else {
          t[i * m + j] = x;
        }
      }
    }
    // op(a) is lower triangular when (lower xor transposed).
    const bool op_lower = o.lower != trans;
    C* x = bv.data() + bi * bmat;
    if (o.left_side) {
      // op(a) X = B, column by column of X.
      for (int64_t c = 0; c < cols; ++c) {
        for (int64_t s = 0; s < m; ++s) {
          const int64_t i = op_lower ? s : m - 1 - s;
          C sum = x[i * cols + c];
          for (int64_t s2 = 0; s2 < s; ++s2) {
            const int64_t k = op_lower ? s2 : m - 1 - s2;
            sum -= t[i * m + k] * x[k * cols + c];
          }
          x[i * cols + c] = sum / t[i * m + i];
        }
      }
    } else {
      // X op(a) = B, row by row of X: x[r][j] * op(a)[j][i] summed over j = b[r][i].
      for (int64_t row = 0; row < rows; ++row) {
        for (int64_t s = 0; s < m; ++s) {
          const int64_t i = op_lower ? m - 1 - s : s;
          C sum = x[row * cols + i];
          for (int64_t s2 = 0; s2 < s; ++s2) {
            const int64_t k = op_lower ? m - 1 - s2 : s2;
            sum -= x[row * cols + k] * t[k * m + i];
          }
          x[row * cols + i] = sum / t[i * m + i];
        }
      }
    }
  }
  return Narrow(bv, b.shape());
}

namespace {

// Batch dims of an [..., m, n] array and the s32 array of one int per matrix.
Array PerMatrix(const Array& a, const std::vector<int32_t>& values) {
  std::vector<int64_t> dims(a.dims().begin(), a.dims().end() - 2);
  Array out(Shape(DType::kS32, dims));
  std::copy(values.begin(), values.end(), out.values<int32_t>().begin());
  return out;
}

}  // namespace

StatusOr<std::vector<Array>> LapackPotrf(const Array& a, bool lower) {
  if (!SupportedType(a.dtype()) || a.rank() < 2 || a.dims()[a.rank() - 1] != a.dims()[a.rank() - 2]) {
    return InvalidArgument("potrf needs square floating-point or complex matrices, got ", a.shape().ToString(false));
  }
  const int64_t n = a.dims().back(), mat = n * n;
  const int64_t batch = mat == 0 ? 0 : a.num_elements() / mat;
  std::vector<C> v = Widen(a);
  std::vector<C> m(static_cast<size_t>(mat));
  std::vector<int32_t> info(static_cast<size_t>(batch), 0);
  for (int64_t b = 0; b < batch; ++b) {
    C* src = v.data() + b * mat;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j <= i; ++j) m[i * n + j] = lower ? src[i * n + j] : std::conj(src[j * n + i]);
    }
    info[b] = static_cast<int32_t>(FactorLower(m.data(), n));
    // Write back the factored columns of the named triangle (all, or those before the failure).
    const int64_t done = info[b] == 0 ? n : info[b] - 1;
    for (int64_t j = 0; j < done; ++j) {
      for (int64_t i = j; i < n; ++i) {
        if (lower) {
          src[i * n + j] = m[i * n + j];
        } else {
          src[j * n + i] = std::conj(m[i * n + j]);
        }
      }
    }
  }
  std::vector<Array> out;
  out.push_back(Narrow(v, a.shape()));
  out.push_back(PerMatrix(a, info));
  return out;
}

StatusOr<std::vector<Array>> LapackGetrf(const Array& a) {
  if (!SupportedType(a.dtype()) || a.rank() < 2) {
    return InvalidArgument("getrf needs floating-point or complex matrices, got ", a.shape().ToString(false));
  }
  const int64_t rows = a.dims()[a.rank() - 2], cols = a.dims().back(), mat = rows * cols;
  const int64_t k = std::min(rows, cols);
  const int64_t batch = mat == 0 ? 0 : a.num_elements() / mat;
  std::vector<C> v = Widen(a);
  std::vector<int32_t> pivots(static_cast<size_t>(batch * k)), info(static_cast<size_t>(batch), 0);
  for (int64_t b = 0; b < batch; ++b) {
    C* m = v.data() + b * mat;
    for (int64_t j = 0; j < k; ++j) {
      // LAPACK's pivot: the first row of largest |re| + |im| in column j (at or below j).
      int64_t p = j;
      double best = -1;
      for (int64_t i = j; i < rows; ++i) {
        const double mag = std::abs(m[i * cols + j].real()) + std::abs(m[i * cols + j].imag());
        if (mag > best) {
          best = mag;
          p = i;
        }
      }
      pivots[b * k + j] = static_cast<int32_t>(p + 1);
      if (p != j) {
        for (int64_t c = 0; c < cols; ++c) std::swap(m[j * cols + c], m[p * cols + c]);
      }
      const C pivot = m[j * cols + j];
      if (pivot == C(0)) {
        if (info[b] == 0) info[b] = static_cast<int32_t>(j + 1);
        continue;
      }
      for (int64_t i = j + 1; i < rows; ++i) {
        const C f = m[i * cols + j] / pivot;
        m[i * cols + j] = f;
        for (int64_t c = j + 1; c < cols; ++c) m[i * cols + c] -= f * m[j * cols + c];
      }
    }
  }
  std::vector<int64_t> pdims(a.dims().begin(), a.dims().end() - 2);
  pdims.push_back(k);
  Array piv(Shape(DType::kS32, pdims));
  std::copy(pivots.begin(), pivots.end(), piv.values<int32_t>().begin());
  std::vector<Array> out;
  out.push_back(Narrow(v, a.shape()));
  out.push_back(std::move(piv));
  out.push_back(PerMatrix(a, info));
  return out;
}

}  // namespace xs::kernels
