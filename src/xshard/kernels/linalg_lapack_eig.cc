// JAX's LAPACK custom-calls on CPU, part 2: the non-symmetric eigenproblem (geev), Schur
// decomposition (gees, unsorted) and Hessenberg reduction (gehrd). Workspace sizes come from
// LAPACK's queries, as in jaxlib's kernels.
#include "xshard/kernels/linalg_lapack.h"
#include "xshard/kernels/linalg_lapack_internal.h"

namespace xs::kernels {
namespace lapack_impl {
namespace {

// The complex type of T's precision.
template <typename T>
using ComplexOf = std::complex<Real<T>>;

DType ComplexDType(DType t) { return t == DType::kF32 ? DType::kC64 : t == DType::kF64 ? DType::kC128 : t; }

template <typename T>
bool AllFinite(const T* v, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    if (!std::isfinite(std::real(v[i])) || !std::isfinite(std::imag(v[i]))) return false;
  }
  return true;
}

// LAPACK's real eigenvectors (column-major; a complex pair j, j+1 stored as its real part in
// column j and imaginary part in column j+1) as complex column-major columns, the pair's second
// vector the conjugate of the first (jaxlib's UnpackEigenvectors).
template <typename R>
void UnpackPairs(int n, const R* wi, const R* packed, std::complex<R>* out) {
  const int64_t ld = n;
  for (int j = 0; j < n;) {
    if (wi[j] == 0 || std::isnan(wi[j]) || j + 1 == n) {
      for (int i = 0; i < n; ++i) out[j * ld + i] = {packed[j * ld + i], R(0)};
      ++j;
      continue;
    }
    for (int i = 0; i < n; ++i) {
      const R re = packed[j * ld + i], im = packed[(j + 1) * ld + i];
      out[j * ld + i] = {re, im};
      out[(j + 1) * ld + i] = {re, -im};
    }
    j += 2;
  }
}

// ---- geev ----

template <typename T>
StatusOr<std::vector<Array>> GeevT(const Array& a, const Batch& b, bool left, bool right) {
  const int n = b.rows, ld = std::max(1, n);
  const int64_t nn = static_cast<int64_t>(n) * n;
  const DType ct = ComplexDType(a.dtype());
  Array w(Shape(a.dtype(), WithMinor(b.dims, {n}))), wi(Shape(a.dtype(), WithMinor(b.dims, {n})));
  Array vl(Shape(ct, WithMinor(b.dims, {n, n}))), vr(Shape(ct, WithMinor(b.dims, {n, n})));
  std::vector<int> info(static_cast<size_t>(b.count), 0);
  if (n > 0) {
    const char jl = left ? 'V' : 'N', jr = right ? 'V' : 'N';
    std::vector<T> cm = Scratch<T>(nn);
    std::vector<T> vlw = Scratch<T>(nn);
    std::vector<T> vrw = Scratch<T>(nn);
    std::vector<ComplexOf<T>> unpacked(kComplex<T> ? 0 : static_cast<size_t>(nn));
    std::vector<Real<T>> rwork(kComplex<T> ? 2 * static_cast<size_t>(n) : 0);
    T query{};
    int lwork = -1, qinfo = 0;
    if constexpr (kComplex<T>) {
      XS_LAPACK_COMPLEX(T, geev, &jl, &jr, &n, cm.data(), &ld, Data<T>(w), vlw.data(), &ld, vrw.data(), &ld, &query,
                        &lwork, rwork.data(), &qinfo, kOne, kOne);
    } else {
      XS_LAPACK_REAL(T, geev, &jl, &jr, &n, cm.data(), &ld, Data<T>(w), Data<T>(wi), vlw.data(), &ld, vrw.data(), &ld,
                     &query, &lwork, &qinfo, kOne, kOne);
    }
    if (qinfo < 0) return IllegalArgument("geev", qinfo);
    lwork = QueriedSize(query);
    std::vector<T> work = Scratch<T>(lwork);
    for (int64_t i = 0; i < b.count; ++i) {
      const T* src = Data<T>(a) + i * nn;
      if (!AllFinite(src, nn)) {
        info[i] = -4;  // jaxlib's code for a matrix it does not pass to LAPACK
        continue;
      }
      ToColumnMajor(src, n, n, cm.data());
      T* wr_i = Data<T>(w) + i * n;
      if constexpr (kComplex<T>) {
        XS_LAPACK_COMPLEX(T, geev, &jl, &jr, &n, cm.data(), &ld, wr_i, vlw.data(), &ld, vrw.data(), &ld, work.data(),
                          &lwork, rwork.data(), &info[i], kOne, kOne);
      } else {
        XS_LAPACK_REAL(T, geev, &jl, &jr, &n, cm.data(), &ld, wr_i, Data<T>(wi) + i * n, vlw.data(), &ld, vrw.data(),
                       &ld, work.data(), &lwork, &info[i], kOne, kOne);
      }
      if (info[i] < 0) return IllegalArgument("geev", info[i]);
      if (info[i] != 0) continue;
      for (auto [packed, out] : {std::pair{&vlw, &vl}, std::pair{&vrw, &vr}}) {
        ComplexOf<T>* dst = Data<ComplexOf<T>>(*out) + i * nn;
        if constexpr (kComplex<T>) {
          FromColumnMajor(packed->data(), n, n, dst);
        } else {
          UnpackPairs(n, Data<T>(wi) + i * n, packed->data(), unpacked.data());
          FromColumnMajor(unpacked.data(), n, n, dst);
        }
      }
    }
  }
  std::vector<Array> r;
  r.push_back(std::move(w));
  if (!kComplex<T>) r.push_back(std::move(wi));
  r.push_back(std::move(vl));
  r.push_back(std::move(vr));
  r.push_back(InfoArray(b.dims, info));
  return r;
}

// ---- gees ----

template <typename T>
StatusOr<std::vector<Array>> GeesT(const Array& a, const Batch& b, bool vectors) {
  const int n = b.rows, ld = std::max(1, n);
  const int64_t nn = static_cast<int64_t>(n) * n;
  Array t = a, vs(a.shape());
  Array w(Shape(a.dtype(), WithMinor(b.dims, {n}))), wi(Shape(a.dtype(), WithMinor(b.dims, {n})));
  std::vector<int> sdim(static_cast<size_t>(b.count), 0), info(static_cast<size_t>(b.count), 0);
  if (n > 0) {
    const char jobvs = vectors ? 'V' : 'N', sort = 'N';
    std::vector<T> cm = Scratch<T>(nn);
    std::vector<T> vsw = Scratch<T>(nn);
    std::vector<Real<T>> rwork(kComplex<T> ? static_cast<size_t>(n) : 0);
    T query{};
    int lwork = -1, qinfo = 0, qsdim = 0;
    if constexpr (kComplex<T>) {
      XS_LAPACK_COMPLEX(T, gees, &jobvs, &sort, nullptr, &n, cm.data(), &ld, &qsdim, Data<T>(w), vsw.data(), &ld,
                        &query, &lwork, rwork.data(), nullptr, &qinfo, kOne, kOne);
    } else {
      XS_LAPACK_REAL(T, gees, &jobvs, &sort, nullptr, &n, cm.data(), &ld, &qsdim, Data<T>(w), Data<T>(wi), vsw.data(),
                     &ld, &query, &lwork, nullptr, &qinfo, kOne, kOne);
    }
    if (qinfo < 0) return IllegalArgument("gees", qinfo);
    lwork = QueriedSize(query);
    std::vector<T> work = Scratch<T>(lwork);
    for (int64_t i = 0; i < b.count; ++i) {
      ToColumnMajor(Data<T>(a) + i * nn, n, n, cm.data());
      T* w_i = Data<T>(w) + i * n;
      if constexpr (kComplex<T>) {
        XS_LAPACK_COMPLEX(T, gees, &jobvs, &sort, nullptr, &n, cm.data(), &ld, &sdim[i], w_i, vsw.data(), &ld,
                          work.data(), &lwork, rwork.data(), nullptr, &info[i], kOne, kOne);
      } else {
        XS_LAPACK_REAL(T, gees, &jobvs, &sort, nullptr, &n, cm.data(), &ld, &sdim[i], w_i, Data<T>(wi) + i * n,
                       vsw.data(), &ld, work.data(), &lwork, nullptr, &info[i], kOne, kOne);
      }
      if (info[i] < 0) return IllegalArgument("gees", info[i]);
      FromColumnMajor(cm.data(), n, n, Data<T>(t) + i * nn);
      if (vectors) FromColumnMajor(vsw.data(), n, n, Data<T>(vs) + i * nn);
    }
  }
  std::vector<Array> r;
  r.push_back(std::move(t));
  r.push_back(std::move(vs));
  r.push_back(std::move(w));
  if (!kComplex<T>) r.push_back(std::move(wi));
  r.push_back(InfoArray(b.dims, sdim));
  r.push_back(InfoArray(b.dims, info));
  return r;
}

// ---- gehrd ----

template <typename T>
StatusOr<std::vector<Array>> GehrdT(const Array& a, const Batch& b, int ilo, int ihi) {
  const int n = b.rows, ld = std::max(1, n);
  const int64_t nn = static_cast<int64_t>(n) * n;
  Array out = a, tau(Shape(a.dtype(), WithMinor(b.dims, {n - 1})));
  std::vector<int> info(static_cast<size_t>(b.count), 0);
  std::vector<T> cm = Scratch<T>(nn);
  T query{};
  int lwork = -1, qinfo = 0;
  XS_LAPACK(T, gehrd, &n, &ilo, &ihi, cm.data(), &ld, Data<T>(tau), &query, &lwork, &qinfo);
  if (qinfo < 0) return IllegalArgument("gehrd", qinfo);
  lwork = QueriedSize(query);
  std::vector<T> work = Scratch<T>(lwork);
  for (int64_t i = 0; i < b.count; ++i) {
    ToColumnMajor(Data<T>(a) + i * nn, n, n, cm.data());
    XS_LAPACK(T, gehrd, &n, &ilo, &ihi, cm.data(), &ld, Data<T>(tau) + i * (n - 1), work.data(), &lwork, &info[i]);
    if (info[i] < 0) return IllegalArgument("gehrd", info[i]);
    FromColumnMajor(cm.data(), n, n, Data<T>(out) + i * nn);
  }
  std::vector<Array> r;
  r.push_back(std::move(out));
  r.push_back(std::move(tau));
  r.push_back(InfoArray(b.dims, info));
  return r;
}

}  // namespace
}  // namespace lapack_impl

StatusOr<std::vector<Array>> LapackGeev(const Array& a, bool left, bool right) {
  XS_ASSIGN_OR_RETURN(lapack_impl::Batch b, lapack_impl::Matrices(a, "geev", true));
  XS_LAPACK_BY_TYPE(a.dtype(), return lapack_impl::GeevT<T>(a, b, left, right));
  return lapack_impl::TypeError("geev", a.dtype());
}

StatusOr<std::vector<Array>> LapackGees(const Array& a, bool vectors) {
  XS_ASSIGN_OR_RETURN(lapack_impl::Batch b, lapack_impl::Matrices(a, "gees", true));
  XS_LAPACK_BY_TYPE(a.dtype(), return lapack_impl::GeesT<T>(a, b, vectors));
  return lapack_impl::TypeError("gees", a.dtype());
}

StatusOr<std::vector<Array>> LapackGehrd(const Array& a, int ilo, int ihi) {
  XS_ASSIGN_OR_RETURN(lapack_impl::Batch b, lapack_impl::Matrices(a, "gehrd", true));
  const int n = b.rows;
  if (n < 1 || ilo < 1 || ilo > n || ihi < ilo || ihi > n) {
    return InvalidArgument("gehrd needs matrices of order n >= 1 and 1 <= low <= high <= n, got ",
                           a.shape().ToString(false), " with low=", ilo, " high=", ihi);
  }
  XS_LAPACK_BY_TYPE(a.dtype(), return lapack_impl::GehrdT<T>(a, b, ilo, ihi));
  return lapack_impl::TypeError("gehrd", a.dtype());
}

}  // namespace xs::kernels
