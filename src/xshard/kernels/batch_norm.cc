// Batch normalization by feature: each element's feature is (linear index / inner) % features.
#include "xshard/kernels/batch_norm.h"

#include <cmath>

namespace xs::kernels {
namespace {

struct Layout {
  int64_t features = 0, inner = 1, count = 0;  // count: elements per feature (N)
  int64_t Feature(int64_t i) const { return (i / inner) % features; }
};

StatusOr<Layout> Check(const Array& x, int64_t feature_index, std::initializer_list<const Array*> per_feature) {
  if (!IsFloating(x.dtype())) return InvalidArgument("batch-norm needs a floating-point operand, got ", DTypeName(x.dtype()));
  if (feature_index < 0 || feature_index >= x.rank()) {
    return InvalidArgument("batch-norm feature_index=", feature_index, " is outside the operand's rank ", x.rank());
  }
  Layout l;
  l.features = x.dims()[feature_index];
  for (int d = static_cast<int>(feature_index) + 1; d < x.rank(); ++d) l.inner *= x.dims()[d];
  l.count = l.features == 0 ? 0 : x.num_elements() / l.features;
  for (const Array* a : per_feature) {
    if (a->rank() != 1 || a->dims()[0] != l.features || a->dtype() != x.dtype()) {
      return InvalidArgument("batch-norm: per-feature operands must be ", DTypeName(x.dtype()), "[", l.features,
                             "], got ", a->shape().ToString(false));
    }
  }
  return l;
}

Array Vector(DType t, const std::vector<double>& v) {
  Array a(Shape(t, {static_cast<int64_t>(v.size())}));
  for (size_t i = 0; i < v.size(); ++i) a.SetDouble(static_cast<int64_t>(i), v[i]);
  return a;
}

std::vector<double> Values(const Array& a) {
  std::vector<double> v(static_cast<size_t>(a.num_elements()));
  for (int64_t i = 0; i < a.num_elements(); ++i) v[i] = a.GetDouble(i);
  return v;
}

}  // namespace

StatusOr<std::vector<Array>> BatchNormTraining(const Array& x, const Array& scale, const Array& offset,
                                               double epsilon, int64_t feature_index) {
  XS_ASSIGN_OR_RETURN(Layout l, Check(x, feature_index, {&scale, &offset}));
  std::vector<double> mean(l.features), var(l.features);
  const std::vector<double> xv = Values(x);
  for (int64_t i = 0; i < x.num_elements(); ++i) mean[l.Feature(i)] += xv[i];
  for (double& m : mean) m /= static_cast<double>(l.count);
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const double d = xv[i] - mean[l.Feature(i)];
    var[l.Feature(i)] += d * d;
  }
  for (double& v : var) v /= static_cast<double>(l.count);
  XS_ASSIGN_OR_RETURN(Array out, BatchNormInference(x, scale, offset, Vector(x.dtype(), mean),
                                                    Vector(x.dtype(), var), epsilon, feature_index));
  std::vector<Array> r;
  r.push_back(std::move(out));
  r.push_back(Vector(x.dtype(), mean));
  r.push_back(Vector(x.dtype(), var));
  return r;
}

StatusOr<Array> BatchNormInference(const Array& x, const Array& scale, const Array& offset, const Array& mean,
                                   const Array& variance, double epsilon, int64_t feature_index) {
  XS_ASSIGN_OR_RETURN(Layout l, Check(x, feature_index, {&scale, &offset, &mean, &variance}));
  const std::vector<double> s = Values(scale), o = Values(offset), m = Values(mean), v = Values(variance);
  Array out(x.shape().WithoutLayout());
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const int64_t f = l.Feature(i);
    out.SetDouble(i, (x.GetDouble(i) - m[f]) / std::sqrt(v[f] + epsilon) * s[f] + o[f]);
  }
  return out;
}

StatusOr<std::vector<Array>> BatchNormGrad(const Array& x, const Array& scale, const Array& mean,
                                           const Array& variance, const Array& grad_output, double epsilon,
                                           int64_t feature_index) {
  XS_ASSIGN_OR_RETURN(Layout l, Check(x, feature_index, {&scale, &mean, &variance}));
  if (grad_output.shape().dims() != x.dims() || grad_output.dtype() != x.dtype()) {
    return InvalidArgument("batch-norm-grad: grad_output ", grad_output.shape().ToString(false),
                           " must have the operand's shape ", x.shape().ToString(false));
  }
  const std::vector<double> s = Values(scale), m = Values(mean), v = Values(variance);
  std::vector<double> grad_scale(l.features), grad_offset(l.features), rstd(l.features);
  for (int64_t f = 0; f < l.features; ++f) rstd[f] = 1.0 / std::sqrt(v[f] + epsilon);
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const int64_t f = l.Feature(i);
    const double dy = grad_output.GetDouble(i);
    grad_offset[f] += dy;
    grad_scale[f] += dy * (x.GetDouble(i) - m[f]) * rstd[f];
  }
  Array grad_x(x.shape().WithoutLayout());
  const double n = static_cast<double>(l.count);
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const int64_t f = l.Feature(i);
    const double xhat = (x.GetDouble(i) - m[f]) * rstd[f];
    const double dy = grad_output.GetDouble(i);
    grad_x.SetDouble(i, s[f] * rstd[f] * (dy - grad_offset[f] / n - xhat * grad_scale[f] / n));
  }
  std::vector<Array> r;
  r.push_back(std::move(grad_x));
  r.push_back(Vector(x.dtype(), grad_scale));
  r.push_back(Vector(x.dtype(), grad_offset));
  return r;
}

}  // namespace xs::kernels
