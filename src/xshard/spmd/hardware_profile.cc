// HardwareProfile's rates: interpolation over the measured points, the shared-host division, the
// MachineModel summary, and where this machine's profile lives.
#include "xshard/spmd/hardware_profile.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>

namespace xs::spmd {
namespace {

// log(rate) linear in log(flops) between the two points around `x`; clamped at the ends. Points
// are sorted by size (the parser and calibrate keep them so); an empty table gives 0.
double InterpolateLogLog(const std::vector<std::pair<double, double>>& points, double x) {
  if (points.empty()) return 0;
  if (x <= points.front().first) return points.front().second;
  if (x >= points.back().first) return points.back().second;
  for (size_t i = 1; i < points.size(); ++i) {
    const auto& [x1, y1] = points[i];
    if (x > x1) continue;
    const auto& [x0, y0] = points[i - 1];
    if (x1 <= x0 || y0 <= 0 || y1 <= 0) return y1;
    const double t = (std::log(x) - std::log(x0)) / (std::log(x1) - std::log(x0));
    return std::exp(std::log(y0) + t * (std::log(y1) - std::log(y0)));
  }
  return points.back().second;
}

// Latency and bandwidth linear in the group size between the points around `g`; clamped.
CollectiveRate InterpolateGroup(const std::map<int64_t, CollectiveRate>& points, int64_t g) {
  if (points.empty()) return {};
  auto hi = points.lower_bound(g);
  if (hi == points.end()) return std::prev(hi)->second;
  if (hi->first == g || hi == points.begin()) return hi->second;
  auto lo = std::prev(hi);
  const double t = static_cast<double>(g - lo->first) / static_cast<double>(hi->first - lo->first);
  return {lo->second.latency_us + t * (hi->second.latency_us - lo->second.latency_us),
          lo->second.gbps + t * (hi->second.gbps - lo->second.gbps)};
}

double Share(const HardwareProfile& p, int64_t num_devices) {
  return p.shared_host ? static_cast<double>(std::max<int64_t>(num_devices, 1)) : 1.0;
}

const std::map<int64_t, CollectiveRate>* CollectiveTable(const HardwareProfile& p, std::string_view kind) {
  for (std::string_view k : {kind, std::string_view("all-gather")}) {
    auto it = p.collectives.find(std::string(k));
    if (it != p.collectives.end() && !it->second.empty()) return &it->second;
  }
  for (const auto& [k, table] : p.collectives) {
    if (!table.empty()) return &table;
  }
  return nullptr;
}

}  // namespace

double HardwareProfile::DotSeconds(PrimitiveType type, double flops, int64_t num_devices) const {
  if (flops <= 0) return 0;
  auto it = gemm.find(type);
  if (it == gemm.end() || it->second.empty()) it = gemm.find(DType::kF32);
  if (it == gemm.end() || it->second.empty()) return 0;
  const double gflops = InterpolateLogLog(it->second, flops);
  if (gflops <= 0) return 0;
  return flops * Share(*this, num_devices) / (gflops * 1e9);
}

double HardwareProfile::ConvSeconds(PrimitiveType type, double flops, int64_t num_devices) const {
  if (flops <= 0) return 0;
  auto it = conv.find(type);
  if (it == conv.end() || it->second.empty()) it = conv.find(DType::kF32);
  if (it == conv.end() || it->second.empty()) return DotSeconds(type, flops, num_devices);
  const double gflops = InterpolateLogLog(it->second, flops);
  if (gflops <= 0) return DotSeconds(type, flops, num_devices);
  return flops * Share(*this, num_devices) / (gflops * 1e9);
}

double HardwareProfile::MemorySeconds(double bytes, int64_t num_devices) const {
  if (bytes <= 0 || memory_gbps <= 0) return 0;
  return bytes * Share(*this, num_devices) / (memory_gbps * 1e9);
}

namespace {
double FixedCostScale(const HardwareProfile& p, int64_t num_devices) {
  if (!p.shared_host || p.devices <= 0) return 1;
  return static_cast<double>(std::max<int64_t>(num_devices, 1)) / static_cast<double>(p.devices);
}
}  // namespace

double HardwareProfile::StepOverheadSeconds(int64_t num_devices) const {
  return step_overhead_us * 1e-6 * FixedCostScale(*this, num_devices);
}

double HardwareProfile::OpOverheadSeconds(int64_t num_devices) const {
  return op_overhead_us * 1e-6 * FixedCostScale(*this, num_devices);
}

double HardwareProfile::TranscendentalSeconds(double elements, int64_t num_devices) const {
  if (elements <= 0 || transcendental_gops <= 0) return 0;
  return elements * Share(*this, num_devices) / (transcendental_gops * 1e9);
}

double HardwareProfile::CollectiveSeconds(std::string_view kind, int64_t group_size,
                                          double bytes_received_per_device, int64_t num_devices) const {
  if (group_size <= 1) return 0;
  const std::map<int64_t, CollectiveRate>* table = CollectiveTable(*this, kind);
  if (table == nullptr) return 0;
  const CollectiveRate r = InterpolateGroup(*table, group_size);
  double gbps = r.gbps;
  if (shared_host && devices > 0 && num_devices > 0) {
    gbps *= static_cast<double>(devices) / static_cast<double>(num_devices);
  }
  const double transfer = gbps > 0 ? std::max(bytes_received_per_device, 0.0) / (gbps * 1e9) : 0;
  return r.latency_us * 1e-6 + transfer;
}

MachineModel HardwareProfile::ToMachineModel(int64_t num_devices) const {
  MachineModel m;
  const int64_t g = std::max<int64_t>(num_devices, 2);
  if (const auto* t = CollectiveTable(*this, "all-gather")) {
    CollectiveRate r = InterpolateGroup(*t, g);
    if (shared_host && devices > 0) r.gbps *= static_cast<double>(devices) / static_cast<double>(g);
    if (r.gbps > 0) m.link_gbps = r.gbps;
  }
  if (const auto* t = CollectiveTable(*this, "all-reduce")) {
    m.collective_latency_us = InterpolateGroup(*t, g).latency_us;
    // All-to-all's and collective-permute's fixed costs relative to it, where the profile has
    // figures of their own.
    for (auto [kind, share] : {std::pair{"all-to-all", &m.all_to_all_share},
                               std::pair{"collective-permute", &m.permute_share}}) {
      auto own = collectives.find(kind);
      if (m.collective_latency_us > 0 && own != collectives.end() && !own->second.empty()) {
        *share = InterpolateGroup(own->second, g).latency_us / m.collective_latency_us;
      }
    }
  }
  auto it = gemm.find(DType::kF32);
  if (it != gemm.end() && !it->second.empty() && it->second.back().second > 0) {
    m.device_gflops = it->second.back().second / Share(*this, num_devices);
  }
  return m;
}

std::string DefaultHardwareProfilePath() {
  const char* dir = std::getenv("XSHARD_CACHE_DIR");
  if (dir != nullptr && *dir != '\0') {
    return std::string_view(dir) == "off" ? "" : std::string(dir) + "/hardware.profile";
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return std::string(xdg) + "/xshard/hardware.profile";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return std::string(home) + "/.cache/xshard/hardware.profile";
  }
  return "";
}

HardwareProfile BuiltinHardwareProfile() {
  // The development machine with 8 in-process devices on its 2 cores: 72 GFLOP/s of f32 GEMM
  // for the host (9 per device), 1.5 GB/s received per device, 20 us per group collective and 8
  // per collective-permute (devices outnumber the cores: `xshard bench collectives`); 17 GB/s is
  // the host's DRAM copy rate (DESIGN.md section 5). MachineModel's defaults are those of a
  // device with a core of its own instead (2 us, 36 GFLOP/s).
  HardwareProfile p;
  p.name = "this machine (built-in figures: 2-core host, in-process devices)";
  p.source = "built-in defaults; run `xshard bench calibrate`";
  p.shared_host = true;
  p.devices = 8;
  p.gemm[DType::kF32] = {{1e9, 72}};
  p.memory_gbps = 17;
  MachineModel shared;
  shared.collective_latency_us = 20;
  for (std::string_view kind : kProfileCollectiveKinds) {
    const double latency = shared.LatencyUs(kind);
    p.collectives[std::string(kind)] = {{2, {latency, shared.link_gbps}}, {8, {latency, shared.link_gbps}}};
  }
  return p;
}

HardwareProfile ThisMachineProfile() {
  const std::string path = DefaultHardwareProfilePath();
  if (!path.empty() && std::ifstream(path).good()) {
    StatusOr<HardwareProfile> p = LoadHardwareProfile(path);
    if (p.ok()) return *std::move(p);
  }
  return BuiltinHardwareProfile();
}

}  // namespace xs::spmd
