// gather / scatter. Each window (gather's slice, scatter's update window) is walked as runs of
// elements evenly spaced on both sides (a window of whole rows is one run), with the window starts
// read straight from the indices a block at a time. Gather copies the runs; scatter combines them
// in a typed loop per (combiner, dtype), or calls the combiner's scalar function per element.
// One file: gather and scatter share the window-run decomposition, the index decoding and the
// column walk, which is most of its length; splitting them apart would expose those internals.
#include "xshard/kernels/gather_scatter.h"

#include <algorithm>
#include <cstring>

#include "xshard/kernels/elementwise_loops.h"
#include "xshard/kernels/numeric.h"
#include "xshard/kernels/parallel.h"
#include "xshard/kernels/reduce.h"
#include "xshard/kernels/scalar_ops.h"

namespace xs::kernels {
namespace {

bool Contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// The indices array seen as batch dims + an index vector dim.
struct IndexView {
  std::vector<int64_t> values;
  std::vector<int64_t> batch_dims, batch_strides;
  int64_t vector_size = 1, vector_stride = 0;
  int64_t ivd = 0;

  // Position of indices dim `dim` among the batch dims.
  int64_t BatchPos(int64_t dim) const { return dim > ivd ? dim - 1 : dim; }
  int64_t At(const std::vector<int64_t>& b, int64_t k) const {
    int64_t off = k * vector_stride;
    for (size_t i = 0; i < b.size(); ++i) off += b[i] * batch_strides[i];
    return values[off];
  }
};

StatusOr<IndexView> MakeIndexView(const Array& indices, int64_t ivd) {
  IndexView v;
  XS_ASSIGN_OR_RETURN(v.values, IndicesAsInt64(indices));
  const std::vector<int64_t>& d = indices.dims();
  if (ivd < 0 || ivd > static_cast<int64_t>(d.size())) {
    return InvalidArgument("index_vector_dim=", ivd, " is out of range for indices of rank ", d.size());
  }
  v.ivd = ivd;
  const std::vector<int64_t> strides = RowMajorStrides(d);
  for (int64_t i = 0; i < static_cast<int64_t>(d.size()); ++i) {
    if (i == ivd) {
      v.vector_size = d[i];
      v.vector_stride = strides[i];
    } else {
      v.batch_dims.push_back(d[i]);
      v.batch_strides.push_back(strides[i]);
    }
  }
  return v;
}

// Operand start for one batch index: index vector through `index_map`, batching dims from the
// batch index itself.
void StartIndex(const IndexView& iv, const std::vector<int64_t>& b,
                const std::vector<int64_t>& index_map, const std::vector<int64_t>& operand_batching,
                const std::vector<int64_t>& indices_batching, std::vector<int64_t>& start) {
  std::fill(start.begin(), start.end(), 0);
  for (size_t k = 0; k < index_map.size() && static_cast<int64_t>(k) < iv.vector_size; ++k) {
    start[index_map[k]] = iv.At(b, static_cast<int64_t>(k));
  }
  for (size_t i = 0; i < operand_batching.size(); ++i) {
    start[operand_batching[i]] = b[iv.BatchPos(indices_batching[i])];
  }
}

std::vector<int64_t> WindowOperandDims(int64_t rank, const std::vector<int64_t>& collapsed,
                                       const std::vector<int64_t>& batching) {
  std::vector<int64_t> w;
  for (int64_t d = 0; d < rank; ++d) {
    if (!Contains(collapsed, d) && !Contains(batching, d)) w.push_back(d);
  }
  return w;
}

// Windows whose starts are read at a time (stack buffers), and runs handed on at a time.
constexpr int64_t kBlock = 256;

// `n` elements from element offset `a` of the operand side and `b` of the other side (gather's
// result, scatter's updates), each side stepping by its RunPlan's step.
struct Run {
  int64_t a, b, n;
};

// A window as runs: size-1 dims dropped, a dim merged into its inner neighbour where both sides
// are contiguous across it; the innermost dim left is the run, the others are walked around it.
struct RunPlan {
  std::vector<int64_t> dims, a_strides, b_strides;  // outer dims, outermost first
  int64_t run = 1, a_step = 1, b_step = 1;
};

RunPlan MakeRunPlan(const std::vector<int64_t>& box, const std::vector<int64_t>& a_strides,
                    const std::vector<int64_t>& b_strides) {
  RunPlan p;
  for (size_t i = 0; i < box.size(); ++i) {
    if (box[i] == 1) continue;
    if (!p.dims.empty() && p.a_strides.back() == a_strides[i] * box[i] &&
        p.b_strides.back() == b_strides[i] * box[i]) {
      p.dims.back() *= box[i];
      p.a_strides.back() = a_strides[i];
      p.b_strides.back() = b_strides[i];
      continue;
    }
    p.dims.push_back(box[i]);
    p.a_strides.push_back(a_strides[i]);
    p.b_strides.push_back(b_strides[i]);
  }
  if (!p.dims.empty()) {
    p.run = p.dims.back();
    p.a_step = p.a_strides.back();
    p.b_step = p.b_strides.back();
    p.dims.pop_back();
    p.a_strides.pop_back();
    p.b_strides.pop_back();
  }
  return p;
}

// Calls f(a, b) with the start of each run of the window whose first element is at (a, b), in
// the window's row-major order; `idx` is scratch.
template <class F>
void ForEachRun(const RunPlan& p, int64_t a, int64_t b, std::vector<int64_t>& idx, F&& f) {
  const size_t r = p.dims.size();
  if (r == 0) {
    f(a, b);
    return;
  }
  if (r == 1) {
    for (int64_t i = 0; i < p.dims[0]; ++i) f(a + i * p.a_strides[0], b + i * p.b_strides[0]);
    return;
  }
  idx.assign(r, 0);
  for (;;) {
    f(a, b);
    size_t k = r;
    for (;;) {
      if (k == 0) return;
      --k;
      a += p.a_strides[k];
      b += p.b_strides[k];
      if (++idx[k] < p.dims[k]) break;
      a -= p.a_strides[k] * p.dims[k];
      b -= p.b_strides[k] * p.dims[k];
      idx[k] = 0;
    }
  }
}

// The indices' dims other than index_vector_dim, in order; error for an index_vector_dim out of
// range.
StatusOr<std::vector<int64_t>> IndexBatchDims(const Array& indices, int64_t ivd) {
  const std::vector<int64_t>& d = indices.dims();
  if (ivd < 0 || ivd > static_cast<int64_t>(d.size())) {
    return InvalidArgument("index_vector_dim=", ivd, " is out of range for indices of rank ", d.size());
  }
  std::vector<int64_t> batch;
  for (int64_t i = 0; i < static_cast<int64_t>(d.size()); ++i) {
    if (i != ivd) batch.push_back(d[i]);
  }
  return batch;
}

// Each window's start, read from the indices for windows in row-major order of the indices'
// batch dims (the evaluator's order): the operand offset of its first element (gather: the start
// clamped so the slice fits; scatter: -1 when the window does not fit) and the other side's
// offset of its first element. Only the operand dims that an index component or a batching dim
// sets are read; the others start at 0, where every window fits (the callers check the sizes).
// The values are StartIndex's: index components through the map, then the batching dims.
class WindowStarts {
 public:
  // `sizes`: the window's extent in each operand dim; `other_strides`: the other side's stride
  // of each indices batch dim, in order.
  static StatusOr<WindowStarts> Make(const Array& indices, int64_t ivd, const std::vector<int64_t>& operand_dims,
                                     const std::vector<int64_t>& sizes, const std::vector<int64_t>& index_map,
                                     const std::vector<int64_t>& operand_batching,
                                     const std::vector<int64_t>& indices_batching,
                                     const std::vector<int64_t>& other_strides, bool clamp) {
    WindowStarts w;
    const DType t = indices.dtype();
    const bool integer = VisitDType(
        t, [](auto tag) { return Int<typename decltype(tag)::type>; }, [] { return false; });
    if (!integer) return InvalidArgument("indices must have an integer type, got ", DTypeName(t));
    const std::vector<int64_t>& d = indices.dims();
    const int64_t irank = static_cast<int64_t>(d.size());
    if (ivd < 0 || ivd > irank) {
      return InvalidArgument("index_vector_dim=", ivd, " is out of range for indices of rank ", d.size());
    }
    const std::vector<int64_t> strides = RowMajorStrides(d);
    int64_t vector_size = 1;
    for (int64_t i = 0; i < irank; ++i) {
      if (i == ivd) {
        vector_size = d[i];
        w.vector_stride_ = strides[i];
      } else {
        w.batch_dims_.push_back(d[i]);
        w.idx_strides_.push_back(strides[i]);
      }
    }
    if (other_strides.size() != w.batch_dims_.size()) return Internal("window starts: batch dims mismatch");
    w.other_strides_ = other_strides;
    w.count_ = Product(w.batch_dims_);
    const int64_t rank = static_cast<int64_t>(operand_dims.size());
    const std::vector<int64_t> op_strides = RowMajorStrides(operand_dims);
    for (int64_t m : index_map) {
      if (m < 0 || m >= rank) return InvalidArgument("index map names dim ", m, " of an operand of rank ", rank);
    }
    if (operand_batching.size() != indices_batching.size()) {
      return InvalidArgument(operand_batching.size(), " operand batching dims but ", indices_batching.size(),
                             " indices batching dims");
    }
    for (size_t i = 0; i < operand_batching.size(); ++i) {
      if (operand_batching[i] < 0 || operand_batching[i] >= rank) {
        return InvalidArgument("operand batching dim ", operand_batching[i], " is out of range");
      }
      if (indices_batching[i] < 0 || indices_batching[i] >= irank || indices_batching[i] == ivd) {
        return InvalidArgument("indices batching dim ", indices_batching[i], " is not a batch dim of the indices");
      }
    }
    for (int64_t dim = 0; dim < rank; ++dim) {
      Source s;
      s.hi = operand_dims[dim] - sizes[dim];
      s.op_stride = op_strides[dim];
      for (size_t k = 0; k < index_map.size() && static_cast<int64_t>(k) < vector_size; ++k) {
        if (index_map[k] == dim) s.component = static_cast<int64_t>(k);
      }
      for (size_t i = 0; i < operand_batching.size(); ++i) {
        if (operand_batching[i] == dim) {
          s.component = -1;
          s.batch_pos = indices_batching[i] > ivd ? indices_batching[i] - 1 : indices_batching[i];
        }
      }
      if (s.component >= 0 || s.batch_pos >= 0) w.sources_.push_back(s);
    }
    w.data_ = indices.data();
    w.dtype_ = t;
    w.clamp_ = clamp;
    return w;
  }

  int64_t count() const { return count_; }

  // Fills op[i] and other[i] for windows first .. first + n - 1.
  void Fill(int64_t first, int64_t n, int64_t* op, int64_t* other) const {
    VisitDType(
        dtype_,
        [&](auto tag) {
          using I = typename decltype(tag)::type;
          if constexpr (Int<I>) FillTyped<I>(first, n, op, other);
        },
        [] {});
  }

 private:
  struct Source {
    int64_t op_stride = 0, hi = 0;
    int64_t component = -1;  // index vector component, or
    int64_t batch_pos = -1;  // the batch dim whose coordinate is the start
  };

  // The windows go in stretches along the last batch dim, where only the last coordinate
  // changes: each stretch starts from the outer batching dims' part, then adds one source at a
  // time in a tight loop (strided index reads, no per-window odometer).
  template <typename I>
  void FillTyped(int64_t first, int64_t n, int64_t* op, int64_t* other) const {
    const I* p = reinterpret_cast<const I*>(data_);
    const size_t r = batch_dims_.size();
    if (r == 0) {  // one window: an index vector alone
      op[0] = Start(p, 0, {});
      other[0] = 0;
      return;
    }
    std::vector<int64_t> coord(r);
    int64_t ioff = 0, ooff = 0, rest = first;
    for (size_t k = r; k-- > 0;) {
      coord[k] = rest % batch_dims_[k];
      rest /= batch_dims_[k];
      ioff += coord[k] * idx_strides_[k];
      ooff += coord[k] * other_strides_[k];
    }
    const int64_t last = static_cast<int64_t>(r) - 1;
    const int64_t step = idx_strides_[last], ostep = other_strides_[last];
    for (int64_t i = 0; i < n;) {
      const int64_t len = std::min(n - i, batch_dims_[last] - coord[last]);
      int64_t* o = op + i;
      int64_t base = 0;
      bool fits = true;
      for (const Source& s : sources_) {
        if (s.component >= 0 || s.batch_pos == last) continue;
        fits = fits && Add(coord[s.batch_pos], s, base);
      }
      for (int64_t j = 0; j < len; ++j) other[i + j] = ooff + j * ostep;
      bool set = false;  // o holds the stretch's starts so far
      for (const Source& s : sources_) {
        if (!fits || (s.component < 0 && s.batch_pos != last)) continue;
        if (s.component >= 0) {
          const I* q = p + ioff + s.component * vector_stride_;
          AddAll(len, s, set, base, o, [&](int64_t j) { return static_cast<int64_t>(q[j * step]); });
        } else {
          const int64_t c0 = coord[last];
          AddAll(len, s, set, base, o, [&](int64_t j) { return c0 + j; });
        }
        set = true;
      }
      if (!set) std::fill(o, o + len, fits ? base : -1);
      i += len;
      ioff += len * step;
      ooff += len * ostep;
      coord[last] += len;
      for (int64_t k = last; k > 0 && coord[k] == batch_dims_[k]; --k) {  // carry
        ioff += idx_strides_[k - 1] - idx_strides_[k] * batch_dims_[k];
        ooff += other_strides_[k - 1] - other_strides_[k] * batch_dims_[k];
        coord[k] = 0;
        ++coord[k - 1];
      }
    }
  }

  // Adds source s's start value(j) to o[j] for j < len (to `base` when !set), branch-free:
  // clamped (gather), or -1 for a window that does not fit or did not already (scatter).
  template <class Value>
  void AddAll(int64_t len, const Source& s, bool set, int64_t base, int64_t* o, Value&& value) const {
    // Locals: stores through o could alias the source's fields otherwise.
    const int64_t stride = s.op_stride, hi = s.hi;  // hi >= 0: the callers check the window sizes
    if (clamp_) {
      for (int64_t j = 0; j < len; ++j) {
        o[j] = (set ? o[j] : base) + std::min(std::max<int64_t>(0, value(j)), hi) * stride;
      }
      return;
    }
    const uint64_t uhi = static_cast<uint64_t>(hi);
    if (!set) {
      for (int64_t j = 0; j < len; ++j) {
        const int64_t v = value(j);
        o[j] = static_cast<uint64_t>(v) <= uhi ? base + v * stride : -1;
      }
      return;
    }
    for (int64_t j = 0; j < len; ++j) {
      const int64_t v = value(j);
      o[j] = o[j] >= 0 && static_cast<uint64_t>(v) <= uhi ? o[j] + v * stride : -1;
    }
  }

  // Adds source s's start v to the offset `off`: clamped (gather), or false when the window does
  // not fit (scatter).
  bool Add(int64_t v, const Source& s, int64_t& off) const {
    if (clamp_) {
      v = std::min(std::max<int64_t>(0, v), s.hi);
    } else if (v < 0 || v > s.hi) {
      return false;
    }
    off += v * s.op_stride;
    return true;
  }

  // The start of the window whose index vector is at p + ioff and batch coordinates `coord`.
  template <typename I>
  int64_t Start(const I* p, int64_t ioff, const std::vector<int64_t>& coord) const {
    int64_t off = 0;
    for (const Source& s : sources_) {
      const int64_t v = s.component >= 0 ? static_cast<int64_t>(p[ioff + s.component * vector_stride_])
                                         : coord[s.batch_pos];
      if (!Add(v, s, off)) return -1;
    }
    return off;
  }

  const std::byte* data_ = nullptr;
  DType dtype_ = DType::kS32;
  std::vector<int64_t> batch_dims_, idx_strides_, other_strides_;
  int64_t vector_stride_ = 0, count_ = 0;
  std::vector<Source> sources_;
  bool clamp_ = false;
};

// Walks windows first .. last - 1 in order, a block of starts at a time. With `single_runs`
// (each window is one run) the blocks of starts go to windows(op, other, m), which skips starts of
// -1 (scatter's misfits); else the runs of the windows that fit go to flush(runs, count) -> Status.
template <class Windows, class Flush>
Status WalkWindows(const WindowStarts& starts, const RunPlan& plan, bool single_runs, int64_t first, int64_t last,
                   Windows&& windows, Flush&& flush) {
  int64_t op[kBlock], other[kBlock];
  Run runs[kBlock];
  int64_t nr = 0;
  std::vector<int64_t> idx;
  for (int64_t w = first; w < last; w += kBlock) {
    const int64_t m = std::min(kBlock, last - w);
    starts.Fill(w, m, op, other);
    if (single_runs) {
      windows(static_cast<const int64_t*>(op), static_cast<const int64_t*>(other), m);
      continue;
    }
    for (int64_t i = 0; i < m; ++i) {
      if (op[i] < 0) continue;
      Status st = OkStatus();
      ForEachRun(plan, op[i], other[i], idx, [&](int64_t a, int64_t b) {
        runs[nr++] = Run{a, b, plan.run};
        if (nr == kBlock) {
          if (st.ok()) st = flush(static_cast<const Run*>(runs), nr);
          nr = 0;
        }
      });
      XS_RETURN_IF_ERROR(st);
    }
  }
  if (nr > 0) return flush(static_cast<const Run*>(runs), nr);
  return OkStatus();
}

// Windows whose first lines are prefetched ahead of the one being copied / combined: windows
// land at random rows, where the hardware prefetcher cannot guess the next start.
constexpr int64_t kPrefetchAhead = 8;
template <int kWrite, typename T>
inline void PrefetchStart(const T* p, int64_t n) {
  const char* c = reinterpret_cast<const char*>(p);
  const int64_t bytes = std::min<int64_t>(n * static_cast<int64_t>(sizeof(T)), 256);
  for (int64_t at = 0; at < bytes; at += 64) __builtin_prefetch(c + at, kWrite, 3);
}

// The starts of every window in order, -1 for a scatter window that does not fit (for the
// column walks below).
Status AllStarts(const WindowStarts& starts, const RunPlan& plan, std::vector<int64_t>& op,
                 std::vector<int64_t>& other) {
  op.reserve(static_cast<size_t>(starts.count()));
  other.reserve(static_cast<size_t>(starts.count()));
  return WalkWindows(
      starts, plan, /*single_runs=*/true, 0, starts.count(),
      [&](const int64_t* o, const int64_t* u, int64_t m) {
        op.insert(op.end(), o, o + m);
        other.insert(other.end(), u, u + m);
      },
      [](const Run*, int64_t) { return OkStatus(); });
}

// A window that is one strided run (a column: x[:, idx], x.at[:, idx].add(u)) is walked
// element by element with a cache line fetched per element on each side. The column walk goes
// the other way round: for each position w in the run, every window's element w, so consecutive
// windows touch nearby elements (a row of the result and of the updates).
bool ColumnWalk(const RunPlan& plan) {
  return plan.dims.empty() && plan.run > 1 && (plan.a_step != 1 || plan.b_step != 1);
}

// Elements of `size` bytes, for copies that only move bytes.
template <size_t kSize>
struct Bytes {
  std::byte b[kSize];
};

template <typename U>
inline void CopyElements(U* dst, int64_t dst_step, const U* src, int64_t src_step, int64_t n) {
  if (dst_step == 1 && src_step == 1) {
    if (n == 1) {
      *dst = *src;
    } else {
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(U));
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) dst[i * dst_step] = src[i * src_step];
}

// The loops of one element size (gather, scatter's overwrite) or dtype (scatter's combines) over
// a: the operand / scatter's result and b: gather's result / the updates. `runs` takes a block of
// runs; `windows` a block of windows that are one run of n elements each, starting at a + op[i]
// and b + other[i] (no run built per window; n == 1: one element each).
struct GatherFns {
  void (*runs)(const std::byte* a, std::byte* b, const Run* runs, int64_t count, int64_t a_step, int64_t b_step);
  void (*windows)(const std::byte* a, std::byte* b, const int64_t* op, const int64_t* other, int64_t m, int64_t n,
                  int64_t a_step, int64_t b_step);
};
struct ScatterFns {
  void (*runs)(std::byte* a, const std::byte* b, const Run* runs, int64_t count, int64_t a_step, int64_t b_step);
  void (*windows)(std::byte* a, const std::byte* b, const int64_t* op, const int64_t* other, int64_t m, int64_t n,
                  int64_t a_step, int64_t b_step);
};

template <typename U>
void GatherRuns(const std::byte* a, std::byte* b, const Run* runs, int64_t count, int64_t a_step, int64_t b_step) {
  for (int64_t r = 0; r < count; ++r) {
    CopyElements(reinterpret_cast<U*>(b) + runs[r].b, b_step, reinterpret_cast<const U*>(a) + runs[r].a, a_step,
                 runs[r].n);
  }
}
template <typename U>
void GatherWindows(const std::byte* a, std::byte* b, const int64_t* op, const int64_t* other, int64_t m, int64_t n,
                   int64_t a_step, int64_t b_step) {
  const U* src = reinterpret_cast<const U*>(a);
  U* dst = reinterpret_cast<U*>(b);
  if (n == 1) {
    for (int64_t i = 0; i < m; ++i) {
      if (i + kPrefetchAhead < m) __builtin_prefetch(src + op[i + kPrefetchAhead], 0, 3);
      dst[other[i]] = src[op[i]];
    }
    return;
  }
  for (int64_t i = 0; i < m; ++i) {
    if (a_step == 1 && i + kPrefetchAhead < m) PrefetchStart<0>(src + op[i + kPrefetchAhead], n);
    CopyElements(dst + other[i], b_step, src + op[i], a_step, n);
  }
}

template <typename U>
void OverwriteRuns(std::byte* a, const std::byte* b, const Run* runs, int64_t count, int64_t a_step, int64_t b_step) {
  for (int64_t r = 0; r < count; ++r) {
    CopyElements(reinterpret_cast<U*>(a) + runs[r].a, a_step, reinterpret_cast<const U*>(b) + runs[r].b, b_step,
                 runs[r].n);
  }
}
template <typename U>
void OverwriteWindows(std::byte* a, const std::byte* b, const int64_t* op, const int64_t* other, int64_t m, int64_t n,
                      int64_t a_step, int64_t b_step) {
  U* dst = reinterpret_cast<U*>(a);
  const U* src = reinterpret_cast<const U*>(b);
  for (int64_t i = 0; i < m; ++i) {
    if (op[i] < 0) continue;
    if (a_step == 1 && i + kPrefetchAhead < m && op[i + kPrefetchAhead] >= 0) {
      PrefetchStart<1>(dst + op[i + kPrefetchAhead], n);
    }
    CopyElements(dst + op[i], a_step, src + other[i], b_step, n);
  }
}

// TypedCombine's arithmetic: each result rounded to S.
template <class Op, class S>
inline S Combine(S acc, S x) {
  return internal::StoreAs<S>(Op::Apply(ToCompute(acc), ToCompute(x)));
}

// n elements; contiguous ones vectorize.
template <class Op, class S>
inline void CombineRun(S* o, const S* u, int64_t n, int64_t a_step, int64_t b_step) {
  if (a_step == 1 && b_step == 1) {
    for (int64_t i = 0; i < n; ++i) o[i] = Combine<Op, S>(o[i], u[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) o[i * a_step] = Combine<Op, S>(o[i * a_step], u[i * b_step]);
  }
}

template <class Op, class S>
void CombineRuns(std::byte* a, const std::byte* b, const Run* runs, int64_t count, int64_t a_step, int64_t b_step) {
  S* o = reinterpret_cast<S*>(a);
  const S* u = reinterpret_cast<const S*>(b);
  for (int64_t r = 0; r < count; ++r) CombineRun<Op, S>(o + runs[r].a, u + runs[r].b, runs[r].n, a_step, b_step);
}
template <class Op, class S>
void CombineWindows(std::byte* a, const std::byte* b, const int64_t* op, const int64_t* other, int64_t m, int64_t n,
                    int64_t a_step, int64_t b_step) {
  S* o = reinterpret_cast<S*>(a);
  const S* u = reinterpret_cast<const S*>(b);
  if (n == 1) {
    for (int64_t i = 0; i < m; ++i) {
      if (i + kPrefetchAhead < m && op[i + kPrefetchAhead] >= 0) __builtin_prefetch(o + op[i + kPrefetchAhead], 1, 3);
      if (op[i] >= 0) o[op[i]] = Combine<Op, S>(o[op[i]], u[other[i]]);
    }
    return;
  }
  for (int64_t i = 0; i < m; ++i) {
    if (op[i] < 0) continue;
    if (a_step == 1 && i + kPrefetchAhead < m && op[i + kPrefetchAhead] >= 0) {
      PrefetchStart<1>(o + op[i + kPrefetchAhead], n);
    }
    CombineRun<Op, S>(o + op[i], u + other[i], n, a_step, b_step);
  }
}

template <class Op>
ScatterFns CombineFnsFor(DType t) {
  return VisitDTypeOrNarrow(
      t,
      [](auto tag) -> ScatterFns {
        using S = typename decltype(tag)::type;
        if constexpr (internal::BinaryApplies<Op, S>) {
          if constexpr (std::is_same_v<internal::BinaryOut<Op, S>, S>) {
            return {&CombineRuns<Op, S>, &CombineWindows<Op, S>};
          }
        }
        return {nullptr, nullptr};
      },
      [] {
        return ScatterFns{nullptr, nullptr};
      });
}

// The loops of a recognized combiner (FindTypedCombine's kinds and dtypes); null when none.
ScatterFns ScatterFnsFor(CombineKind kind, DType t) {
  switch (kind) {
    case CombineKind::kAdd: return CombineFnsFor<ops::Add>(t);
    case CombineKind::kMultiply: return CombineFnsFor<ops::Multiply>(t);
    case CombineKind::kMaximum: return CombineFnsFor<ops::Maximum>(t);
    case CombineKind::kMinimum: return CombineFnsFor<ops::Minimum>(t);
    case CombineKind::kAnd: return CombineFnsFor<ops::And>(t);
    case CombineKind::kOr: return CombineFnsFor<ops::Or>(t);
    case CombineKind::kOverwrite:
      // Bytes moved as they are (no round trip through a compute type that could quiet a NaN).
      switch (DTypeSize(t)) {
        case 1: return {&OverwriteRuns<uint8_t>, &OverwriteWindows<uint8_t>};
        case 2: return {&OverwriteRuns<uint16_t>, &OverwriteWindows<uint16_t>};
        case 4: return {&OverwriteRuns<uint32_t>, &OverwriteWindows<uint32_t>};
        case 8: return {&OverwriteRuns<uint64_t>, &OverwriteWindows<uint64_t>};
        case 16: return {&OverwriteRuns<Bytes<16>>, &OverwriteWindows<Bytes<16>>};
        default: return {nullptr, nullptr};
      }
    case CombineKind::kGeneric: break;
  }
  return {nullptr, nullptr};
}

GatherFns GatherFnsFor(int64_t size) {
  switch (size) {
    case 1: return {&GatherRuns<uint8_t>, &GatherWindows<uint8_t>};
    case 2: return {&GatherRuns<uint16_t>, &GatherWindows<uint16_t>};
    case 4: return {&GatherRuns<uint32_t>, &GatherWindows<uint32_t>};
    case 8: return {&GatherRuns<uint64_t>, &GatherWindows<uint64_t>};
    case 16: return {&GatherRuns<Bytes<16>>, &GatherWindows<Bytes<16>>};
    default: return {nullptr, nullptr};
  }
}

}  // namespace

StatusOr<std::vector<int64_t>> IndicesAsInt64(const Array& indices) {
  std::vector<int64_t> out(static_cast<size_t>(indices.num_elements()));
  Status st = VisitDType(
      indices.dtype(),
      [&](auto tag) -> Status {
        using S = typename decltype(tag)::type;
        if constexpr (Int<S>) {
          const S* p = reinterpret_cast<const S*>(indices.data());
          for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<int64_t>(p[i]);
          return OkStatus();
        } else {
          return InvalidArgument("indices must have an integer type, got ",
                                 DTypeName(indices.dtype()));
        }
      },
      [&] { return InvalidArgument("indices must have an integer type, got ", DTypeName(indices.dtype())); });
  XS_RETURN_IF_ERROR(st);
  return out;
}

StatusOr<std::vector<int64_t>> GatherResultDims(const std::vector<int64_t>& operand,
                                                const std::vector<int64_t>& indices,
                                                const GatherDimensionNumbers& dn,
                                                const std::vector<int64_t>& slice_sizes) {
  const int64_t rank = static_cast<int64_t>(operand.size());
  if (static_cast<int64_t>(slice_sizes.size()) != rank) {
    return InvalidArgument("gather: slice_sizes has ", slice_sizes.size(),
                           " entries but the operand has rank ", rank);
  }
  for (int64_t d = 0; d < rank; ++d) {
    if (slice_sizes[d] < 0 || slice_sizes[d] > operand[d]) {
      return InvalidArgument("gather: slice size ", slice_sizes[d], " of dim ", d,
                             " does not fit the operand dim of size ", operand[d]);
    }
  }
  const std::vector<int64_t> window =
      WindowOperandDims(rank, dn.collapsed_slice_dims, dn.operand_batching_dims);
  if (window.size() != dn.offset_dims.size()) {
    return InvalidArgument("gather: ", dn.offset_dims.size(), " offset_dims for ", window.size(),
                           " operand dims that are neither collapsed nor batching");
  }
  std::vector<int64_t> batch;
  for (int64_t i = 0; i < static_cast<int64_t>(indices.size()); ++i) {
    if (i != dn.index_vector_dim) batch.push_back(indices[i]);
  }
  const int64_t out_rank = static_cast<int64_t>(batch.size() + window.size());
  std::vector<int64_t> out(out_rank);
  size_t bi = 0, wi = 0;
  for (int64_t i = 0; i < out_rank; ++i) {
    if (Contains(dn.offset_dims, i)) {
      out[i] = slice_sizes[window[wi++]];
    } else {
      if (bi >= batch.size()) return InvalidArgument("gather: offset_dims out of range");
      out[i] = batch[bi++];
    }
  }
  return out;
}

Status GatherInto(const Array& operand, const Array& indices, const GatherDimensionNumbers& dn,
                  const std::vector<int64_t>& slice_sizes, Array& out, int threads) {
  XS_ASSIGN_OR_RETURN(std::vector<int64_t> out_dims,
                      GatherResultDims(operand.dims(), indices.dims(), dn, slice_sizes));
  if (out.dims() != out_dims || out.dtype() != operand.dtype()) {
    return InvalidArgument("gather: result buffer ", out.shape().ToString(), " for a result of ",
                           DTypeName(operand.dtype()), "[", JoinDims(out_dims), "]");
  }
  const int64_t rank = operand.rank();
  const std::vector<int64_t> window =
      WindowOperandDims(rank, dn.collapsed_slice_dims, dn.operand_batching_dims);
  const std::vector<int64_t> op_strides = RowMajorStrides(operand.dims());
  const std::vector<int64_t> out_strides = RowMajorStrides(out_dims);
  std::vector<int64_t> box, src_strides, dst_strides, batch_out_strides;
  for (size_t j = 0; j < window.size(); ++j) {
    box.push_back(slice_sizes[window[j]]);
    src_strides.push_back(op_strides[window[j]]);
    dst_strides.push_back(out_strides[dn.offset_dims[j]]);
  }
  for (int64_t i = 0; i < static_cast<int64_t>(out_dims.size()); ++i) {
    if (!Contains(dn.offset_dims, i)) batch_out_strides.push_back(out_strides[i]);
  }
  XS_ASSIGN_OR_RETURN(WindowStarts starts,
                      WindowStarts::Make(indices, dn.index_vector_dim, operand.dims(), slice_sizes,
                                         dn.start_index_map, dn.operand_batching_dims,
                                         dn.start_indices_batching_dims, batch_out_strides, /*clamp=*/true));
  if (out.num_elements() == 0) return OkStatus();
  const int64_t es = DTypeSize(operand.dtype());
  const GatherFns copy = GatherFnsFor(es);
  if (copy.runs == nullptr) return UnsupportedDType("gather", operand.dtype());
  const RunPlan plan = MakeRunPlan(box, src_strides, dst_strides);
  const std::byte* src = operand.data();
  std::byte* dst = out.data();
  // Each result element is written once, so pieces of the result go to threads in any order:
  // chunks of at least kMinChunkBytes of the result (a gather is a memory-bound copy; smaller
  // pieces cost more to hand out than to copy), a few per thread.
  constexpr int64_t kMinChunkBytes = int64_t{256} << 10;
  const int64_t out_bytes = out.num_elements() * es;
  const int64_t max_chunks =
      threads > 1 ? std::min<int64_t>(int64_t{4} * threads, out_bytes / kMinChunkBytes) : 1;
  if (ColumnWalk(plan)) {
    std::vector<int64_t> op, other;
    XS_RETURN_IF_ERROR(AllStarts(starts, plan, op, other));
    const int64_t chunks = std::clamp<int64_t>(max_chunks, 1, plan.run);
    ParallelFor(chunks, threads, [&](int64_t c) {
      for (int64_t w = plan.run * c / chunks; w < plan.run * (c + 1) / chunks; ++w) {
        copy.windows(src + w * plan.a_step * es, dst + w * plan.b_step * es, op.data(), other.data(),
                     static_cast<int64_t>(op.size()), 1, 1, 1);
      }
    });
    return OkStatus();
  }
  const int64_t count = starts.count();
  const int64_t chunks = std::clamp<int64_t>(max_chunks, 1, (count + kBlock - 1) / kBlock);
  return ParallelForStatus(chunks, threads, [&](int64_t c) {
    return WalkWindows(
        starts, plan, plan.dims.empty(), count * c / chunks, count * (c + 1) / chunks,
        [&](const int64_t* op, const int64_t* other, int64_t m) {
          copy.windows(src, dst, op, other, m, plan.run, plan.a_step, plan.b_step);
        },
        [&](const Run* runs, int64_t n) {
          copy.runs(src, dst, runs, n, plan.a_step, plan.b_step);
          return OkStatus();
        });
  });
}

StatusOr<Array> Gather(const Array& operand, const Array& indices, const GatherDimensionNumbers& dn,
                       const std::vector<int64_t>& slice_sizes, int threads) {
  XS_ASSIGN_OR_RETURN(std::vector<int64_t> out_dims,
                      GatherResultDims(operand.dims(), indices.dims(), dn, slice_sizes));
  Array out = Array::Uninitialized(Shape(operand.dtype(), out_dims));
  XS_RETURN_IF_ERROR(GatherInto(operand, indices, dn, slice_sizes, out, threads));
  return out;
}

StatusOr<Array> GatherReference(const Array& operand, const Array& indices,
                                const GatherDimensionNumbers& dn,
                                const std::vector<int64_t>& slice_sizes) {
  XS_ASSIGN_OR_RETURN(std::vector<int64_t> out_dims,
                      GatherResultDims(operand.dims(), indices.dims(), dn, slice_sizes));
  XS_ASSIGN_OR_RETURN(IndexView iv, MakeIndexView(indices, dn.index_vector_dim));
  Array out(Shape(operand.dtype(), out_dims));
  const int64_t rank = operand.rank();
  const std::vector<int64_t> window =
      WindowOperandDims(rank, dn.collapsed_slice_dims, dn.operand_batching_dims);
  const std::vector<int64_t> op_strides = RowMajorStrides(operand.dims());
  const int64_t es = DTypeSize(operand.dtype());
  std::vector<int64_t> oi(out_dims.size(), 0), b, start(rank), src(rank);
  for (int64_t linear = 0; linear < out.num_elements(); ++linear) {
    b.clear();
    std::vector<int64_t> offsets;
    for (int64_t i = 0; i < static_cast<int64_t>(out_dims.size()); ++i) {
      if (Contains(dn.offset_dims, i)) {
        offsets.push_back(oi[i]);
      } else {
        b.push_back(oi[i]);
      }
    }
    StartIndex(iv, b, dn.start_index_map, dn.operand_batching_dims, dn.start_indices_batching_dims,
               start);
    for (int64_t d = 0; d < rank; ++d) {
      src[d] = std::min(std::max<int64_t>(0, start[d]), operand.dims()[d] - slice_sizes[d]);
    }
    for (size_t j = 0; j < window.size(); ++j) src[window[j]] += offsets[j];
    std::memcpy(out.data() + linear * es, operand.data() + LinearIndex(src.data(), op_strides) * es,
                static_cast<size_t>(es));
    NextIndex(oi, out_dims);
  }
  return out;
}

int64_t ScatterAddBlocks(CombineKind kind, DType dtype, int64_t windows, int64_t update_elements,
                         int64_t result_elements) {
  // Blocks of at least 2^20 update elements (4 MiB of f32), so each is long work for a thread,
  // and at most 64; the partials ((blocks - 1) results, each set to -0.0 and added at the end)
  // cost at most 1/8 of the updates.
  constexpr int64_t kBlockElements = int64_t{1} << 20, kMaxBlocks = 64;
  if (kind != CombineKind::kAdd || (dtype != DType::kF32 && dtype != DType::kF64) || result_elements <= 0) return 1;
  int64_t blocks = std::min(update_elements / kBlockElements, kMaxBlocks);
  blocks = std::min(blocks, 1 + update_elements / (8 * result_elements));
  blocks = std::min(blocks, windows);
  return std::max<int64_t>(blocks, 1);
}

Status ScatterInPlace(std::span<Array* const> outs, const Array& indices, std::span<const Array* const> updates,
                      const ScatterDimensionNumbers& dn, const Combiner& combiner, int threads) {
  if (outs.empty() || outs.size() != updates.size()) {
    return InvalidArgument("scatter: needs as many updates as operands (got ", outs.size(),
                           " and ", updates.size(), ")");
  }
  const Array& op0 = *outs[0];
  const Array& up0 = *updates[0];
  for (size_t i = 0; i < outs.size(); ++i) {
    if (outs[i]->dims() != op0.dims() || updates[i]->dims() != up0.dims() ||
        updates[i]->dtype() != outs[i]->dtype()) {
      return InvalidArgument("scatter: operand ", i, " ", outs[i]->shape().ToString(), " and update ", i, " ",
                             updates[i]->shape().ToString(), " do not match operand 0 ",
                             op0.shape().ToString(), " and update 0 ", up0.shape().ToString());
    }
  }
  const int64_t rank = op0.rank();
  const std::vector<int64_t> window =
      WindowOperandDims(rank, dn.inserted_window_dims, dn.input_batching_dims);
  if (window.size() != dn.update_window_dims.size()) {
    return InvalidArgument("scatter: ", dn.update_window_dims.size(), " update_window_dims for ",
                           window.size(), " operand dims that are neither inserted nor batching");
  }
  std::vector<int64_t> scatter_pos, win_sizes;
  for (int64_t i = 0; i < up0.rank(); ++i) {
    if (!Contains(dn.update_window_dims, i)) scatter_pos.push_back(i);
  }
  for (int64_t d : dn.update_window_dims) {
    if (d < 0 || d >= up0.rank()) return InvalidArgument("scatter: update_window_dims out of range");
    win_sizes.push_back(up0.dims()[d]);
  }
  const std::vector<int64_t> op_strides = RowMajorStrides(op0.dims());
  const std::vector<int64_t> up_strides = RowMajorStrides(up0.dims());
  std::vector<int64_t> sizes(rank, 1), up_batch_strides, a_strides, b_strides;
  for (size_t j = 0; j < window.size(); ++j) {
    if (win_sizes[j] > op0.dims()[window[j]]) {
      return InvalidArgument("scatter: update window dim of size ", win_sizes[j],
                             " exceeds operand dim ", window[j], " of size ", op0.dims()[window[j]]);
    }
    sizes[window[j]] = win_sizes[j];
    a_strides.push_back(op_strides[window[j]]);
    b_strides.push_back(up_strides[dn.update_window_dims[j]]);
  }
  for (int64_t p : scatter_pos) up_batch_strides.push_back(up_strides[p]);
  XS_ASSIGN_OR_RETURN(const std::vector<int64_t> index_batch, IndexBatchDims(indices, dn.index_vector_dim));
  if (scatter_pos.size() != index_batch.size()) {
    return InvalidArgument("scatter: updates have ", scatter_pos.size(),
                           " scatter dims but the indices have ", index_batch.size(), " batch dims");
  }
  for (size_t j = 0; j < scatter_pos.size(); ++j) {
    if (up0.dims()[scatter_pos[j]] != index_batch[j]) {
      return InvalidArgument("scatter: update scatter dim ", scatter_pos[j], " has size ",
                             up0.dims()[scatter_pos[j]], " but the indices batch dim has ", index_batch[j]);
    }
  }
  XS_ASSIGN_OR_RETURN(WindowStarts starts,
                      WindowStarts::Make(indices, dn.index_vector_dim, op0.dims(), sizes,
                                         dn.scatter_dims_to_operand_dims, dn.input_batching_dims,
                                         dn.scatter_indices_batching_dims, up_batch_strides, /*clamp=*/false));
  ScatterFns typed{nullptr, nullptr};
  if (combiner.kind != CombineKind::kGeneric) {
    if (outs.size() != 1) return Internal("scatter: a typed combiner takes one operand");
    XS_RETURN_IF_ERROR(FindTypedCombine(combiner.kind, op0.dtype()).status());
    typed = ScatterFnsFor(combiner.kind, op0.dtype());
    if (typed.runs == nullptr) return UnsupportedDType("this reducer", op0.dtype());
  } else if (!combiner.fn) {
    return Internal("scatter: no combiner function");
  }
  const int64_t windows = starts.count(), win_total = Product(win_sizes), total = op0.num_elements();
  if (windows == 0 || win_total == 0 || total == 0) return OkStatus();
  const RunPlan plan = MakeRunPlan(win_sizes, a_strides, b_strides);
  if (typed.runs != nullptr) {
    std::byte* out = outs[0]->data();
    const std::byte* up = up0.data();
    // The column walk keeps each element's update order when every window dim spans its whole
    // operand dim: a fitting window then starts at 0 there, so an element's position in the
    // window is the same for all its updates, and they still come in window order.
    bool full = true;
    for (size_t j = 0; j < window.size(); ++j) full = full && win_sizes[j] == op0.dims()[window[j]];
    if (full && ColumnWalk(plan)) {
      std::vector<int64_t> op, other;
      XS_RETURN_IF_ERROR(AllStarts(starts, plan, op, other));
      const int64_t es = DTypeSize(op0.dtype());
      for (int64_t w = 0; w < plan.run; ++w) {
        typed.windows(out + w * plan.a_step * es, up + w * plan.b_step * es, op.data(), other.data(),
                      static_cast<int64_t>(op.size()), 1, 1, 1);
      }
      return OkStatus();
    }
    // Windows [first, last) combined into `target` in order.
    auto walk = [&](std::byte* target, int64_t first, int64_t last) {
      return WalkWindows(
          starts, plan, plan.dims.empty(), first, last,
          [&](const int64_t* op, const int64_t* other, int64_t m) {
            typed.windows(target, up, op, other, m, plan.run, plan.a_step, plan.b_step);
          },
          [&](const Run* runs, int64_t n) {
            typed.runs(target, up, runs, n, plan.a_step, plan.b_step);
            return OkStatus();
          });
    };
    const int64_t blocks = ScatterAddBlocks(combiner.kind, op0.dtype(), windows, up0.num_elements(), total);
    if (blocks == 1) return walk(out, 0, windows);
    // Block 0 adds into the result, block b > 0 into partial b - 1 (from -0.0, the identity of
    // addition: an element no window of the block reaches adds nothing); then the partials are
    // added in block order, each thread a range of elements.
    // An Array, so that repeated calls reuse the buffer (core/array.cc keeps large ones) instead
    // of faulting in fresh pages every time: a fresh 3.75 MiB of partials took segment_sum from
    // 6.4 to 9.6 ms on one thread.
    const DType t = op0.dtype();
    const int64_t es = DTypeSize(t);
    Array partials = Array::Uninitialized(Shape(t, {(blocks - 1) * total}));
    XS_RETURN_IF_ERROR(ParallelForStatus(blocks, threads, [&](int64_t b) {
      std::byte* target = out;
      if (b > 0) {
        target = partials.data() + (b - 1) * total * es;
        InitColumnPartials(t, target, total, 1);
      }
      return walk(target, windows * b / blocks, windows * (b + 1) / blocks);
    }));
    const int64_t ranges = std::max<int64_t>(1, std::min<int64_t>(4 * threads, total / 4096));
    ParallelFor(ranges, threads, [&](int64_t r) {
      AddPartialsRange(t, out, partials.data(), total, blocks - 1, total * r / ranges, total * (r + 1) / ranges);
    });
    return OkStatus();
  }
  const size_t n_ops = outs.size();
  std::vector<const std::byte*> args(2 * n_ops);
  std::vector<std::byte*> results(n_ops);
  std::vector<int64_t> es(n_ops);
  for (size_t i = 0; i < n_ops; ++i) es[i] = DTypeSize(outs[i]->dtype());
  return WalkWindows(
      starts, plan, /*single_runs=*/false, 0, windows, [](const int64_t*, const int64_t*, int64_t) {},
      [&](const Run* runs, int64_t n) -> Status {
        for (int64_t r = 0; r < n; ++r) {
          for (int64_t k = 0; k < runs[r].n; ++k) {
            const int64_t a = runs[r].a + k * plan.a_step, b = runs[r].b + k * plan.b_step;
            for (size_t i = 0; i < n_ops; ++i) {
              results[i] = outs[i]->data() + a * es[i];
              args[i] = results[i];
              args[n_ops + i] = updates[i]->data() + b * es[i];
            }
            XS_RETURN_IF_ERROR(combiner.fn(args, results));
          }
        }
        return OkStatus();
      });
}

StatusOr<std::vector<Array>> Scatter(std::span<const Array* const> operands, const Array& indices,
                                     std::span<const Array* const> updates,
                                     const ScatterDimensionNumbers& dn, const Combiner& combiner) {
  std::vector<Array> outs;
  for (const Array* a : operands) outs.push_back(*a);
  std::vector<Array*> ptrs;
  for (Array& a : outs) ptrs.push_back(&a);
  XS_RETURN_IF_ERROR(ScatterInPlace(ptrs, indices, updates, dn, combiner));
  return outs;
}

}  // namespace xs::kernels
