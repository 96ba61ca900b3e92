// Typed reduction kernels behind a [dtype][reducer] table of function pointers.
#include "xshard/comm/reduction.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <complex>
#include <cstring>
#include <type_traits>
#include <vector>

#include "xshard/ir/opcode.h"
#include "xshard/kernels/elementwise.h"

namespace xs {
namespace {

using CombineFn = void (*)(std::byte*, const std::byte*, const std::byte*, int64_t);

constexpr int kNumDTypes = 0
#define XS_COUNT_DTYPE(e, name, bytes, descr) +1
    XS_DTYPE_LIST(XS_COUNT_DTYPE)
#undef XS_COUNT_DTYPE
    ;
constexpr int kNumReductions = 6;

// bf16 <-> f32 inline (the hot path of bf16 reductions); same rounding as core's FloatToBFloat16.
inline float Bf16ToF32(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }
inline uint16_t F32ToBf16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

template <typename T>
T NanMax(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a)) return a;
    if (std::isnan(b)) return b;
  }
  return a < b ? b : a;
}
template <typename T>
T NanMin(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a)) return a;
    if (std::isnan(b)) return b;
  }
  return b < a ? b : a;
}

// Applies `op` in the compute type C to storage type S.
template <typename S, typename C, typename Load, typename Store, typename Op>
void Apply(std::byte* dst, const std::byte* a, const std::byte* b, int64_t n, Load load,
           Store store, Op op) {
  for (int64_t i = 0; i < n; ++i) {
    S x, y;
    std::memcpy(&x, a + i * sizeof(S), sizeof(S));
    std::memcpy(&y, b + i * sizeof(S), sizeof(S));
    const S r = store(op(static_cast<C>(load(x)), static_cast<C>(load(y))));
    std::memcpy(dst + i * sizeof(S), &r, sizeof(S));
  }
}

// Integers add and multiply through their unsigned type so that overflow wraps (no UB).
template <typename T, bool = std::is_integral_v<T>>
struct WrapType {
  using type = T;
};
template <typename T>
struct WrapType<T, true> {
  using type = std::make_unsigned_t<T>;
};

// Plain arithmetic types: T is both storage and compute type (integers via unsigned to wrap).
template <typename T>
void Arith(ReductionKind kind, std::byte* dst, const std::byte* a, const std::byte* b,
           int64_t n) {
  T* d = reinterpret_cast<T*>(dst);
  const T* x = reinterpret_cast<const T*>(a);
  const T* y = reinterpret_cast<const T*>(b);
  using U = typename WrapType<T>::type;
  switch (kind) {
    case ReductionKind::kSum:
      for (int64_t i = 0; i < n; ++i) {
        d[i] = static_cast<T>(static_cast<U>(x[i]) + static_cast<U>(y[i]));
      }
      break;
    case ReductionKind::kProduct:
      for (int64_t i = 0; i < n; ++i) {
        d[i] = static_cast<T>(static_cast<U>(x[i]) * static_cast<U>(y[i]));
      }
      break;
    case ReductionKind::kMin:
      for (int64_t i = 0; i < n; ++i) d[i] = NanMin(x[i], y[i]);
      break;
    case ReductionKind::kMax:
      for (int64_t i = 0; i < n; ++i) d[i] = NanMax(x[i], y[i]);
      break;
    case ReductionKind::kAnd:
      if constexpr (std::is_integral_v<T>) {
        for (int64_t i = 0; i < n; ++i) d[i] = static_cast<T>(x[i] & y[i]);
      }
      break;
    case ReductionKind::kOr:
      if constexpr (std::is_integral_v<T>) {
        for (int64_t i = 0; i < n; ++i) d[i] = static_cast<T>(x[i] | y[i]);
      }
      break;
  }
}

template <typename T, ReductionKind K>
void ArithFn(std::byte* dst, const std::byte* a, const std::byte* b, int64_t n) {
  Arith<T>(K, dst, a, b, n);
}

template <typename T, ReductionKind K>
void ComplexFn(std::byte* dst, const std::byte* a, const std::byte* b, int64_t n) {
  T* d = reinterpret_cast<T*>(dst);
  const T* x = reinterpret_cast<const T*>(a);
  const T* y = reinterpret_cast<const T*>(b);
  for (int64_t i = 0; i < n; ++i) d[i] = K == ReductionKind::kSum ? x[i] + y[i] : x[i] * y[i];
}

template <ReductionKind K>
float FloatOp(float x, float y) {
  switch (K) {
    case ReductionKind::kSum: return x + y;
    case ReductionKind::kProduct: return x * y;
    case ReductionKind::kMin: return NanMin(x, y);
    default: return NanMax(x, y);
  }
}

template <ReductionKind K>
void Bf16Fn(std::byte* dst, const std::byte* a, const std::byte* b, int64_t n) {
  Apply<uint16_t, float>(dst, a, b, n, Bf16ToF32, F32ToBf16, FloatOp<K>);
}

template <ReductionKind K>
void HalfFn(std::byte* dst, const std::byte* a, const std::byte* b, int64_t n) {
  Apply<uint16_t, float>(
      dst, a, b, n, [](uint16_t h) { return HalfToFloat(Half{h}); },
      [](float f) { return FloatToHalf(f).bits; }, FloatOp<K>);
}

// pred: stored as 0 / 1 bytes; sum and max are or, product and min are and.
template <bool kOr>
void PredFn(std::byte* dst, const std::byte* a, const std::byte* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const bool x = a[i] != std::byte{0}, y = b[i] != std::byte{0};
    dst[i] = std::byte{static_cast<uint8_t>(kOr ? (x || y) : (x && y))};
  }
}

template <typename T>
constexpr std::array<CombineFn, kNumReductions> IntRow() {
  return {ArithFn<T, ReductionKind::kSum>, ArithFn<T, ReductionKind::kProduct>,
          ArithFn<T, ReductionKind::kMin>, ArithFn<T, ReductionKind::kMax>,
          ArithFn<T, ReductionKind::kAnd>, ArithFn<T, ReductionKind::kOr>};
}
template <typename T>
constexpr std::array<CombineFn, kNumReductions> FloatRow() {
  return {ArithFn<T, ReductionKind::kSum>, ArithFn<T, ReductionKind::kProduct>,
          ArithFn<T, ReductionKind::kMin>, ArithFn<T, ReductionKind::kMax>, nullptr, nullptr};
}
template <typename T>
constexpr std::array<CombineFn, kNumReductions> ComplexRow() {
  return {ComplexFn<T, ReductionKind::kSum>, ComplexFn<T, ReductionKind::kProduct>, nullptr,
          nullptr, nullptr, nullptr};
}

using Table = std::array<std::array<CombineFn, kNumReductions>, kNumDTypes>;

constexpr Table MakeTable() {
  Table t{};
  auto set = [&t](DType d, std::array<CombineFn, kNumReductions> row) {
    t[static_cast<int>(d)] = row;
  };
  set(DType::kPred, {PredFn<true>, PredFn<false>, PredFn<false>, PredFn<true>, PredFn<false>,
                     PredFn<true>});
  set(DType::kS8, IntRow<int8_t>());
  set(DType::kS16, IntRow<int16_t>());
  set(DType::kS32, IntRow<int32_t>());
  set(DType::kS64, IntRow<int64_t>());
  set(DType::kU8, IntRow<uint8_t>());
  set(DType::kU16, IntRow<uint16_t>());
  set(DType::kU32, IntRow<uint32_t>());
  set(DType::kU64, IntRow<uint64_t>());
  set(DType::kF16, {HalfFn<ReductionKind::kSum>, HalfFn<ReductionKind::kProduct>,
                    HalfFn<ReductionKind::kMin>, HalfFn<ReductionKind::kMax>, nullptr, nullptr});
  set(DType::kBF16, {Bf16Fn<ReductionKind::kSum>, Bf16Fn<ReductionKind::kProduct>,
                     Bf16Fn<ReductionKind::kMin>, Bf16Fn<ReductionKind::kMax>, nullptr, nullptr});
  set(DType::kF32, FloatRow<float>());
  set(DType::kF64, FloatRow<double>());
  set(DType::kC64, ComplexRow<std::complex<float>>());
  set(DType::kC128, ComplexRow<std::complex<double>>());
  return t;
}

constexpr Table kTable = MakeTable();

CombineFn Lookup(ReductionKind reduction, DType dtype) {
  return kTable[static_cast<int>(dtype)][static_cast<int>(reduction)];
}

}  // namespace

namespace {

// f32 / f64 (and bf16 / f16) sums and products through the elementwise add / multiply kernels
// (Highway, the CPU's widest vectors; the same operations and rounding, so bit for bit the loops
// above, which compile to SSE2 only): all-reduces of activations and gradients. Wrapped to the
// CombineFn argument order.
template <Opcode kOp, DType kType>
void VectorCombine(std::byte* dst, const std::byte* a, const std::byte* b, int64_t n) {
  static const kernels::BinaryKernel kernel = *kernels::FindBinaryKernel(kOp, kType);
  kernel(a, b, dst, n);
}

// The narrow types (f8*, f4e2m1fn, s2, s4, u2, u4) through the elementwise kernels, which widen
// each pair and round (or wrap) the result back as XLA's CPU backend does; and / or on the
// integers only.
template <DType kType>
CombineFn NarrowCombine(ReductionKind reduction) {
  switch (reduction) {
    case ReductionKind::kSum: return &VectorCombine<Opcode::kAdd, kType>;
    case ReductionKind::kProduct: return &VectorCombine<Opcode::kMultiply, kType>;
    case ReductionKind::kMin: return &VectorCombine<Opcode::kMinimum, kType>;
    case ReductionKind::kMax: return &VectorCombine<Opcode::kMaximum, kType>;
    case ReductionKind::kAnd:
    case ReductionKind::kOr:
      if constexpr (kType == DType::kS2 || kType == DType::kS4 || kType == DType::kU2 || kType == DType::kU4) {
        return reduction == ReductionKind::kAnd ? &VectorCombine<Opcode::kAnd, kType>
                                                : &VectorCombine<Opcode::kOr, kType>;
      }
      return nullptr;
  }
  return nullptr;
}

CombineFn LookupNarrow(ReductionKind reduction, DType dtype) {
  switch (dtype) {
    case DType::kF8E4M3FN: return NarrowCombine<DType::kF8E4M3FN>(reduction);
    case DType::kF8E4M3FNUZ: return NarrowCombine<DType::kF8E4M3FNUZ>(reduction);
    case DType::kF8E4M3B11FNUZ: return NarrowCombine<DType::kF8E4M3B11FNUZ>(reduction);
    case DType::kF8E4M3: return NarrowCombine<DType::kF8E4M3>(reduction);
    case DType::kF8E5M2: return NarrowCombine<DType::kF8E5M2>(reduction);
    case DType::kF8E5M2FNUZ: return NarrowCombine<DType::kF8E5M2FNUZ>(reduction);
    case DType::kF8E3M4: return NarrowCombine<DType::kF8E3M4>(reduction);
    case DType::kF8E8M0FNU: return NarrowCombine<DType::kF8E8M0FNU>(reduction);
    case DType::kF4E2M1FN: return NarrowCombine<DType::kF4E2M1FN>(reduction);
    case DType::kS2: return NarrowCombine<DType::kS2>(reduction);
    case DType::kS4: return NarrowCombine<DType::kS4>(reduction);
    case DType::kU2: return NarrowCombine<DType::kU2>(reduction);
    case DType::kU4: return NarrowCombine<DType::kU4>(reduction);
    default: return nullptr;
  }
}

CombineFn LookupFast(ReductionKind reduction, DType dtype) {
  if (IsNarrowType(dtype)) return LookupNarrow(reduction, dtype);
  const bool sum = reduction == ReductionKind::kSum, product = reduction == ReductionKind::kProduct;
  if (dtype == DType::kF32 && sum) return &VectorCombine<Opcode::kAdd, DType::kF32>;
  if (dtype == DType::kF32 && product) return &VectorCombine<Opcode::kMultiply, DType::kF32>;
  if (dtype == DType::kF64 && sum) return &VectorCombine<Opcode::kAdd, DType::kF64>;
  if (dtype == DType::kF64 && product) return &VectorCombine<Opcode::kMultiply, DType::kF64>;
  // bf16 / f16: widened to f32, combined, rounded to nearest even once, as the scalar loops
  // (checked bit for bit, NaN / inf / ties / subnormals included, in reduction_test.cc).
  if (dtype == DType::kBF16 && sum) return &VectorCombine<Opcode::kAdd, DType::kBF16>;
  if (dtype == DType::kBF16 && product) return &VectorCombine<Opcode::kMultiply, DType::kBF16>;
  if (dtype == DType::kF16 && sum) return &VectorCombine<Opcode::kAdd, DType::kF16>;
  if (dtype == DType::kF16 && product) return &VectorCombine<Opcode::kMultiply, DType::kF16>;
  return Lookup(reduction, dtype);
}

}  // namespace

Status CheckReduction(ReductionKind reduction, DType dtype, std::string_view op_name) {
  if (LookupFast(reduction, dtype) != nullptr) return OkStatus();
  const std::string_view r = ReductionKindName(reduction);
  if (IsComplex(dtype)) {
    return InvalidArgument(op_name, ": reduction '", r, "' is not defined for ",
                           DTypeName(dtype), "; complex values take sum or product");
  }
  if (IsFloating(dtype)) {
    return InvalidArgument(op_name, ": reduction '", r, "' is not defined for ",
                           DTypeName(dtype), "; floating-point values take sum, product, min or "
                           "max");
  }
  return InvalidArgument(op_name, ": reduction '", r, "' is not defined for ", DTypeName(dtype));
}

void Combine(ReductionKind reduction, DType dtype, std::byte* dst, const std::byte* a,
             const std::byte* b, int64_t count) {
  CombineFn fn = LookupFast(reduction, dtype);
  XS_CHECK(fn != nullptr, "Combine: ", ReductionKindName(reduction), " on ", DTypeName(dtype));
  fn(dst, a, b, count);
}

void ReduceMany(ReductionKind reduction, DType dtype, std::byte* dst,
                std::span<const std::byte* const> srcs, int64_t count) {
  XS_CHECK(!srcs.empty(), "ReduceMany needs a source");
  const int64_t es = DTypeSize(dtype);
  if (srcs.size() == 1) {
    if (dst != srcs[0]) std::memmove(dst, srcs[0], static_cast<size_t>(count * es));
    return;
  }
  CombineFn fn = LookupFast(reduction, dtype);
  XS_CHECK(fn != nullptr, "ReduceMany: ", ReductionKindName(reduction), " on ", DTypeName(dtype));
  const bool bf16_accumulates =
      dtype == DType::kBF16 && (reduction == ReductionKind::kSum || reduction == ReductionKind::kProduct);
  if (IsNarrowFloat(dtype) || bf16_accumulates) {
    // XLA's CPU backend reduces a narrow float collective in its wide type (f16; f32 for
    // f8e8m0fnu), each step rounded there, and rounds to the narrow type once at the end. bf16
    // sums and products are promoted to f32 the same way (XLA's all-reduce / reduce-scatter
    // promotion; min and max are exact either way, and f16 stays f16).
    const DType wide = dtype == DType::kF8E8M0FNU || dtype == DType::kBF16 ? DType::kF32 : DType::kF16;
    const kernels::UnaryKernel widen = *kernels::FindConvertKernel(dtype, wide);
    const kernels::UnaryKernel narrow = *kernels::FindConvertKernel(wide, dtype);
    const CombineFn wide_fn = LookupFast(reduction, wide);
    const int64_t wes = DTypeSize(wide), tile = 4096;
    std::vector<std::byte> acc(static_cast<size_t>(tile * wes)), next(acc.size());
    for (int64_t start = 0; start < count; start += tile) {
      const int64_t n = std::min(tile, count - start), off = start * es;
      widen(srcs[0] + off, acc.data(), n);
      for (size_t j = 1; j < srcs.size(); ++j) {
        widen(srcs[j] + off, next.data(), n);
        wide_fn(acc.data(), acc.data(), next.data(), n);
      }
      narrow(acc.data(), dst + off, n);
    }
    return;
  }
  // 16 KiB tiles keep the partial result in L1 while every source streams through once.
  const int64_t tile = std::max<int64_t>(1, 16384 / es);
  for (int64_t start = 0; start < count; start += tile) {
    const int64_t n = std::min(tile, count - start);
    const int64_t off = start * es;
    fn(dst + off, srcs[0] + off, srcs[1] + off, n);
    for (size_t j = 2; j < srcs.size(); ++j) fn(dst + off, dst + off, srcs[j] + off, n);
  }
}

}  // namespace xs
