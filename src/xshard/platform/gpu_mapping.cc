// MapDevicesToGpus: devices onto GPUs, one each or the same number of virtual devices on each.
#include "xshard/platform/gpu_mapping.h"

namespace xs {

std::string GpuSlot::ToString() const {
  if (per_gpu == 1) return StrCat("GPU ", gpu);
  return StrCat("GPU ", gpu, ", virtual ", index, " of ", per_gpu);
}

StatusOr<std::vector<GpuSlot>> MapDevicesToGpus(int64_t devices, int64_t gpus) {
  if (devices < 1) return InvalidArgument("--devices must be at least 1, got ", devices);
  if (gpus < 1) return InvalidArgument("no GPU to place ", devices, " device(s) on");
  std::vector<GpuSlot> slots(devices);
  if (devices <= gpus) {
    for (int64_t d = 0; d < devices; ++d) slots[d] = GpuSlot{d, 0, 1};
    return slots;
  }
  if (devices % gpus != 0) {
    const int64_t up = (devices / gpus + 1) * gpus;
    return InvalidArgument("--devices ", devices, " does not split evenly over the ", gpus,
                           " GPUs: with more devices than GPUs every GPU hosts the same number "
                           "of virtual devices; pass at most ", gpus, " (one device per GPU) or "
                           "a multiple of ", gpus, " (e.g. ", up, "), or make a divisor of ",
                           devices, " GPUs visible with CUDA_VISIBLE_DEVICES");
  }
  const int64_t per_gpu = devices / gpus;
  for (int64_t d = 0; d < devices; ++d) slots[d] = GpuSlot{d / per_gpu, d % per_gpu, per_gpu};
  return slots;
}

}  // namespace xs
