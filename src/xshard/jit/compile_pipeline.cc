// CompileModule: propagate -> partition -> cse -> dce as one ordered list of passes sharing one
// clone of the input and propagation's results.
#include "xshard/jit/compile_pipeline.h"

#include "xshard/base/strings.h"
#include "xshard/passes/collective_schedule.h"
#include "xshard/spmd/shardy_import.h"

namespace xs {

std::vector<std::string> CompilePassNames() {
  std::vector<std::string> names = {"propagate", "partition"};
  for (const Pass& p : CleanupPasses()) names.push_back(p.name);
  return names;
}

StatusOr<CompiledModule> CompileModule(const Module& global, int64_t num_devices,
                                       const CompileOptions& options) {
  XS_RETURN_IF_ERROR(CheckDumpNames(options.dump, CompilePassNames()));
  XS_RETURN_IF_ERROR(CheckPartitionInput(global, num_devices));
  CompiledModule out;
  out.global = global.Clone();
  // JAX's default (Shardy) shard_map form becomes the GSPMD form the passes below read.
  XS_RETURN_IF_ERROR(ImportShardyManualComputations(*out.global));
  int index = 1;
  if (options.partition.propagate) {
    XS_ASSIGN_OR_RETURN(out.propagation,
                        PropagateForPartitioning(*out.global, num_devices, options.partition.propagation));
    XS_RETURN_IF_ERROR(DumpAfterPass(options.dump, index, "propagate", true, *out.global));
  }
  ++index;
  XS_ASSIGN_OR_RETURN(out.partitioned,
                      PartitionModule(*out.global, num_devices, options.partition,
                                      out.propagation ? &*out.propagation : nullptr));
  XS_RETURN_IF_ERROR(DumpAfterPass(options.dump, index, "partition", true, *out.partitioned.module));
  ++index;
  if (options.cleanup) {
    PipelineOptions cleanup;
    cleanup.dump = options.dump;
    cleanup.first_index = index;
    XS_RETURN_IF_ERROR(RunPipeline(*out.partitioned.module, CleanupPasses(), cleanup));
    // The report describes the program that runs: collectives the cleanup deleted are dropped.
    spmd::DescribeFinalProgram(out.partitioned.report, *out.partitioned.module);
  }
  if (options.async_collectives) XS_RETURN_IF_ERROR(ScheduleAsyncCollectives(*out.partitioned.module).status());
  return out;
}

}  // namespace xs
