// compare (FLOAT / TOTALORDER / SIGNED / UNSIGNED) and convert kernel tables, plus the whole-array
// helpers and reference versions declared in elementwise.h.
#include <cstring>

#include "xshard/kernels/elementwise.h"
#include "xshard/kernels/elementwise_loops.h"
#include "xshard/kernels/elementwise_simd.h"
#include "xshard/kernels/scalar_ops.h"

namespace xs::kernels {
namespace internal {
namespace {

// The value a comparison of kind K looks at.
template <ComparisonType K, typename S>
inline auto CompareKey(S v) {
  if constexpr (NarrowIntT<S> && (K == ComparisonType::kSigned || K == ComparisonType::kUnsigned)) {
    // The narrow width's own view (the storage is sign-extended for s2 / s4).
    constexpr int kBits = S::kBits;
    const int low = static_cast<int>(static_cast<uint8_t>(v.v) & ((1u << kBits) - 1));
    if constexpr (K == ComparisonType::kUnsigned) return low;
    return (low ^ (1 << (kBits - 1))) - (1 << (kBits - 1));
  } else if constexpr (K == ComparisonType::kTotalOrder) {
    return TotalOrderKey(v);
  } else if constexpr (K == ComparisonType::kSigned && Int<S>) {
    return static_cast<std::make_signed_t<S>>(v);
  } else if constexpr (K == ComparisonType::kUnsigned && Int<S>) {
    return static_cast<std::make_unsigned_t<S>>(v);
  } else {
    return ToCompute(v);
  }
}

template <ComparisonDirection D, ComparisonType K, typename S>
void CompareFast(const std::byte* in_a, const std::byte* in_b, std::byte* out, int64_t n) {
  const S* a = reinterpret_cast<const S*>(in_a);
  const S* b = reinterpret_cast<const S*>(in_b);
  bool* o = reinterpret_cast<bool*>(out);
  for (int64_t i = 0; i < n; ++i) o[i] = ops::CompareValues<D>(CompareKey<K>(a[i]), CompareKey<K>(b[i]));
}

template <ComparisonDirection D, ComparisonType K, typename S>
void CompareRef(const std::byte* a, const std::byte* b, std::byte* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const bool r = ops::CompareValues<D>(CompareKey<K>(LoadAt<S>(a, i)), CompareKey<K>(LoadAt<S>(b, i)));
    StoreAt<bool>(out, i, r);
  }
}

template <ComparisonDirection D, ComparisonType K>
BinaryEntry ResolveCompare(DType t) {
  return VisitDTypeOrNarrow(
      t,
      [](auto tag) -> BinaryEntry {
        using S = typename decltype(tag)::type;
        constexpr bool kOrdered = D != ComparisonDirection::kEq && D != ComparisonDirection::kNe;
        if constexpr (Complex<S> && (kOrdered || K != ComparisonType::kFloat)) {
          return {};
        } else if constexpr (K == ComparisonType::kTotalOrder &&
                             !(HalfLike<S> || NarrowFloatT<S> || std::is_floating_point_v<S>)) {
          return {};
        } else if constexpr ((K == ComparisonType::kSigned || K == ComparisonType::kUnsigned) &&
                             !(Int<S> || Pred<S> || NarrowIntT<S>)) {
          return {};
        } else {
          return {&CompareFast<D, K, S>, &CompareRef<D, K, S>, DType::kPred};
        }
      },
      [] { return BinaryEntry{}; });
}

template <ComparisonDirection D>
BinaryEntry ResolveCompareKind(ComparisonType k, DType t) {
  switch (k) {
    case ComparisonType::kFloat: return ResolveCompare<D, ComparisonType::kFloat>(t);
    case ComparisonType::kTotalOrder: return ResolveCompare<D, ComparisonType::kTotalOrder>(t);
    case ComparisonType::kSigned: return ResolveCompare<D, ComparisonType::kSigned>(t);
    case ComparisonType::kUnsigned: return ResolveCompare<D, ComparisonType::kUnsigned>(t);
    case ComparisonType::kNone: break;
  }
  return {};
}

}  // namespace

ComparisonType DefaultComparisonType(DType t) {
  if (IsSignedInteger(t)) return ComparisonType::kSigned;
  if (IsUnsignedInteger(t) || t == DType::kPred) return ComparisonType::kUnsigned;
  return ComparisonType::kFloat;
}

namespace {

template <typename D, typename S>
void ConvertFast(const std::byte* in, std::byte* out, int64_t n) {
  const S* a = reinterpret_cast<const S*>(in);
  D* o = reinterpret_cast<D*>(out);
  for (int64_t i = 0; i < n; ++i) o[i] = ConvertScalar<D>(a[i]);
}

template <typename D, typename S>
void ConvertRef(const std::byte* in, std::byte* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) StoreAt<D>(out, i, ConvertScalar<D>(LoadAt<S>(in, i)));
}

}  // namespace

StatusOr<BinaryEntry> LookupCompare(ComparisonDirection direction, ComparisonType type,
                                    DType operand) {
  if (!IsElementwiseDType(operand)) return UnsupportedDType("compare", operand);
  const ComparisonType k = type == ComparisonType::kNone ? DefaultComparisonType(operand) : type;
  BinaryEntry e;
  switch (direction) {
#define XS_CASE(d) \
  case ComparisonDirection::d: e = ResolveCompareKind<ComparisonDirection::d>(k, operand); break;
    XS_CASE(kEq) XS_CASE(kNe) XS_CASE(kLt) XS_CASE(kLe) XS_CASE(kGt) XS_CASE(kGe)
#undef XS_CASE
  }
  if (e.fast == nullptr) {
    return Unsupported("compare direction=", ComparisonDirectionName(direction),
                       " type=", ComparisonTypeName(k), " is not defined for element type ",
                       DTypeName(operand));
  }
  return e;
}

StatusOr<UnaryEntry> LookupConvert(DType from, DType to) {
  if (!IsElementwiseDType(from)) return UnsupportedDType("convert", from);
  if (!IsElementwiseDType(to)) return UnsupportedDType("convert", to);
  return VisitDTypeOrNarrow(
      from,
      [to](auto from_tag) -> StatusOr<UnaryEntry> {
        using S = typename decltype(from_tag)::type;
        return VisitDTypeOrNarrow(
            to,
            [to](auto to_tag) -> StatusOr<UnaryEntry> {
              using D = typename decltype(to_tag)::type;
              return UnaryEntry{&ConvertFast<D, S>, &ConvertRef<D, S>, to};
            },
            [] { return StatusOr<UnaryEntry>(Internal("unreachable")); });
      },
      [] { return StatusOr<UnaryEntry>(Internal("unreachable")); });
}

}  // namespace internal

DType WidenedDType(DType t) {
  if (IsNarrowFloat(t)) return DType::kF32;
  if (IsNarrowInt(t)) return IsSignedInteger(t) ? DType::kS32 : DType::kU32;
  return t;
}

namespace {

template <typename D>
void RoundF32Fast(const std::byte* in, std::byte* out, int64_t n) {
  const float* a = reinterpret_cast<const float*>(in);
  D* o = reinterpret_cast<D*>(out);
  for (int64_t i = 0; i < n; ++i) o[i] = FromCompute<D>(a[i]);
}

}  // namespace

StatusOr<UnaryKernel> FindResultRoundKernel(DType from, DType to) {
  if (from == DType::kF32 && IsNarrowFloat(to)) {
    return VisitDTypeOrNarrow(
        to,
        [](auto tag) -> UnaryKernel {
          using D = typename decltype(tag)::type;
          if constexpr (NarrowFloatT<D>) return &RoundF32Fast<D>;
          return nullptr;
        },
        [] { return UnaryKernel{nullptr}; });
  }
  return FindConvertKernel(from, to);
}

StatusOr<BinaryKernel> FindCompareKernel(ComparisonDirection direction, ComparisonType type,
                                         DType operand) {
  XS_ASSIGN_OR_RETURN(internal::BinaryEntry e, internal::LookupCompare(direction, type, operand));
  const ComparisonType k =
      type == ComparisonType::kNone ? internal::DefaultComparisonType(operand) : type;
  if (BinaryKernel v = simd::FindCompare(direction, k, operand)) return v;
  return e.fast;
}

StatusOr<UnaryKernel> FindConvertKernel(DType from, DType to) {
  XS_ASSIGN_OR_RETURN(internal::UnaryEntry e, internal::LookupConvert(from, to));
  if (UnaryKernel v = simd::FindConvert(from, to)) return v;
  return e.fast;
}

namespace {

Status CheckSameDims(std::string_view what, const Array& a, const Array& b) {
  if (a.dims() != b.dims()) {
    return InvalidArgument(what, ": operand shapes differ: ", a.shape().ToString(), " vs ",
                           b.shape().ToString());
  }
  return OkStatus();
}

Array RunUnary(UnaryKernel k, DType out, const Array& in) {
  Array r(Shape(out, in.dims()));
  k(in.data(), r.data(), in.num_elements());
  return r;
}

Array RunBinary(BinaryKernel k, DType out, const Array& a, const Array& b) {
  Array r(Shape(out, a.dims()));
  k(a.data(), b.data(), r.data(), a.num_elements());
  return r;
}

}  // namespace

StatusOr<Array> Unary(Opcode op, const Array& in) {
  XS_ASSIGN_OR_RETURN(internal::UnaryEntry e, internal::LookupUnary(op, in.dtype()));
  XS_ASSIGN_OR_RETURN(UnaryKernel k, FindUnaryKernel(op, in.dtype()));
  return RunUnary(k, e.out, in);
}
StatusOr<Array> UnaryReference(Opcode op, const Array& in) {
  XS_ASSIGN_OR_RETURN(internal::UnaryEntry e, internal::LookupUnary(op, in.dtype()));
  return RunUnary(e.ref, e.out, in);
}
StatusOr<Array> Binary(Opcode op, const Array& a, const Array& b) {
  XS_RETURN_IF_ERROR(CheckSameDims(OpcodeName(op), a, b));
  if (a.dtype() != b.dtype()) {
    return InvalidArgument(OpcodeName(op), ": operand types differ: ", DTypeName(a.dtype()),
                           " vs ", DTypeName(b.dtype()));
  }
  XS_ASSIGN_OR_RETURN(internal::BinaryEntry e, internal::LookupBinary(op, a.dtype()));
  XS_ASSIGN_OR_RETURN(BinaryKernel k, FindBinaryKernel(op, a.dtype()));
  return RunBinary(k, e.out, a, b);
}
StatusOr<Array> BinaryReference(Opcode op, const Array& a, const Array& b) {
  XS_RETURN_IF_ERROR(CheckSameDims(OpcodeName(op), a, b));
  XS_ASSIGN_OR_RETURN(internal::BinaryEntry e, internal::LookupBinary(op, a.dtype()));
  return RunBinary(e.ref, e.out, a, b);
}
StatusOr<Array> Compare(ComparisonDirection direction, ComparisonType type, const Array& a,
                        const Array& b) {
  XS_RETURN_IF_ERROR(CheckSameDims("compare", a, b));
  XS_ASSIGN_OR_RETURN(internal::BinaryEntry e, internal::LookupCompare(direction, type, a.dtype()));
  XS_ASSIGN_OR_RETURN(BinaryKernel k, FindCompareKernel(direction, type, a.dtype()));
  return RunBinary(k, e.out, a, b);
}
StatusOr<Array> CompareReference(ComparisonDirection direction, ComparisonType type,
                                 const Array& a, const Array& b) {
  XS_RETURN_IF_ERROR(CheckSameDims("compare", a, b));
  XS_ASSIGN_OR_RETURN(internal::BinaryEntry e, internal::LookupCompare(direction, type, a.dtype()));
  return RunBinary(e.ref, e.out, a, b);
}
StatusOr<Array> Convert(const Array& in, DType to) {
  XS_ASSIGN_OR_RETURN(internal::UnaryEntry e, internal::LookupConvert(in.dtype(), to));
  XS_ASSIGN_OR_RETURN(UnaryKernel k, FindConvertKernel(in.dtype(), to));
  return RunUnary(k, e.out, in);
}
StatusOr<Array> ConvertReference(const Array& in, DType to) {
  XS_ASSIGN_OR_RETURN(internal::UnaryEntry e, internal::LookupConvert(in.dtype(), to));
  return RunUnary(e.ref, e.out, in);
}

namespace {

// How a type narrower than a byte is held (one per byte): s2 / s4 sign-extended, the others (u2,
// u4, f4e2m1fn) in the low bits with zeros above. 0 for types of a byte or more.
int SubByteBits(DType t) { return DTypeBitWidth(t) < 8 ? DTypeBitWidth(t) : 0; }
bool SignExtended(DType t) { return t == DType::kS2 || t == DType::kS4; }

uint8_t Canonical(uint64_t bits, DType t) {
  const int w = SubByteBits(t);
  const uint8_t low = static_cast<uint8_t>(bits & ((1u << w) - 1));
  if (!SignExtended(t)) return low;
  const uint8_t sign = static_cast<uint8_t>(1u << (w - 1));
  return static_cast<uint8_t>((low ^ sign) - sign);
}

template <DType kTo, int kBits>
void RecodeLoop(const std::byte* in, std::byte* out, int64_t n) {
  const uint8_t* a = reinterpret_cast<const uint8_t*>(in);
  uint8_t* o = reinterpret_cast<uint8_t*>(out);
  constexpr uint8_t kMask = (1u << kBits) - 1, kSign = 1u << (kBits - 1);
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t low = a[i] & kMask;
    o[i] = SignExtended(kTo) ? static_cast<uint8_t>((low ^ kSign) - kSign) : low;
  }
}

}  // namespace

StatusOr<UnaryKernel> FindBitcastKernel(DType from, DType to) {
  if (DTypeBitWidth(from) != DTypeBitWidth(to) || DTypeSize(from) == 0) {
    return InvalidArgument("bitcast-convert kernel: ", DTypeName(from), " and ", DTypeName(to), " differ in width");
  }
  if (SubByteBits(from) == 0 || SignExtended(from) == SignExtended(to)) {
    return FindUnaryKernel(Opcode::kCopy, from);
  }
  switch (to) {
    case DType::kS2: return &RecodeLoop<DType::kS2, 2>;
    case DType::kS4: return &RecodeLoop<DType::kS4, 4>;
    case DType::kU2: return &RecodeLoop<DType::kU2, 2>;
    default: return &RecodeLoop<DType::kU4, 4>;  // u4 and f4e2m1fn: the low nibble
  }
}

Status BitcastInto(const Array& in, Array& out) {
  const DType from = in.dtype(), to = out.dtype();
  const int fb = DTypeBitWidth(from), tb = DTypeBitWidth(to);
  if (static_cast<int64_t>(fb) * in.num_elements() != static_cast<int64_t>(tb) * out.num_elements()) {
    return InvalidArgument("bitcast-convert from ", in.shape().ToString(), " to ", out.shape().ToString(),
                           " changes the number of bits");
  }
  if (SubByteBits(from) == 0 && SubByteBits(to) == 0) {  // bytes as they are
    if (out.data() != in.data()) std::memmove(out.data(), in.data(), static_cast<size_t>(in.byte_size()));
    return OkStatus();
  }
  if (fb == tb) {
    XS_ASSIGN_OR_RETURN(UnaryKernel k, FindBitcastKernel(from, to));
    k(in.data(), out.data(), in.num_elements());
    return OkStatus();
  }
  // XLA packs the narrower elements of one wider element little-endian: element k of a group at
  // bit k * width (u8 0xab -> u4 [0xb, 0xa]).
  const int64_t ratio = fb > tb ? fb / tb : tb / fb;
  const int in_bytes = static_cast<int>(DTypeSize(from)), out_bytes = static_cast<int>(DTypeSize(to));
  auto load = [&](int64_t i) {
    uint64_t v = 0;
    std::memcpy(&v, in.data() + i * in_bytes, static_cast<size_t>(in_bytes));  // little-endian host
    return SubByteBits(from) ? v & ((uint64_t{1} << fb) - 1) : v;
  };
  if (fb > tb) {
    for (int64_t i = 0; i < in.num_elements(); ++i) {
      const uint64_t v = load(i);
      for (int64_t k = 0; k < ratio; ++k) {
        reinterpret_cast<uint8_t*>(out.data())[i * ratio + k] = Canonical(v >> (k * tb), to);
      }
    }
    return OkStatus();
  }
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    uint64_t v = 0;
    for (int64_t k = 0; k < ratio; ++k) v |= load(i * ratio + k) << (k * fb);
    if (SubByteBits(to)) {
      reinterpret_cast<uint8_t*>(out.data())[i] = Canonical(v, to);
    } else {
      std::memcpy(out.data() + i * out_bytes, &v, static_cast<size_t>(out_bytes));
    }
  }
  return OkStatus();
}

StatusOr<Array> BitcastConvert(const Array& in, DType to) {
  const int from_bits = DTypeBitWidth(in.dtype()), to_bits = DTypeBitWidth(to);
  if (DTypeSize(in.dtype()) == 0 || DTypeSize(to) == 0) return UnsupportedDType("bitcast-convert", to);
  std::vector<int64_t> dims = in.dims();
  if (to_bits < from_bits) {
    dims.push_back(from_bits / to_bits);
  } else if (to_bits > from_bits) {
    if (dims.empty() || dims.back() != to_bits / from_bits) {
      return InvalidArgument("bitcast-convert from ", in.shape().ToString(), " to ", DTypeName(to),
                             ": the last dim must be ", to_bits / from_bits, " (the width ratio of the element types)");
    }
    dims.pop_back();
  }
  Array out(Shape(to, std::move(dims)));
  XS_RETURN_IF_ERROR(BitcastInto(in, out));
  return out;
}

}  // namespace xs::kernels
