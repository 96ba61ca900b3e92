// Convolution: direct loop with precomputed input positions per (output, window) position, and two
// GEMM paths (f16 / bf16 through f32): one GEMM per tap and output row for wide features and rows
// (convolution_taps.h), else im2col per feature group and chunk of output positions.
#include "xshard/kernels/convolution.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "xshard/kernels/convolution_taps.h"
#include "xshard/kernels/dot.h"
#include "xshard/kernels/elementwise.h"
#include "xshard/kernels/numeric.h"
#include "xshard/kernels/onednn_conv.h"
#include "xshard/kernels/parallel.h"
#include "xshard/kernels/scalar_ops.h"

namespace xs::kernels {
namespace {

int64_t DilatedSize(int64_t n, int64_t dilation) { return n == 0 ? 0 : (n - 1) * dilation + 1; }

// For one spatial dim: input position read by output position o and window position k, or -1
// for padding / dilation holes. Indexed [o * size + k].
std::vector<int64_t> InputPositions(int64_t out_size, int64_t in_size, const WindowDim& w) {
  std::vector<int64_t> pos(static_cast<size_t>(out_size * w.size), -1);
  for (int64_t o = 0; o < out_size; ++o) {
    for (int64_t k = 0; k < w.size; ++k) {
      int64_t p = o * w.stride - w.pad_low + k * w.rhs_dilation;
      if (w.lhs_dilation > 1) {
        if (p % w.lhs_dilation != 0) continue;
        p /= w.lhs_dilation;
      }
      if (p >= 0 && p < in_size) pos[o * w.size + k] = p;
    }
  }
  return pos;
}

struct ConvGeometry {
  std::vector<int64_t> out_dims;
  int64_t num_spatial = 0;
  std::vector<std::vector<int64_t>> positions;  // per spatial dim
  std::vector<int64_t> window_sizes;
};

StatusOr<ConvGeometry> Geometry(const Array& lhs, const Array& rhs, const ConvolutionParams& p) {
  ConvGeometry g;
  XS_ASSIGN_OR_RETURN(g.out_dims, ConvolutionResultDims(lhs.dims(), rhs.dims(), p));
  g.num_spatial = static_cast<int64_t>(p.dims.input_spatial.size());
  for (int64_t i = 0; i < g.num_spatial; ++i) {
    const WindowDim& w = p.window.dims[i];
    g.positions.push_back(InputPositions(g.out_dims[p.dims.output_spatial[i]],
                                         lhs.dims()[p.dims.input_spatial[i]], w));
    g.window_sizes.push_back(w.size);
  }
  return g;
}

StatusOr<Array> ToDType(const Array& a, DType t) {
  if (a.dtype() == t) return a;
  return Convert(a, t);
}

template <typename S>
void DirectConv(const Array& lhs, const Array& rhs, const ConvolutionParams& p,
                const ConvGeometry& g, Array& out) {
  const auto& d = p.dims;
  const S* L = reinterpret_cast<const S*>(lhs.data());
  const S* R = reinterpret_cast<const S*>(rhs.data());
  S* O = reinterpret_cast<S*>(out.data());
  const std::vector<int64_t> ls = RowMajorStrides(lhs.dims()), rs = RowMajorStrides(rhs.dims());
  const int64_t in_batch = lhs.dims()[d.input_batch], in_features = lhs.dims()[d.input_feature];
  const int64_t out_features = rhs.dims()[d.kernel_output_feature];
  const int64_t ifg = in_features / p.feature_group_count;
  const int64_t ofg = out_features / p.feature_group_count;
  const int64_t batch_group_size = in_batch / p.batch_group_count;
  const int64_t depthwise = p.batch_group_count > 1 ? out_features / p.batch_group_count : 1;
  std::vector<int64_t> oi(g.out_dims.size(), 0), ki(g.num_spatial, 0);
  // A stop is seen about every 2^20 multiply-adds (one output can be a whole 801-tap window).
  int64_t per_output = ifg;
  for (int64_t w : g.window_sizes) per_output *= std::max<int64_t>(w, 1);
  const int64_t check_every = std::max<int64_t>(1, (int64_t{1} << 20) / std::max<int64_t>(per_output, 1));
  for (int64_t linear = 0; linear < out.num_elements(); ++linear) {
    if (linear % check_every == 0 && Interrupted()) return;  // the run was stopped: the output is dropped
    const int64_t ob = oi[d.output_batch], of = oi[d.output_feature];
    const int64_t fgi = of / ofg, bgi = of / depthwise;
    const int64_t lhs_batch_base =
        (ob + (bgi * batch_group_size) % in_batch) * ls[d.input_batch] +
        fgi * ifg * ls[d.input_feature];
    const int64_t rhs_base = of * rs[d.kernel_output_feature];
    auto acc = ComputeT<S>(0);
    std::fill(ki.begin(), ki.end(), 0);
    bool more = true;
    while (more) {
      int64_t l_off = lhs_batch_base, r_off = rhs_base;
      bool inside = true;
      for (int64_t s = 0; s < g.num_spatial && inside; ++s) {
        const int64_t o = oi[d.output_spatial[s]];
        const int64_t pos = g.positions[s][o * g.window_sizes[s] + ki[s]];
        if (pos < 0) inside = false;
        l_off += pos * ls[d.input_spatial[s]];
        const int64_t k = p.window.dims[s].window_reversal ? g.window_sizes[s] - 1 - ki[s] : ki[s];
        r_off += k * rs[d.kernel_spatial[s]];
      }
      if (inside) {
        for (int64_t iz = 0; iz < ifg; ++iz) {
          acc = ops::Add::Apply(
              acc, ops::Multiply::Apply(ToCompute(L[l_off + iz * ls[d.input_feature]]),
                                        ToCompute(R[r_off + iz * rs[d.kernel_input_feature]])));
        }
      }
      more = g.num_spatial > 0 && NextIndex(ki, g.window_sizes);
    }
    O[linear] = FromCompute<S>(acc);
    NextIndex(oi, g.out_dims);
  }
}

// Rows of patches built and multiplied at a time: bounds the im2col buffer (a whole-output
// patch matrix of a big convolution is gigabytes) while each GEMM stays large enough to run at
// BLAS speed.
constexpr int64_t kPatchChunkBytes = int64_t{32} << 20;

// Row-major multi-index of `linear` in `dims`.
void Unravel(int64_t linear, const std::vector<int64_t>& dims, std::vector<int64_t>& index) {
  for (int64_t s = static_cast<int64_t>(dims.size()) - 1; s >= 0; --s) {
    index[s] = linear % dims[s];
    linear /= dims[s];
  }
}

// An operand element in the GEMM type. bf16 -> f32 is the 16 bits shifted up (exact), inline here
// because the patch loop runs it for every patch element (the out-of-line core conversion cost
// 10 % of a bf16 convolution).
template <typename G, typename T>
inline G Widen(T v) {
  if constexpr (std::is_same_v<T, BFloat16>) {
    const uint32_t bits = static_cast<uint32_t>(v.bits) << 16;
    float f;
    std::memcpy(&f, &bits, sizeof(f));
    return static_cast<G>(f);
  } else {
    return static_cast<G>(ToCompute(v));
  }
}

// im2col per feature group g: patches [batch * out_positions, window * group_in_features] x
// kernel [window * group_in_features, group_out_features] -> GEMMs in type G over chunks of patch
// rows (one buffer reused), scattered to the output layout (output features
// g * group_out_features + o). Operands are read in their storage type T (G itself, or f16 / bf16
// widened element by element), so no converted copy of a whole operand is made.
template <typename G, typename T>
StatusOr<Array> Im2ColConv(const Array& lhs, const Array& rhs, const ConvolutionParams& p,
                           const ConvGeometry& g, DType gemm) {
  const auto& d = p.dims;
  const int64_t groups = p.feature_group_count;
  const int64_t batch = lhs.dims()[d.input_batch];
  const int64_t in_f = lhs.dims()[d.input_feature] / groups;
  const int64_t out_f = rhs.dims()[d.kernel_output_feature] / groups;
  std::vector<int64_t> out_spatial;
  for (int64_t s = 0; s < g.num_spatial; ++s) out_spatial.push_back(g.out_dims[d.output_spatial[s]]);
  const int64_t positions = Product(out_spatial), window = Product(g.window_sizes);
  const int64_t rows = batch * positions, cols = window * in_f;
  const int64_t chunk = std::clamp<int64_t>(kPatchChunkBytes / std::max<int64_t>(1, cols * DTypeSize(gemm)), 1, rows);
  const std::vector<int64_t> ls = RowMajorStrides(lhs.dims()), rs = RowMajorStrides(rhs.dims());
  const std::vector<int64_t> os = RowMajorStrides(g.out_dims);
  const T* L = reinterpret_cast<const T*>(lhs.data());
  const T* R = reinterpret_cast<const T*>(rhs.data());
  Array out(Shape(gemm, g.out_dims));
  G* O = reinterpret_cast<G*>(out.data());
  std::vector<int64_t> ki(g.num_spatial, 0), oi(g.num_spatial, 0);
  DotDimensionNumbers dn;
  dn.lhs_contracting = {1};
  dn.rhs_contracting = {0};
  Array kernel(Shape(gemm, {cols, out_f}));
  Array full_chunk(Shape(gemm, {chunk, cols}));
  // GEMM plans made once: full chunks and the (shorter) last one; products into one buffer.
  XS_ASSIGN_OR_RETURN(std::shared_ptr<const DotPlan> full_plan,
                      DotPlan::Create(full_chunk.shape(), kernel.shape(), dn, gemm));
  std::shared_ptr<const DotPlan> last_plan = full_plan;
  if (rows % chunk != 0) {
    XS_ASSIGN_OR_RETURN(last_plan, DotPlan::Create(Shape(gemm, {rows % chunk, cols}), kernel.shape(), dn, gemm));
  }
  Array prod(Shape(gemm, {chunk, out_f}));
  for (int64_t group = 0; group < groups; ++group) {
    G* K = reinterpret_cast<G*>(kernel.data());
    std::fill(ki.begin(), ki.end(), 0);
    for (int64_t w = 0; w < window; ++w) {
      int64_t r_off = group * out_f * rs[d.kernel_output_feature];
      for (int64_t s = 0; s < g.num_spatial; ++s) {
        const int64_t k = p.window.dims[s].window_reversal ? g.window_sizes[s] - 1 - ki[s] : ki[s];
        r_off += k * rs[d.kernel_spatial[s]];
      }
      for (int64_t f = 0; f < in_f; ++f) {
        for (int64_t o = 0; o < out_f; ++o) {
          K[(w * in_f + f) * out_f + o] =
              Widen<G>(R[r_off + f * rs[d.kernel_input_feature] + o * rs[d.kernel_output_feature]]);
        }
      }
      if (g.num_spatial > 0) NextIndex(ki, g.window_sizes);
    }
    for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
      if (Interrupted()) return out;  // the run was stopped: the output is dropped
      const int64_t n = std::min(chunk, rows - r0);
      Array last_chunk;
      if (n < chunk) last_chunk = Array(Shape(gemm, {n, cols}));
      Array& patches = n < chunk ? last_chunk : full_chunk;
      G* P = reinterpret_cast<G*>(patches.data());
      Unravel(r0 % positions, out_spatial, oi);
      for (int64_t r = r0; r < r0 + n; ++r) {
        const int64_t b = r / positions;
        G* row = P + (r - r0) * cols;
        std::fill(ki.begin(), ki.end(), 0);
        for (int64_t w = 0; w < window; ++w) {
          int64_t l_off = b * ls[d.input_batch] + group * in_f * ls[d.input_feature];
          bool inside = true;
          for (int64_t s = 0; s < g.num_spatial && inside; ++s) {
            const int64_t ip = g.positions[s][oi[s] * g.window_sizes[s] + ki[s]];
            inside = ip >= 0;
            l_off += ip * ls[d.input_spatial[s]];
          }
          G* dst = row + w * in_f;
          if (inside) {
            for (int64_t f = 0; f < in_f; ++f) dst[f] = Widen<G>(L[l_off + f * ls[d.input_feature]]);
          } else {
            std::fill(dst, dst + in_f, G(0));
          }
          if (g.num_spatial > 0) NextIndex(ki, g.window_sizes);
        }
        if (g.num_spatial > 0) NextIndex(oi, out_spatial);
      }
      XS_RETURN_IF_ERROR((n < chunk ? last_plan : full_plan)->Run(patches.data(), kernel.data(), prod.data()));
      const G* Q = reinterpret_cast<const G*>(prod.data());
      Unravel(r0 % positions, out_spatial, oi);
      for (int64_t r = r0; r < r0 + n; ++r) {
        int64_t base = (r / positions) * os[d.output_batch] + group * out_f * os[d.output_feature];
        for (int64_t s = 0; s < g.num_spatial; ++s) base += oi[s] * os[d.output_spatial[s]];
        const G* q = Q + (r - r0) * out_f;
        for (int64_t o = 0; o < out_f; ++o) O[base + o * os[d.output_feature]] = q[o];
        if (g.num_spatial > 0) NextIndex(oi, out_spatial);
      }
    }
  }
  return out;
}

}  // namespace

StatusOr<std::vector<int64_t>> ConvolutionResultDims(const std::vector<int64_t>& lhs,
                                                     const std::vector<int64_t>& rhs,
                                                     const ConvolutionParams& p) {
  const auto& d = p.dims;
  const size_t ns = d.input_spatial.size();
  if (d.kernel_spatial.size() != ns || d.output_spatial.size() != ns ||
      p.window.dims.size() != ns || lhs.size() != ns + 2 || rhs.size() != ns + 2) {
    return InvalidArgument("convolution: ", ns, " spatial dims in dim_labels, but operands of rank ",
                           lhs.size(), " and ", rhs.size(), " and a window of ",
                           p.window.dims.size(), " dims");
  }
  if (p.feature_group_count < 1 || p.batch_group_count < 1) {
    return InvalidArgument("convolution: feature_group_count and batch_group_count must be >= 1");
  }
  const int64_t in_f = lhs[d.input_feature], k_in = rhs[d.kernel_input_feature];
  const int64_t out_f = rhs[d.kernel_output_feature], batch = lhs[d.input_batch];
  if (k_in * p.feature_group_count != in_f) {
    return InvalidArgument("convolution: input features (", in_f, ") must equal kernel input ",
                           "features (", k_in, ") x feature_group_count (",
                           p.feature_group_count, ")");
  }
  if (out_f % p.feature_group_count != 0 || out_f % p.batch_group_count != 0 ||
      batch % p.batch_group_count != 0) {
    return InvalidArgument("convolution: output features (", out_f, ") and batch (", batch,
                           ") must divide by the group counts");
  }
  std::vector<int64_t> out(ns + 2);
  out[d.output_batch] = batch / p.batch_group_count;
  out[d.output_feature] = out_f;
  for (size_t i = 0; i < ns; ++i) {
    const WindowDim& w = p.window.dims[i];
    if (w.size != rhs[d.kernel_spatial[i]]) {
      return InvalidArgument("convolution: window size ", w.size, " of spatial dim ", i,
                             " differs from the kernel's ", rhs[d.kernel_spatial[i]]);
    }
    if (w.stride < 1 || w.lhs_dilation < 1 || w.rhs_dilation < 1) {
      return InvalidArgument("convolution: strides and dilations must be >= 1");
    }
    const int64_t padded = DilatedSize(lhs[d.input_spatial[i]], w.lhs_dilation) + w.pad_low + w.pad_high;
    const int64_t win = DilatedSize(w.size, w.rhs_dilation);
    out[d.output_spatial[i]] = padded < win ? 0 : (padded - win) / w.stride + 1;
  }
  return out;
}

StatusOr<Array> ConvolutionReference(const Array& lhs, const Array& rhs,
                                     const ConvolutionParams& p, DType result) {
  XS_ASSIGN_OR_RETURN(ConvGeometry g, Geometry(lhs, rhs, p));
  if (!IsComputableDType(result)) return UnsupportedDType("convolution", result);
  XS_ASSIGN_OR_RETURN(Array a, ToDType(lhs, result));
  XS_ASSIGN_OR_RETURN(Array b, ToDType(rhs, result));
  Array out(Shape(result, g.out_dims));
  VisitDType(
      result, [&](auto tag) { DirectConv<typename decltype(tag)::type>(a, b, p, g, out); }, [] {});
  return out;
}

StatusOr<Array> Convolution(const Array& lhs, const Array& rhs, const ConvolutionParams& p,
                            DType result) {
  XS_ASSIGN_OR_RETURN(ConvGeometry g, Geometry(lhs, rhs, p));
  // Narrow operands or result (f8*, f4e2m1fn, s2 / s4 / u2 / u4): computed on exact wide copies
  // (f32, s32 / u32), the result rounded back as XLA rounds an op result.
  if (IsNarrowType(lhs.dtype()) || IsNarrowType(rhs.dtype()) || IsNarrowType(result)) {
    XS_ASSIGN_OR_RETURN(Array a, Convert(lhs, WidenedDType(lhs.dtype())));
    XS_ASSIGN_OR_RETURN(Array b, Convert(rhs, WidenedDType(rhs.dtype())));
    const DType wide = WidenedDType(result);
    XS_ASSIGN_OR_RETURN(Array out, Convolution(a, b, p, wide));
    if (wide == result) return out;
    XS_ASSIGN_OR_RETURN(UnaryKernel round, FindResultRoundKernel(wide, result));
    Array narrow(Shape(result, out.dims()));
    round(out.data(), narrow.data(), out.num_elements());
    return narrow;
  }
  // GEMM in f32 / f64; f16 / bf16 results compute in f32 and round once at the end.
  const bool half = result == DType::kF16 || result == DType::kBF16;
  const DType gemm = half ? DType::kF32 : result;
  if ((gemm != DType::kF32 && gemm != DType::kF64) || p.batch_group_count != 1 || Product(g.out_dims) == 0) {
    return ConvolutionReference(lhs, rhs, p, result);
  }
  // f32 operands: oneDNN's JIT convolution where it has one (onednn_conv.h). On a 2-core EPYC,
  // 3x3 SAME NHWC f32[8,56,56,64] x [3,3,64,64]: 52.6-52.9 ms through the tap GEMMs, 22.0-23.8
  // ms through oneDNN; the kernel gradient of that block at [8,28,28,64]: 30.2-32.9 -> 10.6-11.6.
  if (result == DType::kF32 && lhs.dtype() == DType::kF32 && rhs.dtype() == DType::kF32) {
    const DeviceThreadShare share = CurrentDeviceThreadShare();
    const int threads = share.threads > 0 ? share.threads : static_cast<int>(BlasThreads());
    StatusOr<Array> out = OneDnnConvolution(lhs, rhs, p, g.out_dims, threads);
    if (out.ok()) return out;
  }
  if (gemm == DType::kF32 && TapGemmApplies(lhs, rhs, p, g.out_dims)) {
    Array out = TapGemmConvolution(lhs, rhs, p, g.out_dims);
    if (!half) return out;
    return Convert(out, result);
  }
  if (gemm == DType::kF64) {
    XS_ASSIGN_OR_RETURN(Array a, ToDType(lhs, gemm));
    XS_ASSIGN_OR_RETURN(Array b, ToDType(rhs, gemm));
    return Im2ColConv<double, double>(a, b, p, g, gemm);
  }
  // Operands of one 16-bit float type (or f32) are read as they are; other mixes convert first.
  const DType in = lhs.dtype();
  Array out;
  if (in == rhs.dtype() && in == DType::kBF16) {
    XS_ASSIGN_OR_RETURN(out, (Im2ColConv<float, BFloat16>(lhs, rhs, p, g, gemm)));
  } else if (in == rhs.dtype() && in == DType::kF16) {
    XS_ASSIGN_OR_RETURN(out, (Im2ColConv<float, Half>(lhs, rhs, p, g, gemm)));
  } else {
    XS_ASSIGN_OR_RETURN(Array a, ToDType(lhs, gemm));
    XS_ASSIGN_OR_RETURN(Array b, ToDType(rhs, gemm));
    XS_ASSIGN_OR_RETURN(out, (Im2ColConv<float, float>(a, b, p, g, gemm)));
  }
  if (!half) return out;
  return Convert(out, result);
}

}  // namespace xs::kernels
