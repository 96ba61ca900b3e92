// Kernels for scan, map and reduce-precision.
//
// map: elementwise, the to_apply computation inlined (ScalarLambda) per element.
// reduce-precision: elementwise bit manipulation, the CPU executor's (XLA's evaluator's)
// rounding exactly: round the mantissa to nearest even on the bits, flush exponents out of the
// reduced range to zero / inf, NaN kept (inf without mantissa bits); f16 / bf16 go through f32.
// scan: when every value of the body is either one element (scalars, broadcast sources) or has
// one common shape S and every op combines only elements at the same position of S (elementwise
// ops, broadcasts of one element, scalar constants, reshapes that keep the dims), one thread per
// position of S walks the scanned dim in order (reverse when is_reverse), its carries in
// registers and the body inlined: the CPU's order and rounding, so bit-identical results. Other
// bodies are refused (Unimplemented naming the scan and the blocking instruction).
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "xshard/base/strings.h"
#include "xshard/cuda/kernel_codegen_internal.h"
#include "xshard/ir/computation.h"
#include "xshard/ir/instruction.h"

namespace xs::cuda {
namespace {

using codegen::CType;
using codegen::Int;

int64_t Product(const std::vector<int64_t>& dims, size_t from) {
  int64_t p = 1;
  for (size_t d = from; d < dims.size(); ++d) p *= dims[d];
  return p;
}

StatusOr<std::vector<GeneratedKernel>> One(GeneratedKernel k) {
  std::vector<GeneratedKernel> out;
  out.push_back(std::move(k));
  return out;
}

StatusOr<std::vector<GeneratedKernel>> GenerateMap(const Instruction& inst) {
  const Computation* f = inst.to_apply();
  if (f == nullptr || !inst.shape().IsArray()) {
    return InvalidArgument("map '", inst.name(), "' needs to_apply= and an array result");
  }
  const DType out = inst.shape().dtype();
  XS_RETURN_IF_ERROR(codegen::RequireDType(inst, out));
  codegen::ElemSpec spec;
  std::vector<DType> params;
  std::string args, call;
  for (int k = 0; k < inst.operand_count(); ++k) {
    const Shape& s = inst.operand(k)->shape();
    if (!s.IsArray() || s.dims() != inst.shape().dims()) {
      return InvalidArgument("map '", inst.name(), "': operand ", k, " (", s.ToString(false),
                             ") must have the result's dims");
    }
    XS_RETURN_IF_ERROR(codegen::RequireDType(inst, s.dtype()));
    params.push_back(s.dtype());
    spec.loads.push_back({k, s.dtype()});
    args += ", const " + CType(s.dtype()) + " x" + std::to_string(k);
    call += "x" + std::to_string(k) + ", ";
  }
  spec.stores = {{inst.operand_count(), out}};
  XS_ASSIGN_OR_RETURN(std::string fn, codegen::ScalarLambda(inst, *f, "fn", params, {out}));
  spec.prologue = "  " + fn + "\n";
  spec.lambda = "auto elem = [&](idx_t" + args + ", " + CType(out) + "& y) { fn(" + call + "y); };";
  return One(codegen::EmitElementwise("map", spec, inst.shape().num_elements(), inst.operand_count() + 1));
}

// The CPU's ReducePrecisionValue<F, U> (exec/executable_elementwise.cc) on `v` of type `f`,
// with the masks worked out here: statements setting `out` from `v`.
std::string ReducePrecisionCode(int src_mantissa, int src_exponent, int64_t exponent_bits, int64_t mantissa_bits,
                                const std::string& f, const std::string& u, const std::string& inf) {
  const int width = 1 + src_mantissa + src_exponent;
  const uint64_t all = width == 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
  auto lit = [&](uint64_t v) { return "((" + u + ")" + std::to_string(v & all) + "ULL)"; };
  std::string b = "    " + u + " bits = xs_bitcast<" + u + ">(v);\n";
  if (mantissa_bits < src_mantissa) {
    const int shift = src_mantissa - static_cast<int>(mantissa_bits);
    const uint64_t last_bit = uint64_t{1} << shift;
    b += "    bits = (" + u + ")((" + u + ")(bits + ((bits >> " + std::to_string(shift) + ") & 1u)) + " +
         lit((last_bit >> 1) - 1) + ") & " + lit(~(last_bit - 1)) + ";\n";
  }
  if (exponent_bits < src_exponent) {
    const uint64_t sign = uint64_t{1} << (width - 1);
    const uint64_t exp_mask = ((uint64_t{1} << src_exponent) - 1) << src_mantissa;
    const uint64_t bias = (uint64_t{1} << (src_exponent - 1)) - 1;
    const uint64_t reduced_bias = (uint64_t{1} << (exponent_bits - 1)) - 1;
    const uint64_t max_exp = bias + reduced_bias, min_exp = bias - reduced_bias;
    b += "    { const " + u + " e = bits & " + lit(exp_mask) + ";\n";
    b += "      if (e > " + lit(max_exp << src_mantissa) + ") bits = (bits & " + lit(sign) + ") | " + lit(exp_mask) +
         ";\n";
    b += "      if (e <= " + lit(min_exp << src_mantissa) + ") bits = bits & " + lit(sign) + "; }\n";
  }
  b += "    " + f + " out = xs_bitcast<" + f + ">(bits);\n";
  b += "    if (v != v) out = " + (mantissa_bits > 0 ? std::string("v") : inf) + ";\n";
  return b;
}

StatusOr<std::vector<GeneratedKernel>> GenerateReducePrecision(const Instruction& inst) {
  const DType t = inst.shape().dtype();
  const auto& a = inst.attrs();
  if (inst.operand_count() != 1 || !inst.shape().IsArray() || inst.operand(0)->shape().dtype() != t) {
    return InvalidArgument("reduce-precision '", inst.name(), "' needs one operand of its result's type");
  }
  if (t != DType::kF16 && t != DType::kBF16 && t != DType::kF32 && t != DType::kF64) {
    return Unimplemented("cuda: reduce-precision '", inst.name(), "' of ", DTypeName(t),
                         " (f16, bf16, f32 and f64 are generated)");
  }
  if (!a.exponent_bits || !a.mantissa_bits || *a.exponent_bits < 1 || *a.mantissa_bits < 0 || *a.exponent_bits > 62) {
    return InvalidArgument("reduce-precision '", inst.name(),
                           "' needs exponent_bits in [1, 62] and mantissa_bits >= 0");
  }
  const bool f64 = t == DType::kF64;
  const std::string f = f64 ? "double" : "float", u = f64 ? "unsigned long long" : "unsigned int";
  const std::string inf = f64 ? "__longlong_as_double(0x7ff0000000000000LL)" : "__int_as_float(0x7f800000)";
  codegen::ElemSpec spec;
  spec.loads = {{0, t}};
  spec.stores = {{1, t}};
  // The CPU widens f16 / bf16 (exactly) and f32 (through double: a signaling NaN comes back quiet).
  std::string widen = "    const " + f + " v = " + codegen::ToCompute(t, "x") + ";\n";
  if (t == DType::kF32) widen = "    const float v = (x != x) ? __uint_as_float(__float_as_uint(x) | 0x400000u) : x;\n";
  spec.lambda = "auto elem = [&](idx_t, const " + CType(t) + " x, " + CType(t) + "& y) {\n" + widen +
                ReducePrecisionCode(f64 ? 52 : 23, f64 ? 11 : 8, *a.exponent_bits, *a.mantissa_bits, f, u, inf) +
                "    y = " + codegen::FromCompute(t, "out") + ";\n  };";
  return One(codegen::EmitElementwise("reduce_precision", spec, inst.shape().num_elements(), 2));
}

// The body of a scan as statements computing every value at one position of the common shape
// `pos` (values of one element are the same at every position). `names` holds the parameters'.
struct InlinedBody {
  std::string code;
  std::vector<std::string> results;  // the root tuple's elements
};

Status Blocked(const Instruction& scan, const Computation& f, const Instruction& i, std::string_view why) {
  return Unimplemented("cuda: scan '", scan.name(), "': its body '", f.name(), "' has ", OpcodeName(i.opcode()), " '",
                       i.name(), "' (", i.shape().ToString(false), "), ", why,
                       "; generated scans take bodies of elementwise ops, broadcasts of one element and scalar "
                       "constants, whose values all have one shape or one element");
}

StatusOr<InlinedBody> InlineBody(const Instruction& scan, const Computation& f, const std::vector<int64_t>& pos,
                                 std::map<const Instruction*, std::string> names) {
  InlinedBody out;
  int next = 0;
  for (const Instruction* i : f.MakeInstructionPostOrder()) {
    if (i->opcode() == Opcode::kParameter) continue;
    if (i->opcode() == Opcode::kTuple && i == f.root()) {
      for (const Instruction* o : i->operands()) out.results.push_back(names.at(o));
      continue;
    }
    const Shape& s = i->shape();
    if (!s.IsArray()) return Blocked(scan, f, *i, "a tuple value inside the body");
    const bool one = s.num_elements() == 1;
    if (!one && s.dims() != pos) {
      return Blocked(scan, f, *i, "whose shape is neither one element nor the positions' shape");
    }
    XS_RETURN_IF_ERROR(codegen::RequireDType(*i, s.dtype()));
    const Instruction* o0 = i->operand_count() > 0 ? i->operand(0) : nullptr;
    std::string e;
    const Opcode op = i->opcode();
    if (op == Opcode::kConstant) {
      if (!one) return Blocked(scan, f, *i, "an array constant (a different value at each position)");
      if (s.rank() != 0) return Blocked(scan, f, *i, "a one-element constant of rank above 0");
      XS_ASSIGN_OR_RETURN(e, codegen::ScalarLiteral(*i));
    } else if (op == Opcode::kBroadcast || op == Opcode::kReshape || op == Opcode::kBitcast || op == Opcode::kCopy) {
      if (o0->shape().dtype() != s.dtype()) return Blocked(scan, f, *i, "which changes the element type");
      if (o0->shape().num_elements() != 1 && o0->shape().dims() != s.dims()) {
        return Blocked(scan, f, *i, "which moves elements to other positions");
      }
      if (op == Opcode::kBroadcast && o0->shape().dims() == s.dims() && !one) {
        for (size_t d = 0; d < i->dimensions().size(); ++d) {
          if (i->dimensions()[d] != static_cast<int64_t>(d)) return Blocked(scan, f, *i, "which transposes");
        }
      }
      e = names.at(o0);
    } else {
      if (!IsCodegenElementwise(op)) return Blocked(scan, f, *i, "which is not elementwise");
      std::vector<std::string> args;
      for (const Instruction* o : i->operands()) {
        // One-element operands (clamp's bounds, a scalar select predicate) are the same everywhere.
        if (o->shape().dims() != s.dims() && o->shape().num_elements() != 1) {
          return Blocked(scan, f, *i, "whose operands' shapes differ from its own");
        }
        args.push_back(names.at(o));
      }
      XS_ASSIGN_OR_RETURN(e, codegen::ElementwiseExpr(*i, args));
    }
    const std::string v = StrCat("v", next++);
    out.code += "      const " + CType(s.dtype()) + " " + v + " = " + e + ";\n";
    names[i] = v;
  }
  if (f.root()->opcode() != Opcode::kTuple) return Blocked(scan, f, *f.root(), "a root that is not a tuple");
  return out;
}

StatusOr<std::vector<GeneratedKernel>> GenerateScan(const Instruction& inst) {
  auto invalid = [&inst](auto&&... parts) {
    return InvalidArgument("scan '", inst.name(), "': ", std::forward<decltype(parts)>(parts)...);
  };
  const Computation* f = inst.to_apply();
  const std::vector<int64_t> dims = inst.attrs().dimensions.value_or(std::vector<int64_t>{});
  std::optional<std::string_view> nc = inst.attrs().Other("num_carries");
  int64_t carries = 0;
  if (f == nullptr || dims.size() != 1 || !nc || !ParseInt64(*nc, &carries) || carries < 0 ||
      carries > inst.operand_count() || !inst.shape().IsTuple() || inst.shape().tuple_size() < carries ||
      f->num_parameters() != inst.operand_count()) {
    return invalid("needs to_apply=, dimensions={d}, num_carries=C and a tuple result (the executor checks these)");
  }
  const bool reverse = inst.attrs().Other("is_reverse").value_or("false") == "true";
  const int64_t d = dims[0];
  const int c = static_cast<int>(carries), n = inst.operand_count() - c, m = inst.shape().tuple_size() - c;
  // The positions: every value of the body has one element or the shape `pos`.
  std::vector<int64_t> pos;
  std::vector<const Instruction*> values;
  for (int k = 0; k < f->num_parameters(); ++k) values.push_back(f->parameter(k));
  for (const Instruction* i : f->MakeInstructionPostOrder()) values.push_back(i);
  for (const Instruction* v : values) {
    if (v->shape().IsArray() && v->shape().num_elements() != 1) {
      pos = v->shape().dims();
      break;
    }
  }
  int64_t length = -1, largest = 1;
  auto slice_of = [&](const Shape& s, bool scanned, std::vector<int64_t>* out) -> Status {
    if (!s.IsArray()) return invalid("has a non-array operand or result ", s.ToString(false));
    XS_RETURN_IF_ERROR(codegen::RequireDType(inst, s.dtype()));
    largest = std::max(largest, s.num_elements());
    *out = s.dims();
    if (scanned) {
      if (d >= s.rank()) return invalid("dimension ", d, " is outside ", s.ToString(false));
      if (length >= 0 && s.dim(static_cast<int>(d)) != length) return invalid("the scanned dims' sizes differ");
      length = s.dim(static_cast<int>(d));
      out->erase(out->begin() + d);
    }
    if (Product(*out, 0) != 1 && *out != pos) {
      return Unimplemented(
          "cuda: scan '", inst.name(), "': a slice or carry of shape ", s.ToString(false),
          " is neither one element nor the body's common shape; generated scans keep every value at its position");
    }
    return OkStatus();
  };
  std::vector<std::vector<int64_t>> slices(inst.operand_count() + inst.shape().tuple_size());
  for (int k = 0; k < inst.operand_count(); ++k) {
    XS_RETURN_IF_ERROR(slice_of(inst.operand(k)->shape(), k < n, &slices[k]));
  }
  for (int k = 0; k < m + c; ++k) {
    XS_RETURN_IF_ERROR(slice_of(inst.shape().tuple_shape(k), k < m, &slices[inst.operand_count() + k]));
  }
  if (length < 0) return invalid("has neither inputs nor outputs to take the scan length from");
  for (int k = 0; k < c; ++k) {
    if (inst.shape().tuple_shape(m + k).dtype() != inst.operand(n + k)->shape().dtype()) {
      return invalid("carry ", k, " changes type");
    }
  }
  const int64_t positions = Product(pos, 0);
  const int64_t inner = pos.empty() ? 1 : Product(pos, static_cast<size_t>(std::min<int64_t>(d, pos.size())));
  // Element (position p, step i) of an array with the scanned dim, or of one element per step.
  auto at = [&](const std::vector<int64_t>& slice, const std::string& step) {
    if (Product(slice, 0) == 1) return step;
    return "(p / " + Int(inner) + " * " + Int(length) + " + " + step + ") * " + Int(inner) + " + p % " + Int(inner);
  };
  auto load = [&](int ptr, DType t, const std::string& index) {
    return "((const " + CType(t) + "*)a.p[" + std::to_string(ptr) + "])[" + index + "]";
  };
  std::map<const Instruction*, std::string> names;
  std::string b = "extern \"C\" __global__ void __launch_bounds__(256) " + std::string(codegen::kName) + "(xs_args<" +
                  std::to_string(inst.operand_count() + m + c) + "> a) {\n  typedef " + codegen::IndexType(largest) +
                  " idx_t;\n";
  b += "  const idx_t stride = (idx_t)(gridDim.x * blockDim.x);\n";
  b += "  for (idx_t p = (idx_t)(blockIdx.x * blockDim.x + threadIdx.x); p < " + Int(positions) + "; p += stride) {\n";
  for (int k = 0; k < c; ++k) {
    const DType t = inst.operand(n + k)->shape().dtype();
    const std::string carry = StrCat("carry", k);
    b += "    " + CType(t) + " " + carry + " = " + load(n + k, t, Product(slices[n + k], 0) == 1 ? "0" : "p") + ";\n";
    names[f->parameter(n + k)] = carry;
  }
  b += "    for (idx_t s = 0; s < " + Int(length) + "; ++s) {\n";
  b += "      const idx_t i = " + (reverse ? Int(length - 1) + " - s" : std::string("s")) + ";\n";
  for (int k = 0; k < n; ++k) {
    const DType t = inst.operand(k)->shape().dtype();
    const std::string x = StrCat("x", k);
    b += "      const " + CType(t) + " " + x + " = " + load(k, t, at(slices[k], "i")) + ";\n";
    names[f->parameter(k)] = x;
  }
  XS_ASSIGN_OR_RETURN(InlinedBody body, InlineBody(inst, *f, pos, names));
  if (static_cast<int>(body.results.size()) != m + c) {
    return invalid("its body returns ", body.results.size(), " values");
  }
  b += body.code;
  const int first_result = inst.operand_count();
  for (int k = 0; k < m; ++k) {
    const std::vector<int64_t>& slice = slices[first_result + k];
    const std::string ct = CType(inst.shape().tuple_shape(k).dtype());
    b += "      " + std::string(Product(slice, 0) == 1 ? "if (p == 0) " : "") + "((" + ct + "*)a.p[" +
         std::to_string(first_result + k) + "])[" + at(slice, "i") + "] = " + body.results[k] + ";\n";
  }
  // Every new carry is read before any is assigned (the body may swap them).
  for (int k = 0; k < c; ++k) {
    b += "      const " + CType(inst.operand(n + k)->shape().dtype()) + " next" + std::to_string(k) + " = " +
         body.results[m + k] + ";\n";
  }
  for (int k = 0; k < c; ++k) b += StrCat("      carry", k, " = next", k, ";\n");
  b += "    }\n";
  for (int k = 0; k < c; ++k) {
    const std::vector<int64_t>& slice = slices[first_result + m + k];
    const std::string ct = CType(inst.shape().tuple_shape(m + k).dtype());
    b += "    " + std::string(Product(slice, 0) == 1 ? "if (p == 0) " : "") + "((" + ct + "*)a.p[" +
         std::to_string(first_result + m + k) + "])[" + (Product(slice, 0) == 1 ? "0" : "p") + "] = carry" +
         std::to_string(k) + ";\n";
  }
  b += "  }\n}\n";
  LaunchDims launch;
  launch.grid = codegen::GridFor(positions);
  return One(codegen::Finish("scan", std::move(b), launch, inst.operand_count() + m + c, "scan_thread_per_position"));
}

}  // namespace

StatusOr<std::vector<GeneratedKernel>> GenerateScanKernels(const Instruction& inst) {
  switch (inst.opcode()) {
    case Opcode::kMap: return GenerateMap(inst);
    case Opcode::kReducePrecision: return GenerateReducePrecision(inst);
    case Opcode::kScan: return GenerateScan(inst);
    default:
      return InvalidArgument("'", inst.name(), "' (", OpcodeName(inst.opcode()),
                             ") is not a scan, map or reduce-precision");
  }
}

}  // namespace xs::cuda
