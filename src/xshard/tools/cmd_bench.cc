// `xshard bench collectives`: latency and NCCL-tests bandwidth of every collective and algorithm
// on N in-process devices (runtime/collective_bench.h does the timing; this file is the flags).
// `xshard bench run` (the %timeit of a module) is in cmd_bench_run.cc.
#include <cctype>
#include <iostream>

#include "xshard/runtime/collective_bench.h"
#include "xshard/runtime/device.h"
#include "xshard/jit/host_memory.h"
#include "xshard/tools/cli.h"
#include "xshard/tools/cli_mpi.h"

namespace xs::tools {
namespace {

struct BenchFlags {
  int64_t devices = 0;  // 0: DefaultDeviceCount()
  std::string bytes = "1M";
  std::string algorithm = "all";
  std::string ops = "all";
  int warmup = 3;
  int iterations = 20;
};

// "64", "64K", "8M", "1G" (binary multiples) -> bytes.
StatusOr<int64_t> ParseBytes(std::string_view text) {
  struct Suffix {
    char letter;
    int64_t scale;
  };
  static constexpr Suffix kSuffixes[] = {{'K', 1LL << 10}, {'M', 1LL << 20}, {'G', 1LL << 30}};
  std::string_view body = StripWhitespace(text);
  int64_t scale = 1;
  if (!body.empty()) {
    const char last = static_cast<char>(std::toupper(static_cast<unsigned char>(body.back())));
    for (const Suffix& s : kSuffixes) {
      if (last == s.letter) {
        scale = s.scale;
        body.remove_suffix(1);
      }
    }
  }
  int64_t n = 0;
  if (!ParseInt64(body, &n) || n < 1 || n > (int64_t{1} << 40) / scale) {
    return InvalidArgument("--bytes: '", text, "' is not a size; write a positive byte count "
                           "like 4096, 64K, 8M or 1G (comma-separated for several)");
  }
  return n * scale;
}

StatusOr<std::vector<CollectiveAlgorithm>> ParseAlgorithms(std::string_view text) {
  if (text == "all") {
    return std::vector<CollectiveAlgorithm>{CollectiveAlgorithm::kDirect, CollectiveAlgorithm::kRing,
                                            CollectiveAlgorithm::kRecursiveDoubling};
  }
  std::vector<CollectiveAlgorithm> out;
  for (std::string_view piece : StrSplit(text, ',')) {
    StatusOr<CollectiveAlgorithm> a = ParseCollectiveAlgorithm(StripWhitespace(piece));
    if (!a.ok()) return Annotate(a.status(), "--algorithm: ");
    out.push_back(*a);
  }
  return out;
}

constexpr CollectiveKind kKinds[] = {
    CollectiveKind::kAllGather,         CollectiveKind::kAllReduce,
    CollectiveKind::kReduceScatter,     CollectiveKind::kAllToAll,
    CollectiveKind::kCollectivePermute, CollectiveKind::kCollectiveBroadcast};

StatusOr<std::vector<CollectiveKind>> ParseOps(std::string_view text) {
  std::vector<CollectiveKind> out;
  std::vector<std::string> names;
  for (CollectiveKind k : kKinds) names.emplace_back(CollectiveKindName(k));
  if (text == "all") return std::vector<CollectiveKind>(std::begin(kKinds), std::end(kKinds));
  for (std::string_view piece : StrSplit(text, ',')) {
    piece = StripWhitespace(piece);
    bool found = false;
    for (CollectiveKind k : kKinds) {
      if (CollectiveKindName(k) == piece) {
        out.push_back(k);
        found = true;
      }
    }
    if (!found) {
      return InvalidArgument("--op: unknown collective '", piece, "'; choose from ",
                             StrJoin(names, ", "), " or all");
    }
  }
  return out;
}

Status RunBenchCollectives(const BenchFlags& f) {
  CollectiveBenchOptions options;
  if (f.devices != 0) {
    options.devices = f.devices;
  } else {
    XS_ASSIGN_OR_RETURN(options.devices, DefaultDeviceCount());
  }
  if (options.devices < 2) {
    return InvalidArgument("--devices ", options.devices, ": a collective needs at least 2 "
                           "devices");
  }
  if (f.warmup < 0 || f.iterations < 1) {
    return InvalidArgument("--warmup must be >= 0 and --iterations >= 1, got ", f.warmup, " and ",
                           f.iterations);
  }
  options.bytes.clear();
  for (std::string_view piece : StrSplit(f.bytes, ',')) {
    XS_ASSIGN_OR_RETURN(int64_t b, ParseBytes(piece));
    options.bytes.push_back(b);
    // Each device holds its operand and a result of up to `devices` operands (all-gather), and
    // the memcpy reference two more buffers.
    const __int128 need = static_cast<__int128>(b) * (options.devices * (options.devices + 1) + 2);
    XS_RETURN_IF_ERROR(CheckHostBytes(need > INT64_MAX ? INT64_MAX : static_cast<int64_t>(need),
                                      StrCat("bench collectives --bytes ", piece, " on ", options.devices, " devices")));
  }
  XS_ASSIGN_OR_RETURN(options.algorithms, ParseAlgorithms(f.algorithm));
  XS_ASSIGN_OR_RETURN(options.ops, ParseOps(f.ops));
  options.warmup = f.warmup;
  options.iterations = f.iterations;
  XS_ASSIGN_OR_RETURN(options.client, CliClientOptions(options.devices));
  XS_ASSIGN_OR_RETURN(CollectiveBenchResult result, RunCollectiveBench(options));
  std::cout << result.ToString();
  return OkStatus();
}

}  // namespace

void AddBenchCommand(CLI::App& root, CommandList& commands) {
  auto flags = std::make_shared<BenchFlags>();
  CLI::App* bench = root.add_subcommand("bench", "Micro-benchmarks of this machine's runtime.");
  bench->require_subcommand(1);
  CLI::App* c = bench->add_subcommand(
      "collectives",
      "Time every collective on N in-process devices: median and min latency per call, and\n"
      "bandwidth as NCCL-tests defines it (algbw = size / time; busbw = algbw x (n-1)/n for\n"
      "all-gather, reduce-scatter, all-to-all, x 2(n-1)/n for all-reduce, x 1 for broadcast and\n"
      "permute), next to a single-thread memcpy measured in the same process.");
  c->add_option("--devices", flags->devices, "Devices (default: $XSHARD_DEVICES or 8)")->check(DeviceCountCheck());
  AddMpiFlags(c);
  AddPlatformFlag(c);
  c->add_option("--bytes", flags->bytes,
                "Per-device operand size(s): 4096, 64K, 8M, 1G; comma-separated (default 1M)");
  c->add_option("--algorithm", flags->algorithm,
                "direct, ring, recursive-doubling (or rd), comma-separated, or all (default)");
  c->add_option("--op", flags->ops,
                "all-gather, all-reduce, reduce-scatter, all-to-all, collective-permute,\n"
                "collective-broadcast, comma-separated, or all (default)");
  c->add_option("--warmup", flags->warmup, "Untimed calls first (default 3)")
      ->check(IntegerRangeCheck(0, kMaxBenchCalls));
  c->add_option("--iterations", flags->iterations, "Timed calls (default 20)")
      ->check(IntegerRangeCheck(1, kMaxBenchCalls));
  const Command run = AddBenchRunCommand(*bench);
  const Command cmm = AddBenchCmmCommand(*bench);
  const Command calibrate = AddBenchCalibrateCommand(*bench);
  commands.push_back({bench, [flags, c, run, cmm, calibrate] {
                        if (c->parsed()) return RunBenchCollectives(*flags);
                        if (calibrate.app->parsed()) return calibrate.run();
                        return cmm.app->parsed() ? cmm.run() : run.run();
                      }});
}

}  // namespace xs::tools
