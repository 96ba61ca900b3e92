// Test helpers for the kernel generators: every kernel of a planned module (its fused loops and
// the op steps the generators cover, in the fused and the op-by-op plans), compiling them in
// batches with NVRTC, and, on a GPU, running a module's entry plan with the generated kernels.
// Test binaries only.
#ifndef XSHARD_CUDA_KERNEL_CODEGEN_TEST_UTIL_H_
#define XSHARD_CUDA_KERNEL_CODEGEN_TEST_UTIL_H_

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
StatusOr<std::vector<Array>> RunPlanOnHost(const GpuPlan& plan, std::span<const Array> args, HostKernels& kernels);

// Empty when `got` matches `want` (dtype, dims, values: integers exactly; floats within
// scale * rtol * max(1, |want|), rtol 1e-4 for f32, 1e-12 f64, 2e-3 f16, 1.6e-2 bf16; NaN
// matches NaN); else what differs first. Reductions of n f16 / bf16 elements pass scale = n:
// the CPU rounds its accumulator to 16 bits after every step, the GPU accumulates in f32.
std::string Compare(const Array& got, const Array& want, double scale = 1);

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

}  // namespace xs::cuda::testing

#endif  // XSHARD_CUDA_KERNEL_CODEGEN_TEST_UTIL_H_
