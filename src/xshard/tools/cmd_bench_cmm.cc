// `xshard bench cmm`: times seed 003's collective matmuls (and seed 004's variants) on a 2-D mesh
// of in-process devices, checks each against the single-device product, prints `bench run`'s
// latency report per combination, ranks them when several run, and says why the winner wins.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "xshard/cmm/cmm.h"
#include "xshard/kernels/dot.h"
#include "xshard/kernels/cpu_features.h"
#include "xshard/runtime/client.h"
#include "xshard/sharding/mesh.h"
#include "xshard/tools/cli.h"
#include "xshard/tools/cli_mpi.h"
#include "xshard/tools/latency_report.h"

namespace xs::tools {
namespace {

struct BenchCmmFlags {
  std::string algo = "all", variant = "os", mesh = "row=2,col=4", bshd = "4,256,48,64", mkn;
  std::string dtype = "f32", trace;
  int64_t iters = 5, warmup = 1, chunks = 8, block = 8, seed = 0;
};

// One combination's outcome.
struct Outcome {
  cmm::CmmSpec spec;
  double median_ms = 0, stdev_ms = 0, err = 0, cpu_ms_per_call = 0;
  cmm::CmmCost cost;
};

// Relative tolerance against the single-device product: the sharded sums add the same f32
// products in another order, so they differ by a few ulps of the largest partial sums.
constexpr double kRelTolerance = 1e-4;

StatusOr<std::vector<std::string>> Choices(const std::string& text, const char* flag,
                                           std::vector<std::string> all) {
  if (text == "all") return all;
  std::vector<std::string> out;
  for (std::string_view piece : StrSplit(text, ',')) out.emplace_back(piece);
  if (out.empty()) return InvalidArgument(flag, " is empty; give ", StrJoin(all, ", "), " or all");
  return out;
}

// "F.json" -> "F.wang_os.json" when several combinations write traces.
std::string TracePath(const BenchCmmFlags& f, const cmm::CmmSpec& spec, bool several) {
  if (f.trace.empty() || !several) return f.trace;
  const std::string tag = StrCat(cmm::AlgorithmName(spec.algo), "_", cmm::VariantName(spec.variant));
  const size_t dot = f.trace.rfind(".json");
  if (dot == std::string::npos) return StrCat(f.trace, ".", tag);
  return StrCat(f.trace.substr(0, dot), ".", tag, ".json");
}

std::string Mb(int64_t bytes) {
  char s[32];
  std::snprintf(s, sizeof s, "%.2f MB", static_cast<double>(bytes) / 1e6);
  return s;
}

// "wang os"; seed 004's algorithms have one layout and no variant: "slice_psum".
std::string Name(const cmm::CmmSpec& spec) {
  if (spec.algo == cmm::Algorithm::kAgDot || spec.algo == cmm::Algorithm::kSlicePsum) {
    return std::string(cmm::AlgorithmName(spec.algo));
  }
  return StrCat(cmm::AlgorithmName(spec.algo), " ", cmm::VariantName(spec.variant));
}

// Why the fastest combination beat the runner-up, from what device 0 did: the facts that differ
// in the winner's favour (blocking bytes, overlapped bytes, collective calls, matmul calls).
std::string Why(const Outcome& win, const Outcome& next) {
  const cmm::CmmCost& w = win.cost;
  const cmm::CmmCost& n = next.cost;
  std::vector<std::string> reasons;
  if (w.bytes_in < n.bytes_in) {
    reasons.push_back(StrCat("it waits for ", Mb(w.bytes_in), " of blocking collectives per device, ",
                             Name(next.spec), " for ", Mb(n.bytes_in)));
  }
  if (w.bytes_async > n.bytes_async) {
    reasons.push_back(StrCat(Mb(w.bytes_async), " of its traffic travels in asynchronous collectives "
                             "while the device multiplies (", Name(next.spec), ": ", Mb(n.bytes_async), ")"));
  }
  if (w.collectives < n.collectives) {
    reasons.push_back(StrCat("it makes ", w.collectives, " collective calls (", Name(next.spec), ": ",
                             n.collectives, "), each a rendezvous of every device on the axis"));
  }
  if (w.flops < n.flops) {
    char f[200];
    std::snprintf(f, sizeof f, "it does %.3g GFLOP per device against %.3g: %s repeats work on devices that hold "
                  "the same output block", static_cast<double>(w.flops) / 1e9, static_cast<double>(n.flops) / 1e9,
                  Name(next.spec).c_str());
    reasons.push_back(f);
  }
  if (w.dots < n.dots) {
    reasons.push_back(StrCat("it runs ", w.dots, " matmul call(s) per device (", Name(next.spec), ": ", n.dots,
                             "), and one large GEMM runs faster than several thin ones"));
  }
  char gap[320];
  const double gap_ms = next.median_ms - win.median_ms;
  std::snprintf(gap, sizeof gap, "%s is %.1f%% faster than %s (CPU per call %.0f vs %.0f ms)",
                Name(win.spec).c_str(), 100.0 * gap_ms / std::max(next.median_ms, 1e-9), Name(next.spec).c_str(),
                win.cpu_ms_per_call, next.cpu_ms_per_call);
  std::string out = StrCat("why: ", gap);
  if (w.flops == n.flops) {
    char f[80];
    std::snprintf(f, sizeof f, "; both do %.3g GFLOP per device", static_cast<double>(w.flops) / 1e9);
    StrAppend(&out, f);
  }
  if (gap_ms < std::max(win.stdev_ms, next.stdev_ms)) {
    char noise[160];
    std::snprintf(noise, sizeof noise, "; the gap is below the calls' spread (stdev %.1f ms), so at this load it is "
                  "not a measured win", std::max(win.stdev_ms, next.stdev_ms));
    StrAppend(&out, noise);
  }
  if (reasons.empty()) {
    return StrCat(out, "; it moves no fewer bytes in no fewer calls: the gap is this machine's noise (compare "
                  "medians of interleaved runs)");
  }
  return StrCat(out, ": ", StrJoin(reasons, "; "),
                ". Here the links are memory copies, so bytes cost memory bandwidth of the same cores "
                "that multiply, and every collective is a synchronization of the devices' threads");
}

Status RunBenchCmm(const BenchCmmFlags& f) {
  XS_ASSIGN_OR_RETURN(Mesh mesh, Mesh::Parse(f.mesh));
  if (mesh.num_axes() != 2) {
    return InvalidArgument("--mesh ", f.mesh, ": the collective matmuls need a 2-D mesh, e.g. "
                           "row=2,col=4 (the first axis is 'row', the second 'col')");
  }
  const int64_t rows = mesh.axis_sizes()[0], cols = mesh.axis_sizes()[1];
  XS_ASSIGN_OR_RETURN(std::vector<std::string> algos,
                      Choices(f.algo, "--algo", {"gspmd", "wang", "systolic"}));
  XS_ASSIGN_OR_RETURN(std::vector<std::string> variants, Choices(f.variant, "--variant", {"os", "is", "ws"}));
  std::vector<cmm::CmmSpec> specs;
  std::optional<cmm::MatmulDims> mkn;
  if (!f.mkn.empty()) {
    XS_ASSIGN_OR_RETURN(std::vector<int64_t> v, ParseIntList(f.mkn, "--mkn"));
    if (v.size() != 3) return InvalidArgument("--mkn ", f.mkn, ": give three sizes M,K,N");
    mkn = cmm::MatmulDims{v[0], v[1], v[2]};
  }
  XS_ASSIGN_OR_RETURN(std::vector<int64_t> b, ParseIntList(f.bshd, "--bshd"));
  if (b.size() != 4) return InvalidArgument("--bshd ", f.bshd, ": give four sizes B,S,H,D (seed 003: 4,256,48,64)");
  XS_ASSIGN_OR_RETURN(DType dtype, ParseDType(f.dtype));
  for (const std::string& a : algos) {
    XS_ASSIGN_OR_RETURN(cmm::Algorithm algo, cmm::ParseAlgorithm(a));
    const bool fixed = algo == cmm::Algorithm::kAgDot || algo == cmm::Algorithm::kSlicePsum;
    for (const std::string& v : fixed ? std::vector<std::string>{"os"} : variants) {
      XS_ASSIGN_OR_RETURN(cmm::Variant variant, cmm::ParseVariant(v));
      cmm::CmmSpec spec{algo, variant, rows, cols,
                        mkn ? *mkn : cmm::DimsFromBshd({b[0], b[1], b[2], b[3]}, variant), dtype,
                        f.chunks, f.block};
      specs.push_back(spec);
    }
  }
  const bool several = specs.size() > 1;
  XS_ASSIGN_OR_RETURN(std::unique_ptr<Client> client, CliCreateClient(rows * cols));
  std::vector<Outcome> done;
  double worst = 0;
  bool said_cpu = false;  // the CPU / GEMM line goes before the first report, not before errors
  for (const cmm::CmmSpec& spec : specs) {
    if (Status s = cmm::Validate(spec); !s.ok()) {
      if (!several) return s;
      std::cout << "skipped: " << s.message() << "\n\n";
      continue;
    }
    XS_ASSIGN_OR_RETURN(cmm::CmmInputs in, cmm::MakeInputs(spec, static_cast<uint64_t>(f.seed)));
    kernels::SetBlasThreads(0);  // the reference runs alone: every core
    XS_ASSIGN_OR_RETURN(Array want, cmm::Reference(spec, in));
    cmm::RunOptions run;
    run.warmup = f.warmup;
    run.iters = f.iters;
    run.trace_path = TracePath(f, spec, several);
    XS_ASSIGN_OR_RETURN(cmm::CmmResult r, cmm::Run(*client, spec, in, run));
    XS_ASSIGN_OR_RETURN(double err, cmm::MaxAbsError(r.out, want));
    double scale = 0;
    for (int64_t i = 0; i < want.num_elements(); ++i) scale = std::max(scale, std::abs(want.GetDouble(i)));
    const LatencyStats stats = ComputeLatencyStats(r.ms);
    if (!said_cpu) std::cout << kernels::CpuAndGemmLine() << "\n\n";
    said_cpu = true;
    std::cout << cmm::SpecString(spec) << ": " << f.warmup << " warmup, " << r.ms.size()
              << " timed iterations\n\n";
    PrintLatencyTable(std::cout, stats);
    const double cpu = r.cpu_ms / static_cast<double>(r.ms.size());
    char cpu_line[64];
    std::snprintf(cpu_line, sizeof cpu_line, "cpu_ms_per_call=%.3f\n", cpu);
    std::cout << cpu_line;
    if (!run.trace_path.empty()) std::cout << "trace: " << run.trace_path << "\n";
    if (!(err <= kRelTolerance * std::max(1.0, scale))) {
      return Internal(cmm::SpecString(spec), ": max_abs_err=", err, " against the single-device product exceeds ",
                      kRelTolerance, " x max|C| = ", kRelTolerance * std::max(1.0, scale));
    }
    worst = std::max(worst, err);
    if (several) std::cout << "\n";
    std::cout << std::flush;
    done.push_back({spec, stats.median, stats.stdev, err, cpu, r.cost});
  }
  if (done.empty()) return InvalidArgument("no combination divides these shapes; see the skipped lines");
  std::sort(done.begin(), done.end(), [](const Outcome& x, const Outcome& y) { return x.median_ms < y.median_ms; });
  if (several) {
    for (cmm::Variant v : {cmm::Variant::kOS, cmm::Variant::kIS, cmm::Variant::kWS}) {
      std::vector<const Outcome*> group;
      for (const Outcome& o : done) {
        if (o.spec.variant == v) group.push_back(&o);
      }
      if (group.empty()) continue;
      std::cout << "Ranking, " << cmm::VariantName(v) << " (median ms, CPU ms per call; per device: blocking / "
                << "asynchronous MB received, collective calls, matmul calls):\n";
      for (size_t i = 0; i < group.size(); ++i) {
        const Outcome& o = *group[i];
        char line[200];
        std::snprintf(line, sizeof line, "  %zu. %-13s %10.3f ms %10.1f cpu  %11s / %11s  %4lld calls  %4lld dots\n",
                      i + 1, Name(o.spec).c_str(), o.median_ms, o.cpu_ms_per_call, Mb(o.cost.bytes_in).c_str(),
                      Mb(o.cost.bytes_async).c_str(),
                      static_cast<long long>(o.cost.collectives), static_cast<long long>(o.cost.dots));
        std::cout << line;
      }
      if (group.size() > 1) std::cout << Why(*group[0], *group[1]) << "\n";
    }
  }
  char last[96];
  std::snprintf(last, sizeof last, "max_abs_err=%.3e median_ms=%.4f\n", worst, done[0].median_ms);
  std::cout << last;
  return OkStatus();
}

}  // namespace

Command AddBenchCmmCommand(CLI::App& bench) {
  auto flags = std::make_shared<BenchCmmFlags>();
  CLI::App* c = bench.add_subcommand(
      "cmm",
      "Time seed 003's collective matmuls on a 2-D mesh (GSPMD, Wang et al.'s bidirectional\n"
      "ppermute ring, systolic chunked all-gathers; output-, input- or weight-stationary) and\n"
      "seed 004's ag_dot / slice_psum, each checked against the single-device product. Prints\n"
      "bench run's latency report per combination; several are ranked, with why the winner\n"
      "wins (per variant). Last line: max_abs_err=<e> median_ms=<t> (with several: the largest\n"
      "error and the fastest combination's median).");
  AddMpiFlags(c);
  AddPlatformFlag(c);
  c->add_option("--algo", flags->algo, "gspmd, wang, systolic, ag_dot, slice_psum, comma-separated, or all\n"
                "(default: gspmd,wang,systolic)");
  c->add_option("--variant", flags->variant, "os, is, ws, comma-separated, or all (default os)");
  c->add_option("--mesh", flags->mesh, "The 2-D mesh, first axis 'row' (default row=2,col=4)");
  c->add_option("--bshd", flags->bshd,
                "Seed 003's B,S,H,D (default 4,256,48,64): os is X[B*S,H*D] @ W[H*D,4*H*D],\n"
                "is is Y @ W^T, ws is X^T @ Y");
  c->add_option("--mkn", flags->mkn, "M,K,N instead of --bshd (C[M,N] = sum over K)");
  c->add_option("--dtype", flags->dtype, "Inputs: f32 or bf16 (accumulated in f32); default f32");
  c->add_option("--iters", flags->iters, "Timed calls (default 5)")->check(IntegerRangeCheck(1, 100000));
  c->add_option("--warmup", flags->warmup, "Untimed calls first (default 1)")->check(NonNegativeIntegerCheck());
  c->add_option("--chunks", flags->chunks, "Systolic: chunks of the gathered dim (default 8)")
      ->check(IntegerRangeCheck(1, 1 << 20));
  c->add_option("--block", flags->block, "Systolic: block width inside a chunk (default 8)")
      ->check(IntegerRangeCheck(1, 1 << 20));
  c->add_option("--seed", flags->seed, "Seed of the uniform [-1, 1) inputs (default 0)")->check(NonNegativeIntegerCheck());
  c->add_option("--trace", flags->trace,
                "Write a Chrome trace (Perfetto) of the last timed call: one track per device\n"
                "(matmuls, blocking collectives) and one of asynchronous transfers in flight;\n"
                "with several combinations, F.json becomes F.<algo>_<variant>.json")
      ->check(NonEmptyPathCheck());
  return {c, [flags] { return RunBenchCmm(*flags); }};
}

}  // namespace xs::tools
