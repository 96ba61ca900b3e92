// Data-movement kernels on the strided box copy (dims merged where both sides are contiguous, so
// large row copies become one memcpy).
#include "xshard/kernels/shape_ops.h"

#include <algorithm>
#include <cstring>

#include "xshard/kernels/numeric.h"
#include "xshard/kernels/transpose_simd.h"

namespace xs::kernels {
namespace {

struct Bytes16 {
  uint64_t lo, hi;
};

template <typename E>
void InnerCopy(const std::byte* src, std::byte* dst, int64_t n, int64_t ss, int64_t ds) {
  const E* s = reinterpret_cast<const E*>(src);
  E* d = reinterpret_cast<E*>(dst);
  if (ss == 1 && ds == 1) {
    std::memmove(d, s, static_cast<size_t>(n) * sizeof(E));
    return;
  }
  for (int64_t i = 0; i < n; ++i) d[i * ds] = s[i * ss];
}

using InnerCopyFn = void (*)(const std::byte*, std::byte*, int64_t, int64_t, int64_t);

// Transposing copy of an ni x nj box: dst[j * dj + i] = src[i * si + j]. Tiles of kTile x kTile
// keep the kTile source lines a tile reads in L1 while they are used kTile times, instead of one
// cache miss per element of a strided column walk. Measured on 2048^2 f32 (thread CPU time):
// 64-wide tiles 8.7 ms, 32-wide 11.4, 16-wide 11.9, writing strided instead of reading 15.0,
// the untiled walk 37; tiles stay at 16 KiB for wider elements.
template <typename E>
void TransposeTile(const std::byte* src, std::byte* dst, int64_t ni, int64_t si, int64_t nj,
                   int64_t dj) {
  constexpr int64_t kTile = sizeof(E) >= 16 ? 16 : (sizeof(E) >= 8 ? 32 : 64);
  const E* s = reinterpret_cast<const E*>(src);
  E* d = reinterpret_cast<E*>(dst);
  for (int64_t jb = 0; jb < nj; jb += kTile) {
    const int64_t je = std::min(jb + kTile, nj);
    for (int64_t ib = 0; ib < ni; ib += kTile) {
      const int64_t ie = std::min(ib + kTile, ni);
      for (int64_t j = jb; j < je; ++j) {
        E* o = d + j * dj;
        const E* in = s + j;
        for (int64_t i = ib; i < ie; ++i) o[i] = in[i * si];
      }
    }
  }
}

using TransposeTileFn = void (*)(const std::byte*, std::byte*, int64_t, int64_t, int64_t, int64_t);

TransposeTileFn TransposeTileFor(int64_t elem_size) {
  switch (elem_size) {
    case 1: return &TransposeTile<uint8_t>;
    case 2: return &TransposeTile<uint16_t>;
    case 4: return &TransposeTile32;  // SIMD 4 x 4 blocks (transpose_simd.cc)
    case 8: return &TransposeTile<uint64_t>;
    case 16: return &TransposeTile<Bytes16>;
    default: return nullptr;
  }
}

// Walks every index of `dims` except `skip_a` and `skip_b`, calling f(src, dst) at each.
template <typename F>
void ForEachOuter(const std::byte* src, std::byte* dst, int64_t elem_size,
                  const std::vector<int64_t>& dims, const std::vector<int64_t>& ss,
                  const std::vector<int64_t>& ds, size_t skip_a, size_t skip_b, F&& f) {
  std::vector<size_t> outer;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i != skip_a && i != skip_b) outer.push_back(i);
  }
  std::vector<int64_t> idx(outer.size(), 0);
  while (true) {
    f(src, dst);
    size_t k = outer.size();
    for (; k > 0; --k) {
      const size_t d = outer[k - 1];
      src += ss[d] * elem_size;
      dst += ds[d] * elem_size;
      if (++idx[k - 1] < dims[d]) break;
      src -= ss[d] * elem_size * dims[d];
      dst -= ds[d] * elem_size * dims[d];
      idx[k - 1] = 0;
    }
    if (k == 0) return;
  }
}

InnerCopyFn InnerCopyFor(int64_t elem_size) {
  switch (elem_size) {
    case 1: return &InnerCopy<uint8_t>;
    case 2: return &InnerCopy<uint16_t>;
    case 4: return &InnerCopy<uint32_t>;
    case 8: return &InnerCopy<uint64_t>;
    case 16: return &InnerCopy<Bytes16>;
    default: return nullptr;
  }
}

std::vector<int64_t> ShapeStrides(const std::vector<int64_t>& dims) { return RowMajorStrides(dims); }

// Fills `n` elements of `elem_size` bytes at dst with the element at `value`.
void FillElements(std::byte* dst, const std::byte* value, int64_t elem_size, int64_t n) {
  if (n <= 0) return;
  bool all_zero = true;
  for (int64_t i = 0; i < elem_size; ++i) all_zero &= value[i] == std::byte{0};
  if (all_zero) {
    std::memset(dst, 0, static_cast<size_t>(n * elem_size));
    return;
  }
  std::memcpy(dst, value, static_cast<size_t>(elem_size));
  // Doubling copies: log2(n) memcpy calls.
  int64_t filled = 1;
  while (filled < n) {
    const int64_t m = std::min(filled, n - filled);
    std::memcpy(dst + filled * elem_size, dst, static_cast<size_t>(m * elem_size));
    filled += m;
  }
}

}  // namespace

void StridedCopy(const std::byte* src, std::byte* dst, int64_t elem_size,
                 const std::vector<int64_t>& dims, const std::vector<int64_t>& src_strides,
                 const std::vector<int64_t>& dst_strides) {
  for (int64_t d : dims) {
    if (d == 0) return;
  }
  InnerCopyFn inner = InnerCopyFor(elem_size);
  XS_CHECK(inner != nullptr, "StridedCopy: element size ", elem_size);
  // Drop size-1 dims and merge a dim into the next inner one when both sides are contiguous.
  std::vector<int64_t> d, ss, ds;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 1) continue;
    if (!d.empty() && ss.back() == src_strides[i] * dims[i] && ds.back() == dst_strides[i] * dims[i]) {
      d.back() *= dims[i];
      ss.back() = src_strides[i];
      ds.back() = dst_strides[i];
      continue;
    }
    d.push_back(dims[i]);
    ss.push_back(src_strides[i]);
    ds.push_back(dst_strides[i]);
  }
  if (d.empty()) {
    std::memcpy(dst, src, static_cast<size_t>(elem_size));
    return;
  }
  const int r = static_cast<int>(d.size());
  // A transposing copy (the destination's inner dim reads the source with a stride while another
  // dim is contiguous in the source): tiled, see TransposeTile.
  if (r >= 2 && ds[r - 1] == 1 && ss[r - 1] != 1 && d[r - 1] >= 4) {
    for (int j = r - 2; j >= 0; --j) {
      if (ss[j] != 1 || d[j] < 4) continue;
      TransposeTileFn tile = TransposeTileFor(elem_size);
      ForEachOuter(src, dst, elem_size, d, ss, ds, static_cast<size_t>(j), static_cast<size_t>(r - 1),
                   [&](const std::byte* s, std::byte* o) { tile(s, o, d[r - 1], ss[r - 1], d[j], ds[j]); });
      return;
    }
  }
  std::vector<int64_t> idx(r, 0);
  const std::byte* s = src;
  std::byte* o = dst;
  while (true) {
    inner(s, o, d[r - 1], ss[r - 1], ds[r - 1]);
    int k = r - 2;
    for (; k >= 0; --k) {
      s += ss[k] * elem_size;
      o += ds[k] * elem_size;
      if (++idx[k] < d[k]) break;
      s -= ss[k] * elem_size * d[k];
      o -= ds[k] * elem_size * d[k];
      idx[k] = 0;
    }
    if (k < 0) return;
  }
}

// The result array: a view of `into` when it has the result's dtype and dims, else a new one.
static Array ResultArray(Shape shape, Array* into) {
  if (into != nullptr && into->dtype() == shape.dtype() && into->dims() == shape.dims()) {
    return Array::View(std::move(shape), into->data());
  }
  return Array(std::move(shape));
}

void TransposeInto(const std::byte* src, std::byte* dst, int64_t elem_size,
                   const std::vector<int64_t>& dims, const std::vector<int64_t>& permutation) {
  const std::vector<int64_t> in_strides = ShapeStrides(dims);
  std::vector<int64_t> out_dims, src_strides;
  for (int64_t p : permutation) {
    out_dims.push_back(dims[p]);
    src_strides.push_back(in_strides[p]);
  }
  StridedCopy(src, dst, elem_size, out_dims, src_strides, ShapeStrides(out_dims));
}

Array Transpose(const Array& in, const std::vector<int64_t>& permutation, Array* into) {
  const std::vector<int64_t> in_strides = ShapeStrides(in.dims());
  std::vector<int64_t> out_dims, src_strides;
  for (int64_t p : permutation) {
    out_dims.push_back(in.dims()[p]);
    src_strides.push_back(in_strides[p]);
  }
  Array out = ResultArray(Shape(in.dtype(), out_dims), into);
  StridedCopy(in.data(), out.data(), DTypeSize(in.dtype()), out_dims, src_strides, ShapeStrides(out_dims));
  return out;
}

Array Broadcast(const Array& in, const std::vector<int64_t>& result_dims,
                const std::vector<int64_t>& dimensions, Array* into) {
  const std::vector<int64_t> in_strides = ShapeStrides(in.dims());
  std::vector<int64_t> src_strides(result_dims.size(), 0);
  for (size_t i = 0; i < dimensions.size(); ++i) src_strides[dimensions[i]] = in_strides[i];
  Array out = ResultArray(Shape(in.dtype(), result_dims), into);
  if (in.num_elements() == 1) {
    FillElements(out.data(), in.data(), DTypeSize(in.dtype()), out.num_elements());
    return out;
  }
  StridedCopy(in.data(), out.data(), DTypeSize(in.dtype()), result_dims, src_strides,
              ShapeStrides(result_dims));
  return out;
}

Array Slice(const Array& in, const std::vector<SliceDim>& slice, Array* into) {
  const std::vector<int64_t> in_strides = ShapeStrides(in.dims());
  std::vector<int64_t> out_dims, src_strides;
  int64_t offset = 0;
  for (size_t i = 0; i < slice.size(); ++i) {
    const SliceDim& s = slice[i];
    out_dims.push_back(std::max<int64_t>(0, (s.limit - s.start + s.stride - 1) / s.stride));
    src_strides.push_back(in_strides[i] * s.stride);
    offset += s.start * in_strides[i];
  }
  Array out = ResultArray(Shape(in.dtype(), out_dims), into);
  const int64_t es = DTypeSize(in.dtype());
  if (out.num_elements() > 0) {
    StridedCopy(in.data() + offset * es, out.data(), es, out_dims, src_strides, ShapeStrides(out_dims));
  }
  return out;
}

Array Reverse(const Array& in, const std::vector<int64_t>& dimensions, Array* into) {
  std::vector<int64_t> src_strides = ShapeStrides(in.dims());
  int64_t offset = 0;
  for (int64_t d : dimensions) {
    if (in.dims()[d] == 0) continue;
    offset += (in.dims()[d] - 1) * src_strides[d];
    src_strides[d] = -src_strides[d];
  }
  Array out = ResultArray(Shape(in.dtype(), in.dims()), into);
  const int64_t es = DTypeSize(in.dtype());
  if (out.num_elements() > 0) {
    StridedCopy(in.data() + offset * es, out.data(), es, in.dims(), src_strides, ShapeStrides(in.dims()));
  }
  return out;
}

Array Concatenate(std::span<const Array* const> inputs, int64_t dimension, Array* into) {
  std::vector<int64_t> out_dims = inputs[0]->dims();
  out_dims[dimension] = 0;
  for (const Array* a : inputs) out_dims[dimension] += a->dims()[dimension];
  Array out = ResultArray(Shape(inputs[0]->dtype(), out_dims), into);
  const std::vector<int64_t> out_strides = ShapeStrides(out_dims);
  const int64_t es = DTypeSize(out.dtype());
  int64_t at = 0;
  for (const Array* a : inputs) {
    if (a->num_elements() > 0) {
      StridedCopy(a->data(), out.data() + at * out_strides[dimension] * es, es, a->dims(),
                  ShapeStrides(a->dims()), out_strides);
    }
    at += a->dims()[dimension];
  }
  return out;
}

Array Pad(const Array& in, const Array& value, const std::vector<PaddingDim>& padding, Array* into) {
  const int rank = in.rank();
  std::vector<int64_t> out_dims(rank);
  for (int i = 0; i < rank; ++i) {
    const PaddingDim& p = padding[i];
    const int64_t n = in.dims()[i];
    out_dims[i] = std::max<int64_t>(0, p.low + p.high + n + std::max<int64_t>(0, n - 1) * p.interior);
  }
  Array out = ResultArray(Shape(in.dtype(), out_dims), into);
  const int64_t es = DTypeSize(in.dtype());
  FillElements(out.data(), value.data(), es, out.num_elements());
  const std::vector<int64_t> in_strides = ShapeStrides(in.dims()), out_strides = ShapeStrides(out_dims);
  std::vector<int64_t> count(rank), dst_strides(rank);
  int64_t src_off = 0, dst_off = 0;
  for (int i = 0; i < rank; ++i) {
    const PaddingDim& p = padding[i];
    const int64_t step = p.interior + 1;
    // Input index j lands at low + j * step; keep those inside [0, out_dim).
    int64_t first = p.low >= 0 ? 0 : (-p.low + step - 1) / step;
    int64_t last = in.dims()[i] - 1;  // inclusive
    if (out_dims[i] == 0) {
      last = first - 1;
    } else {
      const int64_t max_pos = out_dims[i] - 1 - p.low;  // j * step <= max_pos
      last = std::min(last, max_pos < 0 ? -1 : max_pos / step);
    }
    count[i] = std::max<int64_t>(0, last - first + 1);
    src_off += first * in_strides[i];
    dst_off += (p.low + first * step) * out_strides[i];
    dst_strides[i] = out_strides[i] * step;
  }
  if (Product(count) > 0) {
    StridedCopy(in.data() + src_off * es, out.data() + dst_off * es, es, count,
                in_strides, dst_strides);
  }
  return out;
}

StatusOr<Array> Iota(DType dtype, const std::vector<int64_t>& dims, int64_t dimension, Array* into) {
  Array out = ResultArray(Shape(dtype, dims), into);
  const int64_t n = out.num_elements();
  if (n == 0) return out;
  const int64_t inner = Product(std::vector<int64_t>(dims.begin() + dimension + 1, dims.end()));
  const int64_t size = dims[dimension];
  Status st = VisitDTypeOrNarrow(
      dtype,
      [&](auto tag) -> Status {
        using S = typename decltype(tag)::type;
        // Runs of `inner` equal values, counting up to `size` and starting over: no division per
        // element (a u32[4194304] iota took 19 ms with two, as old jax.random lowers it).
        S* o = reinterpret_cast<S*>(out.data());
        const int64_t outer = n / (inner * size);
        for (int64_t a = 0; a < outer; ++a) {
          if (inner == 1) {
            for (int64_t j = 0; j < size; ++j) o[j] = ConvertScalar<S>(j);
            o += size;
            continue;
          }
          for (int64_t j = 0; j < size; ++j) {
            std::fill_n(o, inner, ConvertScalar<S>(j));
            o += inner;
          }
        }
        return OkStatus();
      },
      [&] { return UnsupportedDType("iota", dtype); });
  XS_RETURN_IF_ERROR(st);
  return out;
}

int64_t ScalarAsInt64(const Array& a) {
  if (a.num_elements() == 0) return 0;
  return VisitDType(
      a.dtype(),
      [&](auto tag) -> int64_t {
        using S = typename decltype(tag)::type;
        if constexpr (Int<S> || Pred<S>) {
          S v;
          std::memcpy(&v, a.data(), sizeof(S));
          return static_cast<int64_t>(v);
        } else {
          return 0;
        }
      },
      [] { return int64_t{0}; });
}

std::vector<int64_t> ClampedStarts(std::span<const Array* const> starts,
                                   const std::vector<int64_t>& operand_dims,
                                   const std::vector<int64_t>& sizes) {
  std::vector<int64_t> out(operand_dims.size(), 0);
  // The legacy form passes all starts as one rank-1 array.
  const bool vector_form = starts.size() == 1 && starts[0]->rank() == 1 &&
                           starts[0]->num_elements() == static_cast<int64_t>(operand_dims.size());
  for (size_t i = 0; i < operand_dims.size(); ++i) {
    int64_t s = 0;
    if (vector_form) {
      s = static_cast<int64_t>(starts[0]->GetDouble(static_cast<int64_t>(i)));
    } else if (i < starts.size()) {
      s = ScalarAsInt64(*starts[i]);
    }
    out[i] = std::min(std::max<int64_t>(0, s), operand_dims[i] - sizes[i]);
  }
  return out;
}

Array DynamicSlice(const Array& in, std::span<const Array* const> starts,
                   const std::vector<int64_t>& sizes, Array* into) {
  const std::vector<int64_t> begin = ClampedStarts(starts, in.dims(), sizes);
  const std::vector<int64_t> in_strides = ShapeStrides(in.dims());
  Array out = ResultArray(Shape(in.dtype(), sizes), into);
  const int64_t es = DTypeSize(in.dtype());
  if (out.num_elements() > 0) {
    StridedCopy(in.data() + LinearIndex(begin.data(), in_strides) * es, out.data(), es, sizes,
                in_strides, ShapeStrides(sizes));
  }
  return out;
}

void DynamicUpdateSliceInPlace(Array& operand, const Array& update,
                               std::span<const Array* const> starts) {
  const std::vector<int64_t> begin = ClampedStarts(starts, operand.dims(), update.dims());
  const std::vector<int64_t> strides = ShapeStrides(operand.dims());
  const int64_t es = DTypeSize(operand.dtype());
  if (update.num_elements() > 0) {
    StridedCopy(update.data(), operand.data() + LinearIndex(begin.data(), strides) * es, es,
                update.dims(), ShapeStrides(update.dims()), strides);
  }
}

Array TransposeReference(const Array& in, const std::vector<int64_t>& permutation) {
  std::vector<int64_t> out_dims;
  for (int64_t p : permutation) out_dims.push_back(in.dims()[p]);
  Array out(Shape(in.dtype(), out_dims));
  const int64_t es = DTypeSize(in.dtype());
  const std::vector<int64_t> in_strides = ShapeStrides(in.dims());
  std::vector<int64_t> idx(out_dims.size(), 0), src(in.rank(), 0);
  for (int64_t linear = 0; linear < out.num_elements(); ++linear) {
    for (size_t k = 0; k < permutation.size(); ++k) src[permutation[k]] = idx[k];
    std::memcpy(out.data() + linear * es, in.data() + LinearIndex(src.data(), in_strides) * es,
                static_cast<size_t>(es));
    NextIndex(idx, out_dims);
  }
  return out;
}

Array PadReference(const Array& in, const Array& value, const std::vector<PaddingDim>& padding) {
  const int rank = in.rank();
  std::vector<int64_t> out_dims(rank);
  for (int i = 0; i < rank; ++i) {
    const int64_t n = in.dims()[i];
    out_dims[i] = std::max<int64_t>(
        0, padding[i].low + padding[i].high + n + std::max<int64_t>(0, n - 1) * padding[i].interior);
  }
  Array out(Shape(in.dtype(), out_dims));
  const int64_t es = DTypeSize(in.dtype());
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    std::memcpy(out.data() + i * es, value.data(), static_cast<size_t>(es));
  }
  const std::vector<int64_t> out_strides = ShapeStrides(out_dims);
  std::vector<int64_t> idx(rank, 0), target(rank);
  for (int64_t linear = 0; linear < in.num_elements(); ++linear) {
    bool inside = true;
    for (int i = 0; i < rank; ++i) {
      target[i] = padding[i].low + idx[i] * (padding[i].interior + 1);
      inside &= target[i] >= 0 && target[i] < out_dims[i];
    }
    if (inside) {
      std::memcpy(out.data() + LinearIndex(target.data(), out_strides) * es,
                  in.data() + linear * es, static_cast<size_t>(es));
    }
    NextIndex(idx, in.dims());
  }
  return out;
}

}  // namespace xs::kernels
