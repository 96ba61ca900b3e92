// What this x86 CPU can run (cpuid, with the register state the OS enables through XCR0), and
// the GEMM path chosen from it: which OpenBLAS core to force and which library runs f32 / bf16 /
// f16 dots. Decided by features, never by a library's model name (a VM may hide the model).
#ifndef XSHARD_KERNELS_CPU_FEATURES_H_
#define XSHARD_KERNELS_CPU_FEATURES_H_

#include <optional>
#include <string>
#include <string_view>

namespace xs::kernels {

// cpuid bits and the OS-enabled state; a plain value (tests build made-up ones).
struct CpuFeatures {
  std::string brand;  // cpuid brand string, trimmed ("" when the CPU reports none)
  bool avx = false, avx2 = false, fma = false;
  bool avx512f = false, avx512cd = false, avx512bw = false, avx512dq = false, avx512vl = false;
  bool avx512_bf16 = false, avx512_fp16 = false;
  bool amx_tile = false, amx_bf16 = false, amx_int8 = false;
  // XCR0: the OS saves YMM (SSE + AVX state), ZMM (opmask + ZMM_Hi256 + Hi16_ZMM), AMX tiles
  // (XTILECFG + XTILEDATA). Linux also wants a per-process request before tiles are used, which
  // oneDNN makes itself (arch_prctl ARCH_REQ_XCOMP_PERM).
  bool os_ymm = false, os_zmm = false, os_tiles = false;

  // Usable: the instructions exist and the OS saves their registers.
  bool Avx2() const { return avx && avx2 && fma && os_ymm; }
  // F + CD + BW + DQ + VL: what OpenBLAS's SkylakeX kernels and oneDNN's avx512_core need.
  bool Avx512() const {
    return Avx2() && avx512f && avx512cd && avx512bw && avx512dq && avx512vl && os_zmm;
  }
  bool Avx512Bf16() const { return Avx512() && avx512_bf16; }
  bool Avx512Fp16() const { return Avx512() && avx512_fp16; }
  bool AmxBf16() const { return Avx512() && amx_tile && amx_bf16 && os_tiles; }
  bool AmxInt8() const { return Avx512() && amx_tile && amx_int8 && os_tiles; }

  // The usable features in a few words, e.g. "avx2 fma avx512 avx512_bf16; no amx" ("avx512" is
  // the F/CD/BW/DQ/VL set; features the OS leaves off are named with "(os off)").
  std::string Summary() const;

  // This machine's, probed once.
  static const CpuFeatures& Host();
};

// The widest vector level a CPU can use, or an OpenBLAS core's kernels use.
enum class SimdLevel { kSse = 0, kAvx = 1, kAvx2 = 2, kAvx512 = 3 };
SimdLevel LevelOf(const CpuFeatures& cpu);
// The level of an OpenBLAS core name as openblas_get_corename() gives it (case-insensitive);
// nullopt for a name not in the table (taken as good enough: nothing is forced).
std::optional<SimdLevel> BlasCoreLevel(std::string_view core);

// What the loaded libraries report: ChooseGemmPath's inputs besides the CPU.
struct GemmLibraries {
  std::string blas_core;           // openblas_get_corename() as loaded
  std::string blas_core_detected;  // the core before the CLI re-executed itself to force one, or ""
  bool blas_core_from_user = false;  // the user set OPENBLAS_CORETYPE
  bool onednn_bf16 = false;        // oneDNN has a non-reference bf16 matmul here
  bool onednn_f16 = false;         // ... and an f16 one
  bool onednn_amx = false;         // oneDNN's ISA ceiling includes AMX (no DNNL_MAX_CPU_ISA cap)
};

enum class GemmLibrary { kOpenBlas, kOneDnn };
// bf16 / f16 dots: oneDNN's own kernels for the type (f32 accumulation), or f32 copies of the
// operands through the f32 path, the result rounded once.
enum class HalfPath { kOneDnn, kAsF32 };

struct GemmPath {
  // OPENBLAS_CORETYPE worth forcing ("" none): the loaded core is below what the CPU can run and
  // the user did not choose it. Only a process that has not loaded OpenBLAS yet can use it (the
  // CLI re-executes itself); the library and the Python module cannot, hence `f32` below.
  std::string force_blas_core;
  // f32 dots: kOneDnn at every size when the loaded OpenBLAS core is below the CPU (oneDNN
  // dispatches on cpuid itself); kOpenBlas otherwise (small products still go to oneDNN's brgemm
  // where it is faster, see gemm_plan.cc). f16 without oneDNN f16 runs on f32 copies this way.
  GemmLibrary f32 = GemmLibrary::kOpenBlas;
  // bf16 / f16 dots: kOneDnn (AMX, AVX512_BF16 or AVX-512 kernels) when oneDNN has a
  // non-reference kernel for the type here, else kAsF32.
  HalfPath bf16 = HalfPath::kAsF32;
  HalfPath f16 = HalfPath::kAsF32;
  // e.g. "f32 OpenBLAS SkylakeX (forced, library said Zen), bf16 oneDNN amx, f16 as f32".
  std::string description;
};

// The decision, a pure function of its inputs.
GemmPath ChooseGemmPath(const CpuFeatures& cpu, const GemmLibraries& libs);
// The OpenBLAS core this process should be re-executed with ("" none); reads OPENBLAS_CORETYPE
// and the loaded core only (cheap: no oneDNN probe).
std::string HostBlasCoreToForce();
// This process's path: Host(), the loaded OpenBLAS, oneDNN's probes. Computed once.
const GemmPath& HostGemmPath();
// One line for bench headers: "cpu: AMD EPYC (avx2 fma avx512 avx512_bf16; no amx) gemm: ...".
std::string CpuAndGemmLine();

// The variable the CLI sets, with OPENBLAS_CORETYPE, when it re-executes itself: the core the
// library had chosen (so the path can say what it overrode, and a user's choice stays apart).
inline constexpr char kBlasCoreDetectedEnv[] = "XSHARD_BLAS_CORETYPE_DETECTED";

}  // namespace xs::kernels

#endif  // XSHARD_KERNELS_CPU_FEATURES_H_
