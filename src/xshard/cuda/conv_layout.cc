// ConvLayoutFor: an XLA convolution's dimension numbers and window as cuDNN tensor, filter and
// convolution descriptors (no CUDA library needed: tested on machines without a GPU).
#include "xshard/base/strings.h"
#include "xshard/cuda/conv.h"

namespace xs::cuda {
namespace {

std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * dims[i + 1];
  return s;
}

// [batch, feature, spatial...] dims and strides of a row-major buffer.
void Describe(const std::vector<int64_t>& dims, int64_t batch, int64_t feature,
              const std::vector<int64_t>& spatial, std::vector<int64_t>& out_dims,
              std::vector<int64_t>& out_strides) {
  const std::vector<int64_t> s = RowMajorStrides(dims);
  out_dims = {dims[batch], dims[feature]};
  out_strides = {s[batch], s[feature]};
  for (int64_t d : spatial) {
    out_dims.push_back(dims[d]);
    out_strides.push_back(s[d]);
  }
}

}  // namespace

std::string ConvLayout::ToString() const {
  return StrCat("x=[", StrJoin(x_dims, ","), "]/[", StrJoin(x_strides, ","), "] w=[",
                StrJoin(w_dims, ","), "]", w_channels_last ? "KRSC" : "KCRS", " y=[",
                StrJoin(y_dims, ","), "]/[", StrJoin(y_strides, ","), "] pad=[", StrJoin(pad, ","),
                "] stride=[", StrJoin(stride, ","), "] dilation=[", StrJoin(dilation, ","),
                "] groups=", groups, " ", DTypeName(dtype), allow_tf32 ? " tf32" : "",
                " kernel_perm={", StrJoin(kernel_permutation, ","), "}");
}

StatusOr<ConvLayout> ConvLayoutFor(const Instruction& conv) {
  const Attributes& a = conv.attrs();
  if (conv.opcode() != Opcode::kConvolution || conv.operand_count() != 2 ||
      !a.conv_dims.has_value() || !conv.shape().IsArray()) {
    return Unimplemented("ConvPlan takes a convolution with two operands and dim_labels; ",
                         conv.ShortString(), " is not one");
  }
  const ConvolutionDimensionNumbers& dn = *a.conv_dims;
  const Shape& ls = conv.operand(0)->shape();
  const Shape& ks = conv.operand(1)->shape();
  const Shape& os = conv.shape();
  const std::string what = StrCat("convolution ", conv.name());
  ConvLayout l;
  l.dtype = ls.dtype();
  if (ks.dtype() != l.dtype || os.dtype() != l.dtype ||
      (l.dtype != DType::kF16 && l.dtype != DType::kBF16 && l.dtype != DType::kF32 &&
       l.dtype != DType::kF64)) {
    return Unimplemented(what, " (", DTypeName(ls.dtype()), " x ", DTypeName(ks.dtype()), " -> ",
                         DTypeName(os.dtype()), "): cuDNN plans take f16, bf16, f32 or f64 "
                         "with one type throughout; it needs the fallback convolution");
  }
  const size_t nsp = dn.input_spatial.size();
  if (nsp > 3) return Unimplemented(what, ": ", nsp, " spatial dims (cuDNN takes up to 3)");
  if (a.batch_group_count != 1) {
    return Unimplemented(what, ": batch_group_count=", a.batch_group_count, " has no cuDNN plan");
  }
  const std::vector<WindowDim> window = a.window.has_value() ? a.window->dims : std::vector<WindowDim>(nsp);
  if (window.size() != nsp || dn.kernel_spatial.size() != nsp || dn.output_spatial.size() != nsp) {
    return InvalidArgument(what, ": the window has ", window.size(), " dims for ", nsp, " spatial dims");
  }
  for (size_t i = 0; i < nsp; ++i) {
    const WindowDim& w = window[i];
    if (w.lhs_dilation != 1) {
      return Unimplemented(what, ": lhs_dilate (a transposed convolution) has no forward cuDNN plan");
    }
    if (w.window_reversal) return Unimplemented(what, ": window reversal has no cuDNN plan");
    if (w.pad_low != w.pad_high || w.pad_low < 0) {
      return Unimplemented(what, ": padding ", w.pad_low, "_", w.pad_high, " in spatial dim ", i,
                           " (cuDNN pads both sides alike and never negatively); pad the input first");
    }
    l.pad.push_back(w.pad_low);
    l.stride.push_back(w.stride);
    l.dilation.push_back(w.rhs_dilation);
  }
  l.groups = a.feature_group_count;
  Describe(ls.dims(), dn.input_batch, dn.input_feature, dn.input_spatial, l.x_dims, l.x_strides);
  Describe(os.dims(), dn.output_batch, dn.output_feature, dn.output_spatial, l.y_dims, l.y_strides);
  l.w_dims = {ks.dim(static_cast<int>(dn.kernel_output_feature)),
              ks.dim(static_cast<int>(dn.kernel_input_feature))};
  for (int64_t d : dn.kernel_spatial) l.w_dims.push_back(ks.dim(static_cast<int>(d)));
  // The filter's memory order: KRSC where the input is channels-last (tensor cores like NHWC),
  // else KCRS; read in place when the kernel already is in that order.
  l.w_channels_last = l.x_strides[1] == 1 && l.x_dims[1] > 1;
  std::vector<int64_t> want = {dn.kernel_output_feature};
  if (!l.w_channels_last) want.push_back(dn.kernel_input_feature);
  want.insert(want.end(), dn.kernel_spatial.begin(), dn.kernel_spatial.end());
  if (l.w_channels_last) want.push_back(dn.kernel_input_feature);
  bool identity = true;
  for (size_t i = 0; i < want.size(); ++i) identity = identity && want[i] == static_cast<int64_t>(i);
  if (!identity) l.kernel_permutation = want;
  // f32: TF32 unless an operand asks for HIGHEST (as for dots: see gemm_layout.cc).
  if (const auto& p = a.operand_precision; p.has_value()) {
    for (Precision q : *p) l.allow_tf32 = l.allow_tf32 && q != Precision::kHighest;
  }
  if (l.dtype != DType::kF32) l.allow_tf32 = false;
  // At least two spatial dims: trailing unit dims with the last spatial stride (or the feature
  // stride), which keeps packed NCHW / NHWC tensors packed.
  while (l.x_dims.size() < 4) {
    l.x_strides.push_back(l.x_dims.size() > 2 ? l.x_strides.back() : 1);
    l.x_dims.push_back(1);
    l.y_strides.push_back(l.y_dims.size() > 2 ? l.y_strides.back() : 1);
    l.y_dims.push_back(1);
    l.w_dims.push_back(1);
    l.pad.push_back(0);
    l.stride.push_back(1);
    l.dilation.push_back(1);
  }
  return l;
}

}  // namespace xs::cuda
