// Test helpers for the kernel generators: every kernel of a planned module (its fused loops and
// the op steps the generators cover, in the fused and the op-by-op plans), compiling them in
// batches with NVRTC, and, on a GPU, running a module's entry plan with the generated kernels;
// planning modules for the GPU and checking their plans on the host emulator against the CPU.
// Test binaries only.
#ifndef XSHARD_CUDA_KERNEL_CODEGEN_TEST_UTIL_H_
#define XSHARD_CUDA_KERNEL_CODEGEN_TEST_UTIL_H_

#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "xshard/core/array.h"
#include "xshard/cuda/gpu_executable.h"
#include "xshard/cuda/kernel_codegen.h"
#include "xshard/exec/executable.h"

namespace xs::cuda::testing {

// Ops whose steps the generators are expected to cover (the GPU executor's other steps are
// library calls, aliases or control flow).
bool IsCodegenOp(const Instruction& inst);

struct ModuleKernels {
  std::vector<GeneratedKernel> kernels;
  int fused = 0;                       // fused-loop steps seen
  int ops = 0;                         // codegen-op steps seen
  std::map<std::string, int> refused;  // generator error (first 80 chars) -> count
};

// Generates the kernel of every fused-loop step and codegen-op step of `e`'s plans (reducer and
// comparator computations excluded: their steps run inside other kernels).
void CollectKernels(const Executable& e, ModuleKernels& out);

// Compiles `kernels` for sm_90 in NVRTC programs of at most `batch` distinct kernels; the first
// error, naming the program's first kernel, or OK. `programs` counts the NVRTC calls.
Status CompileAll(std::span<const GeneratedKernel> kernels, int batch, int* programs = nullptr);

// Runs `e`'s entry plan on GPU 0 with generated kernels (parameters, constants, fused loops,
// codegen ops, aliases, a tuple root); Unimplemented for a plan with any other step.
StatusOr<std::vector<Array>> RunOnGpu(const Executable& e, std::span<const Array> args);

// The generated kernels compiled for the host with the C++ compiler and run by a SIMT emulator
// (HostShim: the launch's block size, up to 8 of its blocks, each thread a fiber meeting its
// block at __syncthreads and its warp at shuffles): checks the scalar op table, the index
// arithmetic and the threads' cooperation (shared memory, barriers, warp reductions) against
// the CPU executor without a GPU. A deadlock or a shuffle reading a lane that has returned fails
// the launch, naming the block and thread. What it cannot see: data races between threads
// (fibers switch only at barriers), memory-model and timing effects, out-of-bounds accesses
// that land in mapped memory. HostRunnable: every kernel (kept for callers that filter).
bool HostRunnable(const GeneratedKernel& k);
// The emulator's source (kernel_host_shim_test.cc).
const char* HostShim();
// Compiles `code` (which starts with HostShim()) into a shared library with the host's C++
// compiler and loads it; the dlopen handle, which the caller owns (dlclose).
StatusOr<void*> CompileHostLibrary(const std::string& code);
class HostKernels {
 public:
  static StatusOr<std::unique_ptr<HostKernels>> Build(std::span<const GeneratedKernel> kernels);
  ~HostKernels();
  Status Launch(const GeneratedKernel& k, const std::vector<void*>& pointers);

 private:
  HostKernels() = default;
  void* handle_ = nullptr;
};
// True when RunOnHost can run `e`'s entry plan; then `kernels` holds the kernels it launches.
bool HostRunsEntry(const Executable& e, std::vector<GeneratedKernel>* kernels);
// RunOnGpu's walk with HostKernels; Unimplemented when a kernel is not HostRunnable.
StatusOr<std::vector<Array>> RunOnHost(const Executable& e, std::span<const Array> args, HostKernels& kernels);

// Every generated kernel of `plan` (its entry and the computations it runs as frames).
std::vector<GeneratedKernel> PlanKernels(const GpuPlan& plan);
// Runs `plan` (GpuPlan::Supported) as the GPU executor's action walk does, in host memory: its
// generated kernels on HostKernels' emulator (built from PlanKernels), GEMMs and convolutions as
// plain loops over what GemmLayout / ConvLayout tell cuBLASLt and cuDNN, copies, zero fills,
// calls, while loops (at most 100 iterations) and conditionals; collectives of one participant.
// Checks the plan itself without a GPU: arena offsets, aliases, in-place results, temporaries,
// the kernels' arguments and the library layouts. Unimplemented for what it does not run.
// `constants`, when given, is the executable's constant region kept by the caller across runs as
// a loaded GpuExecutable keeps it (rng-get-and-update-state's states live there): filled from the
// plan when empty; null: a fresh copy for this run.
StatusOr<std::vector<Array>> RunPlanOnHost(const GpuPlan& plan, std::span<const Array> args, HostKernels& kernels,
                                           std::vector<std::byte>* constants = nullptr);

// Empty when `got` matches `want` (dtype, dims, values: integers exactly; floats within
// scale * rtol * max(1, |want|), rtol 1e-4 for f32, 1e-12 f64, 2e-3 f16, 1.6e-2 bf16; NaN
// matches NaN); else what differs first. Reductions of n f16 / bf16 elements pass scale = n:
// the CPU rounds its accumulator to 16 bits after every step, the GPU accumulates in f32.
std::string Compare(const Array& got, const Array& want, double scale = 1);
// Compare's relative tolerance for a real type (times max(1, |CPU value|) and the scale); 0 for
// the types compared exactly.
double RelativeTolerance(DType t);

// The scale Compare needs for the results of `m`'s entry root: the largest count of elements
// a f16 / bf16 reduce of the module combines into one, else 1.
double ReduceScale(const Module& m);

// XSHARD_CACHE_DIR=off for the object's life: every compile really goes through NVRTC.
class NoDiskCache {
 public:
  NoDiskCache();
  ~NoDiskCache();

 private:
  bool had_ = false;
  std::string old_;
};

// A module planned for the CPU executor and the GPU executor (kernel_codegen_test_util_test.cc).
struct PlannedModule {
  std::string name;  // what messages call it: a case's description or a file's path
  std::unique_ptr<Module> module;
  std::unique_ptr<Executable> exe;
  std::unique_ptr<GpuPlan> plan;  // null from PlanForHost
};

// Parses `text` (with `name` as its source name), verifies it, plans it for the CPU
// (Executable::Create) and the GPU (GpuPlan::Create) and requires a complete GPU plan
// (Supported()); else the failing step's error, its message starting with `name` and the step
// (a parse error also quotes up to 2000 characters of the text).
StatusOr<PlannedModule> PlanForGpu(const std::string& name, const std::string& text);
// PlanForGpu without the GPU plan (`plan` stays null): for tests of one op's own kernels, which
// CheckPlansAgainstTheCpu then runs with RunOnHost only.
StatusOr<PlannedModule> PlanForHost(const std::string& name, const std::string& text);
// PlanForGpu of the file at `path`, named `path`; NotFound naming it when it is empty or
// cannot be read.
StatusOr<PlannedModule> PlanFileForGpu(const std::string& path);
// PlanFileForGpu of each of `files` (dir + "/" + file; the file alone when `dir` is empty), in
// order; the first error.
StatusOr<std::vector<PlannedModule>> PlanFilesForGpu(const std::string& dir, std::span<const std::string> files);

// The kernels GenerateOpKernels gives `p`'s entry root (not in place) when they are exactly one,
// of `strategy` (any when empty): that kernel; else an error naming p.name and what differs.
StatusOr<GeneratedKernel> OneRootKernel(const PlannedModule& p, const std::string& strategy = "");

// PlanForGpu of `text` appended to `out`; with a `root_strategy`, also the root's own kernel
// (OneRootKernel of that strategy) appended to `root_kernels`. The first error.
Status PlanWithRootKernel(const std::string& name, const std::string& text, const std::string& root_strategy,
                          std::vector<PlannedModule>& out, std::vector<GeneratedKernel>& root_kernels);

// Parses `text` (PlanForHost), builds its entry root's kernels (GenerateOpKernels, not in place)
// for the host emulator and runs the entry with RunOnHost on the arguments `args(exe)` gives:
// the results, or the first error, naming the step. For small cases checked against values
// worked out by hand.
StatusOr<std::vector<Array>> RunRootOnHost(const std::string& text,
                                           const std::function<std::vector<Array>(const Executable&)>& args);

// Whether CompileAndBuildForHost also compiles the kernels with NVRTC for sm_90.
enum class Nvrtc { kCompile, kSkip };
// Every kernel of `plans` (PlanKernels; none for a null plan), then `extra` (a test's own
// kernels, e.g. one op's GenerateOpKernels), compiled for sm_90 in NVRTC programs of at most 64
// kernels under NoDiskCache (unless kSkip), then built for the host emulator
// (HostKernels::Build). The first error (an NVRTC error cut to 4000 characters), naming the
// step, or the host kernels.
StatusOr<std::unique_ptr<HostKernels>> CompileAndBuildForHost(std::span<const PlannedModule> plans,
                                                              std::span<const GeneratedKernel> extra = {},
                                                              Nvrtc nvrtc = Nvrtc::kCompile);

// How CheckPlansAgainstTheCpu compares a result of plans[index] with the CPU's: "" when they
// match, else what differs. The default is Compare(got, want).
using ResultCheck = std::function<std::string(size_t index, const Array& got, const Array& want)>;
// Compare(got, want), and identical bytes (memcmp) when the byte sizes agree: "" when both hold.
std::string CompareAndBits(const Array& got, const Array& want);

struct CheckOptions {
  bool op_alone = false;  // also run each entry op by op with RunOnHost, checked the same way
  ResultCheck check;      // empty: Compare
};
// For each plan in order: `args(plan, index)` (called exactly once per plan, in order, so a
// test's random generator advances as before), the CPU executor's results, then RunOnHost (when
// op_alone or the plan is null) and RunPlanOnHost (when it is not) with `host`, each result
// checked against the CPU's. Every difference or error, each naming the module, the run and the
// result; empty when all match.
std::vector<std::string> CheckPlansAgainstTheCpu(
    std::span<const PlannedModule> plans, HostKernels& host,
    const std::function<std::vector<Array>(const PlannedModule& plan, size_t index)>& args,
    const CheckOptions& options = {});

}  // namespace xs::cuda::testing

#endif  // XSHARD_CUDA_KERNEL_CODEGEN_TEST_UTIL_H_
