// The loaded state of a GpuExecutable (gpu_executable_load.cc) that its run
// (gpu_executable_run.cc) walks. Internal to the cuda layer.
#ifndef XSHARD_CUDA_GPU_EXECUTABLE_INTERNAL_H_
#define XSHARD_CUDA_GPU_EXECUTABLE_INTERNAL_H_

#include <deque>
#include <unordered_map>
#include <unordered_set>

#include "xshard/cuda/conv.h"
#include "xshard/cuda/device_memory.h"
#include "xshard/cuda/gemm.h"
#include "xshard/cuda/gpu_executable.h"
#include "xshard/cuda/gpu_executable_plan.h"
#include "xshard/cuda/stream.h"

namespace xs::cuda {

struct GpuExecutable::State {
  std::unique_ptr<GpuPlan> plan;
  const GpuPlanData* data = nullptr;
  GpuLoadOptions options;
  Stream owned_stream;  // when options.stream was null
  cudaStream_t stream = nullptr;
  DeviceBuffer arena, arguments, constants, workspace;
  std::vector<int64_t> argument_offsets;  // per argument leaf, in `arguments`
  PinnedHostBuffer host_scalar;           // while predicates and branch indices
  std::unordered_map<const PlannedKernel*, cudaKernel_t> kernels;
  std::unordered_map<const Action*, GemmPlan> gemms;
  std::unordered_map<const Action*, ConvPlan> convs;
  GpuMemoryReport memory;
  int64_t partition_id = 0, replica_id = 0;  // what the constant region holds now
  std::string graph_blocker;
  Event start, end;  // around every run (GpuRunStats::device_us)
  // The captured graph and the argument addresses it was captured with.
  cudaGraphExec_t graph_exec = nullptr;
  std::vector<std::byte*> graph_args;
  int64_t runs = 0;  // the first run goes without capture (it warms caches and checks errors)
  // Trace: timing events of each traced action, reused across runs.
  std::deque<Event> trace_events;
};

}  // namespace xs::cuda

#endif  // XSHARD_CUDA_GPU_EXECUTABLE_INTERNAL_H_
