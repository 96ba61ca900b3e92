// Scalar computations inlined into kernels (reducers, scatter combiners, sort comparators).
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "xshard/cuda/kernel_codegen_internal.h"
#include "xshard/ir/computation.h"
#include "xshard/ir/instruction.h"

namespace xs::cuda::codegen {

StatusOr<std::string> ScalarLiteral(const Instruction& c) {
  const Array& a = c.literal();
  const DType t = a.dtype();
  if (t == DType::kPred) return std::string(a.GetDouble(0) != 0 ? "true" : "false");
  if (IsInteger(t)) {
    if (IsUnsignedInteger(t)) return "((" + CType(t) + ")" + std::to_string(static_cast<uint64_t>(a.GetDouble(0))) + "ULL)";
    return "((" + CType(t) + ")" + std::to_string(static_cast<int64_t>(a.GetDouble(0))) + "LL)";
  }
  char buf[64];
  const double v = a.GetDouble(0);
  if (std::isnan(v)) return FromCompute(t, t == DType::kF64 ? "__longlong_as_double(0x7ff8000000000000LL)" : "__int_as_float(0x7fc00000)");
  if (std::isinf(v)) {
    const std::string inf = t == DType::kF64 ? "__longlong_as_double(0x7ff0000000000000LL)" : "__int_as_float(0x7f800000)";
    return FromCompute(t, v < 0 ? "(-" + inf + ")" : inf);
  }
  std::snprintf(buf, sizeof(buf), "%a", v);
  return FromCompute(t, StrCat("(", ComputeType(t), ")", buf));
}

StatusOr<std::string> ScalarLambda(const Instruction& owner, const Computation& c, std::string_view lambda,
                                   const std::vector<DType>& params, const std::vector<DType>& results) {
  if (c.num_parameters() != static_cast<int>(params.size())) {
    return InvalidArgument("the computation '", c.name(), "' of '", owner.name(), "' takes ", c.num_parameters(),
                           " parameters; ", params.size(), " expected");
  }
  const int m = static_cast<int>(results.size());
  std::string args, body;
  for (size_t k = 0; k < params.size(); ++k) args += std::string(k ? ", " : "") + "const " + CType(params[k]) + " a" + std::to_string(k);
  for (int k = 0; k < m; ++k) args += std::string(args.empty() && k == 0 ? "" : ", ") + CType(results[k]) + "& r" + std::to_string(k);
  std::map<const Instruction*, std::string> name;
  int next = 0;
  for (const Instruction* i : c.MakeInstructionPostOrder()) {
    const std::string v = StrCat("c", next++);
    if (i->opcode() == Opcode::kParameter) {
      const int64_t p = i->parameter_number();
      if (!i->shape().IsArray() || i->shape().rank() != 0 || i->shape().dtype() != params[p]) {
        return Unimplemented("cuda: parameter ", p, " of the computation '", c.name(), "' of '", owner.name(), "' is ",
                             i->shape().ToString(), "; a scalar ", DTypeName(params[p]), " is expected");
      }
      name[i] = StrCat("a", p);
      continue;
    }
    if (i->opcode() == Opcode::kTuple && i == c.root()) continue;
    if (!i->shape().IsArray() || i->shape().rank() != 0) {
      return Unimplemented("cuda: the computation of '", owner.name(), "' has a non-scalar value '", i->name(), "'");
    }
    XS_RETURN_IF_ERROR(RequireDType(*i, i->shape().dtype()));
    std::string e;
    if (i->opcode() == Opcode::kConstant) {
      XS_ASSIGN_OR_RETURN(e, ScalarLiteral(*i));
    } else if (IsCodegenElementwise(i->opcode())) {
      std::vector<std::string> operands;
      for (const Instruction* o : i->operands()) operands.push_back(name.at(o));
      XS_ASSIGN_OR_RETURN(e, ElementwiseExpr(*i, operands));
    } else {
      return Unimplemented("cuda: the computation of '", owner.name(), "' uses ", OpcodeName(i->opcode()),
                           ", which generated kernels do not compute");
    }
    body += "    const " + CType(i->shape().dtype()) + " " + v + " = " + e + ";\n";
    name[i] = v;
  }
  const Instruction* root = c.root();
  std::vector<const Instruction*> outs;
  if (root->opcode() == Opcode::kTuple) {
    for (const Instruction* o : root->operands()) outs.push_back(o);
  } else {
    outs.push_back(root);
  }
  if (static_cast<int>(outs.size()) != m) {
    return InvalidArgument("the computation of '", owner.name(), "' returns ", outs.size(), " values; ", m, " expected");
  }
  for (int k = 0; k < m; ++k) {
    if (!outs[k]->shape().IsArray() || outs[k]->shape().dtype() != results[k]) {
      return Unimplemented("cuda: result ", k, " of the computation of '", owner.name(), "' is ",
                           outs[k]->shape().ToString(), "; ", DTypeName(results[k]), " is expected");
    }
    body += "    r" + std::to_string(k) + " = " + name.at(outs[k]) + ";\n";
  }
  return "auto " + std::string(lambda) + " = [&](" + args + ") {\n" + body + "  };";
}

}  // namespace xs::cuda::codegen
