// GEMM plans: an XLA dot (dot_general) on row-major device buffers as one cuBLASLt matmul call
// (batched dots as one strided-batched call), with XLA's GPU types and precision rules.
// GemmLayoutFor is the data-independent mapping (no GPU needed, tested on CPU machines);
// GemmPlan adds cuBLASLt's descriptors and the chosen algorithm for one GPU.
#ifndef XSHARD_CUDA_GEMM_H_
#define XSHARD_CUDA_GEMM_H_

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/core/dtype.h"
#include "xshard/cuda/platform.h"
#include "xshard/ir/instruction.h"

namespace xs::cuda {

// cuBLASLt's compute type, as a plain enum so tests need no cuBLAS header.
enum class GemmCompute { k32F, k32FFastTF32, k64F };
std::string_view GemmComputeName(GemmCompute c);  // "32F", "32F_FAST_TF32", "64F"

// How a dot maps onto one column-major cuBLASLt call. The output is row-major
// out[batch..., lhs free..., rhs free...] = row-major C[b][m][n]. Row-major C[m,n] is column-major
// C^T[n,m] = rhs^T * lhs^T, so cuBLASLt's A is the rhs and its B the lhs:
//   cublas m = n (rhs free size), cublas n = m (lhs free size), k = contracting size.
// `transa` / `transb` are cuBLASLt's op flags for A (= rhs) and B (= lhs) on column-major views.
// Example: dot(f32[4,16] x, f32[16,8] y), lhs_contracting={1}, rhs_contracting={0} ->
//   m=4 n=8 k=16 batch=1, A = y as col-major [8,16] lda=8 transa=false,
//   B = x as col-major [16,4] ldb=16 transb=false, ldc=8.
struct GemmLayout {
  int64_t m = 0, n = 0, k = 0;  // the dot's sizes: lhs free, rhs free, contracting
  int64_t batch = 1;
  bool transa = false, transb = false;  // cuBLASLt op flags of A (rhs) and B (lhs)
  int64_t lda = 0, ldb = 0, ldc = 0;    // leading dims (in elements) of the col-major views
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;  // batch strides in elements (0 if batch 1)
  DType lhs_type = DType::kF32, rhs_type = DType::kF32, out_type = DType::kF32;
  GemmCompute compute = GemmCompute::k32F;
  DType scale_type = DType::kF32;  // alpha / beta
  // Transposes (XLA transpose semantics: dim i of the result is dim perm[i] of the operand) the
  // caller applies to an operand before Run, when its dims cannot be read in place; empty when it
  // is read in place. After the transpose the lhs is [batch..., free..., contracting...] and the
  // rhs [batch..., contracting..., free...], both row-major.
  std::vector<int64_t> lhs_permutation, rhs_permutation;

  std::string ToString() const;  // one line with every field, for messages and tests
};

// The cuBLASLt mapping of `dot` (opcode dot; operands and result dense row-major). Types follow
// XLA's GPU backend: bf16 / f16 operands accumulate in f32 (result bf16 / f16 or f32), f32 uses
// TF32 unless an operand's precision is HIGHEST, f64 computes in f64. Errors (Unimplemented,
// naming the dot and the reason, so the executor can route it elsewhere): integer or complex
// operands ("integer dot ... needs the fallback dot kernel"), mixed operand types, a result type
// cuBLASLt does not produce from these operands, and a dot that is not an opcode dot.
StatusOr<GemmLayout> GemmLayoutFor(const Instruction& dot);

struct GemmOptions {
  // Upper bound on the cuBLASLt workspace the plan may ask for; the executor allocates
  // workspace_bytes() (<= this) once per device and passes it to Run.
  int64_t max_workspace_bytes = int64_t{32} << 20;
  // Number of cuBLASLt heuristic candidates; with autotune, each is timed once (per shape,
  // dtype and GPU, cached for the process) on scratch buffers and the fastest kept. Without
  // autotune (or for small problems) the heuristic's first choice is taken.
  int heuristic_candidates = 8;
  bool autotune = true;
};

// A dot ready to run on one GPU. Create needs the GPU (cuBLASLt's heuristics query it); copies
// share the same descriptors. Run may be called concurrently from several host threads on
// different streams, each with its own workspace.
class GemmPlan {
 public:
  // Maps `dot` (GemmLayoutFor), builds the cuBLASLt descriptors for `gpu` and chooses the
  // algorithm. Errors: GemmLayoutFor's; cuBLASLt missing (Unavailable); no algorithm for this
  // form (Unimplemented, naming the layout).
  static StatusOr<GemmPlan> Create(const Instruction& dot, const DeviceInfo& gpu,
                                   const GemmOptions& options = {});

  const GemmLayout& layout() const;
  int64_t workspace_bytes() const;
  // See GemmLayout: transposes the caller applies first (into a temporary of the operand's byte
  // size) and then passes the temporary to Run; empty when the operand is read in place.
  const std::vector<int64_t>& lhs_permutation() const { return layout().lhs_permutation; }
  const std::vector<int64_t>& rhs_permutation() const { return layout().rhs_permutation; }
  // The chosen algorithm, e.g. "cuBLASLt algo 21 tile 23 stages 20 (1 of 8, timed 1.190 ms)".
  std::string AlgorithmString() const;

  // out = dot(lhs, rhs) enqueued on `stream` on the plan's GPU (the caller has made it current).
  // `workspace` holds workspace_bytes() bytes (may be null when that is 0) and must not be used
  // by another call on another stream until this one finishes. An empty contraction (k == 0)
  // writes zeros; an empty result does nothing.
  Status Run(cudaStream_t stream, const void* lhs, const void* rhs, void* out,
             void* workspace) const;

  struct State;  // cuBLASLt descriptors and the chosen algorithm (gemm.cc)

 private:
  std::shared_ptr<const State> state_;
};

}  // namespace xs::cuda

#endif  // XSHARD_CUDA_GEMM_H_
