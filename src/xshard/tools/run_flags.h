// Flags of `xshard run` and its three modes: one device (cmd_hlo.cc), an already partitioned SPMD
// module on N devices (cmd_hlo.cc) and a global module with shardings, partitioned first and run
// with global inputs and outputs (cmd_run_sharded.cc).
#ifndef XSHARD_TOOLS_RUN_FLAGS_H_
#define XSHARD_TOOLS_RUN_FLAGS_H_

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/core/array.h"
#include "xshard/ir/module.h"
#include "xshard/exec/executable.h"
#include "xshard/spmd/cost_model.h"
#include "xshard/exec/run_monitor.h"

namespace xs::tools {

struct RunFlags {
  std::string file;
  std::vector<std::string> args;
  std::optional<uint64_t> random_seed;
  std::string save_dir;
  bool print = false;
  int blas_threads = 0;
  int64_t max_while_iterations = -1;
  // Multi-device runs: --devices N, --args-dir DIR, --memory.
  std::optional<int64_t> devices;
  std::string args_dir;
  bool memory = false;
  // Global modules: --check [--atol X --rtol Y], --report, --spmd (run as already partitioned),
  // --windowed-einsum-threshold BYTES, --async-collectives.
  bool check = false;
  std::optional<double> atol;
  std::optional<double> rtol;
  bool report = false;
  bool spmd = false;
  int64_t windowed_einsum_threshold = -1;
  bool async_collectives = false;
  // --to-parameters ("true" / "false"; empty: the module's own setting) and --to-output
  // ("open" / "closed"; empty: open), as in `xshard propagate` and `partition`.
  std::string to_parameters, to_output;
  // --link-gbps, --collective-latency-us, --device-gflops: the partitioner's cost model.
  spmd::MachineModel machine;
  // --timeout SECONDS: stop every device and fail (exit 1) naming where each was; nullopt: none.
  std::optional<double> timeout;
  // --trace FILE.json: the executor's Chrome trace of every device (cli.h's AddTraceFlag).
  std::string trace;
};

// Global arguments: --random-args SEED, or --args with one .npy per entry parameter leaf of the
// shapes `want` (errors name the file, its shape and the parameter's).
StatusOr<std::vector<Array>> LoadArguments(const RunFlags& flags, const std::vector<Shape>& want,
                                           std::string_view entry_name);
// One output file to save: where, and what (not owned).
struct FileToSave {
  std::string path;
  const Array* array = nullptr;
};
// Saves `files` in order, creating their directories, each through a temporary file renamed
// when complete (WriteNpy). SIGINT / SIGTERM while saving stop it at once: Cancelled, one line
// naming the files not saved (the CLI exits 130 / 143); other errors name their file.
Status SaveFiles(const std::vector<FileToSave>& files);
// The options of a one-device run: --blas-threads (default: every core), --max-while-iterations.
// With `monitor`, the run reports to it and stops when it is stopped (run_monitor.h).
ExecuteOptions OneDeviceOptions(const RunFlags& flags, RunMonitor* monitor = nullptr);
// Saves outputs as --save DIR/out<i>.npy and prints their shapes, or their values with --print.
Status WriteOutputs(const RunFlags& flags, const std::vector<Array>& outputs);

// `run` on a global module with shardings: partition for N devices (--devices, else
// num_partitions, else the annotations' device count), shard the global inputs (--args: one .npy
// per parameter leaf, or --random-args), run, gather the global outputs (--print, --save
// DIR/out<i>.npy) and with --check compare them with a one-device run of the global module.
Status RunSharded(const RunFlags& flags, const Module& module);

}  // namespace xs::tools

#endif  // XSHARD_TOOLS_RUN_FLAGS_H_
