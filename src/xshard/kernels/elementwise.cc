// Unary, binary and ternary elementwise kernel tables: opcode -> scalar functor (scalar_ops.h)
// -> per-dtype loop instantiation (elementwise_loops.h); the Find* functions prefer the vector
// kernels of elementwise_simd.h where one exists.
#include "xshard/kernels/elementwise.h"

#include <cstring>
#include <type_traits>

#include "xshard/kernels/elementwise_loops.h"
#include "xshard/kernels/elementwise_simd.h"
#include "xshard/kernels/scalar_ops.h"

namespace xs::kernels {

bool IsComputableDType(DType dtype) {
  return VisitDType(dtype, [](auto) { return true; }, [] { return false; });
}
bool IsElementwiseDType(DType dtype) { return IsComputableDType(dtype) || IsNarrowType(dtype); }

Status UnsupportedDType(std::string_view what, DType dtype) {
  if (IsNarrowType(dtype)) {
    return Unsupported(what, " on element type ", DTypeName(dtype),
                       " (the narrow types s2, s4, u2, u4, f8* and f4e2m1fn are computed on by "
                       "elementwise ops, compare, convert, reduce, dot and convolution)");
  }
  return Unsupported(what, " on element type ", DTypeName(dtype),
                     " (the kernels compute on pred, s2-s64, u2-u64, f4e2m1fn, f8*, f16, bf16, "
                     "f32, f64, c64, c128)");
}

namespace internal {
namespace {

#define XS_UNARY_TABLE(X)                                                                  \
  X(kAbs, Abs) X(kNegate, Negate) X(kExp, Exp) X(kLog, Log) X(kSqrt, Sqrt) X(kRsqrt, Rsqrt) \
  X(kTanh, Tanh) X(kSin, Sin) X(kCos, Cos) X(kTan, Tan) X(kLogistic, Logistic)             \
  X(kExpm1, Expm1) X(kLog1p, Log1p) X(kCbrt, Cbrt) X(kErf, Erf) X(kCeil, Ceil)              \
  X(kFloor, Floor) X(kRoundNearestAfz, RoundAfz) X(kRoundNearestEven, RoundEven)           \
  X(kAtan, Atan) X(kAcos, Acos) X(kAsin, Asin) X(kAcosh, Acosh) X(kAsinh, Asinh)           \
  X(kAtanh, Atanh) X(kCosh, Cosh) X(kSinh, Sinh) X(kSign, Sign) X(kIsFinite, IsFinite)     \
  X(kNot, Not) X(kPopulationCount, PopCount) X(kClz, Clz) X(kReal, RealPart)               \
  X(kImag, ImagPart)

#define XS_BINARY_TABLE(X)                                                                 \
  X(kAdd, Add) X(kSubtract, Subtract) X(kMultiply, Multiply) X(kDivide, Divide)             \
  X(kRemainder, Remainder) X(kMaximum, Maximum) X(kMinimum, Minimum) X(kPower, Power)       \
  X(kAtan2, Atan2) X(kAnd, And) X(kOr, Or) X(kXor, Xor) X(kShiftLeft, ShiftLeft)            \
  X(kShiftRightArithmetic, ShiftRightArithmetic)                                           \
  X(kShiftRightLogical, ShiftRightLogical) X(kComplex, MakeComplex)                        \
  X(kMulhi, Mulhi)

struct UnaryRow {
  Opcode op;
  UnaryEntry (*resolve)(DType);
};
struct BinaryRow {
  Opcode op;
  BinaryEntry (*resolve)(DType);
};

constexpr UnaryRow kUnaryRows[] = {
#define XS_ROW(code, functor) {Opcode::code, &ResolveUnary<ops::functor>},
    XS_UNARY_TABLE(XS_ROW)
#undef XS_ROW
};
constexpr BinaryRow kBinaryRows[] = {
#define XS_ROW(code, functor) {Opcode::code, &ResolveBinary<ops::functor>},
    XS_BINARY_TABLE(XS_ROW)
#undef XS_ROW
};

template <size_t kBytes>
void CopyBytes(const std::byte* in, std::byte* out, int64_t n) {
  if (in != out) std::memmove(out, in, static_cast<size_t>(n) * kBytes);
}

UnaryKernel CopyKernelForSize(int64_t bytes) {
  switch (bytes) {
    case 1: return &CopyBytes<1>;
    case 2: return &CopyBytes<2>;
    case 4: return &CopyBytes<4>;
    case 8: return &CopyBytes<8>;
    case 16: return &CopyBytes<16>;
    default: return nullptr;
  }
}

Status NotDefined(Opcode op, DType t) {
  return Unsupported(OpcodeName(op), " is not defined for element type ", DTypeName(t));
}

}  // namespace

StatusOr<UnaryEntry> LookupUnary(Opcode op, DType operand) {
  if (op == Opcode::kCopy) {
    UnaryKernel k = CopyKernelForSize(DTypeSize(operand));
    if (k == nullptr) return NotDefined(op, operand);
    return UnaryEntry{k, k, operand};
  }
  for (const UnaryRow& row : kUnaryRows) {
    if (row.op != op) continue;
    if (!IsElementwiseDType(operand)) return UnsupportedDType(OpcodeName(op), operand);
    UnaryEntry e = row.resolve(operand);
    if (e.fast == nullptr) return NotDefined(op, operand);
    return e;
  }
  return Unsupported(OpcodeName(op), " is not a unary elementwise op");
}

StatusOr<BinaryEntry> LookupBinary(Opcode op, DType operand) {
  for (const BinaryRow& row : kBinaryRows) {
    if (row.op != op) continue;
    if (!IsElementwiseDType(operand)) return UnsupportedDType(OpcodeName(op), operand);
    BinaryEntry e = row.resolve(operand);
    if (e.fast == nullptr) return NotDefined(op, operand);
    return e;
  }
  return Unsupported(OpcodeName(op), " is not a binary elementwise op");
}

}  // namespace internal

StatusOr<DType> UnaryResultDType(Opcode op, DType operand) {
  XS_ASSIGN_OR_RETURN(internal::UnaryEntry e, internal::LookupUnary(op, operand));
  return e.out;
}

StatusOr<UnaryKernel> FindUnaryKernel(Opcode op, DType operand) {
  XS_ASSIGN_OR_RETURN(internal::UnaryEntry e, internal::LookupUnary(op, operand));
  if (UnaryKernel k = simd::FindUnary(op, operand)) return k;
  return e.fast;
}

StatusOr<BinaryKernel> FindBinaryKernel(Opcode op, DType operand) {
  XS_ASSIGN_OR_RETURN(internal::BinaryEntry e, internal::LookupBinary(op, operand));
  if (BinaryKernel k = simd::FindBinary(op, operand)) return k;
  return e.fast;
}

namespace {

template <typename S>
void RotateLeftLoop(const std::byte* a_p, const std::byte* b_p, std::byte* out, int64_t n) {
  using U = std::make_unsigned_t<S>;
  const S* a = reinterpret_cast<const S*>(a_p);
  const S* b = reinterpret_cast<const S*>(b_p);
  S* o = reinterpret_cast<S*>(out);
  for (int64_t i = 0; i < n; ++i) {
    const S rest = static_cast<S>(static_cast<U>(sizeof(S) * 8) - static_cast<U>(b[i]));
    o[i] = static_cast<S>(ops::ShiftLeft::Apply(a[i], b[i]) | ops::ShiftRightLogical::Apply(a[i], rest));
  }
}

}  // namespace

StatusOr<BinaryKernel> FindRotateLeftKernel(DType operand) {
  if (BinaryKernel k = simd::FindRotateLeft(operand)) return k;
  switch (operand) {
    case DType::kS32: return &RotateLeftLoop<int32_t>;
    case DType::kU32: return &RotateLeftLoop<uint32_t>;
    case DType::kS64: return &RotateLeftLoop<int64_t>;
    case DType::kU64: return &RotateLeftLoop<uint64_t>;
    default: return InvalidArgument("rotate-left applies to s32, u32, s64 and u64, not ", DTypeName(operand));
  }
}

namespace {

template <typename S>
void SelectLoop(const std::byte* p, const std::byte* t, const std::byte* f, std::byte* out,
                int64_t n) {
  const bool* pred = reinterpret_cast<const bool*>(p);
  const S* a = reinterpret_cast<const S*>(t);
  const S* b = reinterpret_cast<const S*>(f);
  S* o = reinterpret_cast<S*>(out);
  for (int64_t i = 0; i < n; ++i) o[i] = pred[i] ? a[i] : b[i];
}

// clamp(low, x, high) = min(high, max(x, low)); a NaN in low, x or high (checked in that order)
// is the result, as XLA's evaluator defines it.
template <typename S>
void ClampLoop(const std::byte* lo_p, const std::byte* x_p, const std::byte* hi_p, std::byte* out,
               int64_t n) {
  const S* lo = reinterpret_cast<const S*>(lo_p);
  const S* x = reinterpret_cast<const S*>(x_p);
  const S* hi = reinterpret_cast<const S*>(hi_p);
  S* o = reinterpret_cast<S*>(out);
  for (int64_t i = 0; i < n; ++i) {
    auto l = ToCompute(lo[i]), v = ToCompute(x[i]), h = ToCompute(hi[i]);
    if constexpr (std::is_floating_point_v<decltype(v)>) {
      if (std::isnan(l)) { o[i] = lo[i]; continue; }
      if (std::isnan(v)) { o[i] = x[i]; continue; }
      if (std::isnan(h)) { o[i] = hi[i]; continue; }
    }
    auto r = std::min(h, std::max(v, l));
    o[i] = internal::StoreAs<S>(r);
  }
}

}  // namespace

StatusOr<TernaryKernel> FindSelectKernel(DType dtype) {
  if (TernaryKernel k = simd::FindSelect(dtype)) return k;
  switch (DTypeSize(dtype)) {
    case 1: return &SelectLoop<uint8_t>;
    case 2: return &SelectLoop<uint16_t>;
    case 4: return &SelectLoop<uint32_t>;
    case 8: return &SelectLoop<uint64_t>;
    case 16: return &SelectLoop<std::complex<double>>;
    default: return UnsupportedDType("select", dtype);
  }
}

StatusOr<TernaryKernel> FindClampKernel(DType dtype) {
  if (TernaryKernel k = simd::FindClamp(dtype)) return k;
  TernaryKernel k = VisitDTypeOrNarrow(
      dtype,
      [](auto tag) -> TernaryKernel {
        using S = typename decltype(tag)::type;
        if constexpr (Complex<S>) {
          return nullptr;
        } else {
          return &ClampLoop<S>;
        }
      },
      [] { return TernaryKernel{nullptr}; });
  if (k == nullptr) return UnsupportedDType("clamp", dtype);
  return k;
}

void StreamCopy(std::byte* dst, const std::byte* src, int64_t bytes) {
  internal::StreamStore(dst, src, bytes);
}
void StreamFence() { internal::StreamFence(); }

}  // namespace xs::kernels
