// `xshard propagate FILE.hlo [--explain] [--devices N]`: sharding propagation on an HLO module,
// printed back with a sharding on every instruction (and, with --explain, where each came from).
#include <iostream>

#include "xshard/propagation/propagation.h"
#include "xshard/spmd/shardy_import.h"
#include "xshard/text/parser.h"
#include "xshard/text/printer.h"
#include "xshard/tools/cli.h"

namespace xs::tools {
namespace {

struct PropagateFlags {
  std::string file;
  bool explain = false;
  bool short_form = false;
  int64_t devices = 0;
  PropagationFlags propagation;
};

Status RunPropagate(const PropagateFlags& f) {
  if (f.devices < 0) return InvalidArgument("--devices must be >= 1, got ", f.devices);
  XS_ASSIGN_OR_RETURN(PropagationOptions options, ToPropagationOptions(f.propagation));
  options.num_devices = f.devices;
  // Verified as `fmt` and `partition` verify: propagation's rules assume a well-formed module.
  XS_ASSIGN_OR_RETURN(std::unique_ptr<Module> module, LoadModule(f.file));
  // JAX's default shard_map form (xla.sdy custom-calls) as run / partition read it.
  if (Status s = ImportShardyManualComputations(*module); !s.ok()) return Annotate(s, StrCat(f.file, ": "));
  StatusOr<PropagationResult> result = PropagateShardings(*module, options);
  if (!result.ok()) return Annotate(result.status(), StrCat(f.file, ": "));
  const std::string printed =
      PrintHloModule(*module, f.short_form ? PrintOptions::Short() : PrintOptions());
  if (!f.explain) {
    std::cout << printed;
    return OkStatus();
  }
  std::cout << "// sharding propagation: " << result->num_devices << " devices, tile mesh axes "
            << result->mesh.ToString() << "; " << result->user_leaves << " annotated, "
            << result->propagated_leaves << " propagated, " << result->default_leaves
            << " replicated by default; " << result->iterations << " passes\n";
  for (const std::string& note : result->notes) std::cout << "// note: " << note << "\n";
  std::cout << AnnotateWithOrigins(printed, *module, *result);
  return OkStatus();
}

}  // namespace

void AddPropagateCommand(CLI::App& root, CommandList& commands) {
  auto flags = std::make_shared<PropagateFlags>();
  CLI::App* cmd = root.add_subcommand(
      "propagate",
      "Propagate shardings through an HLO module (GSPMD-style, over per-op factor rules) and "
      "print\n"
      "it with a sharding on every instruction. Unannotated entry outputs are open, as under JAX's\n"
      "jit (--to-output closed replicates them); unannotated parameters follow the module's\n"
      "allow_spmd_sharding_propagation_to_parameters (default: closed).");
  cmd->add_option("file", flags->file, "HLO text file")->required();
  cmd->add_flag(
      "--explain", flags->explain,
      "Append '// <- origin' to each instruction: user annotation, forward from an operand,\n"
      "backward from a user, call edge, or replicated by default");
  cmd->add_option("--devices", flags->devices,
                  "Device count (default: num_partitions, else the annotations' device count)")->check(DeviceCountCheck());
  AddPropagationFlags(cmd, flags->propagation);
  cmd->add_flag("--short", flags->short_form, "Print the '%'-less short form");
  commands.push_back({cmd, [flags] { return RunPropagate(*flags); }});
}

}  // namespace xs::tools
