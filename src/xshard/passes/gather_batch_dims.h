// Gathers and scatters whose indices spell out a batch dim with an iota (the form JAX before the
// batching dims and PyTorch/XLA's torch.gather write: concatenate(broadcast(iota), ids) along the
// index vector dim) rewritten into the explicit form (operand_batching_dims /
// start_indices_batching_dims, input_batching_dims / scatter_indices_batching_dims), which the
// propagation rules and the partitioner read as a dim shared by the operand, the indices and the
// result (updates): sharded alike, each device looks up (scatters into) its own rows, as XLA's
// partitioner finds such "parallel" dims by matching the iota.
#ifndef XSHARD_PASSES_GATHER_BATCH_DIMS_H_
#define XSHARD_PASSES_GATHER_BATCH_DIMS_H_

#include "xshard/ir/module.h"

namespace xs {

// For each gather (scatter) whose indices are a concatenate along index_vector_dim, read directly
// or through get-tuple-element of a tuple (an inlined call's result), with a component that is an
// iota along an indices dim b (an iota, or a broadcast of a rank-1 iota), where that component
// indexes an operand dim o that the gather collapses with slice size 1 (the scatter inserts) and
// whose size is the size of b: o and b become a batching pair and the component leaves the
// indices (the lookups are the same: the iota's values are the positions along b, all in range).
// One with no other component is left alone. Concatenates, iotas and get-tuple-elements no longer
// used are removed. Returns true when anything changed.
StatusOr<bool> MakeGatherBatchDimsExplicit(Module& module);

}  // namespace xs

#endif  // XSHARD_PASSES_GATHER_BATCH_DIMS_H_
