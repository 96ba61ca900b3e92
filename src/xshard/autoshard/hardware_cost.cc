// LoadHardwareCost: a hardware profile's rates as the search's prices, and PredictStep as the
// evaluator of compiled plans (the same figures `bench run --predict` prints).
#include "xshard/autoshard/hardware_cost.h"

#include <memory>

#include "xshard/spmd/hardware_profile.h"
#include "xshard/spmd/step_prediction.h"

namespace xs::autoshard {

StatusOr<HardwareCost> LoadHardwareCost(const std::string& path, int64_t num_devices) {
  auto hw = std::make_shared<spmd::HardwareProfile>();
  if (path.empty()) {
    *hw = spmd::ThisMachineProfile();
  } else {
    XS_ASSIGN_OR_RETURN(*hw, spmd::LoadHardwareProfile(path));
  }
  HardwareCost out;
  out.name = hw->name + " (" + hw->source + ")";
  const int64_t n = num_devices;
  out.cost.dot = [hw, n](DType type, double flops) { return hw->DotSeconds(type, flops, n); };
  out.cost.conv = [hw, n](DType type, double flops) { return hw->ConvSeconds(type, flops, n); };
  out.cost.memory = [hw, n](double bytes) { return hw->MemorySeconds(bytes, n); };
  out.cost.collective = [hw, n](std::string_view kind, int64_t group, double bytes) {
    return hw->CollectiveSeconds(kind, group, bytes, n);
  };
  out.evaluate = [hw, n](const Module& spmd, const spmd::PartitionReport&) {
    return spmd::PredictStep(spmd, *hw, n).total_s;
  };
  return out;
}

}  // namespace xs::autoshard
