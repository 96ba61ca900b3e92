// GemmPlan: cuBLASLt descriptors for a GemmLayout, the algorithm chosen by cuBLASLt's heuristics
// (timed once per shape and GPU when asked), and the call itself.
#include "xshard/cuda/gemm.h"

#include <map>
#include <mutex>

#include "xshard/base/strings.h"
#include "xshard/cuda/cublaslt_api.h"
#include "xshard/cuda/cuda_status.h"

namespace xs::cuda {

struct GemmPlan::State {
  const CublasLtApi* api = nullptr;
  cublasLtHandle_t handle = nullptr;
  GemmLayout layout;
  int device = 0;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  int64_t workspace = 0;
  std::string algorithm;

  ~State() {
    if (api == nullptr) return;
    if (a != nullptr) api->MatrixLayoutDestroy(a);
    if (b != nullptr) api->MatrixLayoutDestroy(b);
    if (c != nullptr) api->MatrixLayoutDestroy(c);
    if (desc != nullptr) api->MatmulDescDestroy(desc);
  }
};

namespace {

// Every pointer Run takes must be aligned to this: the heuristics are asked for algorithms that
// need no more (cuBLASLt would otherwise assume 256 bytes), which the executor's arena offsets and
// temporaries satisfy.
constexpr int64_t kAlignment = 16;

cudaDataType_t CudaType(DType t) {
  switch (t) {
    case DType::kBF16: return CUDA_R_16BF;
    case DType::kF16: return CUDA_R_16F;
    case DType::kF64: return CUDA_R_64F;
    default: return CUDA_R_32F;
  }
}

cublasComputeType_t ComputeType(GemmCompute c) {
  switch (c) {
    case GemmCompute::k32FFastTF32: return CUBLAS_COMPUTE_32F_FAST_TF32;
    case GemmCompute::k64F: return CUBLAS_COMPUTE_64F;
    default: return CUBLAS_COMPUTE_32F;
  }
}

// Makes `device` current for the scope and restores the caller's device after.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    status_ = CudaStatus(cudaSetDevice(device), "cudaSetDevice");
  }
  ~DeviceScope() {
    if (previous_ >= 0) (void)cudaSetDevice(previous_);
  }
  const Status& status() const { return status_; }

 private:
  int previous_ = -1;
  Status status_;
};

// One cuBLASLt handle per GPU for the process (cuBLASLt handles hold no stream or workspace, so
// concurrent matmuls on different streams may share one).
StatusOr<cublasLtHandle_t> Handle(const CublasLtApi& api, int device) {
  static std::mutex mu;
  static auto* handles = new std::map<int, cublasLtHandle_t>();
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = handles->find(device); it != handles->end()) return it->second;
  DeviceScope scope(device);
  XS_RETURN_IF_ERROR(scope.status());
  cublasLtHandle_t h = nullptr;
  XS_CUBLAS_RETURN_IF_ERROR(api, api.Create(&h));
  (*handles)[device] = h;
  return h;
}

template <typename T>
Status SetLayout(const CublasLtApi& api, cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t attr,
                 T value) {
  XS_CUBLAS_RETURN_IF_ERROR(api, api.MatrixLayoutSetAttribute(l, attr, &value, sizeof(value)));
  return OkStatus();
}

StatusOr<cublasLtMatrixLayout_t> MakeLayout(const CublasLtApi& api, DType type, int64_t rows,
                                            int64_t cols, int64_t ld, int64_t batch,
                                            int64_t stride) {
  cublasLtMatrixLayout_t l = nullptr;
  XS_CUBLAS_RETURN_IF_ERROR(api, api.MatrixLayoutCreate(&l, CudaType(type), rows, cols, ld));
  if (batch > 1) {
    XS_RETURN_IF_ERROR(SetLayout(api, l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, static_cast<int32_t>(batch)));
    XS_RETURN_IF_ERROR(SetLayout(api, l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, stride));
  }
  return l;
}

Status Describe(GemmPlan::State& s) {
  const CublasLtApi& api = *s.api;
  const GemmLayout& g = s.layout;
  XS_CUBLAS_RETURN_IF_ERROR(api, api.MatmulDescCreate(&s.desc, ComputeType(g.compute), CudaType(g.scale_type)));
  const cublasOperation_t ta = g.transa ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t tb = g.transb ? CUBLAS_OP_T : CUBLAS_OP_N;
  XS_CUBLAS_RETURN_IF_ERROR(api, api.MatmulDescSetAttribute(s.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
  XS_CUBLAS_RETURN_IF_ERROR(api, api.MatmulDescSetAttribute(s.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
  XS_ASSIGN_OR_RETURN(s.a, MakeLayout(api, g.rhs_type, g.transa ? g.k : g.n, g.transa ? g.n : g.k,
                                      g.lda, g.batch, g.stride_a));
  XS_ASSIGN_OR_RETURN(s.b, MakeLayout(api, g.lhs_type, g.transb ? g.m : g.k, g.transb ? g.k : g.m,
                                      g.ldb, g.batch, g.stride_b));
  XS_ASSIGN_OR_RETURN(s.c, MakeLayout(api, g.out_type, g.n, g.m, g.ldc, g.batch, g.stride_c));
  return OkStatus();
}

StatusOr<std::vector<cublasLtMatmulHeuristicResult_t>> Candidates(const GemmPlan::State& s,
                                                                  const GemmOptions& o) {
  const CublasLtApi& api = *s.api;
  cublasLtMatmulPreference_t pref = nullptr;
  XS_CUBLAS_RETURN_IF_ERROR(api, api.MatmulPreferenceCreate(&pref));
  std::vector<cublasLtMatmulHeuristicResult_t> results(std::max(1, o.heuristic_candidates));
  int found = 0;
  const uint64_t ws = static_cast<uint64_t>(std::max<int64_t>(0, o.max_workspace_bytes));
  const uint32_t align = kAlignment;
  cublasStatus_t st = api.MatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
  for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
    if (st == CUBLAS_STATUS_SUCCESS) st = api.MatmulPreferenceSetAttribute(pref, attr, &align, sizeof(align));
  }
  if (st == CUBLAS_STATUS_SUCCESS) {
    st = api.MatmulAlgoGetHeuristic(s.handle, s.desc, s.a, s.b, s.c, s.c, pref,
                                    static_cast<int>(results.size()), results.data(), &found);
  }
  api.MatmulPreferenceDestroy(pref);
  XS_RETURN_IF_ERROR(CublasStatus(api, st, "cublasLtMatmulAlgoGetHeuristic"));
  if (found <= 0) {
    return Unimplemented("cuBLASLt has no algorithm for the GEMM ", s.layout.ToString(),
                         "; it needs the fallback dot kernel");
  }
  results.resize(found);
  return results;
}

Status Enqueue(const GemmPlan::State& s, const cublasLtMatmulAlgo_t& algo, int64_t workspace_bytes,
               cudaStream_t stream, const void* lhs, const void* rhs, void* out, void* workspace) {
  const float alpha_f = 1, beta_f = 0;
  const double alpha_d = 1, beta_d = 0;
  const bool f64 = s.layout.scale_type == DType::kF64;
  const void* alpha = f64 ? static_cast<const void*>(&alpha_d) : &alpha_f;
  const void* beta = f64 ? static_cast<const void*>(&beta_d) : &beta_f;
  XS_CUBLAS_RETURN_IF_ERROR(*s.api, s.api->Matmul(s.handle, s.desc, alpha, rhs, s.a, lhs, s.b, beta,
                                                  out, s.c, out, s.c, &algo, workspace,
                                                  static_cast<size_t>(workspace_bytes), stream));
  return OkStatus();
}

// Median-free quick timing: one warm-up, then the best of three runs of each candidate. Scratch
// buffers come from cudaMalloc for the duration; when they cannot be had, the first candidate
// stands (nullopt).
std::optional<size_t> Fastest(const GemmPlan::State& s,
                              const std::vector<cublasLtMatmulHeuristicResult_t>& cands,
                              std::vector<float>& ms) {
  const GemmLayout& g = s.layout;
  const int64_t a_bytes = g.batch * g.n * g.k * DTypeSize(g.rhs_type);
  const int64_t b_bytes = g.batch * g.m * g.k * DTypeSize(g.lhs_type);
  const int64_t c_bytes = g.batch * g.m * g.n * DTypeSize(g.out_type);
  int64_t ws = 0;
  for (const auto& c : cands) ws = std::max<int64_t>(ws, static_cast<int64_t>(c.workspaceSize));
  void *a = nullptr, *b = nullptr, *c = nullptr, *w = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  std::optional<size_t> best;
  bool ok = cudaMalloc(&a, a_bytes) == cudaSuccess && cudaMalloc(&b, b_bytes) == cudaSuccess &&
            cudaMalloc(&c, c_bytes) == cudaSuccess && (ws == 0 || cudaMalloc(&w, ws) == cudaSuccess) &&
            cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess &&
            cudaEventCreate(&start) == cudaSuccess && cudaEventCreate(&stop) == cudaSuccess &&
            cudaMemsetAsync(a, 0, a_bytes, stream) == cudaSuccess &&
            cudaMemsetAsync(b, 0, b_bytes, stream) == cudaSuccess;
  float best_ms = 0;
  for (size_t i = 0; ok && i < cands.size(); ++i) {
    float t = -1;
    for (int rep = 0; rep < 4; ++rep) {
      cudaEventRecord(start, stream);
      if (!Enqueue(s, cands[i].algo, ws, stream, b, a, c, w).ok()) break;
      cudaEventRecord(stop, stream);
      float e = 0;
      if (cudaEventSynchronize(stop) != cudaSuccess || cudaEventElapsedTime(&e, start, stop) != cudaSuccess) break;
      if (rep > 0 && (t < 0 || e < t)) t = e;
    }
    ms.push_back(t);
    if (t >= 0 && (!best.has_value() || t < best_ms)) {
      best = i;
      best_ms = t;
    }
  }
  (void)cudaGetLastError();  // a failed candidate leaves no sticky state behind
  if (start != nullptr) cudaEventDestroy(start);
  if (stop != nullptr) cudaEventDestroy(stop);
  if (stream != nullptr) cudaStreamDestroy(stream);
  for (void* p : {a, b, c, w}) {
    if (p != nullptr) cudaFree(p);
  }
  return best;
}

std::string ToHex(uintptr_t v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%jx", static_cast<uintmax_t>(v));
  return buf;
}

struct Chosen {
  cublasLtMatmulAlgo_t algo;
  int64_t workspace;
  std::string description;
};

Chosen Choose(const GemmPlan::State& s, const GemmOptions& o,
              const std::vector<cublasLtMatmulHeuristicResult_t>& cands) {
  const GemmLayout& g = s.layout;
  const double flops = 2.0 * g.batch * g.m * g.n * g.k;
  size_t pick = 0;
  std::string how = "heuristic first of " + std::to_string(cands.size());
  // Timing pays off only for GEMMs long enough to measure (~1 GFLOP: tens of microseconds).
  if (o.autotune && cands.size() > 1 && flops >= 1e9) {
    std::vector<float> ms;
    if (std::optional<size_t> best = Fastest(s, cands, ms); best.has_value()) {
      pick = *best;
      char buf[96];
      std::snprintf(buf, sizeof(buf), "timed best %zu of %zu, %.3f ms", pick + 1, cands.size(), ms[pick]);
      how = buf;
    }
  }
  int32_t id = -1, tile = -1, stages = -1;
  size_t written = 0;
  s.api->MatmulAlgoConfigGetAttribute(&cands[pick].algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof(id), &written);
  s.api->MatmulAlgoConfigGetAttribute(&cands[pick].algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof(tile), &written);
  s.api->MatmulAlgoConfigGetAttribute(&cands[pick].algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof(stages), &written);
  return {cands[pick].algo, static_cast<int64_t>(cands[pick].workspaceSize),
          StrCat("cuBLASLt algo ", id, " tile ", tile, " stages ", stages, " (", how, ")")};
}

}  // namespace

StatusOr<GemmPlan> GemmPlan::Create(const Instruction& dot, const DeviceInfo& gpu,
                                    const GemmOptions& options) {
  XS_ASSIGN_OR_RETURN(GemmLayout layout, GemmLayoutFor(dot));
  if (layout.batch > INT32_MAX) {
    return Unimplemented("dot ", dot.name(), ": batch ", layout.batch, " exceeds cuBLASLt's int32 batch count");
  }
  auto state = std::make_shared<State>();
  XS_ASSIGN_OR_RETURN(state->api, CublasLt());
  state->layout = std::move(layout);
  state->device = gpu.ordinal;
  GemmPlan plan;
  plan.state_ = state;
  const GemmLayout& g = state->layout;
  if (g.batch * g.m * g.n == 0 || g.k == 0) {
    state->algorithm = "none (empty: memset)";
    return plan;
  }
  XS_ASSIGN_OR_RETURN(state->handle, Handle(*state->api, gpu.ordinal));
  XS_RETURN_IF_ERROR(Annotate(Describe(*state), StrCat("dot ", dot.name())));
  // One choice per GPU model, layout and workspace cap for the process.
  static std::mutex mu;
  static auto* cache = new std::map<std::string, Chosen>();
  const std::string key = StrCat(gpu.name, "|", gpu.ordinal, "|", g.ToString(), "|",
                                 options.max_workspace_bytes, "|", options.heuristic_candidates,
                                 options.autotune ? "|t" : "|h");
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = cache->find(key); it != cache->end()) {
      state->algo = it->second.algo;
      state->workspace = it->second.workspace;
      state->algorithm = it->second.description;
      return plan;
    }
  }
  DeviceScope scope(gpu.ordinal);
  XS_RETURN_IF_ERROR(scope.status());
  XS_ASSIGN_OR_RETURN(auto cands, Candidates(*state, options));
  Chosen chosen = Choose(*state, options, cands);
  state->algo = chosen.algo;
  state->workspace = chosen.workspace;
  state->algorithm = chosen.description;
  std::lock_guard<std::mutex> lock(mu);
  cache->emplace(key, std::move(chosen));
  return plan;
}

const GemmLayout& GemmPlan::layout() const { return state_->layout; }
int64_t GemmPlan::workspace_bytes() const { return state_->workspace; }
std::string GemmPlan::AlgorithmString() const { return state_->algorithm; }

Status GemmPlan::Run(cudaStream_t stream, const void* lhs, const void* rhs, void* out,
                     void* workspace) const {
  const State& s = *state_;
  const GemmLayout& g = s.layout;
  if (g.batch * g.m * g.n == 0) return OkStatus();
  if (g.k == 0) {
    XS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(out, 0, g.batch * g.m * g.n * DTypeSize(g.out_type), stream));
    return OkStatus();
  }
  for (auto [p, what] : {std::pair<const void*, const char*>{lhs, "lhs"}, {rhs, "rhs"}, {out, "out"},
                         {workspace, "workspace"}}) {
    if (reinterpret_cast<uintptr_t>(p) % kAlignment != 0) {
      return Internal("GemmPlan::Run: the ", what, " pointer 0x",
                      ToHex(reinterpret_cast<uintptr_t>(p)), " is not ", kAlignment,
                      "-byte aligned (the executor must align every buffer)");
    }
  }
  if (s.workspace > 0 && workspace == nullptr) {
    return Internal("GemmPlan::Run: the plan needs ", s.workspace, " bytes of workspace and got none");
  }
  return Enqueue(s, s.algo, s.workspace, stream, lhs, rhs, out, workspace);
}

}  // namespace xs::cuda
