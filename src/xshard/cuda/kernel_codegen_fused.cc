// GenerateFusedLoopKernel / GenerateElementwiseKernel: a fused loop's tile program (values,
// prologue, body, outputs, optional reduce) becomes one lambda computing every value of one
// element from its linear index, inside the elementwise or the reduction skeleton. Complex values
// (xs_c64 / xs_c128) go through AnyElementwiseExpr; a reduce of them is refused.
#include <optional>
#include <string>
#include <vector>

#include "xshard/cuda/kernel_codegen_internal.h"
#include "xshard/exec/fusion_plan.h"
#include "xshard/ir/instruction.h"

namespace xs::cuda {
namespace {

std::string V(int id) { return StrCat("v", id); }

// Element types of the loop's values, from the instructions of the ops that define and read
// them (FusedValue records only the size).
StatusOr<std::vector<DType>> ValueTypes(const FusedLoop& f) {
  std::vector<std::optional<DType>> type(f.values.size());
  auto visit = [&](const FusedOp& op) {
    XS_CHECK(op.inst != nullptr, "fused op without its instruction");
    type[op.out] = op.inst->shape().dtype();
    switch (op.kind) {
      case FusedOpKind::kUnary: case FusedOpKind::kBinary: case FusedOpKind::kTernary:
        for (int j = 0; j < 3; ++j) {
          if (op.in[j] >= 0) type[op.in[j]] = op.inst->operand(j)->shape().dtype();
        }
        break;
      case FusedOpKind::kCopy: type[op.in[0]] = op.inst->shape().dtype(); break;
      case FusedOpKind::kRotateLeft:  // x and the amount have the or's type
        type[op.in[0]] = type[op.in[1]] = op.inst->shape().dtype();
        break;
      default: break;
    }
  };
  for (const FusedOp& op : f.prologue) visit(op);
  for (const FusedOp& op : f.body) visit(op);
  if (f.has_reduce) type[f.reduce.value] = f.reduce.inst->operand(0)->shape().dtype();
  std::vector<DType> out(f.values.size(), DType::kF32);
  for (size_t v = 0; v < f.values.size(); ++v) {
    if (!type[v]) continue;  // an unused value
    XS_CHECK(DTypeSize(*type[v]) == f.values[v].esize, "fused value ", v, " size mismatch");
    out[v] = *type[v];
  }
  return out;
}

StatusOr<std::string> OpCode(const FusedLoop& f, const FusedOp& op, const std::vector<DType>& type) {
  const DType t = type[op.out];
  XS_RETURN_IF_ERROR(codegen::RequireMovable(*op.inst, t));
  const std::string decl = "    const " + codegen::ElemCType(t) + " " + V(op.out) + " = ";
  switch (op.kind) {
    case FusedOpKind::kFill:
      return decl + "((const " + codegen::ElemCType(t) + "*)a.p[" + std::to_string(op.in[0]) + "])[0];\n";
    case FusedOpKind::kCopy: return decl + V(op.in[0]) + ";\n";
    case FusedOpKind::kRotateLeft: {
      // (x << a) | (x >> (bits - a)) in unsigned arithmetic, each shift 0 when its amount is
      // bits or more (XLA's rule; CUDA's shifts are undefined there).
      const std::string u = DTypeSize(t) == 8 ? "unsigned long long" : "unsigned int";
      const std::string bits = DTypeSize(t) == 8 ? "64ull" : "32u";
      const std::string x = StrCat("rx", op.out), a = StrCat("ra", op.out), b = StrCat("rb", op.out);
      return "    const " + u + " " + x + " = (" + u + ")" + V(op.in[0]) + ", " + a + " = (" + u + ")" + V(op.in[1]) +
             ", " + b + " = " + bits + " - " + a + ";\n" + decl + "(" + codegen::ElemCType(t) + ")((" + a + " < " +
             bits + " ? " + x + " << " + a + " : (" + u + ")0) | (" + b + " < " + bits + " ? " + x + " >> " + b +
             " : (" + u + ")0));\n";
    }
    case FusedOpKind::kIota: {
      XS_RETURN_IF_ERROR(codegen::RequireDType(*op.inst, t));
      const std::string io = StrCat("io", op.out);
      // A slice of an iota: start + stride * the position along its dim.
      std::string value = "(long long)((i / " + codegen::Int(op.inner) + ") % " + codegen::Int(op.size) + ")";
      if (op.start != 0 || op.step != 1) {
        value = "(long long)" + codegen::Int(op.start) + " + (long long)" + codegen::Int(op.step) + " * " + value;
      }
      return "    const long long " + io + " = " + value + ";\n" + decl + codegen::ConvertExpr(DType::kS64, t, io) +
             ";\n";
    }
    case FusedOpKind::kGather: {
      const std::string g = StrCat("g", op.out);
      std::string code = "    idx_t " + g + " = 0;\n    { idx_t q = i;\n";
      int outer = static_cast<int>(f.dims.size());
      for (size_t d = 0; d < f.dims.size(); ++d) {
        if (op.strides[d] != 0) {
          outer = static_cast<int>(d);
          break;
        }
      }
      for (int d = static_cast<int>(f.dims.size()) - 1; d >= outer; --d) {
        const std::string dim = codegen::Int(f.dims[d]);
        const std::string mul = op.strides[d] == 1 ? "" : " * " + codegen::Int(op.strides[d]);
        if (op.strides[d] == 0) {
          code += "      q = q / " + dim + ";\n";
        } else {
          code += "      { const idx_t n = q / " + dim + "; " + g + " += (q - n * " + dim + ")" + mul + "; q = n; }\n";
        }
      }
      return code + "    }\n" + decl + "((const " + codegen::ElemCType(t) + "*)a.p[" + std::to_string(op.in[0]) + "])[" + g + "];\n";
    }
    case FusedOpKind::kConcat: {
      // Element i of the piece whose run holds it (bounds[k] <= i < bounds[k + 1]).
      const std::string c = StrCat("c", op.out), ct = codegen::ElemCType(t);
      std::string code = "    " + ct + " " + c + ";\n";
      for (size_t k = 0; k < op.pieces.size(); ++k) {
        const std::string read = c + " = ((const " + ct + "*)a.p[" + std::to_string(op.pieces[k]) + "])[i - (idx_t)" +
                                 codegen::Int(op.bounds[k]) + "];";
        if (k + 1 == op.pieces.size()) {
          code += "    " + std::string(k == 0 ? "" : "else ") + "{ " + read + " }\n";
        } else {
          code += "    " + std::string(k == 0 ? "" : "else ") + "if (i < (idx_t)" + codegen::Int(op.bounds[k + 1]) +
                  ") { " + read + " }\n";
        }
      }
      return code + decl + c + ";\n";
    }
    case FusedOpKind::kRowGather: {
      // Row i / inner of the table, its index clamped to [0, rows - 1] as XLA clamps gather
      // starts; offsets into the table in 64 bits (it may be larger than the loop).
      const DType it = op.inst->operand(1)->shape().dtype();
      const std::string r = StrCat("r", op.out), k = StrCat("k", op.out), inner = codegen::Int(op.inner);
      const std::string last = codegen::Int(op.size - 1);
      const std::string id =
          "((const " + codegen::ElemCType(it) + "*)a.p[" + std::to_string(op.in[1]) + "])[" + r + "]";
      std::string code = "    const idx_t " + r + " = i / " + inner + ";\n";
      if (IsUnsignedInteger(it)) {
        code += "    const unsigned long long " + k + "u = (unsigned long long)" + id + ";\n    const long long " + k +
                " = " + k + "u > (unsigned long long)" + last + " ? (long long)" + last + " : (long long)" + k + "u;\n";
      } else {
        code += "    const long long " + k + "s = (long long)" + id + ";\n    const long long " + k + " = " + k +
                "s < 0 ? 0LL : " + k + "s > (long long)" + last + " ? (long long)" + last + " : " + k + "s;\n";
      }
      return code + decl + "((const " + codegen::ElemCType(t) + "*)a.p[" + std::to_string(op.in[0]) + "])[" + k +
             " * (long long)" + inner + " + (long long)(i - " + r + " * " + inner + ")];\n";
    }
    default: {
      std::vector<std::string> args;
      for (int j = 0; j < 3 && op.in[j] >= 0; ++j) args.push_back(V(op.in[j]));
      XS_ASSIGN_OR_RETURN(std::string e, codegen::AnyElementwiseExpr(*op.inst, args));
      return decl + e + ";\n";
    }
  }
}

}  // namespace

StatusOr<GeneratedKernel> GenerateFusedLoopKernel(const FusedLoop& f) {
  XS_ASSIGN_OR_RETURN(std::vector<DType> type, ValueTypes(f));
  // Refuse unsupported element types naming the instruction that has them.
  for (const std::vector<FusedOp>* ops : {&f.prologue, &f.body}) {
    for (const FusedOp& op : *ops) {
      XS_RETURN_IF_ERROR(codegen::RequireMovable(*op.inst, op.inst->shape().dtype()));
      if (op.kind == FusedOpKind::kUnary || op.kind == FusedOpKind::kBinary || op.kind == FusedOpKind::kTernary) {
        for (const Instruction* o : op.inst->operands()) XS_RETURN_IF_ERROR(codegen::RequireMovable(*op.inst, o->shape().dtype()));
      }
    }
  }
  if (f.has_reduce) XS_RETURN_IF_ERROR(codegen::RequireDType(*f.reduce.inst, f.reduce.inst->shape().dtype()));
  int operands = 0;
  auto note = [&](int k) { operands = std::max(operands, k + 1); };
  for (const FusedValue& v : f.values) {
    if (v.kind == FusedValueKind::kInput || v.kind == FusedValueKind::kScalarInput) note(v.input);
  }
  for (const FusedOp& op : f.body) {
    if (op.kind == FusedOpKind::kGather) note(op.in[0]);
    if (op.kind == FusedOpKind::kConcat) {
      for (int k : op.pieces) note(k);
    }
    if (op.kind == FusedOpKind::kRowGather) {
      note(op.in[0]);
      note(op.in[1]);
    }
  }
  if (f.has_reduce) note(f.reduce.init);
  codegen::ElemSpec spec;
  for (const FusedOp& op : f.prologue) {
    XS_ASSIGN_OR_RETURN(std::string code, OpCode(f, op, type));
    spec.prologue += code.substr(2);  // prologue statements sit one level out
  }
  std::string params = "idx_t i";
  for (size_t v = 0; v < f.values.size(); ++v) {
    if (f.values[v].kind != FusedValueKind::kInput) continue;
    if (!codegen::MovableDType(type[v])) {
      return Unimplemented("cuda: a fused loop input has element type ", DTypeName(type[v]),
                           ", which generated kernels do not compute on");
    }
    params += ", const " + codegen::ElemCType(type[v]) + " " + V(static_cast<int>(v));
    spec.loads.push_back({f.values[v].input, type[v]});
  }
  std::string body;
  for (const FusedOp& op : f.body) {
    XS_ASSIGN_OR_RETURN(std::string code, OpCode(f, op, type));
    body += code;
  }
  for (size_t o = 0; o < f.outputs.size(); ++o) {
    const DType t = type[f.outputs[o].value];
    params += ", " + codegen::ElemCType(t) + "& y" + std::to_string(o);
    body += "    y" + std::to_string(o) + " = " + V(f.outputs[o].value) + ";\n";
    spec.stores.push_back({operands + static_cast<int>(o), t});
  }
  const int num_pointers = operands + static_cast<int>(f.outputs.size()) + (f.has_reduce ? 1 : 0);
  if (f.has_reduce) {
    const DType t = type[f.reduce.value];
    XS_RETURN_IF_ERROR(codegen::RequireDType(*f.reduce.inst, t));
    params += ", " + codegen::ElemCType(t) + "& r";
    body += "    r = " + V(f.reduce.value) + ";\n";
    spec.reduced = t;
  }
  spec.lambda = "auto elem = [&](" + params + ") {\n" + body + "  };";
  if (!f.has_reduce) return codegen::EmitElementwise("fused", spec, f.count, num_pointers);
  XS_ASSIGN_OR_RETURN(kernels::CombineKind combine, codegen::TypedCombiner(*f.reduce.inst));
  std::vector<bool> reduced(f.dims.size(), false);
  for (int64_t d : f.reduce.inst->dimensions()) reduced[d] = true;
  return codegen::EmitReduce("fused_reduce", spec, f.dims, reduced, combine, f.reduce.init,
                             operands + static_cast<int>(f.outputs.size()),
                             f.reduce.inst->shape().dtype(), num_pointers);
}

StatusOr<GeneratedKernel> GenerateElementwiseKernel(const Instruction& inst) {
  if (!inst.shape().IsArray()) {
    return Unimplemented("cuda: '", inst.name(), "' (", OpcodeName(inst.opcode()), ") has a tuple result");
  }
  FusedLoop f;
  f.dims = inst.shape().dims();
  f.count = inst.shape().num_elements();
  FusedOp op;
  op.kind = inst.operand_count() == 1   ? FusedOpKind::kUnary
            : inst.operand_count() == 2 ? FusedOpKind::kBinary
                                        : FusedOpKind::kTernary;
  if (inst.operand_count() < 1 || inst.operand_count() > 3) {
    return Unimplemented("cuda: '", inst.name(), "' (", OpcodeName(inst.opcode()), ") is not elementwise");
  }
  for (int j = 0; j < inst.operand_count(); ++j) {
    const Shape& s = inst.operand(j)->shape();
    if (!s.IsArray()) return Unimplemented("cuda: '", inst.name(), "' has a tuple operand");
    FusedValue v;
    v.esize = static_cast<int>(DTypeSize(s.dtype()));
    v.input = j;
    if (s.rank() == 0 && inst.shape().rank() != 0) {
      v.kind = FusedValueKind::kScalarInput;
      FusedOp fill;
      fill.kind = FusedOpKind::kFill;
      fill.in[0] = j;
      fill.out = static_cast<int>(f.values.size());
      fill.inst = inst.operand(j);
      f.prologue.push_back(fill);
    } else {
      v.kind = FusedValueKind::kInput;
    }
    op.in[j] = static_cast<int>(f.values.size());
    f.values.push_back(v);
  }
  FusedValue out;
  out.kind = FusedValueKind::kOutput;
  out.esize = static_cast<int>(DTypeSize(inst.shape().dtype()));
  out.output = 0;
  op.out = static_cast<int>(f.values.size());
  op.inst = &inst;
  f.values.push_back(out);
  f.body.push_back(op);
  f.outputs.push_back({op.out, -1, &inst});
  return GenerateFusedLoopKernel(f);
}

}  // namespace xs::cuda
