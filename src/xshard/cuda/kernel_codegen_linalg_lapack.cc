// The kernel of JAX's lapack_?getrf_ffi custom-call: LU with partial pivoting of each [m, n]
// matrix, one thread block per matrix (grid-stride over the batch). Column by column: a
// block-wide argmax of |a_ij| (the first row on ties, as the CPU executor and LAPACK choose),
// the row swap over the block's threads, the multipliers, then the trailing update over every
// (row, column) pair in parallel, with a barrier between the steps. Values in f64 in the CPU's
// order (shared memory when the matrix fits, else the result buffer; see kernel_codegen_linalg.cc).
#include <algorithm>
#include <string>

#include "xshard/core/shape.h"
#include "xshard/cuda/kernel_codegen_internal.h"
#include "xshard/ir/instruction.h"

namespace xs::cuda {
namespace linalg {
// kernel_codegen_linalg.cc.
bool FitsShared(int64_t f64_elements);
Status RequireLinalgType(const Instruction& inst, DType t);
std::string Open(int num_pointers, int64_t largest);
std::string Accessors(DType t, bool shared);
std::string Load(DType t, bool shared, int64_t count);
std::string StoreBack(DType t, int64_t count);
LaunchDims Launch(int64_t batch, int64_t width, bool shared, int64_t shared_bytes);
}  // namespace linalg

// Pointers: a, lu, pivots (s32 [..., min(m, n)], 1-based), info (s32 [...]: j+1 for the first
// exactly zero pivot, else 0).
StatusOr<GeneratedKernel> GenerateGetrfKernel(const Instruction& inst) {
  using codegen::Int;
  const Shape& in = inst.operand(0)->shape();
  const Shape& s = inst.shape();
  if (!in.IsArray() || in.rank() < 2 || !s.tuple_shape(0).IsArray() || s.tuple_shape(0).dims() != in.dims() ||
      s.tuple_shape(0).dtype() != in.dtype() || s.tuple_shape(1).dtype() != DType::kS32 ||
      s.tuple_shape(2).dtype() != DType::kS32) {
    return InvalidArgument("'", inst.name(), "' needs matrices [..., m, n] and a (lu, s32 pivots, s32 info) result");
  }
  const DType t = in.dtype();
  XS_RETURN_IF_ERROR(linalg::RequireLinalgType(inst, t));
  const int64_t rows = in.dim(in.rank() - 2), cols = in.dims().back(), mat = rows * cols;
  const int64_t k = std::min(rows, cols);
  const int64_t batch = mat == 0 ? 0 : in.num_elements() / mat;
  if (s.tuple_shape(1).num_elements() != batch * k || s.tuple_shape(2).num_elements() != batch) {
    return InvalidArgument("'", inst.name(), "': pivots must be [..., ", k, "] and info [...] for ", batch,
                           " matrices");
  }
  const bool shared = linalg::FitsShared(mat);
  const std::string ct = codegen::CType(t);

  std::string b = linalg::Open(4, in.num_elements() + mat);
  if (shared) b += "  extern __shared__ __align__(16) unsigned char xs_smem[];\n  double* w = (double*)xs_smem;\n";
  b += "  __shared__ double xs_best[256];\n  __shared__ int xs_arg[256];\n  __shared__ int xs_info;\n";
  b += "  for (idx_t bat = (idx_t)blockIdx.x; bat < " + Int(batch) + "; bat += (idx_t)gridDim.x) {\n";
  b += "    const " + ct + "* src = (const " + ct + "*)a.p[0] + bat * " + Int(mat) + ";\n";
  b += "    " + ct + "* m = (" + ct + "*)a.p[1] + bat * " + Int(mat) + ";\n";
  b += "    int* piv = (int*)a.p[2] + bat * " + Int(k) + ";\n";
  b += linalg::Accessors(t, shared) + linalg::Load(t, shared, mat);
  b += "    if (tid == 0) xs_info = 0;\n    __syncthreads();\n";
  b += "    for (idx_t j = 0; j < " + Int(k) + "; ++j) {\n";
  // Each thread's first largest |a_ij| among its rows (NaN never wins), then a tree over the
  // block: the larger, the lower row on ties; none (all NaN) leaves row j.
  b += "      double best = -1.0;\n      int arg = 0x7fffffff;\n";
  b += "      for (idx_t i = j + tid; i < " + Int(rows) + "; i += nthreads) {\n";
  b += "        const double mag = fabs(ld(i * " + Int(cols) + " + j));\n";
  b += "        if (mag > best) { best = mag; arg = (int)i; }\n      }\n";
  b += "      xs_best[tid] = best;\n      xs_arg[tid] = arg;\n      __syncthreads();\n";
  b += "      for (idx_t half = nthreads / 2; half > 0; half /= 2) {\n";
  b += "        if (tid < half) {\n";
  b += "          const double ob = xs_best[tid + half];\n          const int oa = xs_arg[tid + half];\n";
  b += "          if (ob > xs_best[tid] || (ob == xs_best[tid] && oa < xs_arg[tid])) { xs_best[tid] = ob; xs_arg[tid] "
       "= oa; }\n";
  b += "        }\n        __syncthreads();\n      }\n";
  b += "      const idx_t p = xs_best[0] > -1.0 ? (idx_t)xs_arg[0] : j;\n";
  b += "      if (tid == 0) piv[j] = (int)(p + 1);\n";
  b += "      if (p != j) {\n        for (idx_t c = tid; c < " + Int(cols) + "; c += nthreads) {\n";
  b += "          const double x = ld(j * " + Int(cols) + " + c);\n";
  b += "          st(j * " + Int(cols) + " + c, ld(p * " + Int(cols) + " + c));\n";
  b += "          st(p * " + Int(cols) + " + c, x);\n        }\n      }\n      __syncthreads();\n";
  b += "      const double pivot = ld(j * " + Int(cols) + " + j);\n";
  b += "      if (pivot == 0.0) {\n        if (tid == 0 && xs_info == 0) xs_info = (int)(j + 1);\n        continue;\n  "
       "    }\n";
  b += "      for (idx_t i = j + 1 + tid; i < " + Int(rows) + "; i += nthreads) st(i * " + Int(cols) + " + j, ld(i * " +
       Int(cols) + " + j) / pivot);\n      __syncthreads();\n";
  b += "      const idx_t width = " + Int(cols) + " - j - 1;\n";
  b += "      for (idx_t e = tid; e < (" + Int(rows) + " - j - 1) * width; e += nthreads) {\n";
  b += "        const idx_t i = j + 1 + e / width, c = j + 1 + e % width;\n";
  b += "        st(i * " + Int(cols) + " + c, ld(i * " + Int(cols) + " + c) - ld(i * " + Int(cols) + " + j) * ld(j * " +
       Int(cols) + " + c));\n      }\n      __syncthreads();\n    }\n";
  if (shared) b += linalg::StoreBack(t, mat);
  b += "    if (tid == 0) ((int*)a.p[3])[bat] = xs_info;\n    __syncthreads();\n  }\n}\n";
  return codegen::Finish("getrf", std::move(b),
                         linalg::Launch(batch, std::max(rows, (rows - 1) * (cols - 1)), shared, mat * 8), 4,
                         shared ? "linalg_lu_shared" : "linalg_lu_global");
}

}  // namespace xs::cuda
