// Internal to platform/: the GPUs of one `--platform cuda` client (where each device lives, and
// each device's compute stream, shared by its programs and its communicators), and the two entry
// points that need the CUDA toolkit: a device's program (cuda::GpuExecutable) and a communicator
// between devices (virtual devices of one GPU, or NCCL). No CUDA header here: cuda_platform.cc
// compiles the same with or without the toolkit; without it the entry points say so.
#ifndef XSHARD_PLATFORM_CUDA_DEVICES_H_
#define XSHARD_PLATFORM_CUDA_DEVICES_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/cuda/platform.h"
#include "xshard/platform/gpu_mapping.h"
#include "xshard/runtime/client.h"
#include "xshard/runtime/communicator_factory.h"
#include "xshard/runtime/device_kind.h"

namespace xs {

class CudaDevices {
 public:
  // `slots[d]`: where client device d lives; `gpus[g]`: GPU g's properties.
  CudaDevices(std::vector<GpuSlot> slots, std::vector<cuda::DeviceInfo> gpus);
  ~CudaDevices();  // destroys the streams (after every program and communicator using them)
  const std::vector<GpuSlot>& slots() const { return slots_; }
  const std::vector<cuda::DeviceInfo>& gpus() const { return gpus_; }
  const cuda::DeviceInfo& GpuOf(int64_t device) const { return gpus_[slots_[device].gpu]; }
  // Device `device`'s compute stream (a cudaStream_t), created on its GPU at the first call:
  // every program of the device and every communicator rank of it enqueue on it, in order.
  StatusOr<void*> Stream(int64_t device);
  // Device time of device `device`'s program runs (GpuRunStats::device_us), summed; Take returns
  // the largest sum over the devices and starts again from zero (DeviceKind::TakeDeviceMicros).
  void AddDeviceMicros(int64_t device, double us);
  double TakeDeviceMicros();

 private:
  std::vector<GpuSlot> slots_;
  std::vector<cuda::DeviceInfo> gpus_;
  std::mutex mu_;
  std::vector<void*> streams_;  // null until created
  std::vector<double> device_us_;
};

// Device `device`'s program: `plan` planned for its GPU (GpuPlan) and loaded there
// (GpuExecutable) on the device's stream; its collectives go to the run's communicator through
// the module's SpmdCollectivePlan. `devices` is kept alive by the program. Errors: a step the GPU
// cannot run (naming it), out of memory, no CUDA in this build.
StatusOr<std::unique_ptr<DeviceProgram>> CompileCudaProgram(
    const Executable& plan, int64_t device, std::shared_ptr<CudaDevices> devices);

// A communicator over spec.device_ids: VirtualGpuCommunicator when they all share one GPU,
// NcclCommunicator when each has its own GPU; Unimplemented naming the mapping when mixed.
StatusOr<std::unique_ptr<Communicator>> CreateCudaCommunicator(const CommunicatorSpec& spec,
                                                               CudaDevices& devices);

// `comm` behind a check that every call's buffers are GPU memory: a host buffer (collectives of
// shard_map or cmm bodies, bench collectives) fails the call in one line asking for --platform
// cpu. Without CUDA, `comm` itself.
std::unique_ptr<Communicator> RefuseHostBuffers(std::unique_ptr<Communicator> comm);

// Under mpirun (cuda_distributed.cc): starts MPI and places the job's devices, L per process
// (ClientOptions::devices_per_process, else as Client::Create derives it), device d on this
// process's GPU d % L; sets options.num_devices when it was 0. NCCL runs one rank per GPU, so
// L above the visible GPUs is Unimplemented (naming both counts); so is a build without MPI.
StatusOr<std::vector<GpuSlot>> DistributedCudaSlots(ClientOptions& options, int gpus);

// The transport of an mpirun job on GPUs: MPI for start-up, the processes' agreement and their
// results; one NcclCommunicator per run's device list, its id broadcast over MPI from the process
// of the list's first device. Lists that leave a process without devices, or give a process
// devices that are not consecutive ranks, are Unimplemented, naming the list.
std::shared_ptr<CommunicatorFactory> DistributedCudaTransport(std::shared_ptr<CudaDevices> devices);

}  // namespace xs

#endif  // XSHARD_PLATFORM_CUDA_DEVICES_H_
