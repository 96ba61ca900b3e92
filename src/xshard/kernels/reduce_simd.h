// Vector max / min of a contiguous f32 / f64 run (Highway, runtime dispatch to the CPU's widest
// target), behind the typed reduce loops of reduce.cc (softmax's row max). Internal to kernels/.
#ifndef XSHARD_KERNELS_REDUCE_SIMD_H_
#define XSHARD_KERNELS_REDUCE_SIMD_H_

#include <cstdint>

namespace xs::kernels {

// The largest (max = true) or smallest element of x[0, n) into *result, returning true; false,
// with *result untouched, when n == 0 or the run holds a NaN (callers then take their sequential
// loop, which keeps XLA's NaN rule). Every non-NaN value is exact whatever the order of the
// comparisons, except which zero (+0 or -0) comes out when the extreme is a zero: callers that
// care check for a zero result.
bool VectorMaxMin(const float* x, int64_t n, bool max, float* result);
bool VectorMaxMin(const double* x, int64_t n, bool max, double* result);

}  // namespace xs::kernels

#endif  // XSHARD_KERNELS_REDUCE_SIMD_H_
