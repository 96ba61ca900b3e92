// Non-fused reduce and reduce-window kernels, GenerateOpKernel's dispatch, and CombineKernels.
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "xshard/cuda/kernel_codegen_internal.h"
#include "xshard/ir/computation.h"
#include "xshard/ir/instruction.h"

namespace xs::cuda {
namespace {

using codegen::CType;
using codegen::Int;


Status OneOperand(const Instruction& inst) {
  if (inst.operand_count() != 2 || !inst.shape().IsArray()) {
    return Unimplemented("cuda: '", inst.name(), "' (", OpcodeName(inst.opcode()),
                         ") reduces several operands together; generated kernels reduce one");
  }
  return OkStatus();
}

// The reducer computation of `inst` as `auto comb = [&](acc..., x..., out&...) {...};`.
StatusOr<std::string> CombinerLambda(const Instruction& inst, const std::vector<DType>& types) {
  const Computation* c = inst.to_apply();
  if (c == nullptr) return InvalidArgument("'", inst.name(), "' has no to_apply");
  std::vector<DType> params = types;
  params.insert(params.end(), types.begin(), types.end());
  return codegen::ScalarLambda(inst, *c, "comb", params, types);
}

// A reduce of n operands with any reducer: one thread per output element combining its
// elements in row-major order from the init values, in the element types (bit-identical to the
// CPU executor). Pointers: n inputs, n inits, n results.
StatusOr<GeneratedKernel> GenericReduce(const Instruction& inst) {
  const int n = inst.operand_count() / 2;
  std::vector<DType> types;
  for (int k = 0; k < n; ++k) {
    const Shape& s = inst.operand(k)->shape();
    if (!s.IsArray() || s.dims() != inst.operand(0)->shape().dims()) {
      return InvalidArgument("'", inst.name(), "': reduce operands must be arrays of one shape");
    }
    XS_RETURN_IF_ERROR(codegen::RequireDType(inst, s.dtype()));
    types.push_back(s.dtype());
  }
  XS_ASSIGN_OR_RETURN(std::string comb, CombinerLambda(inst, types));
  const std::vector<int64_t>& dims = inst.operand(0)->shape().dims();
  std::vector<bool> reduced(dims.size(), false);
  for (int64_t d : inst.dimensions()) reduced[d] = true;
  std::vector<int64_t> stride(dims.size(), 1);
  for (int d = static_cast<int>(dims.size()) - 2; d >= 0; --d) stride[d] = stride[d + 1] * dims[d + 1];
  int64_t rows = 1, len = 1;
  for (size_t d = 0; d < dims.size(); ++d) (reduced[d] ? len : rows) *= dims[d];
  auto decompose = [&](bool want, const std::string& from, const std::string& into) {
    std::string code = "      { idx_t q = " + from + ";\n";
    for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
      if (reduced[d] != want || dims[d] == 1) continue;
      code += "        { const idx_t m = q / " + Int(dims[d]) + "; " + into + " += (q - m * " + Int(dims[d]) + ") * " +
              Int(stride[d]) + "; q = m; }\n";
    }
    return code + "      }\n";
  };
  std::string b = "extern \"C\" __global__ void __launch_bounds__(256) " + std::string(codegen::kName) + "(xs_args<" +
                  std::to_string(3 * n) + "> a) {\n  typedef long long idx_t;\n  " + comb + "\n";
  b += "  const idx_t stride = (idx_t)(gridDim.x * blockDim.x);\n";
  b += "  for (idx_t row = (idx_t)(blockIdx.x * blockDim.x + threadIdx.x); row < " + Int(rows) + "; row += stride) {\n";
  b += "    idx_t base = 0;\n" + decompose(false, "row", "base");
  for (int k = 0; k < n; ++k) {
    b += "    " + CType(types[k]) + " acc" + std::to_string(k) + " = ((const " + CType(types[k]) + "*)a.p[" +
         std::to_string(n + k) + "])[0];\n";
  }
  b += "    for (idx_t k = 0; k < " + Int(len) + "; ++k) {\n      idx_t i = base;\n" + decompose(true, "k", "i");
  std::string call = "      comb(";
  for (int k = 0; k < n; ++k) call += StrCat("acc", k) + ", ";
  for (int k = 0; k < n; ++k) call += "((const " + CType(types[k]) + "*)a.p[" + std::to_string(k) + "])[i], ";
  for (int k = 0; k < n; ++k) {
    b += "      " + CType(types[k]) + " r" + std::to_string(k) + ";\n";
    call += StrCat("r", k) + (k + 1 < n ? ", " : ");\n");
  }
  b += call;
  for (int k = 0; k < n; ++k) b += "      acc" + std::to_string(k) + " = r" + std::to_string(k) + ";\n";
  b += "    }\n";
  for (int k = 0; k < n; ++k) {
    b += "    ((" + CType(types[k]) + "*)a.p[" + std::to_string(2 * n + k) + "])[row] = acc" + std::to_string(k) + ";\n";
  }
  b += "  }\n}\n";
  LaunchDims launch;
  launch.grid = codegen::GridFor(rows);
  return codegen::Finish("reduce_generic", std::move(b), launch, 3 * n, "reduce_general");
}

// reduce-window of n operands with any reducer (the reducer computation inlined): one thread
// per output element walks its window in row-major order from the init values, in the element
// types, skipping padding and dilation holes, as the CPU does (bit-identical). Naive: no reuse
// of overlapping windows. Pointers: n inputs, n inits, n results.
StatusOr<GeneratedKernel> ReduceWindow(const Instruction& inst) {
  const int n = inst.operand_count() / 2;
  const Shape& in = inst.operand(0)->shape();
  const Window window_attr = inst.attrs().window.value_or(Window{});  // rank 0: may be omitted
  if (static_cast<int>(window_attr.dims.size()) != in.rank()) {
    return InvalidArgument("reduce-window '", inst.name(), "' needs one window dim per operand dim");
  }
  std::vector<DType> types;
  for (int k = 0; k < n; ++k) {
    const Shape& s = inst.operand(k)->shape();
    if (!s.IsArray() || s.dims() != in.dims()) {
      return InvalidArgument("'", inst.name(), "': reduce-window operands must be arrays of one shape");
    }
    XS_RETURN_IF_ERROR(codegen::RequireDType(inst, s.dtype()));
    types.push_back(s.dtype());
  }
  const Shape& out = n == 1 && inst.shape().IsArray() ? inst.shape() : inst.shape().tuple_shapes()[0];
  XS_ASSIGN_OR_RETURN(std::string comb, CombinerLambda(inst, types));
  const std::vector<WindowDim>& w = window_attr.dims;
  std::vector<int64_t> is(in.rank(), 1);
  for (int d = in.rank() - 2; d >= 0; --d) is[d] = is[d + 1] * in.dim(d + 1);
  int64_t window = 1;
  for (const WindowDim& wd : w) window *= wd.size;
  std::string b = "extern \"C\" __global__ void __launch_bounds__(256) " + std::string(codegen::kName) + "(xs_args<" +
                  std::to_string(3 * n) + "> a) {\n  typedef long long idx_t;\n  " + comb + "\n";
  b += "  const idx_t stride = (idx_t)(gridDim.x * blockDim.x);\n";
  b += "  for (idx_t i = (idx_t)(blockIdx.x * blockDim.x + threadIdx.x); i < " + Int(out.num_elements()) + "; i += stride) {\n";
  b += "    idx_t q = i;\n";
  for (int d = out.rank() - 1; d >= 0; --d) {
    b += "    const idx_t o" + std::to_string(d) + " = q % " + Int(out.dim(d)) + "; q /= " + Int(out.dim(d)) + ";\n";
  }
  for (int k = 0; k < n; ++k) {
    b += "    " + CType(types[k]) + " acc" + std::to_string(k) + " = ((const " + CType(types[k]) + "*)a.p[" +
         std::to_string(n + k) + "])[0];\n";
  }
  b += "    for (idx_t k = 0; k < " + Int(window) + "; ++k) {\n      idx_t r = k, src = 0;\n      bool inside = true;\n";
  for (int d = in.rank() - 1; d >= 0; --d) {
    const WindowDim& wd = w[d];
    const std::string o = StrCat("o", d);
    b += "      { const idx_t wk = r % " + Int(wd.size) + "; r /= " + Int(wd.size) + ";\n";
    b += "        idx_t pos = " + o + " * " + Int(wd.stride) + " + wk * " + Int(wd.rhs_dilation) + " - " + Int(wd.pad_low) + ";\n";
    if (wd.lhs_dilation > 1) {
      b += "        if (pos % " + Int(wd.lhs_dilation) + " != 0) inside = false;\n        pos /= " + Int(wd.lhs_dilation) + ";\n";
    }
    b += "        if (pos < 0 || pos >= " + Int(in.dim(d)) + ") inside = false;\n        src += pos * " + Int(is[d]) + "; }\n";
  }
  std::string call = "comb(";
  for (int k = 0; k < n; ++k) call += StrCat("acc", k) + ", ";
  for (int k = 0; k < n; ++k) call += "((const " + CType(types[k]) + "*)a.p[" + std::to_string(k) + "])[src], ";
  std::string decl;
  for (int k = 0; k < n; ++k) {
    decl += CType(types[k]) + " r" + std::to_string(k) + "; ";
    call += StrCat("r", k) + (k + 1 < n ? ", " : "); ");
  }
  b += "      if (inside) { " + decl + call;
  for (int k = 0; k < n; ++k) b += StrCat("acc", k) + " = " + StrCat("r", k) + "; ";
  b += "}\n    }\n";
  for (int k = 0; k < n; ++k) {
    b += "    ((" + CType(types[k]) + "*)a.p[" + std::to_string(2 * n + k) + "])[i] = acc" + std::to_string(k) + ";\n";
  }
  b += "  }\n}\n";
  LaunchDims launch;
  launch.grid = codegen::GridFor(out.num_elements());
  return codegen::Finish("reduce_window", std::move(b), launch, 3 * n, "reduce_window");
}

}  // namespace

StatusOr<GeneratedKernel> GenerateReduceKernel(const Instruction& inst) {
  if (inst.opcode() == Opcode::kReduceWindow) return ReduceWindow(inst);
  if (inst.opcode() == Opcode::kReduce) {
    const bool typed = OneOperand(inst).ok() && codegen::TypedCombiner(inst).ok() &&
                       inst.shape().dtype() == inst.operand(0)->shape().dtype();
    if (!typed) return GenericReduce(inst);
  }
  XS_RETURN_IF_ERROR(OneOperand(inst));
  const Shape& in = inst.operand(0)->shape();
  XS_RETURN_IF_ERROR(codegen::RequireDType(inst, in.dtype()));
  if (inst.shape().dtype() != in.dtype() || inst.operand(1)->shape().dtype() != in.dtype()) {
    return InvalidArgument("'", inst.name(), "': operand, init and result types differ");
  }
  XS_ASSIGN_OR_RETURN(kernels::CombineKind combine, codegen::TypedCombiner(inst));
  codegen::ElemSpec spec;
  spec.loads = {{0, in.dtype()}};
  spec.reduced = in.dtype();
  spec.lambda = "auto elem = [&](idx_t, const " + CType(in.dtype()) + " x, " + CType(in.dtype()) + "& r) { r = x; };";
  std::vector<bool> reduced(in.rank(), false);
  for (int64_t d : inst.dimensions()) reduced[d] = true;
  return codegen::EmitReduce("reduce", spec, in.dims(), reduced, combine, 1, 2, in.dtype(), 3);
}

namespace {

// The generators of their own files (GenerateRandomKernels ...) for `inst`, or null.
using OpKernelsFn = StatusOr<std::vector<GeneratedKernel>> (*)(const Instruction&);
OpKernelsFn SpecialGenerator(const Instruction& inst) {
  const std::string target = inst.opcode() == Opcode::kCustomCall ? inst.attrs().custom_call_target.value_or("") : "";
  switch (inst.opcode()) {
    case Opcode::kRng: case Opcode::kRngBitGenerator: case Opcode::kRngGetAndUpdateState:
      return &GenerateRandomKernels;
    case Opcode::kCholesky: case Opcode::kTriangularSolve:
      return &GenerateLinalgKernels;
    case Opcode::kRaggedDot:
      return &GenerateRaggedDotKernels;
    case Opcode::kBatchNormTraining: case Opcode::kBatchNormInference: case Opcode::kBatchNormGrad:
      return &GenerateBatchNormKernels;
    case Opcode::kScan: case Opcode::kMap: case Opcode::kReducePrecision:
      return &GenerateScanKernels;
    case Opcode::kFft:
      return &GenerateFftKernels;
    case Opcode::kCustomCall:
      if (target.rfind("lapack_", 0) == 0) return &GenerateLinalgKernels;
      if (target == "__op$block_scaled_dot") return &GenerateRaggedDotKernels;
      if (target.rfind("_SPMDInternalOp_", 0) == 0) return &GenerateSpmdInternalKernels;
      return nullptr;
    default:
      return nullptr;
  }
}

}  // namespace

StatusOr<GeneratedKernel> GenerateOpKernel(const Instruction& inst) {
  const Opcode op = inst.opcode();
  if (op == Opcode::kReduce || op == Opcode::kReduceWindow) return GenerateReduceKernel(inst);
  if (op == Opcode::kBitcastConvert && inst.shape().IsArray() && inst.operand(0)->shape().IsArray() &&
      DTypeSize(inst.shape().dtype()) != DTypeSize(inst.operand(0)->shape().dtype())) {
    // Sizes differ (the shapes gain or lose a minor dim): the bytes are the same, in order.
    if (inst.shape().byte_size() != inst.operand(0)->shape().byte_size()) {
      return InvalidArgument("bitcast-convert '", inst.name(), "' changes the byte size");
    }
    codegen::ElemSpec spec;
    spec.loads = {{0, DType::kU8}};
    spec.stores = {{1, DType::kU8}};
    spec.lambda = "auto elem = [&](idx_t, const unsigned char x, unsigned char& y) { y = x; };";
    return codegen::EmitElementwise("bitcast_convert", spec, inst.shape().byte_size(), 2);
  }
  if (IsCodegenElementwise(op)) return GenerateElementwiseKernel(inst);
  if (op == Opcode::kGather) return GenerateGatherKernel(inst);
  if (op == Opcode::kConvolution) return GenerateConvolutionKernel(inst);
  if (op == Opcode::kDot) return GenerateDotKernel(inst);
  if (op == Opcode::kSort || op == Opcode::kTopK ||
      (op == Opcode::kCustomCall && inst.attrs().custom_call_target == "TopK")) {
    return GenerateSortKernel(inst);
  }
  if (op == Opcode::kScatter || op == Opcode::kSelectAndScatter || SpecialGenerator(inst) != nullptr) {
    XS_ASSIGN_OR_RETURN(std::vector<GeneratedKernel> ks, GenerateOpKernels(inst, /*in_place=*/false));
    if (ks.size() != 1) {
      return Unimplemented("cuda: '", inst.name(), "' (", OpcodeName(op), ") runs ", ks.size(), " kernels (GenerateOpKernels)");
    }
    return std::move(ks[0]);
  }
  return GenerateShapeKernel(inst);
}

StatusOr<std::vector<GeneratedKernel>> GenerateOpKernels(const Instruction& inst, bool in_place) {
  if (OpKernelsFn special = SpecialGenerator(inst)) return special(inst);
  if (inst.opcode() == Opcode::kScatter) return GenerateScatterKernels(inst, in_place);
  if (inst.opcode() == Opcode::kSelectAndScatter) return GenerateSelectAndScatterKernels(inst);
  if (in_place && inst.opcode() == Opcode::kDynamicUpdateSlice) {
    XS_ASSIGN_OR_RETURN(GeneratedKernel k, GenerateDynamicUpdateSliceInPlace(inst));
    return std::vector<GeneratedKernel>{std::move(k)};
  }
  XS_ASSIGN_OR_RETURN(GeneratedKernel k, GenerateOpKernel(inst));
  return std::vector<GeneratedKernel>{std::move(k)};
}

KernelSource CombineKernels(std::span<const GeneratedKernel> kernels) {
  KernelSource src;
  src.code = codegen::Prelude() + "template <int N> struct xs_args { void* p[N]; };\n";
  std::set<std::string> seen;
  for (const GeneratedKernel& k : kernels) {
    if (!seen.insert(k.source.name).second) continue;
    if (src.name.empty()) src.name = k.source.name;
    src.code += k.body;
  }
  if (seen.size() > 1) src.name += "_and_" + std::to_string(seen.size() - 1) + "_more";
  return src;
}

bool IsCodegenElementwise(Opcode op) {
  switch (op) {
    case Opcode::kAbs: case Opcode::kNegate: case Opcode::kExp: case Opcode::kLog:
    case Opcode::kSqrt: case Opcode::kRsqrt: case Opcode::kTanh: case Opcode::kSin:
    case Opcode::kCos: case Opcode::kTan: case Opcode::kLogistic: case Opcode::kExpm1:
    case Opcode::kLog1p: case Opcode::kCbrt: case Opcode::kErf: case Opcode::kCeil:
    case Opcode::kFloor: case Opcode::kRoundNearestAfz: case Opcode::kRoundNearestEven:
    case Opcode::kAtan: case Opcode::kAcos: case Opcode::kAsin: case Opcode::kAcosh:
    case Opcode::kAsinh: case Opcode::kAtanh: case Opcode::kCosh: case Opcode::kSinh:
    case Opcode::kSign: case Opcode::kIsFinite: case Opcode::kNot:
    case Opcode::kPopulationCount: case Opcode::kClz: case Opcode::kReal: case Opcode::kImag:
    case Opcode::kAdd: case Opcode::kSubtract: case Opcode::kMultiply: case Opcode::kDivide:
    case Opcode::kRemainder: case Opcode::kMaximum: case Opcode::kMinimum: case Opcode::kPower:
    case Opcode::kAtan2: case Opcode::kAnd: case Opcode::kOr: case Opcode::kXor:
    case Opcode::kShiftLeft: case Opcode::kShiftRightArithmetic: case Opcode::kMulhi:
    case Opcode::kShiftRightLogical: case Opcode::kCompare: case Opcode::kConvert:
    case Opcode::kSelect: case Opcode::kClamp: case Opcode::kBitcastConvert: case Opcode::kComplex:
      return true;
    default:
      return false;
  }
}

}  // namespace xs::cuda
