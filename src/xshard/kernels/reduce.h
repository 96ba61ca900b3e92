// reduce, reduce-window and select-and-scatter with XLA's semantics: any number of operands, any
// reducer. Recognized single-operand reducers (add, multiply, maximum, minimum, and, or) run a
// typed loop; others call the combiner's scalar function per element. Elements of each output
// are combined in row-major order of the reduced (window) dims, as XLA's evaluator does, and
// f16 / bf16 accumulators round after every step (the reducer computation's own type).
#ifndef XSHARD_KERNELS_REDUCE_H_
#define XSHARD_KERNELS_REDUCE_H_

#include <optional>
#include <span>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/core/array.h"
#include "xshard/ir/attributes.h"
#include "xshard/kernels/scalar_fn.h"

namespace xs::kernels {

// reduce(inputs..., inits...), dimensions=`dims` -> one array per input (kept dims in order).
// Inputs share dims; inits are scalars of the inputs' dtypes.
StatusOr<std::vector<Array>> Reduce(std::span<const Array* const> inputs,
                                    std::span<const Array* const> inits,
                                    const std::vector<int64_t>& dims, const Combiner& reducer);
// Reference: per output element, walks the reduced index space through the generic path
// (a typed kind is applied one scalar at a time).
StatusOr<std::vector<Array>> ReduceReference(std::span<const Array* const> inputs,
                                             std::span<const Array* const> inits,
                                             const std::vector<int64_t>& dims,
                                             const Combiner& reducer);

// Result dims of a window over `dims` (XLA: dilated, padded base; dilated window; stride).
std::vector<int64_t> WindowOutputDims(const std::vector<int64_t>& dims, const Window& window);

// The dim along which `window` over `in_dims` is an inclusive prefix scan, as JAX lowers cumsum,
// cumprod, cummax, cummin and cumlogsumexp: output o along it combines inputs 0..o (window size
// >= the dim, pad_low = size - 1, pad_high = 0, stride and dilations 1), and every other dim's
// window is one element with no padding. nullopt for any other window (and for the all-ones
// window, which has no scan dim).
std::optional<int> PrefixScanDim(const std::vector<int64_t>& in_dims, const Window& window);
// The same for a suffix scan (JAX's reverse cumulative ops and cumsum's transpose): output o
// combines inputs o..n-1 (pad_low = 0, pad_high = size - 1).
std::optional<int> SuffixScanDim(const std::vector<int64_t>& in_dims, const Window& window);

// reduce-window(inputs..., inits...) with one WindowDim per input dim. A prefix-scan window
// (PrefixScanDim) runs in one pass: output o is output o - 1 combined with input o, the same
// combines in the same order as walking each window, in linear time instead of quadratic. A
// suffix scan (SuffixScanDim) with a typed reducer runs in one pass from the end: exact for
// integers, max, min and the logical kinds, within rounding for float sums and products (the
// walk's order cannot be kept in one pass); other reducers walk each window.
StatusOr<std::vector<Array>> ReduceWindow(std::span<const Array* const> inputs,
                                          std::span<const Array* const> inits,
                                          const Window& window, const Combiner& reducer);

// select-and-scatter(operand, source, init): for each source element, the window element of
// `operand` chosen by `select` (select(current_choice, candidate) false -> take candidate) gets
// scatter(source, current_output) combined in; the output starts as `init` everywhere.
StatusOr<Array> SelectAndScatter(const Array& operand, const Array& source, const Array& init,
                                 const Window& window, const ScalarFn& select,
                                 const Combiner& scatter);

// map(inputs...) with a scalar function of N args -> one `result` element per position.
StatusOr<Array> Map(std::span<const Array* const> inputs, DType result, const ScalarFn& fn);

// Applies a typed combiner kind to one element pair of `dtype` in place: *acc = f(*acc, *x).
// Error when the kind does not apply to the dtype (e.g. and on f32).
using TypedCombineFn = void (*)(std::byte* acc, const std::byte* x);
StatusOr<TypedCombineFn> FindTypedCombine(CombineKind kind, DType dtype);

// Reduce's typed loop on a range: input elements [begin, begin + n) in row-major order of an
// array of `dims` (`in` holds exactly those n values) are combined into `out`, element x going to
// out[sum_d idx[d] * ostride[d]] (ostride[d] = 0 for a reduced dim, else the output stride).
// Feeding all ranges of an input in order gives Reduce's result bit for bit when every cut point
// is a multiple of kSumBlock (f32 / f64 sums of rows of a multiple of kSumBlock elements add
// blocks of that many as a vectorized tree; other kinds and dtypes allow any cut); ranges that
// touch disjoint outputs may run concurrently. Fused loops reduce their tiles with it.
inline constexpr int64_t kSumBlock = 64;
using ReduceRangeFn = void (*)(const std::byte* in, std::byte* out, const std::vector<int64_t>& dims,
                               const std::vector<int64_t>& ostride, int64_t begin, int64_t n);
// For add ... or on `dtype` (error otherwise, e.g. and on f32; never kGeneric / kOverwrite).
StatusOr<ReduceRangeFn> FindReduceRange(CombineKind kind, DType dtype);

// Column reductions in blocks of rows. A reduce whose leading dims are all reduced and a later
// dim kept (x.sum(0), a bias gradient, batch statistics over N, H, W) sees its input as `rows`
// slabs of `slab` elements, each slab touching every output. An f32 / f64 sum of more slabs than
// one block (a fixed number of slabs set by the shape alone, blocks of about 2^18 elements, for
// slabs of up to 2^14 elements) is computed block by block: block 0 combines its slabs into the
// outputs (which hold the init), every later block into its own partial outputs starting at -0.0
// (the sum's identity), each in the serial order; then out = out + partial_1 + partial_2 + ...
// in order. The order depends on the shape only, never on the thread count, so the blocks can
// run on any number of threads with the same results; the op-by-op reduce and the fused loops
// (exec/) both sum this way. Other reductions and dtypes keep the serial order (blocks = 1).
struct ColumnBlocks {
  int lead = 0;                // leading (reduced) dims that index the slabs
  int64_t rows = 0, slab = 0;  // slabs and elements per slab
  int64_t block_rows = 0;      // slabs per block (the last block may have fewer)
  int64_t blocks = 1;
};
ColumnBlocks PlanColumnBlocks(CombineKind kind, DType dtype, const std::vector<int64_t>& dims,
                              const std::vector<int64_t>& ostride);
// Fills `count` partial outputs of `n` elements each with -0.0 (f32 / f64).
void InitColumnPartials(DType dtype, std::byte* partials, int64_t n, int64_t count);
// out[k] = (((out[k] + partials[0][k]) + partials[1][k]) + ...) for the `count` partial outputs of
// `n` elements each, stored one after another (f32 / f64).
void AddColumnPartials(DType dtype, std::byte* out, const std::byte* partials, int64_t n, int64_t count);
// The same for elements [begin, end) only (ranges of one output on several threads).
void AddPartialsRange(DType dtype, std::byte* out, const std::byte* partials, int64_t n, int64_t count, int64_t begin,
                      int64_t end);

}  // namespace xs::kernels

#endif  // XSHARD_KERNELS_REDUCE_H_
