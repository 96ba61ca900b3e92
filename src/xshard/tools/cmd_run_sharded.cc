// `xshard run` on a global module with sharding annotations: partition for N devices, shard the
// global inputs, run on N virtual devices, gather the global outputs and, with --check, compare
// them with a one-device run of the same module.
#include <filesystem>
#include <iostream>

#include "xshard/jit/host_memory.h"
#include "xshard/jit/output_check.h"
#include "xshard/jit/sharded_program.h"
#include "xshard/mpi/mpi_process.h"
#include "xshard/runtime/client.h"
#include "xshard/exec/executable.h"
#include "xshard/tools/cli.h"
#include "xshard/tools/cli_mpi.h"
#include "xshard/tools/run_flags.h"
#include "xshard/tools/run_watch.h"

namespace xs::tools {
namespace {

// N: --devices (which must equal num_partitions when the module names one), else num_partitions,
// else the device count the annotations name; without --devices, that many must be available.
StatusOr<int64_t> PartitionCount(const RunFlags& f, const Module& module) {
  const int64_t partitions = module.config().num_partitions;
  if (f.devices) {
    if (*f.devices < 1) return InvalidArgument("--devices must be at least 1, got ", *f.devices);
    if (partitions > 1 && *f.devices != partitions) {
      return InvalidArgument(f.file, ": the module was lowered for num_partitions=", partitions,
                             " but --devices ", *f.devices, " was given; they must agree (drop --devices, "
                             "or remove num_partitions from its HloModule line)");
    }
    return *f.devices;
  }
  const int64_t n = partitions > 1 ? partitions : AnnotatedDevices(module);
  XS_ASSIGN_OR_RETURN(int64_t available, DefaultDeviceCount());
  if (available < n) {
    return InvalidArgument(f.file, ": the module runs on ", n, " devices but only ", available,
                           " are available ($XSHARD_DEVICES or the default 8); pass --devices ", n);
  }
  return n;
}

// Outputs with per-device values (manual, unreduced) have no global array: each device's piece
// is printed / saved as DIR/dev<d>/out<i>.npy instead.
void WritePerDeviceOutput(const RunFlags& f, const std::vector<std::vector<Array>>& device_outputs, size_t i,
                          const HloSharding& s, std::vector<FileToSave>& files) {
  std::cout << "out" << i << ": per-device values (sharding " << s.ToString() << ")\n";
  for (size_t d = 0; d < device_outputs.size(); ++d) {
    const Array& a = device_outputs[d][i];
    std::cout << "  dev" << d << ": " << a.shape().ToString(false) << "\n";
    if (f.print) std::cout << a.ToString() << "\n";
    if (!f.save_dir.empty()) {
      files.push_back({(std::filesystem::path(f.save_dir) / StrCat("dev", d) / StrCat("out", i, ".npy")).string(), &a});
    }
  }
}

// A run's outputs: every device's (its padded shards, views of its arena) and the global arrays
// assembled from them only where something needs them (--print, --save): without those, no
// global copy is made, and --check compares the devices' pieces with the reference in place.
struct RunOutputs {
  std::vector<std::vector<Array>> device;  // [device][output]
  std::vector<std::optional<Array>> global;  // [output]: assembled, or nullopt
  std::vector<SpmdDeviceMemory> memory;
};

// The reference outputs: a one-device run of the global module, or, when the module means
// something per device, the run of its ReplicatedReference on the same devices (per-device
// outputs then compare device by device).
struct Reference {
  std::string what;  // "the one-device run", ...
  std::string why;   // for the replicated reference: why one device cannot be the reference
  std::vector<Array> outputs;                     // global outputs
  std::vector<std::vector<Array>> device_outputs; // [device][output], per-device references only
};

StatusOr<Reference> ReferenceRun(const RunFlags& f, const ShardedProgram& program, const std::vector<Array>& args,
                                 Client& client, const SpmdRunOptions& run_options) {
  Reference ref;
  std::optional<std::string> per_device = PerDeviceSemantics(program.global_module());
  if (!per_device) {
    StatusOr<std::vector<Array>> want = Execute(program.global_module(), args, OneDeviceOptions(f, run_options.monitor));
    if (!want.ok()) return Annotate(want.status(), StrCat(f.file, ": --check: the one-device run: "));
    ref.what = "the one-device run";
    ref.outputs = std::move(*want);
    return ref;
  }
  std::unique_ptr<Module> replicated = ReplicatedReference(program.global_module());
  StatusOr<std::unique_ptr<ShardedProgram>> reference = ShardedProgram::Compile(*replicated, program.num_devices());
  if (!reference.ok()) return Annotate(reference.status(), StrCat(f.file, ": --check: the replicated reference: "));
  StatusOr<ShardedResult> ran = (*reference)->Run(client, args, run_options);
  if (!ran.ok()) return Annotate(ran.status(), StrCat(f.file, ": --check: the replicated reference: "));
  ref.what = "the run with every automatic sharding replicated";
  ref.why = StrCat(" (one device cannot be the reference: ", *per_device, ")");
  ref.outputs = std::move(ran->outputs);
  ref.device_outputs = std::move(ran->device_outputs);
  return ref;
}

// A loop that runs past --max-while-iterations partitioned may do the same in the reference: the
// inputs make it run long or forever (a bound drawn at random, a body that never changes the
// state), and there is nothing to compare. If the reference finishes, the partitioned program
// looped differently: that error stands.
Status LoopsDidNotFinish(const RunFlags& f, const ShardedProgram& program, const std::vector<Array>& args,
                         Client& client, const SpmdRunOptions& run_options, const Status& partitioned) {
  StatusOr<Reference> ref = ReferenceRun(f, program, args, client, run_options);
  if (ref.ok() || !ExceededWhileIterations(ref.status())) return Annotate(partitioned, StrCat(f.file, ": "));
  return Unsupported("--check cannot compare runs that do not finish: on these inputs a while "
                     "loop of ", f.file, " runs past --max-while-iterations ", f.max_while_iterations,
                     " both partitioned and in the reference (", partitioned.message(), ")");
}

Status Check(const RunFlags& f, const ShardedProgram& program, const std::vector<Array>& args,
             const RunOutputs& result, Client& client, const SpmdRunOptions& run_options) {
  XS_ASSIGN_OR_RETURN(Reference ref, ReferenceRun(f, program, args, client, run_options));
  std::optional<Tolerance> tolerance;
  if (f.atol || f.rtol) tolerance = Tolerance{f.atol.value_or(0), f.rtol.value_or(0)};
  std::cout << "check against " << ref.what << ref.why << ":\n";
  int checked = 0, failed = 0;
  std::string first;
  // The tolerance grows with the longest sum of the program (output_check.h).
  const int64_t summed_terms = LongestSum(program.global_module());
  auto report = [&](const OutputDiff& d, const Array& want, const std::string& label) {
    std::cout << "  " << d.ToString(want.dims(), want.dtype(), label) << "\n";
    ++checked;
    if (!d.ok() && failed++ == 0) first = label;
  };
  for (size_t i = 0; i < result.global.size(); ++i) {
    if (program.OutputHasPerDeviceValues(i)) {
      for (size_t d = 0; d < result.device.size() && !ref.device_outputs.empty(); ++d) {
        const Array& want = ref.device_outputs[d][i];
        XS_ASSIGN_OR_RETURN(OutputDiff diff, CompareOutput(result.device[d][i], want, 0, tolerance, summed_terms));
        report(diff, want, StrCat("out", i, " dev", d));
      }
      continue;
    }
    // The assembled array when there is one, else the devices' pieces where they are.
    StatusOr<OutputDiff> diff = OutputDiff{};
    if (result.global[i]) {
      diff = CompareOutput(*result.global[i], ref.outputs[i], 0, tolerance, summed_terms);
    } else {
      XS_ASSIGN_OR_RETURN(std::vector<OutputBlock> blocks, program.OutputBlocks(i, result.device));
      diff = CompareOutputBlocks(blocks, ref.outputs[i], 0, tolerance, summed_terms);
    }
    XS_RETURN_IF_ERROR(diff.status());
    report(*diff, ref.outputs[i], StrCat("out", i));
  }
  if (failed > 0) {
    return Internal("--check failed: ", failed, " of ", checked, " outputs (first: ", first, ") differ from ",
                    ref.what, " of ", f.file, " beyond the tolerance");
  }
  return OkStatus();
}

// Rank 0 shards its `loaded` global inputs; each process gets its own devices' shards.
StatusOr<std::vector<std::vector<Array>>> ScatterShards(Client& client,
                                                        const ShardedProgram& program,
                                                        StatusOr<std::vector<Array>> loaded) {
  std::vector<std::vector<Array>> shards(program.num_devices());
  Status status = loaded.status();
  if (loaded.ok() && client.process_rank() == 0) {
    StatusOr<std::vector<std::vector<Array>>> placed = program.ShardArguments(*loaded);
    status = placed.status();
    if (placed.ok()) shards = std::move(*placed);
  }
  std::vector<int64_t> owner;
  for (int64_t d = 0; d < program.num_devices(); ++d) owner.push_back(client.ProcessOf(d));
  XS_RETURN_IF_ERROR(mpi::ScatterArrays(owner, shards, status, 0,
                                        client.options().collective_timeout));
  return shards;
}

}  // namespace

Status RunSharded(const RunFlags& f, const Module& module) {
  if (f.blas_threads < 0) return InvalidArgument("--blas-threads must be >= 0, got ", f.blas_threads);
  if (!f.args_dir.empty()) {
    return InvalidArgument("--args-dir gives each device's inputs of an SPMD module, but ", f.file,
                           " is a global module with shardings: pass whole arrays with --args a.npy ... "
                           "or --random-args SEED (or --spmd to run it as already partitioned)");
  }
  if ((f.atol || f.rtol) && !f.check) return InvalidArgument("--atol / --rtol set the tolerance of --check; add --check");
  if ((f.atol && *f.atol < 0) || (f.rtol && *f.rtol < 0)) return InvalidArgument("--atol and --rtol must be >= 0");
  XS_ASSIGN_OR_RETURN(int64_t n, PartitionCount(f, module));
  CompileOptions options;
  XS_ASSIGN_OR_RETURN(options.partition.propagation, RunPropagationOptions(f));
  options.partition.windowed_einsum_threshold_bytes = f.windowed_einsum_threshold;
  options.partition.machine = f.machine;
  options.async_collectives = f.async_collectives;
  StatusOr<std::unique_ptr<ShardedProgram>> program = ShardedProgram::Compile(module, n, options);
  if (!program.ok()) return Annotate(program.status(), StrCat(f.file, ": "));
  if (f.report) std::cout << spmd::FormatReport((*program)->report()) << "\n";
  XS_ASSIGN_OR_RETURN(std::optional<int64_t> memory_limit, HostMemoryLimit());
  // On cuda the devices' buffers are GPU memory; --check's reference run still uses the host.
  if (memory_limit && (CliDevicesOnHost() || f.check)) {
    XS_RETURN_IF_ERROR(Annotate(CheckHostMemory(**program, f.check, f.print || !f.save_dir.empty(), *memory_limit), StrCat(f.file, ": ")));
  }
  XS_ASSIGN_OR_RETURN(std::unique_ptr<Client> client, CliCreateClient(n));
  auto load = [&]() {
    return client->process_rank() == 0
               ? LoadArguments(f, (*program)->argument_shapes(), module.entry()->name())
               : StatusOr<std::vector<Array>>(std::vector<Array>{});
  };
  // Under mpirun rank 0 reads (or draws) the global inputs. It sends every process only its
  // devices' shards, or with --check (whose reference runs need them) the whole inputs.
  std::vector<Array> args;
  std::optional<std::vector<std::vector<Array>>> shards;
  if (client->distributed() && !f.check) {
    XS_ASSIGN_OR_RETURN(shards, ScatterShards(*client, **program, load()));
  } else {
    XS_RETURN_IF_ERROR(ShareInputs(*client, load(), args));
  }
  SpmdRunOptions run_options;
  run_options.blas_threads = f.blas_threads;
  run_options.max_while_iterations = f.max_while_iterations;
  RunMonitor monitor(n);
  run_options.monitor = &monitor;
  // Under mpirun only rank 0 prints and saves: the other processes send it their devices' outputs
  // and receive none (with --check every process compares, so every one receives them all).
  const bool outputs_elsewhere = client->distributed() && !f.check && client->process_rank() != 0;
  if (client->distributed() && !f.check) run_options.outputs_to_process = 0;
  RunWatch watch(monitor, "run", f.timeout);
  StatusOr<SpmdResult> ran = shards ? (*program)->RunPlaced(*client, *shards, run_options)
                                     : (*program)->RunWithoutGather(*client, args, run_options);
  shards.reset();  // the inputs' shards (MPI mode) are not needed any more
  if (watch.stopped()) return Annotate(watch.Finish(ran.status()), StrCat(f.file, ": "));
  if (!ran.ok() && f.check && ExceededWhileIterations(ran.status())) {
    return watch.Finish(LoopsDidNotFinish(f, **program, args, *client, run_options, ran.status()));
  }
  // A run a peer process's failure stopped (under mpirun) ends with that failure (RunWatch).
  if (!ran.ok()) return Annotate(watch.Finish(ran.status()), StrCat(f.file, ": "));
  if (outputs_elsewhere) return OkStatus();
  const size_t num_outputs = (*program)->output_shapes().size();
  RunOutputs result;
  result.device = std::move(ran->outputs);
  result.memory = std::move(ran->memory);
  result.global.resize(num_outputs);
  // The global copies only for what prints or saves values.
  if (f.print || !f.save_dir.empty()) {
    for (size_t i = 0; i < num_outputs; ++i) {
      if ((*program)->OutputHasPerDeviceValues(i)) continue;
      StatusOr<Array> global = (*program)->AssembleOutput(i, result.device);
      if (!global.ok()) return Annotate(global.status(), StrCat(f.file, ": "));
      result.global[i] = std::move(*global);
    }
  }
  bool all_global = true;
  for (size_t i = 0; i < num_outputs; ++i) all_global = all_global && !(*program)->OutputHasPerDeviceValues(i);
  if (all_global && (f.print || !f.save_dir.empty())) {
    std::vector<Array> outputs;
    for (std::optional<Array>& g : result.global) outputs.push_back(std::move(*g));
    Status written = WriteOutputs(f, outputs);
    for (size_t i = 0; i < num_outputs; ++i) result.global[i] = std::move(outputs[i]);
    XS_RETURN_IF_ERROR(written);
  } else {
    std::vector<FileToSave> files;
    for (size_t i = 0; i < num_outputs; ++i) {
      if ((*program)->OutputHasPerDeviceValues(i)) {
        WritePerDeviceOutput(f, result.device, i, (*program)->output_shardings()[i], files);
        continue;
      }
      std::cout << "out" << i << ": " << (*program)->output_shapes()[i].ToString(false) << "\n";
      if (!result.global[i]) continue;
      if (f.print) std::cout << result.global[i]->ToString() << "\n";
      if (!f.save_dir.empty()) {
        files.push_back({(std::filesystem::path(f.save_dir) / StrCat("out", i, ".npy")).string(), &*result.global[i]});
      }
    }
    XS_RETURN_IF_ERROR(SaveFiles(files));
  }
  if (f.memory) std::cout << FormatSpmdMemory(result.memory);
  if (!f.check) return OkStatus();
  // The devices' pieces of the assembled outputs are not compared: drop them before the
  // reference run.
  for (std::vector<Array>& device : result.device) {
    for (size_t i = 0; i < device.size() && i < num_outputs; ++i) {
      if (result.global[i]) device[i] = Array();
    }
  }
  return watch.Finish(Check(f, **program, args, result, *client, run_options));
}

}  // namespace xs::tools
