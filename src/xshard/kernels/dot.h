// dot (XLA DotGeneral): batch, contracting and free dims in any positions, result type =
// the instruction's element type (preferred_element_type). A DotPlan, made once per shape,
// decides how: f32 / f64 / c64 / c128 through BLAS GEMM with transposes folded into the
// transA / transB flags and leading dims (an operand is copied only when no strided view fits);
// bf16 x bf16 -> bf16 / f32 through oneDNN matmul (f32 accumulation, no widening copies); other
// float mixes (f16: oneDNN 2.6 has no f16 matmul on CPU) convert to f32, run sgemm, round once;
// integer and pred results use a naive loop that wraps like XLA. Which library runs which dtype
// follows the CPU's features (cpu_features.h: f32 goes to oneDNN when the loaded OpenBLAS core is
// below the CPU; f16 to oneDNN where it has an f16 kernel). Threads: SetBlasThreads, and the
// device's DeviceThreadShare (parallel.h) when several devices compute at once.
#ifndef XSHARD_KERNELS_DOT_H_
#define XSHARD_KERNELS_DOT_H_

#include <cstddef>
#include <memory>
#include <string>

#include "xshard/base/status.h"
#include "xshard/core/array.h"
#include "xshard/ir/attributes.h"

namespace xs::kernels {

// Result dims of dot: batch dims (lhs order), lhs free dims, rhs free dims. Error when batch or
// contracting dim sizes disagree or a dim number is out of range, naming both sizes.
StatusOr<std::vector<int64_t>> DotResultDims(const std::vector<int64_t>& lhs,
                                             const std::vector<int64_t>& rhs,
                                             const DotDimensionNumbers& dnums);

// dot(lhs, rhs) -> `result` dtype. Operands are converted to the result's compute type first
// (as XLA's evaluator does), so s8 x s8 -> s32 multiplies in s32.
StatusOr<Array> DotGeneral(const Array& lhs, const Array& rhs, const DotDimensionNumbers& dnums,
                           DType result);
// Naive reference: one output element at a time, accumulating in the result's compute type.
StatusOr<Array> DotGeneralReference(const Array& lhs, const Array& rhs,
                                    const DotDimensionNumbers& dnums, DType result);

// How one dot shape runs, fixed at plan time (compile time for the executor). Immutable and
// thread-safe: many devices may Run one plan at once.
//   auto plan = DotPlan::Create(Shape(kF32, {64, 32}), Shape(kF32, {48, 32}), dn, kF32);
//   (*plan)->Run(lhs_bytes, rhs_bytes, out_bytes);   // x @ y^T: one sgemm with transB
class DotPlan {
 public:
  enum class Engine { kEmpty, kBlas, kOneDnn, kNaive };
  // Error (naming the dims) when the operand shapes do not fit `dnums` or `result` cannot be
  // computed; Unimplemented when a dim exceeds BLAS's 32-bit sizes.
  static StatusOr<std::shared_ptr<const DotPlan>> Create(const Shape& lhs, const Shape& rhs,
                                                         const DotDimensionNumbers& dnums,
                                                         DType result);
  ~DotPlan();

  const Shape& result_shape() const { return result_; }
  Engine engine() const { return engine_; }
  // Operands copied before the GEMM (converted and / or transposed into scratch): 0 when every
  // transpose folds into BLAS flags and leading dims.
  int copied_operands() const { return copied_operands_; }
  // Bytes of scratch Run needs (operand copies, an f32 result before rounding).
  int64_t scratch_bytes() const { return scratch_bytes_; }
  // e.g. "blas f32 batch=4 m=64 n=48 k=32 lhs=N rhs=T copies=0".
  std::string ToString() const;

  // out = dot(lhs, rhs): row-major buffers of the planned shapes; `out` need not be zeroed.
  // `scratch` holds scratch_bytes() (64-byte aligned) or is null (a per-thread buffer is reused).
  Status Run(const std::byte* lhs, const std::byte* rhs, std::byte* out,
             std::byte* scratch = nullptr) const;
  // Checks the operands' shapes against the plan and returns a new result array.
  StatusOr<Array> Run(const Array& lhs, const Array& rhs) const;

  struct Impl;

 private:
  DotPlan() = default;
  Shape result_;
  Engine engine_ = Engine::kEmpty;
  int copied_operands_ = 0;
  int64_t scratch_bytes_ = 0;
  std::unique_ptr<Impl> impl_;
};

// Sets the number of threads OpenBLAS uses for every GEMM in this process
// (openblas_set_num_threads). The single-device executor uses the thread budget; a run of N
// devices at once uses 1, and each device splits its big GEMMs over its DeviceThreadShare on
// xshard's pool (concurrent multi-threaded callers queue on OpenBLAS's one thread server).
// n <= 0 restores the library default (OPENBLAS_NUM_THREADS or the core count).
void SetBlasThreads(int n);
// The thread count OpenBLAS currently uses.
int BlasThreads();
// Sets OpenBLAS's thread count for a scope and puts the previous one back (a device that runs
// alone and calls OpenBLAS from several of its threads at once, one product each).
class ScopedBlasThreads {
 public:
  explicit ScopedBlasThreads(int n) : saved_(BlasThreads()) { SetBlasThreads(n); }
  ~ScopedBlasThreads() { SetBlasThreads(saved_); }
  ScopedBlasThreads(const ScopedBlasThreads&) = delete;
  ScopedBlasThreads& operator=(const ScopedBlasThreads&) = delete;

 private:
  int saved_;
};

}  // namespace xs::kernels

#endif  // XSHARD_KERNELS_DOT_H_
