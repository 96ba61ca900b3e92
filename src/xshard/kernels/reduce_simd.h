// Vector max / min and fixed-order block sums of a contiguous f32 / f64 run (Highway, runtime
// dispatch to the CPU's widest target), behind the typed reduce loops of reduce.cc (softmax's row
// max and sum). Internal to kernels/.
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

// Adds to *acc, in order, the sum of each block of 64 elements of x[0, n) (n a multiple of 64),
// each summed as 16 lanes (lane l adds x[l], x[16 + l], ... in turn) and then the fixed pairwise
// tree (lanes l + 8 into l, then l + 4, l + 2, l + 1): the order reduce.cc's sums promise, bit for
// bit on every target (vectors of 4, 8 or 16 lanes split the 16 evenly).
void VectorBlockSums(const float* x, int64_t n, float* acc);
void VectorBlockSums(const double* x, int64_t n, double* acc);

}  // namespace xs::kernels

#endif  // XSHARD_KERNELS_REDUCE_SIMD_H_
