// The scalar op table of the generated kernels: each elementwise HLO op, convert, compare and
// reduction combiner as a CUDA expression, with the CPU executor's semantics
// (kernels/scalar_ops.h, kernels/numeric.h): wrapping integer arithmetic, XLA's division by zero
// and shift-width rules, NaN-propagating max / min with -0 < +0, saturating float -> int.
#include <string>
#include <vector>

#include "xshard/cuda/kernel_codegen_internal.h"
#include "xshard/exec/executable_plan.h"
#include "xshard/ir/instruction.h"

namespace xs::cuda::codegen {
namespace {

bool IsHalf(DType t) { return t == DType::kF16 || t == DType::kBF16; }
bool IsReal(DType t) { return IsHalf(t) || t == DType::kF32 || t == DType::kF64; }
int Bits(DType t) { return static_cast<int>(DTypeSize(t)) * 8; }

std::string UnsignedOf(DType t) {
  switch (DTypeSize(t)) {
    case 1: return "unsigned char";
    case 2: return "unsigned short";
    case 4: return "unsigned";
    default: return "unsigned long long";
  }
}
std::string SignedOf(DType t) {
  switch (DTypeSize(t)) {
    case 1: return "signed char";
    case 2: return "short";
    case 4: return "int";
    default: return "long long";
  }
}

// libm name for the compute type: expf for float, exp for double.
std::string F(DType t, const char* name) { return std::string(name) + (t == DType::kF64 ? "" : "f"); }
std::string Lit(DType t, const char* v) { return "((" + ComputeType(t) + ")" + v + ")"; }

std::string Cast(DType t, const std::string& e) { return "((" + CType(t) + ")(" + e + "))"; }

// Integer extremes as literals of the type.
std::string IntMin(DType t) {
  if (IsUnsignedInteger(t)) return Cast(t, "0");
  return Cast(t, "0x" + std::string(std::string("8") + std::string(DTypeSize(t) * 2 - 1, '0')) + "ULL");
}
std::string IntMax(DType t) {
  if (IsUnsignedInteger(t)) return Cast(t, "0x" + std::string(DTypeSize(t) * 2, 'f') + "ULL");
  return Cast(t, "0x7" + std::string(DTypeSize(t) * 2 - 1, 'f') + "ULL");
}

StatusOr<std::string> Unary(const Instruction& inst, DType t, const std::string& x) {
  const Opcode op = inst.opcode();
  const std::string c = ToCompute(t, x);
  auto real = [&](const std::string& e) { return FromCompute(t, e); };
  if (IsReal(t)) {
    switch (op) {
      case Opcode::kAbs: return real(F(t, "fabs") + "(" + c + ")");
      case Opcode::kNegate: return real("-(" + c + ")");
      case Opcode::kExp: return real(F(t, "exp") + "(" + c + ")");
      case Opcode::kLog: return real(F(t, "log") + "(" + c + ")");
      case Opcode::kSqrt: return real(F(t, "sqrt") + "(" + c + ")");
      case Opcode::kRsqrt: return real(Lit(t, "1") + " / " + F(t, "sqrt") + "(" + c + ")");
      case Opcode::kTanh: return real(F(t, "tanh") + "(" + c + ")");
      case Opcode::kSin: return real(F(t, "sin") + "(" + c + ")");
      case Opcode::kCos: return real(F(t, "cos") + "(" + c + ")");
      case Opcode::kTan: return real(F(t, "tan") + "(" + c + ")");
      case Opcode::kLogistic:
        return real(Lit(t, "1") + " / (" + Lit(t, "1") + " + " + F(t, "exp") + "(-(" + c + ")))");
      case Opcode::kExpm1: return real(F(t, "expm1") + "(" + c + ")");
      case Opcode::kLog1p: return real(F(t, "log1p") + "(" + c + ")");
      case Opcode::kCbrt: return real(F(t, "cbrt") + "(" + c + ")");
      case Opcode::kErf: return real(F(t, "erf") + "(" + c + ")");
      case Opcode::kCeil: return real(F(t, "ceil") + "(" + c + ")");
      case Opcode::kFloor: return real(F(t, "floor") + "(" + c + ")");
      case Opcode::kRoundNearestAfz: return real(F(t, "round") + "(" + c + ")");
      case Opcode::kRoundNearestEven: return real(F(t, "rint") + "(" + c + ")");
      case Opcode::kAtan: return real(F(t, "atan") + "(" + c + ")");
      case Opcode::kAcos: return real(F(t, "acos") + "(" + c + ")");
      case Opcode::kAsin: return real(F(t, "asin") + "(" + c + ")");
      case Opcode::kAcosh: return real(F(t, "acosh") + "(" + c + ")");
      case Opcode::kAsinh: return real(F(t, "asinh") + "(" + c + ")");
      case Opcode::kAtanh: return real(F(t, "atanh") + "(" + c + ")");
      case Opcode::kCosh: return real(F(t, "cosh") + "(" + c + ")");
      case Opcode::kSinh: return real(F(t, "sinh") + "(" + c + ")");
      case Opcode::kSign: return real("xs_sign(" + c + ")");
      case Opcode::kIsFinite: return "((bool)isfinite(" + c + "))";
      case Opcode::kReal: return x;
      case Opcode::kImag: return real(Lit(t, "0"));
      default: break;
    }
  } else if (t == DType::kPred) {
    if (op == Opcode::kNot) return "(!(" + x + "))";
  } else {
    const std::string u = UnsignedOf(t);
    const bool s = IsSignedInteger(t);
    switch (op) {
      case Opcode::kAbs:
        return s ? Cast(t, x + " < 0 ? (" + u + ")((" + u + ")0 - (" + u + ")" + x + ") : " + x) : x;
      case Opcode::kNegate: return Cast(t, "(" + u + ")0 - (" + u + ")" + x);
      case Opcode::kSign:
        return s ? Cast(t, "(" + x + " > 0) - (" + x + " < 0)") : Cast(t, x + " != 0");
      case Opcode::kNot: return Cast(t, "~" + x);
      case Opcode::kPopulationCount:
        return Bits(t) == 64 ? Cast(t, "__popcll((unsigned long long)" + x + ")")
                             : Cast(t, "__popc((unsigned)(" + u + ")" + x + ")");
      case Opcode::kClz:
        return Bits(t) == 64 ? Cast(t, "__clzll((long long)" + x + ")")
                             : Cast(t, "__clz((int)(unsigned)(" + u + ")" + x + ") - " +
                                           std::to_string(32 - Bits(t)));
      case Opcode::kReal: return x;
      default: break;
    }
  }
  return Unimplemented("cuda: ", OpcodeName(op), " of '", inst.name(), "' on ", DTypeName(t),
                       " has no generated kernel");
}

StatusOr<std::string> Compare(const Instruction& inst, DType t, const std::string& a, const std::string& b) {
  if (!inst.attrs().comparison_direction) return InvalidArgument("compare '", inst.name(), "' needs direction=");
  const char* ops[] = {"==", "!=", ">=", ">", "<=", "<"};  // ComparisonDirection order
  const std::string o = ops[static_cast<int>(*inst.attrs().comparison_direction)];
  ComparisonType k = inst.attrs().comparison_type;
  if (k == ComparisonType::kNone) {
    k = IsSignedInteger(t) ? ComparisonType::kSigned
        : (IsUnsignedInteger(t) || t == DType::kPred) ? ComparisonType::kUnsigned : ComparisonType::kFloat;
  }
  std::string ka, kb;
  switch (k) {
    case ComparisonType::kTotalOrder:
      if (!IsReal(t)) return Unimplemented("cuda: compare TOTALORDER of '", inst.name(), "' on ", DTypeName(t));
      if (IsHalf(t)) {
        ka = "xs_key16(" + a + ")", kb = "xs_key16(" + b + ")";
      } else {
        ka = "xs_key(" + a + ")", kb = "xs_key(" + b + ")";
      }
      break;
    case ComparisonType::kSigned:
    case ComparisonType::kUnsigned:
      if (IsReal(t)) return Unimplemented("cuda: compare of '", inst.name(), "': integer order on ", DTypeName(t));
      ka = "((" + (k == ComparisonType::kSigned ? SignedOf(t) : UnsignedOf(t)) + ")" + a + ")";
      kb = "((" + (k == ComparisonType::kSigned ? SignedOf(t) : UnsignedOf(t)) + ")" + b + ")";
      break;
    default:
      ka = ToCompute(t, a), kb = ToCompute(t, b);
      break;
  }
  return "(" + ka + " " + o + " " + kb + ")";
}

StatusOr<std::string> Binary(const Instruction& inst, DType t, const std::string& a, const std::string& b) {
  const Opcode op = inst.opcode();
  if (op == Opcode::kCompare) return Compare(inst, t, a, b);
  if (IsReal(t)) {
    const std::string ca = ToCompute(t, a), cb = ToCompute(t, b);
    auto real = [&](const std::string& e) { return FromCompute(t, e); };
    switch (op) {
      case Opcode::kAdd: return real(ca + " + " + cb);
      case Opcode::kSubtract: return real(ca + " - " + cb);
      case Opcode::kMultiply: return real(ca + " * " + cb);
      case Opcode::kDivide: return real(ca + " / " + cb);
      case Opcode::kRemainder: return real(F(t, "fmod") + "(" + ca + ", " + cb + ")");
      case Opcode::kMaximum: return real("xs_fmax(" + ca + ", " + cb + ")");
      case Opcode::kMinimum: return real("xs_fmin(" + ca + ", " + cb + ")");
      case Opcode::kPower: return real("xs_fpow(" + ca + ", " + cb + ")");
      case Opcode::kAtan2: return real(F(t, "atan2") + "(" + ca + ", " + cb + ")");
      default: break;
    }
  } else if (t == DType::kPred) {
    switch (op) {
      case Opcode::kAdd: case Opcode::kOr: case Opcode::kMaximum: return "(" + a + " || " + b + ")";
      case Opcode::kMultiply: case Opcode::kAnd: case Opcode::kMinimum: return "(" + a + " && " + b + ")";
      case Opcode::kSubtract: case Opcode::kXor: return "(" + a + " != " + b + ")";
      case Opcode::kPower: return "(" + a + " || !" + b + ")";
      default: break;
    }
  } else {
    const std::string u = UnsignedOf(t), ull = "(unsigned long long)";
    const bool s = IsSignedInteger(t);
    const std::string bits = std::to_string(Bits(t));
    switch (op) {
      case Opcode::kAdd: return Cast(t, ull + a + " + " + ull + b);
      case Opcode::kSubtract: return Cast(t, ull + a + " - " + ull + b);
      case Opcode::kMultiply: return Cast(t, ull + a + " * " + ull + b);
      case Opcode::kDivide:
        return s ? "xs_sdiv(" + a + ", " + b + ", " + IntMin(t) + ")"
                 : "(" + b + " == 0 ? " + IntMax(t) + " : " + Cast(t, a + " / " + b) + ")";
      case Opcode::kRemainder:
        return s ? "xs_srem(" + a + ", " + b + ", " + IntMin(t) + ")"
                 : "(" + b + " == 0 ? " + a + " : " + Cast(t, a + " % " + b) + ")";
      case Opcode::kMaximum: return "(" + a + " > " + b + " ? " + a + " : " + b + ")";
      case Opcode::kMinimum: return "(" + a + " < " + b + " ? " + a + " : " + b + ")";
      case Opcode::kPower:
        return Cast(t, "xs_ipow(" + ull + "(" + u + ")" + a + ", " + ull + "(" + u + ")" + b + ", " +
                           a + " == 1, " + b + " == 0, " + (s ? b + " < 0" : "false") + ")");
      case Opcode::kAnd: return Cast(t, a + " & " + b);
      case Opcode::kOr: return Cast(t, a + " | " + b);
      case Opcode::kXor: return Cast(t, a + " ^ " + b);
      case Opcode::kShiftLeft:
        return "((" + u + ")" + b + " >= " + bits + "u ? " + Cast(t, "0") + " : " +
               Cast(t, "(" + u + ")" + a + " << (" + u + ")" + b) + ")";
      case Opcode::kShiftRightLogical:
        return "((" + u + ")" + b + " >= " + bits + "u ? " + Cast(t, "0") + " : " +
               Cast(t, "(" + u + ")" + a + " >> (" + u + ")" + b) + ")";
      case Opcode::kShiftRightArithmetic:
        return "((" + u + ")" + b + " >= " + bits + "u ? " + Cast(t, "((" + SignedOf(t) + ")" + a + " < 0) ? -1 : 0") +
               " : " + Cast(t, "(" + SignedOf(t) + ")" + a + " >> (" + u + ")" + b) + ")";
      case Opcode::kMulhi:
        if (Bits(t) == 64) return Cast(t, std::string(s ? "__mul64hi" : "__umul64hi") + "(" + a + ", " + b + ")");
        if (Bits(t) == 32) return Cast(t, std::string(s ? "__mulhi" : "__umulhi") + "(" + a + ", " + b + ")");
        return Cast(t, std::string(s ? "((long long)" : "((unsigned long long)") + a + " * " + b + ") >> " + bits);
      default: break;
    }
  }
  return Unimplemented("cuda: ", OpcodeName(op), " of '", inst.name(), "' on ", DTypeName(t),
                       " has no generated kernel");
}

}  // namespace

bool SupportedDType(DType t) {
  switch (t) {
    case DType::kPred: case DType::kS8: case DType::kS16: case DType::kS32: case DType::kS64:
    case DType::kU8: case DType::kU16: case DType::kU32: case DType::kU64: case DType::kF16:
    case DType::kBF16: case DType::kF32: case DType::kF64:
      return true;
    default:
      return false;
  }
}

Status RequireDType(const Instruction& inst, DType t) {
  if (SupportedDType(t)) return OkStatus();
  return Unimplemented("cuda: '", inst.name(), "' (", OpcodeName(inst.opcode()), ") has element type ",
                       DTypeName(t), ", which generated kernels do not compute on (pred, s8-s64, "
                       "u8-u64, f16, bf16, f32, f64)");
}

std::string CType(DType t) {
  switch (t) {
    case DType::kPred: return "bool";
    case DType::kS8: return "signed char";
    case DType::kS16: return "short";
    case DType::kS32: return "int";
    case DType::kS64: return "long long";
    case DType::kU8: return "unsigned char";
    case DType::kU16: case DType::kF16: case DType::kBF16: return "unsigned short";
    case DType::kU32: return "unsigned";
    case DType::kU64: return "unsigned long long";
    case DType::kF32: return "float";
    case DType::kF64: return "double";
    default: XS_CHECK(false, "no CUDA type for ", DTypeName(t));
  }
  return "";
}

std::string ComputeType(DType t) { return IsHalf(t) ? "float" : CType(t); }

std::string ToCompute(DType t, const std::string& e) {
  if (t == DType::kF16) return "xs_h2f(" + e + ")";
  if (t == DType::kBF16) return "xs_b2f(" + e + ")";
  return e;
}

std::string FromCompute(DType t, const std::string& e) {
  if (t == DType::kF16) return "xs_f2h(" + e + ")";
  if (t == DType::kBF16) return "xs_f2b(" + e + ")";
  return Cast(t, e);
}

std::string ConvertExpr(DType from, DType to, const std::string& e) {
  if (from == to) return e;
  if (to == DType::kPred) return "(" + ToCompute(from, e) + " != 0)";
  if (from == DType::kF64 && IsHalf(to)) return FromCompute(to, "xs_d2f_odd(" + e + ")");
  if (IsHalf(from)) return ConvertExpr(DType::kF32, to, ToCompute(from, e));
  if (IsHalf(to)) return FromCompute(to, ConvertExpr(from, DType::kF32, e));
  if (IsInteger(to) && (from == DType::kF32 || from == DType::kF64)) {
    // NaN -> 0; saturate at the integer's range (bounds are powers of two, exact in the float).
    const std::string f = ComputeType(from);
    std::string low = "0", high = "0x1p";
    if (!IsUnsignedInteger(to)) (low = "-0x1p") += std::to_string(Bits(to) - 1);
    high += std::to_string(IsUnsignedInteger(to) ? Bits(to) : Bits(to) - 1);
    return "(" + e + " != " + e + " ? " + Cast(to, "0") + " : " + e + " <= (" + f + ")" + low + " ? " +
           IntMin(to) + " : " + e + " >= (" + f + ")" + high + " ? " + IntMax(to) + " : " + Cast(to, e) + ")";
  }
  if (from == DType::kPred) return Cast(to, e + " ? 1 : 0");
  return Cast(to, e);
}

StatusOr<std::string> ElementwiseExpr(const Instruction& inst, const std::vector<std::string>& args) {
  for (const Instruction* o : inst.operands()) XS_RETURN_IF_ERROR(RequireDType(inst, o->shape().dtype()));
  XS_RETURN_IF_ERROR(RequireDType(inst, inst.shape().dtype()));
  const DType t = inst.operand_count() > 0 ? inst.operand(0)->shape().dtype() : inst.shape().dtype();
  const DType out = inst.shape().dtype();
  switch (inst.opcode()) {
    case Opcode::kCopy: return args[0];
    case Opcode::kConvert: return ConvertExpr(t, out, args[0]);
    case Opcode::kBitcastConvert:
      if (DTypeSize(t) != DTypeSize(out)) break;
      return "xs_bitcast<" + CType(out) + ">(" + args[0] + ")";
    case Opcode::kSelect: return "(" + args[0] + " ? " + args[1] + " : " + args[2] + ")";
    case Opcode::kClamp: {
      const DType x = inst.operand(1)->shape().dtype();
      return "xs_clamp(" + args[0] + ", " + args[1] + ", " + args[2] + ", " + ToCompute(x, args[0]) +
             ", " + ToCompute(x, args[1]) + ", " + ToCompute(x, args[2]) + ")";
    }
    default: break;
  }
  if (inst.operand_count() == 1) return Unary(inst, t, args[0]);
  if (inst.operand_count() == 2) return Binary(inst, t, args[0], args[1]);
  return Unimplemented("cuda: '", inst.name(), "' (", OpcodeName(inst.opcode()),
                       ") is not an elementwise op the generated kernels compute");
}

StatusOr<std::string> CombineExpr(kernels::CombineKind kind, DType t, const std::string& a,
                                  const std::string& b) {
  using K = kernels::CombineKind;
  const bool real = IsReal(t), pred = t == DType::kPred;
  const std::string ull = "(unsigned long long)";
  const std::string acc = ComputeType(t);
  switch (kind) {
    case K::kAdd:
      if (real) return "(" + a + " + " + b + ")";
      if (pred) return "(" + a + " || " + b + ")";
      return Cast(t, ull + a + " + " + ull + b);
    case K::kMultiply:
      if (real) return "(" + a + " * " + b + ")";
      if (pred) return "(" + a + " && " + b + ")";
      return Cast(t, ull + a + " * " + ull + b);
    case K::kMaximum:
      if (real) return "xs_fmax(" + a + ", " + b + ")";
      if (pred) return "(" + a + " || " + b + ")";
      return "(" + a + " > " + b + " ? " + a + " : " + b + ")";
    case K::kMinimum:
      if (real) return "xs_fmin(" + a + ", " + b + ")";
      if (pred) return "(" + a + " && " + b + ")";
      return "(" + a + " < " + b + " ? " + a + " : " + b + ")";
    case K::kAnd:
      if (pred) return "(" + a + " && " + b + ")";
      if (!real) return Cast(t, a + " & " + b);
      break;
    case K::kOr:
      if (pred) return "(" + a + " || " + b + ")";
      if (!real) return Cast(t, a + " | " + b);
      break;
    default: break;
  }
  return Unimplemented("cuda: no reduction combiner for this kind on ", DTypeName(t));
}

StatusOr<std::string> IdentityExpr(kernels::CombineKind kind, DType t) {
  using K = kernels::CombineKind;
  const bool real = IsReal(t), pred = t == DType::kPred;
  const std::string acc = ComputeType(t);
  const std::string inf = acc == "double" ? "__longlong_as_double(0x7ff0000000000000LL)" : "__int_as_float(0x7f800000)";
  switch (kind) {
    case K::kAdd: case K::kOr: return pred ? "false" : "((" + acc + ")0)";
    case K::kMultiply: return pred ? "true" : "((" + acc + ")1)";
    case K::kAnd: return pred ? "true" : Cast(t, "~0ULL");
    case K::kMaximum: return pred ? "false" : real ? "(-" + inf + ")" : IntMin(t);
    case K::kMinimum: return pred ? "true" : real ? inf : IntMax(t);
    default: break;
  }
  return Unimplemented("cuda: no identity for this combiner on ", DTypeName(t));
}

StatusOr<kernels::CombineKind> TypedCombiner(const Instruction& inst) {
  const Computation* c = inst.to_apply();
  const kernels::CombineKind k =
      c == nullptr ? kernels::CombineKind::kGeneric : ClassifyCombiner(*c, /*allow_overwrite=*/false);
  if (k == kernels::CombineKind::kGeneric || k == kernels::CombineKind::kOverwrite) {
    return Unimplemented("cuda: '", inst.name(), "' (", OpcodeName(inst.opcode()),
                         ") has a reducer that is not add, multiply, maximum, minimum, and or or");
  }
  return k;
}

std::string IndexType(int64_t largest) { return largest < (int64_t{1} << 30) ? "int" : "long long"; }

std::string Int(int64_t v) { return std::to_string(v) + (v >= (int64_t{1} << 31) || v < -(int64_t{1} << 31) ? "LL" : ""); }

}  // namespace xs::cuda::codegen
