// Convolution as one GEMM per (tap, output row), accumulating in f32 (see convolution_taps.h).
#include "xshard/kernels/convolution_taps.h"

#include <cblas.h>

#include <algorithm>
#include <memory>

#include "xshard/kernels/elementwise.h"
#include "xshard/kernels/numeric.h"
#include "xshard/kernels/parallel.h"
#include "xshard/kernels/shape_ops.h"

namespace xs::kernels {
namespace {

constexpr int64_t kMinFeatures = 32;
constexpr int64_t kMinRows = 16;

bool IsGemmInput(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

bool IsIdentity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

// floor(a / b) and ceil(a / b) for b > 0 and any sign of a.
int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int64_t CeilDiv(int64_t a, int64_t b) { return -FloorDiv(-a, b); }

}  // namespace

bool TapGemmApplies(const Array& lhs, const Array& rhs, const ConvolutionParams& p,
                    const std::vector<int64_t>& out_dims) {
  const auto& d = p.dims;
  const size_t n = d.input_spatial.size();
  if (n == 0 || p.batch_group_count != 1 || !IsGemmInput(lhs.dtype()) || !IsGemmInput(rhs.dtype())) return false;
  for (const WindowDim& w : p.window.dims) {
    if (w.lhs_dilation != 1) return false;
  }
  return rhs.dims()[d.kernel_input_feature] >= kMinFeatures && out_dims[d.output_spatial[n - 1]] >= kMinRows;
}

Array TapGemmConvolution(const Array& lhs, const Array& rhs, const ConvolutionParams& p,
                         const std::vector<int64_t>& out_dims) {
  XS_CHECK(TapGemmApplies(lhs, rhs, p, out_dims), "TapGemmConvolution: not applicable");
  const auto& d = p.dims;
  const int n = static_cast<int>(d.input_spatial.size());
  const int64_t groups = p.feature_group_count;
  // lhs as f32 [batch, spatial..., features]: the caller's array when it already is that.
  std::vector<int64_t> to_canonical = {d.input_batch};
  to_canonical.insert(to_canonical.end(), d.input_spatial.begin(), d.input_spatial.end());
  to_canonical.push_back(d.input_feature);
  std::unique_ptr<Array> owned;
  const Array* a = &lhs;
  if (lhs.dtype() != DType::kF32) owned = std::make_unique<Array>(lhs.Convert(DType::kF32));
  if (!IsIdentity(to_canonical)) owned = std::make_unique<Array>(Transpose(owned ? *owned : lhs, to_canonical));
  if (owned) a = owned.get();
  const std::vector<int64_t>& in = a->dims();
  const int64_t features = in[n + 1], fi = features / groups;
  const int64_t fo = rhs.dims()[d.kernel_output_feature] / groups;
  std::vector<int64_t> window(n), out(n);
  for (int s = 0; s < n; ++s) {
    window[s] = p.window.dims[s].size;
    out[s] = out_dims[d.output_spatial[s]];
  }
  const int64_t taps = Product(window);
  // Kernel as f32 [group][tap][fi][fo], window reversal applied.
  Array kernel(Shape(DType::kF32, {groups, taps, fi, fo}));
  float* K = reinterpret_cast<float*>(kernel.data());
  const std::vector<int64_t> rs = RowMajorStrides(rhs.dims());
  std::vector<int64_t> k(n, 0);
  for (int64_t t = 0; t < taps; ++t) {
    int64_t r_off = 0;
    for (int s = 0; s < n; ++s) {
      const int64_t ks = p.window.dims[s].window_reversal ? window[s] - 1 - k[s] : k[s];
      r_off += ks * rs[d.kernel_spatial[s]];
    }
    for (int64_t g = 0; g < groups; ++g) {
      for (int64_t i = 0; i < fi; ++i) {
        for (int64_t o = 0; o < fo; ++o) {
          const int64_t src = r_off + i * rs[d.kernel_input_feature] + (g * fo + o) * rs[d.kernel_output_feature];
          K[((g * taps + t) * fi + i) * fo + o] = static_cast<float>(rhs.GetDouble(src));
        }
      }
    }
    NextIndex(k, window);
  }
  // Output as f32 [batch, spatial..., groups * fo], accumulated tap by tap.
  std::vector<int64_t> canonical_out = {in[0]};
  canonical_out.insert(canonical_out.end(), out.begin(), out.end());
  canonical_out.push_back(groups * fo);
  Array result(Shape(DType::kF32, canonical_out));
  const std::vector<int64_t> ls = RowMajorStrides(in), os = RowMajorStrides(canonical_out);
  const float* L = reinterpret_cast<const float*>(a->data());
  float* O = reinterpret_cast<float*>(result.data());
  const std::vector<int64_t> rows(out.begin(), out.end() - 1);  // output row index: spatial dims but the last
  const WindowDim& last = p.window.dims[n - 1];
  std::fill(k.begin(), k.end(), 0);
  for (int64_t t = 0; t < taps && !Interrupted(); ++t) {  // a stopped run drops the output
    // The run of last-dim outputs o with 0 <= o * stride - pad_low + k * dilation < in.
    const int64_t shift = k[n - 1] * last.rhs_dilation - last.pad_low;
    const int64_t first = std::max<int64_t>(0, CeilDiv(-shift, last.stride));
    const int64_t end = std::min<int64_t>(out[n - 1], FloorDiv(in[n] - 1 - shift, last.stride) + 1);
    std::vector<int64_t> row(rows.size(), 0);
    for (int64_t r = 0; end > first && r < Product(rows); ++r) {
      int64_t l_off = 0, o_off = 0;
      bool inside = true;
      for (int s = 0; s + 1 < n && inside; ++s) {
        const WindowDim& w = p.window.dims[s];
        const int64_t pos = row[s] * w.stride - w.pad_low + k[s] * w.rhs_dilation;
        inside = pos >= 0 && pos < in[1 + s];
        l_off += pos * ls[1 + s];
        o_off += row[s] * os[1 + s];
      }
      if (inside) {
        l_off += (first * last.stride + shift) * ls[n];
        o_off += first * os[n];
        for (int64_t b = 0; b < in[0]; ++b) {
          for (int64_t g = 0; g < groups; ++g) {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(end - first),
                        static_cast<blasint>(fo), static_cast<blasint>(fi), 1.0f, L + b * ls[0] + l_off + g * fi,
                        static_cast<blasint>(last.stride * ls[n]), K + (g * taps + t) * fi * fo,
                        static_cast<blasint>(fo), 1.0f, O + b * os[0] + o_off + g * fo, static_cast<blasint>(os[n]));
          }
        }
      }
      if (!rows.empty()) NextIndex(row, rows);
    }
    NextIndex(k, window);
  }
  // Back to the requested layout: output dim r is canonical dim perm[r].
  std::vector<int64_t> perm(n + 2);
  perm[d.output_batch] = 0;
  for (int s = 0; s < n; ++s) perm[d.output_spatial[s]] = 1 + s;
  perm[d.output_feature] = n + 1;
  if (IsIdentity(perm)) return result;
  return Transpose(result, perm);
}

}  // namespace xs::kernels
