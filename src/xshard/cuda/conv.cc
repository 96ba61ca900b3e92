// ConvPlan: cuDNN descriptors for a ConvLayout, the heuristics' first algorithm that fits the
// workspace cap, and the forward call.
#include "xshard/cuda/conv.h"

#include <map>
#include <mutex>
#include <thread>

#include "xshard/base/strings.h"
#include "xshard/cuda/cuda_status.h"
#include "xshard/cuda/cudnn_api.h"

namespace xs::cuda {

struct ConvPlan::State {
  const CudnnApi* api = nullptr;
  ConvLayout layout;
  int device = 0;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  int64_t workspace = 0;
  bool empty = false;

  ~State() {
    if (api == nullptr) return;
    if (x != nullptr) api->DestroyTensorDescriptor(x);
    if (y != nullptr) api->DestroyTensorDescriptor(y);
    if (w != nullptr) api->DestroyFilterDescriptor(w);
    if (conv != nullptr) api->DestroyConvolutionDescriptor(conv);
  }
};

namespace {

cudnnDataType_t CudnnType(DType t) {
  switch (t) {
    case DType::kF16: return CUDNN_DATA_HALF;
    case DType::kBF16: return CUDNN_DATA_BFLOAT16;
    case DType::kF64: return CUDNN_DATA_DOUBLE;
    default: return CUDNN_DATA_FLOAT;
  }
}

std::vector<int> Ints(const std::vector<int64_t>& v) { return std::vector<int>(v.begin(), v.end()); }

bool FitsInt(const std::vector<int64_t>& v) {
  for (int64_t x : v) {
    if (x > INT32_MAX) return false;
  }
  return true;
}

// One cuDNN handle per (thread, GPU): a handle carries its stream (cudnnSetStream), so threads
// running different devices must not share one.
StatusOr<cudnnHandle_t> Handle(const CudnnApi& api, int device) {
  thread_local std::map<int, cudnnHandle_t> handles;
  if (auto it = handles.find(device); it != handles.end()) return it->second;
  int previous = -1;
  if (cudaGetDevice(&previous) != cudaSuccess) previous = -1;
  XS_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  cudnnHandle_t h = nullptr;
  const cudnnStatus_t st = api.Create(&h);
  if (previous >= 0) (void)cudaSetDevice(previous);
  XS_RETURN_IF_ERROR(CudnnStatus(api, st, "cudnnCreate"));
  handles[device] = h;
  return h;
}

Status Describe(ConvPlan::State& s) {
  const CudnnApi& api = *s.api;
  const ConvLayout& l = s.layout;
  const cudnnDataType_t type = CudnnType(l.dtype);
  const int nd = static_cast<int>(l.x_dims.size());
  XS_CUDNN_RETURN_IF_ERROR(api, api.CreateTensorDescriptor(&s.x));
  XS_CUDNN_RETURN_IF_ERROR(api, api.SetTensorNdDescriptor(s.x, type, nd, Ints(l.x_dims).data(),
                                                          Ints(l.x_strides).data()));
  XS_CUDNN_RETURN_IF_ERROR(api, api.CreateTensorDescriptor(&s.y));
  XS_CUDNN_RETURN_IF_ERROR(api, api.SetTensorNdDescriptor(s.y, type, nd, Ints(l.y_dims).data(),
                                                          Ints(l.y_strides).data()));
  XS_CUDNN_RETURN_IF_ERROR(api, api.CreateFilterDescriptor(&s.w));
  XS_CUDNN_RETURN_IF_ERROR(api, api.SetFilterNdDescriptor(
                                    s.w, type, l.w_channels_last ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                                    nd, Ints(l.w_dims).data()));
  XS_CUDNN_RETURN_IF_ERROR(api, api.CreateConvolutionDescriptor(&s.conv));
  // f16 / bf16 accumulate in f32, f64 in f64 (as XLA's GPU backend asks cuDNN to).
  const cudnnDataType_t compute = l.dtype == DType::kF64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  XS_CUDNN_RETURN_IF_ERROR(api, api.SetConvolutionNdDescriptor(
                                    s.conv, nd - 2, Ints(l.pad).data(), Ints(l.stride).data(),
                                    Ints(l.dilation).data(), CUDNN_CROSS_CORRELATION, compute));
  XS_CUDNN_RETURN_IF_ERROR(api, api.SetConvolutionGroupCount(s.conv, static_cast<int>(l.groups)));
  // CUDNN_FMA_MATH keeps f32 out of tensor cores (no TF32) for precision HIGHEST.
  const cudnnMathType_t math = l.dtype == DType::kF32 && !l.allow_tf32 ? CUDNN_FMA_MATH
                                                                       : CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
  XS_CUDNN_RETURN_IF_ERROR(api, api.SetConvolutionMathType(
                                    s.conv, l.dtype == DType::kF64 ? CUDNN_DEFAULT_MATH : math));
  return OkStatus();
}

}  // namespace

StatusOr<ConvPlan> ConvPlan::Create(const Instruction& conv, const DeviceInfo& gpu,
                                    int64_t max_workspace_bytes) {
  XS_ASSIGN_OR_RETURN(ConvLayout layout, ConvLayoutFor(conv));
  for (const auto* v : {&layout.x_dims, &layout.x_strides, &layout.y_dims, &layout.y_strides, &layout.w_dims}) {
    if (!FitsInt(*v)) return Unimplemented("convolution ", conv.name(), ": a dim or stride exceeds cuDNN's int32");
  }
  auto state = std::make_shared<State>();
  state->layout = std::move(layout);
  state->device = gpu.ordinal;
  ConvPlan plan;
  plan.state_ = state;
  int64_t elements = 1;
  for (int64_t d : state->layout.y_dims) elements *= d;
  int64_t x_elements = 1;
  for (int64_t d : state->layout.x_dims) x_elements *= d;
  if (elements == 0 || x_elements == 0) {  // nothing to compute, or zeros
    state->empty = true;
    return plan;
  }
  XS_ASSIGN_OR_RETURN(state->api, Cudnn());
  const std::string what = StrCat("convolution ", conv.name(), " (", state->layout.ToString(), ")");
  XS_RETURN_IF_ERROR(Annotate(Describe(*state), what + ": "));
  XS_ASSIGN_OR_RETURN(cudnnHandle_t h, Handle(*state->api, gpu.ordinal));
  int previous = -1;
  if (cudaGetDevice(&previous) != cudaSuccess) previous = -1;
  XS_CUDA_RETURN_IF_ERROR(cudaSetDevice(gpu.ordinal));
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT] = {};
  int found = 0;
  const cudnnStatus_t st = state->api->GetConvolutionForwardAlgorithm_v7(
      h, state->x, state->w, state->conv, state->y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf);
  if (previous >= 0) (void)cudaSetDevice(previous);
  XS_RETURN_IF_ERROR(Annotate(CudnnStatus(*state->api, st, "cudnnGetConvolutionForwardAlgorithm_v7"), what + ": "));
  for (int i = 0; i < found; ++i) {
    if (perf[i].status == CUDNN_STATUS_SUCCESS &&
        static_cast<int64_t>(perf[i].memory) <= max_workspace_bytes) {
      state->algo = perf[i].algo;
      state->workspace = static_cast<int64_t>(perf[i].memory);
      return plan;
    }
  }
  return Unimplemented(what, ": cuDNN has no forward algorithm within ", max_workspace_bytes,
                       " bytes of workspace; it needs the fallback convolution");
}

const ConvLayout& ConvPlan::layout() const { return state_->layout; }
int64_t ConvPlan::workspace_bytes() const { return state_->workspace; }

std::string ConvPlan::AlgorithmString() const {
  if (state_->empty) return "none (empty)";
  return StrCat("cuDNN fwd algo ", static_cast<int>(state_->algo), ", ", state_->workspace, " B");
}

Status ConvPlan::Run(cudaStream_t stream, const void* input, const void* kernel, void* out,
                     void* workspace) const {
  const State& s = *state_;
  const ConvLayout& l = s.layout;
  if (s.empty) {
    int64_t n = DTypeSize(l.dtype);
    for (int64_t d : l.y_dims) n *= d;
    if (n > 0) XS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(out, 0, n, stream));
    return OkStatus();
  }
  XS_ASSIGN_OR_RETURN(cudnnHandle_t h, Handle(*s.api, s.device));
  XS_CUDNN_RETURN_IF_ERROR(*s.api, s.api->SetStream(h, stream));
  const float alpha_f = 1, beta_f = 0;
  const double alpha_d = 1, beta_d = 0;
  const bool f64 = l.dtype == DType::kF64;
  XS_CUDNN_RETURN_IF_ERROR(
      *s.api, s.api->ConvolutionForward(h, f64 ? static_cast<const void*>(&alpha_d) : &alpha_f, s.x,
                                        input, s.w, kernel, s.conv, s.algo, workspace,
                                        static_cast<size_t>(s.workspace),
                                        f64 ? static_cast<const void*>(&beta_d) : &beta_f, s.y, out));
  return OkStatus();
}

}  // namespace xs::cuda
