// oneDNN convolution wrapper: the operands and the result are described by their strides in
// oneDNN's (N, C, spatial...) / (G, O, I, spatial...) order, the weights go to the layout the
// primitive prefers through a reorder on every call (they may change between calls), and
// primitives are kept per shape and OpenMP thread count for the life of the process.
#include "xshard/kernels/onednn_conv.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "oneapi/dnnl/dnnl.hpp"
#include "xshard/base/strings.h"
#include "xshard/kernels/onednn_internal.h"
#include "xshard/kernels/shape_ops.h"

namespace xs::kernels {
namespace {

using dims_t = dnnl::memory::dims;

// One convolution shape: the user memory descriptors and the primitives made for it.
struct ConvPrimitive {
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward prim;
  dnnl::memory::desc user_weights;
  dnnl::reorder weights_reorder;  // empty when the primitive reads the user's layout
  bool reorder_weights = false;
  std::string impl;
};

// Everything that decides the primitive, as text (the cache key).
std::string Key(const Array& lhs, const Array& rhs, const ConvolutionParams& p,
                const std::vector<int64_t>& out_dims, int threads) {
  std::string k = StrCat(threads, "|", JoinDims(lhs.dims()), "|", JoinDims(rhs.dims()), "|", JoinDims(out_dims), "|",
                         p.feature_group_count, "|", p.dims.input_batch, ",", p.dims.input_feature, ",",
                         JoinDims(p.dims.input_spatial), ";", p.dims.kernel_input_feature, ",",
                         p.dims.kernel_output_feature, ",", JoinDims(p.dims.kernel_spatial), ";",
                         p.dims.output_batch, ",", p.dims.output_feature, ",", JoinDims(p.dims.output_spatial));
  for (const WindowDim& w : p.window.dims) {
    StrAppend(&k, "|", w.size, ",", w.stride, ",", w.pad_low, ",", w.pad_high, ",", w.rhs_dilation);
  }
  return k;
}

StatusOr<std::shared_ptr<const ConvPrimitive>> Make(const Array& lhs, const Array& rhs, const ConvolutionParams& p,
                                                    const std::vector<int64_t>& out_dims) {
  const ConvolutionDimensionNumbers& dn = p.dims;
  const size_t spatial = dn.input_spatial.size();
  const int64_t groups = p.feature_group_count;
  const std::vector<int64_t> ls = RowMajorStrides(lhs.dims()), rs = RowMajorStrides(rhs.dims()),
                             os = RowMajorStrides(out_dims);
  const int64_t out_features = rhs.dims()[dn.kernel_output_feature];
  dims_t src_dims = {lhs.dims()[dn.input_batch], lhs.dims()[dn.input_feature]};
  dims_t src_strides = {ls[dn.input_batch], ls[dn.input_feature]};
  dims_t dst_dims = {out_dims[dn.output_batch], out_dims[dn.output_feature]};
  dims_t dst_strides = {os[dn.output_batch], os[dn.output_feature]};
  dims_t wei_dims, wei_strides;
  if (groups > 1) {
    wei_dims = {groups, out_features / groups, rhs.dims()[dn.kernel_input_feature]};
    wei_strides = {out_features / groups * rs[dn.kernel_output_feature], rs[dn.kernel_output_feature],
                   rs[dn.kernel_input_feature]};
  } else {
    wei_dims = {out_features, rhs.dims()[dn.kernel_input_feature]};
    wei_strides = {rs[dn.kernel_output_feature], rs[dn.kernel_input_feature]};
  }
  dims_t strides, dilates, pad_l, pad_r;
  for (size_t i = 0; i < spatial; ++i) {
    const WindowDim& w = p.window.dims[i];
    src_dims.push_back(lhs.dims()[dn.input_spatial[i]]);
    src_strides.push_back(ls[dn.input_spatial[i]]);
    dst_dims.push_back(out_dims[dn.output_spatial[i]]);
    dst_strides.push_back(os[dn.output_spatial[i]]);
    wei_dims.push_back(rhs.dims()[dn.kernel_spatial[i]]);
    wei_strides.push_back(rs[dn.kernel_spatial[i]]);
    strides.push_back(w.stride);
    dilates.push_back(w.rhs_dilation - 1);
    pad_l.push_back(w.pad_low);
    pad_r.push_back(w.pad_high);
  }
  const auto f32 = dnnl::memory::data_type::f32;
  auto prim = std::make_shared<ConvPrimitive>();
  try {
    const dnnl::memory::desc src(src_dims, f32, src_strides), dst(dst_dims, f32, dst_strides);
    prim->user_weights = dnnl::memory::desc(wei_dims, f32, wei_strides);
    const dnnl::memory::desc any_weights(wei_dims, f32, dnnl::memory::format_tag::any);
    const dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                               dnnl::algorithm::convolution_direct, src, any_weights, dst,
                                               strides, dilates, pad_l, pad_r);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    prim->pd = dnnl::convolution_forward::primitive_desc(desc, attr, onednn::Engine());
    prim->impl = prim->pd.impl_info_str();
    if (prim->impl.find("ref") != std::string::npos) {
      return Unimplemented("oneDNN convolution: only the reference implementation (", prim->impl,
                           ") fits this shape");
    }
    prim->prim = dnnl::convolution_forward(prim->pd);
    prim->reorder_weights = prim->pd.weights_desc() != prim->user_weights;
    if (prim->reorder_weights) {
      prim->weights_reorder = dnnl::reorder(dnnl::reorder::primitive_desc(
          onednn::Engine(), prim->user_weights, onednn::Engine(), prim->pd.weights_desc()));
    }
  } catch (const dnnl::error& e) {
    return Unimplemented("oneDNN convolution: ", e.what());
  }
  return std::shared_ptr<const ConvPrimitive>(std::move(prim));
}

// The primitive of a shape, made on first use (nullptr results are kept too: a refused shape is
// not offered to oneDNN again).
StatusOr<std::shared_ptr<const ConvPrimitive>> Find(const Array& lhs, const Array& rhs, const ConvolutionParams& p,
                                                    const std::vector<int64_t>& out_dims, int threads) {
  static std::mutex mu;
  static auto* cache = new std::map<std::string, std::shared_ptr<const ConvPrimitive>>();
  const std::string key = Key(lhs, rhs, p, out_dims, threads);
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache->find(key);
  if (it == cache->end()) {
    onednn::OmpThreads scope(threads);
    StatusOr<std::shared_ptr<const ConvPrimitive>> made = Make(lhs, rhs, p, out_dims);
    it = cache->emplace(key, made.ok() ? *made : nullptr).first;
    if (!made.ok()) return made.status();
  }
  if (it->second == nullptr) return Unimplemented("oneDNN convolution: no JIT implementation for this shape");
  return it->second;
}

StatusOr<Array> RunStrided(const Array& lhs, const Array& rhs, const ConvolutionParams& p,
                           const std::vector<int64_t>& out_dims, int threads);

// The dims in oneDNN's preferred plain order: lhs (batch, spatial..., feature), kernel
// (spatial..., input feature, output feature), result (batch, spatial..., feature).
bool Canonical(const ConvolutionDimensionNumbers& d) {
  const int64_t s = static_cast<int64_t>(d.input_spatial.size());
  bool ok = d.input_batch == 0 && d.input_feature == s + 1 && d.kernel_input_feature == s &&
            d.kernel_output_feature == s + 1 && d.output_batch == 0 && d.output_feature == s + 1;
  for (int64_t i = 0; i < s && ok; ++i) {
    ok = d.input_spatial[i] == i + 1 && d.kernel_spatial[i] == i && d.output_spatial[i] == i + 1;
  }
  return ok;
}

}  // namespace

StatusOr<Array> OneDnnConvolution(const Array& lhs, const Array& rhs, const ConvolutionParams& p,
                                  const std::vector<int64_t>& out_dims, int threads) {
  const size_t spatial = p.dims.input_spatial.size();
  if (lhs.dtype() != DType::kF32 || rhs.dtype() != DType::kF32 || spatial < 1 || spatial > 3 ||
      p.batch_group_count != 1 || p.feature_group_count < 1 || p.window.dims.size() != spatial) {
    return Unimplemented("oneDNN convolution: not an f32 convolution over 1 to 3 spatial dims");
  }
  for (const WindowDim& w : p.window.dims) {
    if (w.lhs_dilation != 1 || w.window_reversal || w.pad_low < 0 || w.pad_high < 0 || w.rhs_dilation < 1 ||
        w.stride < 1) {
      return Unimplemented("oneDNN convolution: base dilation, window reversal or negative padding");
    }
  }
  if (threads < 1) threads = 1;
  StatusOr<Array> direct = RunStrided(lhs, rhs, p, out_dims, threads);
  if (direct.ok() || direct.status().code() != StatusCode::kUnimplemented || Canonical(p.dims)) return direct;
  // oneDNN has only its reference loop for these strides (batch last, as in JAX's kernel
  // gradients): transpose the operands to the plain order, convolve, transpose the result back.
  const ConvolutionDimensionNumbers& d = p.dims;
  const int64_t s = static_cast<int64_t>(d.input_spatial.size());
  std::vector<int64_t> lperm = {d.input_batch}, rperm = d.kernel_spatial, oorder = {d.output_batch};
  lperm.insert(lperm.end(), d.input_spatial.begin(), d.input_spatial.end());
  lperm.push_back(d.input_feature);
  rperm.push_back(d.kernel_input_feature);
  rperm.push_back(d.kernel_output_feature);
  oorder.insert(oorder.end(), d.output_spatial.begin(), d.output_spatial.end());
  oorder.push_back(d.output_feature);
  ConvolutionParams q = p;
  q.dims.input_batch = q.dims.output_batch = 0;
  q.dims.input_feature = q.dims.kernel_output_feature = q.dims.output_feature = s + 1;
  q.dims.kernel_input_feature = s;
  std::vector<int64_t> plain_out(out_dims.size());
  for (int64_t i = 0; i < s; ++i) {
    q.dims.input_spatial[i] = q.dims.output_spatial[i] = i + 1;
    q.dims.kernel_spatial[i] = i;
  }
  for (size_t k = 0; k < oorder.size(); ++k) plain_out[k] = out_dims[oorder[k]];
  XS_ASSIGN_OR_RETURN(Array plain, RunStrided(Transpose(lhs, lperm), Transpose(rhs, rperm), q, plain_out, threads));
  // Result dim oorder[k] is plain dim k.
  std::vector<int64_t> back(out_dims.size());
  for (size_t k = 0; k < oorder.size(); ++k) back[oorder[k]] = static_cast<int64_t>(k);
  return Transpose(plain, back);
}

namespace {

StatusOr<Array> RunStrided(const Array& lhs, const Array& rhs, const ConvolutionParams& p,
                           const std::vector<int64_t>& out_dims, int threads) {
  XS_ASSIGN_OR_RETURN(std::shared_ptr<const ConvPrimitive> c, Find(lhs, rhs, p, out_dims, threads));
  Array out = Array::Uninitialized(Shape(DType::kF32, out_dims));
  onednn::OmpThreads scope(threads);
  try {
    dnnl::engine& eng = onednn::Engine();
    thread_local dnnl::stream stream(eng);
    dnnl::memory src(c->pd.src_desc(), eng, const_cast<std::byte*>(lhs.data()));
    dnnl::memory dst(c->pd.dst_desc(), eng, out.data());
    dnnl::memory user_weights(c->user_weights, eng, const_cast<std::byte*>(rhs.data()));
    const dnnl::memory::desc sd = c->pd.scratchpad_desc();
    const size_t weights_bytes = c->reorder_weights ? (c->pd.weights_desc().get_size() + 63) / 64 * 64 : 0;
    std::byte* scratch = static_cast<std::byte*>(onednn::ThreadScratch(weights_bytes + sd.get_size() + 64));
    dnnl::memory weights = user_weights;
    if (c->reorder_weights) {
      weights = dnnl::memory(c->pd.weights_desc(), eng, scratch);
      c->weights_reorder.execute(stream, user_weights, weights);
    }
    dnnl::memory scratchpad(sd, eng, scratch + weights_bytes);
    c->prim.execute(stream, {{DNNL_ARG_SRC, src},
                             {DNNL_ARG_WEIGHTS, weights},
                             {DNNL_ARG_DST, dst},
                             {DNNL_ARG_SCRATCHPAD, scratchpad}});
    stream.wait();
  } catch (const dnnl::error& e) {
    return Internal("oneDNN convolution failed: ", e.what());
  }
  return out;
}

}  // namespace
}  // namespace xs::kernels
