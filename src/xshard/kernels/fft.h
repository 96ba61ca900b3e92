// fft (XLA): FFT / IFFT / RFFT / IRFFT over the last len(fft_length) dims of an array, computed
// in c128 (radix-2 for powers of two, Bluestein's algorithm otherwise) and rounded once to the
// result type. Debian's FFT libraries are float-only (kissfft) or GPL (FFTW), so this small
// transform is written here.
#ifndef XSHARD_KERNELS_FFT_H_
#define XSHARD_KERNELS_FFT_H_

#include <string_view>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/core/array.h"
#include "xshard/ir/attributes.h"

namespace xs::kernels {

// The fft_type attribute's enum (parsed by text/ into Attributes::fft_type).
using FftType = ::xs::FftType;

// fft(in), fft_type=type, fft_length=lengths. FFT / IFFT: complex in and out, same shape (IFFT
// scales by 1/N). RFFT: real in (f32 -> c64, f64 -> c128), the last dim becomes n/2+1. IRFFT:
// complex in whose last dim is n/2+1, real out whose last dim is n. Errors name the mismatch.
StatusOr<Array> Fft(const Array& in, FftType type, const std::vector<int64_t>& lengths);

}  // namespace xs::kernels

#endif  // XSHARD_KERNELS_FFT_H_
