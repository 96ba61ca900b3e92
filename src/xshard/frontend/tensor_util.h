// Internal to the frontend: the jnp layer's promotion and broadcasting helpers shared by
// tensor_ops.cc and tensor_nn.cc.
#ifndef XSHARD_FRONTEND_TENSOR_UTIL_H_
#define XSHARD_FRONTEND_TENSOR_UTIL_H_

#include <string>
#include <vector>

#include "xshard/frontend/tensor.h"

namespace xs::fe::internal {

// 0 bool, 1 integer, 2 floating, 3 complex.
int Category(DType t);
// The common type of two strong dtypes (higher category wins, then the wider; f16 + bf16 = f32).
DType PromoteStrong(DType a, DType b);
// `t` as `d` (a concrete scalar is converted in place, like a Python literal; otherwise a
// convert_element_type equation).
Tensor ConvertTo(const Tensor& t, DType d, bool weak);
// jnp's dtype promotion over operands: weak operands take the strong ones' type (a weak float
// with integers gives f32). Error Tensors propagate.
std::vector<Tensor> Promote(const std::vector<Tensor>& xs);
// numpy broadcasting of the non-scalar operands; the error names `op` and the shapes.
StatusOr<std::vector<int64_t>> BroadcastShapes(const std::string& op, const std::vector<Tensor>& xs);
// A binary primitive after promotion and broadcasting.
Tensor Binary(const std::string& prim, const Tensor& a, const Tensor& b);
// Axes sorted with negatives counted from the end; empty means all when `all_if_empty`.
std::vector<int64_t> NormalizeAxes(const Tensor& x, std::vector<int64_t> axes, bool all_if_empty);

}  // namespace xs::fe::internal

#endif  // XSHARD_FRONTEND_TENSOR_UTIL_H_
