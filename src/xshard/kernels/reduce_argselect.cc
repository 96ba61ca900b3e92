// The argmax / argmin fold of Reduce (reduce_argselect.h).
#include "xshard/kernels/reduce_argselect.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "xshard/kernels/numeric.h"
#include "xshard/kernels/parallel.h"

namespace xs::kernels {
namespace {

// ArgSelect's step (scalar_fn.h) on one accumulator pair (a, ai) and new pair (b, bi), in the
// value's compute type (f16 / bf16 widen exactly; the result is always one of the two values).
// Only the form JAX emits has a typed loop: ties to the lower index, and for floats the NaN test
// (integers have no NaN). Other flags run the reducer's scalar plan: templating on them quadrupled
// the instantiations (reduce.cc compiled in 163 s), and runtime flags cost ~30 % of the loop.
template <ComparisonDirection D, class C, class I>
inline void ArgStep(C& a, I& ai, C b, I bi) {
  bool take_a;
  if constexpr (D == ComparisonDirection::kGt) {
    take_a = a > b;
  } else {
    take_a = a < b;
  }
  // a != a: true only for a NaN, never for an integer (whose test is left out).
  if constexpr (std::is_floating_point_v<C>) take_a = take_a | std::isnan(a);
  const bool take_ai = take_a | ((a == b) & (ai < bi));
  a = take_a ? a : b;
  ai = take_ai ? ai : bi;
}

// Reduce with an ArgSelect reducer over values V and indices I: the generic walk's steps in its
// order (row-major over the input; outputs start from the inits already in `oval` / `oidx`).
// Reductions over a suffix of the dims fold kRows rows at a time (independent chains), spread
// over `threads` threads by whole rows; others walk the input once, elementwise along a kept
// minor dim or one fold per run of a reduced one.
template <class V, class I, ComparisonDirection D>
void ArgReduceLoop(const std::byte* val_bytes, const std::byte* idx_bytes, std::byte* oval_bytes,
                   std::byte* oidx_bytes, const std::vector<int64_t>& dims, const std::vector<int64_t>& ostride,
                   int threads) {
  using C = ComputeT<V>;
  const V* val = reinterpret_cast<const V*>(val_bytes);
  const I* idx = reinterpret_cast<const I*>(idx_bytes);
  V* oval = reinterpret_cast<V*>(oval_bytes);
  I* oidx = reinterpret_cast<I*>(oidx_bytes);
  const int r = static_cast<int>(dims.size());
  if (r == 0) {
    C a = ToCompute(oval[0]);
    ArgStep<D>(a, oidx[0], ToCompute(val[0]), idx[0]);
    oval[0] = FromCompute<V>(a);
    return;
  }
  // The reduced dims a suffix: outputs are `outer` rows of `len` contiguous elements.
  int split = r;
  while (split > 0 && ostride[split - 1] == 0) --split;
  bool suffix = split < r;
  for (int d = 0; d < split; ++d) suffix = suffix && ostride[d] != 0;
  if (suffix) {
    int64_t outer = 1, len = 1;
    for (int d = 0; d < split; ++d) outer *= dims[d];
    for (int d = split; d < r; ++d) len *= dims[d];
    constexpr int64_t kRows = 4;
    const int64_t blocks = (outer + kRows - 1) / kRows;
    const int64_t per_chunk = std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(1, len * kRows));
    const int64_t chunks = (blocks + per_chunk - 1) / per_chunk;
    ParallelFor(chunks, threads, [&](int64_t c) {
      const int64_t row_end = std::min(outer, (c + 1) * per_chunk * kRows);
      int64_t o = c * per_chunk * kRows;
      for (; o + kRows <= row_end; o += kRows) {
        C a[kRows];
        I ai[kRows];
        for (int64_t k = 0; k < kRows; ++k) {
          a[k] = ToCompute(oval[o + k]);
          ai[k] = oidx[o + k];
        }
        const V* x = val + o * len;
        const I* xi = idx + o * len;
        for (int64_t j = 0; j < len; ++j) {
          for (int64_t k = 0; k < kRows; ++k) {
            ArgStep<D>(a[k], ai[k], ToCompute(x[k * len + j]), xi[k * len + j]);
          }
        }
        for (int64_t k = 0; k < kRows; ++k) {
          oval[o + k] = FromCompute<V>(a[k]);
          oidx[o + k] = ai[k];
        }
      }
      for (; o < row_end; ++o) {
        C a = ToCompute(oval[o]);
        I ai = oidx[o];
        for (int64_t j = 0; j < len; ++j) ArgStep<D>(a, ai, ToCompute(val[o * len + j]), idx[o * len + j]);
        oval[o] = FromCompute<V>(a);
        oidx[o] = ai;
      }
    });
    return;
  }
  const int64_t n = dims[r - 1], inner_ostride = ostride[r - 1];
  std::vector<int64_t> pos(r - 1, 0);
  int64_t in_off = 0, out_off = 0;
  while (true) {
    if (inner_ostride == 0) {
      C a = ToCompute(oval[out_off]);
      I ai = oidx[out_off];
      for (int64_t j = 0; j < n; ++j) ArgStep<D>(a, ai, ToCompute(val[in_off + j]), idx[in_off + j]);
      oval[out_off] = FromCompute<V>(a);
      oidx[out_off] = ai;
    } else {
      for (int64_t j = 0; j < n; ++j) {
        C a = ToCompute(oval[out_off + j * inner_ostride]);
        ArgStep<D>(a, oidx[out_off + j * inner_ostride], ToCompute(val[in_off + j]), idx[in_off + j]);
        oval[out_off + j * inner_ostride] = FromCompute<V>(a);
      }
    }
    in_off += n;
    int k = r - 2;
    for (; k >= 0; --k) {
      out_off += ostride[k];
      if (++pos[k] < dims[k]) break;
      out_off -= ostride[k] * dims[k];
      pos[k] = 0;
    }
    if (k < 0) return;
  }
}

}  // namespace

// The typed loop for values of `vt` (real or integer) and s32 / s64 indices with a kGt (argmax)
// or kLt (argmin) direction, ties to the lower index and (floats) the NaN test; null otherwise
// (forms JAX does not emit run the reducer's scalar plan).
ArgReduceFn FindArgReduce(const ArgSelect& s, DType vt, DType it) {
  if (s.direction != ComparisonDirection::kGt && s.direction != ComparisonDirection::kLt) return nullptr;
  if (!s.tie_lower_index || (!s.nan_first && IsFloating(vt))) return nullptr;
  const bool gt = s.direction == ComparisonDirection::kGt;
  auto with_value = [&]<class I>() -> ArgReduceFn {
    return VisitDType(
        vt,
        [&](auto tag) -> ArgReduceFn {
          using V = typename decltype(tag)::type;
          if constexpr (Int<V> || HalfLike<V> || Real<V>) {
            return gt ? &ArgReduceLoop<V, I, ComparisonDirection::kGt> : &ArgReduceLoop<V, I, ComparisonDirection::kLt>;
          } else {
            return nullptr;
          }
        },
        [] { return ArgReduceFn{nullptr}; });
  };
  switch (it) {
    case DType::kS32: return with_value.template operator()<int32_t>();
    case DType::kS64: return with_value.template operator()<int64_t>();
    default: return nullptr;
  }
}

}  // namespace xs::kernels
