// Asynchronous collective scheduling: synchronous collectives become start / done pairs placed so
// that communication overlaps independent compute.
#ifndef XSHARD_PASSES_COLLECTIVE_SCHEDULE_H_
#define XSHARD_PASSES_COLLECTIVE_SCHEDULE_H_

#include "xshard/ir/module.h"

namespace xs {

// In every computation of `module` (while bodies included), turns each one-operand all-gather,
// all-reduce and collective-permute without control edges into XLA's -start / -done pair, and
// orders them with control edges so that the start runs before, and the done after, every
// compute instruction (dot, convolution, fusion, reduce, while, call, sort, custom-call) that
// neither feeds the collective's operand nor uses its result: communication is started as early
// and waited for as late as dependencies allow (the executor runs a computation in post order,
// which honours control edges). Returns true when anything changed. The result verifies.
StatusOr<bool> ScheduleAsyncCollectives(Module& module);

}  // namespace xs

#endif  // XSHARD_PASSES_COLLECTIVE_SCHEDULE_H_
