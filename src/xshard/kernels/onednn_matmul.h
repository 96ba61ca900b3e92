// A oneDNN matmul primitive for one strided batched shape (bf16 x bf16 -> bf16 / f32 with f32
// accumulation; f32 too), created once and run many times. Internal to kernels/.
#ifndef XSHARD_KERNELS_ONEDNN_MATMUL_H_
#define XSHARD_KERNELS_ONEDNN_MATMUL_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "xshard/base/status.h"
#include "xshard/core/dtype.h"

namespace xs::kernels {

// out[b, i, j] = sum_p a[b, i, p] * w[b, p, j]; strides in elements {batch, row, col}, the
// result dense row-major [batch, m, n]. With outer > 1 a second, outer batch dim comes first:
// out[o, b, i, j] = sum_p a[o, b, i, p] * w[o, b, p, j], its strides {a, w, out} in
// outer_strides (the attention's [batch, heads] dims, heads strided inside a row).
struct OneDnnMatmulShape {
  DType a_type = DType::kBF16, w_type = DType::kBF16, out_type = DType::kF32;
  int64_t batch = 1, m = 0, n = 0, k = 0;
  std::array<int64_t, 3> a_strides{}, w_strides{};
  int64_t outer = 1;
  std::array<int64_t, 3> outer_strides{};
};

class OneDnnMatmul {
 public:
  // Error when oneDNN has no implementation for the types (e.g. f16 on oneDNN 2.6's CPU engine)
  // or only its slow reference one (`allow_reference` false).
  static StatusOr<std::unique_ptr<OneDnnMatmul>> Create(const OneDnnMatmulShape& shape,
                                                        bool allow_reference = false);
  ~OneDnnMatmul();
  // Runs on `threads` OpenMP threads of the calling thread (primitive cached per count).
  Status Run(const void* a, const void* w, void* out, int threads) const;
  // The implementation oneDNN picked, e.g. "brg:avx512_core_amx_bf16".
  const std::string& impl() const { return impl_name_; }
  // True when oneDNN can run `type` matmuls on this CPU at all.
  static bool Supports(DType type);

  struct State;

 private:
  OneDnnMatmul() = default;
  std::string impl_name_;
  std::unique_ptr<State> state_;
};

}  // namespace xs::kernels

#endif  // XSHARD_KERNELS_ONEDNN_MATMUL_H_
