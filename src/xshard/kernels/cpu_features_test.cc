// CPU features -> GEMM path, on made-up feature sets (the hidden-model Intel VM, AVX2 machines,
// this Zen 4, pre-AVX2 CPUs) and on this machine's probe.
#include "xshard/kernels/cpu_features.h"

#include <gtest/gtest.h>

namespace xs::kernels {
namespace {

CpuFeatures Avx2Machine() {
  CpuFeatures f;
  f.avx = f.avx2 = f.fma = true;
  f.os_ymm = true;
  return f;
}

CpuFeatures Avx512Machine() {
  CpuFeatures f = Avx2Machine();
  f.avx512f = f.avx512cd = f.avx512bw = f.avx512dq = f.avx512vl = true;
  f.os_zmm = true;
  return f;
}

// A 4th-generation Xeon as a hypervisor shows it: every feature, no model.
CpuFeatures SapphireRapidsVm() {
  CpuFeatures f = Avx512Machine();
  f.avx512_bf16 = f.avx512_fp16 = true;
  f.amx_tile = f.amx_bf16 = f.amx_int8 = true;
  f.os_tiles = true;
  return f;
}

CpuFeatures Zen4() {
  CpuFeatures f = Avx512Machine();
  f.avx512_bf16 = true;
  return f;
}

GemmLibraries Blas(const char* core) {
  GemmLibraries libs;
  libs.blas_core = core;
  return libs;
}

TEST(CpuFeaturesTest, HiddenModelVmWithAmxWhileOpenBlasSaysPrescott) {
  GemmLibraries libs = Blas("Prescott");
  libs.onednn_bf16 = libs.onednn_amx = true;
  const GemmPath path = ChooseGemmPath(SapphireRapidsVm(), libs);
  EXPECT_EQ(path.force_blas_core, "SkylakeX");
  // Until the core is forced (never, in the library or the Python module): f32 through oneDNN.
  EXPECT_EQ(path.f32, GemmLibrary::kOneDnn);
  EXPECT_EQ(path.bf16, HalfPath::kOneDnn);
  EXPECT_EQ(path.f16, HalfPath::kAsF32);  // no oneDNN f16 kernel: f32 copies, through oneDNN too
  EXPECT_EQ(path.description, "f32 oneDNN (OpenBLAS Prescott is below avx512), bf16 oneDNN amx, f16 as f32");
}

TEST(CpuFeaturesTest, HiddenModelVmAfterTheReexec) {
  GemmLibraries libs = Blas("SkylakeX");
  libs.blas_core_detected = "Prescott";
  libs.onednn_bf16 = libs.onednn_f16 = libs.onednn_amx = true;
  const GemmPath path = ChooseGemmPath(SapphireRapidsVm(), libs);
  EXPECT_EQ(path.force_blas_core, "");
  EXPECT_EQ(path.f32, GemmLibrary::kOpenBlas);
  EXPECT_EQ(path.f16, HalfPath::kOneDnn);
  EXPECT_EQ(path.description,
            "f32 OpenBLAS SkylakeX (forced, library said Prescott), bf16 oneDNN amx, f16 oneDNN avx512_fp16");
}

TEST(CpuFeaturesTest, AmxCappedByOneDnnsIsaLimitIsSaid) {
  GemmLibraries libs = Blas("SapphireRapids");
  libs.onednn_bf16 = true;  // onednn_amx false: DNNL_MAX_CPU_ISA below AMX
  const GemmPath path = ChooseGemmPath(SapphireRapidsVm(), libs);
  EXPECT_EQ(path.force_blas_core, "");
  EXPECT_EQ(path.bf16, HalfPath::kOneDnn);
  EXPECT_NE(path.description.find("bf16 oneDNN avx512_bf16 (amx capped by"), std::string::npos)
      << path.description;
}

TEST(CpuFeaturesTest, AmxWithoutOsTileStateIsNotUsed) {
  CpuFeatures cpu = SapphireRapidsVm();
  cpu.os_tiles = false;
  EXPECT_FALSE(cpu.AmxBf16());
  EXPECT_TRUE(cpu.Avx512Bf16());
  EXPECT_EQ(cpu.Summary(), "avx2 fma avx512 avx512_bf16 avx512_fp16; amx bf16 int8 (os off)");
}

TEST(CpuFeaturesTest, UserForcedCoreIsKeptButF32GoesToOneDnn) {
  GemmLibraries libs = Blas("Prescott");
  libs.blas_core_from_user = true;
  libs.onednn_bf16 = true;
  const GemmPath path = ChooseGemmPath(Zen4(), libs);
  EXPECT_EQ(path.force_blas_core, "");  // never overrides the user's OPENBLAS_CORETYPE
  EXPECT_EQ(path.f32, GemmLibrary::kOneDnn);
  EXPECT_EQ(path.description,
            "f32 oneDNN (OpenBLAS Prescott from OPENBLAS_CORETYPE is below avx512), bf16 oneDNN "
            "avx512_bf16, f16 as f32");
  // A user's core at the CPU's level stays on OpenBLAS.
  libs.blas_core = "SkylakeX";
  EXPECT_EQ(ChooseGemmPath(Zen4(), libs).f32, GemmLibrary::kOpenBlas);
  EXPECT_EQ(ChooseGemmPath(Zen4(), libs).description.rfind("f32 OpenBLAS SkylakeX (OPENBLAS_CORETYPE)", 0), 0u);
}

TEST(CpuFeaturesTest, Zen4) {
  // OpenBLAS 0.3.21 says Cooperlake on this machine (features), Zen or Haswell on other Zen 4s.
  EXPECT_EQ(ChooseGemmPath(Zen4(), Blas("Cooperlake")).force_blas_core, "");
  EXPECT_EQ(ChooseGemmPath(Zen4(), Blas("Cooperlake")).f32, GemmLibrary::kOpenBlas);
  EXPECT_EQ(ChooseGemmPath(Zen4(), Blas("Zen")).force_blas_core, "SkylakeX");
  EXPECT_EQ(ChooseGemmPath(Zen4(), Blas("Haswell")).force_blas_core, "SkylakeX");
  EXPECT_EQ(ChooseGemmPath(Zen4(), Blas("SKYLAKEX")).force_blas_core, "");  // case-insensitive
  EXPECT_EQ(Zen4().Summary(), "avx2 fma avx512 avx512_bf16; no amx");
  // No oneDNN bf16 kernel: bf16 runs on f32 copies.
  EXPECT_EQ(ChooseGemmPath(Zen4(), Blas("Cooperlake")).bf16, HalfPath::kAsF32);
}

TEST(CpuFeaturesTest, PlainAvx2Machines) {
  EXPECT_EQ(LevelOf(Avx2Machine()), SimdLevel::kAvx2);
  EXPECT_EQ(ChooseGemmPath(Avx2Machine(), Blas("Haswell")).force_blas_core, "");
  EXPECT_EQ(ChooseGemmPath(Avx2Machine(), Blas("Zen")).force_blas_core, "");
  const GemmPath hidden = ChooseGemmPath(Avx2Machine(), Blas("Prescott"));
  EXPECT_EQ(hidden.force_blas_core, "Haswell");
  EXPECT_EQ(hidden.f32, GemmLibrary::kOneDnn);
  EXPECT_EQ(hidden.description, "f32 oneDNN (OpenBLAS Prescott is below avx2), bf16 as f32, f16 as f32");
  EXPECT_EQ(Avx2Machine().Summary(), "avx2 fma; no amx");
}

TEST(CpuFeaturesTest, Avx512InstructionsTheOsDoesNotSave) {
  CpuFeatures cpu = Avx512Machine();
  cpu.os_zmm = false;
  EXPECT_EQ(LevelOf(cpu), SimdLevel::kAvx2);
  EXPECT_EQ(ChooseGemmPath(cpu, Blas("Haswell")).force_blas_core, "");  // SkylakeX would fault
  EXPECT_EQ(cpu.Summary(), "avx2 fma avx512 (os off); no amx");
}

TEST(CpuFeaturesTest, PartialAvx512IsNotEnough) {
  CpuFeatures cpu = Avx2Machine();
  cpu.avx512f = true;  // Knights Landing-like: F without BW / DQ / VL
  cpu.os_zmm = true;
  EXPECT_EQ(LevelOf(cpu), SimdLevel::kAvx2);
  EXPECT_EQ(ChooseGemmPath(cpu, Blas("Haswell")).force_blas_core, "");
}

TEST(CpuFeaturesTest, PreAvx2Machines) {
  CpuFeatures sandy;  // AVX, no AVX2 / FMA
  sandy.avx = true;
  sandy.os_ymm = true;
  EXPECT_EQ(LevelOf(sandy), SimdLevel::kAvx);
  EXPECT_EQ(ChooseGemmPath(sandy, Blas("Sandybridge")).force_blas_core, "");
  EXPECT_EQ(ChooseGemmPath(sandy, Blas("Prescott")).force_blas_core, "Sandybridge");
  const CpuFeatures old;  // SSE only
  EXPECT_EQ(LevelOf(old), SimdLevel::kSse);
  EXPECT_EQ(ChooseGemmPath(old, Blas("Prescott")).force_blas_core, "");
  EXPECT_EQ(ChooseGemmPath(old, Blas("Prescott")).f32, GemmLibrary::kOpenBlas);
  EXPECT_EQ(ChooseGemmPath(old, Blas("Nehalem")).force_blas_core, "");
  EXPECT_EQ(old.Summary(), "no amx");
}

TEST(CpuFeaturesTest, UnknownCoreNamesAreLeftAlone) {
  EXPECT_EQ(BlasCoreLevel("SomeFutureLake"), std::nullopt);
  EXPECT_EQ(ChooseGemmPath(SapphireRapidsVm(), Blas("SomeFutureLake")).force_blas_core, "");
  EXPECT_EQ(ChooseGemmPath(SapphireRapidsVm(), Blas("SomeFutureLake")).f32, GemmLibrary::kOpenBlas);
  EXPECT_EQ(BlasCoreLevel("prescott"), SimdLevel::kSse);
  EXPECT_EQ(BlasCoreLevel("Zen"), SimdLevel::kAvx2);
}

TEST(CpuFeaturesTest, HostProbeAgreesWithTheCompiler) {
  const CpuFeatures& host = CpuFeatures::Host();
  EXPECT_EQ(host.avx2 && host.os_ymm, static_cast<bool>(__builtin_cpu_supports("avx2")));
  EXPECT_EQ(host.fma, static_cast<bool>(__builtin_cpu_supports("fma")));
  EXPECT_EQ(host.avx512f && host.os_zmm, static_cast<bool>(__builtin_cpu_supports("avx512f")));
  EXPECT_EQ(host.avx512bw && host.os_zmm, static_cast<bool>(__builtin_cpu_supports("avx512bw")));
  EXPECT_EQ(host.avx512vl && host.os_zmm, static_cast<bool>(__builtin_cpu_supports("avx512vl")));
  const std::string line = CpuAndGemmLine();
  EXPECT_EQ(line.rfind("cpu: ", 0), 0u) << line;
  EXPECT_NE(line.find(" gemm: f32 "), std::string::npos) << line;
  EXPECT_NE(line.find(host.Summary()), std::string::npos) << line;
}

}  // namespace
}  // namespace xs::kernels
