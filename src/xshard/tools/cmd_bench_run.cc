// `xshard bench run FILE`: the %timeit of a module. Inputs are placed on the devices once, the
// module is compiled once, warmed up, then only the per-device execution is timed (like JAX
// timing a jitted call on already-sharded arrays with block_until_ready).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <optional>
#include <random>
#include <sys/resource.h>
#include <string>
#include <vector>

#include "xshard/jit/host_memory.h"
#include "xshard/jit/sharded_program.h"
#include "xshard/runtime/client.h"
#include "xshard/runtime/device.h"
#include "xshard/runtime/device_assignment.h"
#include "xshard/exec/executable.h"
#include "xshard/kernels/cpu_features.h"
#include "xshard/runtime/spmd_executor.h"
#include "xshard/runtime/spmd_executor_io.h"
#include "xshard/spmd/hardware_profile.h"
#include "xshard/spmd/step_prediction.h"
#include "xshard/tools/cli.h"
#include "xshard/tools/cli_mpi.h"
#include "xshard/tools/latency_report.h"
#include "xshard/tools/run_flags.h"
#include "xshard/tools/run_watch.h"

namespace xs::tools {
namespace {

struct BenchRunFlags {
  RunFlags run;  // file, --args, --random-args, --args-dir, --devices, --blas-threads
  int64_t warmup = 3;
  std::optional<int64_t> iters;  // nullopt: adaptive
  bool samples = false;
  bool predict = false;
  std::string hardware;  // --hardware FILE; empty: this machine's profile
  std::optional<spmd::HardwareProfile> profile;  // loaded before anything runs, with --predict
};

// Adaptive iteration count: at least kMinIters and kMinSeconds of timed runs, or, for a slow
// module, kFewIters once kMaxSeconds have passed.
constexpr int64_t kMinIters = 10;
constexpr double kMinSeconds = 1.0;
constexpr int64_t kFewIters = 3;
constexpr double kMaxSeconds = 10.0;
constexpr int64_t kMaxIters = 10000;

// One timed call of the module on inputs that are already in place.
using Call = std::function<Status()>;

// CPU seconds (user + system) this process has used so far, over all its threads.
double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
  return secs(u.ru_utime) + secs(u.ru_stime);
}

struct Timings {
  std::vector<double> ms;  // wall time of each timed call
  double cpu_ms = 0;       // CPU time of all threads over the timed calls (less load-dependent)
  // Device time per timed call where the client's kind measures it (cuda: the busiest device's
  // program time, from the GPU's events); -1 otherwise.
  double device_ms = -1;
};

// `client`: the SPMD runs' client (null for one device); under mpirun rank 0's clock decides when
// an adaptive loop ends, so that every process makes the same number of calls.
StatusOr<Timings> Time(const BenchRunFlags& f, const Call& call, Client* client) {
  for (int64_t i = 0; i < f.warmup; ++i) XS_RETURN_IF_ERROR(call());
  // Device kinds that time their programs (cuda): only the timed calls count.
  if (client != nullptr) (void)client->device_kind().TakeDeviceMicros();
  Timings out;
  std::vector<double>& ms = out.ms;
  const double cpu_start = ProcessCpuSeconds();
  double total = 0;
  for (int64_t i = 0;; ++i) {
    if (f.iters) {
      if (i >= *f.iters) break;
    } else {
      bool done = (i >= kMinIters && total >= kMinSeconds) ||
                  (i >= kFewIters && total >= kMaxSeconds) || i >= kMaxIters;
      if (client != nullptr) {
        XS_ASSIGN_OR_RETURN(done, AgreeWithRankZero(*client, done));
      }
      if (done) break;
    }
    const auto start = std::chrono::steady_clock::now();
    XS_RETURN_IF_ERROR(call());
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    total += s;
    ms.push_back(s * 1e3);
  }
  out.cpu_ms = (ProcessCpuSeconds() - cpu_start) * 1e3;
  if (client != nullptr && !ms.empty()) {
    if (std::optional<double> us = client->device_kind().TakeDeviceMicros()) {
      out.device_ms = *us * 1e-3 / static_cast<double>(ms.size());
    }
  }
  return out;
}

// Time under a RunWatch: Ctrl-C and --timeout stop the calls and say where the devices were.
StatusOr<Timings> Watched(const BenchRunFlags& f, RunMonitor& monitor, const Call& call,
                          Client* client = nullptr) {
  RunWatch watch(monitor, "bench run", f.run.timeout, std::chrono::milliseconds(0));
  StatusOr<Timings> timings = Time(f, call, client);
  if (watch.stopped()) return Annotate(watch.Finish(timings.status()), StrCat(f.run.file, ": "));
  return timings;
}

// With --predict: the profile's predicted step for `program` on `n` devices, the largest items,
// and predicted / measured.
void PrintPrediction(const BenchRunFlags& f, const Module& program, int64_t n, const LatencyStats& stats) {
  const double measured_ms = stats.median;
  const spmd::StepPrediction p = spmd::PredictStep(program, *f.profile, n);
  std::cout << "\nhardware: " << f.profile->name << " (" << f.profile->source << ")\n" << spmd::FormatPrediction(p);
  // The fastest call too: on a machine shared with other work it is the closest to an idle one.
  char line[200];
  std::snprintf(line, sizeof line,
                "predicted/measured: %.2f (predicted %.4f ms, measured median %.4f ms; fastest %.4f ms, ratio %.2f)\n",
                measured_ms > 0 ? p.total_s * 1e3 / measured_ms : 0.0, p.total_s * 1e3, measured_ms, stats.min,
                stats.min > 0 ? p.total_s * 1e3 / stats.min : 0.0);
  std::cout << line;
}

// Seed 004's latency report (mean, median, stdev, min, max, p95, p99 in ms), the prediction for
// `program` on `n` devices with --predict, then median_ms=.
void PrintStats(const BenchRunFlags& f, const std::string& what, const Timings& timings, const Module& program,
                int64_t n) {
  const std::vector<double>& ms = timings.ms;
  const LatencyStats stats = ComputeLatencyStats(ms);
  std::cout << f.run.file << ": " << what << ", " << f.warmup << " warmup, " << ms.size()
            << " timed iterations\n"
            << kernels::CpuAndGemmLine() << "\n\n";
  PrintLatencyTable(std::cout, stats);
  if (f.samples) {
    std::cout << "samples_ms=";
    for (size_t i = 0; i < ms.size(); ++i) std::printf("%s%.4f", i ? "," : "", ms[i]);
    std::fflush(stdout);
    std::cout << "\n";
    std::printf("cpu_ms_per_call=%.4f\n", timings.cpu_ms / static_cast<double>(ms.size()));
    std::fflush(stdout);
  }
  if (timings.device_ms >= 0) {
    std::printf("device_ms_per_call=%.4f\n", timings.device_ms);
    std::fflush(stdout);
  }
  if (f.profile) PrintPrediction(f, program, n, stats);
  char last[64];
  std::snprintf(last, sizeof last, "median_ms=%.4f\n", stats.median);
  std::cout << last;
}

StatusOr<std::unique_ptr<Client>> MakeClient(int64_t n) {
  return CliCreateClient(n);
}

SpmdRunOptions SpmdOptions(const RunFlags& f) {
  SpmdRunOptions options;
  options.blas_threads = f.blas_threads;
  // The timed runs' outputs are dropped: under mpirun only rank 0 receives them (as `run` does).
  options.outputs_to_process = 0;
  return options;
}

// A global module with shardings: partition once, shard the global inputs once, time RunPlaced.
Status BenchGlobal(const BenchRunFlags& f, const Module& module) {
  const int64_t partitions = module.config().num_partitions;
  int64_t n = partitions > 1 ? partitions : AnnotatedDevices(module);
  if (f.run.devices) {
    if (partitions > 1 && *f.run.devices != partitions) {
      return InvalidArgument(f.run.file, ": the module was lowered for num_partitions=", partitions,
                             " but --devices ", *f.run.devices, " was given; they must agree");
    }
    n = *f.run.devices;
  }
  if (!f.run.args_dir.empty()) {
    return InvalidArgument("--args-dir gives each device's inputs of an SPMD module, but ", f.run.file,
                           " is a global module with shardings: pass --args a.npy ... or --random-args SEED");
  }
  CompileOptions compile;
  XS_ASSIGN_OR_RETURN(compile.partition.propagation, RunPropagationOptions(f.run));
  compile.partition.machine = f.run.machine;
  StatusOr<std::unique_ptr<ShardedProgram>> program = ShardedProgram::Compile(module, n, compile);
  if (!program.ok()) return Annotate(program.status(), StrCat(f.run.file, ": "));
  XS_ASSIGN_OR_RETURN(std::optional<int64_t> limit, HostMemoryLimit());
  if (limit && CliDevicesOnHost()) {
    XS_RETURN_IF_ERROR(Annotate(CheckHostMemory(**program, false, false, *limit), StrCat(f.run.file, ": ")));
  }
  XS_ASSIGN_OR_RETURN(std::vector<Array> args,
                      LoadArguments(f.run, (*program)->argument_shapes(), module.entry()->name()));
  XS_ASSIGN_OR_RETURN(std::vector<std::vector<Array>> shards, (*program)->ShardArguments(args));
  args.clear();
  XS_ASSIGN_OR_RETURN(std::unique_ptr<Client> client, MakeClient(n));
  SpmdRunOptions options = SpmdOptions(f.run);
  RunMonitor monitor(n);
  options.monitor = &monitor;
  XS_ASSIGN_OR_RETURN(Timings ms, Watched(f, monitor, [&]() -> Status {
                        StatusOr<SpmdResult> r = (*program)->RunPlaced(*client, shards, options);
                        return r.ok() ? OkStatus() : Annotate(r.status(), StrCat(f.run.file, ": "));
                      }, client.get()));
  PrintStats(f, StrCat("global module partitioned for ", n, " devices"), ms, (*program)->spmd_module(), n);
  return OkStatus();
}

// An SPMD module (already partitioned): each device's inputs from --args-dir or --random-args.
Status BenchSpmd(const BenchRunFlags& f, const Module& module) {
  const int64_t n = module.config().num_partitions * module.config().replica_count;
  if (f.run.devices && *f.run.devices != n) {
    return InvalidArgument(f.run.file, ": the SPMD module runs on ", n, " devices (num_partitions x replica_count) but "
                           "--devices ", *f.run.devices, " was given; they must agree");
  }
  if (!f.run.args.empty()) {
    return InvalidArgument("--args gives global inputs; ", f.run.file, " is an SPMD module (one program per device): "
                           "use --args-dir DIR (DIR/dev<d>/arg<i>.npy) or --random-args SEED");
  }
  if (CliDevicesOnHost()) XS_RETURN_IF_ERROR(Annotate(CheckModuleHostMemory(module, n), StrCat(f.run.file, ": ")));
  StatusOr<std::unique_ptr<SpmdExecutable>> spmd = SpmdExecutable::Create(module);
  if (!spmd.ok()) return Annotate(spmd.status(), StrCat(f.run.file, ": "));
  XS_ASSIGN_OR_RETURN(DeviceAssignment assignment,
                      DeviceAssignment::Default(module.config().replica_count, module.config().num_partitions, n));
  const std::vector<Shape>& shapes = (*spmd)->executable().argument_shapes();
  std::vector<std::vector<Array>> args(n);
  if (!f.run.args_dir.empty()) {
    XS_ASSIGN_OR_RETURN(args, ReadDeviceArguments(f.run.args_dir, assignment.LogicalDevices(), shapes));
  } else if (f.run.random_seed) {
    args = RandomDeviceArguments(*f.run.random_seed, n, shapes);
  } else if (!shapes.empty()) {
    return InvalidArgument("'", module.entry()->name(), "' takes ", shapes.size(), " argument(s) on each device; "
                           "pass --args-dir DIR (DIR/dev<d>/arg<i>.npy) or --random-args SEED");
  }
  XS_ASSIGN_OR_RETURN(std::unique_ptr<Client> client, MakeClient(n));
  SpmdRunOptions options = SpmdOptions(f.run);
  RunMonitor monitor(n);
  options.monitor = &monitor;
  XS_ASSIGN_OR_RETURN(Timings ms, Watched(f, monitor, [&]() -> Status {
                        StatusOr<SpmdResult> r = (*spmd)->Run(*client, args, options);
                        return r.ok() ? OkStatus() : Annotate(r.status(), StrCat(f.run.file, ": "));
                      }, client.get()));
  PrintStats(f, StrCat("SPMD module on ", n, " devices"), ms, module, n);
  return OkStatus();
}

// A one-device module.
Status BenchOneDevice(const BenchRunFlags& f, const Module& module) {
  if (f.run.devices && *f.run.devices != 1) {
    return InvalidArgument(f.run.file, ": the module is a one-device program (no shardings, no num_partitions) "
                           "but --devices ", *f.run.devices, " was given; drop --devices");
  }
  if (!f.run.args_dir.empty()) {
    return InvalidArgument("--args-dir applies to SPMD modules; ", f.run.file, " runs on one device: use --args");
  }
  XS_RETURN_IF_ERROR(Annotate(CheckModuleHostMemory(module, 1), StrCat(f.run.file, ": ")));
  if (!CliHostOnly("a one-device run").ok()) {
    // Off the host (--platform cuda): the module as a one-device SPMD program on a one-device
    // client of the platform, so it runs on the platform's device kind.
    StatusOr<std::unique_ptr<SpmdExecutable>> spmd = SpmdExecutable::Create(module);
    if (!spmd.ok()) return Annotate(spmd.status(), StrCat(f.run.file, ": "));
    std::vector<std::vector<Array>> args(1);
    XS_ASSIGN_OR_RETURN(args[0], LoadArguments(f.run, (*spmd)->executable().argument_shapes(),
                                               module.entry()->name()));
    XS_ASSIGN_OR_RETURN(std::unique_ptr<Client> client, MakeClient(1));
    SpmdRunOptions options = SpmdOptions(f.run);
    RunMonitor monitor(1);
    options.monitor = &monitor;
    XS_ASSIGN_OR_RETURN(Timings ms, Watched(f, monitor, [&]() -> Status {
                          StatusOr<SpmdResult> r = (*spmd)->Run(*client, args, options);
                          return r.ok() ? OkStatus() : Annotate(r.status(), StrCat(f.run.file, ": "));
                        }, client.get()));
    PrintStats(f, StrCat("one device (", client->device_kind().Describe(0), ")"), ms, module, 1);
    return OkStatus();
  }
  StatusOr<std::unique_ptr<Executable>> exe = Executable::Create(module);
  if (!exe.ok()) return Annotate(exe.status(), StrCat(f.run.file, ": "));
  XS_ASSIGN_OR_RETURN(std::vector<Array> args,
                      LoadArguments(f.run, (*exe)->argument_shapes(), module.entry()->name()));
  RunMonitor monitor(1);
  const ExecuteOptions options = OneDeviceOptions(f.run, &monitor);
  XS_ASSIGN_OR_RETURN(Timings ms, Watched(f, monitor, [&]() -> Status {
                        StatusOr<std::vector<Array>> r = (*exe)->Run(args, options);
                        return r.ok() ? OkStatus() : Annotate(r.status(), StrCat(f.run.file, ": "));
                      }));
  PrintStats(f, "one device", ms, module, 1);
  return OkStatus();
}

Status RunBenchRun(BenchRunFlags f) {
  if (!f.hardware.empty() && !f.predict) return InvalidArgument("--hardware FILE is the profile --predict uses; add --predict");
  if (f.predict) {
    if (f.hardware.empty()) {
      f.profile = spmd::ThisMachineProfile();
    } else {
      XS_ASSIGN_OR_RETURN(f.profile, spmd::LoadHardwareProfile(f.hardware));
    }
  }
  if (f.warmup < 0) return InvalidArgument("--warmup must be >= 0, got ", f.warmup);
  if (f.iters && *f.iters < 1) return InvalidArgument("--iters must be >= 1, got ", *f.iters, " (omit it to time adaptively)");
  if (f.run.devices && *f.run.devices < 1) return InvalidArgument("--devices must be at least 1, got ", *f.run.devices);
  if (f.run.blas_threads < 0) return InvalidArgument("--blas-threads must be >= 0, got ", f.run.blas_threads);
  if (!f.run.args.empty() && f.run.random_seed) return InvalidArgument("give either --args or --random-args, not both");
  if (!f.run.args_dir.empty() && f.run.random_seed) {
    return InvalidArgument("give either --args-dir or --random-args, not both");
  }
  XS_ASSIGN_OR_RETURN(std::unique_ptr<Module> module, LoadModule(f.run.file));
  XS_RETURN_IF_ERROR(StartTrace(f.run.trace));
  const ModuleConfig& config = module->config();
  if (NeedsPartitioning(*module)) return BenchGlobal(f, *module);
  if (config.num_partitions * config.replica_count > 1) return BenchSpmd(f, *module);
  return BenchOneDevice(f, *module);
}

}  // namespace

Command AddBenchRunCommand(CLI::App& bench) {
  auto flags = std::make_shared<BenchRunFlags>();
  CLI::App* r = bench.add_subcommand(
      "run",
      "Time a module like %timeit (or JAX timing a jitted call on sharded arrays): compile it\n"
      "once (a global module with shardings is partitioned for N devices), place the inputs on\n"
      "the devices once, run --warmup untimed calls, then time --iters calls of the per-device\n"
      "execution only. Prints mean, median, stdev, min, max, p95 and p99 in ms, and\n"
      "median_ms=<t> as the last line.");
  r->add_option("file", flags->run.file, "HLO text file")->required();
  r->add_option("--args", flags->run.args, "Global input .npy files, one per parameter leaf");
  r->add_option("--random-args", flags->run.random_seed, "Random inputs from this seed instead of --args")->check(NonNegativeIntegerCheck());
  r->add_option("--args-dir", flags->run.args_dir, "SPMD modules: DIR/dev<d>/arg<i>.npy per device");
  r->add_option("--devices", flags->run.devices,
                "Devices to partition a global module for (default: num_partitions, else the\n"
                "annotations' device count); SPMD modules: must equal num_partitions x replica_count")
      ->check(DeviceCountCheck());
  r->add_option("--warmup", flags->warmup, "Untimed calls first (default 3)")
      ->check(IntegerRangeCheck(0, kMaxBenchCalls));
  r->add_option("--iters", flags->iters,
                "Timed calls (default: adaptive, at least 10 calls and 1 s; a slow module stops at\n"
                "3 calls once 10 s have passed)")
      ->check(IntegerRangeCheck(1, kMaxBenchCalls));
  r->add_option("--blas-threads", flags->run.blas_threads, "GEMM threads per device, at most its share of the thread budget (default: cores or XSHARD_NUM_THREADS / devices)")
      ->check(IntegerRangeCheck(0, 1024));
  AddRunPropagationFlags(r, flags->run);
  AddTimeoutFlag(r, flags->run.timeout);
  AddMpiFlags(r);
  AddPlatformFlag(r);
  AddTraceFlag(r, flags->run.trace);
  r->add_flag("--samples", flags->samples,
              "Also print every timed call (samples_ms=t1,t2,...) and the process's CPU time per\n"
              "timed call, all threads (cpu_ms_per_call=)");
  r->add_flag("--predict", flags->predict,
              "Also print the step time a hardware profile predicts (compute, memory, communication,\n"
              "largest instructions) and predicted / measured, before median_ms=");
  r->add_option("--hardware", flags->hardware,
                "Profile for --predict: a file from `bench calibrate` or hardware/*.profile (default:\n"
                "this machine's calibrated profile, else built-in figures)")
      ->check(NonEmptyPathCheck());
  return {r, [flags] { return RunBenchRun(*flags); }};
}

}  // namespace xs::tools
