// JAX's LAPACK custom-calls on CPU, part 1: QR (geqrf, geqp3, orgqr / ungqr, ormqr / unmqr),
// Hermitian eigensolver (syevd / heevd), SVD (gesdd, gesvd), tridiagonal reduction (sytrd /
// hetrd) and tridiagonal solve (gtsv). Workspace sizes follow jaxlib's kernels (queries, or
// LAPACK's documented sizes where jaxlib uses those: syevd / heevd), so the blocked / unblocked
// paths LAPACK takes are the same as JAX's.
#include "xshard/kernels/linalg_lapack.h"

#include "xshard/kernels/linalg_lapack_internal.h"

namespace xs::kernels {
namespace lapack_impl {
namespace {

// ---- geqrf ----

template <typename T>
StatusOr<std::vector<Array>> Geqrf(const Array& a, const Batch& b) {
  const int m = b.rows, n = b.cols, k = std::min(m, n), lda = std::max(1, m);
  Array out(a.shape()), tau(Shape(a.dtype(), WithMinor(b.dims, {k})));
  if (k > 0) {
    std::vector<T> cm = Scratch<T>(int64_t{m} * n);
    T query{};
    int lwork = -1, info = 0;
    XS_LAPACK(T, geqrf, &m, &n, cm.data(), &lda, Data<T>(tau), &query, &lwork, &info);
    lwork = QueriedSize(query);
    std::vector<T> work = Scratch<T>(lwork);
    for (int64_t i = 0; i < b.count; ++i) {
      ToColumnMajor(Data<T>(a) + i * m * n, m, n, cm.data());
      XS_LAPACK(T, geqrf, &m, &n, cm.data(), &lda, Data<T>(tau) + i * k, work.data(), &lwork, &info);
      if (info < 0) return IllegalArgument("geqrf", info);
      FromColumnMajor(cm.data(), m, n, Data<T>(out) + i * m * n);
    }
  } else {
    out = a;
  }
  std::vector<Array> r;
  r.push_back(std::move(out));
  r.push_back(std::move(tau));
  return r;
}

// ---- geqp3 ----

template <typename T>
StatusOr<std::vector<Array>> Geqp3(const Array& a, const Array& jpvt, const Batch& b) {
  const int m = b.rows, n = b.cols, k = std::min(m, n), lda = std::max(1, m);
  Array out = a, piv = jpvt, tau(Shape(a.dtype(), WithMinor(b.dims, {k})));
  if (m > 0 && n > 0) {
    std::vector<T> cm = Scratch<T>(int64_t{m} * n);
    std::vector<Real<T>> rwork(kComplex<T> ? 2 * static_cast<size_t>(n) : 0);
    T query{};
    int lwork = -1, info = 0;
    int* p = piv.values<int32_t>().data();
    if constexpr (kComplex<T>) {
      XS_LAPACK_COMPLEX(T, geqp3, &m, &n, cm.data(), &lda, p, Data<T>(tau), &query, &lwork, rwork.data(), &info);
    } else {
      XS_LAPACK_REAL(T, geqp3, &m, &n, cm.data(), &lda, p, Data<T>(tau), &query, &lwork, &info);
    }
    lwork = QueriedSize(query);
    std::vector<T> work = Scratch<T>(lwork);
    for (int64_t i = 0; i < b.count; ++i) {
      ToColumnMajor(Data<T>(a) + i * m * n, m, n, cm.data());
      int* pi = p + i * n;
      T* ti = Data<T>(tau) + i * k;
      if constexpr (kComplex<T>) {
        XS_LAPACK_COMPLEX(T, geqp3, &m, &n, cm.data(), &lda, pi, ti, work.data(), &lwork, rwork.data(), &info);
      } else {
        XS_LAPACK_REAL(T, geqp3, &m, &n, cm.data(), &lda, pi, ti, work.data(), &lwork, &info);
      }
      if (info < 0) return IllegalArgument("geqp3", info);
      FromColumnMajor(cm.data(), m, n, Data<T>(out) + i * m * n);
    }
  }
  std::vector<Array> r;
  r.push_back(std::move(out));
  r.push_back(std::move(piv));
  r.push_back(std::move(tau));
  return r;
}

// ---- orgqr / ungqr ----

template <typename T>
void Orgqr(const int* m, const int* n, const int* k, T* a, const int* lda, const T* tau, T* work, const int* lwork,
           int* info) {
  if constexpr (kComplex<T>) {
    XS_LAPACK_COMPLEX(T, ungqr, m, n, k, a, lda, tau, work, lwork, info);
  } else {
    XS_LAPACK_REAL(T, orgqr, m, n, k, a, lda, tau, work, lwork, info);
  }
}

template <typename T>
StatusOr<Array> OrgqrT(const Array& a, const Array& tau, const Batch& b, int k) {
  const int m = b.rows, n = b.cols, lda = std::max(1, m);
  Array out(a.shape());
  if (m == 0 || n == 0) return out;
  std::vector<T> cm = Scratch<T>(int64_t{m} * n);
  T query{};
  int lwork = -1, info = 0;
  Orgqr<T>(&m, &n, &k, cm.data(), &lda, Data<T>(tau), &query, &lwork, &info);
  lwork = QueriedSize(query);
  std::vector<T> work = Scratch<T>(lwork);
  for (int64_t i = 0; i < b.count; ++i) {
    ToColumnMajor(Data<T>(a) + i * m * n, m, n, cm.data());
    Orgqr<T>(&m, &n, &k, cm.data(), &lda, Data<T>(tau) + i * k, work.data(), &lwork, &info);
    if (info < 0) return IllegalArgument("orgqr", info);
    FromColumnMajor(cm.data(), m, n, Data<T>(out) + i * m * n);
  }
  return out;
}

// ---- ormqr / unmqr ----

template <typename T>
void Ormqr(char side, char trans, int m, int n, int k, const T* a, int lda, const T* tau, T* c, int ldc, T* work,
           int lwork, int* info) {
  if constexpr (kComplex<T>) {
    XS_LAPACK_COMPLEX(T, unmqr, &side, &trans, &m, &n, &k, a, &lda, tau, c, &ldc, work, &lwork, info, kOne, kOne);
  } else {
    XS_LAPACK_REAL(T, ormqr, &side, &trans, &m, &n, &k, a, &lda, tau, c, &ldc, work, &lwork, info, kOne, kOne);
  }
}

template <typename T>
StatusOr<Array> OrmqrT(const Array& a, const Array& tau, const Array& c, const Batch& ab, const Batch& cb, int k,
                       bool left, bool transpose) {
  const int rows = cb.rows, cols = cb.cols, ar = ab.rows, ac = ab.cols, lda = std::max(1, ar);
  const int ldc = std::max(1, rows);
  Array out(c.shape());
  if (rows == 0 || cols == 0) return out;
  const char side = left ? 'L' : 'R';
  const char trans = !transpose ? 'N' : kComplex<T> ? 'C' : 'T';
  std::vector<T> acm = Scratch<T>(int64_t{ar} * ac);
  std::vector<T> ccm = Scratch<T>(int64_t{rows} * cols);
  T query{};
  int info = 0;
  Ormqr<T>(side, trans, rows, cols, k, acm.data(), lda, Data<T>(tau), ccm.data(), ldc, &query, -1, &info);
  const int lwork = QueriedSize(query);
  std::vector<T> work = Scratch<T>(lwork);
  for (int64_t i = 0; i < cb.count; ++i) {
    ToColumnMajor(Data<T>(a) + i * ar * ac, ar, ac, acm.data());
    ToColumnMajor(Data<T>(c) + i * rows * cols, rows, cols, ccm.data());
    Ormqr<T>(side, trans, rows, cols, k, acm.data(), lda, Data<T>(tau) + i * k, ccm.data(), ldc, work.data(), lwork,
             &info);
    if (info < 0) return IllegalArgument("ormqr", info);
    FromColumnMajor(ccm.data(), rows, cols, Data<T>(out) + i * rows * cols);
  }
  return out;
}

// ---- syevd / heevd ----

template <typename T>
StatusOr<std::vector<Array>> Syevd(const Array& a, const Batch& b, bool lower, bool vectors) {
  const int n = b.rows, lda = std::max(1, n);
  Array out = a, w(Shape(RealDType(a.dtype()), WithMinor(b.dims, {n})));
  std::vector<int> info(static_cast<size_t>(b.count), 0);
  if (n > 0) {
    // jaxlib's sizes (LAPACK's documented minimums), not a query.
    const int64_t nn = n;
    int lwork, lrwork = 0, liwork = vectors ? 3 + 5 * n : 1;
    if constexpr (kComplex<T>) {
      lwork = static_cast<int>(vectors ? 2 * nn + nn * nn : nn + 1);
      lrwork = static_cast<int>(vectors ? 1 + 5 * nn + 2 * nn * nn : std::max<int64_t>(nn, 1));
    } else {
      lwork = static_cast<int>(vectors ? 1 + 6 * nn + 2 * nn * nn : 2 * nn + 1);
    }
    std::vector<T> cm = Scratch<T>(nn * nn);
    std::vector<T> work = Scratch<T>(lwork);
    std::vector<Real<T>> rwork(static_cast<size_t>(lrwork));
    std::vector<int> iwork(static_cast<size_t>(liwork));
    const char jobz = vectors ? 'V' : 'N', uplo = lower ? 'L' : 'U';
    for (int64_t i = 0; i < b.count; ++i) {
      ToColumnMajor(Data<T>(a) + i * nn * nn, n, n, cm.data());
      Real<T>* wi = Data<Real<T>>(w) + i * n;
      if constexpr (kComplex<T>) {
        XS_LAPACK_COMPLEX(T, heevd, &jobz, &uplo, &n, cm.data(), &lda, wi, work.data(), &lwork, rwork.data(), &lrwork,
                          iwork.data(), &liwork, &info[i], kOne, kOne);
      } else {
        XS_LAPACK_REAL(T, syevd, &jobz, &uplo, &n, cm.data(), &lda, wi, work.data(), &lwork, iwork.data(), &liwork,
                       &info[i], kOne, kOne);
      }
      if (info[i] < 0) return IllegalArgument("syevd", info[i]);
      FromColumnMajor(cm.data(), n, n, Data<T>(out) + i * nn * nn);
    }
  }
  std::vector<Array> r;
  r.push_back(std::move(out));
  r.push_back(std::move(w));
  r.push_back(InfoArray(b.dims, info));
  return r;
}

// ---- gesdd / gesvd ----

template <typename T>
void Gesdd(char jobz, int m, int n, T* a, int lda, Real<T>* s, T* u, int ldu, T* vt, int ldvt, T* work, int lwork,
           Real<T>* rwork, int* iwork, int* info) {
  if constexpr (kComplex<T>) {
    XS_LAPACK_COMPLEX(T, gesdd, &jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, rwork, iwork, info, kOne);
  } else {
    (void)rwork;
    XS_LAPACK_REAL(T, gesdd, &jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info, kOne);
  }
}

template <typename T>
void Gesvd(char job, int m, int n, T* a, int lda, Real<T>* s, T* u, int ldu, T* vt, int ldvt, T* work, int lwork,
           Real<T>* rwork, int* info) {
  if constexpr (kComplex<T>) {
    XS_LAPACK_COMPLEX(T, gesvd, &job, &job, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, rwork, info, kOne,
                      kOne);
  } else {
    (void)rwork;
    XS_LAPACK_REAL(T, gesvd, &job, &job, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, info, kOne, kOne);
  }
}

template <typename T>
StatusOr<std::vector<Array>> Svd(const Array& a, const Batch& b, const SvdOptions& o) {
  const int m = b.rows, n = b.cols, k = std::min(m, n), lda = std::max(1, m);
  const bool full = o.mode == 'A' || (o.mode == 'N' && o.full_uv);
  const int ucols = full ? m : k, vtrows = full ? n : k;
  const int ldu = std::max(1, m), ldvt = std::max(1, vtrows);
  Array out = a, s(Shape(RealDType(a.dtype()), WithMinor(b.dims, {k})));
  Array u(Shape(a.dtype(), WithMinor(b.dims, {m, ucols}))), vt(Shape(a.dtype(), WithMinor(b.dims, {vtrows, n})));
  std::vector<int> info(static_cast<size_t>(b.count), 0);
  if (k > 0) {
    const int64_t mn = static_cast<int64_t>(m) * n, usize = static_cast<int64_t>(m) * ucols,
                  vtsize = static_cast<int64_t>(vtrows) * n;
    std::vector<T> cm = Scratch<T>(mn);
    std::vector<T> ucm = Scratch<T>(usize);
    std::vector<T> vtcm = Scratch<T>(vtsize);
    // jaxlib's rwork / iwork sizes.
    const int64_t mink = k, maxk = std::max(m, n);
    int64_t lrwork = 0;
    if (kComplex<T>) {
      lrwork = !o.divide_and_conquer ? 5 * mink
               : o.mode == 'N'       ? 7 * mink
                                     : std::max(5 * mink * mink + 5 * mink, 2 * maxk * mink + 2 * mink * mink + mink);
    }
    std::vector<Real<T>> rwork(static_cast<size_t>(std::max<int64_t>(1, lrwork)));
    std::vector<int> iwork(static_cast<size_t>(8 * mink));
    T query{};
    int qinfo = 0;
    Real<T>* s0 = Data<Real<T>>(s);
    if (o.divide_and_conquer) {
      Gesdd<T>(o.mode, m, n, cm.data(), lda, s0, ucm.data(), ldu, vtcm.data(), ldvt, &query, -1, rwork.data(),
               iwork.data(), &qinfo);
    } else {
      Gesvd<T>(o.mode, m, n, cm.data(), lda, s0, ucm.data(), ldu, vtcm.data(), ldvt, &query, -1, rwork.data(), &qinfo);
    }
    if (qinfo < 0) return IllegalArgument(o.divide_and_conquer ? "gesdd" : "gesvd", qinfo);
    const int lwork = QueriedSize(query);
    std::vector<T> work = Scratch<T>(lwork);
    for (int64_t i = 0; i < b.count; ++i) {
      ToColumnMajor(Data<T>(a) + i * mn, m, n, cm.data());
      Real<T>* si = s0 + i * k;
      if (o.divide_and_conquer) {
        Gesdd<T>(o.mode, m, n, cm.data(), lda, si, ucm.data(), ldu, vtcm.data(), ldvt, work.data(), lwork, rwork.data(),
                 iwork.data(), &info[i]);
      } else {
        Gesvd<T>(o.mode, m, n, cm.data(), lda, si, ucm.data(), ldu, vtcm.data(), ldvt, work.data(), lwork, rwork.data(),
                 &info[i]);
      }
      if (info[i] < 0) return IllegalArgument(o.divide_and_conquer ? "gesdd" : "gesvd", info[i]);
      FromColumnMajor(cm.data(), m, n, Data<T>(out) + i * mn);
      if (o.mode != 'N') {
        FromColumnMajor(ucm.data(), m, ucols, Data<T>(u) + i * usize);
        FromColumnMajor(vtcm.data(), vtrows, n, Data<T>(vt) + i * vtsize);
      }
    }
  }
  std::vector<Array> r;
  r.push_back(std::move(out));
  r.push_back(std::move(s));
  r.push_back(std::move(u));
  r.push_back(std::move(vt));
  r.push_back(InfoArray(b.dims, info));
  return r;
}

// ---- sytrd / hetrd ----

template <typename T>
void Sytrd(char uplo, int n, T* a, int lda, Real<T>* d, Real<T>* e, T* tau, T* work, int lwork, int* info) {
  if constexpr (kComplex<T>) {
    XS_LAPACK_COMPLEX(T, hetrd, &uplo, &n, a, &lda, d, e, tau, work, &lwork, info, kOne);
  } else {
    XS_LAPACK_REAL(T, sytrd, &uplo, &n, a, &lda, d, e, tau, work, &lwork, info, kOne);
  }
}

template <typename T>
StatusOr<std::vector<Array>> SytrdT(const Array& a, const Batch& b, bool lower) {
  const int n = b.rows, lda = std::max(1, n);
  const int64_t nn = static_cast<int64_t>(n) * n;
  const DType rt = RealDType(a.dtype());
  Array out = a, d(Shape(rt, WithMinor(b.dims, {n}))), e(Shape(rt, WithMinor(b.dims, {n - 1})));
  Array tau(Shape(a.dtype(), WithMinor(b.dims, {n - 1})));
  std::vector<int> info(static_cast<size_t>(b.count), 0);
  std::vector<T> cm = Scratch<T>(nn);
  T query{};
  int qinfo = 0;
  // jaxlib queries with uplo 'L' whatever the call's triangle.
  Sytrd<T>('L', n, cm.data(), lda, Data<Real<T>>(d), Data<Real<T>>(e), Data<T>(tau), &query, -1, &qinfo);
  const int lwork = QueriedSize(query);
  std::vector<T> work = Scratch<T>(lwork);
  for (int64_t i = 0; i < b.count; ++i) {
    ToColumnMajor(Data<T>(a) + i * nn, n, n, cm.data());
    Sytrd<T>(lower ? 'L' : 'U', n, cm.data(), lda, Data<Real<T>>(d) + i * n, Data<Real<T>>(e) + i * (n - 1),
             Data<T>(tau) + i * (n - 1), work.data(), lwork, &info[i]);
    if (info[i] < 0) return IllegalArgument("sytrd", info[i]);
    FromColumnMajor(cm.data(), n, n, Data<T>(out) + i * nn);
  }
  std::vector<Array> r;
  r.push_back(std::move(out));
  r.push_back(std::move(d));
  r.push_back(std::move(e));
  r.push_back(std::move(tau));
  r.push_back(InfoArray(b.dims, info));
  return r;
}

// ---- gtsv ----

template <typename T>
StatusOr<std::vector<Array>> Gtsv(const Array& dl, const Array& d, const Array& du, const Array& b, const Batch& bb) {
  const int m = bb.rows, nrhs = bb.cols, ldb = std::max(1, m);
  const int64_t bsize = static_cast<int64_t>(m) * nrhs;
  Array dlo = dl, dout = d, duo = du, x = b;
  std::vector<int> info(static_cast<size_t>(bb.count), 0);
  if (m > 0) {
    std::vector<T> cm = Scratch<T>(bsize);
    for (int64_t i = 0; i < bb.count; ++i) {
      ToColumnMajor(Data<T>(b) + i * bsize, m, nrhs, cm.data());
      // dl[0] is JAX's padding: LAPACK's dl is dl[1:].
      XS_LAPACK(T, gtsv, &m, &nrhs, Data<T>(dlo) + i * m + 1, Data<T>(dout) + i * m, Data<T>(duo) + i * m, cm.data(),
                &ldb, &info[i]);
      if (info[i] < 0) return IllegalArgument("gtsv", info[i]);
      FromColumnMajor(cm.data(), m, nrhs, Data<T>(x) + i * bsize);
    }
  }
  std::vector<Array> r;
  r.push_back(std::move(dlo));
  r.push_back(std::move(dout));
  r.push_back(std::move(duo));
  r.push_back(std::move(x));
  r.push_back(InfoArray(bb.dims, info));
  return r;
}

}  // namespace
}  // namespace lapack_impl

StatusOr<std::vector<Array>> LapackGeqrf(const Array& a) {
  XS_ASSIGN_OR_RETURN(lapack_impl::Batch b, lapack_impl::Matrices(a, "geqrf", false));
  XS_LAPACK_BY_TYPE(a.dtype(), return lapack_impl::Geqrf<T>(a, b));
  return lapack_impl::TypeError("geqrf", a.dtype());
}

StatusOr<std::vector<Array>> LapackGeqp3(const Array& a, const Array& jpvt) {
  XS_ASSIGN_OR_RETURN(lapack_impl::Batch b, lapack_impl::Matrices(a, "geqp3", false));
  XS_RETURN_IF_ERROR(lapack_impl::CheckVector(jpvt, "geqp3", "jpvt", DType::kS32, b.dims, b.cols));
  XS_LAPACK_BY_TYPE(a.dtype(), return lapack_impl::Geqp3<T>(a, jpvt, b));
  return lapack_impl::TypeError("geqp3", a.dtype());
}

StatusOr<Array> LapackOrgqr(const Array& a, const Array& tau) {
  XS_ASSIGN_OR_RETURN(lapack_impl::Batch b, lapack_impl::Matrices(a, "orgqr", false));
  const int64_t k = tau.rank() >= 1 ? tau.dims().back() : -1;
  XS_RETURN_IF_ERROR(lapack_impl::CheckVector(tau, "orgqr", "tau", a.dtype(), b.dims, k));
  if (b.rows < b.cols || k > b.cols) {
    return InvalidArgument("orgqr needs a [..., m, n] with m >= n >= k (tau's size ", k, "), got ",
                           a.shape().ToString(false));
  }
  XS_LAPACK_BY_TYPE(a.dtype(), return lapack_impl::OrgqrT<T>(a, tau, b, static_cast<int>(k)));
  return lapack_impl::TypeError("orgqr", a.dtype());
}

StatusOr<Array> LapackOrmqr(const Array& a, const Array& tau, const Array& c, bool left, bool transpose) {
  XS_ASSIGN_OR_RETURN(lapack_impl::Batch ab, lapack_impl::Matrices(a, "ormqr", false));
  XS_ASSIGN_OR_RETURN(lapack_impl::Batch cb, lapack_impl::Matrices(c, "ormqr", false));
  const int64_t k = tau.rank() >= 1 ? tau.dims().back() : -1;
  XS_RETURN_IF_ERROR(lapack_impl::CheckVector(tau, "ormqr", "tau", a.dtype(), ab.dims, k));
  const int order = left ? cb.rows : cb.cols;
  if (c.dtype() != a.dtype() || cb.dims != ab.dims || ab.rows != order || k > ab.cols || k > order) {
    return InvalidArgument("ormqr needs reflectors a [..., r, >=k] with r = c's ", left ? "rows" : "columns",
                           ", tau [..., k] and c of a's type and batch, got a ", a.shape().ToString(false), ", tau ",
                           tau.shape().ToString(false), ", c ", c.shape().ToString(false));
  }
  XS_LAPACK_BY_TYPE(a.dtype(), return lapack_impl::OrmqrT<T>(a, tau, c, ab, cb, static_cast<int>(k), left, transpose));
  return lapack_impl::TypeError("ormqr", a.dtype());
}

StatusOr<std::vector<Array>> LapackSyevd(const Array& a, bool lower, bool vectors) {
  XS_ASSIGN_OR_RETURN(lapack_impl::Batch b, lapack_impl::Matrices(a, "syevd", true));
  XS_LAPACK_BY_TYPE(a.dtype(), return lapack_impl::Syevd<T>(a, b, lower, vectors));
  return lapack_impl::TypeError("syevd", a.dtype());
}

StatusOr<std::vector<Array>> LapackSvd(const Array& a, const SvdOptions& options) {
  const char* routine = options.divide_and_conquer ? "gesdd" : "gesvd";
  if (options.mode != 'A' && options.mode != 'S' && options.mode != 'N') {
    return InvalidArgument(routine, ": mode '", std::string(1, options.mode),
                           "' is not one JAX uses ('A' full, 'S' economy, 'N' values only; jaxlib refuses 'O' too)");
  }
  XS_ASSIGN_OR_RETURN(lapack_impl::Batch b, lapack_impl::Matrices(a, routine, false));
  XS_LAPACK_BY_TYPE(a.dtype(), return lapack_impl::Svd<T>(a, b, options));
  return lapack_impl::TypeError(routine, a.dtype());
}

StatusOr<std::vector<Array>> LapackSytrd(const Array& a, bool lower) {
  XS_ASSIGN_OR_RETURN(lapack_impl::Batch b, lapack_impl::Matrices(a, "sytrd", true));
  if (b.rows == 0) return InvalidArgument("sytrd needs matrices of order >= 1, got ", a.shape().ToString(false));
  XS_LAPACK_BY_TYPE(a.dtype(), return lapack_impl::SytrdT<T>(a, b, lower));
  return lapack_impl::TypeError("sytrd", a.dtype());
}

StatusOr<std::vector<Array>> LapackGtsv(const Array& dl, const Array& d, const Array& du, const Array& b) {
  XS_ASSIGN_OR_RETURN(lapack_impl::Batch bb, lapack_impl::Matrices(b, "gtsv", false));
  for (const auto& [v, what] : {std::pair<const Array*, const char*>{&dl, "dl"}, {&d, "d"}, {&du, "du"}}) {
    XS_RETURN_IF_ERROR(lapack_impl::CheckVector(*v, "gtsv", what, b.dtype(), bb.dims, bb.rows));
  }
  XS_LAPACK_BY_TYPE(b.dtype(), return lapack_impl::Gtsv<T>(dl, d, du, b, bb));
  return lapack_impl::TypeError("gtsv", b.dtype());
}

}  // namespace xs::kernels
