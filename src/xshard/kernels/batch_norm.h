// batch-norm-training / -inference / -grad (XLA semantics): normalization over every dim but
// `feature_index`, computed in f64 and rounded once to the operand type.
#ifndef XSHARD_KERNELS_BATCH_NORM_H_
#define XSHARD_KERNELS_BATCH_NORM_H_

#include <vector>

#include "xshard/base/status.h"
#include "xshard/core/array.h"

namespace xs::kernels {

// (output, batch mean, batch variance): variance is the biased one (divided by N);
// output = (x - mean) / sqrt(var + epsilon) * scale + offset.
StatusOr<std::vector<Array>> BatchNormTraining(const Array& x, const Array& scale, const Array& offset,
                                               double epsilon, int64_t feature_index);
// (x - mean) / sqrt(variance + epsilon) * scale + offset with the given statistics.
StatusOr<Array> BatchNormInference(const Array& x, const Array& scale, const Array& offset, const Array& mean,
                                   const Array& variance, double epsilon, int64_t feature_index);
// (grad operand, grad scale, grad offset) of batch-norm-training at the given statistics.
StatusOr<std::vector<Array>> BatchNormGrad(const Array& x, const Array& scale, const Array& mean,
                                           const Array& variance, const Array& grad_output, double epsilon,
                                           int64_t feature_index);

}  // namespace xs::kernels

#endif  // XSHARD_KERNELS_BATCH_NORM_H_
