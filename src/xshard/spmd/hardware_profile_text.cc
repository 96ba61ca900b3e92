// The hardware profile text format, one `key = value` per line:
//   # a comment line; on lines other than name / source, " # ..." after the value is a comment too
//   name = 8x H100 SXM, NVLink 4          (required; the rest of the line, verbatim)
//   source = data sheet URL, assumptions  (required; the rest of the line, verbatim)
//   shared_host = true | false            (default false)
//   devices = 8                           (device count the figures were measured with; optional)
//   memory_gbps = 2700                    (required; GB/s read + written)
//   step_overhead_us = 40                 (optional, default 0)
//   op_overhead_us = 2                    (optional, default 0)
//   transcendental_gops = 1.5             (optional, default 0: 1e9 exp / tanh / ... per second)
//   gemm f32 1e9 = 400                    (GFLOP/s of f32 GEMM calls of 1e9 FLOPs; f32 required)
//   conv f32 1e8 = 60                     (GFLOP/s of f32 convolutions of 1e8 FLOPs; optional)
//   collective all-reduce 8 = 25 us, 180 GB/s   (latency and GB/s received per device; >= 1 line)
// Each (type, size) and (kind, group size) once; every error names the file and line.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "xshard/base/strings.h"
#include "xshard/spmd/hardware_profile.h"

namespace xs::spmd {
namespace {

constexpr std::string_view kKeys =
    "name, source, shared_host, devices, memory_gbps, step_overhead_us, op_overhead_us, transcendental_gops, "
    "gemm TYPE FLOPS, conv TYPE FLOPS, collective KIND GROUP_SIZE";

std::vector<std::string_view> Words(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    const size_t start = i;
    while (i < s.size() && s[i] != ' ' && s[i] != '\t') ++i;
    if (i > start) out.push_back(s.substr(start, i - start));
  }
  return out;
}

// A finite number; `positive` also excludes 0.
bool Number(std::string_view s, bool positive, double* out) {
  if (!ParseDouble(StripWhitespace(s), out) || !std::isfinite(*out)) return false;
  return positive ? *out > 0 : *out >= 0;
}

// Shortest %g text that reads back to the same double.
std::string Num(double v) {
  char buf[40];
  for (int precision = 6; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    double back = 0;
    if (ParseDouble(buf, &back) && back == v) break;
  }
  return buf;
}

class Parser {
 public:
  explicit Parser(std::string_view origin) : origin_(origin) {}

  Status Line(int line, std::string_view raw) {
    line_ = line;
    std::string_view text = StripWhitespace(raw);
    if (text.empty() || text[0] == '#') return OkStatus();
    const size_t eq = text.find('=');
    if (eq == std::string_view::npos) {
      return Error("'", Clip(text), "' has no '='; write `key = value` with a key from: ", kKeys);
    }
    const std::vector<std::string_view> key = Words(text.substr(0, eq));
    std::string_view value = StripWhitespace(text.substr(eq + 1));
    if (key.empty()) return Error("a line starts with '='; put a key before it (", kKeys, ")");
    if (key[0] == "name" || key[0] == "source") {
      if (key.size() != 1) return Error("'", key[0], "' takes no words after it; write `", key[0], " = text`");
      if (value.empty()) return Error(key[0], " is empty; say ", key[0] == "name" ? "which machine this is" : "where the figures come from");
      XS_RETURN_IF_ERROR(Once(std::string(key[0])));
      (key[0] == "name" ? p_.name : p_.source) = std::string(value);
      return OkStatus();
    }
    // Elsewhere " # ..." ends the value.
    for (size_t i = 1; i < value.size(); ++i) {
      if (value[i] == '#' && (value[i - 1] == ' ' || value[i - 1] == '\t')) {
        value = StripWhitespace(value.substr(0, i));
        break;
      }
    }
    if (key[0] == "gemm" || key[0] == "conv") return Gemm(key, value);
    if (key[0] == "collective") return Collective(key, value);
    if (key.size() != 1) return Error("unknown key '", Clip(text.substr(0, eq)), "'; keys are: ", kKeys);
    return Scalar(key[0], value);
  }

  StatusOr<HardwareProfile> Finish() {
    line_ = 0;
    if (p_.name.empty()) return Error("no `name = ...` line; add one saying which machine this is");
    if (p_.source.empty()) return Error("no `source = ...` line; add one saying where the figures come from");
    if (!seen_.count("memory_gbps")) return Error("no `memory_gbps = ...` line; add the streaming bandwidth in GB/s");
    if (!p_.gemm.count(DType::kF32)) {
      return Error("no f32 GEMM rate; add at least one line like `gemm f32 1e9 = 400` (GFLOP/s at 1e9 FLOPs per call)");
    }
    if (p_.collectives.empty()) {
      return Error("no collective line; add at least one like `collective all-reduce 8 = 25 us, 180 GB/s`");
    }
    for (auto& [type, points] : p_.gemm) std::sort(points.begin(), points.end());
    for (auto& [type, points] : p_.conv) std::sort(points.begin(), points.end());
    return p_;
  }

 private:
  template <typename... Args>
  Status Error(const Args&... args) const {
    if (line_ == 0) return InvalidArgument(origin_, ": ", args...);
    return InvalidArgument(origin_, ":", line_, ": ", args...);
  }

  // At most 60 characters of a piece of the line, for messages.
  static std::string Clip(std::string_view s) {
    std::string out(s.substr(0, 60));
    for (char& c : out) {
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
    }
    return s.size() > 60 ? out + "..." : out;
  }

  Status Once(const std::string& key) {
    if (!seen_.insert(key).second) return Error("'", Clip(key), "' is given twice; keep one line");
    return OkStatus();
  }

  Status Scalar(std::string_view key, std::string_view value) {
    double v = 0;
    if (key == "shared_host") {
      if (value != "true" && value != "false") return Error("shared_host is '", Clip(value), "'; write true or false");
      p_.shared_host = value == "true";
    } else if (key == "devices") {
      int64_t n = 0;
      if (!ParseInt64(value, &n) || n < 1 || n > 1000000) {
        return Error("devices is '", Clip(value), "'; write the device count the figures were measured with, a whole number from 1 to 1000000");
      }
      p_.devices = n;
    } else if (key == "memory_gbps") {
      if (!Number(value, true, &v)) return Error("memory_gbps is '", Clip(value), "'; write GB/s as a positive number, e.g. memory_gbps = 17");
      p_.memory_gbps = v;
    } else if (key == "transcendental_gops") {
      if (!Number(value, false, &v)) return Error("transcendental_gops is '", Clip(value), "'; write 1e9 elements per second as a number >= 0 (0: free)");
      p_.transcendental_gops = v;
    } else if (key == "step_overhead_us" || key == "op_overhead_us") {
      if (!Number(value, false, &v)) return Error(key, " is '", Clip(value), "'; write microseconds as a number >= 0");
      (key == "step_overhead_us" ? p_.step_overhead_us : p_.op_overhead_us) = v;
    } else {
      return Error("unknown key '", Clip(key), "'; keys are: ", kKeys);
    }
    return Once(std::string(key));
  }

  // `gemm TYPE FLOPS = GFLOPS` and `conv TYPE FLOPS = GFLOPS`.
  Status Gemm(const std::vector<std::string_view>& key, std::string_view value) {
    const std::string what(key[0]);
    if (key.size() != 3) {
      return Error("a ", what, " line is `", what, " TYPE FLOPS = GFLOPS`, e.g. ", what, " f32 1e9 = 400");
    }
    StatusOr<DType> type = ParseDType(key[1]);
    if (!type.ok() || *type == DType::kToken || *type == DType::kPred) {
      return Error(what, " type '", Clip(key[1]), "' is not a numeric element type; write f32, bf16, f16, f64, s8, ...");
    }
    double flops = 0, gflops = 0;
    if (!Number(key[2], true, &flops)) {
      return Error(what, " size '", Clip(key[2]), "' is not a positive number; write the FLOPs of one call, e.g. 1e9");
    }
    if (!Number(value, true, &gflops)) {
      return Error(what, " rate '", Clip(value), "' is not a positive number; write GFLOP/s, e.g. ", what, " f32 1e9 = 400");
    }
    auto& points = (what == "conv" ? p_.conv : p_.gemm)[*type];
    for (const auto& [f, r] : points) {
      if (f == flops) return Error(what, " ", key[1], " ", key[2], " is given twice; keep one line per type and size");
    }
    points.push_back({flops, gflops});
    return OkStatus();
  }

  Status Collective(const std::vector<std::string_view>& key, std::string_view value) {
    constexpr std::string_view kForm = "`collective KIND GROUP_SIZE = LATENCY us, BANDWIDTH GB/s`, e.g. collective all-reduce 8 = 25 us, 180 GB/s";
    if (key.size() != 3) return Error("a collective line is ", kForm);
    const auto* kind = std::find(std::begin(kProfileCollectiveKinds), std::end(kProfileCollectiveKinds), key[1]);
    if (kind == std::end(kProfileCollectiveKinds)) {
      return Error("unknown collective '", Clip(key[1]), "'; write all-gather, all-reduce, reduce-scatter, all-to-all or collective-permute");
    }
    int64_t g = 0;
    if (!ParseInt64(key[2], &g) || g < 2 || g > 1000000) {
      return Error("group size '", Clip(key[2]), "' is not a whole number from 2 to 1000000");
    }
    const std::vector<std::string_view> parts = StrSplit(value, ',');
    CollectiveRate r;
    auto with_unit = [](std::string_view s, std::string_view unit, bool positive, double* out) {
      const std::vector<std::string_view> w = Words(s);
      return w.size() == 2 && w[1] == unit && Number(w[0], positive, out);
    };
    if (parts.size() != 2 || !with_unit(parts[0], "us", false, &r.latency_us) ||
        !with_unit(parts[1], "GB/s", true, &r.gbps)) {
      return Error("collective value '", Clip(value), "' is not `LATENCY us, BANDWIDTH GB/s` (latency >= 0, bandwidth > 0); a line is ", kForm);
    }
    if (!p_.collectives[std::string(key[1])].emplace(g, r).second) {
      return Error("collective ", key[1], " ", g, " is given twice; keep one line per kind and group size");
    }
    return OkStatus();
  }

  std::string origin_;
  int line_ = 0;
  HardwareProfile p_;
  std::set<std::string> seen_;
};

// name / source as one line (a newline would end the value early).
std::string OneLine(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  std::replace(s.begin(), s.end(), '\r', ' ');
  return std::string(StripWhitespace(s));
}

}  // namespace

StatusOr<HardwareProfile> ParseHardwareProfile(std::string_view text, std::string_view origin) {
  Parser parser(origin);
  int line = 0;
  for (std::string_view raw : StrSplit(text, '\n')) {
    ++line;
    if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
    XS_RETURN_IF_ERROR(parser.Line(line, raw));
  }
  return parser.Finish();
}

StatusOr<HardwareProfile> LoadHardwareProfile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return NotFound("hardware profile '", path, "' cannot be opened; give a file written by `xshard bench "
                    "calibrate` or one of the repository's hardware/*.profile");
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseHardwareProfile(ss.str(), path);
}

std::string FormatHardwareProfile(const HardwareProfile& p) {
  std::string out = "# xshard hardware profile (README: \"Hardware profiles and predicted time\")\n";
  StrAppend(&out, "name = ", OneLine(p.name), "\n", "source = ", OneLine(p.source), "\n");
  StrAppend(&out, "shared_host = ", p.shared_host ? "true" : "false", "\n");
  if (p.devices > 0) StrAppend(&out, "devices = ", p.devices, "\n");
  StrAppend(&out, "memory_gbps = ", Num(p.memory_gbps), "\n");
  if (p.step_overhead_us != 0) StrAppend(&out, "step_overhead_us = ", Num(p.step_overhead_us), "\n");
  if (p.op_overhead_us != 0) StrAppend(&out, "op_overhead_us = ", Num(p.op_overhead_us), "\n");
  if (p.transcendental_gops != 0) StrAppend(&out, "transcendental_gops = ", Num(p.transcendental_gops), "\n");
  StrAppend(&out, "# gemm TYPE FLOPS_PER_CALL = GFLOP/s\n");
  for (const auto& [type, points] : p.gemm) {
    for (const auto& [flops, gflops] : points) {
      StrAppend(&out, "gemm ", DTypeName(type), " ", Num(flops), " = ", Num(gflops), "\n");
    }
  }
  if (!p.conv.empty()) StrAppend(&out, "# conv TYPE FLOPS_PER_CALL = GFLOP/s\n");
  for (const auto& [type, points] : p.conv) {
    for (const auto& [flops, gflops] : points) {
      StrAppend(&out, "conv ", DTypeName(type), " ", Num(flops), " = ", Num(gflops), "\n");
    }
  }
  StrAppend(&out, "# collective KIND GROUP_SIZE = LATENCY us, GB/s received per device\n");
  for (std::string_view kind : kProfileCollectiveKinds) {
    auto it = p.collectives.find(std::string(kind));
    if (it == p.collectives.end()) continue;
    for (const auto& [g, r] : it->second) {
      StrAppend(&out, "collective ", kind, " ", g, " = ", Num(r.latency_us), " us, ", Num(r.gbps), " GB/s\n");
    }
  }
  return out;
}

}  // namespace xs::spmd
