// The loop templates behind the elementwise kernels: a fast loop (contiguous typed access,
// f16 / bf16 and the narrow types converted to their compute type in chunks so the math
// vectorizes) and a reference loop (one element at a time through memcpy loads and stores).
// Internal to kernels/.
#ifndef XSHARD_KERNELS_ELEMENTWISE_LOOPS_H_
#define XSHARD_KERNELS_ELEMENTWISE_LOOPS_H_

#include <algorithm>
#include <bit>
#include <cstring>
#include <utility>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "xshard/kernels/elementwise.h"
#include "xshard/kernels/numeric.h"
#include "xshard/kernels/scalar_ops.h"

namespace xs::kernels::internal {

inline constexpr int64_t kChunk = 256;
// Results at least this large bypass the cache (streaming stores): a plain store first reads
// the destination line, which costs a third of the bandwidth of a DRAM-bound loop.
inline constexpr int64_t kStreamBytes = kStreamMinBytes;

// Copies `bytes` from an L1-resident buffer to `dst` with non-temporal stores where `dst` is
// 16-byte aligned (plain copy otherwise). Call StreamFence() after the last one.
inline void StreamStore(void* dst, const void* src, int64_t bytes) {
#if defined(__SSE2__)
  if ((reinterpret_cast<uintptr_t>(dst) & 15) == 0) {
    auto* d = reinterpret_cast<__m128i*>(dst);
    const auto* s = reinterpret_cast<const __m128i*>(src);
    const int64_t blocks = bytes / 16;
    for (int64_t i = 0; i < blocks; ++i) _mm_stream_si128(d + i, _mm_loadu_si128(s + i));
    std::memcpy(reinterpret_cast<char*>(dst) + blocks * 16, reinterpret_cast<const char*>(src) + blocks * 16,
                static_cast<size_t>(bytes - blocks * 16));
    return;
  }
#endif
  std::memcpy(dst, src, static_cast<size_t>(bytes));
}
inline void StreamFence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

// Storage type of an op's result: the operand's storage type when the op returns its compute
// type (so f16 math results round back to f16), else the returned type itself (pred, real part).
template <typename S, typename R>
using OutStorage = std::conditional_t<std::is_same_v<R, ComputeT<S>>, S, R>;

template <typename O, typename R>
inline O StoreAs(R r) {
  if constexpr (Widened<O>) {
    return FromCompute<O>(r);
  } else {
    return static_cast<O>(r);
  }
}

// Chunk conversions for the widened loops (f16 / bf16 / narrow types <-> compute type). bf16 <->
// f32 are written branch-free so the compiler vectorizes them (same results as core's
// FloatToBFloat16: nearest even, quiet NaN).
template <typename S>
inline void ToFloatChunk(const S* in, ComputeT<S>* out, int64_t n) {
  if constexpr (std::is_same_v<S, BFloat16>) {
    for (int64_t i = 0; i < n; ++i) out[i] = std::bit_cast<float>(static_cast<uint32_t>(in[i].bits) << 16);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = ToCompute(in[i]);
  }
}
template <typename S>
inline void FromFloatChunk(const ComputeT<S>* in, S* out, int64_t n) {
  if constexpr (std::is_same_v<S, BFloat16>) {
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t x = std::bit_cast<uint32_t>(in[i]);
      const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
      const uint32_t quiet_nan = (x >> 16) | 0x0040u;
      out[i].bits = static_cast<uint16_t>((x & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
    }
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = FromCompute<S>(in[i]);
  }
}

template <typename S>
inline S LoadAt(const std::byte* p, int64_t i) {
  S v;
  std::memcpy(&v, p + i * static_cast<int64_t>(sizeof(S)), sizeof(S));
  return v;
}
template <typename S>
inline void StoreAt(std::byte* p, int64_t i, S v) {
  std::memcpy(p + i * static_cast<int64_t>(sizeof(S)), &v, sizeof(S));
}

template <class Op, class S>
concept UnaryApplies = requires(ComputeT<S> c) { Op::Apply(c); };
template <class Op, class S>
concept BinaryApplies = requires(ComputeT<S> c) { Op::Apply(c, c); };

template <class Op, class S>
using UnaryOut = OutStorage<S, decltype(Op::Apply(std::declval<ComputeT<S>>()))>;
template <class Op, class S>
using BinaryOut =
    OutStorage<S, decltype(Op::Apply(std::declval<ComputeT<S>>(), std::declval<ComputeT<S>>()))>;

template <class Op, class S>
void UnaryFast(const std::byte* in, std::byte* out, int64_t n) {
  using O = UnaryOut<Op, S>;
  const S* a = reinterpret_cast<const S*>(in);
  O* o = reinterpret_cast<O*>(out);
  if constexpr (Widened<S>) {
    using C = ComputeT<S>;
    using R = decltype(Op::Apply(C{}));
    C buf[kChunk] = {};
    R res[kChunk] = {};
    for (int64_t base = 0; base < n; base += kChunk) {
      const int64_t m = std::min(kChunk, n - base);
      ToFloatChunk(a + base, buf, m);
      for (int64_t i = 0; i < m; ++i) res[i] = Op::Apply(buf[i]);
      if constexpr (std::is_same_v<O, S>) {
        FromFloatChunk(res, o + base, m);
      } else {
        for (int64_t i = 0; i < m; ++i) o[base + i] = StoreAs<O>(res[i]);
      }
    }
  } else if (n * static_cast<int64_t>(sizeof(O)) >= kStreamBytes) {
    O tmp[kChunk] = {};
    for (int64_t base = 0; base < n; base += kChunk) {
      const int64_t m = std::min(kChunk, n - base);
      for (int64_t i = 0; i < m; ++i) tmp[i] = StoreAs<O>(Op::Apply(a[base + i]));
      StreamStore(o + base, tmp, m * static_cast<int64_t>(sizeof(O)));
    }
    StreamFence();
  } else {
    for (int64_t i = 0; i < n; ++i) o[i] = StoreAs<O>(Op::Apply(a[i]));
  }
}

template <class Op, class S>
void UnaryRef(const std::byte* in, std::byte* out, int64_t n) {
  using O = UnaryOut<Op, S>;
  for (int64_t i = 0; i < n; ++i) {
    StoreAt<O>(out, i, StoreAs<O>(Op::Apply(ToCompute(LoadAt<S>(in, i)))));
  }
}

template <class Op, class S>
void BinaryFast(const std::byte* in_a, const std::byte* in_b, std::byte* out, int64_t n) {
  using O = BinaryOut<Op, S>;
  const S* a = reinterpret_cast<const S*>(in_a);
  const S* b = reinterpret_cast<const S*>(in_b);
  O* o = reinterpret_cast<O*>(out);
  if constexpr (Widened<S>) {
    using C = ComputeT<S>;
    using R = decltype(Op::Apply(C{}, C{}));
    C fa[kChunk] = {}, fb[kChunk] = {};
    R res[kChunk] = {};
    for (int64_t base = 0; base < n; base += kChunk) {
      const int64_t m = std::min(kChunk, n - base);
      ToFloatChunk(a + base, fa, m);
      ToFloatChunk(b + base, fb, m);
      for (int64_t i = 0; i < m; ++i) res[i] = Op::Apply(fa[i], fb[i]);
      if constexpr (std::is_same_v<O, S>) {
        FromFloatChunk(res, o + base, m);
      } else {
        for (int64_t i = 0; i < m; ++i) o[base + i] = StoreAs<O>(res[i]);
      }
    }
  } else if (n * static_cast<int64_t>(sizeof(O)) >= kStreamBytes) {
    O tmp[kChunk] = {};
    for (int64_t base = 0; base < n; base += kChunk) {
      const int64_t m = std::min(kChunk, n - base);
      for (int64_t i = 0; i < m; ++i) tmp[i] = StoreAs<O>(Op::Apply(a[base + i], b[base + i]));
      StreamStore(o + base, tmp, m * static_cast<int64_t>(sizeof(O)));
    }
    StreamFence();
  } else {
    for (int64_t i = 0; i < n; ++i) o[i] = StoreAs<O>(Op::Apply(a[i], b[i]));
  }
}

template <class Op, class S>
void BinaryRef(const std::byte* a, const std::byte* b, std::byte* out, int64_t n) {
  using O = BinaryOut<Op, S>;
  for (int64_t i = 0; i < n; ++i) {
    StoreAt<O>(out, i,
               StoreAs<O>(Op::Apply(ToCompute(LoadAt<S>(a, i)), ToCompute(LoadAt<S>(b, i)))));
  }
}

// A kernel pair plus the dtype it produces.
struct UnaryEntry {
  UnaryKernel fast = nullptr;
  UnaryKernel ref = nullptr;
  DType out = DType::kF32;
};
struct BinaryEntry {
  BinaryKernel fast = nullptr;
  BinaryKernel ref = nullptr;
  DType out = DType::kF32;
};

// Whether an op's result type fits storage type S: the narrow types keep their own type or give
// pred (is-finite), never a complex or wider one.
template <class S, class O>
inline constexpr bool kResultFits = !NarrowT<S> || std::is_same_v<O, S> || std::is_same_v<O, bool>;

template <class RawOp>
UnaryEntry ResolveUnary(DType t) {
  return VisitDTypeOrNarrow(
      t,
      [](auto tag) -> UnaryEntry {
        using S = typename decltype(tag)::type;
        using Op = ops::ForStorage<RawOp, S>;
        if constexpr (UnaryApplies<Op, S>) {
          if constexpr (kResultFits<S, UnaryOut<Op, S>>) {
            return {&UnaryFast<Op, S>, &UnaryRef<Op, S>, DTypeOf<UnaryOut<Op, S>>};
          }
        }
        return {};
      },
      [] { return UnaryEntry{}; });
}

template <class RawOp>
BinaryEntry ResolveBinary(DType t) {
  return VisitDTypeOrNarrow(
      t,
      [](auto tag) -> BinaryEntry {
        using S = typename decltype(tag)::type;
        using Op = ops::ForStorage<RawOp, S>;
        if constexpr (BinaryApplies<Op, S>) {
          if constexpr (kResultFits<S, BinaryOut<Op, S>>) {
            return {&BinaryFast<Op, S>, &BinaryRef<Op, S>, DTypeOf<BinaryOut<Op, S>>};
          }
        }
        return {};
      },
      [] { return BinaryEntry{}; });
}

// Table lookups shared by the fast finders and the reference functions (elementwise.cc,
// compare_convert.cc). Errors name the op and dtype.
StatusOr<UnaryEntry> LookupUnary(Opcode op, DType operand);
StatusOr<BinaryEntry> LookupBinary(Opcode op, DType operand);
StatusOr<BinaryEntry> LookupCompare(ComparisonDirection direction, ComparisonType type,
                                    DType operand);
StatusOr<UnaryEntry> LookupConvert(DType from, DType to);

}  // namespace xs::kernels::internal

#endif  // XSHARD_KERNELS_ELEMENTWISE_LOOPS_H_
