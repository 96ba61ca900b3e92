// Asynchronous collective scheduling: synchronous collectives become start / done pairs placed so
// that communication overlaps independent compute.
#ifndef XSHARD_PASSES_COLLECTIVE_SCHEDULE_H_
#define XSHARD_PASSES_COLLECTIVE_SCHEDULE_H_

#include "xshard/ir/module.h"

namespace xs {

// In every computation of `module` (while bodies included), turns each one-operand all-gather,
// all-reduce and collective-permute without control edges into XLA's -start / -done pair (and a
// reduce-scatter into async-start / async-done wrapping it, as XLA prints it), and
// orders them with control edges: every compute instruction (dot, convolution, fusion, reduce,
// while, call, sort, custom-call) that the computation's order placed after the collective's
// operand was ready and before the result's first use, and that neither feeds the operand nor
// uses the result, runs between the start and the done. So communication starts as soon as its
// operand is ready and is waited for just before its result is needed, overlapping that compute,
// without
// reordering compute (the executor runs a computation in post order, which honours control
// edges). Returns true when anything changed. The result verifies.
StatusOr<bool> ScheduleAsyncCollectives(Module& module);

}  // namespace xs

#endif  // XSHARD_PASSES_COLLECTIVE_SCHEDULE_H_
