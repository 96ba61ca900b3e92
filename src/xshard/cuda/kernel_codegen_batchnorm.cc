// Kernels for batch-norm-training, batch-norm-inference and batch-norm-grad. Element i's feature
// is (i / inner) % features, `inner` the product of the dims after feature_index.
// training and grad: one kernel, one thread block per feature (per 2-32 adjacent features when
// the feature dim is the minor one, so that a warp reads consecutive addresses): the block's
// threads stride over the feature's elements, sums go through a block-wide tree in shared
// memory, then the block writes the per-feature results and its elements. training: mean, then
// the centred sum of squares (the biased variance, two passes as the CPU), then the
// normalization with the mean and variance rounded to the operand type, as the CPU normalizes;
// grad: the sums of dy and dy * x_hat, then grad_operand. inference: one thread per element.
// Numerics are the CPU executor's (kernels/batch_norm.cc): everything in f64 with the same
// expressions, rounded once to the operand type; only the order of the sums differs (a tree
// instead of the CPU's sequence), so results agree to f64 rounding before the final one.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "xshard/core/shape.h"
#include "xshard/cuda/kernel_codegen_internal.h"
#include "xshard/ir/instruction.h"

namespace xs::cuda {
namespace {

using codegen::Int;

struct Layout {
  DType t = DType::kF32;
  int64_t features = 0, inner = 1, count = 0, elements = 0;
  int lanes = 1;  // features per block (adjacent ones when inner == 1)
  std::string epsilon;
};

StatusOr<Layout> Check(const Instruction& inst, std::vector<int> per_feature, int results) {
  if (!inst.attrs().epsilon || !inst.attrs().feature_index) {
    return InvalidArgument("'", inst.name(), "' needs epsilon= and feature_index=");
  }
  const Shape& x = inst.operand(0)->shape();
  if (!x.IsArray() || !IsFloating(x.dtype())) {
    return InvalidArgument("batch-norm '", inst.name(), "' needs a floating-point array operand, got ",
                           x.ToString(false));
  }
  XS_RETURN_IF_ERROR(codegen::RequireDType(inst, x.dtype()));
  const int64_t fi = *inst.attrs().feature_index;
  if (fi < 0 || fi >= x.rank()) {
    return InvalidArgument("batch-norm '", inst.name(), "': feature_index=", fi, " is outside the operand's rank ",
                           x.rank());
  }
  Layout l;
  l.t = x.dtype();
  l.features = x.dim(static_cast<int>(fi));
  for (int d = static_cast<int>(fi) + 1; d < x.rank(); ++d) l.inner *= x.dim(d);
  l.elements = x.num_elements();
  l.count = l.features == 0 ? 0 : l.elements / l.features;
  for (int i : per_feature) {
    const Shape& s = inst.operand(i)->shape();
    if (!s.IsArray() || s.rank() != 1 || s.dim(0) != l.features || s.dtype() != l.t) {
      return InvalidArgument("batch-norm '", inst.name(), "': per-feature operand ", i, " must be ", DTypeName(l.t),
                             "[", l.features, "], got ", s.ToString(false));
    }
  }
  const Shape& r = inst.shape();
  const bool tuple = results > 1;
  if (tuple != r.IsTuple() || (tuple && r.tuple_size() != results) ||
      (tuple ? r.tuple_shape(0).dims() : r.dims()) != x.dims()) {
    return InvalidArgument("batch-norm '", inst.name(), "' has result ", r.ToString(false), "; expected ",
                           tuple ? "a tuple of the operand's shape and per-feature vectors" : "the operand's shape");
  }
  if (l.inner == 1) {
    while (l.lanes < 32 && l.lanes * 2 <= l.features) l.lanes *= 2;
  }
  char eps[40];
  std::snprintf(eps, sizeof(eps), "%.17g", *inst.attrs().epsilon);
  l.epsilon = eps;
  return l;
}

// Storage-typed `e` as a double, and a double `e` rounded once to the operand type.
std::string Wide(const Layout& l, const std::string& e) { return "(double)" + codegen::ToCompute(l.t, e); }
std::string Narrow(const Layout& l, const std::string& e) { return codegen::ConvertExpr(DType::kF64, l.t, e); }

std::string Head(const Layout& l, int pointers) {
  std::string b = "extern \"C\" __global__ void __launch_bounds__(256) " + std::string(codegen::kName) + "(xs_args<" +
                  std::to_string(pointers) + "> a) {\n  typedef " + codegen::IndexType(l.elements + 256) + " idx_t;\n";
  const std::string ct = codegen::CType(l.t);
  for (int i = 0; i < pointers; ++i) {
    b += "  " + ct + "* P" + std::to_string(i) + " = (" + ct + "*)a.p[" + std::to_string(i) + "];\n";
  }
  return b;
}

// The per-feature block kernel's frame: feature f = tile * lanes + lane, the block's `rows`
// threads per feature striding over its elements j (element index `at(j)`); `sums` shared arrays.
std::string BlockFrame(const Layout& l, int pointers, int sums) {
  std::string b = Head(l, pointers);
  for (int s = 0; s < sums; ++s) b += StrCat("  __shared__ double s", s, "[256];\n");
  b += "  const int tid = (int)threadIdx.x, lane = tid % " + std::to_string(l.lanes) + ", row = tid / " +
       std::to_string(l.lanes) + ";\n";
  const int64_t tiles = (l.features + l.lanes - 1) / l.lanes;
  b += "  for (idx_t tile = (idx_t)blockIdx.x; tile < " + Int(tiles) + "; tile += (idx_t)gridDim.x) {\n";
  b += "    const idx_t f = tile * " + std::to_string(l.lanes) + " + lane;\n    const bool on = f < " +
       Int(l.features) + ";\n";
  b += "    auto at = [&](idx_t j) -> idx_t { return (j / " + Int(l.inner) + " * " + Int(l.features) + " + f) * " +
       Int(l.inner) + " + j % " + Int(l.inner) + "; };\n";
  b += "    (void)at;\n";
  return b;
}

// `for each of this thread's elements j of feature f` (nothing for an idle lane).
std::string ForElements(const Layout& l) {
  return "    if (on) for (idx_t j = row; j < " + Int(l.count) + "; j += " + std::to_string(256 / l.lanes) + ") {\n";
}

// Sums the per-thread `parts` over each feature's threads: after it, `totals` hold them in
// every thread of the feature.
std::string BlockSum(const Layout& l, const std::vector<std::string>& parts, const std::vector<std::string>& totals) {
  std::string b;
  for (size_t s = 0; s < parts.size(); ++s) b += StrCat("    s", s, "[tid] = ", parts[s], ";\n");
  b += "    __syncthreads();\n    for (int w = " + std::to_string(128 / l.lanes) + "; w > 0; w >>= 1) {\n";
  b += "      if (row < w) {\n";
  for (size_t s = 0; s < parts.size(); ++s) {
    const std::string a = StrCat("s", s);
    b += "        " + a + "[tid] = " + a + "[tid] + " + a + "[tid + w * " + std::to_string(l.lanes) + "];\n";
  }
  b += "      }\n      __syncthreads();\n    }\n";
  for (size_t s = 0; s < parts.size(); ++s) b += StrCat("    const double ", totals[s], " = s", s, "[lane];\n");
  b += "    __syncthreads();  // before the arrays are written again\n";
  return b;
}

GeneratedKernel FinishBlock(const Layout& l, std::string b, const char* kind, int pointers) {
  b += "  }\n}\n";
  LaunchDims launch;
  launch.grid = std::clamp<int64_t>((l.features + l.lanes - 1) / l.lanes, 1, codegen::kMaxGrid);
  launch.block = 256;
  return codegen::Finish(kind, std::move(b), launch, pointers, std::string(kind) + "_block_per_feature");
}

// Operands x, scale, offset; results out, mean, variance.
StatusOr<GeneratedKernel> Training(const Instruction& inst) {
  if (inst.operand_count() != 3)
    return InvalidArgument("batch-norm-training '", inst.name(), "' needs (operand, scale, offset)");
  XS_ASSIGN_OR_RETURN(Layout l, Check(inst, {1, 2}, 3));
  const std::string n = "(double)" + Int(l.count);
  std::string b = BlockFrame(l, 6, 1);
  b += "    double part = 0.0;\n" + ForElements(l) + "      part += " + Wide(l, "P0[at(j)]") + ";\n    }\n";
  b += BlockSum(l, {"part"}, {"sum"}) + "    const double mean = sum / " + n + ";\n";
  b += "    part = 0.0;\n" + ForElements(l) + "      const double d = " + Wide(l, "P0[at(j)]") + " - mean;\n";
  b += "      part += d * d;\n    }\n" + BlockSum(l, {"part"}, {"squares"});
  b += "    const double var = squares / " + n + ";\n";
  b += "    if (!on) continue;\n";
  // The CPU normalizes with the mean and variance as stored (rounded to the operand type).
  b += "    const " + codegen::CType(l.t) + " mean_t = " + Narrow(l, "mean") + ", var_t = " + Narrow(l, "var") + ";\n";
  b += "    if (row == 0) {\n      P4[f] = mean_t;\n      P5[f] = var_t;\n    }\n";
  b += "    const double m = " + Wide(l, "mean_t") + ", denom = sqrt(" + Wide(l, "var_t") + " + " + l.epsilon + ");\n";
  b += "    const double s = " + Wide(l, "P1[f]") + ", o = " + Wide(l, "P2[f]") + ";\n";
  b += ForElements(l) + "      const idx_t i = at(j);\n";
  b += "      P3[i] = " + Narrow(l, "(" + Wide(l, "P0[i]") + " - m) / denom * s + o") + ";\n    }\n";
  return FinishBlock(l, std::move(b), "batch_norm_training", 6);
}

// Operands x, scale, mean, variance, grad_output; results grad_operand, grad_scale, grad_offset.
StatusOr<GeneratedKernel> Grad(const Instruction& inst) {
  if (inst.operand_count() != 5) {
    return InvalidArgument("batch-norm-grad '", inst.name(), "' needs (operand, scale, mean, variance, grad_output)");
  }
  XS_ASSIGN_OR_RETURN(Layout l, Check(inst, {1, 2, 3}, 3));
  const Shape& dy = inst.operand(4)->shape();
  if (!dy.IsArray() || dy.dims() != inst.operand(0)->shape().dims() || dy.dtype() != l.t) {
    return InvalidArgument("batch-norm-grad '", inst.name(), "': grad_output ", dy.ToString(false),
                           " must have the operand's shape");
  }
  std::string b = BlockFrame(l, 8, 2);
  b += "    const double m = on ? " + Wide(l, "P2[f]") + " : 0.0;\n";
  b += "    const double rstd = on ? 1.0 / sqrt(" + Wide(l, "P3[f]") + " + " + l.epsilon + ") : 0.0;\n";
  b += "    double part_offset = 0.0, part_scale = 0.0;\n" + ForElements(l) + "      const idx_t i = at(j);\n";
  b += "      const double dy = " + Wide(l, "P4[i]") + ";\n      part_offset += dy;\n";
  b += "      part_scale += dy * (" + Wide(l, "P0[i]") + " - m) * rstd;\n    }\n";
  b += BlockSum(l, {"part_offset", "part_scale"}, {"grad_offset", "grad_scale"});
  b += "    if (!on) continue;\n";
  b += "    if (row == 0) {\n      P6[f] = " + Narrow(l, "grad_scale") +
       ";\n      P7[f] = " + Narrow(l, "grad_offset") + ";\n    }\n";
  b += "    const double s = " + Wide(l, "P1[f]") + ", n = (double)" + Int(l.count) + ";\n";
  b += ForElements(l) + "      const idx_t i = at(j);\n";
  b += "      const double xhat = (" + Wide(l, "P0[i]") + " - m) * rstd, dy = " + Wide(l, "P4[i]") + ";\n";
  b += "      P5[i] = " + Narrow(l, "s * rstd * (dy - grad_offset / n - xhat * grad_scale / n)") + ";\n    }\n";
  return FinishBlock(l, std::move(b), "batch_norm_grad", 8);
}

// Operands x, scale, offset, mean, variance; result out. One thread per element.
StatusOr<GeneratedKernel> Inference(const Instruction& inst) {
  if (inst.operand_count() != 5) {
    return InvalidArgument("batch-norm-inference '", inst.name(), "' needs (operand, scale, offset, mean, variance)");
  }
  XS_ASSIGN_OR_RETURN(Layout l, Check(inst, {1, 2, 3, 4}, 1));
  std::string b = Head(l, 6);
  b += "  const idx_t stride = (idx_t)gridDim.x * (idx_t)blockDim.x;\n";
  b += "  for (idx_t i = (idx_t)blockIdx.x * (idx_t)blockDim.x + (idx_t)threadIdx.x; i < " + Int(l.elements) +
       "; i += stride) {\n";
  b += "    const idx_t f = i / " + Int(l.inner) + " % " + Int(std::max<int64_t>(l.features, 1)) + ";\n";
  b += "    P5[i] = " +
       Narrow(l, "(" + Wide(l, "P0[i]") + " - " + Wide(l, "P3[f]") + ") / sqrt(" + Wide(l, "P4[f]") + " + " +
                     l.epsilon + ") * " + Wide(l, "P1[f]") + " + " + Wide(l, "P2[f]")) +
       ";\n  }\n}\n";
  LaunchDims launch;
  launch.grid = codegen::GridFor(l.elements);
  return codegen::Finish("batch_norm_inference", std::move(b), launch, 6, "elementwise");
}

}  // namespace

StatusOr<std::vector<GeneratedKernel>> GenerateBatchNormKernels(const Instruction& inst) {
  StatusOr<GeneratedKernel> k =
      InvalidArgument("'", inst.name(), "' is not a batch-norm-training, -inference or -grad");
  if (inst.opcode() == Opcode::kBatchNormTraining) k = Training(inst);
  if (inst.opcode() == Opcode::kBatchNormInference) k = Inference(inst);
  if (inst.opcode() == Opcode::kBatchNormGrad) k = Grad(inst);
  if (!k.ok()) return k.status();
  return std::vector<GeneratedKernel>{std::move(*k)};
}

}  // namespace xs::cuda
