// The compiler as one pipeline (Halide's Lower.cpp is the model): an ordered list of named passes
// over one compilation, with shared options and the module printed after any pass:
//   propagate  sharding propagation on (one clone of) the global module, in place (propagation/)
//   partition  the SPMD module for N devices (spmd/), built on propagation's tile mesh and
//              per-value axes views (not recomputed)
//   cse, dce   cleanup of the SPMD module (passes/)
// `xshard partition`, `xshard run` and ShardedProgram::Compile all go through CompileModule.
#ifndef XSHARD_JIT_COMPILE_PIPELINE_H_
#define XSHARD_JIT_COMPILE_PIPELINE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/ir/module.h"
#include "xshard/passes/pipeline.h"
#include "xshard/propagation/propagation.h"
#include "xshard/spmd/partitioner.h"

namespace xs {

struct CompileOptions {
  // Partitioning, with the propagation switch and options (partition.propagate,
  // partition.propagation): propagation on, output padding masked, no windowed einsum.
  PartitionOptions partition;
  bool cleanup = true;  // cse + dce after partitioning (passes/ CleanupPasses)
  DumpOptions dump;     // --dump-after PASS / --dump-after-each
  // Collectives as start / done pairs around independent compute (ScheduleAsyncCollectives),
  // after cleanup.
  bool async_collectives = false;
};

// What one compilation produced.
struct CompiledModule {
  std::unique_ptr<Module> global;               // the input's one clone, propagated in place
  std::optional<PropagationResult> propagation;  // refers to `global`; empty without propagation
  PartitionResult partitioned;                  // module: the (cleaned up) SPMD module
};

// Every pass name of the pipeline, in order (the names --dump-after accepts).
std::vector<std::string> CompilePassNames();

// Runs the pipeline on `global` for `num_devices` partitions: propagate (when
// options.partition.propagate), partition, then cse and dce (when options.cleanup), dumping as
// options.dump asks. Errors: every Partition() error (named by instruction); a pass error is
// prefixed with the pass name; an unknown --dump-after name.
StatusOr<CompiledModule> CompileModule(const Module& global, int64_t num_devices,
                                       const CompileOptions& options = {});

}  // namespace xs

#endif  // XSHARD_JIT_COMPILE_PIPELINE_H_
