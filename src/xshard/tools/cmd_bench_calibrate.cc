// `xshard bench calibrate`: measures this machine into a hardware profile (spmd/hardware_profile.h)
// by running small SPMD modules through the executor on N in-process devices, as `bench run` runs
// a module: the step's fixed cost, GEMM rate per type and size, memory bandwidth, and collective
// latency and bandwidth per kind and group size.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>

#include "xshard/kernels/cpu_features.h"
#include "xshard/kernels/parallel.h"
#include "xshard/runtime/client.h"
#include "xshard/runtime/spmd_executor.h"
#include "xshard/runtime/spmd_executor_io.h"
#include "xshard/spmd/hardware_profile.h"
#include "xshard/spmd/report.h"
#include "xshard/spmd/step_prediction.h"
#include "xshard/text/parser.h"
#include "xshard/tools/cli.h"
#include "xshard/tools/cli_mpi.h"

namespace xs::tools {
namespace {

struct CalibrateFlags {
  int64_t devices = 8;
  std::string out;
  bool quick = false;
};

// One module of the calibration, compiled once and timed on the client's devices over several
// rounds: every probe runs once per round, so that each one's steps spread over the whole
// calibration and meet the same mix of load from other work as the others.
class Probe {
 public:
  static StatusOr<std::unique_ptr<Probe>> Create(const std::string& text, int min_iters, double min_seconds) {
    auto p = std::unique_ptr<Probe>(new Probe);
    XS_ASSIGN_OR_RETURN(p->module_, ParseHloModule(text, "calibrate"));
    XS_ASSIGN_OR_RETURN(p->exe_, SpmdExecutable::Create(*p->module_));
    p->min_iters_ = min_iters;
    p->min_seconds_ = min_seconds;
    return p;
  }
  // One round of `rounds`: a warm-up step, then at least min_iters / rounds steps and, up to 50,
  // min_seconds / rounds of them. Inputs are made per round, so that only one probe's are alive.
  Status Round(Client& client, int rounds) {
    const std::vector<std::vector<Array>> args =
        RandomDeviceArguments(1, exe_->num_devices(), exe_->executable().argument_shapes());
    XS_RETURN_IF_ERROR(exe_->Run(client, args).status());
    const int iters = std::max(1, (min_iters_ + rounds - 1) / rounds);
    double total = 0;
    for (int i = 0; i < iters || (total < min_seconds_ / rounds && i < 50); ++i) {
      const auto start = std::chrono::steady_clock::now();
      XS_RETURN_IF_ERROR(exe_->Run(client, args).status());
      samples_.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      total += samples_.back();
    }
    return OkStatus();
  }
  // Median seconds of one step over every round: the statistic `bench run` reports, so that a
  // profile calibrated under some load predicts medians measured under the same load. (The
  // fastest step was tried: on this shared 2-core machine it made every prediction 30-40 % low.)
  double Median() const {
    std::vector<double> s = samples_;
    std::sort(s.begin(), s.end());
    return s.empty() ? 0 : s[s.size() / 2];
  }
  const Module& module() const { return *module_; }

 private:
  Probe() = default;
  std::unique_ptr<Module> module_;
  std::unique_ptr<SpmdExecutable> exe_;
  int min_iters_ = 1;
  double min_seconds_ = 0;
  std::vector<double> samples_;
};

std::string Header(int64_t n) { return StrCat("HloModule calibrate, num_partitions=", n, "\n"); }

std::string GemmModule(int64_t n, std::string_view type, int64_t m) {
  return StrCat(Header(n), "ENTRY e {\n  a = ", type, "[", m, ",", m, "] parameter(0)\n  b = ", type, "[", m, ",", m,
                "] parameter(1)\n  ROOT d = ", type, "[", m, ",", m,
                "] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n");
}

// A 3x3 'SAME' convolution, NHWC, c -> c channels on an hw x hw image, one image per device.
std::string ConvModule(int64_t n, int64_t hw, int64_t c) {
  return StrCat(Header(n), "ENTRY e {\n  x = f32[1,", hw, ",", hw, ",", c, "] parameter(0)\n  k = f32[3,3,", c, ",", c,
                "] parameter(1)\n  ROOT y = f32[1,", hw, ",", hw, ",", c,
                "] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f\n}\n");
}
double ConvFlops(int64_t hw, int64_t c) { return 2.0 * static_cast<double>(hw * hw * c * c * 9); }

// A chain of `ops` transposes of a tiny array: each is one executed step that moves nothing.
std::string StepsModule(int64_t n, int ops) {
  std::string body = "  t0 = f32[2,2] parameter(0)\n";
  for (int i = 1; i <= ops; ++i) {
    StrAppend(&body, i == ops ? "  ROOT " : "  ", "t", i, " = f32[2,2] transpose(t", i - 1, "), dimensions={1,0}\n");
  }
  return StrCat(Header(n), "ENTRY e {\n", body, "}\n");
}

// Each device receives about `elements` f32 values (operand sizes follow from the kind).
std::string CollectiveModule(int64_t n, std::string_view kind, int64_t g, int64_t elements) {
  const std::string groups = StrCat("replica_groups=[", n / g, ",", g, "]<=[", n, "], channel_id=1, use_global_device_ids=true");
  const int64_t e = std::max<int64_t>(elements / g, 1);  // per-member share
  std::string entry;
  if (kind == "all-gather") {
    entry = StrCat("  p = f32[", e, "] parameter(0)\n  ROOT r = f32[", e * g, "] all-gather(p), dimensions={0}, ", groups, "\n");
  } else if (kind == "all-reduce") {
    entry = StrCat("  p = f32[", e * g, "] parameter(0)\n  ROOT r = f32[", e * g, "] all-reduce(p), to_apply=sum, ", groups, "\n");
  } else if (kind == "reduce-scatter") {
    entry = StrCat("  p = f32[", e * g, "] parameter(0)\n  ROOT r = f32[", e, "] reduce-scatter(p), dimensions={0}, to_apply=sum, ", groups, "\n");
  } else if (kind == "all-to-all") {
    entry = StrCat("  p = f32[", e * g, "] parameter(0)\n  ROOT r = f32[", e * g, "] all-to-all(p), dimensions={0}, ", groups, "\n");
  } else {
    std::vector<std::string> pairs;
    for (int64_t d = 0; d < n; ++d) pairs.push_back(StrCat("{", d, ",", d - d % g + (d + 1) % g, "}"));
    entry = StrCat("  p = f32[", e * g, "] parameter(0)\n  ROOT r = f32[", e * g, "] collective-permute(p), channel_id=1, source_target_pairs={",
                   StrJoin(pairs, ","), "}\n");
  }
  return StrCat(Header(n), "sum {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n",
                "ENTRY e {\n", entry, "}\n");
}

// Bytes one device receives in the probe's collective (the prediction's own ring model).
double ReceivedBytes(const Probe& p, int64_t n) {
  const Instruction* root = p.module().entry()->root();
  std::optional<spmd::CollectiveCost> c = spmd::CollectiveCostOf(*root, n);
  return c ? c->bytes : 0;
}

// 4 significant digits, so that the file reads well.
double Round(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return std::strtod(buf, nullptr);
}

std::string Now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", std::gmtime(&t));
  return buf;
}

std::string LoadAverage() {
  double load[1] = {0};
  if (getloadavg(load, 1) != 1) return "unknown";
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.2f", load[0]);
  return buf;
}

Status RunCalibrate(const CalibrateFlags& f) {
  const int64_t n = f.devices;
  const std::string out = f.out.empty() ? spmd::DefaultHardwareProfilePath() : f.out;
  if (out.empty()) {
    return InvalidArgument("bench calibrate: no place to write the profile: XSHARD_CACHE_DIR is 'off' (or HOME is "
                           "unset); pass --out FILE");
  }
  XS_ASSIGN_OR_RETURN(std::unique_ptr<Client> client, CliCreateClient(n));
  const int iters = f.quick ? 3 : 7;
  const double seconds = f.quick ? 0.05 : 0.5;
  spmd::HardwareProfile p;
  p.shared_host = true;
  p.devices = n;
  p.name = StrCat("this machine: ", kernels::CpuAndGemmLine(), "; ", kernels::CoreCount(), " cores, ", n,
                  " in-process devices");
  p.source = StrCat("xshard bench calibrate --devices ", n, f.quick ? " --quick" : "", ", ", Now(), ", load average ",
                    LoadAverage(), " at the start");
  std::printf("calibrating on %lld in-process devices (%s)\n", static_cast<long long>(n), f.quick ? "quick" : "full");
  std::fflush(stdout);

  // Every probe first, then the rounds, then the figures.
  std::vector<Probe*> all;
  auto make = [&](const std::string& text, int min_iters, double min_seconds) -> StatusOr<std::unique_ptr<Probe>> {
    XS_ASSIGN_OR_RETURN(std::unique_ptr<Probe> probe, Probe::Create(text, min_iters, min_seconds));
    all.push_back(probe.get());
    return probe;
  };
  // The step's fixed cost, and each executed instruction's.
  XS_ASSIGN_OR_RETURN(auto one, make(StepsModule(n, 1), iters * 4, seconds));
  XS_ASSIGN_OR_RETURN(auto many, make(StepsModule(n, 33), iters * 4, seconds));
  // GEMM: every device multiplies its own square matrices; the host's rate is n times one's.
  const std::vector<int64_t> sizes = f.quick ? std::vector<int64_t>{64, 256, 512} : std::vector<int64_t>{64, 192, 512, 1024};
  const std::vector<std::string_view> types = {"f32", "bf16"};
  std::vector<std::unique_ptr<Probe>> gemms;
  for (std::string_view type : types) {
    for (int64_t m : sizes) {
      XS_ASSIGN_OR_RETURN(auto probe, make(GemmModule(n, type, m), iters, seconds));
      gemms.push_back(std::move(probe));
    }
  }
  // Convolution: 3x3, same channels in and out, at a few sizes.
  const std::vector<std::pair<int64_t, int64_t>> convs =
      f.quick ? std::vector<std::pair<int64_t, int64_t>>{{16, 16}, {32, 64}}
              : std::vector<std::pair<int64_t, int64_t>>{{16, 16}, {32, 32}, {32, 64}, {64, 64}};
  std::vector<std::unique_ptr<Probe>> conv_probes;
  for (const auto& [hw, c] : convs) {
    XS_ASSIGN_OR_RETURN(auto probe, make(ConvModule(n, hw, c), iters, seconds));
    conv_probes.push_back(std::move(probe));
  }
  // Memory: one add of two vectors per device (reads 2, writes 1); transcendentals: one tanh.
  const int64_t elements = f.quick ? (int64_t{1} << 19) : (int64_t{1} << 21);
  XS_ASSIGN_OR_RETURN(auto add, make(StrCat(Header(n), "ENTRY e {\n  a = f32[", elements, "] parameter(0)\n  b = f32[", elements,
                                            "] parameter(1)\n  ROOT c = f32[", elements, "] add(a, b)\n}\n"),
                                     iters, seconds));
  XS_ASSIGN_OR_RETURN(auto tanh, make(StrCat(Header(n), "ENTRY e {\n  a = f32[", elements, "] parameter(0)\n  ROOT t = f32[",
                                             elements, "] tanh(a)\n}\n"),
                                      iters, seconds));
  // Collectives: latency from a 64-element exchange, bandwidth from the difference to a large one.
  std::vector<int64_t> groups;
  for (int64_t g : {int64_t{2}, int64_t{4}, n}) {
    if (g >= 2 && g <= n && n % g == 0 && std::find(groups.begin(), groups.end(), g) == groups.end()) groups.push_back(g);
  }
  const int64_t large = f.quick ? (int64_t{1} << 18) : (int64_t{1} << 20);
  std::vector<std::pair<std::unique_ptr<Probe>, std::unique_ptr<Probe>>> collectives;
  for (std::string_view kind : spmd::kProfileCollectiveKinds) {
    for (int64_t g : groups) {
      XS_ASSIGN_OR_RETURN(auto small, make(CollectiveModule(n, kind, g, 64), iters * 2, seconds / 2));
      XS_ASSIGN_OR_RETURN(auto big, make(CollectiveModule(n, kind, g, large), iters, seconds));
      collectives.push_back({std::move(small), std::move(big)});
    }
  }
  const int rounds = f.quick ? 1 : 3;
  for (int r = 0; r < rounds; ++r) {
    for (Probe* probe : all) XS_RETURN_IF_ERROR(probe->Round(*client, rounds));
  }

  const double t1 = one->Median(), t33 = many->Median();
  p.op_overhead_us = Round(std::max(0.0, (t33 - t1) / 32 * 1e6));
  p.step_overhead_us = Round(std::max(0.0, t1 * 1e6 - p.op_overhead_us));
  std::printf("step: %.1f us fixed, %.2f us per instruction\n", p.step_overhead_us, p.op_overhead_us);
  const double fixed = p.step_overhead_us * 1e-6 + p.op_overhead_us * 1e-6;

  std::printf("%-6s %-14s %12s %14s\n", "gemm", "m=n=k", "ms/step", "host GFLOP/s");
  for (size_t k = 0; k < gemms.size(); ++k) {
    const std::string_view type = types[k / sizes.size()];
    const int64_t m = sizes[k % sizes.size()];
    const double t = gemms[k]->Median();
    const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(m) * static_cast<double>(m);
    const double gflops = flops * static_cast<double>(n) / std::max(t - fixed, 1e-7) / 1e9;
    p.gemm[type == "f32" ? DType::kF32 : DType::kBF16].push_back({flops, Round(gflops)});
    std::printf("%-6s %-14lld %12.3f %14.1f\n", std::string(type).c_str(), static_cast<long long>(m), t * 1e3, gflops);
  }

  std::printf("%-6s %-14s %12s %14s\n", "conv", "hw x c (3x3)", "ms/step", "host GFLOP/s");
  for (size_t i = 0; i < convs.size(); ++i) {
    const auto [hw, c] = convs[i];
    const double t = conv_probes[i]->Median();
    const double flops = ConvFlops(hw, c);
    const double gflops = flops * static_cast<double>(n) / std::max(t - fixed, 1e-7) / 1e9;
    p.conv[DType::kF32].push_back({flops, Round(gflops)});
    std::printf("%-6s %-14s %12.3f %14.1f\n", "f32", StrCat(hw, "x", hw, " x ", c).c_str(), t * 1e3, gflops);
  }

  const double t_add = add->Median();
  p.memory_gbps = Round(12.0 * static_cast<double>(elements) * static_cast<double>(n) / std::max(t_add - fixed, 1e-7) / 1e9);
  std::printf("memory: %.3f ms/step for %lld x 3 x %s, %.1f GB/s for the host\n", t_add * 1e3, static_cast<long long>(n),
              spmd::FormatBytes(4 * elements).c_str(), p.memory_gbps);
  // The tanh's cost beyond the bytes it moves at the rate just measured.
  const double t_tanh = tanh->Median();
  const double count = static_cast<double>(elements) * static_cast<double>(n);
  const double math = t_tanh - fixed - 8 * count / (p.memory_gbps * 1e9);
  p.transcendental_gops = math > 0 ? Round(count / math / 1e9) : 0;
  std::printf("tanh: %.3f ms/step, %.2f G elements/s for the host beyond its bytes\n", t_tanh * 1e3, p.transcendental_gops);

  std::printf("%-20s %5s %12s %12s %12s\n", "collective", "group", "latency us", "large ms", "GB/s/device");
  size_t k = 0;
  for (std::string_view kind : spmd::kProfileCollectiveKinds) {
    for (int64_t g : groups) {
      const auto& [small, big] = collectives[k++];
      const double ts = small->Median(), tb = big->Median();
      spmd::CollectiveRate r;
      r.latency_us = Round(std::max(0.0, (ts - fixed) * 1e6));
      const double bytes = ReceivedBytes(*big, n) - ReceivedBytes(*small, n);
      r.gbps = Round(bytes / std::max(tb - ts, 1e-7) / 1e9);
      p.collectives[std::string(kind)][g] = r;
      std::printf("%-20s %5lld %12.1f %12.3f %12.2f\n", std::string(kind).c_str(), static_cast<long long>(g), r.latency_us,
                  tb * 1e3, r.gbps);
    }
  }
  for (auto& [type, points] : p.gemm) std::sort(points.begin(), points.end());
  for (auto& [type, points] : p.conv) std::sort(points.begin(), points.end());

  const std::string text = spmd::FormatHardwareProfile(p);
  // Written through the parser's eyes: a profile that would not read back is a bug here.
  XS_RETURN_IF_ERROR(spmd::ParseHardwareProfile(text, out).status());
  if (const size_t slash = out.rfind('/'); slash != std::string::npos && slash > 0) {
    std::error_code ec;
    std::filesystem::create_directories(out.substr(0, slash), ec);
  }
  FILE* file = std::fopen(out.c_str(), "w");
  if (file == nullptr || std::fwrite(text.data(), 1, text.size(), file) != text.size() || std::fclose(file) != 0) {
    return InvalidArgument("bench calibrate: cannot write the profile to '", out, "'; pass --out FILE in a writable folder");
  }
  std::printf("wrote %s (load average now %s)\n", out.c_str(), LoadAverage().c_str());
  return OkStatus();
}

}  // namespace

Command AddBenchCalibrateCommand(CLI::App& bench) {
  auto flags = std::make_shared<CalibrateFlags>();
  CLI::App* c = bench.add_subcommand(
      "calibrate",
      "Measure this machine into a hardware profile for `bench run --predict` and autoshard:\n"
      "the step's fixed cost, f32 and bf16 GEMM rates at several sizes, memory bandwidth, and\n"
      "each collective's latency and bandwidth for groups of 2, 4 and N, all on N in-process\n"
      "devices through the executor. Writes $XSHARD_CACHE_DIR/hardware.profile (else\n"
      "~/.cache/xshard/hardware.profile) unless --out is given. About a minute; --quick ~10 s.");
  c->add_option("--devices", flags->devices, "In-process devices (default 8)")->check(IntegerRangeCheck(2, 64));
  c->add_option("--out", flags->out, "Profile file to write")->check(NonEmptyPathCheck());
  c->add_flag("--quick", flags->quick, "Fewer sizes and calls (about 10 s)");
  return {c, [flags] { return RunCalibrate(*flags); }};
}

}  // namespace xs::tools
