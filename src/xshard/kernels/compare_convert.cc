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
  if constexpr (K == ComparisonType::kTotalOrder) {
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
  return VisitDType(
      t,
      [](auto tag) -> BinaryEntry {
        using S = typename decltype(tag)::type;
        constexpr bool kOrdered = D != ComparisonDirection::kEq && D != ComparisonDirection::kNe;
        if constexpr (Complex<S> && (kOrdered || K != ComparisonType::kFloat)) {
          return {};
        } else if constexpr (K == ComparisonType::kTotalOrder &&
                             !(HalfLike<S> || std::is_floating_point_v<S>)) {
          return {};
        } else if constexpr ((K == ComparisonType::kSigned || K == ComparisonType::kUnsigned) &&
                             !(Int<S> || Pred<S>)) {
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
  if (!IsComputableDType(operand)) return UnsupportedDType("compare", operand);
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
  if (!IsComputableDType(from)) return UnsupportedDType("convert", from);
  if (!IsComputableDType(to)) return UnsupportedDType("convert", to);
  return VisitDType(
      from,
      [to](auto from_tag) -> StatusOr<UnaryEntry> {
        using S = typename decltype(from_tag)::type;
        return VisitDType(
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

StatusOr<Array> BitcastConvert(const Array& in, DType to) {
  const int64_t from_size = DTypeSize(in.dtype()), to_size = DTypeSize(to);
  if (from_size == 0 || to_size == 0) return UnsupportedDType("bitcast-convert", to);
  std::vector<int64_t> dims = in.dims();
  if (to_size < from_size) {
    dims.push_back(from_size / to_size);
  } else if (to_size > from_size) {
    if (dims.empty() || dims.back() != to_size / from_size) {
      return InvalidArgument("bitcast-convert from ", in.shape().ToString(), " to ",
                             DTypeName(to), ": the last dim must be ", to_size / from_size,
                             " (the size ratio of the element types)");
    }
    dims.pop_back();
  }
  return Array::FromBytes(Shape(to, std::move(dims)),
                          std::span<const std::byte>(in.data(), in.byte_size()));
}

}  // namespace xs::kernels
