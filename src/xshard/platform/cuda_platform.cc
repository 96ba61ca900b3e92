// The cuda platform: GPUs found through cuda/platform.h, devices placed on them by
// MapDevicesToGpus, and the kind and transport a Client uses for them (cuda_devices.h: programs
// run by cuda::GpuExecutable, collectives through the virtual-device or NCCL communicator).
#include <algorithm>

#include "xshard/cuda/platform.h"
#include "xshard/platform/cuda_devices.h"
#include "xshard/platform/gpu_mapping.h"
#include "xshard/platform/platform.h"

namespace xs {
namespace {

class CudaKind final : public DeviceKind {
 public:
  explicit CudaKind(std::shared_ptr<CudaDevices> devices) : devices_(std::move(devices)) {}

  std::string_view name() const override { return "cuda"; }
  std::string Describe(int64_t device) const override {
    return StrCat("cuda:", device, " (", devices_->slots()[device].ToString(), ")");
  }
  // A GPU's memory shared evenly by its virtual devices.
  int64_t DefaultMemoryLimit(int64_t device) const override {
    return devices_->GpuOf(device).memory_bytes / devices_->slots()[device].per_gpu;
  }
  StatusOr<std::unique_ptr<DeviceProgram>> Compile(const Executable& plan,
                                                   int64_t device) const override {
    return CompileCudaProgram(plan, device, devices_);
  }
  std::optional<double> TakeDeviceMicros() const override { return devices_->TakeDeviceMicros(); }

 private:
  std::shared_ptr<CudaDevices> devices_;
};

// Collectives between virtual devices of one GPU (kernels reading the peers' buffers) and between
// GPUs (NCCL). The client destroys its communicators before its options (which hold this factory
// and so the devices' streams the communicators enqueue on).
class CudaTransport final : public CommunicatorFactory {
 public:
  explicit CudaTransport(std::shared_ptr<CudaDevices> devices) : devices_(std::move(devices)) {}
  std::string_view name() const override { return "cuda"; }
  StatusOr<std::unique_ptr<Communicator>> Create(const CommunicatorSpec& spec) override {
    return CreateCudaCommunicator(spec, *devices_);
  }
  // The GPU communicators fail every call after an abort themselves.
  Status AbortReason(const Communicator&) const override { return OkStatus(); }

 private:
  std::shared_ptr<CudaDevices> devices_;
};

}  // namespace

Status ConfigureCudaClient(bool distributed, ClientOptions& options) {
  XS_ASSIGN_OR_RETURN(const int gpus, cuda::DeviceCount());
  std::vector<GpuSlot> slots;
  if (distributed) {
    XS_ASSIGN_OR_RETURN(slots, DistributedCudaSlots(options, gpus));
  } else {
    if (options.num_devices == 0) {
      XS_ASSIGN_OR_RETURN(options.num_devices, DefaultDeviceCount());
    }
    XS_ASSIGN_OR_RETURN(slots, MapDevicesToGpus(options.num_devices, gpus));
  }
  std::vector<cuda::DeviceInfo> infos;
  for (int g = 0; g < gpus; ++g) {
    XS_ASSIGN_OR_RETURN(cuda::DeviceInfo info, cuda::GetDeviceInfo(g));
    infos.push_back(std::move(info));
  }
  auto devices = std::make_shared<CudaDevices>(std::move(slots), std::move(infos));
  options.communicators = distributed ? DistributedCudaTransport(devices)
                                      : std::make_shared<CudaTransport>(devices);
  options.device_kind = std::make_shared<const CudaKind>(std::move(devices));
  return OkStatus();
}

}  // namespace xs
