// LoadHardwareCost: the partitioner's machine model as the search's prices (until profiles).
#include "xshard/autoshard/hardware_cost.h"

#include "xshard/spmd/cost_model.h"

namespace xs::autoshard {

StatusOr<HardwareCost> LoadHardwareCost(const std::string& path, int64_t num_devices) {
  if (!path.empty()) return Unimplemented("--hardware: profiles are not read yet");
  (void)num_devices;
  const spmd::MachineModel m;
  HardwareCost hw;
  hw.name = "built-in figures";
  hw.cost.dot = [m](DType, double flops) { return flops / (m.device_gflops * 1e9); };
  hw.cost.memory = [](double bytes) { return bytes / 5e9; };
  hw.cost.collective = [m](std::string_view, int64_t, double bytes) {
    return m.collective_latency_us * 1e-6 + bytes / (m.link_gbps * 1e9);
  };
  hw.evaluate = [](const Module&, const spmd::PartitionReport& report) { return report.EstimatedSeconds(); };
  return hw;
}

}  // namespace xs::autoshard
