// Test harness (tests only): runs a partitioned module on N devices with the SPMD executor and
// compares every device's output with the single-device result of the global module, sliced by
// the output sharding's geometry. Implemented in run_partitioned_test.cc, the one test file that
// includes the runtime.
#ifndef XSHARD_SPMD_RUN_PARTITIONED_H_
#define XSHARD_SPMD_RUN_PARTITIONED_H_

#include <cstdint>
#include <string>
#include <vector>

#include "xshard/core/array.h"
#include "xshard/spmd/partitioner.h"

namespace xs::spmd::testing {

// Each device's padded input (zeros in the padding; maximal: the array on its device, zeros
// elsewhere) for one global argument.
StatusOr<std::vector<Array>> PaddedShards(const Array& global, const HloSharding& sharding,
                                          int64_t num_partitions);

// Runs the partitioned module on its partition count; outputs[device][leaf].
StatusOr<std::vector<std::vector<Array>>> RunPartitioned(const PartitionResult& partitioned,
                                                         const std::vector<Array>& global_args);

// Runs `global` on one device and `partitioned` on N, and checks each device's output leaves:
// real elements within `tolerance` (absolute + relative) of the global result's, padding zero.
// The error names the device, leaf, index and both values.
Status CompareWithGlobal(const Module& global, const PartitionResult& partitioned,
                         const std::vector<Array>& global_args, double tolerance = 1e-5);

// Deterministic pseudo-random test inputs for every entry parameter leaf of `module` (small
// integers stored in the element type, so sums are exact in every order).
std::vector<Array> TestInputs(const Module& module, uint64_t seed);

// The handler tests' harness: parses `body` under "HloModule m, num_partitions=n", partitions it
// and runs CompareWithGlobal on TestInputs(seed) for each seed. Failures are gtest failures (the
// message names the seed and prints the SPMD module); an empty result when it did not partition.
PartitionResult PartitionAndCompare(const std::string& body, int64_t n,
                                    const std::vector<uint64_t>& seeds = {1, 2});
// The kinds of the report's collectives, in order.
std::vector<std::string> CollectiveKinds(const PartitionResult& r);

}  // namespace xs::spmd::testing

#endif  // XSHARD_SPMD_RUN_PARTITIONED_H_
