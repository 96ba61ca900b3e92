// Test harness (tests only): runs a partitioned module on N devices with the SPMD executor and
// compares every device's output with the single-device result of the global module, sliced by
// the output sharding's geometry. Implemented in run_partitioned_test.cc, the one test file that
// includes the runtime.
#ifndef XSHARD_SPMD_RUN_PARTITIONED_H_
#define XSHARD_SPMD_RUN_PARTITIONED_H_

#include <cstdint>
#include <optional>
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

// What PartitionAndCompare parses, partitions with and compares on. Every member has a default,
// so a call names only what it changes:
//   PartitionAndCompare(text, 8, CompareOptions{.seeds = {7}, .tolerance = 1e-4});
// (write `CompareOptions{...}`: GCC 12 finds a bare designated list ambiguous with the seeds form.)
struct CompareOptions {
  // The seeds of TestInputs, compared one after another.
  std::vector<uint64_t> seeds = {1, 2};
  // When set, the one set of global arguments (one per entry parameter leaf) compared instead of
  // TestInputs(seed) for each seed.
  std::optional<std::vector<Array>> inputs = std::nullopt;
  // CompareWithGlobal's tolerance (absolute + relative); 0 asks for equal values.
  double tolerance = 1e-5;
  // Passed to Partition() (windowed-einsum threshold, machine model, ...).
  PartitionOptions partition = {};
  // False: parse and partition only, nothing runs (a module too large for the reference run, or a
  // test of the plan alone).
  bool compare = true;
  // Labels parse errors and failure messages, e.g. the file the text was read from.
  std::string name = "test.hlo";
};

// The partition-and-compare harness of the spmd tests. `text` is either a whole module (it starts,
// after whitespace, with its own `HloModule` header and is parsed as it stands) or a body (an
// ENTRY computation plus helper computations), parsed under "HloModule m, num_partitions=n".
// Partitions it for `n` partitions with options.partition and, when options.compare, runs
// CompareWithGlobal with options.tolerance on options.inputs, or else on TestInputs(seed) for each
// of options.seeds. Returns the partition result for further checks.
// Never crashes on bad input: an unparsable text or a failed Partition() is a gtest failure (the
// message names options.name and the status) and returns an empty PartitionResult (module ==
// nullptr); each comparison that fails is a gtest failure naming the seed (or "the given
// inputs") and printing the SPMD module; compare on with no seeds and no inputs is a failure too.
PartitionResult PartitionAndCompare(const std::string& text, int64_t n, const CompareOptions& options);
// The same for an already parsed `global` module (options.name only labels messages).
PartitionResult PartitionAndCompare(const Module& global, int64_t n, const CompareOptions& options);
// The short form of the handler tests: the options' defaults with these seeds.
PartitionResult PartitionAndCompare(const std::string& text, int64_t n,
                                    const std::vector<uint64_t>& seeds = {1, 2});

// The kinds of the report's collectives, in order.
std::vector<std::string> CollectiveKinds(const PartitionResult& r);

}  // namespace xs::spmd::testing

#endif  // XSHARD_SPMD_RUN_PARTITIONED_H_
