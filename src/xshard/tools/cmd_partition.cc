// `xshard partition FILE.hlo [--devices N] [--report] [--short] [--no-propagate] [--no-inline-calls]
// [--to-parameters B] [--to-output open|closed] [--link-gbps G] [--collective-latency-us U]
// [--device-gflops F] [--windowed-einsum-threshold BYTES] [--async-collectives]
// [--dump-after PASS] [--dump-after-each] [--dump-dir DIR]`: the compiler pipeline
// (jit/compile_pipeline.h): import the Shardy form, propagate shardings, partition the module into
// one SPMD program for N devices, clean it up (CSE, DCE), optionally schedule async collectives,
// and print it; --report adds every inserted collective and the memory per device. Nothing is
// planned for execution, so a program the executor cannot run still partitions and prints.
#include <iostream>

#include "xshard/jit/compile_pipeline.h"
#include "xshard/spmd/report.h"
#include "xshard/text/printer.h"
#include "xshard/tools/cli.h"

namespace xs::tools {
namespace {

struct PartitionFlags {
  std::string file;
  int64_t devices = -1;  // -1: not given
  bool report = false;
  bool short_form = false;
  bool no_propagate = false;
  bool no_inline_calls = false;
  bool async_collectives = false;
  int64_t windowed_einsum_threshold = -1;
  PropagationFlags propagation;
  DumpFlags dump;
  spmd::MachineModel machine;
};

Status RunPartition(const PartitionFlags& f) {
  XS_ASSIGN_OR_RETURN(std::unique_ptr<Module> module, LoadModule(f.file, /*verify=*/false));
  if (f.devices != -1 && f.devices < 1) return InvalidArgument("--devices must be >= 1, got ", f.devices);
  int64_t devices = f.devices;
  if (devices == -1) {
    devices = module->config().num_partitions > 1 ? module->config().num_partitions : AnnotatedDevices(*module);
  }
  CompileOptions options;
  options.partition.propagate = !f.no_propagate;
  options.inline_calls = !f.no_inline_calls;
  XS_ASSIGN_OR_RETURN(options.partition.propagation, ToPropagationOptions(f.propagation));
  options.dump = ToDumpOptions(f.dump);
  options.partition.windowed_einsum_threshold_bytes = f.windowed_einsum_threshold;
  options.partition.machine = f.machine;
  options.async_collectives = f.async_collectives;
  StatusOr<CompiledModule> compiled = CompileModule(*module, devices, options);
  if (!compiled.ok()) return Annotate(compiled.status(), StrCat(f.file, ": "));
  Module& spmd = *compiled->partitioned.module;
  spmd.mutable_config().is_scheduled = true;  // its order is final: `xshard run` runs it as it is
  std::cout << PrintHloModule(spmd, f.short_form ? PrintOptions::Short() : PrintOptions());
  if (f.report) std::cout << "\n" << spmd::FormatReport(compiled->partitioned.report);
  return OkStatus();
}

}  // namespace

void AddPartitionCommand(CLI::App& root, CommandList& commands) {
  auto flags = std::make_shared<PartitionFlags>();
  CLI::App* cmd = root.add_subcommand(
      "partition",
      "Partition an HLO module for N devices (GSPMD): propagate shardings, then print the one SPMD\n"
      "program every device runs, with the collectives it needs. The output is marked\n"
      "is_scheduled=true, so `xshard run` runs it as it is.");
  cmd->add_option("file", flags->file, "HLO text file")->required();
  cmd->add_option("--devices", flags->devices,
                  "Device (partition) count; default: num_partitions, else the annotations' device count")
      ->check(DeviceCountCheck());
  cmd->add_flag("--report", flags->report,
                "Also print every collective of the final program (kind, shape, bytes, replica\n"
                "groups, cause), the estimated time per device (communication and compute) and the\n"
                "memory per device before and after partitioning");
  cmd->add_flag("--short", flags->short_form, "Print the '%'-less short form");
  cmd->add_flag("--no-propagate", flags->no_propagate,
                "Do not propagate shardings: unannotated instructions are replicated");
  cmd->add_flag("--no-inline-calls", flags->no_inline_calls,
                "Partition each call's callee as a computation of its own instead of inlining it\n"
                "first (the inline-calls pass; shard_map bodies are never inlined)");
  AddPropagationFlags(cmd, flags->propagation);
  AddMachineFlags(cmd, flags->machine);
  AddDumpFlags(cmd, flags->dump);
  cmd->add_option("--windowed-einsum-threshold", flags->windowed_einsum_threshold,
                  "Dots whose all-gathered operand or reduce-scattered result has at least this many\n"
                  "bytes (global) become a loop of collective-permutes overlapped with partial dots\n"
                  "(windowed einsum / collective matmul); default -1: off")
      ->check(IntegerRangeCheck(-1, INT64_MAX, "-1 (off) or a byte count >= 0"));
  cmd->add_flag("--async-collectives", flags->async_collectives,
                "Schedule all-gathers, all-reduces, reduce-scatters and collective-permutes as\n"
                "start / done pairs around the compute that does not depend on them (the\n"
                "async-collectives pass; default: off)");
  commands.push_back({cmd, [flags] { return RunPartition(*flags); }});
}

}  // namespace xs::tools
