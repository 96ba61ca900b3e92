// The CLI driver: builds the CLI11 app, dispatches to the chosen subcommand, turns every error
// (bad flags, bad input, failed commands) into one clear line on stderr and exit code 1.
#include "xshard/tools/cli.h"
#include "xshard/tools/cli_mpi.h"
#include "xshard/tools/run_flags.h"
#include "xshard/tools/run_watch.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <filesystem>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <new>
#include <sstream>
#include <system_error>

#include "xshard/core/allocation_failure.h"
#include "xshard/core/npy.h"
#include "xshard/exec/executable_trace.h"
#include "xshard/ir/verifier.h"
#include "xshard/jit/compile_pipeline.h"
#include "xshard/jit/host_memory.h"
#include "xshard/text/parser.h"

namespace xs {
}  // namespace xs

namespace xs::tools {

StatusOr<std::vector<int64_t>> ParseIntList(std::string_view text, std::string_view flag) {
  std::vector<int64_t> out;
  std::string_view body = StripWhitespace(text);
  if (body.empty()) return out;
  for (std::string_view piece : StrSplit(body, ',')) {
    int64_t v = 0;
    if (!ParseInt64(StripWhitespace(piece), &v)) {
      return InvalidArgument(flag, ": '", piece, "' is not an integer in '", text,
                             "'; write comma-separated integers like 4,16");
    }
    out.push_back(v);
  }
  return out;
}

namespace {

// --to-output: open (the default, as under JAX's jit) or closed; true / false are accepted as
// the older spellings of the same.
StatusOr<std::optional<bool>> ParseOutputFlag(const std::string& text) {
  if (text.empty()) return std::optional<bool>();
  if (text == "open" || text == "true") return std::optional<bool>(true);
  if (text == "closed" || text == "false") return std::optional<bool>(false);
  return InvalidArgument("--to-output: '", text,
                         "' is not open or closed (open: propagation picks the sharding of an unannotated "
                         "output, as under JAX's jit; closed: it is replicated)");
}

StatusOr<std::optional<bool>> ParseBoolFlag(const std::string& text, std::string_view flag) {
  if (text.empty()) return std::optional<bool>();
  if (text == "true") return std::optional<bool>(true);
  if (text == "false") return std::optional<bool>(false);
  return InvalidArgument(flag, ": '", text, "' is not true or false");
}

}  // namespace

void AddPropagationFlags(CLI::App* cmd, PropagationFlags& flags) {
  cmd->add_option("--to-parameters", flags.to_parameters,
                  "true/false: override allow_spmd_sharding_propagation_to_parameters");
  cmd->add_option("--to-output", flags.to_output,
                  "open (default, as under JAX's jit): propagation picks the sharding of an\n"
                  "unannotated output, whatever the module header says; closed: it is replicated.\n"
                  "An annotated output is never changed");
}

StatusOr<PropagationOptions> ToPropagationOptions(const PropagationFlags& flags) {
  PropagationOptions options;
  XS_ASSIGN_OR_RETURN(options.allow_to_parameters, ParseBoolFlag(flags.to_parameters, "--to-parameters"));
  XS_ASSIGN_OR_RETURN(options.allow_to_output, ParseOutputFlag(flags.to_output));
  return options;
}

void AddRunPropagationFlags(CLI::App* cmd, RunFlags& flags) {
  cmd->add_option("--to-parameters", flags.to_parameters,
                  "Global modules: true/false overrides allow_spmd_sharding_propagation_to_parameters");
  cmd->add_option("--to-output", flags.to_output,
                  "Global modules: open (default, as under JAX's jit) lets propagation pick the\n"
                  "sharding of an unannotated output; closed replicates it");
  AddMachineFlags(cmd, flags.machine);
}

StatusOr<PropagationOptions> RunPropagationOptions(const RunFlags& flags) {
  PropagationFlags p;
  p.to_parameters = flags.to_parameters;
  p.to_output = flags.to_output;
  return ToPropagationOptions(p);
}

void AddMachineFlags(CLI::App* cmd, spmd::MachineModel& machine) {
  const spmd::MachineModel d;
  cmd->add_option("--link-gbps", machine.link_gbps,
                  StrCat("Cost model: GB/s each device receives in a collective (default ", d.link_gbps, ")"))
      ->check(PositiveFiniteCheck());
  cmd->add_option("--collective-latency-us", machine.collective_latency_us,
                  StrCat("Cost model: fixed cost of one collective in us (default ", d.collective_latency_us,
                         "); a collective-permute costs ", d.permute_share, " of it (one peer to wait on)"))
      ->check(FiniteNonNegativeCheck());
  cmd->add_option("--device-gflops", machine.device_gflops,
                  StrCat("Cost model: GFLOP/s of one device (default ", d.device_gflops,
                         "); plans are scored by\nestimated time: bytes / link + latency per collective + "
                         "FLOPs / device"))
      ->check(PositiveFiniteCheck());
}

void AddDumpFlags(CLI::App* cmd, DumpFlags& flags) {
  std::string passes;
  for (const std::string& name : CompilePassNames()) StrAppend(&passes, passes.empty() ? "" : ", ", name);
  cmd->add_option("--dump-after", flags.after,
                  StrCat("Print the module to stderr after this pass (", passes, ");\nrepeatable"));
  cmd->add_flag("--dump-after-each", flags.each, "Print the module to stderr after every pass");
  cmd->add_option("--dump-dir", flags.dir,
                  "Write the dumps to DIR/<NN>-<pass>.hlo instead of stderr (DIR must exist)")
      ->check(NonEmptyPathCheck());
}

DumpOptions ToDumpOptions(const DumpFlags& flags) {
  DumpOptions options;
  options.after = flags.after;
  options.after_each = flags.each;
  options.directory = flags.dir;
  return options;
}

CLI::Validator DeviceCountCheck() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        int64_t v = 0;
        if (!ParseInt64(text, &v) || v < 1 || v > kMaxDevices) {
          return StrCat("'", text, "' is not a device count: give a whole number from 1 to ", kMaxDevices);
        }
        return "";
      },
      StrCat("1..", kMaxDevices));
}

CLI::Validator NonNegativeIntegerCheck() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        int64_t v = 0;
        if (!ParseInt64(text, &v) || v < 0) return "'" + text + "' is not a whole number >= 0";
        return "";
      },
      ">=0");
}

CLI::Validator FiniteNonNegativeCheck() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double v = 0;
        if (!ParseDouble(text, &v) || !std::isfinite(v) || v < 0) {
          return "'" + text + "' is not a finite number >= 0";
        }
        return "";
      },
      ">=0");
}

CLI::Validator IntegerRangeCheck(int64_t lo, int64_t hi, std::string meaning) {
  if (meaning.empty()) meaning = StrCat("a whole number from ", lo, " to ", hi);
  return CLI::Validator(
      [lo, hi, meaning](std::string& text) -> std::string {
        int64_t v = 0;
        if (!ParseInt64(text, &v) || v < lo || v > hi) return "'" + text + "' is not " + meaning;
        return "";
      },
      StrCat(lo, "..", hi));
}

CLI::Validator FiniteRangeCheck(double lo, double hi, std::string range) {
  return CLI::Validator(
      [lo, hi, range](std::string& text) -> std::string {
        double v = 0;
        if (!ParseDouble(text, &v) || !std::isfinite(v) || v < lo || v > hi) {
          return "'" + text + "' is not a finite number from " + range;
        }
        return "";
      },
      range);
}

CLI::Validator NonEmptyPathCheck() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (text.empty()) return "the path is empty; give a file or directory name (or leave the flag out)";
        return "";
      },
      "PATH");
}

CLI::Validator PositiveSecondsCheck() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double v = 0;
        if (!ParseDouble(text, &v) || !std::isfinite(v) || v <= 0) {
          return "'" + text + "' is not a number of seconds > 0";
        }
        return "";
      },
      ">0");
}

void AddTimeoutFlag(CLI::App* cmd, std::optional<double>& seconds) {
  cmd->add_option("--timeout", seconds,
                  "Stop every device after this many seconds and fail, printing where each one was\n"
                  "(Ctrl-C does the same with exit 130; default: no limit)")
      ->check(PositiveSecondsCheck());
}

void AddTraceFlag(CLI::App* cmd, std::string& path) {
  cmd->add_option("--trace", path,
                  "Write a Chrome trace (opens in Perfetto) to this file at exit: one track per\n"
                  "device with every step, collectives with their bytes and groups, asynchronous\n"
                  "ones from start to done (under mpirun: FILE.process<r>.json per process;\n"
                  "scripts/merge_traces.py FILE joins them)")
      ->check(NonEmptyPathCheck());
}

Status StartTrace(const std::string& given) {
  if (given.empty()) return OkStatus();
  // Under mpirun each process writes its own devices' tracks: FILE.process<r>.json.
  std::string path = given;
  if (CliUsesMpi()) {
    const size_t dot = given.rfind(".json");
    path = StrCat(dot == std::string::npos ? given : given.substr(0, dot), ".process",
                  CliProcessRank(), ".json");
  }
  // The file is written when the command ends, through a temporary file beside it: check now
  // that one can be made there (nothing is created at `path` itself).
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) {
    return InvalidArgument("--trace: cannot write '", path, "': it is a directory (give a file name)");
  }
  const bool in_place = exists && !S_ISREG(st.st_mode);  // /dev/null, /dev/stdout: written as they are
  const std::string probe = in_place ? path : StrCat(path, ".tmp.", ::getpid());
  const int fd = ::open(probe.c_str(), in_place ? O_WRONLY : O_WRONLY | O_CREAT | O_TRUNC, 0666);
  if (fd < 0) {
    return InvalidArgument("--trace: cannot write '", path, "': ", std::strerror(errno),
                           " (give a file in a writable directory)");
  }
  ::close(fd);
  if (!in_place) ::unlink(probe.c_str());
  // Read when the executor's handler table is first filled (executable_trace.cc), which happens
  // at the first compile, after this.
  ::setenv("XSHARD_TRACE", path.c_str(), 1);
  return OkStatus();
}

CLI::Validator PositiveFiniteCheck() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double v = 0;
        if (!ParseDouble(text, &v) || !std::isfinite(v) || v <= 0) {
          return "'" + text + "' is not a finite number > 0";
        }
        return "";
      },
      ">0");
}

// The most bytes read from a device or pipe (no file size to check first).
constexpr int64_t kMaxStreamBytes = int64_t{1} << 30;

StatusOr<std::string> ReadFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return InvalidArgument("'", path, "' is a directory, not a file; give the path of an HLO text or .npy file");
  }
  // Never blocks in open (a named pipe nobody writes to is an error after a few seconds).
  StatusOr<int> opened = OpenInputFile(path);
  if (!opened.ok() && opened.status().code() == StatusCode::kNotFound) {
    return NotFound(opened.status().message(), "; check the path (relative paths start at the current directory)");
  }
  XS_RETURN_IF_ERROR(opened.status());
  const int fd = *opened;
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  // Bounded: a file larger than the memory this process may use fails here, not in the parser.
  // A regular file is read straight into one string of its size (no second copy).
  struct stat st {};
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if (regular) {
    XS_RETURN_IF_ERROR(CheckHostBytes(static_cast<int64_t>(st.st_size), StrCat("reading '", path, "'")));
  }
  // A device or pipe has no size: read up to 1 GiB (less when the memory this process may use is
  // less), so an endless one (/dev/zero, `yes |`) fails with a message instead of filling memory.
  int64_t cap = kMaxStreamBytes;
  if (!regular) {
    XS_ASSIGN_OR_RETURN(std::optional<int64_t> limit, HostMemoryLimit());
    cap = std::min<int64_t>(kMaxStreamBytes, limit.value_or(kMaxStreamBytes));
  }
  std::string text;
  try {
    if (regular) text.reserve(static_cast<size_t>(st.st_size));
    char chunk[1 << 16];
    for (;;) {
      const ssize_t n = ::read(fd, chunk, sizeof(chunk));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Unavailable("error reading '", path, "': ", std::strerror(errno));
      if (n == 0) break;
      text.append(chunk, static_cast<size_t>(n));
      if (!regular && static_cast<int64_t>(text.size()) > cap) {
        return ResourceExhausted("reading '", path, "' stopped after ", cap >> 20, " MiB",
                                 ": it is a device or pipe with more data than that (one that never "
                                 "ends?); give an HLO text file");
      }
    }
  } catch (const std::bad_alloc&) {
    return ResourceExhausted("reading '", path, "' needs more host memory than is available");
  }
  return text;
}

std::string FirstLine(std::string_view message) {
  return std::string(message.substr(0, message.find('\n')));
}

StatusOr<std::unique_ptr<Module>> LoadModule(const std::string& file, bool verify) {
  XS_ASSIGN_OR_RETURN(std::string text, ReadFile(file));
  StatusOr<std::unique_ptr<Module>> module = ParseHloModule(text, file);
  if (!module.ok()) return InvalidArgument(FirstLine(module.status().message()));
  if (verify) {
    Status verified = Verify(**module);
    if (!verified.ok()) return Annotate(verified, StrCat(file, ": "));
  }
  return module;
}

int RunCli(int argc, char** argv) {
  CLI::App app{
      "xshard: name a device mesh, say how arrays are split over it, and see, partition and run\n"
      "tensor programs (HLO) on N devices.\n"};
  app.name("xshard");
  app.require_subcommand(1);
  app.set_version_flag("--version", "xshard 0.1.0");
  CommandList commands;
  AddShardingCommands(app, commands);
  AddHloCommands(app, commands);
  AddPropagateCommand(app, commands);
  AddPartitionCommand(app, commands);
  AddBenchCommand(app, commands);
  AddDemoCommand(app, commands);
  AddNumericsCommand(app, commands);
  AddAutoshardCommand(app, commands);
  std::vector<std::string> names;
  for (const Command& c : commands) names.push_back(c.app->get_name());
  if (argc > 1 && argv[1][0] != '-' &&
      std::find(names.begin(), names.end(), argv[1]) == names.end()) {
    std::cerr << "xshard: error: unknown command '" << argv[1] << "'; commands: "
              << StrJoin(names, ", ") << "\nRun 'xshard --help' for usage.\n";
    return 1;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    std::cout << app.help("", CLI::AppFormatMode::All);
    return 0;
  } catch (const CLI::CallForVersion& e) {
    std::cout << e.what() << "\n";
    return 0;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::string which;
    for (const CLI::App* sub : app.get_subcommands()) which = " " + sub->get_name();
    std::cerr << "xshard: error: " << e.what() << "\nRun 'xshard" << which
              << " --help' for usage.\n";
    return 1;
  }
  SilenceOtherRanks();
  for (const Command& c : commands) {
    if (!c.app->parsed()) continue;
    Status status;
    try {
      status = CheckCliPlatform(c.app);
      if (status.ok()) status = c.run();
    } catch (const AllocationFailure& e) {  // an Array the up-front checks missed
      status = ResourceExhausted(e.what());
    } catch (const std::bad_alloc&) {  // any other allocation (parsing, planning) under a memory limit
      status = ResourceExhausted("ran out of host memory (std::bad_alloc): the input needs more than this process "
                                 "may use (ulimit -v, cgroup limits); give a smaller input");    } catch (const std::system_error& e) {  // a device thread that could not be started
      status = ResourceExhausted("could not start a thread (", e.what(), "): raise the process's limits "
                                 "(ulimit -v, ulimit -u, a cgroup's pids limit) or use fewer --devices");
    }
    if (std::getenv("XSHARD_TRACE") != nullptr) {
      const Status traced = WriteExecutorTrace();
      if (status.ok()) status = traced;
    }
    // Output that could not be written (a full disk, /dev/full) is an error, not a silent loss.
    errno = 0;
    std::cout.flush();
    int write_error = errno;
    if (std::fflush(stdout) != 0 && errno != 0) write_error = errno;
    if (std::ferror(stdout) || std::cout.fail()) {
      const std::string reason = write_error != 0 ? std::strerror(write_error) : "the output was cut short";
      std::clearerr(stdout);
      if (status.ok()) status = Unavailable("writing to stdout failed: ", reason, "; the output is incomplete");
    }
    if (status.ok()) EndMpi(true);
    if (!status.ok()) {
      const std::string process = CliUsesMpi() ? StrCat(" (process ", CliProcessRank(), ")") : "";
      // One write, so that the lines of several mpirun processes sharing a stderr never interleave.
      const std::string line =
          StrCat("xshard ", c.app->get_name(), process, ": error: ", status.message(), "\n");
      std::fwrite(line.data(), 1, line.size(), stderr);
      std::fflush(stderr);
      EndMpi(false);
      // A run stopped by Ctrl-C / SIGTERM exits as a shell reports a SIGINT kill.
      return status.code() == StatusCode::kCancelled ? StopExitCode() : 1;
    }
    return 0;
  }
  return 0;
}

}  // namespace xs::tools
