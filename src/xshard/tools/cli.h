// The xshard CLI: subcommands register here; each one parses its flags with CLI11 and runs a
// function returning Status. Any error prints one line "xshard: error: ..." and exits 1.
#ifndef XSHARD_TOOLS_CLI_H_
#define XSHARD_TOOLS_CLI_H_

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "CLI/CLI.hpp"
#include "xshard/base/limits.h"
#include "xshard/base/status.h"
#include "xshard/ir/module.h"
#include "xshard/jit/annotations.h"  // Retile, AnnotatedDevices (used by the commands)
#include "xshard/passes/pipeline.h"
#include "xshard/propagation/propagation.h"
#include "xshard/sharding/hlo_sharding.h"
#include "xshard/spmd/cost_model.h"

namespace xs::tools {

// A registered subcommand: `run` is called when the user chose `app`.
struct Command {
  CLI::App* app = nullptr;
  std::function<Status()> run;
};
using CommandList = std::vector<Command>;

// Subcommand registration, one function per cmd_*.cc file.
void AddShardingCommands(CLI::App& root, CommandList& commands);  // sharding, visualize
void AddDemoCommand(CLI::App& root, CommandList& commands);       // demo
void AddHloCommands(CLI::App& root, CommandList& commands);       // fmt, run
void AddBenchCommand(CLI::App& root, CommandList& commands);      // bench
// `bench run` (cmd_bench_run.cc): added under `bench`, whose command calls the returned run.
Command AddBenchRunCommand(CLI::App& bench);
// `bench cmm` (cmd_bench_cmm.cc): the collective matmuls of seeds 003 and 004, added the same way.
Command AddBenchCmmCommand(CLI::App& bench);
// `bench calibrate` (cmd_bench_calibrate.cc): this machine's hardware profile, added the same way.
Command AddBenchCalibrateCommand(CLI::App& bench);
void AddPropagateCommand(CLI::App& root, CommandList& commands);  // propagate
void AddPartitionCommand(CLI::App& root, CommandList& commands);  // partition
void AddNumericsCommand(CLI::App& root, CommandList& commands);   // numerics
void AddAutoshardCommand(CLI::App& root, CommandList& commands);  // autoshard

// Propagation flags shared by `propagate` and `partition` (same names, same meaning):
// --to-parameters true|false, --to-output open|closed (default open, as under JAX's jit).
struct PropagationFlags {
  std::string to_parameters, to_output;  // "", "true", "false"
};
void AddPropagationFlags(CLI::App* cmd, PropagationFlags& flags);
// The options the flags ask for (num_devices left 0); errors name the flag and its value.
StatusOr<PropagationOptions> ToPropagationOptions(const PropagationFlags& flags);
// The same two flags on `run` and `bench run` (global modules), kept in RunFlags, with the
// machine flags below.
struct RunFlags;
void AddRunPropagationFlags(CLI::App* cmd, RunFlags& flags);
StatusOr<PropagationOptions> RunPropagationOptions(const RunFlags& flags);

// The partitioner's cost model (partition, run, bench run): --link-gbps, --collective-latency-us,
// --device-gflops.
void AddMachineFlags(CLI::App* cmd, spmd::MachineModel& machine);

// Dump flags of the compiler pipeline: --dump-after PASS (repeatable), --dump-after-each,
// --dump-dir DIR (files instead of stderr).
struct DumpFlags {
  std::vector<std::string> after;
  bool each = false;
  std::string dir;
};
void AddDumpFlags(CLI::App* cmd, DumpFlags& flags);
DumpOptions ToDumpOptions(const DumpFlags& flags);

// Runs the CLI; returns the process exit code (0 ok, 1 any error).
int RunCli(int argc, char** argv);

// Several processes (cli_mpi.cc). Under mpirun (mpi::LaunchedByMpirun()) the commands that run
// devices (run, bench collectives / run / cmm) make an MPI client: --devices N spread over the
// processes, --devices-per-process L (default N / processes), --collective-timeout SECONDS (how
// long any process waits for the others; default 30).
struct MpiFlags {
  int64_t devices_per_process = 0;
  double collective_timeout_s = 30;
};
MpiFlags& GlobalMpiFlags();
void AddMpiFlags(CLI::App* cmd);
// Whether this CLI process runs as one of several MPI processes.
bool CliUsesMpi();

// --platform cpu|cuda (cli_platform.cc) on the commands that run devices (run, bench run /
// collectives / cmm, demo): where the devices live; default $XSHARD_PLATFORM, else cpu. RunCli
// checks the choice before such a command runs (CheckCliPlatform): an unknown name lists the
// valid ones; cuda without a usable GPU is one line naming what CUDA said, e.g.
// "--platform cuda: no usable GPU: cudaGetDeviceCount failed: ...", exit 1.
void AddPlatformFlag(CLI::App* cmd);
// OK for a command without --platform; else the chosen platform's check (above).
Status CheckCliPlatform(const CLI::App* cmd);
// One-device runs call exec's Executable on the host: OK on cpu, an Unimplemented error naming
// `what` ("a one-device run") on another platform.
Status CliHostOnly(std::string_view what);
// True when the devices run in host memory (--platform cpu, or a name that fails to resolve,
// which the command reports itself): then the host-memory checks (jit/host_memory.h) count their
// buffers. On cuda the buffers are device memory, which loading the program checks (cudaMalloc's
// out-of-memory error names the GPU, the bytes asked and what is free).
bool CliDevicesOnHost();


// Range checks for numeric flags, applied with `->check(...)`: CLI11 then rejects a bad value with
// a message naming the flag, the value and the range, and exit 1.
// Device counts: whole numbers from 1 to kMaxDevices (base/limits.h: the Client's, ShardedProgram's
// and the sharding parser's limit too).
CLI::Validator DeviceCountCheck();
// Seeds and counts that cannot be negative: whole numbers >= 0.
CLI::Validator NonNegativeIntegerCheck();
// Tolerances: finite numbers >= 0 (rejects nan and inf).
CLI::Validator FiniteNonNegativeCheck();
// A finite number > 0.
CLI::Validator PositiveFiniteCheck();
// Whole numbers from `lo` to `hi`; the message names the range, or says `meaning` (e.g. "-1 (no
// limit) or a whole number >= 0") when given.
CLI::Validator IntegerRangeCheck(int64_t lo, int64_t hi, std::string meaning = "");
// Finite numbers from `lo` to `hi` (rejects nan and inf); `range` says them in the message, e.g.
// "0 to 1000000".
CLI::Validator FiniteRangeCheck(double lo, double hi, std::string range);
// The most --warmup / --iters / --iterations calls a benchmark accepts.
inline constexpr int64_t kMaxBenchCalls = 1000000;
// Paths (--save, --trace, --dump-dir): not empty, since writing nothing silently looks like
// success.
CLI::Validator NonEmptyPathCheck();
// Durations in seconds: finite numbers > 0.
CLI::Validator PositiveSecondsCheck();

// --timeout SECONDS on `run` and `bench run`: stop every device once that many seconds passed
// and fail naming where each was.
void AddTimeoutFlag(CLI::App* cmd, std::optional<double>& seconds);

// --trace FILE.json on `run` and `bench run`: a Chrome trace (Perfetto) of every device's steps,
// one track per device, collectives with their bytes and groups, asynchronous ones from start to
// done (exec/executable_trace.cc, the same as XSHARD_TRACE=FILE).
void AddTraceFlag(CLI::App* cmd, std::string& path);
// Turns the trace on for `path` before anything is compiled; an error names a file that cannot
// be written. An empty path does nothing.
Status StartTrace(const std::string& path);

// "4,16" -> {4, 16}; error names `flag` and the bad piece.
StatusOr<std::vector<int64_t>> ParseIntList(std::string_view text, std::string_view flag);
// Whole file as a string; error names the path and the reason.
StatusOr<std::string> ReadFile(const std::string& path);
// The first line of a message (parse errors add the source line and a caret below it).
std::string FirstLine(std::string_view message);
// Parses FILE (errors: the parser's first line, "file:line:col: error: ..."); with `verify`, also
// verifies it (errors prefixed with the file name).
StatusOr<std::unique_ptr<Module>> LoadModule(const std::string& file, bool verify = true);

}  // namespace xs::tools

#endif  // XSHARD_TOOLS_CLI_H_
