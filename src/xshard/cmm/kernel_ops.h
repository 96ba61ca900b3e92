// Block operations for Pallas-style kernel bodies, on the CPU kernels: DotAccumulate (scratch +=
// jnp.dot(x, y, preferred_element_type=f32) through a cached GEMM plan: sgemm for f32, oneDNN's
// bf16 matmul with f32 accumulation for bf16), Fill, AddInto and StoreConverted (.astype).
#ifndef XSHARD_CMM_KERNEL_OPS_H_
#define XSHARD_CMM_KERNEL_OPS_H_

#include "xshard/base/status.h"
#include "xshard/cmm/kernel_ref.h"

namespace xs::cmm {

// acc += a @ b: a [m, k] and b [k, n] of one float dtype (f32, bf16, f16, f64), acc f32 [m, n].
// Plans are cached per thread and shape, so a grid loop plans once. Error names the refs when
// ranks, dims or dtypes do not fit.
Status DotAccumulate(const Ref& a, const Ref& b, const Ref& acc);
// ref[...] = value (converted to the ref's dtype).
Status Fill(const Ref& ref, double value);
// acc += x (same dims and dtype).
Status AddInto(const Ref& x, const Ref& acc);
// dst[...] = src[...].astype(dst.dtype): same dims, any numeric dtypes (round to nearest even).
Status StoreConverted(const Ref& src, const Ref& dst);

}  // namespace xs::cmm

#endif  // XSHARD_CMM_KERNEL_OPS_H_
