// The one device-count limit every layer applies: tile assignments, meshes and replica groups
// (parsed or built), partitionings (ShardedProgram), clients, the CLI's --devices and
// $XSHARD_DEVICES, and the Python module's devices=.
#ifndef XSHARD_BASE_LIMITS_H_
#define XSHARD_BASE_LIMITS_H_

#include <cstdint>

namespace xs {

// The most devices xshard runs, partitions for or accepts in a sharding. 8192 is the largest
// device count in XLA's own test modules (sharding_propagation_test's ShardAsWithShardBarrier
// shards over <=[8192]), which must still parse; a device list of that size stays small.
inline constexpr int64_t kMaxDevices = 8192;

}  // namespace xs

#endif  // XSHARD_BASE_LIMITS_H_
