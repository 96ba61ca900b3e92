// Direct convolution and dot kernels: the GPU plan's fallback for what cuDNN and cuBLASLt do not
// take (transposed / lhs-dilated convolutions, asymmetric or negative padding, window reversal,
// batch groups, any number of spatial dims, integer and mixed-type operands). One thread per
// output element walks its window taps and input features (or contracting dims) in the CPU
// executor's order (see Accumulation for the types); every shape and attribute is compiled in.
#include <algorithm>
#include <string>
#include <vector>

#include "xshard/core/shape.h"
#include "xshard/cuda/kernel_codegen_internal.h"
#include "xshard/ir/instruction.h"
#include "xshard/kernels/convolution.h"
#include "xshard/kernels/dot.h"

namespace xs::cuda {
namespace {

using codegen::ComputeType;
using codegen::CType;
using codegen::Int;


bool IsHalf(DType t) { return t == DType::kF16 || t == DType::kBF16; }

// How a kernel accumulates. Where the CPU runs a loop in a fixed order (integer and pred
// results, batch-grouped convolutions) the kernel repeats it: same operand conversion, type and
// order, so results are bit-identical. Where the CPU runs a BLAS / oneDNN GEMM (f16 / bf16 / f32
// results through f32, f64 through f64), whose blocked summation order is the library's, the
// kernel sums near-exactly instead (f32 products in double; f64 with Neumaier compensation), so
// the two differ by the GEMM's own rounding and not by a long sequential f32 sum's (which, with
// thousands of cancelling terms, exceeds the GEMM's error many times). Where the CPU runs one
// f32 GEMM per window tap into an f32 output (kernels/convolution_taps.h), the kernel sums each
// tap's features, then adds the tap's sum to the f32 result, tap by tap, as it does.
struct Accumulation {
  DType result;
  DType cv;  // the type operand elements are converted to before multiplying
  enum Mode { kCpuOrder, kWide, kCompensated, kTaps } mode;
};

Accumulation AccumulationFor(DType result, bool gemm) {
  if (gemm && (IsHalf(result) || result == DType::kF32)) return {result, DType::kF32, Accumulation::kWide};
  if (gemm && result == DType::kF64) return {result, DType::kF64, Accumulation::kCompensated};
  return {result, result, Accumulation::kCpuOrder};
}

std::string InitAcc(const Accumulation& a) {
  if (a.mode == Accumulation::kWide) return "double acc = 0.0;";
  if (a.mode == Accumulation::kTaps) return "float acc = 0.0f;";
  if (a.mode == Accumulation::kCompensated) return "double acc = 0.0, comp = 0.0;";
  return ComputeType(a.result) + " acc = (" + ComputeType(a.result) + ")0;";
}

// `acc += x * y`, with XLA's wrapping integer and or / and pred math in the CPU's order.
std::string MultiplyAdd(const Accumulation& a) {
  if (a.mode == Accumulation::kWide) return "acc = acc + (double)x * (double)y;";
  if (a.mode == Accumulation::kTaps) return "part = part + x * y;";
  if (a.mode == Accumulation::kCompensated) {
    return "{ const double t = x * y, s = acc + t; comp += fabs(acc) >= fabs(t) ? (acc - s) + t : (t - s) + acc; "
           "acc = s; }";
  }
  if (a.result == DType::kPred) return "acc = acc || (x && y);";
  if (IsInteger(a.result)) {
    return "acc = (" + CType(a.result) + ")((unsigned long long)acc + (unsigned long long)x * (unsigned long long)y);";
  }
  return "acc = acc + x * y;";
}

// The stored result: GEMM results are f32 (f64) first, then rounded to a 16-bit type, as the CPU.
std::string Footer(const Accumulation& a) {
  std::string v = "acc";
  if (a.mode == Accumulation::kWide) v = "(float)acc";
  if (a.mode == Accumulation::kCompensated) v = "(acc + comp)";
  return "    O[i] = " + codegen::FromCompute(a.result, v) + ";\n  }\n}\n";
}

// `const CT x = <element `e` of an operand of type `from`, converted to `cv`, in compute type>;`
std::string Load(const std::string& name, DType from, DType cv, const std::string& e) {
  return "const " + ComputeType(cv) + " " + name + " = " +
         codegen::ToCompute(cv, codegen::ConvertExpr(from, cv, e)) + ";";
}

Status CheckTypes(const Instruction& inst) {
  for (const Instruction* o : inst.operands()) {
    if (!o->shape().IsArray()) return InvalidArgument("'", inst.name(), "' has a non-array operand");
    XS_RETURN_IF_ERROR(codegen::RequireDType(inst, o->shape().dtype()));
  }
  if (!inst.shape().IsArray()) return InvalidArgument("'", inst.name(), "' has a non-array result");
  return codegen::RequireDType(inst, inst.shape().dtype());
}

std::string Header(const Instruction& inst, int64_t largest) {
  std::string b = "extern \"C\" __global__ void __launch_bounds__(256) " + std::string(codegen::kName) +
                  "(xs_args<3> a) {\n  typedef " + codegen::IndexType(largest) + " idx_t;\n";
  b += "  const " + CType(inst.operand(0)->shape().dtype()) + "* L = (const " +
       CType(inst.operand(0)->shape().dtype()) + "*)a.p[0];\n";
  b += "  const " + CType(inst.operand(1)->shape().dtype()) + "* R = (const " +
       CType(inst.operand(1)->shape().dtype()) + "*)a.p[1];\n";
  b += "  " + CType(inst.shape().dtype()) + "* O = (" + CType(inst.shape().dtype()) + "*)a.p[2];\n";
  b += "  const idx_t step = (idx_t)gridDim.x * (idx_t)blockDim.x;\n";
  b += "  for (idx_t i = (idx_t)blockIdx.x * (idx_t)blockDim.x + (idx_t)threadIdx.x; i < " +
       Int(inst.shape().num_elements()) + "; i += step) {\n    idx_t q = i;\n";
  // The output's multi-index o0 .. o(rank-1), row-major.
  const Shape& out = inst.shape();
  for (int d = out.rank() - 1; d >= 0; --d) {
    b += "    const idx_t o" + std::to_string(d) + " = q % " + Int(out.dim(d)) + "; q /= " + Int(out.dim(d)) + ";\n";
  }
  b += "    (void)q;\n";
  return b;
}

// Whether the CPU executor computes `conv` (f32 GEMM route, no batch groups) as one GEMM per
// window tap: kernels/convolution_taps.cc TapGemmApplies (>= 32 kernel input features, >= 16
// outputs along the last spatial dim, no lhs dilation, f32 / f16 / bf16 operands).
bool TapGemmApplies(const Instruction& conv) {
  const ConvolutionDimensionNumbers& d = *conv.attrs().conv_dims;
  const size_t n = d.input_spatial.size();
  auto gemm_input = [](DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; };
  if (n == 0 || !gemm_input(conv.operand(0)->shape().dtype()) || !gemm_input(conv.operand(1)->shape().dtype())) {
    return false;
  }
  for (const WindowDim& w : conv.attrs().window.value_or(Window{}).dims) {
    if (w.lhs_dilation != 1) return false;
  }
  return conv.operand(1)->shape().dim(static_cast<int>(d.kernel_input_feature)) >= 32 &&
         conv.shape().dim(static_cast<int>(d.output_spatial[n - 1])) >= 16;
}

int64_t Largest(const Instruction& inst) {
  return std::max({inst.operand(0)->shape().num_elements(), inst.operand(1)->shape().num_elements(),
                   inst.shape().num_elements(), int64_t{1}});
}

}  // namespace

StatusOr<GeneratedKernel> GenerateConvolutionKernel(const Instruction& inst) {
  const Attributes& at = inst.attrs();
  if (inst.opcode() != Opcode::kConvolution || inst.operand_count() != 2 || !at.conv_dims.has_value()) {
    return InvalidArgument("'", inst.name(), "' is not a convolution with two operands and dim_labels");
  }
  XS_RETURN_IF_ERROR(CheckTypes(inst));
  const ConvolutionDimensionNumbers& d = *at.conv_dims;
  kernels::ConvolutionParams p;
  p.window = at.window.value_or(Window{});
  p.dims = d;
  p.feature_group_count = at.feature_group_count;
  p.batch_group_count = at.batch_group_count;
  const Shape& ls = inst.operand(0)->shape();
  const Shape& rs = inst.operand(1)->shape();
  const Shape& os = inst.shape();
  XS_ASSIGN_OR_RETURN(std::vector<int64_t> dims, kernels::ConvolutionResultDims(ls.dims(), rs.dims(), p));
  if (dims != os.dims()) {
    return InvalidArgument("convolution '", inst.name(), "': result dims [", JoinDims(os.dims()),
                           "] differ from the dims its operands and window give [", JoinDims(dims), "]");
  }
  const DType result = os.dtype();
  // kernels/convolution.cc: f16 / bf16 results without batch groups go through an f32 GEMM.
  Accumulation acc = AccumulationFor(result, p.batch_group_count == 1);
  if (acc.mode == Accumulation::kWide && TapGemmApplies(inst)) acc.mode = Accumulation::kTaps;
  const DType cv = acc.cv;
  const std::vector<int64_t> lstr = RowMajorStrides(ls.dims()), rstr = RowMajorStrides(rs.dims());
  const int64_t in_batch = ls.dim(static_cast<int>(d.input_batch));
  const int64_t in_features = ls.dim(static_cast<int>(d.input_feature));
  const int64_t out_features = rs.dim(static_cast<int>(d.kernel_output_feature));
  const int64_t ifg = in_features / p.feature_group_count;
  const int64_t ofg = out_features / p.feature_group_count;
  const int64_t batch_group_size = in_batch / p.batch_group_count;
  const int64_t depthwise = std::max<int64_t>(p.batch_group_count > 1 ? out_features / p.batch_group_count : 1, 1);
  std::string b = Header(inst, Largest(inst));
  const std::string ob = StrCat("o", d.output_batch), of = StrCat("o", d.output_feature);
  // As the CPU's DirectConv: the batch group picks a slice of the input batch, the feature group
  // a slice of the input features.
  b += "    const idx_t lbase = (" + ob + " + ((" + of + " / " + Int(depthwise) + ") * " + Int(batch_group_size) +
       ") % " + Int(std::max<int64_t>(in_batch, 1)) + ") * " + Int(lstr[d.input_batch]) + " + (" + of + " / " +
       Int(std::max<int64_t>(ofg, 1)) + ") * " + Int(ifg * lstr[d.input_feature]) + ";\n";
  b += "    const idx_t rbase = " + of + " * " + Int(rstr[d.kernel_output_feature]) + ";\n";
  b += "    " + InitAcc(acc) + "\n";
  // One loop per spatial dim (window taps in row-major order), skipping padding and holes.
  std::string indent = "    ", loff = "lbase", roff = "rbase";
  for (size_t s = 0; s < d.input_spatial.size(); ++s) {
    const WindowDim& w = p.window.dims[s];
    const std::string k = StrCat("k", s), pos = StrCat("p", s);
    b += indent + "for (idx_t " + k + " = 0; " + k + " < " + Int(w.size) + "; ++" + k + ") {\n";
    indent += "  ";
    b += indent + "idx_t " + pos + " = o" + std::to_string(d.output_spatial[s]) + " * " + Int(w.stride) + " - (" +
         Int(w.pad_low) + ") + " + k + " * " + Int(w.rhs_dilation) + ";\n";
    if (w.lhs_dilation > 1) {
      b += indent + "if (" + pos + " % " + Int(w.lhs_dilation) + " != 0) continue;\n";
      b += indent + pos + " /= " + Int(w.lhs_dilation) + ";\n";
    }
    b += indent + "if (" + pos + " < 0 || " + pos + " >= " + Int(ls.dim(static_cast<int>(d.input_spatial[s]))) +
         ") continue;\n";
    loff += " + " + pos + " * " + Int(lstr[d.input_spatial[s]]);
    const std::string tap = w.window_reversal ? "(" + Int(w.size - 1) + " - " + k + ")" : k;
    roff += " + " + tap + " * " + Int(rstr[d.kernel_spatial[s]]);
  }
  b += indent + "const idx_t lo = " + loff + ", ro = " + roff + ";\n";
  const bool taps = acc.mode == Accumulation::kTaps;
  if (taps) b += indent + "float part = 0.0f;\n";
  b += indent + "for (idx_t z = 0; z < " + Int(ifg) + "; ++z) {\n";
  b += indent + "  " + Load("x", ls.dtype(), cv, "L[lo + z * " + Int(lstr[d.input_feature]) + "]") + "\n";
  b += indent + "  " + Load("y", rs.dtype(), cv, "R[ro + z * " + Int(rstr[d.kernel_input_feature]) + "]") + "\n";
  b += indent + "  " + MultiplyAdd(acc) + "\n" + indent + "}\n";
  if (taps) b += indent + "acc = acc + part;\n";
  for (size_t s = d.input_spatial.size(); s > 0; --s) {
    indent.resize(indent.size() - 2);
    b += indent + "}\n";
  }
  b += Footer(acc);
  LaunchDims launch;
  launch.grid = codegen::GridFor(os.num_elements());
  return codegen::Finish("conv_direct", std::move(b), launch, 3, "conv_direct");
}

StatusOr<GeneratedKernel> GenerateDotKernel(const Instruction& inst) {
  if (inst.opcode() != Opcode::kDot || inst.operand_count() != 2 || !inst.attrs().dot.has_value()) {
    return InvalidArgument("'", inst.name(), "' is not a dot with two operands and dimension numbers");
  }
  XS_RETURN_IF_ERROR(CheckTypes(inst));
  const DotDimensionNumbers& dn = *inst.attrs().dot;
  const Shape& ls = inst.operand(0)->shape();
  const Shape& rs = inst.operand(1)->shape();
  const Shape& os = inst.shape();
  XS_ASSIGN_OR_RETURN(std::vector<int64_t> dims, kernels::DotResultDims(ls.dims(), rs.dims(), dn));
  if (dims != os.dims()) {
    return InvalidArgument("dot '", inst.name(), "': result dims [", JoinDims(os.dims()),
                           "] are not the batch, lhs free and rhs free dims [", JoinDims(dims), "]");
  }
  const DType result = os.dtype();
  // kernels/gemm_plan.cc: f16 / bf16 / f32 results are GEMMs in f32 (read or converted), f64 in
  // f64; integer and pred results a naive loop in the result type.
  const Accumulation acc = AccumulationFor(result, /*gemm=*/true);
  const DType cv = acc.cv;
  const std::vector<int64_t> lstr = RowMajorStrides(ls.dims()), rstr = RowMajorStrides(rs.dims());
  auto free_dims = [](int rank, const std::vector<int64_t>& batch, const std::vector<int64_t>& contracting) {
    std::vector<int64_t> out;
    for (int64_t i = 0; i < rank; ++i) {
      if (std::find(batch.begin(), batch.end(), i) == batch.end() &&
          std::find(contracting.begin(), contracting.end(), i) == contracting.end()) {
        out.push_back(i);
      }
    }
    return out;
  };
  std::string lbase = "0", rbase = "0";
  int o = 0;
  for (size_t i = 0; i < dn.lhs_batch.size(); ++i, ++o) {
    lbase += " + o" + std::to_string(o) + " * " + Int(lstr[dn.lhs_batch[i]]);
    rbase += " + o" + std::to_string(o) + " * " + Int(rstr[dn.rhs_batch[i]]);
  }
  for (int64_t dim : free_dims(ls.rank(), dn.lhs_batch, dn.lhs_contracting)) {
    lbase += " + o" + std::to_string(o++) + " * " + Int(lstr[dim]);
  }
  for (int64_t dim : free_dims(rs.rank(), dn.rhs_batch, dn.rhs_contracting)) {
    rbase += " + o" + std::to_string(o++) + " * " + Int(rstr[dim]);
  }
  std::string b = Header(inst, Largest(inst));
  b += "    const idx_t lbase = " + lbase + ", rbase = " + rbase + ";\n";
  b += "    " + InitAcc(acc) + "\n";
  // Contracting dims in the order listed, the last one fastest (the CPU reference's order).
  std::string indent = "    ", loff = "lbase", roff = "rbase";
  for (size_t c = 0; c < dn.lhs_contracting.size(); ++c) {
    const std::string k = StrCat("c", c);
    b += indent + "for (idx_t " + k + " = 0; " + k + " < " + Int(ls.dim(static_cast<int>(dn.lhs_contracting[c]))) +
         "; ++" + k + ") {\n";
    indent += "  ";
    loff += " + " + k + " * " + Int(lstr[dn.lhs_contracting[c]]);
    roff += " + " + k + " * " + Int(rstr[dn.rhs_contracting[c]]);
  }
  b += indent + Load("x", ls.dtype(), cv, "L[" + loff + "]") + "\n";
  b += indent + Load("y", rs.dtype(), cv, "R[" + roff + "]") + "\n";
  b += indent + MultiplyAdd(acc) + "\n";
  for (size_t c = dn.lhs_contracting.size(); c > 0; --c) {
    indent.resize(indent.size() - 2);
    b += indent + "}\n";
  }
  b += Footer(acc);
  LaunchDims launch;
  launch.grid = codegen::GridFor(os.num_elements());
  return codegen::Finish("dot_direct", std::move(b), launch, 3, "dot_direct");
}

}  // namespace xs::cuda
