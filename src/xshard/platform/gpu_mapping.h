// Where each device of a `--platform cuda` client lives: one device per GPU while there are GPUs
// enough, else the same number of virtual devices on every GPU (each with its own streams and
// memory). A pure function of the two counts, so it is tested without a GPU.
#ifndef XSHARD_PLATFORM_GPU_MAPPING_H_
#define XSHARD_PLATFORM_GPU_MAPPING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "xshard/base/status.h"

namespace xs {

// Device d's place: virtual device `index` (0-based) of the `per_gpu` devices on GPU `gpu`.
struct GpuSlot {
  int64_t gpu = 0;
  int64_t index = 0;
  int64_t per_gpu = 1;
  bool operator==(const GpuSlot&) const = default;
  // "GPU 1" when alone on it, "GPU 0, virtual 3 of 4" otherwise.
  std::string ToString() const;
};

// The slots of `devices` devices on `gpus` GPUs. devices <= gpus: device d on GPU d (GPUs past
// `devices` stay unused). devices > gpus: devices / gpus on each GPU, consecutive devices sharing
// one (device d on GPU d / per_gpu), so a mesh's innermost axis stays on one GPU where it fits; an
// error naming both counts and the fix when gpus does not divide devices. Both counts must be >= 1.
//   MapDevicesToGpus(8, 2) -> GPU 0: devices 0..3, GPU 1: devices 4..7 (per_gpu 4)
StatusOr<std::vector<GpuSlot>> MapDevicesToGpus(int64_t devices, int64_t gpus);

}  // namespace xs

#endif  // XSHARD_PLATFORM_GPU_MAPPING_H_
