// Lowering: a Jaxpr becomes a global HLO Module (JAX's jit(...).lower(...)): module
// `jit_<name>`, entry `main`, one parameter `Arg_<i>` per input with its sharding, the root with
// the output shardings, scalar literals as `constant` + `broadcast`, sharding_constraint as the
// custom-call Sharding JAX emits, pjit and custom_vjp_call inlined, unused values removed. The
// text is readable by `xshard run` and by XLA.
#ifndef XSHARD_FRONTEND_LOWER_H_
#define XSHARD_FRONTEND_LOWER_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/frontend/jaxpr.h"
#include "xshard/ir/module.h"
#include "xshard/sharding/hlo_sharding.h"

namespace xs::fe {

struct LowerOptions {
  std::string name = "fn";  // the module is called jit_<name>
  // One entry per jaxpr input / output (empty vector: none); nullopt leaves the value to
  // propagation, except in a tuple root (several outputs) where some output has a sharding:
  // there the open ones are {replicated}.
  std::vector<std::optional<HloSharding>> in_shardings;
  std::vector<std::optional<HloSharding>> out_shardings;
  // The module's num_partitions (the device count the shardings refer to).
  int64_t num_partitions = 1;
};

// Lowers `jaxpr`. Errors: a primitive without a lowering rule (named), shardings given for a
// different number of inputs / outputs, and builder errors (naming the op).
StatusOr<std::unique_ptr<Module>> LowerJaxpr(const Jaxpr& jaxpr, const LowerOptions& options);

// pmap's program: `jaxpr` (one device's function of its input slices) in a manual region over
// `num_devices` devices. A mapped input (mapped[i]) enters stacked [n, ...] and tiled along dim
// 0, an unmapped one replicated; both go through custom-calls Sharding + SPMDFullToShardShape
// (as JAX lowers shard_map), the mapped ones lose their leading 1; each output leaves through
// SPMDShardToFullShape stacked along a new dim 0 (several outputs: a tuple root).
StatusOr<std::unique_ptr<Module>> LowerPmap(const Jaxpr& jaxpr, int64_t num_devices,
                                            const std::vector<bool>& mapped,
                                            const std::string& name);

}  // namespace xs::fe

#endif  // XSHARD_FRONTEND_LOWER_H_
