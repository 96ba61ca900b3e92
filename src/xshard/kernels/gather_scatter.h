// gather and scatter with XLA's general semantics, including operand / indices batching dims and
// an implicit trailing index vector dim (index_vector_dim == rank of indices). Gather clamps each
// start so the slice fits; scatter skips an update window that does not fit entirely, as XLA's
// evaluator does. Scatter combines with a recognized kind (overwrite, add, ...) or the
// combiner's scalar function (to_apply(operand values..., update values...)); every operand
// element sees its updates in the evaluator's order (scatter indices row-major, then the window
// row-major).
//
// Both run on the calling thread: splitting did not pay on a 2-core EPYC. A gather split over
// windows ran 1.3-1.5x faster with the other core idle but up to 2x slower with it busy (a
// preempted helper holds its share). A scatter can only be split by ranges of the operand (to
// keep each element's update order), so every thread reads the whole index list and an
// interleaved part of the update stream: segment_sum's scatter took 2-3x the CPU time of one
// thread and no less wall time.
#ifndef XSHARD_KERNELS_GATHER_SCATTER_H_
#define XSHARD_KERNELS_GATHER_SCATTER_H_

#include <span>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/core/array.h"
#include "xshard/ir/attributes.h"
#include "xshard/kernels/scalar_fn.h"

namespace xs::kernels {

// Result dims of gather; error names the inconsistent attribute.
StatusOr<std::vector<int64_t>> GatherResultDims(const std::vector<int64_t>& operand,
                                                const std::vector<int64_t>& indices,
                                                const GatherDimensionNumbers& dn,
                                                const std::vector<int64_t>& slice_sizes);

// Writes every element of `out` (GatherResultDims' dims, the operand's dtype; error otherwise),
// each slice copied as runs of evenly spaced elements. A result of 512 KiB or more is copied in
// pieces on up to `threads` threads (ParallelFor's pool).
Status GatherInto(const Array& operand, const Array& indices, const GatherDimensionNumbers& dn,
                  const std::vector<int64_t>& slice_sizes, Array& out, int threads = 1);
// The same into a new array.
StatusOr<Array> Gather(const Array& operand, const Array& indices, const GatherDimensionNumbers& dn,
                       const std::vector<int64_t>& slice_sizes, int threads = 1);
// One output element at a time (XLA evaluator structure).
StatusOr<Array> GatherReference(const Array& operand, const Array& indices,
                                const GatherDimensionNumbers& dn,
                                const std::vector<int64_t>& slice_sizes);

// scatter's combines applied to `outs`, which hold the operands' values (copies, or the
// operands' own buffers when those may be overwritten); they must not overlap the indices or the
// updates. Updates are combined in window order, except that an f32 / f64 scatter-add with far
// more update elements than result elements (segment_sum, embedding-row sums into a small table)
// sums fixed blocks of windows into partial results, each block in order, and then adds the
// partials in block order (ScatterAddBlocks): the blocks run on up to `threads` threads, and
// the order depends on the shapes alone, so every thread count gives the same bits.
Status ScatterInPlace(std::span<Array* const> outs, const Array& indices, std::span<const Array* const> updates,
                      const ScatterDimensionNumbers& dn, const Combiner& combiner, int threads = 1);
// The blocks of windows such a scatter-add is summed in (1: window order throughout).
int64_t ScatterAddBlocks(CombineKind kind, DType dtype, int64_t windows, int64_t update_elements,
                         int64_t result_elements);
// scatter(operands..., indices, updates...) -> one array per operand (copies of the operands
// updated by ScatterInPlace).
StatusOr<std::vector<Array>> Scatter(std::span<const Array* const> operands, const Array& indices,
                                     std::span<const Array* const> updates,
                                     const ScatterDimensionNumbers& dn, const Combiner& combiner);

// Every element of an integer array as int64 (row-major); error for non-integer dtypes.
StatusOr<std::vector<int64_t>> IndicesAsInt64(const Array& indices);

}  // namespace xs::kernels

#endif  // XSHARD_KERNELS_GATHER_SCATTER_H_
