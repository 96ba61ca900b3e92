// One-dimensional complex transforms applied dim by dim; see fft.h.
#include "xshard/kernels/fft.h"

#include <cmath>
#include <complex>
#include <numbers>

namespace xs::kernels {
namespace {

using C = std::complex<double>;

bool IsPowerOfTwo(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

// In-place iterative radix-2 transform of length n (a power of two); sign -1 forward, +1 inverse
// (unscaled).
void Radix2(C* x, int64_t n, int sign) {
  for (int64_t i = 1, j = 0; i < n; ++i) {
    int64_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(x[i], x[j]);
  }
  for (int64_t len = 2; len <= n; len <<= 1) {
    const double angle = sign * 2 * std::numbers::pi / static_cast<double>(len);
    for (int64_t k = 0; k < len / 2; ++k) {
      const C w = std::polar(1.0, angle * static_cast<double>(k));
      for (int64_t i = k; i < n; i += len) {
        const C u = x[i], v = x[i + len / 2] * w;
        x[i] = u + v;
        x[i + len / 2] = u - v;
      }
    }
  }
}

// Transform of any length n (unscaled), through Bluestein's chirp-z when n is not a power of two.
void Transform(std::vector<C>& x, int sign) {
  const int64_t n = static_cast<int64_t>(x.size());
  if (n <= 1) return;
  if (IsPowerOfTwo(n)) {
    Radix2(x.data(), n, sign);
    return;
  }
  int64_t m = 1;
  while (m < 2 * n - 1) m <<= 1;
  std::vector<C> chirp(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    // k^2 mod 2n keeps the angle small and exact for large k.
    const int64_t k2 = (k * k) % (2 * n);
    chirp[k] = std::polar(1.0, sign * std::numbers::pi * static_cast<double>(k2) / static_cast<double>(n));
  }
  std::vector<C> a(static_cast<size_t>(m)), b(static_cast<size_t>(m));
  for (int64_t k = 0; k < n; ++k) a[k] = x[k] * chirp[k];
  b[0] = std::conj(chirp[0]);
  for (int64_t k = 1; k < n; ++k) b[k] = b[m - k] = std::conj(chirp[k]);
  Radix2(a.data(), m, -1);
  Radix2(b.data(), m, -1);
  for (int64_t i = 0; i < m; ++i) a[i] *= b[i];
  Radix2(a.data(), m, 1);
  for (int64_t k = 0; k < n; ++k) x[k] = a[k] * chirp[k] / static_cast<double>(m);
}

// Applies `fn` to every 1-D line of `data` (row-major `dims`) along `axis`.
template <typename Fn>
void ForEachLine(std::vector<C>& data, const std::vector<int64_t>& dims, int axis, Fn fn) {
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(axis) + 1; d < dims.size(); ++d) inner *= dims[d];
  const int64_t n = dims[axis];
  const int64_t outer = n == 0 || inner == 0 ? 0 : static_cast<int64_t>(data.size()) / (n * inner);
  std::vector<C> line(static_cast<size_t>(n));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      C* base = data.data() + o * n * inner + i;
      for (int64_t k = 0; k < n; ++k) line[k] = base[k * inner];
      fn(line);
      for (int64_t k = 0; k < n; ++k) base[k * inner] = line[k];
    }
  }
}

std::vector<C> ToComplex(const Array& in) {
  std::vector<C> v(static_cast<size_t>(in.num_elements()));
  if (IsComplex(in.dtype())) {
    Array w = in.Convert(DType::kC128);
    auto s = w.values<C>();
    std::copy(s.begin(), s.end(), v.begin());
  } else {
    for (int64_t i = 0; i < in.num_elements(); ++i) v[i] = in.GetDouble(i);
  }
  return v;
}

// Resizes the last dim of row-major `v` (dims `dims`) to `to`, truncating or zero-padding.
std::vector<C> ResizeLast(const std::vector<C>& v, std::vector<int64_t>& dims, int64_t to) {
  const int64_t from = dims.back();
  const int64_t rows = from == 0 ? 0 : static_cast<int64_t>(v.size()) / from;
  int64_t total_rows = 1;
  for (size_t d = 0; d + 1 < dims.size(); ++d) total_rows *= dims[d];
  std::vector<C> out(static_cast<size_t>(total_rows * to));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < std::min(from, to); ++k) out[r * to + k] = v[r * from + k];
  }
  dims.back() = to;
  return out;
}

}  // namespace

StatusOr<Array> Fft(const Array& in, FftType type, const std::vector<int64_t>& lengths) {
  const int r = in.rank();
  const int f = static_cast<int>(lengths.size());
  if (f < 1 || f > 3 || f > r) {
    return InvalidArgument("fft_length must have 1 to 3 entries and at most the operand's rank (", r, "), got ", f);
  }
  const bool complex_in = IsComplex(in.dtype());
  if ((type == FftType::kRfft) == complex_in || (!complex_in && !IsFloating(in.dtype()))) {
    return InvalidArgument("fft type ", type == FftType::kRfft ? "RFFT needs a real" : "FFT/IFFT/IRFFT need a complex",
                           " operand, got ", DTypeName(in.dtype()));
  }
  std::vector<int64_t> dims = in.dims();
  for (int i = 0; i < f; ++i) {
    const int64_t want = lengths[i];
    const int64_t have = dims[r - f + i];
    const bool last = i == f - 1;
    const int64_t expected = last && type == FftType::kIrfft ? want / 2 + 1 : want;
    if (have != expected) {
      return InvalidArgument("fft: operand dim ", r - f + i, " is ", have, " but fft_length[", i, "]=", want,
                             " needs ", expected);
    }
  }
  std::vector<C> data = ToComplex(in);
  const double scale_inverse = [&] {
    double n = 1;
    for (int64_t l : lengths) n *= static_cast<double>(l);
    return n;
  }();
  if (type == FftType::kIrfft) {
    // Inverse transforms on the outer fft dims, then complex-to-real on the last: extend the
    // half spectrum by Hermitian symmetry to the full length and take the real part.
    for (int i = 0; i < f - 1; ++i) ForEachLine(data, dims, r - f + i, [](std::vector<C>& l) { Transform(l, 1); });
    const int64_t n = lengths.back();
    const int64_t half = dims.back();
    std::vector<C> full = ResizeLast(data, dims, n);
    const int64_t rows = n == 0 ? 0 : static_cast<int64_t>(full.size()) / n;
    for (int64_t row = 0; row < rows; ++row) {
      C* line = full.data() + row * n;
      for (int64_t k = half; k < n; ++k) line[k] = std::conj(line[n - k]);
      // XLA ignores the imaginary parts of the DC (and Nyquist) terms.
      if (n > 0) line[0] = line[0].real();
      if (n % 2 == 0 && n > 0) line[n / 2] = line[n / 2].real();
    }
    ForEachLine(full, dims, r - 1, [](std::vector<C>& l) { Transform(l, 1); });
    Array out(Shape(in.dtype() == DType::kC64 ? DType::kF32 : DType::kF64, dims));
    for (int64_t i = 0; i < out.num_elements(); ++i) out.SetDouble(i, full[i].real() / scale_inverse);
    return out;
  }
  const int sign = type == FftType::kIfft ? 1 : -1;
  for (int i = 0; i < f; ++i) ForEachLine(data, dims, r - f + i, [sign](std::vector<C>& l) { Transform(l, sign); });
  DType out_type = in.dtype();
  if (type == FftType::kRfft) {
    data = ResizeLast(data, dims, lengths.back() / 2 + 1);
    out_type = in.dtype() == DType::kF64 ? DType::kC128 : DType::kC64;
  }
  if (type == FftType::kIfft) {
    for (C& x : data) x /= scale_inverse;
  }
  Array wide(Shape(DType::kC128, dims));
  auto w = wide.values<C>();
  std::copy(data.begin(), data.end(), w.begin());
  return wide.Convert(out_type);
}

}  // namespace xs::kernels
