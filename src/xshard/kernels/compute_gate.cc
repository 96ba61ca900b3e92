// ComputeGate: a counting semaphore sized to the cores.
#include "xshard/kernels/compute_gate.h"

#include "xshard/base/status.h"

namespace xs {

ComputeGate::ComputeGate(int64_t slots) : slots_(slots), semaphore_(static_cast<std::ptrdiff_t>(slots)) {
  XS_CHECK(slots >= 1 && slots <= kMaxSlots, "ComputeGate: slots must be 1..", kMaxSlots, ", got ", slots);
}

}  // namespace xs
