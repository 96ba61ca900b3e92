// CPU feature probe (cpuid + XGETBV) and the GEMM path decision from the features and the loaded
// OpenBLAS / oneDNN.
#include "xshard/kernels/cpu_features.h"

#include <cblas.h>
#include <cpuid.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "oneapi/dnnl/dnnl.hpp"
#include "xshard/base/strings.h"
#include "xshard/core/dtype.h"
#include "xshard/kernels/onednn_matmul.h"

namespace xs::kernels {
namespace {

bool Bit(uint32_t word, int bit) { return ((word >> bit) & 1u) != 0; }

uint64_t Xcr0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

CpuFeatures Probe() {
  CpuFeatures f;
  uint32_t a = 0, b = 0, c = 0, d = 0;
  const uint32_t max_leaf = __get_cpuid_max(0, nullptr);
  bool osxsave = false;
  if (max_leaf >= 1 && __get_cpuid(1, &a, &b, &c, &d)) {
    f.fma = Bit(c, 12);
    osxsave = Bit(c, 27);
    f.avx = Bit(c, 28);
  }
  if (max_leaf >= 7 && __get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    const uint32_t subleaves = a;
    f.avx2 = Bit(b, 5);
    f.avx512f = Bit(b, 16);
    f.avx512dq = Bit(b, 17);
    f.avx512cd = Bit(b, 28);
    f.avx512bw = Bit(b, 30);
    f.avx512vl = Bit(b, 31);
    f.amx_bf16 = Bit(d, 22);
    f.avx512_fp16 = Bit(d, 23);
    f.amx_tile = Bit(d, 24);
    f.amx_int8 = Bit(d, 25);
    if (subleaves >= 1 && __get_cpuid_count(7, 1, &a, &b, &c, &d)) f.avx512_bf16 = Bit(a, 5);
  }
  if (osxsave) {
    const uint64_t xcr0 = Xcr0();
    f.os_ymm = (xcr0 & 0x6) == 0x6;        // SSE, AVX
    f.os_zmm = (xcr0 & 0xe6) == 0xe6;      // + opmask, ZMM_Hi256, Hi16_ZMM
    f.os_tiles = (xcr0 & 0x60000) == 0x60000;  // XTILECFG, XTILEDATA
  }
  if (static_cast<unsigned>(__get_cpuid_max(0x80000000, nullptr)) >= 0x80000004u) {
    char brand[49] = {};
    for (uint32_t leaf = 0; leaf < 3; ++leaf) {
      __get_cpuid(0x80000002 + leaf, &a, &b, &c, &d);
      std::memcpy(brand + 16 * leaf, &a, 4);
      std::memcpy(brand + 16 * leaf + 4, &b, 4);
      std::memcpy(brand + 16 * leaf + 8, &c, 4);
      std::memcpy(brand + 16 * leaf + 12, &d, 4);
    }
    f.brand = std::string(brand);
    const size_t first = f.brand.find_first_not_of(' ');
    f.brand = first == std::string::npos ? "" : f.brand.substr(first, f.brand.find_last_not_of(' ') - first + 1);
  }
  return f;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

const char* LevelName(SimdLevel l) {
  switch (l) {
    case SimdLevel::kAvx512: return "avx512";
    case SimdLevel::kAvx2: return "avx2";
    case SimdLevel::kAvx: return "avx";
    default: return "sse";
  }
}

// The OpenBLAS core whose kernels use `level` (what to force when the detected one is below).
const char* CoreFor(SimdLevel level) {
  switch (level) {
    case SimdLevel::kAvx512: return "SkylakeX";
    case SimdLevel::kAvx2: return "Haswell";
    case SimdLevel::kAvx: return "Sandybridge";
    default: return "";
  }
}

GemmLibraries LoadedBlas() {
  GemmLibraries libs;
  libs.blas_core = openblas_get_corename();
  const char* forced = std::getenv("OPENBLAS_CORETYPE");
  const char* detected = std::getenv(kBlasCoreDetectedEnv);
  if (forced != nullptr && *forced != 0) {
    if (detected != nullptr && *detected != 0) {
      libs.blas_core_detected = detected;
    } else {
      libs.blas_core_from_user = true;
    }
  }
  return libs;
}

}  // namespace

std::string CpuFeatures::Summary() const {
  std::vector<std::string> words;
  auto add = [&](bool has, bool usable, const char* name) {
    if (has) words.push_back(usable ? name : StrCat(name, " (os off)"));
  };
  add(avx2, Avx2(), "avx2");
  if (fma) words.push_back("fma");
  const bool all512 = avx512f && avx512cd && avx512bw && avx512dq && avx512vl;
  if (all512) {
    add(true, Avx512(), "avx512");
  } else {
    add(avx512f, false, "avx512f");  // a partial set: OpenBLAS / oneDNN use none of it
  }
  add(avx512_bf16, Avx512Bf16(), "avx512_bf16");
  add(avx512_fp16, Avx512Fp16(), "avx512_fp16");
  std::string s;
  for (const std::string& w : words) StrAppend(&s, s.empty() ? "" : " ", w);
  if (!amx_tile) {
    StrAppend(&s, s.empty() ? "" : "; ", "no amx");
  } else {
    std::string amx = StrCat("amx", amx_bf16 ? " bf16" : "", amx_int8 ? " int8" : "");
    if (!os_tiles) StrAppend(&amx, " (os off)");
    StrAppend(&s, s.empty() ? "" : "; ", amx);
  }
  return s.empty() ? "sse only" : s;
}

const CpuFeatures& CpuFeatures::Host() {
  static const CpuFeatures* host = new CpuFeatures(Probe());
  return *host;
}

SimdLevel LevelOf(const CpuFeatures& cpu) {
  if (cpu.Avx512()) return SimdLevel::kAvx512;
  if (cpu.Avx2()) return SimdLevel::kAvx2;
  if (cpu.avx && cpu.os_ymm) return SimdLevel::kAvx;
  return SimdLevel::kSse;
}

std::optional<SimdLevel> BlasCoreLevel(std::string_view core) {
  struct Entry {
    const char* name;
    SimdLevel level;
  };
  // OpenBLAS 0.3.x's x86-64 core names (driver/others/dynamic.c) and the vector kernels each runs.
  static const Entry kCores[] = {
      {"sapphirerapids", SimdLevel::kAvx512}, {"cooperlake", SimdLevel::kAvx512},
      {"skylakex", SimdLevel::kAvx512},       {"haswell", SimdLevel::kAvx2},
      {"zen", SimdLevel::kAvx2},              {"excavator", SimdLevel::kAvx},
      {"steamroller", SimdLevel::kAvx},       {"piledriver", SimdLevel::kAvx},
      {"bulldozer", SimdLevel::kAvx},         {"sandybridge", SimdLevel::kAvx},
      {"prescott", SimdLevel::kSse},          {"core2", SimdLevel::kSse},
      {"penryn", SimdLevel::kSse},            {"dunnington", SimdLevel::kSse},
      {"nehalem", SimdLevel::kSse},           {"atom", SimdLevel::kSse},
      {"nano", SimdLevel::kSse},              {"barcelona", SimdLevel::kSse},
      {"bobcat", SimdLevel::kSse},            {"opteron", SimdLevel::kSse},
      {"opteron_sse3", SimdLevel::kSse},      {"athlon", SimdLevel::kSse},
      {"katmai", SimdLevel::kSse},            {"coppermine", SimdLevel::kSse},
      {"northwood", SimdLevel::kSse},         {"banias", SimdLevel::kSse},
  };
  const std::string name = Lower(core);
  for (const Entry& e : kCores) {
    if (name == e.name) return e.level;
  }
  return std::nullopt;
}

GemmPath ChooseGemmPath(const CpuFeatures& cpu, const GemmLibraries& libs) {
  GemmPath path;
  const SimdLevel level = LevelOf(cpu);
  const std::optional<SimdLevel> core = BlasCoreLevel(libs.blas_core);
  const bool below = core.has_value() && *core < level;
  if (below && !libs.blas_core_from_user) path.force_blas_core = CoreFor(level);
  path.f32 = below ? GemmLibrary::kOneDnn : GemmLibrary::kOpenBlas;
  path.bf16 = libs.onednn_bf16 ? HalfPath::kOneDnn : HalfPath::kAsF32;
  path.f16 = libs.onednn_f16 ? HalfPath::kOneDnn : HalfPath::kAsF32;

  std::string& s = path.description;
  if (below) {
    StrAppend(&s, "f32 oneDNN (OpenBLAS ", libs.blas_core,
              libs.blas_core_from_user ? " from OPENBLAS_CORETYPE" : "", " is below ", LevelName(level), ")");
  } else {
    StrAppend(&s, "f32 OpenBLAS ", libs.blas_core.empty() ? "?" : libs.blas_core);
    if (!libs.blas_core_detected.empty()) {
      StrAppend(&s, " (forced, library said ", libs.blas_core_detected, ")");
    } else if (libs.blas_core_from_user) {
      StrAppend(&s, " (OPENBLAS_CORETYPE)");
    }
  }
  auto half = [&](const char* name, HalfPath how, const char* isa) {
    if (how == HalfPath::kOneDnn) {
      StrAppend(&s, ", ", name, " oneDNN ", isa);
    } else {
      StrAppend(&s, ", ", name, " as f32");
    }
  };
  const char* bf16_isa = cpu.AmxBf16() && libs.onednn_amx ? "amx"
                         : cpu.Avx512Bf16()               ? "avx512_bf16"
                                                          : "avx512";
  half("bf16", path.bf16, bf16_isa);
  if (cpu.AmxBf16() && !libs.onednn_amx && path.bf16 == HalfPath::kOneDnn) {
    StrAppend(&s, " (amx capped by ONEDNN_MAX_CPU_ISA / DNNL_MAX_CPU_ISA)");
  }
  half("f16", path.f16, "avx512_fp16");
  return path;
}

std::string HostBlasCoreToForce() {
  return ChooseGemmPath(CpuFeatures::Host(), LoadedBlas()).force_blas_core;
}

const GemmPath& HostGemmPath() {
  static const GemmPath* path = [] {
    GemmLibraries libs = LoadedBlas();
    libs.onednn_bf16 = OneDnnMatmul::Supports(DType::kBF16);
    libs.onednn_f16 = OneDnnMatmul::Supports(DType::kF16);
    const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
    libs.onednn_amx = isa == dnnl::cpu_isa::avx512_core_amx;
    return new GemmPath(ChooseGemmPath(CpuFeatures::Host(), libs));
  }();
  return *path;
}

std::string CpuAndGemmLine() {
  const CpuFeatures& cpu = CpuFeatures::Host();
  return StrCat("cpu: ", cpu.brand.empty() ? "x86-64" : cpu.brand, " (", cpu.Summary(), ") gemm: ",
                HostGemmPath().description);
}

}  // namespace xs::kernels
