// sort (XLA): sorts every row along `dimension` of N same-shaped operands together, ordered by a
// comparator. The comparator is a recognized compare on one operand (XLA's FLOAT / TOTALORDER /
// SIGNED / UNSIGNED semantics), a recognized lexicographic order on keys (JAX's comparators,
// Comparator::keys), or the comparator computation as a scalar function.
//
// Every path is stable and gives the same result as a stable merge sort with the comparator. A
// strict (LT / GT) recognized comparator sorts (order key, position) pairs, where an element's
// order key is an unsigned integer ordered as the comparator orders the elements (equal keys are
// exactly its ties), by a radix sort (long rows) or a comparison sort of the unique pairs (short
// rows). Other comparators run a merge sort of positions that calls them, so an inconsistent one
// (e.g. FLOAT LT with NaNs: such rows take this path) gives some permutation and never undefined
// behaviour; XLA allows any order when is_stable=false.
#ifndef XSHARD_KERNELS_SORT_H_
#define XSHARD_KERNELS_SORT_H_

#include <span>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/core/array.h"
#include "xshard/kernels/scalar_fn.h"

namespace xs::kernels {

// True when Comparator::keys = `keys` can sort operands of `dtypes` (the operands' dtypes, in
// order): every key names an operand, is strict (kLt / kGt), has an order on its dtype (integers
// and pred: any type but TOTALORDER; f16 / bf16 / f32 / f64: TOTALORDER, or FLOAT for a lone
// key), and is canonicalized only when a float whose zero constant is +0 or -0.
bool SortKeysSupported(std::span<const SortKey> keys, std::span<const DType> dtypes);

// Rows are spread over up to `threads` threads (the fast paths only; a scalar-function
// comparator runs on the caller).
StatusOr<std::vector<Array>> Sort(std::span<const Array* const> operands, int64_t dimension,
                                  const Comparator& comparator, int threads = 1);

}  // namespace xs::kernels

#endif  // XSHARD_KERNELS_SORT_H_
