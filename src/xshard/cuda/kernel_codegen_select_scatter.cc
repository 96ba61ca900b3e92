// select-and-scatter (a max-pool's gradient) as two kernels: the result filled with the init
// value, then one thread per source element that picks its window's element with the select
// computation and combines the source value into the result there.
#include <string>
#include <vector>

#include "xshard/core/shape.h"
#include "xshard/cuda/kernel_codegen_internal.h"
#include "xshard/ir/computation.h"
#include "xshard/ir/instruction.h"

namespace xs::cuda {
namespace {

using codegen::CType;
using codegen::Int;

std::string Header(int64_t largest) {
  return "extern \"C\" __global__ void __launch_bounds__(256) " + std::string(codegen::kName) +
         "(xs_args<4> a) {\n  typedef " + codegen::IndexType(largest) + " idx_t;\n";
}

}  // namespace

StatusOr<std::vector<GeneratedKernel>> GenerateSelectAndScatterKernels(const Instruction& inst) {
  const Computation* select = inst.called(CallRole::kSelect);
  const Computation* scatter = inst.called(CallRole::kScatter);
  if (inst.opcode() != Opcode::kSelectAndScatter || inst.operand_count() != 3 || select == nullptr ||
      scatter == nullptr || !inst.shape().IsArray()) {
    return InvalidArgument("'", inst.name(), "' is not a select-and-scatter with select= and scatter=");
  }
  const Shape& op = inst.operand(0)->shape();
  const Shape& src = inst.operand(1)->shape();
  const Shape& out = inst.shape();
  const Window window = inst.attrs().window.value_or(Window{});
  if (!op.IsArray() || !src.IsArray() || static_cast<int>(window.dims.size()) != op.rank() ||
      src.rank() != op.rank() || out.dims() != op.dims()) {
    return InvalidArgument("select-and-scatter '", inst.name(), "' needs a window over its operand and a source of the window's shape");
  }
  const DType t = op.dtype(), ot = out.dtype();
  XS_RETURN_IF_ERROR(codegen::RequireDType(inst, t));
  XS_RETURN_IF_ERROR(codegen::RequireDType(inst, ot));
  if (src.dtype() != ot) return InvalidArgument("select-and-scatter '", inst.name(), "': source and result types differ");
  XS_ASSIGN_OR_RETURN(std::string sel, codegen::ScalarLambda(inst, *select, "sel", {t, t}, {DType::kPred}));
  // The CPU calls scatter(source value, current value).
  XS_ASSIGN_OR_RETURN(std::string comb, codegen::ScalarLambda(inst, *scatter, "comb", {ot, ot}, {ot}));
  const std::string ct = CType(ot), opt = CType(t);

  // 1. The result filled with the init value (operand 2, a scalar).
  std::string fill = Header(out.num_elements());
  fill += "  const idx_t stride = (idx_t)(gridDim.x * blockDim.x);\n  const " + ct + " init = ((const " + ct + "*)a.p[2])[0];\n";
  fill += "  for (idx_t i = (idx_t)(blockIdx.x * blockDim.x + threadIdx.x); i < " + Int(out.num_elements()) +
          "; i += stride) ((" + ct + "*)a.p[3])[i] = init;\n}\n";
  LaunchDims fill_launch;
  fill_launch.grid = codegen::GridFor(out.num_elements());
  GeneratedKernel first = codegen::Finish("select_scatter_init", std::move(fill), fill_launch, 4, "elementwise");

  // 2. One thread per source element: its window's chosen element, in the CPU's row-major window
  // order (a candidate replaces the chosen one when select(chosen, candidate) is false), then the
  // combine. Overlapping windows may choose one element: a compare-and-swap loop around the
  // combiner for 16-, 32- and 64-bit types, one thread walking every source element in order for
  // 8-bit ones.
  const int64_t es = DTypeSize(ot);
  const bool cas = es == 2 || es == 4 || es == 8;
  const std::string word = es == 2 ? "unsigned short" : es == 4 ? "unsigned int" : "unsigned long long";
  const std::vector<int64_t> strides = RowMajorStrides(op.dims());
  int64_t taps = 1;
  for (const WindowDim& w : window.dims) taps *= w.size;
  std::string b = Header(op.num_elements() + src.num_elements()) + "  " + sel + "\n  " + comb + "\n";
  b += "  const idx_t stride = (idx_t)(gridDim.x * blockDim.x);\n";
  b += "  for (idx_t s = (idx_t)(blockIdx.x * blockDim.x + threadIdx.x); s < " + Int(src.num_elements()) + "; s += stride) {\n";
  b += "    idx_t q = s;\n";
  for (int d = src.rank() - 1; d >= 0; --d) {
    b += "    const idx_t o" + std::to_string(d) + " = q % " + Int(src.dim(d)) + "; q /= " + Int(src.dim(d)) + ";\n";
  }
  b += "    idx_t chosen = -1;\n";
  b += "    for (idx_t k = 0; k < " + Int(taps) + "; ++k) {\n      idx_t r = k, at = 0;\n      bool inside = true;\n";
  for (int d = op.rank() - 1; d >= 0; --d) {
    const WindowDim& w = window.dims[d];
    b += "      { const idx_t wk = r % " + Int(w.size) + "; r /= " + Int(w.size) + ";\n";
    b += "        idx_t pos = o" + std::to_string(d) + " * " + Int(w.stride) + " + wk * " + Int(w.rhs_dilation) + " - " +
         Int(w.pad_low) + ";\n";
    if (w.lhs_dilation > 1) {
      b += "        if (pos % " + Int(w.lhs_dilation) + " != 0) inside = false;\n        pos /= " + Int(w.lhs_dilation) + ";\n";
    }
    b += "        if (pos < 0 || pos >= " + Int(op.dim(d)) + ") inside = false;\n        at += pos * " + Int(strides[d]) + "; }\n";
  }
  b += "      if (!inside) continue;\n      if (chosen < 0) { chosen = at; continue; }\n";
  b += "      bool keep;\n      sel(((const " + opt + "*)a.p[0])[chosen], ((const " + opt + "*)a.p[0])[at], keep);\n";
  b += "      if (!keep) chosen = at;\n    }\n    if (chosen < 0) continue;\n";
  b += "    const " + ct + " v = ((const " + ct + "*)a.p[1])[s];\n";
  b += "    " + ct + "* dst = (" + ct + "*)a.p[3] + chosen;\n";
  if (cas) {
    b += "    " + word + "* w = (" + word + "*)dst;\n    " + word + " old = *w, seen;\n    do {\n      seen = old;\n";
    b += "      " + ct + " next;\n      comb(v, xs_bitcast<" + ct + ">(seen), next);\n";
    b += "      old = atomicCAS(w, seen, xs_bitcast<" + word + ">(next));\n    } while (old != seen);\n";
  } else {
    b += "    " + ct + " next;\n    comb(v, *dst, next);\n    *dst = next;\n";
  }
  b += "  }\n}\n";
  LaunchDims launch;
  launch.grid = cas ? codegen::GridFor(src.num_elements()) : 1;
  launch.block = cas ? codegen::kBlock : 1;
  GeneratedKernel second = codegen::Finish("select_scatter", std::move(b), launch, 4,
                                           cas ? "select_scatter_atomic_cas" : "select_scatter_serial");
  return std::vector<GeneratedKernel>{std::move(first), std::move(second)};
}

}  // namespace xs::cuda
