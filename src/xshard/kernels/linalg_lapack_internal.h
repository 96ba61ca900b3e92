// Shared by linalg_lapack.cc and linalg_lapack_eig.cc: the Fortran prototypes of the LAPACK
// routines they call (the system's OpenBLAS exports them: sgeqrf_, zheevd_, ...), the dispatch
// from an element type to the s / d / c / z routine, and the column-major copies and shape checks.
//
// Calling convention: every argument by pointer, 32-bit ints (LP64 LAPACK), and after the last
// argument one hidden size_t length per CHARACTER argument (gfortran's ABI; passed explicitly,
// since leaving them out is undefined behavior the compiler may exploit in tail calls).
#ifndef XSHARD_KERNELS_LINALG_LAPACK_INTERNAL_H_
#define XSHARD_KERNELS_LINALG_LAPACK_INTERNAL_H_

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>
#include <type_traits>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/core/array.h"

using xs_lapack_cf = std::complex<float>;
using xs_lapack_cd = std::complex<double>;

extern "C" {
#define XS_LAPACK_DECL_ANY(p, T, R)                                                                               \
  void p##geqrf_(const int* m, const int* n, T* a, const int* lda, T* tau, T* work, const int* lwork, int* info); \
  void p##gehrd_(const int* n, const int* ilo, const int* ihi, T* a, const int* lda, T* tau, T* work,             \
                 const int* lwork, int* info);                                                                    \
  void p##gtsv_(const int* n, const int* nrhs, T* dl, T* d, T* du, T* b, const int* ldb, int* info);
#define XS_LAPACK_DECL_REAL(p, T)                                                                                     \
  void p##geqp3_(const int* m, const int* n, T* a, const int* lda, int* jpvt, T* tau, T* work, const int* lwork,      \
                 int* info);                                                                                          \
  void p##orgqr_(const int* m, const int* n, const int* k, T* a, const int* lda, const T* tau, T* work,               \
                 const int* lwork, int* info);                                                                        \
  void p##ormqr_(const char* side, const char* trans, const int* m, const int* n, const int* k, const T* a,           \
                 const int* lda, const T* tau, T* c, const int* ldc, T* work, const int* lwork, int* info, size_t,    \
                 size_t);                                                                                             \
  void p##syevd_(const char* jobz, const char* uplo, const int* n, T* a, const int* lda, T* w, T* work,               \
                 const int* lwork, int* iwork, const int* liwork, int* info, size_t, size_t);                         \
  void p##gesdd_(const char* jobz, const int* m, const int* n, T* a, const int* lda, T* s, T* u, const int* ldu,      \
                 T* vt, const int* ldvt, T* work, const int* lwork, int* iwork, int* info, size_t);                   \
  void p##gesvd_(const char* jobu, const char* jobvt, const int* m, const int* n, T* a, const int* lda, T* s, T* u,   \
                 const int* ldu, T* vt, const int* ldvt, T* work, const int* lwork, int* info, size_t, size_t);       \
  void p##geev_(const char* jobvl, const char* jobvr, const int* n, T* a, const int* lda, T* wr, T* wi, T* vl,        \
                const int* ldvl, T* vr, const int* ldvr, T* work, const int* lwork, int* info, size_t, size_t);       \
  void p##gees_(const char* jobvs, const char* sort, void* select, const int* n, T* a, const int* lda, int* sdim,     \
                T* wr, T* wi, T* vs, const int* ldvs, T* work, const int* lwork, int* bwork, int* info, size_t,       \
                size_t);                                                                                              \
  void p##sytrd_(const char* uplo, const int* n, T* a, const int* lda, T* d, T* e, T* tau, T* work, const int* lwork, \
                 int* info, size_t);
#define XS_LAPACK_DECL_COMPLEX(p, T, R)                                                                               \
  void p##geqp3_(const int* m, const int* n, T* a, const int* lda, int* jpvt, T* tau, T* work, const int* lwork,      \
                 R* rwork, int* info);                                                                                \
  void p##ungqr_(const int* m, const int* n, const int* k, T* a, const int* lda, const T* tau, T* work,               \
                 const int* lwork, int* info);                                                                        \
  void p##unmqr_(const char* side, const char* trans, const int* m, const int* n, const int* k, const T* a,           \
                 const int* lda, const T* tau, T* c, const int* ldc, T* work, const int* lwork, int* info, size_t,    \
                 size_t);                                                                                             \
  void p##heevd_(const char* jobz, const char* uplo, const int* n, T* a, const int* lda, R* w, T* work,               \
                 const int* lwork, R* rwork, const int* lrwork, int* iwork, const int* liwork, int* info, size_t,     \
                 size_t);                                                                                             \
  void p##gesdd_(const char* jobz, const int* m, const int* n, T* a, const int* lda, R* s, T* u, const int* ldu,      \
                 T* vt, const int* ldvt, T* work, const int* lwork, R* rwork, int* iwork, int* info, size_t);         \
  void p##gesvd_(const char* jobu, const char* jobvt, const int* m, const int* n, T* a, const int* lda, R* s, T* u,   \
                 const int* ldu, T* vt, const int* ldvt, T* work, const int* lwork, R* rwork, int* info, size_t,      \
                 size_t);                                                                                             \
  void p##geev_(const char* jobvl, const char* jobvr, const int* n, T* a, const int* lda, T* w, T* vl,                \
                const int* ldvl, T* vr, const int* ldvr, T* work, const int* lwork, R* rwork, int* info, size_t,      \
                size_t);                                                                                              \
  void p##gees_(const char* jobvs, const char* sort, void* select, const int* n, T* a, const int* lda, int* sdim,     \
                T* w, T* vs, const int* ldvs, T* work, const int* lwork, R* rwork, int* bwork, int* info, size_t,     \
                size_t);                                                                                              \
  void p##hetrd_(const char* uplo, const int* n, T* a, const int* lda, R* d, R* e, T* tau, T* work, const int* lwork, \
                 int* info, size_t);
XS_LAPACK_DECL_ANY(s, float, float)
XS_LAPACK_DECL_ANY(d, double, double)
XS_LAPACK_DECL_ANY(c, xs_lapack_cf, float)
XS_LAPACK_DECL_ANY(z, xs_lapack_cd, double)
XS_LAPACK_DECL_REAL(s, float)
XS_LAPACK_DECL_REAL(d, double)
XS_LAPACK_DECL_COMPLEX(c, xs_lapack_cf, float)
XS_LAPACK_DECL_COMPLEX(z, xs_lapack_cd, double)
#undef XS_LAPACK_DECL_ANY
#undef XS_LAPACK_DECL_REAL
#undef XS_LAPACK_DECL_COMPLEX
}

// Calls routine `name` of element type T (a template parameter; the branches not taken are never
// instantiated): XS_LAPACK(T, geqrf, args) calls sgeqrf_ / dgeqrf_ / cgeqrf_ / zgeqrf_.
#define XS_LAPACK(T, name, ...)                             \
  do {                                                      \
    if constexpr (std::is_same_v<T, float>) {               \
      s##name##_(__VA_ARGS__);                              \
    } else if constexpr (std::is_same_v<T, double>) {       \
      d##name##_(__VA_ARGS__);                              \
    } else if constexpr (std::is_same_v<T, xs_lapack_cf>) { \
      c##name##_(__VA_ARGS__);                              \
    } else {                                                \
      z##name##_(__VA_ARGS__);                              \
    }                                                       \
  } while (false)
// The real-only (s, d) or complex-only (c, z) routines.
#define XS_LAPACK_REAL(T, name, ...)          \
  do {                                        \
    if constexpr (std::is_same_v<T, float>) { \
      s##name##_(__VA_ARGS__);                \
    } else {                                  \
      d##name##_(__VA_ARGS__);                \
    }                                         \
  } while (false)
#define XS_LAPACK_COMPLEX(T, name, ...)              \
  do {                                               \
    if constexpr (std::is_same_v<T, xs_lapack_cf>) { \
      c##name##_(__VA_ARGS__);                       \
    } else {                                         \
      z##name##_(__VA_ARGS__);                       \
    }                                                \
  } while (false)

// Runs `expr` (a return statement using the alias T) for the element type `dtype`; falls through
// for any other type.
#define XS_LAPACK_BY_TYPE(dtype, expr) \
  switch (dtype) {                     \
    case ::xs::DType::kF32: {          \
      using T = float;                 \
      expr;                            \
    }                                  \
    case ::xs::DType::kF64: {          \
      using T = double;                \
      expr;                            \
    }                                  \
    case ::xs::DType::kC64: {          \
      using T = xs_lapack_cf;          \
      expr;                            \
    }                                  \
    case ::xs::DType::kC128: {         \
      using T = xs_lapack_cd;          \
      expr;                            \
    }                                  \
    default: break;                    \
  }

namespace xs::kernels::lapack_impl {

template <typename T>
struct RealPart {
  using type = T;
};
template <typename T>
struct RealPart<std::complex<T>> {
  using type = T;
};
template <typename T>
using Real = typename RealPart<T>::type;
template <typename T>
inline constexpr bool kComplex = !std::is_same_v<T, Real<T>>;

inline bool IsLapackType(DType t) {
  return t == DType::kF32 || t == DType::kF64 || t == DType::kC64 || t == DType::kC128;
}
// f32 for c64, f64 for c128, else `t`.
inline DType RealDType(DType t) { return t == DType::kC64 ? DType::kF32 : t == DType::kC128 ? DType::kF64 : t; }

// The batch of [rows, cols] matrices of an array.
struct Batch {
  int64_t count = 0;
  int rows = 0;
  int cols = 0;
  std::vector<int64_t> dims;  // the batch dims
};

// `a`'s matrices, checked: a LAPACK element type, rank >= 2, square when asked, sizes that fit
// LAPACK's 32-bit ints.
inline StatusOr<Batch> Matrices(const Array& a, std::string_view routine, bool square) {
  if (!IsLapackType(a.dtype())) {
    return InvalidArgument(routine, " needs f32, f64, c64 or c128 matrices, got ", DTypeName(a.dtype()));
  }
  if (a.rank() < 2) return InvalidArgument(routine, " needs matrices [..., m, n], got ", a.shape().ToString(false));
  const int64_t rows = a.dims()[a.rank() - 2], cols = a.dims().back();
  if (square && rows != cols) {
    return InvalidArgument(routine, " needs square matrices [..., n, n], got ", a.shape().ToString(false));
  }
  constexpr int64_t kMax = std::numeric_limits<int>::max() / 8;
  if (rows > kMax || cols > kMax || rows * cols > std::numeric_limits<int>::max()) {
    return InvalidArgument(routine, ": matrices of ", a.shape().ToString(false), " exceed LAPACK's 32-bit sizes");
  }
  Batch b;
  b.rows = static_cast<int>(rows);
  b.cols = static_cast<int>(cols);
  b.dims.assign(a.dims().begin(), a.dims().end() - 2);
  b.count = 1;
  for (int64_t d : b.dims) b.count *= d;
  return b;
}

// `batch` followed by `minor`.
inline std::vector<int64_t> WithMinor(const std::vector<int64_t>& batch, std::initializer_list<int64_t> minor) {
  std::vector<int64_t> out = batch;
  out.insert(out.end(), minor.begin(), minor.end());
  return out;
}

// One row-major [rows, cols] matrix copied to / from column-major `cm` (leading dimension rows).
template <typename T>
void ToColumnMajor(const T* src, int rows, int cols, T* cm) {
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < cols; ++j) cm[i + static_cast<int64_t>(j) * rows] = src[static_cast<int64_t>(i) * cols + j];
  }
}
template <typename T>
void FromColumnMajor(const T* cm, int rows, int cols, T* dst) {
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < cols; ++j) dst[static_cast<int64_t>(i) * cols + j] = cm[i + static_cast<int64_t>(j) * rows];
  }
}

// A zeroed working buffer of n elements for LAPACK, with a few spare ones: OpenBLAS's Haswell
// ?gemv_n kernels read one element past the vectors LAPACK passes them (valgrind shows it under
// ?gesdd's reflector updates); the spare elements keep such reads inside the allocation.
template <typename T>
std::vector<T> Scratch(int64_t n) {
  return std::vector<T>(static_cast<size_t>(n) + 4);
}

template <typename T>
T* Data(Array& a) {
  return a.values<T>().data();
}
template <typename T>
const T* Data(const Array& a) {
  return a.values<T>().data();
}

// The size a workspace query returned in work[0] (at least 1).
template <typename T>
int QueriedSize(const T& query) {
  return std::max(1, static_cast<int>(std::ceil(std::real(query))));
}

// A negative info: an argument LAPACK found illegal (a bug here, never the data's fault).
inline Status IllegalArgument(std::string_view routine, int info) {
  return Internal("LAPACK ", routine, " rejected its argument ", -info, " (xshard passed it wrongly)");
}

// s32 array of the batch dims holding `info`.
inline Array InfoArray(const std::vector<int64_t>& batch_dims, const std::vector<int>& info) {
  Array out(Shape(DType::kS32, batch_dims));
  std::copy(info.begin(), info.end(), out.values<int32_t>().begin());
  return out;
}

inline constexpr size_t kOne = 1;  // the hidden length of a CHARACTER*1 argument

// `v` is [..batch, size] of `dtype` (the trailing dim `size`).
inline Status CheckVector(const Array& v, std::string_view routine, std::string_view what, DType dtype,
                          const std::vector<int64_t>& batch, int64_t size) {
  if (size < 0) {
    return InvalidArgument(routine, ": ", what, " must be a ", DTypeName(dtype), " vector per matrix, got ",
                           v.shape().ToString(false));
  }
  const std::vector<int64_t> want = WithMinor(batch, {size});
  if (v.dtype() != dtype || v.dims() != want) {
    return InvalidArgument(routine, ": ", what, " must be ", Shape(dtype, want).ToString(false), ", got ",
                           v.shape().ToString(false));
  }
  return OkStatus();
}

inline Status TypeError(std::string_view routine, DType t) {
  return InvalidArgument(routine, " needs f32, f64, c64 or c128 matrices, got ", DTypeName(t));
}

}  // namespace xs::kernels::lapack_impl

#endif  // XSHARD_KERNELS_LINALG_LAPACK_INTERNAL_H_
