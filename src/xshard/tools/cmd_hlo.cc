// `xshard fmt FILE.hlo` (parse, verify, print canonical HLO text) and `xshard run FILE.hlo`
// (run the entry computation on one device with inputs from .npy files or a random seed; print
// the outputs like JAX prints arrays and / or save them as out<i>.npy).
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <random>
#include <thread>

#include "xshard/core/npy.h"
#include "xshard/jit/host_memory.h"
#include "xshard/jit/sharded_program.h"
#include "xshard/runtime/client.h"
#include "xshard/exec/executable.h"
#include "xshard/kernels/parallel.h"
#include "xshard/runtime/spmd_executor.h"
#include "xshard/runtime/spmd_executor_io.h"
#include "xshard/text/printer.h"
#include "xshard/tools/cli.h"
#include "xshard/tools/cli_mpi.h"
#include "xshard/tools/run_flags.h"
#include "xshard/tools/run_watch.h"

namespace xs::tools {

StatusOr<std::vector<Array>> LoadArguments(const RunFlags& f, const std::vector<Shape>& want,
                                           std::string_view entry_name) {
  std::vector<Array> args;
  for (size_t i = 0; i < want.size(); ++i) {
    for (int64_t d : want[i].dims()) {
      if (d < 0) {
        return Unsupported("argument ", i, " of '", entry_name, "' has the dynamic shape ",
                           want[i].ToString(false), "; xshard runs static shapes only");
      }
    }
  }
  if (f.random_seed) {
    if (!f.args.empty()) return InvalidArgument("give either --args or --random-args, not both");
    std::mt19937_64 rng(*f.random_seed);
    for (const Shape& s : want) args.push_back(RandomArray(s, rng));
    return args;
  }
  if (f.args.size() != want.size()) {
    std::string shapes;
    for (const Shape& s : want) StrAppend(&shapes, shapes.empty() ? "" : ", ", s.ToString(false));
    return InvalidArgument("'", entry_name, "' takes ", want.size(), " argument(s) (", shapes, ") but ",
                           f.args.size(), " were given; pass --args a.npy ... or --random-args SEED");
  }
  // Each file's header is checked against its parameter, and its data against the host memory
  // left, before the data is read.
  int64_t read_bytes = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const std::optional<DType> opaque = NpyOpaqueDType(want[i].dtype());  // ml_dtypes' '<V1' types
    XS_ASSIGN_OR_RETURN(Array a, ReadNpy(f.args[i], opaque, [&](const NpyHeader& h) -> Status {
      if (h.shape.dtype() != want[i].dtype() || h.shape.dims() != want[i].dims()) {
        return InvalidArgument(f.args[i], ": holds ", h.shape.ToString(false), " but argument ", i, " of '",
                               entry_name, "' is ", want[i].ToString(false));
      }
      return CheckHostBytes(read_bytes + h.data_bytes,
                            StrCat("reading '", f.args[i], "'", i > 0 ? " after the arguments before it" : ""));
    }));
    read_bytes += a.byte_size();
    args.push_back(std::move(a));
  }
  return args;
}

Status SaveFiles(const std::vector<FileToSave>& files) {
  StopSignalScope signals;
  for (size_t k = 0; k < files.size(); ++k) {
    const std::filesystem::path path(files[k].path);
    Status saved;
    std::error_code ec;
    if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
    if (ec) {
      saved = Unavailable("cannot create directory '", path.parent_path().string(), "': ", ec.message());
    } else {
      saved = WriteNpy(files[k].path, *files[k].array, StopSignalFlag());
    }
    if (const int sig = ReceivedStopSignal(); sig != 0 && (!saved.ok() || k + 1 < files.size())) {
      // One line naming every file that was not saved (the first few of a long list).
      const size_t first = saved.ok() ? k + 1 : k;
      std::vector<std::string> names;
      for (size_t j = first; j < files.size() && names.size() < 8; ++j) names.push_back("'" + files[j].path + "'");
      if (files.size() - first > names.size()) names.push_back(StrCat("and ", files.size() - first - names.size(), " more"));
      return Cancelled("interrupted by ", StopSignalName(sig), " while saving the outputs: ", StrJoin(names, ", "),
                       files.size() - first == 1 ? " was" : " were", " not saved",
                       first > 0 ? StrCat(" (", first, " saved before the signal)") : "");
    }
    XS_RETURN_IF_ERROR(saved);
  }
  return OkStatus();
}

ExecuteOptions OneDeviceOptions(const RunFlags& f, RunMonitor* monitor) {
  ExecuteOptions options;
  options.monitor = monitor;
  // The thread budget (the cores, or XSHARD_NUM_THREADS); --blas-threads may lower it.
  options.blas_threads = f.blas_threads > 0 ? std::min(f.blas_threads, kernels::CoreCount()) : kernels::CoreCount();
  options.max_while_iterations = f.max_while_iterations;
  return options;
}

Status WriteOutputs(const RunFlags& f, const std::vector<Array>& outs) {
  if (!f.save_dir.empty()) {
    std::vector<FileToSave> files;
    for (size_t i = 0; i < outs.size(); ++i) {
      files.push_back({(std::filesystem::path(f.save_dir) / StrCat("out", i, ".npy")).string(), &outs[i]});
    }
    XS_RETURN_IF_ERROR(SaveFiles(files));
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    const Array& a = outs[i];
    if (!f.print) {
      std::cout << "out" << i << ": " << a.shape().ToString(false) << "\n";
    } else if (outs.size() == 1) {
      std::cout << a.ToString() << "\n";
    } else {
      std::cout << "out" << i << ": " << a.shape().ToString(false) << "\n" << a.ToString() << "\n";
    }
  }
  return OkStatus();
}

namespace {

struct FmtFlags {
  std::string file;
  bool short_form = false;
};

Status RunFmt(const FmtFlags& f) {
  XS_ASSIGN_OR_RETURN(std::unique_ptr<Module> module, LoadModule(f.file));
  std::cout << PrintHloModule(*module, f.short_form ? PrintOptions::Short() : PrintOptions());
  return OkStatus();
}

// How many devices the run uses: the module's num_partitions x replica_count, which --devices
// must equal when given; without --devices, that many must be available ($XSHARD_DEVICES or 8).
StatusOr<int64_t> DeviceCount(const RunFlags& f, const Module& module) {
  const int64_t partitions = module.config().num_partitions;
  const int64_t replicas = module.config().replica_count;
  const int64_t needed = partitions * replicas;
  if (f.devices && *f.devices < 1) {
    return InvalidArgument("--devices must be at least 1, got ", *f.devices);
  }
  if (needed == 1 && f.devices && *f.devices > 1) {
    return InvalidArgument(f.file, ": the module is a one-device program (no num_partitions in "
                           "its HloModule line, no shardings) but --devices ", *f.devices,
                           " was given; drop --devices, annotate values with shardings, or give an "
                           "SPMD module with num_partitions=", *f.devices);
  }
  if (f.devices && *f.devices != needed) {
    return InvalidArgument(f.file, ": the module runs on ", needed, " devices (num_partitions=",
                           partitions, " x replica_count=", replicas, ") but --devices ",
                           *f.devices, " was given; they must agree");
  }
  if (!f.devices) {
    XS_ASSIGN_OR_RETURN(int64_t available, DefaultDeviceCount());
    if (available < needed) {
      return InvalidArgument(f.file, ": the module runs on ", needed, " devices (num_partitions=",
                             partitions, " x replica_count=", replicas, ") but only ", available,
                             " are available ($XSHARD_DEVICES or the default 8); pass --devices ",
                             needed);
    }
  }
  return needed;
}

// `xshard run --devices N` on an SPMD module (already partitioned: one program for every device,
// keyed by partition-id); its sharding annotations are not acted on.
Status RunOnDevices(const RunFlags& f, const Module& module) {
  if (f.blas_threads < 0) return InvalidArgument("--blas-threads must be >= 0, got ", f.blas_threads);
  XS_ASSIGN_OR_RETURN(int64_t n, DeviceCount(f, module));
  if (!f.args.empty()) {
    return InvalidArgument("--args gives one device's inputs; on ", n, " devices use --args-dir "
                           "DIR (DIR/dev<d>/arg<i>.npy) or --random-args SEED");
  }
  if (!f.args_dir.empty() && f.random_seed) {
    return InvalidArgument("give either --args-dir or --random-args, not both");
  }
  if (CliDevicesOnHost()) XS_RETURN_IF_ERROR(Annotate(CheckModuleHostMemory(module, n), StrCat(f.file, ": ")));
  StatusOr<std::unique_ptr<SpmdExecutable>> spmd = SpmdExecutable::Create(module);
  if (!spmd.ok()) return Annotate(spmd.status(), StrCat(f.file, ": "));
  XS_ASSIGN_OR_RETURN(std::unique_ptr<Client> client, CliCreateClient(n));
  XS_ASSIGN_OR_RETURN(DeviceAssignment assignment,
                      DeviceAssignment::Default(module.config().replica_count,
                                                module.config().num_partitions, n));
  const std::vector<int64_t>& devices = assignment.LogicalDevices();
  const std::vector<Shape>& shapes = (*spmd)->executable().argument_shapes();
  std::vector<std::vector<Array>> args(n);
  if (!f.args_dir.empty()) {
    XS_ASSIGN_OR_RETURN(args, ReadDeviceArguments(f.args_dir, devices, shapes));
  } else if (f.random_seed) {
    args = RandomDeviceArguments(*f.random_seed, n, shapes);
  } else if (!shapes.empty()) {
    return InvalidArgument("'", module.entry()->name(), "' takes ", shapes.size(),
                           " argument(s) on each device; pass --args-dir DIR "
                           "(DIR/dev<d>/arg<i>.npy) or --random-args SEED");
  }
  SpmdRunOptions options;
  options.blas_threads = f.blas_threads;
  options.max_while_iterations = f.max_while_iterations;
  RunMonitor monitor(n);
  options.monitor = &monitor;
  StatusOr<SpmdResult> result = [&]() -> StatusOr<SpmdResult> {
    RunWatch watch(monitor, "run", f.timeout);
    watch.set_device_ids(devices);
    StatusOr<SpmdResult> r = (*spmd)->Run(*client, args, options);
    XS_RETURN_IF_ERROR(watch.Finish(r.status()));
    return r;
  }();
  if (!result.ok()) return Annotate(result.status(), StrCat(f.file, ": "));
  if (!f.save_dir.empty()) {
    std::vector<FileToSave> files;
    for (int64_t k = 0; k < n; ++k) {
      for (size_t i = 0; i < result->outputs[k].size(); ++i) {
        files.push_back({(std::filesystem::path(f.save_dir) / StrCat("dev", devices[k]) / StrCat("out", i, ".npy")).string(),
                         &result->outputs[k][i]});
      }
    }
    XS_RETURN_IF_ERROR(SaveFiles(files));
  }
  // In device order (logical ids differ from device ids when replica_count > 1).
  std::vector<int64_t> order(n);
  for (int64_t k = 0; k < n; ++k) order[k] = k;
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return devices[a] < devices[b]; });
  for (int64_t k : order) {
    const std::vector<Array>& outs = result->outputs[k];
    for (size_t i = 0; i < outs.size(); ++i) {
      std::cout << "dev" << devices[k] << " out" << i << ": " << outs[i].shape().ToString(false) << "\n";
      if (f.print) std::cout << outs[i].ToString() << "\n";
    }
  }
  if (f.memory) std::cout << FormatSpmdMemory(result->memory);
  return OkStatus();
}

Status RunRun(const RunFlags& f) {
  if (f.blas_threads < 0) return InvalidArgument("--blas-threads must be >= 0, got ", f.blas_threads);
  XS_ASSIGN_OR_RETURN(std::unique_ptr<Module> module, LoadModule(f.file));
  XS_RETURN_IF_ERROR(StartTrace(f.trace));
  const ModuleConfig& config = module->config();
  // A global module with shardings is partitioned for --devices, else num_partitions, else the
  // device count its annotations name (RunSharded), as the README says.
  if (NeedsPartitioning(*module) && !f.spmd) return RunSharded(f, *module);
  if (f.check) {
    return InvalidArgument(
        "--check compares a partitioned run of a global module with a one-device run, but ", f.file,
        f.spmd ? " is run as given (--spmd)"
        : module->config().is_scheduled ? " is already partitioned (is_scheduled=true)"
                                        : " has no sharding annotations to partition",
        "; give the global module with shardings");
  }
  if (f.report || f.windowed_einsum_threshold != -1 || f.async_collectives || !f.to_output.empty() ||
      !f.to_parameters.empty() || !(f.machine == spmd::MachineModel{})) {
    return InvalidArgument("--report, --windowed-einsum-threshold, --async-collectives, --to-output, "
                           "--to-parameters and the cost model flags apply to "
                           "global modules that "
                           "xshard partitions, but ", f.file, " has no sharding annotations or is "
                           "already partitioned");
  }
  if (f.devices || config.num_partitions * config.replica_count > 1 || !f.args_dir.empty() ||
      f.memory) {
    return RunOnDevices(f, *module);
  }
  // Off the host (--platform cuda): the module as a one-device SPMD program on the platform's
  // device kind (the platform's own error, such as no GPU, comes from creating its client).
  if (!CliHostOnly("a one-device run").ok()) return RunOnDevices(f, *module);
  XS_RETURN_IF_ERROR(Annotate(CheckModuleHostMemory(*module, 1), StrCat(f.file, ": ")));
  StatusOr<std::unique_ptr<Executable>> exe = Executable::Create(*module);
  if (!exe.ok()) return Annotate(exe.status(), StrCat(f.file, ": "));
  XS_ASSIGN_OR_RETURN(std::vector<Array> args,
                      LoadArguments(f, (*exe)->argument_shapes(), module->entry()->name()));
  RunMonitor monitor(1);
  StatusOr<std::vector<Array>> outs = [&]() -> StatusOr<std::vector<Array>> {
    RunWatch watch(monitor, "run", f.timeout);
    StatusOr<std::vector<Array>> r = (*exe)->Run(args, OneDeviceOptions(f, &monitor));
    XS_RETURN_IF_ERROR(watch.Finish(r.status()));
    return r;
  }();
  if (!outs.ok()) return Annotate(outs.status(), StrCat(f.file, ": "));
  return WriteOutputs(f, *outs);
}

}  // namespace

void AddHloCommands(CLI::App& root, CommandList& commands) {
  auto fmt = std::make_shared<FmtFlags>();
  CLI::App* f = root.add_subcommand("fmt", "Parse and verify an HLO module and print it in canonical XLA text.");
  f->add_option("file", fmt->file, "HLO text file (as XLA / JAX print it)")->required();
  f->add_flag("--short", fmt->short_form, "Print the short form (no '%', untyped operands) JAX's as_hlo_text shows");
  commands.push_back({f, [fmt] { return RunFmt(*fmt); }});

  auto run = std::make_shared<RunFlags>();
  CLI::App* r = root.add_subcommand(
      "run",
      "Run an HLO module. Three kinds of module:\n"
      "- one-device programs run on one CPU device;\n"
      "- global modules with sharding annotations (as JAX lowers jit with shardings) are\n"
      "  partitioned for N devices (--devices, else num_partitions) and run with global inputs\n"
      "  and outputs; --check also runs the module on one device and compares;\n"
      "- SPMD modules (num_partitions=N and is_scheduled=true, as `xshard partition` and XLA\n"
      "  print them, or --spmd) run as given, one program per device.\n"
      "Inputs: --args (one .npy per entry parameter leaf, in order) or --random-args SEED\n"
      "(floats uniform in [-1, 1), integers in [0, 10)); SPMD modules take --args-dir DIR\n"
      "(DIR/dev<d>/arg<i>.npy) or --random-args (different on every device). Outputs: their\n"
      "shapes, --print (values, as JAX prints arrays) and / or --save DIR (DIR/out<i>.npy;\n"
      "DIR/dev<d>/out<i>.npy for SPMD modules); --memory prints per-device bytes.");
  r->add_option("file", run->file, "HLO text file")->required();
  r->add_option("--args", run->args, "Input .npy files, one per parameter (tuple parameters: one per leaf)");
  r->add_option("--random-args", run->random_seed, "Random inputs from this seed instead of --args")->check(NonNegativeIntegerCheck());
  r->add_option("--save", run->save_dir, "Write output leaf i to DIR/out<i>.npy (DIR is created)")
      ->check(NonEmptyPathCheck());
  r->add_flag("--print", run->print, "Print every output's values");
  r->add_option("--blas-threads", run->blas_threads, "OpenBLAS threads for dot / convolution, at most the thread budget (default: all cores, or XSHARD_NUM_THREADS)")
      ->check(IntegerRangeCheck(0, 1024));
  r->add_option("--max-while-iterations", run->max_while_iterations,
                "Fail a while loop that runs longer than this (default: no limit)")
      ->check(IntegerRangeCheck(-1, INT64_MAX, "-1 (no limit) or a whole number >= 0"));
  r->add_option("--devices", run->devices,
                "Run on N devices. A global module with shardings is partitioned for N (when its\n"
                "HloModule line has num_partitions, N must equal it); an SPMD module needs\n"
                "N = num_partitions x replica_count. Without it, modules with num_partitions > 1\n"
                "run on that many devices ($XSHARD_DEVICES or 8 must be enough).")
      ->check(DeviceCountCheck());
  r->add_option("--args-dir", run->args_dir,
                "Per-device inputs of an SPMD module: DIR/dev<d>/arg<i>.npy for every device d and argument i");
  r->add_flag("--memory", run->memory, "Print each device's argument, peak and live bytes");
  r->add_flag("--check", run->check,
              "Global modules: also run the module on one device and compare every output (max abs\n"
              "and relative error); exit 1 when an element is beyond atol + rtol * |expected| (+ 4 ulps of the output's\n"
              "largest value with the default tolerances, x sqrt(K) / 8 when the longest sum adds K > 64 terms)");
  r->add_option("--atol", run->atol, "Absolute tolerance of --check (default by dtype: f32 1e-4, f16 1e-2, ...; integers exact)")
      ->check(FiniteNonNegativeCheck());
  r->add_option("--rtol", run->rtol, "Relative tolerance of --check (default by dtype, like --atol)")->check(FiniteNonNegativeCheck());
  r->add_flag("--report", run->report, "Global modules: print the partitioner's report (collectives, memory) first");
  r->add_flag("--spmd", run->spmd, "Run the module as an already partitioned SPMD program even if it is not\n"
                                   "marked is_scheduled=true; its shardings are not acted on");
  r->add_option("--windowed-einsum-threshold", run->windowed_einsum_threshold,
                "Global modules: use windowed einsum loops for dots whose all-gathered operand or\n"
                "reduce-scattered result has at least this many bytes (default -1: off)")
      ->check(IntegerRangeCheck(-1, INT64_MAX, "-1 (off) or a byte count >= 0"));
  r->add_flag("--async-collectives", run->async_collectives,
              "Global modules: run all-gathers, all-reduces and collective-permutes as start / done\n"
              "pairs that overlap the compute that does not depend on them (default: off)");
  AddRunPropagationFlags(r, *run);
  AddTimeoutFlag(r, run->timeout);
  AddTraceFlag(r, run->trace);
  AddMpiFlags(r);
  AddPlatformFlag(r);
  commands.push_back({r, [run] { return RunRun(*run); }});
}

}  // namespace xs::tools
