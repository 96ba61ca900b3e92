// `xshard autoshard FILE --mesh x=4,y=2 [--memory-per-device SIZE] [--hardware FILE]
// [--keep-annotations] [--forbid NAME:DIM=AXIS]... [--compare] [--emit OUT.hlo] [--time-limit S]`:
// chooses the shardings of a module for a mesh (autoshard/autoshard.h), prints the chosen
// PartitionSpec of every parameter and output, the predicted step time and peak memory per device,
// and the collectives with their cost; --emit writes the annotated module for `xshard run`.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>

#include "xshard/autoshard/autoshard.h"
#include "xshard/core/npy.h"
#include "xshard/jit/host_memory.h"
#include "xshard/jit/sharded_program.h"
#include "xshard/tools/cli_mpi.h"
#include "xshard/tools/run_flags.h"
#include "xshard/text/printer.h"
#include "xshard/tools/cli.h"
#include "xshard/autoshard/hardware_cost.h"

namespace xs::tools {
namespace {

struct AutoshardFlags {
  std::string file, mesh, memory, hardware, emit;
  std::vector<std::string> forbid;
  bool keep_annotations = false;
  bool compare = false;
  bool measure = false;
  double time_limit = 60;
  int max_ilp_variables = 250000;
  std::string write_mps;
};

// Median wall ms of `module` (a global module with shardings) on `n` in-process devices with random
// inputs, as `xshard bench run` times it: compiled and placed once, 2 warm-up calls, then calls
// until 1 s and 5 calls have passed (at most 50).
StatusOr<double> MeasureMs(const Module& module, int64_t n) {
  XS_ASSIGN_OR_RETURN(std::unique_ptr<ShardedProgram> program, ShardedProgram::Compile(module, n, CompileOptions{}));
  XS_ASSIGN_OR_RETURN(std::optional<int64_t> limit, HostMemoryLimit());
  if (limit) XS_RETURN_IF_ERROR(CheckHostMemory(*program, false, false, *limit));
  RunFlags flags;
  flags.random_seed = 1;
  XS_ASSIGN_OR_RETURN(std::vector<Array> args, LoadArguments(flags, program->argument_shapes(), module.entry()->name()));
  XS_ASSIGN_OR_RETURN(std::vector<std::vector<Array>> shards, program->ShardArguments(args));
  args.clear();
  XS_ASSIGN_OR_RETURN(std::unique_ptr<Client> client, CliCreateClient(n));
  std::vector<double> ms;
  double total = 0;
  for (int i = 0; i < 52 && (i < 7 || total < 1.0); ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    XS_RETURN_IF_ERROR(program->RunPlaced(*client, shards, SpmdRunOptions{}).status());
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (i >= 2) {
      ms.push_back(s * 1e3);
      total += s;
    }
  }
  std::sort(ms.begin(), ms.end());
  return ms.size() % 2 == 1 ? ms[ms.size() / 2] : (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]) / 2;
}

void PrintMeasured(const char* what, double predicted_s, double measured_ms) {
  std::printf("%s: predicted %.3f ms, measured median %.3f ms on this machine, predicted/measured %.2f\n", what,
              predicted_s * 1e3, measured_ms, measured_ms > 0 ? predicted_s * 1e3 / measured_ms : 0.0);
}

// "w1:1=x" -> {w1, 1, x}.
StatusOr<autoshard::AutoshardOptions::Forbid> ParseForbid(const std::string& text) {
  const size_t colon = text.rfind(':');
  const size_t eq = text.rfind('=');
  autoshard::AutoshardOptions::Forbid f;
  if (colon == std::string::npos || eq == std::string::npos || eq < colon || colon == 0 || eq + 1 == text.size()) {
    return InvalidArgument("--forbid '", text, "' should be NAME:DIM=AXIS (a parameter's JAX or HLO name, or *, a dim "
                           "number and a mesh axis), e.g. --forbid w1:0=x");
  }
  f.value = text.substr(0, colon);
  const std::string dim = text.substr(colon + 1, eq - colon - 1);
  if (dim.empty() || dim.size() > 4 || dim.find_first_not_of("0123456789") != std::string::npos) {
    return InvalidArgument("--forbid '", text, "': the dim '", dim, "' is not a dim number (0, 1, ...)");
  }
  f.dim = std::stoi(dim);
  f.axis = text.substr(eq + 1);
  return f;
}

Status RunAutoshard(const AutoshardFlags& f) {
  XS_ASSIGN_OR_RETURN(std::unique_ptr<Module> module, LoadModule(f.file));
  autoshard::AutoshardOptions options;
  {
    StatusOr<Mesh> mesh = Mesh::Parse(f.mesh);
    if (!mesh.ok()) return Annotate(mesh.status(), "--mesh: ");
    options.mesh = *mesh;
  }
  const int64_t n = options.mesh.num_devices();
  XS_ASSIGN_OR_RETURN(autoshard::HardwareCost hw, autoshard::LoadHardwareCost(f.hardware, n));
  options.cost = hw.cost;
  options.evaluate = hw.evaluate;
  if (!f.memory.empty()) {
    if (!ParseByteCount(f.memory, &options.memory_per_device)) {
      return InvalidArgument("--memory-per-device '", f.memory, "' is not a size: give bytes or a number with a K, M, "
                             "G or T suffix (binary), e.g. 16G or 512MiB");
    }
  } else {
    XS_ASSIGN_OR_RETURN(std::optional<int64_t> host, HostMemoryLimit());
    if (host) options.memory_per_device = *host / n;
  }
  for (const std::string& text : f.forbid) {
    XS_ASSIGN_OR_RETURN(auto forbid, ParseForbid(text));
    options.forbid.push_back(std::move(forbid));
  }
  options.keep_annotations = f.keep_annotations;
  options.time_limit_s = f.time_limit;
  options.max_ilp_variables = f.max_ilp_variables;
  options.write_mps = f.write_mps;
  StatusOr<autoshard::AutoshardResult> result = autoshard::Autoshard(*module, options);
  if (!result.ok()) return Annotate(result.status(), StrCat(f.file, ": "));
  std::cout << "autoshard " << f.file << ": mesh " << options.mesh.ToString() << " (" << n << " devices), "
            << "memory per device "
            << (options.memory_per_device > 0 ? spmd::FormatBytes(options.memory_per_device) : std::string("unlimited"))
            << ", hardware: " << hw.name << "\n";
  std::cout << autoshard::FormatResult(*result, options.cost);
  if (f.measure) {
    // Every candidate is run; the fastest measured one that fits is the plan (the model's errors
    // cannot then cost more than the candidates differ).
    int best = -1;
    std::vector<double> measured;
    for (size_t i = 0; i < result->candidates.size(); ++i) {
      const autoshard::PlanEvaluation& c = result->candidates[i];
      StatusOr<double> ms = MeasureMs(*result->candidate_modules[i], n);
      if (!ms.ok()) return Annotate(ms.status(), StrCat(f.file, ": --measure: ", c.label, ": "));
      measured.push_back(*ms);
      PrintMeasured(c.label.c_str(), c.seconds, *ms);
      const bool fits = options.memory_per_device <= 0 || c.peak_bytes <= options.memory_per_device;
      if (fits && (best < 0 || *ms < measured[best])) best = static_cast<int>(i);
    }
    if (best >= 0 && best != result->chosen) {
      result->chosen = best;
      result->plan = result->candidates[best];
      result->annotated = result->candidate_modules[best]->Clone();
    }
    std::cout << "chosen by measurement: " << result->plan.label << "\n";
  }
  if (f.compare) {
    StatusOr<autoshard::PlanEvaluation> own =
        autoshard::EvaluateAnnotated(*module, options.mesh, options.evaluate, "the module's own shardings");
    if (!own.ok()) return Annotate(own.status(), StrCat(f.file, ": --compare: the module's own shardings: "));
    std::cout << "\n" << autoshard::FormatEvaluation(*own);
    const double ratio = own->seconds > 0 ? result->plan.seconds / own->seconds : 0;
    std::printf("chosen / own predicted time: %.3f\n", ratio);
    if (f.measure) {
      std::unique_ptr<Module> own_module = module->Clone();
      own_module->mutable_config().num_partitions = n;
      StatusOr<double> ms = MeasureMs(*own_module, n);
      if (!ms.ok()) return Annotate(ms.status(), StrCat(f.file, ": --measure: the module's own shardings: "));
      PrintMeasured("module's own shardings", own->seconds, *ms);
    }
  }
  if (!f.emit.empty()) {
    XS_RETURN_IF_ERROR(WriteFileAtomically(f.emit, PrintHloModule(*result->annotated)));
    std::cout << "wrote " << f.emit << " (run it with `xshard run " << f.emit << "` or `xshard bench run " << f.emit
              << "`)\n";
  }
  return OkStatus();
}

}  // namespace

void AddAutoshardCommand(CLI::App& root, CommandList& commands) {
  auto flags = std::make_shared<AutoshardFlags>();
  CLI::App* cmd = root.add_subcommand(
      "autoshard",
      "Choose the shardings of an HLO module for a mesh: every parameter, output and\n"
      "intermediate, for the lowest predicted step time within each device's memory. Prints\n"
      "the PartitionSpecs, the predicted time and memory, and the collectives; --emit writes\n"
      "the annotated module for `xshard run` / `xshard bench run`. The module's own shardings\n"
      "are ignored unless --keep-annotations.");
  cmd->add_option("file", flags->file, "HLO text file (with or without shardings)")->required();
  cmd->add_option("--mesh", flags->mesh, "Mesh axes and sizes, e.g. x=4,y=2")->required();
  cmd->add_option("--memory-per-device", flags->memory,
                  "Bytes of live values one device may hold (K/M/G/T suffixes, binary); default:\n"
                  "this machine's available memory / devices");
  cmd->add_option("--hardware", flags->hardware,
                  "Hardware profile to predict time for (hardware/*.profile, or one `xshard bench\n"
                  "calibrate` wrote); default: this machine's calibrated profile, else built-in figures");
  cmd->add_flag("--keep-annotations", flags->keep_annotations,
                "Keep the shardings the module has (those values are not chosen)");
  cmd->add_option("--forbid", flags->forbid,
                  "NAME:DIM=AXIS: never split dim DIM of parameter NAME (JAX name, HLO name, or * for\n"
                  "every parameter) over mesh axis AXIS; repeatable");
  cmd->add_flag("--compare", flags->compare, "Also compile and price the module's own shardings");
  cmd->add_flag("--measure", flags->measure,
                "Also run the chosen plan (and with --compare the module's own) on in-process\n"
                "devices with random inputs, as `bench run` times it, and print predicted next to\n"
                "the measured median");
  cmd->add_option("--emit", flags->emit, "Write the module with the chosen shardings to this file");
  cmd->add_option("--time-limit", flags->time_limit, "Seconds the ILP solver may take (default 60)")
      ->check(CLI::Range(0.01, 86400.0));
  cmd->add_option("--max-ilp-variables", flags->max_ilp_variables,
                  "Largest exact program (variables) handed to the ILP solver; bigger ones keep the\n"
                  "local search's plan (default 250000)")
      ->check(CLI::Range(0, 100000000));
  cmd->add_option("--write-mps", flags->write_mps,
                  "Also write the exact 0-1 program to this file in MPS format (for another solver)");
  commands.push_back({cmd, [flags] { return RunAutoshard(*flags); }});
}

}  // namespace xs::tools
