// Complex elements (c64, c128) in generated kernels: their storage type, the types data-movement
// kernels may move, and the elementwise ops on complex values as CUDA expressions over the
// prelude's xs_c64 / xs_c128 helpers, following the CPU's std::complex (kernels/scalar_ops.h,
// kernels/numeric.h ConvertScalar).
#include <string>
#include <vector>

#include "xshard/cuda/kernel_codegen_internal.h"
#include "xshard/ir/instruction.h"

namespace xs::cuda::codegen {
namespace {

// The component type of complex `t`: f32 for c64, f64 for c128.
DType Part(DType t) { return t == DType::kC64 ? DType::kF32 : DType::kF64; }

std::string ComplexConvert(DType from, DType to, const std::string& e) {
  if (from == to) return e;
  if (IsComplexDType(from) && IsComplexDType(to)) {
    const std::string p = CType(Part(to));
    return "xs_cplx((" + p + ")(" + e + ").re, (" + p + ")(" + e + ").im)";
  }
  if (IsComplexDType(to)) {  // real -> complex: (x, 0)
    const std::string p = CType(Part(to));
    const std::string x = from == DType::kPred ? "(" + e + " ? 1 : 0)" : ToCompute(from, e);
    return "xs_cplx((" + p + ")(" + x + "), (" + p + ")0)";
  }
  // complex -> real: pred is x != 0; else the real part, converted.
  if (to == DType::kPred) return "((" + e + ").re != 0 || (" + e + ").im != 0)";
  return ConvertExpr(Part(from), to, "(" + e + ").re");
}

}  // namespace

bool IsComplexDType(DType t) { return t == DType::kC64 || t == DType::kC128; }

bool MovableDType(DType t) { return SupportedDType(t) || IsComplexDType(t); }

Status RequireMovable(const Instruction& inst, DType t) {
  if (MovableDType(t)) return OkStatus();
  return RequireDType(inst, t);
}

std::string ElemCType(DType t) {
  if (t == DType::kC64) return "xs_c64";
  if (t == DType::kC128) return "xs_c128";
  return CType(t);
}

StatusOr<std::string> AnyElementwiseExpr(const Instruction& inst, const std::vector<std::string>& args) {
  bool complex = IsComplexDType(inst.shape().dtype());
  for (const Instruction* o : inst.operands()) complex = complex || IsComplexDType(o->shape().dtype());
  if (!complex) return ElementwiseExpr(inst, args);
  for (const Instruction* o : inst.operands()) XS_RETURN_IF_ERROR(RequireMovable(inst, o->shape().dtype()));
  XS_RETURN_IF_ERROR(RequireMovable(inst, inst.shape().dtype()));
  const DType t = inst.operand_count() > 0 ? inst.operand(0)->shape().dtype() : inst.shape().dtype();
  const DType out = inst.shape().dtype();
  const Opcode op = inst.opcode();
  auto unsupported = [&]() {
    return Unimplemented("cuda: ", OpcodeName(op), " of '", inst.name(), "' on ", DTypeName(t),
                         " has no generated kernel (complex values: add, subtract, multiply, divide, negate, abs, "
                         "sign, exp, real, imag, complex, convert, compare EQ / NE, select, copy)");
  };
  switch (op) {
    case Opcode::kCopy: return args[0];
    case Opcode::kConvert: return ComplexConvert(t, out, args[0]);
    case Opcode::kSelect:
      if (inst.operand(1)->shape().dtype() != out || inst.operand(2)->shape().dtype() != out) return unsupported();
      return "(" + args[0] + " ? " + args[1] + " : " + args[2] + ")";
    default: break;
  }
  if (op == Opcode::kComplex && inst.operand_count() == 2 && IsComplexDType(out) && inst.operand(1)->shape().dtype() == t &&
      (t == DType::kF32 || t == DType::kF64)) {
    return "xs_cplx(" + args[0] + ", " + args[1] + ")";
  }
  if (!IsComplexDType(t)) return unsupported();
  if (inst.operand_count() == 1) {
    switch (op) {
      case Opcode::kNegate: return "xs_cneg(" + args[0] + ")";
      case Opcode::kAbs: return "xs_cabs(" + args[0] + ")";
      case Opcode::kSign: return "xs_csign(" + args[0] + ")";
      case Opcode::kExp: return "xs_cexp(" + args[0] + ")";
      case Opcode::kReal: return "(" + args[0] + ").re";
      case Opcode::kImag: return "(" + args[0] + ").im";
      default: return unsupported();
    }
  }
  if (inst.operand_count() != 2 || inst.operand(1)->shape().dtype() != t) return unsupported();
  switch (op) {
    case Opcode::kAdd: return "xs_cadd(" + args[0] + ", " + args[1] + ")";
    case Opcode::kSubtract: return "xs_csub(" + args[0] + ", " + args[1] + ")";
    case Opcode::kMultiply: return "xs_cmul(" + args[0] + ", " + args[1] + ")";
    case Opcode::kDivide: return "xs_cdiv(" + args[0] + ", " + args[1] + ")";
    case Opcode::kCompare:
      if (inst.attrs().comparison_direction == ComparisonDirection::kEq) {
        return "xs_ceq(" + args[0] + ", " + args[1] + ")";
      }
      if (inst.attrs().comparison_direction == ComparisonDirection::kNe) {
        return "(!xs_ceq(" + args[0] + ", " + args[1] + "))";
      }
      return unsupported();
    default: return unsupported();
  }
}

}  // namespace xs::cuda::codegen
