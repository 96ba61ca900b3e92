// Implementation of kernel_codegen_test_util.h (test binary only; holds no tests).
#ifdef XSHARD_WITH_CUDA

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <cmath>
#include <memory>
#include <set>
#include <unordered_set>
#include <cstring>
#include <dlfcn.h>
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>

#include "xshard/cuda/kernel_codegen_internal.h"
#include "xshard/cuda/kernel_codegen_test_util.h"
#include "xshard/cuda/kernel_loader.h"
#include "xshard/exec/executable_plan.h"
#include "xshard/exec/fusion_plan.h"

namespace xs::cuda::testing {

bool IsCodegenOp(const Instruction& inst) {
  switch (inst.opcode()) {
    case Opcode::kTranspose: case Opcode::kBroadcast: case Opcode::kSlice: case Opcode::kReverse:
    case Opcode::kPad: case Opcode::kConcatenate: case Opcode::kIota: case Opcode::kDynamicSlice:
    case Opcode::kDynamicUpdateSlice: case Opcode::kReduce: case Opcode::kReduceWindow:
    case Opcode::kGather: case Opcode::kScatter: case Opcode::kSort: case Opcode::kTopK:
    case Opcode::kSelectAndScatter:
    case Opcode::kConvolution: case Opcode::kDot:  // the direct kernels (cuDNN / cuBLASLt on a GPU)
    case Opcode::kRng: case Opcode::kRngBitGenerator:  // not rng-get-and-update-state: its state is the plan's
    case Opcode::kCholesky: case Opcode::kTriangularSolve: case Opcode::kRaggedDot:
    case Opcode::kBatchNormTraining: case Opcode::kBatchNormInference: case Opcode::kBatchNormGrad:
    case Opcode::kScan: case Opcode::kMap: case Opcode::kReducePrecision: case Opcode::kFft:
      return true;
    case Opcode::kCustomCall: {
      const std::string target = inst.attrs().custom_call_target.value_or("");
      return target == "TopK" || target == "__op$block_scaled_dot" || target.rfind("lapack_", 0) == 0 ||
             target.rfind("_SPMDInternalOp_", 0) == 0;
    }
    default:
      return IsCodegenElementwise(inst.opcode());
  }
}

namespace {

// Computations whose steps run inside another op's kernel (reducers, comparators, combiners).
std::unordered_set<const Computation*> ScalarCallees(const Module& m) {
  std::unordered_set<const Computation*> out;
  for (const Computation* c : m.computations()) {
    for (const Instruction* i : c->instructions()) {
      for (const CalledComputation& call : i->calls()) {
        const bool code = i->opcode() == Opcode::kCall || i->opcode() == Opcode::kCustomCall ||
                          (call.role != CallRole::kToApply && call.role != CallRole::kSelect);
        if (!code) out.insert(call.computation);
      }
    }
  }
  return out;
}

bool Skip(const Step& step) {
  // A same-type convert or a copy shares its operand's buffer.
  return step.scalar_kind == ScalarKind::kShare;
}

void CollectPlan(const Module& m, const Program& program, ModuleKernels& out) {
  const std::unordered_set<const Computation*> skip = ScalarCallees(m);
  for (const Computation* c : m.computations()) {
    if (skip.count(c)) continue;
    const ComputationPlan* plan = program.Get(c);
    if (plan == nullptr) continue;
    for (const Step& step : plan->steps) {
      StatusOr<GeneratedKernel> k = Status(StatusCode::kInternal, "unset");
      if (const FusedPayload* fused = step.FindPayload<FusedPayload>()) {
        ++out.fused;
        k = GenerateFusedLoopKernel(*fused->loop);
      } else if (step.inst != nullptr && IsCodegenOp(*step.inst) && !Skip(step)) {
        ++out.ops;
        StatusOr<std::vector<GeneratedKernel>> ks = GenerateOpKernels(*step.inst, /*in_place=*/false);
        if (ks.ok()) {
          for (size_t j = 0; j + 1 < ks->size(); ++j) out.kernels.push_back(std::move((*ks)[j]));
          k = std::move(ks->back());
        } else {
          k = ks.status();
        }
      } else {
        continue;
      }
      if (k.ok()) {
        out.kernels.push_back(std::move(*k));
      } else {
        ++out.refused[k.status().message().substr(0, 80)];
      }
    }
  }
}

}  // namespace

void CollectKernels(const Executable& e, ModuleKernels& out) {
  CollectPlan(e.module(), e.program(), out);
  if (e.program().unfused) CollectPlan(e.module(), *e.program().unfused, out);
}

Status CompileAll(std::span<const GeneratedKernel> kernels, int batch, int* programs) {
  std::vector<GeneratedKernel> unique;
  std::set<std::string> seen;
  for (const GeneratedKernel& k : kernels) {
    if (seen.insert(k.source.name).second) unique.push_back(k);
  }
  for (size_t at = 0; at < unique.size(); at += batch) {
    const size_t end = std::min(unique.size(), at + batch);
    const KernelSource src = CombineKernels(std::span<const GeneratedKernel>(unique).subspan(at, end - at));
    if (programs != nullptr) ++*programs;
    StatusOr<std::shared_ptr<const std::string>> cubin = CompileToCubin(src, 9, 0);
    if (!cubin.ok()) return cubin.status();
  }
  return OkStatus();
}

namespace {

// Where RunWith keeps buffers and runs kernels.
class Device {
 public:
  virtual ~Device() = default;
  virtual StatusOr<void*> Alloc(int64_t bytes) = 0;
  virtual void Free(void* p) = 0;
  virtual Status Copy(void* dst, const void* src, int64_t bytes, bool to_device, bool from_device) = 0;
  virtual Status Launch(const GeneratedKernel& k, const std::vector<void*>& pointers) = 0;
};

struct DeviceBuffer {
  Device* device = nullptr;
  void* ptr = nullptr;
  Shape shape;
  ~DeviceBuffer() {
    if (ptr != nullptr) device->Free(ptr);
  }
};
using Buf = std::shared_ptr<DeviceBuffer>;

StatusOr<Buf> Alloc(Device& d, const Shape& shape) {
  auto b = std::make_shared<DeviceBuffer>();
  b->device = &d;
  b->shape = shape.WithoutLayout();
  XS_ASSIGN_OR_RETURN(b->ptr, d.Alloc(std::max<int64_t>(16, shape.byte_size())));
  return b;
}

StatusOr<Buf> Upload(Device& d, const Array& a) {
  XS_ASSIGN_OR_RETURN(Buf b, Alloc(d, a.shape()));
  XS_RETURN_IF_ERROR(d.Copy(b->ptr, a.data(), a.byte_size(), true, false));
  return b;
}

StatusOr<std::vector<Array>> RunWith(Device& d, const Executable& e, std::span<const Array> args,
                                     const std::function<bool(const GeneratedKernel&)>& runnable) {
  const ComputationPlan& plan = *e.program().entry;
  std::vector<Buf> slots(plan.num_slots);
  std::map<int, std::vector<Buf>> tuples;  // slot -> leaves of a tuple a kernel wrote
  std::vector<int> root_leaves;
  for (const Instruction* i : plan.computation->instructions()) {
    if (i->opcode() == Opcode::kParameter && !i->shape().IsArray()) return Unimplemented("tuple parameters");
  }
  for (size_t p = 0; p < plan.param_slots.size(); ++p) {
    if (plan.param_slots[p] < 0) continue;
    if (p >= args.size()) return Unimplemented("tuple parameters");
    XS_ASSIGN_OR_RETURN(slots[plan.param_slots[p]], Upload(d, args[p]));
  }
  auto launch = [&](const GeneratedKernel& k, const std::vector<void*>& ptrs) -> Status {
    if (!runnable(k)) return Unimplemented("kernel strategy ", k.strategy, " is not run here");
    return d.Launch(k, ptrs);
  };
  for (const Step& step : plan.steps) {
    const Instruction& inst = *step.inst;
    std::vector<void*> ptrs;
    for (int s : step.operands) ptrs.push_back(slots[s] ? slots[s]->ptr : nullptr);
    if (const FusedPayload* fused = step.FindPayload<FusedPayload>()) {
      const FusedLoop& f = *fused->loop;
      XS_ASSIGN_OR_RETURN(GeneratedKernel k, GenerateFusedLoopKernel(f));
      for (const FusedOutput& o : f.outputs) {
        XS_ASSIGN_OR_RETURN(slots[o.slot], Alloc(d, o.inst->shape()));
        ptrs.push_back(slots[o.slot]->ptr);
      }
      if (f.has_reduce) {
        XS_ASSIGN_OR_RETURN(slots[step.out], Alloc(d, f.reduce.inst->shape()));
        ptrs.push_back(slots[step.out]->ptr);
      }
      XS_RETURN_IF_ERROR(launch(k, ptrs));
    } else if (inst.opcode() == Opcode::kConstant && inst.shape().IsArray()) {
      XS_ASSIGN_OR_RETURN(slots[step.out], Upload(d, inst.literal()));
    } else if (inst.opcode() == Opcode::kTuple && &inst == plan.computation->root()) {
      for (const Instruction* o : inst.operands()) {
        if (!o->shape().IsArray()) return Unimplemented("a nested tuple root");
      }
      root_leaves = step.operands;
    } else if (inst.opcode() == Opcode::kReshape || inst.opcode() == Opcode::kBitcast || Skip(step)) {
      if (!inst.shape().IsArray() || step.operands.empty() || !slots[step.operands[0]]) return Unimplemented("alias");
      XS_ASSIGN_OR_RETURN(slots[step.out], Alloc(d, inst.shape()));
      XS_RETURN_IF_ERROR(d.Copy(slots[step.out]->ptr, slots[step.operands[0]]->ptr, inst.shape().byte_size(), true, true));
    } else if (inst.opcode() == Opcode::kGetTupleElement && tuples.count(step.operands[0])) {
      slots[step.out] = tuples[step.operands[0]].at(inst.tuple_index());
    } else if (IsCodegenOp(inst)) {
      XS_ASSIGN_OR_RETURN(std::vector<GeneratedKernel> ks, GenerateOpKernels(inst, /*in_place=*/false));
      if (inst.shape().IsTuple()) {  // a variadic reduce or sort, top-k
        std::vector<Buf>& leaves = tuples[step.out];
        for (const Shape& s : inst.shape().tuple_shapes()) {
          if (!s.IsArray()) return Unimplemented("a nested tuple result");
          XS_ASSIGN_OR_RETURN(Buf b, Alloc(d, s));
          ptrs.push_back(b->ptr);
          leaves.push_back(std::move(b));
        }
      } else {
        XS_ASSIGN_OR_RETURN(slots[step.out], Alloc(d, inst.shape()));
        ptrs.push_back(slots[step.out]->ptr);
      }
      for (const GeneratedKernel& k : ks) XS_RETURN_IF_ERROR(launch(k, ptrs));
    } else {
      return Unimplemented("the test harness does not run ", OpcodeName(inst.opcode()));
    }
  }
  std::vector<Array> out;
  if (root_leaves.empty() && tuples.count(plan.root_slot)) {
    for (const Buf& b : tuples[plan.root_slot]) {
      Array a = Array::Uninitialized(b->shape);
      XS_RETURN_IF_ERROR(d.Copy(a.data(), b->ptr, a.byte_size(), false, true));
      out.push_back(std::move(a));
    }
    return out;
  }
  if (root_leaves.empty() && !plan.computation->root()->shape().IsArray()) return Unimplemented("a tuple root");
  if (root_leaves.empty()) root_leaves = {plan.root_slot};
  for (int s : root_leaves) {
    if (s < 0 || !slots[s]) return Unimplemented("root not produced");
    Array a = Array::Uninitialized(slots[s]->shape);
    XS_RETURN_IF_ERROR(d.Copy(a.data(), slots[s]->ptr, a.byte_size(), false, true));
    out.push_back(std::move(a));
  }
  return out;
}

class Gpu : public Device {
 public:
  StatusOr<void*> Alloc(int64_t bytes) override {
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, bytes);
    if (e != cudaSuccess) return Internal("cudaMalloc: ", cudaGetErrorString(e));
    return p;
  }
  void Free(void* p) override { cudaFree(p); }
  Status Copy(void* dst, const void* src, int64_t bytes, bool to_device, bool from_device) override {
    const cudaMemcpyKind kind = to_device ? (from_device ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
                                          : cudaMemcpyDeviceToHost;
    const cudaError_t e = cudaMemcpy(dst, src, bytes, kind);
    if (e != cudaSuccess) return Internal("cudaMemcpy: ", cudaGetErrorString(e));
    return OkStatus();
  }
  Status Launch(const GeneratedKernel& k, const std::vector<void*>& pointers) override {
    XS_ASSIGN_OR_RETURN(cudaKernel_t kernel, LoadKernel(k.source, 0));
    KernelArgs args;
    args.pointers = pointers;
    XS_RETURN_IF_ERROR(LaunchKernel(kernel, dim3(static_cast<unsigned>(k.launch.grid)), dim3(k.launch.block),
                                    args.get(), k.launch.shared_bytes, nullptr));
    const cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) return Internal("kernel ", k.source.name, " failed: ", cudaGetErrorString(e));
    return OkStatus();
  }
};

class Host : public Device {
 public:
  explicit Host(HostKernels& kernels) : kernels_(kernels) {}
  StatusOr<void*> Alloc(int64_t bytes) override { return ::operator new[](bytes, std::align_val_t{64}); }
  void Free(void* p) override { ::operator delete[](p, std::align_val_t{64}); }
  Status Copy(void* dst, const void* src, int64_t bytes, bool, bool) override {
    std::memcpy(dst, src, bytes);
    return OkStatus();
  }
  Status Launch(const GeneratedKernel& k, const std::vector<void*>& pointers) override {
    return kernels_.Launch(k, pointers);
  }

 private:
  HostKernels& kernels_;
};


}  // namespace

bool HostRunnable(const GeneratedKernel&) { return true; }

namespace {

// Whether `k` needs its threads to run as fibers (it meets at barriers or exchanges values
// within warps); others run thread after thread.
bool Cooperative(const GeneratedKernel& k) {
  for (const char* what : {"__syncthreads", "__syncwarp", "__shfl", "xs_shfl"}) {
    if (k.body.find(what) != std::string::npos) return true;
  }
  return false;
}

// `extern __shared__ T name[];` (dynamic shared memory) as a pointer into the emulator's buffer.
std::string HostSpelling(const std::string& body) {
  static const std::regex dynamic_shared(
      R"(extern\s+__shared__\s+(?:__align__\(\d+\)\s+)?([A-Za-z_][\w\s]*?)\s+(?:__align__\(\d+\)\s+)?(\w+)\s*\[\s*\]\s*;)");
  return std::regex_replace(body, dynamic_shared, "$1* $2 = ($1*)xs_emu::dynamic_shared.data();");
}

// Blocks a host launch runs at most (kernels are grid-stride: fewer blocks give the same result).
constexpr long long kHostMaxBlocks = 8;

}  // namespace

HostKernels::~HostKernels() {
  if (handle_ != nullptr) dlclose(handle_);
}

StatusOr<std::unique_ptr<HostKernels>> HostKernels::Build(std::span<const GeneratedKernel> kernels) {
  std::set<std::string> seen;
  std::string code = std::string(HostShim()) + codegen::Prelude() + "template <int N> struct xs_args { void* p[N]; };\n";
  std::string wrappers;
  for (const GeneratedKernel& k : kernels) {
    if (!seen.insert(k.source.name).second) continue;
    code += HostSpelling(k.body);
    const std::string n = std::to_string(std::max(1, k.num_pointers));
    wrappers += "extern \"C\" const char* " + k.source.name +
                "_host(void** p, long long grid, int block, long long shared, int cooperative, long long max_blocks) {\n"
                "  xs_args<" + n + "> a; std::memcpy(a.p, p, " + n + " * sizeof(void*));\n"
                "  const std::function<void()> run = [&] { " + k.source.name + "(a); };\n"
                "  return xs_emu::Launch(run, grid, block, shared, cooperative != 0, max_blocks);\n}\n";
  }
  auto hk = std::unique_ptr<HostKernels>(new HostKernels);
  XS_ASSIGN_OR_RETURN(hk->handle_, CompileHostLibrary(code + wrappers));
  return hk;
}

StatusOr<void*> CompileHostLibrary(const std::string& code) {
  // A new path per build: the shim's inline variables keep a loaded library from unloading, and
  // dlopen of a path already loaded returns that library.
  static int builds = 0;
  const std::string dir = std::filesystem::temp_directory_path() /
                          ("xshard_host_kernels_" + std::to_string(getpid()) + "_" + std::to_string(builds++));
  std::filesystem::create_directories(dir);
  {
    std::ofstream out(dir + "/kernels.cc");
    out << code;
  }
  const std::string cmd = "c++ -std=c++17 -O0 -w -shared -fPIC -o " + dir + "/kernels.so " + dir + "/kernels.cc 2> " + dir + "/log.txt";
  if (std::system(cmd.c_str()) != 0) {
    std::ifstream log(dir + "/log.txt");
    std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    return Internal("the host compiler failed on the generated kernels (", dir, "/kernels.cc):\n", text.substr(0, 4000));
  }
  void* handle = dlopen((dir + "/kernels.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return Internal("dlopen: ", dlerror());
  std::filesystem::remove_all(dir);
  return handle;
}

Status HostKernels::Launch(const GeneratedKernel& k, const std::vector<void*>& pointers) {
  void* fn = dlsym(handle_, (k.source.name + "_host").c_str());
  if (fn == nullptr) return Unimplemented("kernel ", k.source.name, " was not built for the host");
  std::vector<void*> p = pointers;
  using Entry = const char* (*)(void**, long long, int, long long, int, long long);
  const char* error = reinterpret_cast<Entry>(fn)(p.data(), k.launch.grid, k.launch.block, k.launch.shared_bytes,
                                                  Cooperative(k) ? 1 : 0, kHostMaxBlocks);
  if (error != nullptr) return Internal("kernel ", k.source.name, " (", k.strategy, "): ", error);
  return OkStatus();
}

bool HostRunsEntry(const Executable& e, std::vector<GeneratedKernel>* kernels) {
  const ComputationPlan& plan = *e.program().entry;
  for (const Instruction* i : plan.computation->instructions()) {
    if (i->opcode() == Opcode::kParameter && !i->shape().IsArray()) return false;
  }
  for (const Step& step : plan.steps) {
    const Instruction& inst = *step.inst;
    StatusOr<GeneratedKernel> k = Status(StatusCode::kInternal, "none");
    if (const FusedPayload* fused = step.FindPayload<FusedPayload>()) {
      k = GenerateFusedLoopKernel(*fused->loop);
    } else if (inst.opcode() == Opcode::kConstant || inst.opcode() == Opcode::kTuple ||
               inst.opcode() == Opcode::kGetTupleElement || inst.opcode() == Opcode::kReshape ||
               inst.opcode() == Opcode::kBitcast || Skip(step)) {
      continue;
    } else if (IsCodegenOp(inst)) {
      StatusOr<std::vector<GeneratedKernel>> ks = GenerateOpKernels(inst, /*in_place=*/false);
      if (!ks.ok()) return false;
      for (GeneratedKernel& g : *ks) {
        if (!HostRunnable(g)) return false;
        kernels->push_back(std::move(g));
      }
      continue;
    } else {
      return false;
    }
    if (!k.ok() || !HostRunnable(*k)) return false;
    kernels->push_back(std::move(*k));
  }
  return true;
}

StatusOr<std::vector<Array>> RunOnGpu(const Executable& e, std::span<const Array> args) {
  if (cudaSetDevice(0) != cudaSuccess) return Unavailable("no GPU");
  Gpu gpu;
  return RunWith(gpu, e, args, [](const GeneratedKernel&) { return true; });
}

StatusOr<std::vector<Array>> RunOnHost(const Executable& e, std::span<const Array> args, HostKernels& kernels) {
  Host host(kernels);
  return RunWith(host, e, args, HostRunnable);
}

double RelativeTolerance(DType t) {
  switch (t) {
    case DType::kF32: return 1e-4;
    case DType::kF64: return 1e-12;
    case DType::kF16: return 2e-3;
    case DType::kBF16: return 1.6e-2;
    default: return 0;
  }
}

std::string Compare(const Array& got, const Array& want, double scale) {
  if (got.dtype() != want.dtype() || got.dims() != want.dims()) {
    return "shape " + got.shape().ToString() + " vs " + want.shape().ToString();
  }
  const DType t = want.dtype();
  if (t == DType::kC64 || t == DType::kC128) {
    // Both parts, each within the part type's tolerance of the CPU relative to the magnitude.
    const bool wide = t == DType::kC128;
    const double ctol = wide ? 1e-12 : 1e-4;
    for (int64_t i = 0; i < want.num_elements(); ++i) {
      double g[2], w[2];
      for (int part = 0; part < 2; ++part) {
        if (wide) {
          g[part] = reinterpret_cast<const double*>(got.data())[2 * i + part];
          w[part] = reinterpret_cast<const double*>(want.data())[2 * i + part];
        } else {
          g[part] = reinterpret_cast<const float*>(got.data())[2 * i + part];
          w[part] = reinterpret_cast<const float*>(want.data())[2 * i + part];
        }
      }
      const double magnitude = std::max(1.0, std::hypot(w[0], w[1]));
      for (int part = 0; part < 2; ++part) {
        if (g[part] == w[part] || (std::isnan(g[part]) && std::isnan(w[part]))) continue;
        if (std::fabs(g[part] - w[part]) <= scale * ctol * magnitude) continue;
        return "element " + std::to_string(i) + (part == 0 ? " (real): " : " (imaginary): ") + std::to_string(g[part]) +
               " vs CPU " + std::to_string(w[part]);
      }
    }
    return "";
  }
  const double rtol = RelativeTolerance(t);
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    const double g = got.GetDouble(i), w = want.GetDouble(i);
    if (std::isnan(w) && std::isnan(g)) continue;
    if (g == w) continue;
    if (rtol > 0 && std::fabs(g - w) <= scale * rtol * std::max(1.0, std::fabs(w))) continue;
    return "element " + std::to_string(i) + ": " + std::to_string(g) + " vs CPU " + std::to_string(w);
  }
  return "";
}

NoDiskCache::NoDiskCache() {
  const char* old = std::getenv("XSHARD_CACHE_DIR");
  had_ = old != nullptr;
  if (had_) old_ = old;
  setenv("XSHARD_CACHE_DIR", "off", 1);
}
NoDiskCache::~NoDiskCache() {
  if (had_) {
    setenv("XSHARD_CACHE_DIR", old_.c_str(), 1);
  } else {
    unsetenv("XSHARD_CACHE_DIR");
  }
}

double ReduceScale(const Module& m) {
  double scale = 1;
  for (const Computation* c : m.computations()) {
    for (const Instruction* i : c->instructions()) {
      if (i->opcode() != Opcode::kReduce || i->operand_count() == 0 || !i->operand(0)->shape().IsArray()) continue;
      const DType t = i->operand(0)->shape().dtype();
      if (t != DType::kF16 && t != DType::kBF16) continue;
      double n = 1;
      for (int64_t d : i->dimensions()) n *= static_cast<double>(i->operand(0)->shape().dim(static_cast<int>(d)));
      scale = std::max(scale, n);
    }
  }
  return scale;
}

}  // namespace xs::cuda::testing

#endif  // XSHARD_WITH_CUDA
