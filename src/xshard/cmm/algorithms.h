// The per-device bodies of the collective matmuls (cmm internal). Each takes this device's
// blocks a and b in the spec's stored layouts (cmm.h, Variant) and returns its f32 block of C.
#ifndef XSHARD_CMM_ALGORITHMS_H_
#define XSHARD_CMM_ALGORITHMS_H_

#include "xshard/cmm/cmm.h"
#include "xshard/cmm/device_ops.h"

namespace xs::cmm {

using DeviceFn = StatusOr<Array> (*)(Dev& dev, const CmmSpec& spec, const Array& a,
                                     const Array& b);

// algorithms_gspmd.cc: GSPMD and systolic (seed 003), and seed 004's two variants.
StatusOr<Array> GspmdOs(Dev& dev, const CmmSpec& spec, const Array& a, const Array& b);
StatusOr<Array> GspmdIs(Dev& dev, const CmmSpec& spec, const Array& a, const Array& b);
StatusOr<Array> GspmdWs(Dev& dev, const CmmSpec& spec, const Array& a, const Array& b);
StatusOr<Array> SystolicOs(Dev& dev, const CmmSpec& spec, const Array& a, const Array& b);
StatusOr<Array> SystolicIs(Dev& dev, const CmmSpec& spec, const Array& a, const Array& b);
StatusOr<Array> SystolicWs(Dev& dev, const CmmSpec& spec, const Array& a, const Array& b);
StatusOr<Array> AgDot(Dev& dev, const CmmSpec& spec, const Array& a, const Array& b);
StatusOr<Array> SlicePsum(Dev& dev, const CmmSpec& spec, const Array& a, const Array& b);

// algorithms_wang.cc: Wang et al.'s bidirectional rings (seed 003).
StatusOr<Array> WangOs(Dev& dev, const CmmSpec& spec, const Array& a, const Array& b);
StatusOr<Array> WangIs(Dev& dev, const CmmSpec& spec, const Array& a, const Array& b);
StatusOr<Array> WangWs(Dev& dev, const CmmSpec& spec, const Array& a, const Array& b);
// Whether Wang WS rings over 'row' splitting the output (the seed's first branch: C * (k/rows)
// > rows * (n/cols), the gathered input is the bigger traffic) rather than over 'col'.
bool WangWsSplitsOutput(const CmmSpec& spec);

}  // namespace xs::cmm

#endif  // XSHARD_CMM_ALGORITHMS_H_
