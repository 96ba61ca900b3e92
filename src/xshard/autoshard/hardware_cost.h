// The target the search prices plans for, from a hardware profile (spmd/hardware_profile.h): the
// search's cost functions and the step evaluator of compiled candidates.
#ifndef XSHARD_AUTOSHARD_HARDWARE_COST_H_
#define XSHARD_AUTOSHARD_HARDWARE_COST_H_

#include <cstdint>
#include <string>

#include "xshard/autoshard/autoshard.h"
#include "xshard/autoshard/strategy.h"
#include "xshard/base/status.h"

namespace xs::autoshard {

struct HardwareCost {
  std::string name;  // the profile's name and where its figures come from
  CostFunctions cost;
  StepEvaluator evaluate;
};

// The profile at `path` (empty: this machine's calibrated profile, else built-in figures) for a
// mesh of `num_devices`. Errors: the profile's parse errors, naming the file and line.
StatusOr<HardwareCost> LoadHardwareCost(const std::string& path, int64_t num_devices);

}  // namespace xs::autoshard

#endif  // XSHARD_AUTOSHARD_HARDWARE_COST_H_
