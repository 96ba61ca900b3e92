// reduce / reduce-window / select-and-scatter: typed loops for recognized combiners, the
// combiner's scalar function otherwise. One file for one concept: every op here folds elements
// with a Combiner, and they share its dispatch (typed kernels per kind and dtype, the generic
// scalar step, the init fill, the operand checks), which would otherwise become an internal header
// of templates for two files to include.
#include "xshard/kernels/reduce.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "xshard/kernels/elementwise.h"
#include "xshard/kernels/elementwise_loops.h"
#include "xshard/kernels/numeric.h"
#include "xshard/kernels/parallel.h"
#include "xshard/kernels/reduce_argselect.h"
#include "xshard/kernels/reduce_simd.h"
#include "xshard/kernels/scalar_ops.h"
#include "xshard/kernels/shape_ops.h"

namespace xs::kernels {
namespace {

template <class Op, class S>
void TypedCombine(std::byte* acc, const std::byte* x) {
  S a, b;
  std::memcpy(&a, acc, sizeof(S));
  std::memcpy(&b, x, sizeof(S));
  a = internal::StoreAs<S>(Op::Apply(ToCompute(a), ToCompute(b)));
  std::memcpy(acc, &a, sizeof(S));
}

// An inclusive scan of [outer, len, inner] along len from `init`: y[j] = Op(y[j - 1], x[j]),
// y[-1] = init, each step rounded to S (TypedCombine's steps in the window walk's order). Rows
// of `inner` elements combine elementwise (vectorizable); inner == 1 is one running value.
template <class Op, class S>
void ScanLoop(const std::byte* in_bytes, std::byte* out_bytes, const std::byte* init_bytes, int64_t outer,
              int64_t len, int64_t inner) {
  const S* in = reinterpret_cast<const S*>(in_bytes);
  S* out = reinterpret_cast<S*>(out_bytes);
  S init;
  std::memcpy(&init, init_bytes, sizeof(S));
  for (int64_t o = 0; o < outer; ++o) {
    const S* x = in + o * len * inner;
    S* y = out + o * len * inner;
    if (inner == 1) {
      S acc = init;
      for (int64_t j = 0; j < len; ++j) {
        acc = internal::StoreAs<S>(Op::Apply(ToCompute(acc), ToCompute(x[j])));
        y[j] = acc;
      }
      continue;
    }
    if (len == 0) continue;
    for (int64_t c = 0; c < inner; ++c) y[c] = internal::StoreAs<S>(Op::Apply(ToCompute(init), ToCompute(x[c])));
    for (int64_t j = 1; j < len; ++j) {
      const S* prev = y + (j - 1) * inner;
      const S* xj = x + j * inner;
      S* yj = y + j * inner;
      for (int64_t c = 0; c < inner; ++c) yj[c] = internal::StoreAs<S>(Op::Apply(ToCompute(prev[c]), ToCompute(xj[c])));
    }
  }
}

// The suffix scan of [outer, len, inner] along len: y[j] = Op(y[j + 1], x[j]), y[len] = init
// (a reverse cumulative window, JAX's cumsum(reverse=True) and the transpose of cumsum). The
// window walk folds init, x[j], ..., x[len - 1] from the left; this folds the same elements from
// the right, which is the same value for the kinds it runs (integer add and multiply, max, min,
// and, or) and within rounding for float add and multiply.
template <class Op, class S>
void SuffixScanLoop(const std::byte* in_bytes, std::byte* out_bytes, const std::byte* init_bytes, int64_t outer,
                    int64_t len, int64_t inner) {
  const S* in = reinterpret_cast<const S*>(in_bytes);
  S* out = reinterpret_cast<S*>(out_bytes);
  S init;
  std::memcpy(&init, init_bytes, sizeof(S));
  if (len == 0) return;
  for (int64_t o = 0; o < outer; ++o) {
    const S* x = in + o * len * inner;
    S* y = out + o * len * inner;
    if (inner == 1) {
      S acc = init;
      for (int64_t j = len; j-- > 0;) {
        acc = internal::StoreAs<S>(Op::Apply(ToCompute(acc), ToCompute(x[j])));
        y[j] = acc;
      }
      continue;
    }
    const S* xl = x + (len - 1) * inner;
    S* yl = y + (len - 1) * inner;
    for (int64_t c = 0; c < inner; ++c) yl[c] = internal::StoreAs<S>(Op::Apply(ToCompute(init), ToCompute(xl[c])));
    for (int64_t j = len - 1; j-- > 0;) {
      const S* next = y + (j + 1) * inner;
      const S* xj = x + j * inner;
      S* yj = y + j * inner;
      for (int64_t c = 0; c < inner; ++c) yj[c] = internal::StoreAs<S>(Op::Apply(ToCompute(next[c]), ToCompute(xj[c])));
    }
  }
}

// The input offset (`*off`) of window element `wi` of output `oi` over dims [0, r); false when it
// falls on padding or a dilation hole.
inline bool WindowElementOffset(const Window& window, const std::vector<int64_t>& in_dims,
                                const std::vector<int64_t>& in_strides, const std::vector<int64_t>& oi,
                                const std::vector<int64_t>& wi, size_t r, int64_t* off) {
  for (size_t d = 0; d < r; ++d) {
    const WindowDim& wd = window.dims[d];
    int64_t pos = oi[d] * wd.stride + wi[d] * wd.rhs_dilation - wd.pad_low;
    if (wd.lhs_dilation > 1) {
      if (pos % wd.lhs_dilation != 0) return false;
      pos /= wd.lhs_dilation;
    }
    if (pos < 0 || pos >= in_dims[d]) return false;
    *off += pos * in_strides[d];
  }
  return true;
}

// reduce-window with a typed reducer: each output starts from `init` and combines its window's
// real (not padding, not dilation-hole) elements in row-major window order, rounded to S after
// every step: the generic walk's combines in its order. When the minor dim's window is one
// element with no padding (NHWC pooling), the walk covers the other dims and each step combines
// a row of `inner` = the minor dim's contiguous elements (vectorizable); else inner is 1.
// Outputs are independent: blocks of them run on `threads` threads (results as on one).
template <class Op, class S>
void WindowLoop(const std::byte* in_bytes, std::byte* out_bytes, const std::byte* init_bytes,
                const std::vector<int64_t>& in_dims, const std::vector<int64_t>& out_dims, const Window& window,
                int threads) {
  const S* in = reinterpret_cast<const S*>(in_bytes);
  S* out = reinterpret_cast<S*>(out_bytes);
  S init;
  std::memcpy(&init, init_bytes, sizeof(S));
  const size_t rank = in_dims.size();
  const WindowDim* minor = rank == 0 ? nullptr : &window.dims[rank - 1];
  const bool rows = minor != nullptr && minor->size == 1 && minor->stride == 1 && minor->pad_low == 0 &&
                    minor->pad_high == 0 && minor->lhs_dilation == 1 && minor->rhs_dilation == 1;
  const size_t r = rows ? rank - 1 : rank;
  const int64_t inner = rows ? in_dims[rank - 1] : 1;
  std::vector<int64_t> in_strides(rank, 1);
  for (size_t d = rank; d-- > 1;) in_strides[d - 1] = in_strides[d] * in_dims[d];
  int64_t outputs = 1, window_count = 1;
  for (size_t d = 0; d < r; ++d) {
    outputs *= out_dims[d];
    window_count *= window.dims[d].size;
  }
  auto run = [&](int64_t begin, int64_t end) {
    std::vector<int64_t> oi(r, 0), wi(r, 0);
    for (int64_t rest = begin, d = static_cast<int64_t>(r) - 1; d >= 0; --d) {
      oi[d] = rest % out_dims[d];
      rest /= out_dims[d];
    }
    for (int64_t o = begin; o < end; ++o) {
      S* y = out + o * inner;
      for (int64_t c = 0; c < inner; ++c) y[c] = init;
      std::fill(wi.begin(), wi.end(), 0);
      for (int64_t k = 0; k < window_count; ++k) {
        int64_t off = 0;
        if (WindowElementOffset(window, in_dims, in_strides, oi, wi, r, &off)) {
          const S* x = in + off;
          for (int64_t c = 0; c < inner; ++c) y[c] = internal::StoreAs<S>(Op::Apply(ToCompute(y[c]), ToCompute(x[c])));
        }
        for (size_t d = r; d-- > 0;) {
          if (++wi[d] < window.dims[d].size) break;
          wi[d] = 0;
        }
      }
      for (size_t d = r; d-- > 0;) {
        if (++oi[d] < out_dims[d]) break;
        oi[d] = 0;
      }
    }
  };
  // Blocks of outputs over the threads once the window walk has 2^18 combines or more.
  const int64_t combines = outputs * inner * window_count;
  if (threads <= 1 || combines < (int64_t{1} << 18) || outputs < 2) {
    run(0, outputs);
    return;
  }
  const int64_t chunks = std::min<int64_t>(outputs, int64_t{4} * threads);
  ParallelFor(chunks, threads, [&](int64_t c) { run(outputs * c / chunks, outputs * (c + 1) / chunks); });
}

using WindowLoopFn = void (*)(const std::byte*, std::byte*, const std::byte*, const std::vector<int64_t>&,
                              const std::vector<int64_t>&, const Window&, int);

using ScanLoopFn = void (*)(const std::byte*, std::byte*, const std::byte*, int64_t, int64_t, int64_t);

template <class Op, class S>
struct ScanKernel {
  static constexpr ScanLoopFn fn = &ScanLoop<Op, S>;
};
template <class Op, class S>
struct SuffixScanKernel {
  static constexpr ScanLoopFn fn = &SuffixScanLoop<Op, S>;
};
template <class Op, class S>
struct WindowKernel {
  static constexpr WindowLoopFn fn = &WindowLoop<Op, S>;
};

// Kernel<Op, S>::fn for dtype `t` (null where Op does not apply to it or changes its type).
template <class Op, class FnPtr, template <class, class> class Kernel>
FnPtr ResolveKernel(DType t) {
  return VisitDTypeOrNarrow(
      t,
      [](auto tag) -> FnPtr {
        using S = typename decltype(tag)::type;
        if constexpr (internal::BinaryApplies<Op, S>) {
          if constexpr (std::is_same_v<internal::BinaryOut<Op, S>, S>) return Kernel<Op, S>::fn;
        }
        return nullptr;
      },
      [] { return FnPtr{nullptr}; });
}

template <class FnPtr, template <class, class> class Kernel>
FnPtr FindTypedKernel(CombineKind kind, DType t) {
  switch (kind) {
    case CombineKind::kAdd: return ResolveKernel<ops::Add, FnPtr, Kernel>(t);
    case CombineKind::kMultiply: return ResolveKernel<ops::Multiply, FnPtr, Kernel>(t);
    case CombineKind::kMaximum: return ResolveKernel<ops::Maximum, FnPtr, Kernel>(t);
    case CombineKind::kMinimum: return ResolveKernel<ops::Minimum, FnPtr, Kernel>(t);
    case CombineKind::kAnd: return ResolveKernel<ops::And, FnPtr, Kernel>(t);
    case CombineKind::kOr: return ResolveKernel<ops::Or, FnPtr, Kernel>(t);
    default: return nullptr;
  }
}

template <size_t N>
void OverwriteCombine(std::byte* acc, const std::byte* x) {
  std::memcpy(acc, x, N);
}

// max / min of a contiguous run of f32 / f64 into `acc`. The combiner is associative and
// commutative on numbers, so vector lanes (VectorMaxMin, reduce_simd.h: Highway's widest target;
// the plain 16-lane loop this replaced compiled to scalar compares, ~2 cycles an element) give the
// sequential loop's value; a run holding a NaN, or whose extreme is a zero (the sign rule of
// Maximum / Minimum), takes the sequential loop so NaN payloads and -0 / +0 come out as before.
template <class Op, class S>
constexpr bool kLaneReducible = (std::is_same_v<Op, ops::Maximum> || std::is_same_v<Op, ops::Minimum>) &&
                                (std::is_same_v<S, float> || std::is_same_v<S, double>);

template <class Op, class S>
bool LaneReduce(const S* x, int64_t n, S* acc) {
  if (n < 32) return false;
  S m;
  if (!VectorMaxMin(x, n, std::is_same_v<Op, ops::Maximum>, &m) || m == 0) return false;
  *acc = Op::Apply(*acc, m);
  return true;
}

// f32 / f64 sums of rows whose length is a multiple of kSumBlock add each block of kSumBlock
// elements (aligned to the row's start) as 16 lanes then a fixed pairwise tree, and the block sums
// in order (VectorBlockSums, reduce_simd.h), where the one-by-one sum waits on every add's
// latency. The order depends only on the block, so ranges cut at multiples of kSumBlock give the
// whole-row value bit for bit.
template <class Op, class S>
constexpr bool kBlockSummable = std::is_same_v<Op, ops::Add> && (std::is_same_v<S, float> || std::is_same_v<S, double>);
static_assert(kSumBlock == 64, "VectorBlockSums adds blocks of 64");

// Typed reduce over the whole input: `ostride[d]` is the output stride of input dim d (0 for a
// reduced dim). Visits the input in row-major order.
template <class Op, class S>
void ReduceLoop(const std::byte* in_bytes, std::byte* out_bytes, const std::vector<int64_t>& dims,
                const std::vector<int64_t>& ostride) {
  const S* in = reinterpret_cast<const S*>(in_bytes);
  S* out = reinterpret_cast<S*>(out_bytes);
  const int r = static_cast<int>(dims.size());
  if (r == 0) {
    out[0] = internal::StoreAs<S>(Op::Apply(ToCompute(out[0]), ToCompute(in[0])));
    return;
  }
  const int64_t n = dims[r - 1], inner_ostride = ostride[r - 1];
  std::vector<int64_t> idx(r - 1, 0);
  int64_t in_off = 0, out_off = 0;
  while (true) {
    bool done = false;
    if constexpr (kLaneReducible<Op, S>) done = inner_ostride == 0 && LaneReduce<Op, S>(in + in_off, n, out + out_off);
    if constexpr (kBlockSummable<Op, S>) {
      if (inner_ostride == 0 && n % kSumBlock == 0) {
        VectorBlockSums(in + in_off, n, out + out_off);
        done = true;
      }
    }
    if (done) {
    } else if (inner_ostride == 0) {
      auto acc = ToCompute(out[out_off]);
      for (int64_t j = 0; j < n; ++j) {
        acc = ToCompute(internal::StoreAs<S>(Op::Apply(acc, ToCompute(in[in_off + j]))));
      }
      out[out_off] = internal::StoreAs<S>(acc);
    } else {
      S* o = out + out_off;
      const S* x = in + in_off;
      for (int64_t j = 0; j < n; ++j) o[j] = internal::StoreAs<S>(Op::Apply(ToCompute(o[j]), ToCompute(x[j])));
    }
    in_off += n;
    int k = r - 2;
    for (; k >= 0; --k) {
      out_off += ostride[k];
      if (++idx[k] < dims[k]) break;
      out_off -= ostride[k] * dims[k];
      idx[k] = 0;
    }
    if (k < 0) return;
  }
}

// ReduceLoop's arithmetic on input elements [begin, begin + n) only (`in` holds exactly those):
// feeding an array's ranges in order gives ReduceLoop's result bit for bit.
template <class Op, class S>
void ReduceRangeLoop(const std::byte* in_bytes, std::byte* out_bytes, const std::vector<int64_t>& dims,
                     const std::vector<int64_t>& ostride, int64_t begin, int64_t n) {
  const S* in = reinterpret_cast<const S*>(in_bytes);
  S* out = reinterpret_cast<S*>(out_bytes);
  const int r = static_cast<int>(dims.size());
  if (r == 0) {
    if (n > 0) out[0] = internal::StoreAs<S>(Op::Apply(ToCompute(out[0]), ToCompute(in[0])));
    return;
  }
  // Fused loops call this once per tile (per row of a column chunk): no allocation for the usual
  // ranks.
  constexpr int kInline = 8;
  int64_t idx_inline[kInline];
  std::vector<int64_t> idx_heap(r > kInline ? r : 0);
  int64_t* idx = r > kInline ? idx_heap.data() : idx_inline;
  int64_t rest = begin, out_off = 0;
  for (int d = r - 1; d >= 0; --d) {
    idx[d] = rest % dims[d];
    rest /= dims[d];
    out_off += idx[d] * ostride[d];
  }
  const int64_t last = dims[r - 1], os = ostride[r - 1];
  int64_t i = 0;
  while (i < n) {
    const int64_t run = std::min(n - i, last - idx[r - 1]);
    const S* x = in + i;
    bool done = false;
    if constexpr (kLaneReducible<Op, S>) done = os == 0 && LaneReduce<Op, S>(x, run, out + out_off);
    if constexpr (kBlockSummable<Op, S>) {
      // A range that cuts a block (callers keep cuts at multiples of kSumBlock) adds one by one.
      if (os == 0 && last % kSumBlock == 0 && idx[r - 1] % kSumBlock == 0 && run % kSumBlock == 0) {
        VectorBlockSums(x, run, out + out_off);
        done = true;
      }
    }
    if (done) {
    } else if (os == 0) {
      auto acc = ToCompute(out[out_off]);
      for (int64_t j = 0; j < run; ++j) acc = ToCompute(internal::StoreAs<S>(Op::Apply(acc, ToCompute(x[j]))));
      out[out_off] = internal::StoreAs<S>(acc);
    } else {
      S* o = out + out_off;
      for (int64_t j = 0; j < run; ++j) o[j] = internal::StoreAs<S>(Op::Apply(ToCompute(o[j]), ToCompute(x[j])));
    }
    i += run;
    idx[r - 1] += run;
    out_off += run * os;
    for (int d = r - 1; d > 0 && idx[d] == dims[d]; --d) {
      idx[d] = 0;
      out_off -= dims[d] * ostride[d];
      ++idx[d - 1];
      out_off += ostride[d - 1];
    }
  }
}

template <class Op>
ReduceRangeFn ResolveRange(DType t) {
  return VisitDTypeOrNarrow(
      t,
      [](auto tag) -> ReduceRangeFn {
        using S = typename decltype(tag)::type;
        if constexpr (internal::BinaryApplies<Op, S>) {
          if constexpr (std::is_same_v<internal::BinaryOut<Op, S>, S>) return &ReduceRangeLoop<Op, S>;
        }
        return nullptr;
      },
      [] { return ReduceRangeFn{nullptr}; });
}

using ReduceLoopFn = void (*)(const std::byte*, std::byte*, const std::vector<int64_t>&,
                              const std::vector<int64_t>&);

// Runs `loop` with the outputs split between threads when the minor dim is reduced and the major
// one kept (row sums, row maxima): blocks of major rows, each output's inputs combined in the
// serial order, so the results are the serial ones bit for bit. Column sums (PlanColumnBlocks)
// run their blocks of rows on the threads. Other reductions run in one call: a kept minor dim
// (x.sum(0)) split into column ranges was no faster than one thread on f32[8192,1024] (2.8-2.9
// ms against 2.5-2.7: each thread reads half of every row, and the hardware prefetchers stop at
// every gap), and a whole-array or major-and-minor reduce has no split that keeps the order.
// Inputs under 2^18 elements stay serial.
void ParallelReduceLoop(ReduceLoopFn loop, CombineKind kind, const Array& in, Array& out,
                        const std::vector<int64_t>& dims, const std::vector<int64_t>& ostride, int threads) {
  const int r = static_cast<int>(dims.size());
  const ColumnBlocks cb = PlanColumnBlocks(kind, in.dtype(), dims, ostride);
  if (cb.blocks > 1) {
    // The slab dims: the dims after the leading reduced ones, under one leading dim of slabs.
    std::vector<int64_t> bdims = {0}, bostride = {0};
    bdims.insert(bdims.end(), dims.begin() + cb.lead, dims.end());
    bostride.insert(bostride.end(), ostride.begin() + cb.lead, ostride.end());
    const int64_t n = out.num_elements(), es = DTypeSize(in.dtype());
    // An Array: repeated calls reuse a large buffer instead of faulting in fresh pages.
    Array partials = Array::Uninitialized(Shape(in.dtype(), {(cb.blocks - 1) * n}));
    ParallelFor(cb.blocks, threads, [&](int64_t b) {
      std::vector<int64_t> part = bdims;
      part[0] = std::min(cb.block_rows, cb.rows - b * cb.block_rows);
      std::byte* target = out.data();
      if (b > 0) {
        target = partials.data() + (b - 1) * n * es;
        InitColumnPartials(in.dtype(), target, n, 1);
      }
      loop(in.data() + b * cb.block_rows * cb.slab * es, target, part, bostride);
    });
    AddColumnPartials(in.dtype(), out.data(), partials.data(), n, cb.blocks - 1);
    return;
  }
  if (threads > 1 && in.num_elements() >= (int64_t{1} << 18) && r >= 2 && ostride[r - 1] == 0 && ostride[0] != 0 &&
      dims[0] >= 2) {
    const int64_t rows = dims[0], row_elems = in.num_elements() / rows;
    const int64_t chunks = std::min<int64_t>(rows, int64_t{4} * threads);
    const int64_t in_es = DTypeSize(in.dtype()), out_es = DTypeSize(out.dtype());
    ParallelFor(chunks, threads, [&](int64_t c) {
      const int64_t b = rows * c / chunks, e = rows * (c + 1) / chunks;
      std::vector<int64_t> part = dims;
      part[0] = e - b;
      loop(in.data() + b * row_elems * in_es, out.data() + b * ostride[0] * out_es, part, ostride);
    });
    return;
  }
  loop(in.data(), out.data(), dims, ostride);
}

template <class Op>
std::pair<TypedCombineFn, ReduceLoopFn> ResolveTyped(DType t) {
  return VisitDTypeOrNarrow(
      t,
      [](auto tag) -> std::pair<TypedCombineFn, ReduceLoopFn> {
        using S = typename decltype(tag)::type;
        if constexpr (internal::BinaryApplies<Op, S>) {
          if constexpr (std::is_same_v<internal::BinaryOut<Op, S>, S>) {
            return {&TypedCombine<Op, S>, &ReduceLoop<Op, S>};
          }
        }
        return {nullptr, nullptr};
      },
      [] {
        return std::pair<TypedCombineFn, ReduceLoopFn>{nullptr, nullptr};
      });
}

std::pair<TypedCombineFn, ReduceLoopFn> Resolve(CombineKind kind, DType t) {
  switch (kind) {
    case CombineKind::kAdd: return ResolveTyped<ops::Add>(t);
    case CombineKind::kMultiply: return ResolveTyped<ops::Multiply>(t);
    case CombineKind::kMaximum: return ResolveTyped<ops::Maximum>(t);
    case CombineKind::kMinimum: return ResolveTyped<ops::Minimum>(t);
    case CombineKind::kAnd: return ResolveTyped<ops::And>(t);
    case CombineKind::kOr: return ResolveTyped<ops::Or>(t);
    case CombineKind::kOverwrite:
      switch (DTypeSize(t)) {
        case 1: return {&OverwriteCombine<1>, nullptr};
        case 2: return {&OverwriteCombine<2>, nullptr};
        case 4: return {&OverwriteCombine<4>, nullptr};
        case 8: return {&OverwriteCombine<8>, nullptr};
        case 16: return {&OverwriteCombine<16>, nullptr};
        default: return {nullptr, nullptr};
      }
    case CombineKind::kGeneric: break;
  }
  return {nullptr, nullptr};
}

Status CheckOperands(std::string_view what, std::span<const Array* const> inputs,
                     std::span<const Array* const> inits, const Combiner& c) {
  if (inputs.empty() || inputs.size() != inits.size()) {
    return InvalidArgument(what, ": needs as many init values as inputs (got ", inputs.size(),
                           " inputs and ", inits.size(), " inits)");
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i]->dims() != inputs[0]->dims()) {
      return InvalidArgument(what, ": input ", i, " has shape ", inputs[i]->shape().ToString(),
                             " but input 0 has ", inputs[0]->shape().ToString());
    }
    if (inits[i]->num_elements() != 1 || inits[i]->dtype() != inputs[i]->dtype()) {
      return InvalidArgument(what, ": init ", i, " must be a ", DTypeName(inputs[i]->dtype()),
                             " scalar, got ", inits[i]->shape().ToString());
    }
  }
  if (c.kind != CombineKind::kGeneric && inputs.size() != 1) {
    return Internal(what, ": a typed combiner takes one operand");
  }
  if (c.kind == CombineKind::kGeneric && !c.fn) return Internal(what, ": no reducer function");
  return OkStatus();
}

// Calls the generic combiner on element `acc_off` of every output and `in_off` of every input.
Status GenericStep(const Combiner& c, std::vector<Array>& outs, std::span<const Array* const> ins,
                   int64_t acc_off, int64_t in_off, std::vector<const std::byte*>& args,
                   std::vector<std::byte*>& results) {
  const size_t n = outs.size();
  for (size_t i = 0; i < n; ++i) {
    const int64_t es = DTypeSize(outs[i].dtype());
    results[i] = outs[i].data() + acc_off * es;
    args[i] = results[i];
    args[n + i] = ins[i]->data() + in_off * es;
  }
  return c.fn(args, results);
}

std::vector<Array> InitOutputs(std::span<const Array* const> inits,
                               const std::vector<int64_t>& out_dims) {
  std::vector<Array> outs;
  for (const Array* init : inits) {
    Array o(Shape(init->dtype(), out_dims));
    // The init in element 0, then copies of what is filled so far, doubling.
    const int64_t bytes = o.num_elements() * DTypeSize(init->dtype());
    if (bytes > 0) std::memcpy(o.data(), init->data(), DTypeSize(init->dtype()));
    for (int64_t filled = DTypeSize(init->dtype()); filled < bytes; filled *= 2) {
      std::memcpy(o.data() + filled, o.data(), std::min(filled, bytes - filled));
    }
    outs.push_back(std::move(o));
  }
  return outs;
}

// `a` in `to` by the vectorized conversion kernels (Array::Convert goes element by element).
Array ConvertFast(const Array& a, DType to) {
  Array out(Shape(to, a.dims()));
  (*FindConvertKernel(a.dtype(), to))(a.data(), out.data(), a.num_elements());
  return out;
}

// Sums and products of bf16 / f16 in a reduce-window (cumsum, pooling) accumulate in f32 and
// round once at the end, which XLA's CPU backend approaches (it rewrites a long cumulative window
// into blocks computed in f32): rounding every step to the narrow type stalls a long sum (a bf16
// running sum of ones stops at 256). True for those, with the inputs and inits widened into `wide`.
bool WidenNarrowAccumulation(std::span<const Array* const> inputs, std::span<const Array* const> inits,
                             CombineKind kind, std::vector<Array>* wide) {
  if (kind != CombineKind::kAdd && kind != CombineKind::kMultiply) return false;
  if (inputs.size() != 1 || inits.size() != 1) return false;
  const DType t = inputs[0]->dtype();
  if (t != DType::kBF16 && t != DType::kF16) return false;
  wide->clear();
  wide->push_back(ConvertFast(*inputs[0], DType::kF32));
  wide->push_back(ConvertFast(*inits[0], DType::kF32));
  return true;
}

std::vector<Array> NarrowOutputs(std::vector<Array> outs, DType t) {
  for (Array& o : outs) o = ConvertFast(o, t);
  return outs;
}

// XLA's CPU backend sums and multiplies bf16 / f16 in their own type, every step rounded, after
// its tree-reduction rewrite: a reduce with a reduced dim longer than 32 first reduces windows of
// min(n, 32) elements along each reduced dim (stride the window size, padding split as for
// kSame padding, the smaller half first), then reduces those windows' results in turn, until no
// reduced dim is longer than 32; each window and the last reduce combine their elements from the
// init in row-major order. Checked bit for bit against JAX 0.10.2 (f16 and bf16 lax.reduce sums
// of [33], [100], [1280], [5000], [8,4096] and [4096,8] over one dim, [40,50] and [3,70,40] over
// two, [7,33]): accumulating in f32 instead differs in the last bit on half of those outputs, and
// an f16 gradient summed over a batch that way drifts from JAX's by more than f32 tolerances.
constexpr int64_t kTreeReductionWindow = 32;

bool NarrowTreeReduction(std::span<const Array* const> inputs, std::span<const Array* const> inits, CombineKind kind) {
  if (kind != CombineKind::kAdd && kind != CombineKind::kMultiply) return false;
  if (inputs.size() != 1 || inits.size() != 1) return false;
  return inputs[0]->dtype() == DType::kBF16 || inputs[0]->dtype() == DType::kF16;
}

// One step of a bf16 / f16 sum or product: computed in f32 (exact for a product of two narrow
// values; for a sum, f32's 24 bits make the double rounding harmless) and rounded to nearest even
// in the narrow type, kept as an f32. Branch-free so that a step over many outputs vectorizes.
inline float RoundToBF16(float v) {
  const uint32_t u = std::bit_cast<uint32_t>(v);
  const float r = std::bit_cast<float>((u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u);
  return v != v ? v : r;  // NaN stays NaN (its payload is the narrow type's business at the end)
}
inline float RoundToF16(float v) {
  const uint32_t u = std::bit_cast<uint32_t>(v);
  const float a = std::fabs(v);
  float normal = std::bit_cast<float>((u + 0xfffu + ((u >> 13) & 1u)) & 0xffffe000u);
  normal = std::fabs(normal) > 65504.0f ? std::copysign(std::numeric_limits<float>::infinity(), v) : normal;
  // Below 2^-14 the spacing is 2^-24: adding and taking away 0.5 (whose ulp that is) rounds there.
  const float subnormal = std::copysign((a + 0.5f) - 0.5f, v);
  const float r = a < 6.103515625e-05f ? subnormal : normal;
  return v != v ? v : r;
}
template <bool kBF16, bool kAdd>
inline void NarrowSteps(float* acc, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = kAdd ? acc[i] + x[i] : acc[i] * x[i];
    acc[i] = kBF16 ? RoundToBF16(v) : RoundToF16(v);
  }
}

// XLA's tree for all outputs at once: `x` holds, for each reduced index (row-major over the
// reduced dims `rd`), a row of `count` values, one per output. Every combine is one step over a
// row, so the outputs go along together and the steps vectorize.
template <bool kBF16, bool kAdd>
std::vector<float> TreeFoldRows(std::vector<float> x, std::vector<int64_t> rd, float init, int64_t count) {
  const size_t r = rd.size();
  std::vector<float> next;
  while (true) {
    // (An empty reduced dim leaves every output its init.)
    if (std::all_of(rd.begin(), rd.end(), [](int64_t n) { return n <= kTreeReductionWindow; }) ||
        std::find(rd.begin(), rd.end(), 0) != rd.end()) {
      std::vector<float> acc(static_cast<size_t>(count), init);
      for (int64_t row = 0, rows = Product(rd); row < rows; ++row) {
        NarrowSteps<kBF16, kAdd>(acc.data(), x.data() + row * count, count);
      }
      return acc;
    }
    std::vector<int64_t> w(r), blocks(r), lo(r);
    for (size_t d = 0; d < r; ++d) {
      w[d] = std::min(rd[d], kTreeReductionWindow);
      blocks[d] = (rd[d] + w[d] - 1) / w[d];
      lo[d] = (blocks[d] * w[d] - rd[d]) / 2;
    }
    const std::vector<int64_t> strides = RowMajorStrides(rd);
    const int64_t nblocks = Product(blocks), wn = Product(w);
    next.assign(static_cast<size_t>(nblocks * count), init);
    std::vector<int64_t> bi(r, 0), wi(r, 0);
    for (int64_t b = 0; b < nblocks; ++b) {
      std::fill(wi.begin(), wi.end(), 0);
      for (int64_t k = 0; k < wn; ++k) {
        int64_t off = 0;
        bool inside = true;
        for (size_t d = 0; d < r; ++d) {
          const int64_t i = bi[d] * w[d] + wi[d] - lo[d];
          inside = inside && i >= 0 && i < rd[d];
          off += i * strides[d];
        }
        // Padding is skipped, as XLA does.
        if (inside) NarrowSteps<kBF16, kAdd>(next.data() + b * count, x.data() + off * count, count);
        NextIndex(wi, w);
      }
      NextIndex(bi, blocks);
    }
    x.swap(next);
    rd = blocks;
  }
}

template <bool kBF16, bool kAdd>
Array TreeReduceNarrowTyped(const Array& in, const Array& init, const std::vector<int64_t>& dims) {
  const std::vector<int64_t>& in_dims = in.dims();
  std::vector<int64_t> sorted = dims, perm, out_dims, rd;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t d : sorted) {
    perm.push_back(d);
    rd.push_back(in_dims[d]);
  }
  for (size_t d = 0; d < in_dims.size(); ++d) {
    if (!std::binary_search(sorted.begin(), sorted.end(), static_cast<int64_t>(d))) {
      perm.push_back(static_cast<int64_t>(d));
      out_dims.push_back(in_dims[d]);
    }
  }
  // Reduced dims major, outputs minor, in f32 (exact).
  bool identity = true;
  for (size_t k = 0; k < perm.size(); ++k) identity = identity && perm[k] == static_cast<int64_t>(k);
  const Array major = identity ? in : Transpose(in, perm);
  const UnaryKernel widen = *FindConvertKernel(in.dtype(), DType::kF32);
  const UnaryKernel narrow = *FindConvertKernel(DType::kF32, in.dtype());
  std::vector<float> x(static_cast<size_t>(major.num_elements()));
  widen(major.data(), reinterpret_cast<std::byte*>(x.data()), major.num_elements());
  const int64_t count = Product(out_dims);
  const std::vector<float> out =
      TreeFoldRows<kBF16, kAdd>(std::move(x), rd, static_cast<float>(init.GetDouble(0)), count);
  Array result(Shape(in.dtype(), out_dims));
  narrow(reinterpret_cast<const std::byte*>(out.data()), result.data(), count);
  return result;
}

StatusOr<std::vector<Array>> TreeReduceNarrow(const Array& in, const Array& init, const std::vector<int64_t>& dims,
                                              const Combiner& reducer) {
  const int64_t rank = static_cast<int64_t>(in.dims().size());
  std::vector<bool> seen(rank, false);
  for (int64_t d : dims) {
    if (d < 0 || d >= rank || seen[d]) {
      return InvalidArgument("reduce: dimension ", d, " is out of range for rank ", rank, " or repeated");
    }
    seen[d] = true;
  }
  const bool bf16 = in.dtype() == DType::kBF16, add = reducer.kind == CombineKind::kAdd;
  std::vector<Array> outs;
  outs.push_back(bf16 ? (add ? TreeReduceNarrowTyped<true, true>(in, init, dims)
                             : TreeReduceNarrowTyped<true, false>(in, init, dims))
                      : (add ? TreeReduceNarrowTyped<false, true>(in, init, dims)
                             : TreeReduceNarrowTyped<false, false>(in, init, dims)));
  return outs;
}

}  // namespace

StatusOr<ReduceRangeFn> FindReduceRange(CombineKind kind, DType dtype) {
  if ((kind == CombineKind::kAdd || kind == CombineKind::kMultiply) &&
      (dtype == DType::kBF16 || dtype == DType::kF16)) {
    // Reduced in XLA's tree order by Reduce (TreeReduceNarrow); a fused loop's range steps
    // would combine them in another order.
    return Unimplemented("fused ", kind == CombineKind::kAdd ? "sums" : "products", " of ", DTypeName(dtype),
                         " (they are reduced in XLA's tree order outside fused loops)");
  }
  ReduceRangeFn f = nullptr;
  switch (kind) {
    case CombineKind::kAdd: f = ResolveRange<ops::Add>(dtype); break;
    case CombineKind::kMultiply: f = ResolveRange<ops::Multiply>(dtype); break;
    case CombineKind::kMaximum: f = ResolveRange<ops::Maximum>(dtype); break;
    case CombineKind::kMinimum: f = ResolveRange<ops::Minimum>(dtype); break;
    case CombineKind::kAnd: f = ResolveRange<ops::And>(dtype); break;
    case CombineKind::kOr: f = ResolveRange<ops::Or>(dtype); break;
    default: break;
  }
  if (f == nullptr) return UnsupportedDType("this reducer", dtype);
  return f;
}

ColumnBlocks PlanColumnBlocks(CombineKind kind, DType dtype, const std::vector<int64_t>& dims,
                              const std::vector<int64_t>& ostride) {
  // Blocks of about 2^18 elements (1 MiB of f32): big enough that the partials and their final
  // sum cost little next to the input (at most 1/16 of it: slabs of up to 2^14 elements), small
  // enough to spread a few MiB over the cores. Wider slabs are long contiguous runs that a split
  // into column ranges already streams well.
  constexpr int64_t kBlockElements = int64_t{1} << 18, kMaxSlab = int64_t{1} << 14;
  ColumnBlocks cb;
  const int r = static_cast<int>(dims.size());
  if (kind != CombineKind::kAdd || (dtype != DType::kF32 && dtype != DType::kF64) || r < 2 ||
      ostride.size() != dims.size() || ostride[0] != 0) {
    return cb;
  }
  int j = 0;
  while (j < r && ostride[j] == 0) ++j;
  if (j == r) return cb;  // every dim reduced
  cb.lead = j;
  cb.rows = Product(std::vector<int64_t>(dims.begin(), dims.begin() + j));
  cb.slab = Product(std::vector<int64_t>(dims.begin() + j, dims.end()));
  if (cb.slab <= 0 || cb.slab > kMaxSlab || cb.rows <= 0) return cb;
  cb.block_rows = (kBlockElements + cb.slab - 1) / cb.slab;
  if (cb.rows > cb.block_rows) cb.blocks = (cb.rows + cb.block_rows - 1) / cb.block_rows;
  return cb;
}

namespace {

template <class S>
void AddPartialsTyped(S* out, const S* partials, int64_t n, int64_t count, int64_t begin, int64_t end) {
  for (int64_t b = 0; b < count; ++b) {
    const S* p = partials + b * n;
    for (int64_t k = begin; k < end; ++k) out[k] = out[k] + p[k];
  }
}

}  // namespace

void InitColumnPartials(DType dtype, std::byte* partials, int64_t n, int64_t count) {
  if (dtype == DType::kF64) {
    std::fill_n(reinterpret_cast<double*>(partials), n * count, -0.0);
  } else {
    std::fill_n(reinterpret_cast<float*>(partials), n * count, -0.0f);
  }
}

void AddColumnPartials(DType dtype, std::byte* out, const std::byte* partials, int64_t n, int64_t count) {
  AddPartialsRange(dtype, out, partials, n, count, 0, n);
}

void AddPartialsRange(DType dtype, std::byte* out, const std::byte* partials, int64_t n, int64_t count, int64_t begin,
                      int64_t end) {
  if (dtype == DType::kF64) {
    AddPartialsTyped(reinterpret_cast<double*>(out), reinterpret_cast<const double*>(partials), n, count, begin, end);
  } else {
    AddPartialsTyped(reinterpret_cast<float*>(out), reinterpret_cast<const float*>(partials), n, count, begin, end);
  }
}

StatusOr<TypedCombineFn> FindTypedCombine(CombineKind kind, DType dtype) {
  TypedCombineFn f = Resolve(kind, dtype).first;
  if (f == nullptr) return UnsupportedDType("this reducer", dtype);
  return f;
}

StatusOr<std::vector<Array>> Reduce(std::span<const Array* const> inputs,
                                    std::span<const Array* const> inits,
                                    const std::vector<int64_t>& dims, const Combiner& reducer) {
  XS_RETURN_IF_ERROR(CheckOperands("reduce", inputs, inits, reducer));
  if (NarrowTreeReduction(inputs, inits, reducer.kind)) return TreeReduceNarrow(*inputs[0], *inits[0], dims, reducer);
  const std::vector<int64_t>& in_dims = inputs[0]->dims();
  std::vector<bool> reduced(in_dims.size(), false);
  for (int64_t d : dims) {
    if (d < 0 || d >= static_cast<int64_t>(in_dims.size())) {
      return InvalidArgument("reduce: dimension ", d, " is out of range for rank ", in_dims.size());
    }
    reduced[d] = true;
  }
  std::vector<int64_t> out_dims;
  for (size_t d = 0; d < in_dims.size(); ++d) {
    if (!reduced[d]) out_dims.push_back(in_dims[d]);
  }
  std::vector<Array> outs = InitOutputs(inits, out_dims);
  if (inputs[0]->num_elements() == 0) return outs;
  const std::vector<int64_t> out_strides = RowMajorStrides(out_dims);
  std::vector<int64_t> ostride(in_dims.size(), 0);
  for (size_t d = 0, k = 0; d < in_dims.size(); ++d) {
    if (!reduced[d]) ostride[d] = out_strides[k++];
  }
  if (reducer.kind != CombineKind::kGeneric) {
    ReduceLoopFn loop = Resolve(reducer.kind, inputs[0]->dtype()).second;
    if (loop == nullptr) return UnsupportedDType("reduce", inputs[0]->dtype());
    ParallelReduceLoop(loop, reducer.kind, *inputs[0], outs[0], in_dims, ostride,
                       std::max(1, CurrentDeviceThreadShare().threads));
    return outs;
  }
  if (reducer.arg_select && inputs.size() == 2) {
    if (ArgReduceFn loop = FindArgReduce(*reducer.arg_select, inputs[0]->dtype(), inputs[1]->dtype())) {
      const int share = CurrentDeviceThreadShare().threads;
      const int threads = inputs[0]->num_elements() >= (int64_t{1} << 18) ? std::max(1, share) : 1;
      loop(inputs[0]->data(), inputs[1]->data(), outs[0].data(), outs[1].data(), in_dims, ostride, threads);
      return outs;
    }
  }
  std::vector<const std::byte*> args(2 * inputs.size());
  std::vector<std::byte*> results(inputs.size());
  std::vector<int64_t> idx(in_dims.size(), 0);
  int64_t out_off = 0;
  for (int64_t linear = 0; linear < inputs[0]->num_elements(); ++linear) {
    XS_RETURN_IF_ERROR(GenericStep(reducer, outs, inputs, out_off, linear, args, results));
    for (int k = static_cast<int>(in_dims.size()) - 1; k >= 0; --k) {
      out_off += ostride[k];
      if (++idx[k] < in_dims[k]) break;
      out_off -= ostride[k] * in_dims[k];
      idx[k] = 0;
    }
  }
  return outs;
}

StatusOr<std::vector<Array>> ReduceReference(std::span<const Array* const> inputs,
                                             std::span<const Array* const> inits,
                                             const std::vector<int64_t>& dims,
                                             const Combiner& reducer) {
  XS_RETURN_IF_ERROR(CheckOperands("reduce", inputs, inits, reducer));
  if (NarrowTreeReduction(inputs, inits, reducer.kind)) return TreeReduceNarrow(*inputs[0], *inits[0], dims, reducer);
  const std::vector<int64_t>& in_dims = inputs[0]->dims();
  std::vector<int64_t> out_dims, kept, red_dims;
  for (size_t d = 0; d < in_dims.size(); ++d) {
    if (std::find(dims.begin(), dims.end(), static_cast<int64_t>(d)) == dims.end()) {
      out_dims.push_back(in_dims[d]);
      kept.push_back(static_cast<int64_t>(d));
    }
  }
  for (int64_t d : dims) red_dims.push_back(in_dims[d]);
  std::vector<int64_t> sorted_dims = dims;
  std::sort(sorted_dims.begin(), sorted_dims.end());
  red_dims.clear();
  for (int64_t d : sorted_dims) red_dims.push_back(in_dims[d]);
  std::vector<Array> outs = InitOutputs(inits, out_dims);
  TypedCombineFn typed = nullptr;
  if (reducer.kind != CombineKind::kGeneric) {
    XS_ASSIGN_OR_RETURN(typed, FindTypedCombine(reducer.kind, inputs[0]->dtype()));
  }
  const std::vector<int64_t> in_strides = RowMajorStrides(in_dims);
  std::vector<const std::byte*> args(2 * inputs.size());
  std::vector<std::byte*> results(inputs.size());
  std::vector<int64_t> oi(out_dims.size(), 0), full(in_dims.size(), 0);
  const int64_t red_total = Product(red_dims);
  for (int64_t o = 0, count = Product(out_dims); o < count; ++o) {
    for (size_t k = 0; k < kept.size(); ++k) full[kept[k]] = oi[k];
    std::vector<int64_t> ri(red_dims.size(), 0);
    for (int64_t r = 0; r < red_total; ++r) {
      for (size_t k = 0; k < sorted_dims.size(); ++k) full[sorted_dims[k]] = ri[k];
      const int64_t in_off = LinearIndex(full.data(), in_strides);
      if (typed) {
        const int64_t es = DTypeSize(outs[0].dtype());
        typed(outs[0].data() + o * es, inputs[0]->data() + in_off * es);
      } else {
        XS_RETURN_IF_ERROR(GenericStep(reducer, outs, inputs, o, in_off, args, results));
      }
      NextIndex(ri, red_dims);
    }
    NextIndex(oi, out_dims);
  }
  return outs;
}

std::vector<int64_t> WindowOutputDims(const std::vector<int64_t>& dims, const Window& window) {
  std::vector<int64_t> out(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    const WindowDim& w = window.dims[i];
    const int64_t base = dims[i] == 0 ? 0 : (dims[i] - 1) * w.lhs_dilation + 1;
    const int64_t padded = base + w.pad_low + w.pad_high;
    const int64_t win = w.size == 0 ? 0 : (w.size - 1) * w.rhs_dilation + 1;
    out[i] = (padded < win || w.stride < 1) ? 0 : (padded - win) / w.stride + 1;
  }
  return out;
}

namespace {

// Calls f(input linear offset) for every window element of output index `oi` that falls on a
// real (not padding, not a dilation hole) input element, in row-major window order.
template <typename F>
Status ForEachWindowElement(const std::vector<int64_t>& in_dims, const std::vector<int64_t>& in_strides,
                            const Window& window, const std::vector<int64_t>& oi,
                            const std::vector<int64_t>& win_sizes, F&& f) {
  const size_t r = in_dims.size();
  std::vector<int64_t> wi(r, 0);
  const int64_t total = Product(win_sizes);
  for (int64_t w = 0; w < total; ++w) {
    int64_t off = 0;
    if (WindowElementOffset(window, in_dims, in_strides, oi, wi, r, &off)) XS_RETURN_IF_ERROR(f(off));
    NextIndex(wi, win_sizes);
  }
  return OkStatus();
}

}  // namespace

std::optional<int> PrefixScanDim(const std::vector<int64_t>& in_dims, const Window& window) {
  if (window.dims.size() != in_dims.size()) return std::nullopt;
  std::optional<int> scan;
  for (size_t d = 0; d < in_dims.size(); ++d) {
    const WindowDim& w = window.dims[d];
    if (w.stride != 1 || w.lhs_dilation != 1 || w.rhs_dilation != 1 || w.window_reversal || w.pad_high != 0) {
      return std::nullopt;
    }
    if (w.size == 1 && w.pad_low == 0) continue;  // one element: this dim is not reduced
    if (scan || w.size < 1 || w.size < in_dims[d] || w.pad_low != w.size - 1) return std::nullopt;
    scan = static_cast<int>(d);
  }
  return scan;
}

std::optional<int> SuffixScanDim(const std::vector<int64_t>& in_dims, const Window& window) {
  if (window.dims.size() != in_dims.size()) return std::nullopt;
  std::optional<int> scan;
  for (size_t d = 0; d < in_dims.size(); ++d) {
    const WindowDim& w = window.dims[d];
    if (w.stride != 1 || w.lhs_dilation != 1 || w.rhs_dilation != 1 || w.window_reversal || w.pad_low != 0) {
      return std::nullopt;
    }
    if (w.size == 1 && w.pad_high == 0) continue;  // one element: this dim is not reduced
    if (scan || w.size < 1 || w.size < in_dims[d] || w.pad_high != w.size - 1) return std::nullopt;
    scan = static_cast<int>(d);
  }
  return scan;
}

StatusOr<std::vector<Array>> ReduceWindow(std::span<const Array* const> inputs,
                                          std::span<const Array* const> inits,
                                          const Window& window, const Combiner& reducer) {
  XS_RETURN_IF_ERROR(CheckOperands("reduce-window", inputs, inits, reducer));
  if (std::vector<Array> wide; WidenNarrowAccumulation(inputs, inits, reducer.kind, &wide)) {
    const Array* win[] = {&wide[0]};
    const Array* winit[] = {&wide[1]};
    XS_ASSIGN_OR_RETURN(std::vector<Array> outs, ReduceWindow(win, winit, window, reducer));
    return NarrowOutputs(std::move(outs), inputs[0]->dtype());
  }
  const std::vector<int64_t>& in_dims = inputs[0]->dims();
  if (window.dims.size() != in_dims.size()) {
    return InvalidArgument("reduce-window: window has ", window.dims.size(),
                           " dims but the input has rank ", in_dims.size());
  }
  const std::vector<int64_t> out_dims = WindowOutputDims(in_dims, window);
  const std::optional<int> scan = PrefixScanDim(in_dims, window);
  if (scan && reducer.kind != CombineKind::kGeneric) {
    // A typed scan writes every element: no init fill.
    if (ScanLoopFn scan_loop = FindTypedKernel<ScanLoopFn, ScanKernel>(reducer.kind, inputs[0]->dtype())) {
      const int64_t len = in_dims[*scan], inner = Product(std::vector<int64_t>(in_dims.begin() + *scan + 1, in_dims.end()));
      const int64_t outer = len * inner == 0 ? 0 : Product(out_dims) / (len * inner);
      std::vector<Array> outs;
      outs.emplace_back(Shape(inputs[0]->dtype(), out_dims));
      scan_loop(inputs[0]->data(), outs[0].data(), inits[0]->data(), outer, len, inner);
      return outs;
    }
  }
  if (!scan && reducer.kind != CombineKind::kGeneric) {
    if (const std::optional<int> suffix = SuffixScanDim(in_dims, window)) {
      if (ScanLoopFn scan_loop = FindTypedKernel<ScanLoopFn, SuffixScanKernel>(reducer.kind, inputs[0]->dtype())) {
        const int64_t len = in_dims[*suffix],
                      inner = Product(std::vector<int64_t>(in_dims.begin() + *suffix + 1, in_dims.end()));
        const int64_t outer = len * inner == 0 ? 0 : Product(out_dims) / (len * inner);
        std::vector<Array> outs;
        outs.emplace_back(Shape(inputs[0]->dtype(), out_dims));
        scan_loop(inputs[0]->data(), outs[0].data(), inits[0]->data(), outer, len, inner);
        return outs;
      }
    }
    if (WindowLoopFn window_loop = FindTypedKernel<WindowLoopFn, WindowKernel>(reducer.kind, inputs[0]->dtype())) {
      std::vector<Array> outs;
      outs.emplace_back(Shape(inputs[0]->dtype(), out_dims));
      window_loop(inputs[0]->data(), outs[0].data(), inits[0]->data(), in_dims, out_dims, window,
                  std::max(1, CurrentDeviceThreadShare().threads));
      return outs;
    }
  }
  std::vector<Array> outs = InitOutputs(inits, out_dims);
  TypedCombineFn typed = nullptr;
  if (reducer.kind != CombineKind::kGeneric) {
    XS_ASSIGN_OR_RETURN(typed, FindTypedCombine(reducer.kind, inputs[0]->dtype()));
  }
  std::vector<int64_t> win_sizes;
  for (const WindowDim& w : window.dims) win_sizes.push_back(w.size);
  const std::vector<int64_t> in_strides = RowMajorStrides(in_dims);
  std::vector<const std::byte*> args(2 * inputs.size());
  std::vector<std::byte*> results(inputs.size());
  std::vector<int64_t> oi(out_dims.size(), 0);
  const int64_t es0 = DTypeSize(inputs[0]->dtype());
  if (scan) {
    // out_dims == in_dims. Output o starts from output o - inner (its window less input o), or
    // from the init at the start of a row, then takes input o: the combines walking the window
    // from position 0 would make, in that order.
    const int64_t inner = in_strides[*scan], len = in_dims[*scan], count = Product(out_dims);
    for (int64_t o = 0; o < count; ++o) {
      if ((o / inner) % len != 0) {
        for (Array& out : outs) {
          const int64_t es = DTypeSize(out.dtype());
          std::memcpy(out.data() + o * es, out.data() + (o - inner) * es, es);
        }
      }
      if (typed) {
        typed(outs[0].data() + o * es0, inputs[0]->data() + o * es0);
      } else {
        XS_RETURN_IF_ERROR(GenericStep(reducer, outs, inputs, o, o, args, results));
      }
    }
    return outs;
  }
  for (int64_t o = 0, count = Product(out_dims); o < count; ++o) {
    XS_RETURN_IF_ERROR(ForEachWindowElement(in_dims, in_strides, window, oi, win_sizes,
                                            [&](int64_t in_off) -> Status {
      if (typed) {
        typed(outs[0].data() + o * es0, inputs[0]->data() + in_off * es0);
        return OkStatus();
      }
      return GenericStep(reducer, outs, inputs, o, in_off, args, results);
    }));
    NextIndex(oi, out_dims);
  }
  return outs;
}

StatusOr<Array> SelectAndScatter(const Array& operand, const Array& source, const Array& init,
                                 const Window& window, const ScalarFn& select,
                                 const Combiner& scatter) {
  if (window.dims.size() != operand.dims().size()) {
    return InvalidArgument("select-and-scatter: window has ", window.dims.size(),
                           " dims but the operand has rank ", operand.rank());
  }
  const std::vector<int64_t> src_dims = WindowOutputDims(operand.dims(), window);
  if (src_dims != source.dims()) {
    return InvalidArgument("select-and-scatter: source has shape ", source.shape().ToString(),
                           " but the window over the operand gives [", JoinDims(src_dims), "]");
  }
  const Array* init_ptr = &init;
  std::vector<Array> outs = InitOutputs(std::span<const Array* const>(&init_ptr, 1), operand.dims());
  Array& out = outs[0];
  TypedCombineFn typed = nullptr;
  if (scatter.kind != CombineKind::kGeneric) {
    XS_ASSIGN_OR_RETURN(typed, FindTypedCombine(scatter.kind, out.dtype()));
  }
  std::vector<int64_t> win_sizes;
  for (const WindowDim& w : window.dims) win_sizes.push_back(w.size);
  const std::vector<int64_t> in_strides = RowMajorStrides(operand.dims());
  const int64_t es = DTypeSize(operand.dtype());
  const int64_t out_es = DTypeSize(out.dtype());
  std::vector<int64_t> si(src_dims.size(), 0);
  bool pred = false;
  for (int64_t s = 0, count = source.num_elements(); s < count; ++s) {
    std::optional<int64_t> chosen;
    XS_RETURN_IF_ERROR(ForEachWindowElement(operand.dims(), in_strides, window, si, win_sizes,
                                            [&](int64_t off) -> Status {
      if (!chosen) chosen = off;
      const std::byte* args[2] = {operand.data() + *chosen * es, operand.data() + off * es};
      std::byte* res[1] = {reinterpret_cast<std::byte*>(&pred)};
      XS_RETURN_IF_ERROR(select(args, res));
      if (!pred) chosen = off;
      return OkStatus();
    }));
    if (chosen) {
      std::byte* dst = out.data() + *chosen * out_es;
      const std::byte* src = source.data() + s * out_es;
      if (typed) {
        // scatter(source, current) for commutative typed kinds equals current op= source.
        typed(dst, src);
      } else {
        const std::byte* args[2] = {src, dst};
        std::byte* res[1] = {dst};
        XS_RETURN_IF_ERROR(scatter.fn(args, res));
      }
    }
    NextIndex(si, src_dims);
  }
  return out;
}

StatusOr<Array> Map(std::span<const Array* const> inputs, DType result, const ScalarFn& fn) {
  if (inputs.empty()) return InvalidArgument("map: needs at least one operand");
  for (const Array* a : inputs) {
    if (a->dims() != inputs[0]->dims()) {
      return InvalidArgument("map: operand shapes differ: ", a->shape().ToString(), " vs ",
                             inputs[0]->shape().ToString());
    }
  }
  Array out(Shape(result, inputs[0]->dims()));
  std::vector<const std::byte*> args(inputs.size());
  const int64_t out_es = DTypeSize(result);
  for (int64_t i = 0, count = out.num_elements(); i < count; ++i) {
    for (size_t k = 0; k < inputs.size(); ++k) {
      args[k] = inputs[k]->data() + i * DTypeSize(inputs[k]->dtype());
    }
    std::byte* res[1] = {out.data() + i * out_es};
    XS_RETURN_IF_ERROR(fn(args, res));
  }
  return out;
}

}  // namespace xs::kernels
