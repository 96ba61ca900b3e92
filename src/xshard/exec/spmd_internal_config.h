// The backend_config of XLA's `_SPMDInternalOp_*` custom-calls, "key=value,..." with integer or
// [a,b,...] list values, parsed once for the CPU executor (executable_spmd_internal.cc) and the
// CUDA kernel generator.
#ifndef XSHARD_EXEC_SPMD_INTERNAL_CONFIG_H_
#define XSHARD_EXEC_SPMD_INTERNAL_CONFIG_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/ir/instruction.h"

namespace xs {

// One backend_config value: an integer (list false, one value) or a list of them.
struct SpmdInternalConfigValue {
  std::vector<int64_t> values;
  bool list = false;
};
using SpmdInternalConfig = std::map<std::string, SpmdInternalConfigValue, std::less<>>;

// Parses `inst`'s backend_config, e.g. "dimension=0,amount=3,start_indices=[6],strides=[1]"
// (surrounding quotes allowed; an empty config is an empty map). InvalidArgument naming the
// custom-call, its target and the malformed part otherwise.
StatusOr<SpmdInternalConfig> ParseSpmdInternalConfig(const Instruction& inst);

}  // namespace xs

#endif  // XSHARD_EXEC_SPMD_INTERNAL_CONFIG_H_
