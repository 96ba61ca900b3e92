// The compiler as one pipeline (Halide's Lower.cpp is the model): an ordered list of named passes
// over one compilation, with shared options and the module printed after any pass:
//   shardy-import      JAX's Shardy form of shard_map and shardings -> the GSPMD form (spmd/)
//   inline-calls       calls replaced by their callees' bodies, as XLA does before propagation
//                      (passes/; shard_map bodies stay calls)
//   gather-batch-dims  iota-spelled batch dims of gathers / scatters made explicit (passes/)
//   global-cse         common subexpressions of the global module, as XLA's CSE before its
//                      partitioner (passes/)
//   split-constants    a copy of each constant expression per use, as Shardy's constant splitter
//                      (passes/; with propagate)
//   propagate          sharding propagation on (one clone of) the global module, in place
//                      (propagation/)
//   partition          the SPMD module for N devices (spmd/), built on propagation's tile mesh
//                      and per-value axes views (not recomputed)
//   cse, dce           cleanup of the SPMD module (passes/)
//   combine-all-reduces  independent small all-reduces of one kind as one (passes/)
//   async-collectives  collectives as start / done pairs around independent compute (passes/)
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
#include "xshard/passes/all_reduce_combine.h"
#include "xshard/passes/pipeline.h"
#include "xshard/propagation/propagation.h"
#include "xshard/spmd/partitioner.h"

namespace xs {

struct CompileOptions {
  // Partitioning, with the propagation switch and options (partition.propagate,
  // partition.propagation): propagation on, output padding masked, no windowed einsum.
  PartitionOptions partition;
  bool cleanup = true;       // the global-cse, cse and dce passes
  bool inline_calls = true;  // the inline-calls pass (InlineCalls, passes/call_inline.h)
  DumpOptions dump;     // --dump-after PASS / --dump-after-each
  // The combine-all-reduces pass (CombineAllReduces, passes/all_reduce_combine.h) after cleanup:
  // independent all-reduces of one kind totalling at most this many bytes per device become one
  // tuple all-reduce. 0 turns it off; it is off too with async_collectives (whose schedule makes
  // start / done pairs of one-operand collectives only).
  int64_t combine_all_reduce_bytes = kDefaultAllReduceCombineBytes;
  // The async-collectives pass (ScheduleAsyncCollectives), after cleanup.
  bool async_collectives = false;
};

// What one compilation produced.
struct CompiledModule {
  std::unique_ptr<Module> global;               // the input's one clone, imported and propagated in place
  std::optional<PropagationResult> propagation;  // refers to `global`; empty without propagation
  // module: the final SPMD module; report: its collectives, FLOPs and memory, described once,
  // after cleanup (before async-collectives, which only reorders them into start / done pairs).
  PartitionResult partitioned;
};

// Every pass of the pipeline, in the order CompileModule runs them: "shardy-import",
// "inline-calls", "gather-batch-dims", "global-cse", "split-constants", "propagate", "partition",
// "cse", "dce", "combine-all-reduces", "async-collectives" (the names --dump-after accepts). A pass
// the options switch off (inline-calls, global-cse / cse / dce, split-constants / propagate,
// combine-all-reduces, async-collectives) keeps its
// place and number and is not dumped.
std::vector<std::string> CompilePassNames();

// Runs the pipeline on `global` for `num_devices` partitions, dumping as options.dump asks.
// Errors: an unknown --dump-after name; a device count outside 1..kMaxDevices (base/limits.h);
// replica_count > 1 (Unimplemented: xshard partitions one replica); every Partition() error
// (named by instruction); an error of a pass is prefixed with the pass's name.
StatusOr<CompiledModule> CompileModule(const Module& global, int64_t num_devices,
                                       const CompileOptions& options = {});

}  // namespace xs

#endif  // XSHARD_JIT_COMPILE_PIPELINE_H_
