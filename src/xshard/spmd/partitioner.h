// The SPMD partitioner (GSPMD): a global module whose instructions carry shardings becomes ONE
// module that every partition runs, keyed by partition-id, talking through collectives. Example
// on 8 partitions (seed 000's "inner axes" case):
//   x = f16[4,16] parameter(0), sharding={devices=[1,4,2]<=[8] last_tile_dim_replicate}
//   y = f16[16,4] parameter(1), sharding={devices=[4,1,2]<=[8] last_tile_dim_replicate}
//   ROOT z = f16[4,4] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
// becomes
//   x = f16[4,4] parameter(0) ...   y = f16[4,4] parameter(1) ...
//   z = f16[4,4] dot(x, y), ...
//   ROOT all-reduce = f16[4,4] all-reduce(z), replica_groups=[2,4]<=[4,2]T(1,0), to_apply=...
// Entry parameters take each partition's padded shard (ceil(d/n) per split dim; the tail of a
// short shard is padding) and the outputs are each partition's padded shard of the root's
// sharding, padding zeroed. The program does not grow with the partition count: per-partition
// offsets are computed from partition-id with divide / remainder / multiply (constant tables
// indexed by partition-id remain only for device lists with no iota form).
#ifndef XSHARD_SPMD_PARTITIONER_H_
#define XSHARD_SPMD_PARTITIONER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/ir/module.h"
#include "xshard/propagation/propagation.h"
#include "xshard/spmd/cost_model.h"
#include "xshard/spmd/report.h"

namespace xs {

struct PartitionOptions {
  // Run sharding propagation (propagation/) first, so that unannotated instructions get
  // shardings. Off: unannotated instructions are replicated.
  bool propagate = true;
  // The propagation options when `propagate` is on (`xshard propagate`'s flags); their
  // num_devices is ignored: propagation runs on the partition count.
  PropagationOptions propagation;
  // Zero the padding of uneven output shards (so outputs are deterministic).
  bool mask_output_padding = true;
  // Windowed einsum (XLA's collective matmul loop, threshold_for_windowed_einsum_mib in bytes):
  // -1 (the default) is off. Otherwise a dot whose operand would be all-gathered along a
  // non-contracting dim (all-gather case), or whose result would be reduce-scattered (reduce-
  // scatter case), over one group of mesh axes becomes a while loop of collective-permutes and
  // dot steps when that operand's / result's GLOBAL byte size is >= this value (0: every
  // eligible dot). A hint: dots that do not qualify (see spmd/windowed_einsum.h) are partitioned
  // as usual, silently.
  int64_t windowed_einsum_threshold_bytes = -1;
  // The target's link bandwidth, collective latency and device throughput: candidate plans are
  // scored by the time they are estimated to take on it (spmd/cost_model.h).
  spmd::MachineModel machine;
};

struct PartitionResult {
  std::unique_ptr<Module> module;  // num_partitions set; verified
  spmd::PartitionReport report;
  // The shardings the caller shards inputs and assembles outputs with (after propagation): one
  // per entry parameter (tuple parameters: a tuple sharding), and the root's.
  std::vector<HloSharding> parameter_shardings;
  HloSharding output_sharding;
};

// Partitions `global` for `num_partitions` partitions. Errors (InvalidArgument) name the
// instruction for shardings that do not fit (device ids >= num_partitions, tile rank != value
// rank), and report ops that cannot be partitioned at all (Unimplemented, e.g. a manual value
// used as a tiled one). Ops without a partitioned handler are computed on replicated operands
// with a warning in the report.
StatusOr<PartitionResult> Partition(const Module& global, int64_t num_partitions,
                                    const PartitionOptions& options = {});

// The two stages Partition() runs, for pipelines that run (and print) them one by one
// (jit/compile_pipeline.h). CheckPartitionInput: the partition count and the module's
// verification (InvalidArgument naming the problem). PropagateForPartitioning: propagation of
// `global` in place on `num_partitions` devices with `options`.
Status CheckPartitionInput(const Module& global, int64_t num_partitions);
StatusOr<PropagationResult> PropagateForPartitioning(Module& global, int64_t num_partitions,
                                                     const PropagationOptions& options);

// Partitions `global` as its shardings stand (options.propagate is not looked at). `propagated`:
// PropagateForPartitioning's result on this very module (nullptr: none ran); its tile mesh and
// per-value axes views are used instead of being recomputed. The module must have
// passed CheckPartitionInput; `global` must outlive nothing of the result. The report lists the
// collectives as inserted; its FLOPs and memory after partitioning are left for
// spmd::DescribeFinalProgram on the final program (Partition() and CompileModule call it once).
StatusOr<PartitionResult> PartitionModule(const Module& global, int64_t num_partitions,
                                          const PartitionOptions& options,
                                          const PropagationResult* propagated);

}  // namespace xs

#endif  // XSHARD_SPMD_PARTITIONER_H_
