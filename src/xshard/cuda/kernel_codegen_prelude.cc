// The device prelude every generated kernel starts with: f16 / bf16 conversions bit-identical
// to core/dtype.cc (hand-written rather than cuda_fp16.h's so NaN payloads and subnormals round
// exactly as on the CPU, and so kernels compile without parsing that header), XLA's integer
// division, NaN-aware max / min, total-order keys, vector structs, warp shuffles and complex
// elements with their arithmetic.
#include <string>

#include "xshard/cuda/kernel_codegen_internal.h"

namespace xs::cuda::codegen {

const std::string& Prelude() {
  static const std::string* const kPrelude = new std::string(R"CUDA(// xshard generated kernel
__device__ __forceinline__ float xs_h2f(unsigned short h) {
  const unsigned sign = (unsigned)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0x1f) return __uint_as_float(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) return __uint_as_float(sign | __float_as_uint((float)mant * 5.9604644775390625e-8f));
  return __uint_as_float(sign | ((exp + 112) << 23) | (mant << 13));
}
__device__ __forceinline__ unsigned short xs_f2h(float f) {
  const unsigned x = __float_as_uint(f), sign = (x >> 16) & 0x8000u, abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {
    const unsigned payload = abs > 0x7f800000u ? 0x0200u | ((abs >> 13) & 0x3ffu) : 0u;
    return (unsigned short)(sign | 0x7c00u | payload);
  }
  if (abs >= 0x477ff000u) return (unsigned short)(sign | 0x7c00u);
  if (abs < 0x38800000u) {
    const float scaled = __uint_as_float(abs) + 0.5f;
    return (unsigned short)(sign | (__float_as_uint(scaled) - 0x3f000000u));
  }
  const unsigned rounded = abs + 0xc8000fffu + ((abs >> 13) & 1u);
  return (unsigned short)(sign | (rounded >> 13));
}
__device__ __forceinline__ float xs_b2f(unsigned short b) { return __uint_as_float((unsigned)b << 16); }
__device__ __forceinline__ unsigned short xs_f2b(float f) {
  const unsigned x = __float_as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((x >> 16) | 0x0040u);
  return (unsigned short)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
// f64 -> f32 rounded to odd, so that a second rounding to 16 bits rounds once (numeric.h).
__device__ __forceinline__ float xs_d2f_odd(double s) {
  float f = (float)s;
  if (isfinite(s) && (double)f != s && isfinite(f)) {
    if (fabs((double)f) > fabs(s)) f = nextafterf(f, 0.0f);
    f = __uint_as_float(__float_as_uint(f) | 1u);
  }
  return f;
}
template <typename T> __device__ __forceinline__ T xs_fmax(T a, T b) {
  if (a != a) return a;
  if (b != b) return b;
  if (a > b) return a;
  if (b > a) return b;
  return signbit(a) ? b : a;
}
template <typename T> __device__ __forceinline__ T xs_fmin(T a, T b) {
  if (a != a) return a;
  if (b != b) return b;
  if (a < b) return a;
  if (b < a) return b;
  return signbit(a) ? a : b;
}
__device__ __forceinline__ float xs_fpow(float a, float b) { return (a == 1.0f || b == 0.0f) ? 1.0f : powf(a, b); }
__device__ __forceinline__ double xs_fpow(double a, double b) { return (a == 1.0 || b == 0.0) ? 1.0 : pow(a, b); }
template <typename T> __device__ __forceinline__ T xs_sign(T x) {
  return x != x ? x : copysign(x != T(0) ? T(1) : T(0), x);
}
template <typename T> __device__ __forceinline__ T xs_sdiv(T a, T b, T min) {
  if (b == 0) return T(-1);
  if (b == T(-1) && a == min) return a;
  return T(a / b);
}
template <typename T> __device__ __forceinline__ T xs_srem(T a, T b, T min) {
  if (b == 0) return a;
  if (b == T(-1) && a == min) return T(0);
  return T(a % b);
}
// Exponentiation by squaring; the caller truncates to the type (wraps like XLA's IPow).
__device__ __forceinline__ unsigned long long xs_ipow(unsigned long long base, unsigned long long e,
                                                      bool one, bool zero, bool negative) {
  if (one || zero) return 1ull;
  if (negative) return 0ull;
  unsigned long long r = 1ull;
  while (e) {
    if (e & 1ull) r *= base;
    base *= base;
    e >>= 1;
  }
  return r;
}
// clamp(lo, x, hi) with XLA's NaN rule (a NaN in lo, x, hi, in that order, is the result).
template <typename S, typename C>
__device__ __forceinline__ S xs_clamp(S l, S v, S h, C lc, C vc, C hc) {
  if (lc != lc) return l;
  if (vc != vc) return v;
  if (hc != hc) return h;
  const bool low = vc < lc;
  const C mc = low ? lc : vc;
  return mc < hc ? (low ? l : v) : h;
}
// XLA's total order as signed integers.
__device__ __forceinline__ int xs_key(float v) { const int i = __float_as_int(v); return i < 0 ? (i ^ 0x7fffffff) : i; }
__device__ __forceinline__ long long xs_key(double v) {
  const long long i = __double_as_longlong(v);
  return i < 0 ? (i ^ 0x7fffffffffffffffLL) : i;
}
__device__ __forceinline__ short xs_key16(unsigned short v) { const short i = (short)v; return i < 0 ? (short)(i ^ 0x7fff) : i; }
template <typename D, typename S> __device__ __forceinline__ D xs_bitcast(S s) {
  union { S s; D d; } u;
  u.s = s;
  return u.d;
}
template <typename T, int N> struct __align__(sizeof(T) * N) xs_vec { T v[N]; };
__device__ __forceinline__ float xs_shfl(float v, int o) { return __shfl_down_sync(0xffffffffu, v, o); }
__device__ __forceinline__ double xs_shfl(double v, int o) { return __shfl_down_sync(0xffffffffu, v, o); }
__device__ __forceinline__ int xs_shfl(int v, int o) { return __shfl_down_sync(0xffffffffu, v, o); }
__device__ __forceinline__ unsigned xs_shfl(unsigned v, int o) { return __shfl_down_sync(0xffffffffu, v, o); }
__device__ __forceinline__ long long xs_shfl(long long v, int o) { return __shfl_down_sync(0xffffffffu, v, o); }
__device__ __forceinline__ unsigned long long xs_shfl(unsigned long long v, int o) { return __shfl_down_sync(0xffffffffu, v, o); }
__device__ __forceinline__ bool xs_shfl(bool v, int o) { return __shfl_down_sync(0xffffffffu, (int)v, o) != 0; }
__device__ __forceinline__ signed char xs_shfl(signed char v, int o) { return (signed char)__shfl_down_sync(0xffffffffu, (int)v, o); }
__device__ __forceinline__ short xs_shfl(short v, int o) { return (short)__shfl_down_sync(0xffffffffu, (int)v, o); }
__device__ __forceinline__ unsigned char xs_shfl(unsigned char v, int o) { return (unsigned char)__shfl_down_sync(0xffffffffu, (unsigned)v, o); }
__device__ __forceinline__ unsigned short xs_shfl(unsigned short v, int o) { return (unsigned short)__shfl_down_sync(0xffffffffu, (unsigned)v, o); }
// Complex elements (c64, c128): interleaved (re, im) as std::complex stores them, with the
// arithmetic of the CPU's std::complex (GCC's formulas; kernels/scalar_ops.h).
struct __align__(8) xs_c64 { float re, im; };
struct __align__(16) xs_c128 { double re, im; };
__device__ __forceinline__ xs_c64 xs_cplx(float r, float i) { xs_c64 z; z.re = r; z.im = i; return z; }
__device__ __forceinline__ xs_c128 xs_cplx(double r, double i) { xs_c128 z; z.re = r; z.im = i; return z; }
template <typename C> __device__ __forceinline__ C xs_cadd(C a, C b) { return xs_cplx(a.re + b.re, a.im + b.im); }
template <typename C> __device__ __forceinline__ C xs_csub(C a, C b) { return xs_cplx(a.re - b.re, a.im - b.im); }
template <typename C> __device__ __forceinline__ C xs_cneg(C a) { return xs_cplx(-a.re, -a.im); }
template <typename C> __device__ __forceinline__ C xs_cmul(C a, C b) {
  return xs_cplx(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re);
}
// libgcc's __divsc3: float quotients through double, the plain formula.
__device__ __forceinline__ xs_c64 xs_cdiv(xs_c64 a, xs_c64 b) {
  const double ar = a.re, ai = a.im, br = b.re, bi = b.im, d = br * br + bi * bi;
  return xs_cplx((float)((ar * br + ai * bi) / d), (float)((ai * br - ar * bi) / d));
}
// libgcc's __divdc3: Smith's method.
__device__ __forceinline__ xs_c128 xs_cdiv(xs_c128 a, xs_c128 b) {
  if (fabs(b.re) < fabs(b.im)) {
    const double r = b.re / b.im, d = b.re * r + b.im;
    return xs_cplx((a.re * r + a.im) / d, (a.im * r - a.re) / d);
  }
  const double r = b.im / b.re, d = b.im * r + b.re;
  return xs_cplx((a.im * r + a.re) / d, (a.im - a.re * r) / d);
}
__device__ __forceinline__ float xs_cabs(xs_c64 a) { return hypotf(a.re, a.im); }
__device__ __forceinline__ double xs_cabs(xs_c128 a) { return hypot(a.re, a.im); }
// cexp: a zero imaginary part stays exactly (C99 Annex G: exp(NaN + 0i) = NaN + 0i).
__device__ __forceinline__ xs_c64 xs_cexp(xs_c64 a) {
  const float e = expf(a.re);
  return a.im == 0 ? xs_cplx(e, a.im) : xs_cplx(e * cosf(a.im), e * sinf(a.im));
}
__device__ __forceinline__ xs_c128 xs_cexp(xs_c128 a) {
  const double e = exp(a.re);
  return a.im == 0 ? xs_cplx(e, a.im) : xs_cplx(e * cos(a.im), e * sin(a.im));
}
template <typename C> __device__ __forceinline__ C xs_csign(C a) {
  const auto m = xs_cabs(a);
  return m == 0 ? xs_cplx(m * 0, m * 0) : xs_cplx(a.re / m, a.im / m);
}
template <typename C> __device__ __forceinline__ bool xs_ceq(C a, C b) { return a.re == b.re && a.im == b.im; }
)CUDA");
  return *kPrelude;
}

}  // namespace xs::cuda::codegen
