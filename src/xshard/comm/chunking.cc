// Piece geometry, chunk copies and reductions, box copies, aligned scratch buffers.
#include "xshard/comm/chunking.h"
#include "xshard/core/allocation_failure.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "xshard/comm/reduction.h"

namespace xs {
namespace {

std::byte* RunPtr(MutableChunkRef r, const Chunking& ch, int64_t c, int64_t o) {
  return r.data + (r.compact ? o * ch.Len(c) : o * ch.stride + ch.Start(c));
}
const std::byte* RunPtr(ChunkRef r, const Chunking& ch, int64_t c, int64_t o) {
  return r.data + (r.compact ? o * ch.Len(c) : o * ch.stride + ch.Start(c));
}

}  // namespace

void StreamCopy(std::byte* dst, const std::byte* src, int64_t n) {
#if defined(__SSE2__)
  if (n < 64) {
    std::memcpy(dst, src, static_cast<size_t>(n));
    return;
  }
  const int64_t head = static_cast<int64_t>((16 - reinterpret_cast<uintptr_t>(dst) % 16) % 16);
  std::memcpy(dst, src, static_cast<size_t>(head));
  dst += head;
  src += head;
  n -= head;
  const int64_t blocks = n / 64;
  for (int64_t i = 0; i < blocks; ++i) {
    const __m128i* s = reinterpret_cast<const __m128i*>(src + i * 64);
    __m128i* d = reinterpret_cast<__m128i*>(dst + i * 64);
    const __m128i a = _mm_loadu_si128(s), b = _mm_loadu_si128(s + 1);
    const __m128i c = _mm_loadu_si128(s + 2), e = _mm_loadu_si128(s + 3);
    _mm_stream_si128(d, a);
    _mm_stream_si128(d + 1, b);
    _mm_stream_si128(d + 2, c);
    _mm_stream_si128(d + 3, e);
  }
  std::memcpy(dst + blocks * 64, src + blocks * 64, static_cast<size_t>(n - blocks * 64));
  _mm_sfence();
#else
  std::memcpy(dst, src, static_cast<size_t>(n));
#endif
}

void CopyBytes(std::byte* dst, const std::byte* src, int64_t n) {
  if (n >= kStreamThreshold) {
    StreamCopy(dst, src, n);
  } else {
    std::memcpy(dst, src, static_cast<size_t>(n));
  }
}

Chunking Chunking::AlongDim(std::span<const int64_t> dims, int dim, int64_t n,
                            int64_t elem_size) {
  Chunking ch;
  int64_t inner = elem_size;
  for (size_t d = dim + 1; d < dims.size(); ++d) inner *= dims[d];
  for (int d = 0; d < dim; ++d) ch.outer *= dims[d];
  ch.unit = inner;
  ch.extent = dims[dim];
  ch.stride = dims[dim] * inner;
  ch.per = n > 0 ? dims[dim] / n : 0;
  return ch;
}

Chunking Chunking::Flat(int64_t count, int64_t n, int64_t elem_size) {
  Chunking ch;
  ch.outer = 1;
  ch.unit = elem_size;
  ch.extent = count;
  ch.stride = count * elem_size;
  ch.per = n > 0 ? (count + n - 1) / n : 0;
  return ch;
}

int64_t Chunking::Start(int64_t c) const { return std::min(c * per, extent) * unit; }

int64_t Chunking::Len(int64_t c) const {
  return (std::min((c + 1) * per, extent) - std::min(c * per, extent)) * unit;
}

void CopyChunk(const Chunking& ch, int64_t c, MutableChunkRef dst, ChunkRef src) {
  const int64_t len = ch.Len(c);
  if (len == 0) return;
  if (dst.compact && src.compact) {
    CopyBytes(dst.data, src.data, ch.outer * len);
    return;
  }
  for (int64_t o = 0; o < ch.outer; ++o) {
    CopyBytes(RunPtr(dst, ch, c, o), RunPtr(src, ch, c, o), len);
  }
}

void CombineChunk(const Chunking& ch, int64_t c, ReductionKind reduction, DType dtype,
                  MutableChunkRef dst, ChunkRef a, ChunkRef b) {
  const int64_t len = ch.Len(c);
  if (len == 0) return;
  const int64_t es = DTypeSize(dtype);
  for (int64_t o = 0; o < ch.outer; ++o) {
    Combine(reduction, dtype, RunPtr(dst, ch, c, o), RunPtr(a, ch, c, o), RunPtr(b, ch, c, o),
            len / es);
  }
}

void ReduceChunk(const Chunking& ch, int64_t c, ReductionKind reduction, DType dtype,
                 MutableChunkRef dst, std::span<const ChunkRef> srcs,
                 std::vector<const std::byte*>& pointers) {
  const int64_t len = ch.Len(c);
  if (len == 0) return;
  const int64_t es = DTypeSize(dtype);
  pointers.resize(srcs.size());
  for (int64_t o = 0; o < ch.outer; ++o) {
    for (size_t j = 0; j < srcs.size(); ++j) pointers[j] = RunPtr(srcs[j], ch, c, o);
    ReduceMany(reduction, dtype, RunPtr(dst, ch, c, o), pointers, len / es);
  }
}

void CopyBox(const std::byte* src, std::span<const int64_t> src_dims,
             std::span<const int64_t> src_start, std::byte* dst,
             std::span<const int64_t> dst_dims, std::span<const int64_t> dst_start,
             std::span<const int64_t> box, int64_t elem_size) {
  const int rank = static_cast<int>(box.size());
  for (int64_t b : box) {
    if (b == 0) return;
  }
  // Merge trailing dims that the box covers completely on both sides into one contiguous run.
  int64_t run = elem_size;
  int first = rank;  // dims [first, rank) form the run
  while (first > 0) {
    const int d = first - 1;
    run *= box[d];
    --first;
    if (box[d] != src_dims[d] || box[d] != dst_dims[d]) break;
  }
  std::vector<int64_t> src_stride(rank + 1, elem_size), dst_stride(rank + 1, elem_size);
  for (int d = rank - 1; d >= 0; --d) {
    src_stride[d] = src_stride[d + 1] * (d + 1 < rank ? src_dims[d + 1] : 1);
    dst_stride[d] = dst_stride[d + 1] * (d + 1 < rank ? dst_dims[d + 1] : 1);
  }
  // src_stride[d] is now the byte stride of dim d.
  int64_t src_off = 0, dst_off = 0;
  for (int d = 0; d < rank; ++d) {
    src_off += src_start[d] * src_stride[d];
    dst_off += dst_start[d] * dst_stride[d];
  }
  if (first == 0) {
    std::memcpy(dst + dst_off, src + src_off, static_cast<size_t>(run));
    return;
  }
  // Odometer over dims [0, first).
  std::vector<int64_t> idx(first, 0);
  for (;;) {
    int64_t so = src_off, doff = dst_off;
    for (int d = 0; d < first; ++d) {
      so += idx[d] * src_stride[d];
      doff += idx[d] * dst_stride[d];
    }
    std::memcpy(dst + doff, src + so, static_cast<size_t>(run));
    int d = first - 1;
    while (d >= 0 && ++idx[d] == box[d]) idx[d--] = 0;
    if (d < 0) break;
  }
}

AlignedBytes::~AlignedBytes() { Free(); }

void AlignedBytes::Free() {
  std::free(data_);
  data_ = nullptr;
  capacity_ = 0;
}

void AlignedBytes::Reserve(int64_t bytes) {
  if (bytes <= capacity_) return;
  Free();
  const int64_t rounded = std::max<int64_t>(64, (bytes + 63) / 64 * 64);
  data_ = static_cast<std::byte*>(std::aligned_alloc(64, static_cast<size_t>(rounded)));
  if (data_ == nullptr) throw AllocationFailure(rounded, "scratch");
  capacity_ = rounded;
}

}  // namespace xs
