// The LAPACK-backed kernels of JAX's custom-calls (linalg_lapack.h), checked by the mathematical
// properties of their results, computed here in complex double: Q orthonormal and Q R = A, A V =
// V diag(w), U diag(s) V^H = A, Hessenberg / Schur / tridiagonal reconstructions, tridiagonal
// solves; for f32, f64, c64 (and c128), batches, the 'N' modes, and errors.
#include "xshard/kernels/linalg_lapack.h"

#include <cmath>
#include <complex>
#include <random>
#include <string>

#include "gtest/gtest.h"

namespace xs::kernels {
namespace lapack_test {
namespace {

using Cd = std::complex<double>;

// One matrix in complex double, row-major.
struct Mat {
  int64_t rows = 0, cols = 0;
  std::vector<Cd> v;
  Cd& operator()(int64_t i, int64_t j) { return v[i * cols + j]; }
  Cd operator()(int64_t i, int64_t j) const { return v[i * cols + j]; }
};

Mat Zeros(int64_t r, int64_t c) { return {r, c, std::vector<Cd>(static_cast<size_t>(r * c))}; }
Mat Eye(int64_t n) {
  Mat m = Zeros(n, n);
  for (int64_t i = 0; i < n; ++i) m(i, i) = 1;
  return m;
}
Mat Mul(const Mat& a, const Mat& b) {
  Mat c = Zeros(a.rows, b.cols);
  for (int64_t i = 0; i < a.rows; ++i) {
    for (int64_t k = 0; k < a.cols; ++k) {
      for (int64_t j = 0; j < b.cols; ++j) c(i, j) += a(i, k) * b(k, j);
    }
  }
  return c;
}
Mat Adj(const Mat& a) {
  Mat t = Zeros(a.cols, a.rows);
  for (int64_t i = 0; i < a.rows; ++i) {
    for (int64_t j = 0; j < a.cols; ++j) t(j, i) = std::conj(a(i, j));
  }
  return t;
}
Mat Cols(const Mat& a, int64_t n) {  // the first n columns
  Mat c = Zeros(a.rows, n);
  for (int64_t i = 0; i < a.rows; ++i) {
    for (int64_t j = 0; j < n; ++j) c(i, j) = a(i, j);
  }
  return c;
}
// max |a - b| / max(1, max |b|).
double Diff(const Mat& a, const Mat& b) {
  EXPECT_EQ(a.rows, b.rows);
  EXPECT_EQ(a.cols, b.cols);
  double d = 0, scale = 1;
  for (size_t i = 0; i < a.v.size() && i < b.v.size(); ++i) {
    d = std::max(d, std::abs(a.v[i] - b.v[i]));
    scale = std::max(scale, std::abs(b.v[i]));
  }
  return d / scale;
}

std::vector<Cd> Values(const Array& a) {
  Array w = a.Convert(DType::kC128);
  auto v = w.values<Cd>();
  return {v.begin(), v.end()};
}
// Matrix `b` of a batch [..., r, c].
Mat At(const Array& a, int64_t b) {
  const int64_t r = a.dims()[a.rank() - 2], c = a.dims().back();
  std::vector<Cd> all = Values(a);
  return {r, c, std::vector<Cd>(all.begin() + b * r * c, all.begin() + (b + 1) * r * c)};
}
// Vector `b` of a batch [..., n].
std::vector<Cd> VecAt(const Array& a, int64_t b) {
  const int64_t n = a.dims().back();
  std::vector<Cd> all = Values(a);
  return {all.begin() + b * n, all.begin() + (b + 1) * n};
}
int Info(const Array& info, int64_t b) { return info.values<int32_t>()[b]; }

// Uniform [-1, 1) entries (imaginary parts too for complex types).
Array Random(DType t, std::vector<int64_t> dims, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  if (!IsComplex(t)) {
    Array r(Shape(DType::kF64, dims));
    for (double& x : r.values<double>()) x = u(rng);
    return r.Convert(t);
  }
  Array c(Shape(DType::kC128, dims));
  for (Cd& x : c.values<Cd>()) x = Cd(u(rng), u(rng));
  return c.Convert(t);
}
// Hermitian (symmetric for real types) random matrices.
Array RandomHermitian(DType t, std::vector<int64_t> dims, uint64_t seed) {
  Array r = Random(t == DType::kF32   ? DType::kF64
                   : t == DType::kC64 ? DType::kC128
                                      : t,
                   dims, seed)
                .Convert(DType::kC128);
  const int64_t n = dims.back();
  auto v = r.values<Cd>();
  for (int64_t b = 0; b * n * n < static_cast<int64_t>(v.size()); ++b) {
    Cd* m = v.data() + b * n * n;
    for (int64_t i = 0; i < n; ++i) {
      m[i * n + i] = m[i * n + i].real();
      for (int64_t j = 0; j < i; ++j) m[j * n + i] = std::conj(m[i * n + j]);
    }
  }
  return IsComplex(t) ? r.Convert(t) : r.Convert(DType::kF64).Convert(t);
}

double Tol(DType t) { return t == DType::kF32 || t == DType::kC64 ? 2e-5 : 1e-12; }
// Relative accuracy of a factorization of an n x n problem.
double Tol(DType t, int64_t n) { return Tol(t) * 10 * static_cast<double>(std::max<int64_t>(n, 1)); }

const DType kTypes[] = {DType::kF32, DType::kF64, DType::kC64, DType::kC128};

Mat Triu(const Mat& a, int64_t k = 0) {  // entries with j - i >= k
  Mat t = a;
  for (int64_t i = 0; i < a.rows; ++i) {
    for (int64_t j = 0; j < a.cols; ++j) {
      if (j - i < k) t(i, j) = 0;
    }
  }
  return t;
}

// ---- QR ----

TEST(LinalgLapack, GeqrfAndOrgqrGiveOrthonormalQWithQREqualA) {
  for (DType t : kTypes) {
    for (std::vector<int64_t> dims : {std::vector<int64_t>{3, 6, 4}, {2, 4, 6}, {5, 5}}) {
      SCOPED_TRACE(StrCat(DTypeName(t), " ", Shape(t, dims).ToString(false)));
      const Array a = Random(t, dims, 1);
      StatusOr<std::vector<Array>> qr = LapackGeqrf(a);
      ASSERT_TRUE(qr.ok()) << qr.status().ToString();
      const int64_t m = dims[dims.size() - 2], n = dims.back(), k = std::min(m, n);
      ASSERT_EQ((*qr)[0].shape(), a.shape());
      std::vector<int64_t> tau_dims(dims.begin(), dims.end() - 2);
      tau_dims.push_back(k);
      ASSERT_EQ((*qr)[1].dims(), tau_dims);
      const int64_t batch = a.num_elements() / (m * n);
      for (int64_t b = 0; b < batch; ++b) {
        const Mat f = At((*qr)[0], b);
        // Q of the complete QR: the reflectors padded to m x m (JAX's mode="complete").
        Mat padded = Zeros(m, m);
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < std::min(m, n); ++j) padded(i, j) = f(i, j);
        }
        Array pa(Shape(DType::kC128, {m, m}));
        std::copy(padded.v.begin(), padded.v.end(), pa.values<Cd>().begin());
        Array tau(Shape(DType::kC128, {k}));
        const std::vector<Cd> tv = VecAt((*qr)[1], b);
        std::copy(tv.begin(), tv.end(), tau.values<Cd>().begin());
        StatusOr<Array> q = LapackOrgqr(pa.Convert(t), tau.Convert(t));
        ASSERT_TRUE(q.ok()) << q.status().ToString();
        const Mat qm = At(*q, 0);
        EXPECT_LT(Diff(Mul(Adj(qm), qm), Eye(m)), Tol(t, m));
        EXPECT_LT(Diff(Mul(qm, Triu(f)), At(a, b)), Tol(t, m));
      }
    }
  }
}

TEST(LinalgLapack, OrgqrOfABatchMatchesTheReducedQ) {
  for (DType t : {DType::kF32, DType::kC64}) {
    const Array a = Random(t, {4, 7, 3}, 2);
    StatusOr<std::vector<Array>> qr = LapackGeqrf(a);
    ASSERT_TRUE(qr.ok());
    StatusOr<Array> q = LapackOrgqr((*qr)[0], (*qr)[1]);  // [4, 7, 3]: the reduced Q
    ASSERT_TRUE(q.ok()) << q.status().ToString();
    for (int64_t b = 0; b < 4; ++b) {
      const Mat qm = At(*q, b), r = Triu(At((*qr)[0], b));
      Mat r3 = Zeros(3, 3);
      for (int64_t i = 0; i < 3; ++i) {
        for (int64_t j = 0; j < 3; ++j) r3(i, j) = r(i, j);
      }
      EXPECT_LT(Diff(Mul(Adj(qm), qm), Eye(3)), Tol(t, 7));
      EXPECT_LT(Diff(Mul(qm, r3), At(a, b)), Tol(t, 7));
    }
  }
}

TEST(LinalgLapack, Geqp3PermutesColumnsSoThatQREqualsAP) {
  for (DType t : kTypes) {
    SCOPED_TRACE(DTypeName(t));
    const Array a = Random(t, {2, 6, 4}, 3);
    StatusOr<std::vector<Array>> r = LapackGeqp3(a, Array(Shape(DType::kS32, {2, 4})));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ((*r)[1].dtype(), DType::kS32);
    StatusOr<Array> q = LapackOrgqr((*r)[0], (*r)[2]);
    ASSERT_TRUE(q.ok());
    for (int64_t b = 0; b < 2; ++b) {
      const Mat ab = At(a, b), f = At((*r)[0], b);
      Mat ap = Zeros(6, 4), r4 = Zeros(4, 4);
      std::vector<bool> seen(4, false);
      for (int64_t j = 0; j < 4; ++j) {
        const int p = (*r)[1].values<int32_t>()[b * 4 + j];
        ASSERT_GE(p, 1);
        ASSERT_LE(p, 4);
        seen[p - 1] = true;
        for (int64_t i = 0; i < 6; ++i) ap(i, j) = ab(i, p - 1);
        for (int64_t i = 0; i <= j; ++i) r4(i, j) = f(i, j);
      }
      EXPECT_EQ(std::count(seen.begin(), seen.end(), true), 4);
      // Pivoting orders |R[j, j]| non-increasing.
      for (int64_t j = 1; j < 4; ++j) EXPECT_LE(std::abs(r4(j, j)), std::abs(r4(j - 1, j - 1)) * (1 + 1e-6));
      EXPECT_LT(Diff(Mul(At(*q, b), r4), ap), Tol(t, 6));
    }
  }
}

TEST(LinalgLapack, OrmqrAppliesQOrItsAdjointFromEitherSide) {
  for (DType t : kTypes) {
    SCOPED_TRACE(DTypeName(t));
    const Array a = Random(t, {2, 5, 3}, 4);
    StatusOr<std::vector<Array>> qr = LapackGeqrf(a);
    ASSERT_TRUE(qr.ok());
    for (bool left : {true, false}) {
      for (bool transpose : {false, true}) {
        const Array c = Random(t, left ? std::vector<int64_t>{2, 5, 2} : std::vector<int64_t>{2, 3, 5}, 5);
        StatusOr<Array> got = LapackOrmqr((*qr)[0], (*qr)[1], c, left, transpose);
        ASSERT_TRUE(got.ok()) << got.status().ToString();
        ASSERT_EQ(got->shape(), c.shape());
        for (int64_t b = 0; b < 2; ++b) {
          // The full Q from orgqr of the padded reflectors.
          Mat f = At((*qr)[0], b), padded = Zeros(5, 5);
          for (int64_t i = 0; i < 5; ++i) {
            for (int64_t j = 0; j < 3; ++j) padded(i, j) = f(i, j);
          }
          Array pa(Shape(DType::kC128, {5, 5})), tau(Shape(DType::kC128, {3}));
          std::copy(padded.v.begin(), padded.v.end(), pa.values<Cd>().begin());
          const std::vector<Cd> tv = VecAt((*qr)[1], b);
          std::copy(tv.begin(), tv.end(), tau.values<Cd>().begin());
          StatusOr<Array> q = LapackOrgqr(pa.Convert(t), tau.Convert(t));
          ASSERT_TRUE(q.ok());
          const Mat qm = transpose ? Adj(At(*q, 0)) : At(*q, 0);
          const Mat want = left ? Mul(qm, At(c, b)) : Mul(At(c, b), qm);
          EXPECT_LT(Diff(At(*got, b), want), Tol(t, 5)) << "left=" << left << " transpose=" << transpose;
        }
      }
    }
  }
}

// ---- Hermitian eigenproblem ----

TEST(LinalgLapack, SyevdGivesAscendingEigenvaluesAndOrthonormalEigenvectors) {
  for (DType t : kTypes) {
    for (bool lower : {true, false}) {
      SCOPED_TRACE(StrCat(DTypeName(t), lower ? " lower" : " upper"));
      const Array a = RandomHermitian(t, {3, 6, 6}, 6);
      // The triangle not read holds junk.
      Array junk = a.Convert(DType::kC128);
      for (int64_t b = 0; b < 3; ++b) {
        for (int64_t i = 0; i < 6; ++i) {
          for (int64_t j = 0; j < 6; ++j) {
            if (lower ? j > i : j < i) junk.values<Cd>()[b * 36 + i * 6 + j] = 100.0 + i;
          }
        }
      }
      StatusOr<std::vector<Array>> r = LapackSyevd(junk.Convert(t), lower, true);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      ASSERT_EQ((*r)[1].dtype(), IsComplex(t) ? (t == DType::kC64 ? DType::kF32 : DType::kF64) : t);
      ASSERT_EQ((*r)[2].dims(), std::vector<int64_t>{3});
      StatusOr<std::vector<Array>> values_only = LapackSyevd(junk.Convert(t), lower, false);
      ASSERT_TRUE(values_only.ok());
      for (int64_t b = 0; b < 3; ++b) {
        EXPECT_EQ(Info((*r)[2], b), 0);
        const Mat v = At((*r)[0], b);
        const std::vector<Cd> w = VecAt((*r)[1], b), w_only = VecAt((*values_only)[1], b);
        Mat vw = v;
        for (int64_t i = 0; i < 6; ++i) {
          for (int64_t j = 0; j < 6; ++j) vw(i, j) *= w[j];
          if (i > 0) {
            EXPECT_LE(w[i - 1].real(), w[i].real());
          }
          EXPECT_NEAR(w_only[i].real(), w[i].real(), Tol(t, 6));
        }
        EXPECT_LT(Diff(Mul(Adj(v), v), Eye(6)), Tol(t, 6));
        EXPECT_LT(Diff(Mul(At(a, b), v), vw), Tol(t, 6));
      }
    }
  }
}

// ---- SVD ----

TEST(LinalgLapack, SvdReconstructsAInEveryModeWithBothAlgorithms) {
  for (DType t : kTypes) {
    for (bool dc : {true, false}) {
      for (std::vector<int64_t> dims : {std::vector<int64_t>{2, 6, 4}, {2, 3, 5}}) {
        const int64_t m = dims[1], n = dims[2], k = std::min(m, n);
        const Array a = Random(t, dims, 7);
        std::vector<Cd> s_full;
        for (char mode : {'A', 'S', 'N'}) {
          SCOPED_TRACE(
              StrCat(DTypeName(t), dc ? " gesdd " : " gesvd ", std::string(1, mode), " ", a.shape().ToString(false)));
          SvdOptions o;
          o.mode = mode;
          o.divide_and_conquer = dc;
          o.full_uv = mode != 'S';
          StatusOr<std::vector<Array>> r = LapackSvd(a, o);
          ASSERT_TRUE(r.ok()) << r.status().ToString();
          ASSERT_EQ(r->size(), 5u);
          const int64_t ucols = mode == 'S' ? k : m, vtrows = mode == 'S' ? k : n;
          ASSERT_EQ((*r)[2].dims(), (std::vector<int64_t>{2, m, ucols}));
          ASSERT_EQ((*r)[3].dims(), (std::vector<int64_t>{2, vtrows, n}));
          for (int64_t b = 0; b < 2; ++b) {
            EXPECT_EQ(Info((*r)[4], b), 0);
            const std::vector<Cd> s = VecAt((*r)[1], b);
            for (int64_t i = 0; i < k; ++i) {
              EXPECT_GE(s[i].real(), 0);
              if (i > 0) {
                EXPECT_LE(s[i].real(), s[i - 1].real());
              }
            }
            if (mode == 'A' && b == 0) s_full = s;
            if (mode == 'N') {
              for (int64_t i = 0; i < k && b == 0; ++i) EXPECT_NEAR(s[i].real(), s_full[i].real(), Tol(t, 6));
              for (const Cd& x : Values((*r)[2])) EXPECT_EQ(x, Cd(0));
              // Economy-shaped (zero) u / vt when asked, the same values.
              o.full_uv = false;
              StatusOr<std::vector<Array>> economy = LapackSvd(a, o);
              ASSERT_TRUE(economy.ok()) << economy.status().ToString();
              EXPECT_EQ((*economy)[2].dims(), (std::vector<int64_t>{2, m, k}));
              EXPECT_EQ((*economy)[3].dims(), (std::vector<int64_t>{2, k, n}));
              EXPECT_EQ(Values((*economy)[1]), Values((*r)[1]));
              continue;
            }
            const Mat u = At((*r)[2], b), vt = At((*r)[3], b);
            EXPECT_LT(Diff(Mul(Adj(u), u), Eye(ucols)), Tol(t, 6));
            EXPECT_LT(Diff(Mul(vt, Adj(vt)), Eye(vtrows)), Tol(t, 6));
            Mat us = Cols(u, k);
            for (int64_t i = 0; i < m; ++i) {
              for (int64_t j = 0; j < k; ++j) us(i, j) *= s[j];
            }
            Mat vtk = Zeros(k, n);
            for (int64_t i = 0; i < k; ++i) {
              for (int64_t j = 0; j < n; ++j) vtk(i, j) = vt(i, j);
            }
            EXPECT_LT(Diff(Mul(us, vtk), At(a, b)), Tol(t, 6));
          }
        }
      }
    }
  }
}

// ---- general eigenproblem, Schur, Hessenberg ----

TEST(LinalgLapack, GeevEigenpairsSatisfyAVEqualsVDiagW) {
  for (DType t : kTypes) {
    SCOPED_TRACE(DTypeName(t));
    Array a = Random(t, {3, 5, 5}, 8);
    if (!IsComplex(t)) {
      // Matrix 0 a rotation block: complex conjugate eigenvalues for sure.
      Array w = a.Convert(DType::kF64);
      auto v = w.values<double>();
      std::fill(v.begin(), v.begin() + 25, 0.0);
      v[1] = -2, v[5] = 2, v[12] = 1, v[18] = 0.5, v[19] = -3, v[23] = 3, v[24] = 0.5;
      a = w.Convert(t);
    }
    StatusOr<std::vector<Array>> r = LapackGeev(a, true, true);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const size_t off = IsComplex(t) ? 0 : 1;
    ASSERT_EQ(r->size(), 4 + off);
    const DType ct = t == DType::kF32 ? DType::kC64 : t == DType::kF64 ? DType::kC128 : t;
    ASSERT_EQ((*r)[1 + off].dtype(), ct);
    int complex_pairs = 0;
    for (int64_t b = 0; b < 3; ++b) {
      EXPECT_EQ(Info((*r)[3 + off], b), 0);
      std::vector<Cd> w = VecAt((*r)[0], b);
      if (!IsComplex(t)) {
        const std::vector<Cd> wi = VecAt((*r)[1], b);
        for (int64_t i = 0; i < 5; ++i) w[i] += Cd(0, wi[i].real());
        for (int64_t i = 0; i < 5; ++i) complex_pairs += wi[i].real() > 0;
      }
      const Mat vl = At((*r)[1 + off], b), vr = At((*r)[2 + off], b), am = At(a, b);
      Mat vrw = vr, vlw = vl;
      for (int64_t i = 0; i < 5; ++i) {
        for (int64_t j = 0; j < 5; ++j) {
          vrw(i, j) *= w[j];
          vlw(i, j) *= std::conj(w[j]);
        }
      }
      EXPECT_LT(Diff(Mul(am, vr), vrw), Tol(t, 25));
      // Left eigenvectors: vl^H a = diag(w) vl^H, i.e. a^H vl = vl diag(conj w).
      EXPECT_LT(Diff(Mul(Adj(am), vl), vlw), Tol(t, 25));
      for (int64_t j = 0; j < 5; ++j) {  // unit 2-norm columns, as LAPACK normalizes them
        double norm = 0;
        for (int64_t i = 0; i < 5; ++i) norm += std::norm(vr(i, j));
        EXPECT_NEAR(norm, 1.0, Tol(t, 5));
      }
    }
    if (!IsComplex(t)) {
      EXPECT_GE(complex_pairs, 2);
    }
    // Without left eigenvectors vl is zeros; a non-finite matrix is skipped with info -4.
    Array bad = a.Convert(DType::kC128);
    bad.values<Cd>()[25 + 7] = Cd(std::nan(""), 0);
    StatusOr<std::vector<Array>> nl = LapackGeev(bad.Convert(t), false, true);
    ASSERT_TRUE(nl.ok());
    for (const Cd& x : Values((*nl)[1 + off])) EXPECT_EQ(x, Cd(0));
    EXPECT_EQ(Info((*nl)[3 + off], 0), 0);
    EXPECT_EQ(Info((*nl)[3 + off], 1), -4);
  }
}

TEST(LinalgLapack, GeesGivesAUnitaryZWithTEqualZHAZ) {
  for (DType t : kTypes) {
    SCOPED_TRACE(DTypeName(t));
    const Array a = Random(t, {2, 6, 6}, 9);
    StatusOr<std::vector<Array>> r = LapackGees(a, true);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const size_t off = IsComplex(t) ? 0 : 1;
    ASSERT_EQ(r->size(), 5 + off);
    StatusOr<std::vector<Array>> no_vectors = LapackGees(a, false);
    ASSERT_TRUE(no_vectors.ok());
    for (int64_t b = 0; b < 2; ++b) {
      EXPECT_EQ(Info((*r)[4 + off], b), 0);
      EXPECT_EQ(Info((*r)[3 + off], b), 0);  // sdim: nothing sorted
      const Mat tm = At((*r)[0], b), z = At((*r)[1], b);
      EXPECT_LT(Diff(Mul(Adj(z), z), Eye(6)), Tol(t, 6));
      EXPECT_LT(Diff(Mul(Mul(z, tm), Adj(z)), At(a, b)), Tol(t, 36));
      // (Quasi-)upper triangular: nothing below the subdiagonal; complex: nothing below the
      // diagonal; real: no two subdiagonal entries in a row (2 x 2 blocks only).
      for (int64_t i = 1; i < 6; ++i) {
        for (int64_t j = 0; j + 1 < i; ++j) EXPECT_EQ(tm(i, j), Cd(0));
        if (IsComplex(t)) {
          EXPECT_EQ(tm(i, i - 1), Cd(0));
        }
        if (i >= 2) {
          EXPECT_TRUE(tm(i, i - 1) == Cd(0) || tm(i - 1, i - 2) == Cd(0));
        }
      }
      // The eigenvalues: T's diagonal (complex), wr +- i wi (real).
      const std::vector<Cd> w = VecAt((*r)[2], b);
      for (int64_t i = 0; i < 6; ++i) EXPECT_NEAR(w[i].real(), tm(i, i).real(), Tol(t, 6));
      EXPECT_LT(Diff(At((*no_vectors)[0], b), tm), Tol(t, 36));
      for (const Cd& x : Values((*no_vectors)[1])) EXPECT_EQ(x, Cd(0));
    }
  }
}

// Q = H(lo) H(lo+1) ... H(hi-1), H(i) = I - tau_i v v^H with v(0..i) = 0, v(i+1) = 1 and v(i+2..hi)
// the reflector stored in column i of `f` (0-based rows / columns, LAPACK's gehrd / sytrd 'L').
Mat ReflectorsBelowSubdiagonal(const Mat& f, const std::vector<Cd>& tau, int64_t lo, int64_t hi) {
  const int64_t n = f.rows;
  Mat q = Eye(n);
  for (int64_t i = lo; i < hi; ++i) {
    Mat v = Zeros(n, 1);
    v(i + 1, 0) = 1;
    for (int64_t r = i + 2; r <= hi; ++r) v(r, 0) = f(r, i);
    Mat h = Mul(v, Adj(v));
    for (Cd& x : h.v) x *= -tau[i];
    for (int64_t d = 0; d < n; ++d) h(d, d) += 1.0;
    q = Mul(q, h);
  }
  return q;
}

TEST(LinalgLapack, GehrdGivesAHessenbergHWithQHAQEqualH) {
  for (DType t : kTypes) {
    SCOPED_TRACE(DTypeName(t));
    const Array a = Random(t, {2, 6, 6}, 10);
    StatusOr<std::vector<Array>> r = LapackGehrd(a, 1, 6);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ((*r)[1].dims(), (std::vector<int64_t>{2, 5}));
    for (int64_t b = 0; b < 2; ++b) {
      EXPECT_EQ(Info((*r)[2], b), 0);
      const Mat f = At((*r)[0], b);
      const Mat q = ReflectorsBelowSubdiagonal(f, VecAt((*r)[1], b), 0, 5);
      EXPECT_LT(Diff(Mul(Adj(q), q), Eye(6)), Tol(t, 6));
      EXPECT_LT(Diff(Mul(Mul(Adj(q), At(a, b)), q), Triu(f, -1)), Tol(t, 36));
    }
  }
}

TEST(LinalgLapack, SytrdGivesTheTridiagonalTWithQHAQEqualT) {
  for (DType t : kTypes) {
    for (bool lower : {true, false}) {
      SCOPED_TRACE(StrCat(DTypeName(t), lower ? " lower" : " upper"));
      const Array a = RandomHermitian(t, {2, 5, 5}, 11);
      StatusOr<std::vector<Array>> r = LapackSytrd(a, lower);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      ASSERT_EQ(r->size(), 5u);
      ASSERT_FALSE(IsComplex((*r)[1].dtype()));
      for (int64_t b = 0; b < 2; ++b) {
        EXPECT_EQ(Info((*r)[4], b), 0);
        const Mat f = At((*r)[0], b);
        const std::vector<Cd> d = VecAt((*r)[1], b), e = VecAt((*r)[2], b), tau = VecAt((*r)[3], b);
        Mat tri = Zeros(5, 5);
        for (int64_t i = 0; i < 5; ++i) tri(i, i) = d[i];
        for (int64_t i = 0; i < 4; ++i) tri(i, i + 1) = tri(i + 1, i) = e[i];
        Mat q = Eye(5);
        if (lower) {
          q = ReflectorsBelowSubdiagonal(f, tau, 0, 4);
        } else {
          // Q = H(n-2) ... H(0), v(i+1..) = 0, v(i) = 1, v(0..i-1) in column i+1 above the diagonal.
          for (int64_t i = 3; i >= 0; --i) {
            Mat v = Zeros(5, 1);
            v(i, 0) = 1;
            for (int64_t row = 0; row < i; ++row) v(row, 0) = f(row, i + 1);
            Mat h = Mul(v, Adj(v));
            for (Cd& x : h.v) x *= -tau[i];
            for (int64_t k = 0; k < 5; ++k) h(k, k) += 1.0;
            q = Mul(q, h);
          }
        }
        EXPECT_LT(Diff(Mul(Adj(q), q), Eye(5)), Tol(t, 5));
        EXPECT_LT(Diff(Mul(Mul(Adj(q), At(a, b)), q), tri), Tol(t, 25));
      }
    }
  }
}

// ---- tridiagonal solve ----

TEST(LinalgLapack, GtsvSolvesTridiagonalSystemsAndFlagsSingularOnes) {
  for (DType t : kTypes) {
    SCOPED_TRACE(DTypeName(t));
    const int64_t m = 6;
    Array dl = Random(t, {3, m}, 12), d = Random(t, {3, m}, 13), du = Random(t, {3, m}, 14);
    const Array rhs = Random(t, {3, m, 2}, 15);
    // Diagonally dominant; matrix 2 all zeros (singular: info > 0).
    Array dd = d.Convert(DType::kC128), ll = dl.Convert(DType::kC128), uu = du.Convert(DType::kC128);
    for (int64_t i = 0; i < 3 * m; ++i) {
      dd.values<Cd>()[i] = i < 2 * m ? dd.values<Cd>()[i] + 4.0 : Cd(0);
      if (i >= 2 * m) ll.values<Cd>()[i] = uu.values<Cd>()[i] = 0;
    }
    d = dd.Convert(t);
    dl = ll.Convert(t);
    du = uu.Convert(t);
    StatusOr<std::vector<Array>> r = LapackGtsv(dl, d, du, rhs);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->size(), 5u);
    ASSERT_EQ((*r)[3].shape(), rhs.shape());
    for (int64_t b = 0; b < 2; ++b) {
      EXPECT_EQ(Info((*r)[4], b), 0);
      const std::vector<Cd> l = VecAt(dl, b), c = VecAt(d, b), u = VecAt(du, b);
      Mat tri = Zeros(m, m);
      for (int64_t i = 0; i < m; ++i) {
        tri(i, i) = c[i];
        if (i > 0) tri(i, i - 1) = l[i];  // dl[0] is padding
        if (i + 1 < m) tri(i, i + 1) = u[i];
      }
      EXPECT_LT(Diff(Mul(tri, At((*r)[3], b)), At(rhs, b)), Tol(t, m));
    }
    EXPECT_GT(Info((*r)[4], 2), 0);
  }
}

// ---- empty batches, order 1 ----

TEST(LinalgLapack, EmptyBatchesAndOrderOneMatricesAreFine) {
  for (DType t : {DType::kF32, DType::kC128}) {
    SCOPED_TRACE(DTypeName(t));
    const Array none = Random(t, {0, 3, 3}, 17);
    StatusOr<std::vector<Array>> qr = LapackGeqrf(none);
    ASSERT_TRUE(qr.ok()) << qr.status().ToString();
    EXPECT_EQ((*qr)[1].dims(), (std::vector<int64_t>{0, 3}));
    StatusOr<std::vector<Array>> eig = LapackSyevd(none, true, true);
    ASSERT_TRUE(eig.ok()) << eig.status().ToString();
    EXPECT_EQ((*eig)[2].dims(), std::vector<int64_t>{0});
    StatusOr<std::vector<Array>> svd = LapackSvd(none, SvdOptions{});
    ASSERT_TRUE(svd.ok()) << svd.status().ToString();
    EXPECT_EQ((*svd)[3].dims(), (std::vector<int64_t>{0, 3, 3}));
    // Order 1: the eigenvalue, singular value, Hessenberg and tridiagonal forms are the entry.
    const Array one = Random(t, {2, 1, 1}, 18);
    const std::vector<Cd> x = Values(one);
    StatusOr<std::vector<Array>> h = LapackGehrd(one, 1, 1);
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    EXPECT_EQ((*h)[1].dims(), (std::vector<int64_t>{2, 0}));
    EXPECT_EQ(Values((*h)[0]), x);
    StatusOr<std::vector<Array>> tri = LapackSytrd(RandomHermitian(t, {2, 1, 1}, 18), true);
    ASSERT_TRUE(tri.ok()) << tri.status().ToString();
    EXPECT_EQ((*tri)[2].dims(), (std::vector<int64_t>{2, 0}));
    StatusOr<std::vector<Array>> s = LapackSvd(one, SvdOptions{});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    for (int64_t b = 0; b < 2; ++b) EXPECT_NEAR(VecAt((*s)[1], b)[0].real(), std::abs(x[b]), Tol(t));
    StatusOr<std::vector<Array>> g = LapackGeev(one, true, true);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    for (int64_t b = 0; b < 2; ++b) EXPECT_NEAR(std::abs(VecAt((*g)[0], b)[0] - x[b]), 0, Tol(t));
    // A system of order 0 has nothing to solve.
    StatusOr<std::vector<Array>> gt = LapackGtsv(Array(Shape(t, {2, 0})), Array(Shape(t, {2, 0})),
                                                 Array(Shape(t, {2, 0})), Array(Shape(t, {2, 0, 3})));
    ASSERT_TRUE(gt.ok()) << gt.status().ToString();
    EXPECT_EQ((*gt)[4].dims(), std::vector<int64_t>{2});
  }
}

// ---- errors ----

TEST(LinalgLapack, BadOperandsAreErrorsNamingTheRoutine) {
  const Array f32 = Random(DType::kF32, {4, 4}, 16);
  auto expect_error = [](const Status& s, std::string_view words) {
    EXPECT_FALSE(s.ok());
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find(words), std::string::npos) << s.message();
  };
  expect_error(LapackGeqrf(Array(Shape(DType::kS32, {3, 3}))).status(), "geqrf needs f32, f64, c64 or c128");
  expect_error(LapackGeqrf(Array(Shape(DType::kF32, {3}))).status(), "geqrf needs matrices");
  expect_error(LapackSyevd(Random(DType::kF64, {3, 4}, 1), true, true).status(), "syevd needs square");
  SvdOptions o;
  o.mode = 'O';
  expect_error(LapackSvd(f32, o).status(), "mode 'O'");
  expect_error(LapackGehrd(f32, 2, 1).status(), "gehrd needs");
  expect_error(LapackOrgqr(f32, Array(Shape(DType::kF32, {5}))).status(), "orgqr needs");
  expect_error(LapackOrgqr(f32, Array(Shape(DType::kF64, {2}))).status(), "tau must be f32[2]");
  expect_error(
      LapackOrmqr(f32, Array(Shape(DType::kF32, {2})), Array(Shape(DType::kF32, {3, 2})), true, false).status(),
      "ormqr needs");
  expect_error(LapackGtsv(Array(Shape(DType::kF32, {3})), Array(Shape(DType::kF32, {4})),
                          Array(Shape(DType::kF32, {4})), Array(Shape(DType::kF32, {4, 1})))
                   .status(),
               "dl must be f32[4]");
  expect_error(LapackGeqp3(f32, Array(Shape(DType::kF32, {4}))).status(), "jpvt must be s32[4]");
}

}  // namespace
}  // namespace lapack_test
}  // namespace xs::kernels
