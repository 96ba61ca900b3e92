// Shape inference for elementwise ops and conversions, and the shared helpers. Data movement is
// in shape_inference_movement.cc. See shape_inference.h.
#include "xshard/ir/shape_inference.h"

#include <algorithm>
#include <numeric>
#include <set>

#include "xshard/ir/shape_inference_util.h"

namespace xs {

std::string ProgramShape::ToString() const {
  std::string s = "(";
  for (size_t i = 0; i < parameters.size(); ++i) {
    if (i) s += ", ";
    s += ShapeText(parameters[i]);
  }
  return s + ") -> " + ShapeText(result);
}

std::string ShapeText(const Shape& shape) { return shape.ToString(/*with_layout=*/false); }

bool SameElementTypeIgnoringFpPrecision(DType a, DType b) {
  return a == b || (IsFloating(a) && IsFloating(b));
}

bool CompatibleIgnoringFpPrecision(const Shape& a, const Shape& b) {
  if (a.IsTuple() != b.IsTuple()) return false;
  if (a.IsTuple()) {
    if (a.tuple_size() != b.tuple_size()) return false;
    for (int i = 0; i < a.tuple_size(); ++i) {
      if (!CompatibleIgnoringFpPrecision(a.tuple_shape(i), b.tuple_shape(i))) return false;
    }
    return true;
  }
  return SameElementTypeIgnoringFpPrecision(a.dtype(), b.dtype()) && a.dims() == b.dims();
}

bool HasUnboundedDim(const Shape& shape) {
  if (shape.IsTuple()) {
    return std::any_of(shape.tuple_shapes().begin(), shape.tuple_shapes().end(),
                       [](const Shape& s) { return HasUnboundedDim(s); });
  }
  return std::any_of(shape.dims().begin(), shape.dims().end(), [](int64_t d) { return d < 0; });
}

namespace shape_inference {

Status ExpectArray(const Shape& shape, std::string_view what) {
  if (shape.IsArray()) return OkStatus();
  return InvalidArgument(what, " must be an array, but is ", ShapeText(shape));
}

DType HigherPrecision(DType a, DType b) {
  if (a == b || !IsFloating(a) || !IsFloating(b)) return a;
  if (DTypeBitWidth(a) != DTypeBitWidth(b)) return DTypeBitWidth(a) > DTypeBitWidth(b) ? a : b;
  return a == DType::kF16 ? a : b;  // f16 has more mantissa bits than bf16
}

Shape WithDTypeKeepDynamic(const Shape& shape, DType dtype) {
  Shape out(dtype, shape.dims());
  for (int i = 0; i < shape.rank(); ++i) {
    if (shape.is_dynamic_dim(i)) out.set_dynamic_dim(i, true);
  }
  return out;
}

Status CheckDimsInRange(std::span<const int64_t> dims, int64_t rank, std::string_view what,
                        const Shape& shape, bool unique) {
  std::set<int64_t> seen;
  for (int64_t d : dims) {
    if (d < 0 || d >= rank) {
      return InvalidArgument(what, " ", d, " is out of range for ", ShapeText(shape), " (rank ",
                             rank, ")");
    }
    if (unique && !seen.insert(d).second) {
      return InvalidArgument(what, " ", d, " appears twice in {", StrJoin(dims, ","), "}");
    }
  }
  return OkStatus();
}

Status CheckSortedUnique(std::span<const int64_t> dims, std::string_view what) {
  for (size_t i = 1; i < dims.size(); ++i) {
    if (dims[i - 1] >= dims[i]) {
      return InvalidArgument(what, " must be sorted and unique, got {", StrJoin(dims, ","), "}");
    }
  }
  return OkStatus();
}

bool IsPermutation(std::span<const int64_t> perm, int64_t n) {
  if (static_cast<int64_t>(perm.size()) != n) return false;
  std::vector<bool> seen(n, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= n || seen[p]) return false;
    seen[p] = true;
  }
  return true;
}

}  // namespace shape_inference

using shape_inference::ExpectArray;

namespace {

// Element-type classes an op accepts: the kOn* bits of the opcode table, shifted down.
enum TypeClass : uint32_t {
  kTPred = kOnPred >> kOnTypeShift, kTSigned = kOnSigned >> kOnTypeShift,
  kTUnsigned = kOnUnsigned >> kOnTypeShift, kTFloat = kOnFloat >> kOnTypeShift,
  kTComplex = kOnComplex >> kOnTypeShift, kTInt = kTSigned | kTUnsigned,
  kTNumeric = kTInt | kTFloat | kTComplex, kTAny = kTPred | kTNumeric,
};

uint32_t AcceptedClass(Opcode op) { return OpcodeAcceptedTypes(op) >> kOnTypeShift; }

bool InClass(DType t, uint32_t cls) {
  if (t == DType::kPred) return cls & kTPred;
  if (IsSignedInteger(t)) return cls & kTSigned;
  if (IsUnsignedInteger(t)) return cls & kTUnsigned;
  if (IsFloating(t)) return cls & kTFloat;
  if (IsComplex(t)) return cls & kTComplex;
  return false;
}

std::string_view ClassName(uint32_t cls) {
  switch (cls) {
    case kTFloat: return "floating";
    case kTFloat | kTComplex: return "floating or complex";
    case kTInt: return "integer";
    case kTPred | kTInt: return "pred or integer";
    case kTSigned | kTFloat: return "signed or floating";
    case kTSigned | kTFloat | kTComplex: return "signed, floating or complex";
    case kTNumeric: return "numeric (not pred)";
    default: return "supported";
  }
}

DType ComplexComponent(DType t) { return t == DType::kC128 ? DType::kF64 : DType::kF32; }

}  // namespace

StatusOr<Shape> InferUnaryOpShape(Opcode opcode, const Shape& operand) {
  if (opcode == Opcode::kCopy || opcode == Opcode::kDomain ||
      opcode == Opcode::kOptimizationBarrier) {
    return operand;
  }
  XS_RETURN_IF_ERROR(ExpectArray(operand, "the operand"));
  if (GetElementwiseKind(opcode) == ElementwiseKind::kUnary) {
    const uint32_t accepts = AcceptedClass(opcode);
    if (!InClass(operand.dtype(), accepts)) {
      return InvalidArgument(OpcodeName(opcode), " needs a ", ClassName(accepts),
                             " operand, got ", ShapeText(operand));
    }
    if (opcode == Opcode::kIsFinite) return shape_inference::WithDTypeKeepDynamic(operand, DType::kPred);
    if ((opcode == Opcode::kAbs || opcode == Opcode::kReal || opcode == Opcode::kImag) &&
        IsComplex(operand.dtype())) {
      return shape_inference::WithDTypeKeepDynamic(operand, ComplexComponent(operand.dtype()));
    }
    return operand.WithoutLayout();
  }
  return InvalidArgument(OpcodeName(opcode), " is not a unary elementwise op");
}

StatusOr<Shape> InferBinaryOpShape(Opcode opcode, const Shape& lhs, const Shape& rhs) {
  XS_RETURN_IF_ERROR(ExpectArray(lhs, "lhs"));
  XS_RETURN_IF_ERROR(ExpectArray(rhs, "rhs"));
  const ElementwiseKind kind = GetElementwiseKind(opcode);
  if (kind != ElementwiseKind::kBinary && kind != ElementwiseKind::kCompare) {
    return InvalidArgument(OpcodeName(opcode), " is not a binary op");
  }
  // As XLA's verifier (mixed precision disallowed): f32 + bf16 is an error, the executor has no
  // kernel for it, and the fix is explicit.
  if (lhs.dtype() != rhs.dtype()) {
    return InvalidArgument(OpcodeName(opcode), " operands have different element types: lhs ",
                           ShapeText(lhs), ", rhs ", ShapeText(rhs),
                           "; convert one of them (e.g. convert(rhs) to ", DTypeName(lhs.dtype()),
                           ") so both have the same element type");
  }
  if (lhs.dims() != rhs.dims()) {
    return InvalidArgument("operands have different dims: lhs ", ShapeText(lhs), ", rhs ",
                           ShapeText(rhs), "; HLO does not broadcast implicitly, insert a ",
                           "broadcast");
  }
  if (!InClass(lhs.dtype(), AcceptedClass(opcode))) {
    return InvalidArgument(OpcodeName(opcode), " needs ", ClassName(AcceptedClass(opcode)),
                           " operands, got ", ShapeText(lhs));
  }
  Shape result = shape_inference::WithDTypeKeepDynamic(lhs, shape_inference::HigherPrecision(lhs.dtype(), rhs.dtype()));
  for (int i = 0; i < rhs.rank(); ++i) {
    if (rhs.is_dynamic_dim(i)) result.set_dynamic_dim(i, true);
  }
  if (opcode == Opcode::kCompare) return shape_inference::WithDTypeKeepDynamic(result, DType::kPred);
  if (opcode == Opcode::kComplex) {
    if (lhs.dtype() == DType::kF32 && rhs.dtype() == DType::kF32) {
      return shape_inference::WithDTypeKeepDynamic(result, DType::kC64);
    }
    if (lhs.dtype() == DType::kF64 && rhs.dtype() == DType::kF64) {
      return shape_inference::WithDTypeKeepDynamic(result, DType::kC128);
    }
    return InvalidArgument("complex needs two f32 or two f64 operands, got ", ShapeText(lhs),
                           " and ", ShapeText(rhs));
  }
  return result;
}

StatusOr<Shape> InferTernaryOpShape(Opcode opcode, const Shape& a, const Shape& b,
                                    const Shape& c) {
  XS_RETURN_IF_ERROR(ExpectArray(a, "operand 0"));
  XS_RETURN_IF_ERROR(ExpectArray(b, "operand 1"));
  XS_RETURN_IF_ERROR(ExpectArray(c, "operand 2"));
  if (opcode == Opcode::kSelect) {
    if (b.dtype() != c.dtype() || b.dims() != c.dims()) {
      return InvalidArgument("select's on_true ", ShapeText(b), " and on_false ", ShapeText(c),
                             " must have the same shape and element type; convert or broadcast "
                             "one of them");
    }
    if (a.dtype() != DType::kPred) {
      return InvalidArgument("the predicate must have element type pred, got ", ShapeText(a));
    }
    if (a.dims() != b.dims()) {
      return InvalidArgument("the predicate ", ShapeText(a), " must have the dims of on_true ",
                             ShapeText(b), "; broadcast it first");
    }
    return shape_inference::WithDTypeKeepDynamic(b, b.dtype());
  }
  if (opcode == Opcode::kClamp) {
    for (const Shape* bound : {&a, &c}) {
      if (bound->dtype() != b.dtype()) {
        return InvalidArgument("clamp's min ", ShapeText(a), ", operand ", ShapeText(b), " and max ",
                               ShapeText(c), " have different element types; convert the "
                               "bounds to ", DTypeName(b.dtype()));
      }
      if (bound->rank() != 0 && bound->dims() != b.dims()) {
        return InvalidArgument("clamp bounds must be scalars or have the operand's shape: min ",
                               ShapeText(a), ", operand ", ShapeText(b), ", max ", ShapeText(c));
      }
    }
    return b.WithoutLayout();
  }
  return InvalidArgument(OpcodeName(opcode), " is not a ternary op");
}

StatusOr<Shape> InferConvertShape(const Shape& operand, DType to) {
  XS_RETURN_IF_ERROR(ExpectArray(operand, "the operand of convert"));
  if (to == DType::kToken) return InvalidArgument("cannot convert to token");
  return shape_inference::WithDTypeKeepDynamic(operand, to);
}

StatusOr<Shape> InferBitcastConvertShape(const Shape& operand, DType to) {
  XS_RETURN_IF_ERROR(ExpectArray(operand, "the operand of bitcast-convert"));
  if (to == DType::kToken) return InvalidArgument("cannot bitcast-convert to token");
  DType from = operand.dtype();
  if (IsComplex(from) != IsComplex(to)) {
    return InvalidArgument("bitcast-convert between complex and real types: ", ShapeText(operand),
                           " to ", DTypeName(to));
  }
  const int in_bits = shape_inference::BitWidth(from), out_bits = shape_inference::BitWidth(to);
  if (std::max(in_bits, out_bits) % std::min(in_bits, out_bits) != 0) {
    return InvalidArgument("bitcast-convert from ", DTypeName(from), " (", in_bits, " bits) to ",
                           DTypeName(to), " (", out_bits, " bits): widths must divide");
  }
  const int64_t ratio = std::max(in_bits, out_bits) / std::min(in_bits, out_bits);
  std::vector<int64_t> dims = operand.dims();
  if (in_bits > out_bits) {
    dims.push_back(ratio);
  } else if (in_bits < out_bits) {
    if (dims.empty() || dims.back() != ratio) {
      return InvalidArgument("bitcast-convert from ", ShapeText(operand), " to ", DTypeName(to),
                             " needs a last dim of ", ratio, " (the width ratio)");
    }
    dims.pop_back();
  }
  return Shape(to, std::move(dims));
}

}  // namespace xs
