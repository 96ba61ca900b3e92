// Complex values in generated kernels: fft (FFT / IFFT / RFFT / IRFFT as JAX lowers jnp.fft.*,
// powers of two and odd lengths, batched, 1-3 dims, c64 and c128), complex shape ops and
// complex elementwise chains compile with NVRTC for sm_90 and, on the host emulator, match the
// CPU executor; fft([1, 2, 3, 4]) is checked against the values worked out by hand; and the
// repository / corpus modules that need complex kernels plan for the GPU and run through
// RunPlanOnHost.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#ifdef XSHARD_WITH_CUDA

#include <algorithm>
#include <cmath>
#include <complex>
#include <filesystem>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "xshard/cuda/kernel_codegen.h"
#include "xshard/cuda/kernel_codegen_test_util.h"
#include "xshard/testing/corpus.h"
#include "xshard/text/parser.h"

namespace xs::cuda {
namespace {

// Empty when `got` matches `want`: complex results part by part, within rtol (1e-5 for c64 /
// f32, 1e-11 for c128 / f64) of the largest magnitude of `want` (an fft spreads its rounding
// over every output); other types through testing::Compare.
std::string CompareValues(const Array& got, const Array& want) {
  if (got.dtype() != want.dtype() || got.dims() != want.dims()) {
    return "shape " + got.shape().ToString() + " vs " + want.shape().ToString();
  }
  const DType t = want.dtype();
  const bool single = t == DType::kC64 || t == DType::kF32;
  if (t != DType::kC64 && t != DType::kC128 && t != DType::kF32 && t != DType::kF64) return testing::Compare(got, want);
  const Array g = got.Convert(DType::kC128), w = want.Convert(DType::kC128);
  auto gv = g.values<std::complex<double>>();
  auto wv = w.values<std::complex<double>>();
  double largest = 1;
  for (const auto& x : wv) largest = std::max({largest, std::fabs(x.real()), std::fabs(x.imag())});
  const double tol = (single ? 1e-5 : 1e-11) * largest;
  for (size_t i = 0; i < wv.size(); ++i) {
    const bool nan_ok = (std::isnan(wv[i].real()) == std::isnan(gv[i].real())) &&
                        (std::isnan(wv[i].imag()) == std::isnan(gv[i].imag()));
    if (!nan_ok || std::fabs(gv[i].real() - wv[i].real()) > tol || std::fabs(gv[i].imag() - wv[i].imag()) > tol) {
      if (std::isnan(wv[i].real()) && std::isnan(gv[i].real()) && std::isnan(wv[i].imag()) && std::isnan(gv[i].imag())) continue;
      return "element " + std::to_string(i) + ": (" + std::to_string(gv[i].real()) + ", " + std::to_string(gv[i].imag()) +
             ") vs CPU (" + std::to_string(wv[i].real()) + ", " + std::to_string(wv[i].imag()) + ")";
    }
  }
  return "";
}

Array RandomArrayFft(const Shape& s, std::mt19937_64& rng) {
  Array a(s);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  if (s.dtype() == DType::kC64 || s.dtype() == DType::kC128) {
    Array c(Shape(DType::kC128, s.dims()));
    for (auto& x : c.values<std::complex<double>>()) x = {u(rng), u(rng)};
    return c.Convert(s.dtype());
  }
  std::uniform_int_distribution<int> small(0, 3);
  for (int64_t i = 0; i < a.num_elements(); ++i) a.SetDouble(i, IsFloating(s.dtype()) ? u(rng) : small(rng));
  return a;
}

std::string Fft(const std::string& in, const std::string& out, const std::string& type, const std::string& lengths) {
  return "HloModule m\nENTRY e {\n  x = " + in + " parameter(0)\n  ROOT f = " + out + " fft(x), fft_type=" + type +
         ", fft_length={" + lengths + "}\n}\n";
}
std::string Entry(const std::string& body) { return "HloModule m\nENTRY e {\n" + body + "}\n"; }

struct CaseFft {
  std::string what, text;
};

std::vector<CaseFft> CasesFft() {
  return {
      {"jnp.fft.fft, c64[3,8]", Fft("c64[3,8]", "c64[3,8]", "FFT", "8")},
      {"jnp.fft.fft, odd length, c64[4,5]", Fft("c64[4,5]", "c64[4,5]", "FFT", "5")},
      {"jnp.fft.fft, length 6, c128[2,6]", Fft("c128[2,6]", "c128[2,6]", "FFT", "6")},
      {"jnp.fft.ifft, c128[2,16]", Fft("c128[2,16]", "c128[2,16]", "IFFT", "16")},
      {"jnp.fft.ifft, length 1, c64[3,1]", Fft("c64[3,1]", "c64[3,1]", "IFFT", "1")},
      {"jnp.fft.rfft, f32[3,10]", Fft("f32[3,10]", "c64[3,6]", "RFFT", "10")},
      {"jnp.fft.rfft, f64[2,9]", Fft("f64[2,9]", "c128[2,5]", "RFFT", "9")},
      {"jnp.fft.irfft, c64[3,5] -> f32[3,8]", Fft("c64[3,5]", "f32[3,8]", "IRFFT", "8")},
      {"jnp.fft.irfft, odd n, c128[2,4] -> f64[2,7]", Fft("c128[2,4]", "f64[2,7]", "IRFFT", "7")},
      {"jnp.fft.fft2, c64[2,4,6]", Fft("c64[2,4,6]", "c64[2,4,6]", "FFT", "4,6")},
      {"jnp.fft.ifft2, c128[3,8,4]", Fft("c128[3,8,4]", "c128[3,8,4]", "IFFT", "8,4")},
      {"jnp.fft.fftn, 3 dims, c64[2,3,4,5]", Fft("c64[2,3,4,5]", "c64[2,3,4,5]", "FFT", "3,4,5")},
      {"jnp.fft.rfft2, f32[2,4,8]", Fft("f32[2,4,8]", "c64[2,4,5]", "RFFT", "4,8")},
      {"jnp.fft.fft2 beyond one block's shared memory (a pass per axis), c64[128,256]",
       Fft("c64[128,256]", "c64[128,256]", "FFT", "128,256")},
      {"jnp.fft.rfft2 beyond one block's shared memory, f64[96,256]", Fft("f64[96,256]", "c128[96,129]", "RFFT", "96,256")},
      {"jnp.fft.ifft2 beyond one block's shared memory, odd lengths, c128[63,65]",
       Fft("c128[63,65]", "c128[63,65]", "IFFT", "63,65")},
      {"jnp.fft.irfft2, odd outer length, c64[2,6,5] -> f32[2,6,8]", Fft("c64[2,6,5]", "f32[2,6,8]", "IRFFT", "6,8")},
      {"jnp.fft.irfftn, 3 dims, c128[2,2,3,3] -> f64[2,2,3,5]", Fft("c128[2,2,3,3]", "f64[2,2,3,5]", "IRFFT", "2,3,5")},
      {"complex transpose, c128[3,5,4]",
       Entry("  x = c128[3,5,4] parameter(0)\n  ROOT t = c128[4,3,5] transpose(x), dimensions={2,0,1}\n")},
      {"tiled complex transpose, c64[40,36]",
       Entry("  x = c64[40,36] parameter(0)\n  ROOT t = c64[36,40] transpose(x), dimensions={1,0}\n")},
      {"complex slice / reverse / pad / concatenate / broadcast, c64",
       Entry("  x = c64[6,5] parameter(0)\n  s = c64[3,5] slice(x), slice={[1:6:2], [0:5]}\n"
             "  r = c64[3,5] reverse(s), dimensions={1}\n  z = c64[] constant((1, -2))\n"
             "  p = c64[5,7] pad(r, z), padding=1_1x0_2\n  y = c64[7] parameter(1)\n  x2 = c64[1,7] reshape(y)\n"
             "  c = c64[11,7] concatenate(p, p, x2), dimensions={0}\n"
             "  b = c64[2,11,7] broadcast(c), dimensions={1,2}\n  ROOT o = c64[2,11,7] copy(b)\n")},
      {"complex dynamic-slice / dynamic-update-slice, c128",
       Entry("  x = c128[6,4] parameter(0)\n  i = s32[] parameter(1)\n  j = s32[] constant(1)\n"
             "  d = c128[2,3] dynamic-slice(x, i, j), dynamic_slice_sizes={2,3}\n"
             "  ROOT u = c128[6,4] dynamic-update-slice(x, d, j, i)\n")},
      {"complex elementwise chain, c64",
       Entry("  x = c64[4,7] parameter(0)\n  y = c64[4,7] parameter(1)\n  a = c64[4,7] add(x, y)\n"
             "  m = c64[4,7] multiply(a, x)\n  d = c64[4,7] divide(m, y)\n  n = c64[4,7] negate(d)\n"
             "  s = c64[4,7] subtract(n, x)\n  e = c64[4,7] exponential(s)\n  ab = f32[4,7] abs(e)\n"
             "  re = f32[4,7] real(d)\n  im = f32[4,7] imag(d)\n  t = f32[4,7] add(re, im)\n"
             "  cv = c64[4,7] convert(t)\n  eq = pred[4,7] compare(cv, x), direction=NE\n"
             "  sel = c64[4,7] select(eq, cv, y)\n  w = c128[4,7] convert(sel)\n"
             "  ROOT o = (f32[4,7], c128[4,7], f32[4,7]) tuple(ab, w, t)\n")},
      {"complex(re, im) in a fused chain, f32 -> c64 (jnp.conj as JAX lowers it)",
       Entry("  x = f32[4,5] parameter(0)\n  y = f32[4,5] parameter(1)\n  c = c64[4,5] complex(x, y)\n"
             "  re = f32[4,5] real(c)\n  im = f32[4,5] imag(c)\n  ni = f32[4,5] negate(im)\n"
             "  cj = c64[4,5] complex(re, ni)\n  ROOT m = c64[4,5] multiply(c, cj)\n")},
      {"complex gather (jnp.take on rows), c64",
       Entry("  x = c64[8,3] parameter(0)\n  i = s32[5,1] parameter(1)\n"
             "  ROOT g = c64[5,3] gather(x, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, "
             "index_vector_dim=1, slice_sizes={1,3}\n")},
      {"complex elementwise, c128 with a broadcast scalar (irfft's padding step)",
       Entry("  x = c128[3,5] parameter(0)\n  k = c128[] constant((2, 0.5))\n  b = c128[3,5] broadcast(k), dimensions={}\n"
             "  m = c128[3,5] multiply(x, b)\n  q = c128[3,5] divide(b, m)\n  ab = f64[3,5] abs(q)\n"
             "  sg = c128[3,5] sign(q)\n  c = c64[3,5] convert(sg)\n  ROOT o = (f64[3,5], c64[3,5]) tuple(ab, c)\n")},
  };
}

using PlannedFft = testing::PlannedModule;

// Parses, plans for the CPU and the GPU, and requires a complete GPU plan (PlanForGpu).
void Plan(const std::string& what, const std::string& text, std::vector<PlannedFft>& out) {
  StatusOr<PlannedFft> p = testing::PlanForGpu(what, text);
  ASSERT_TRUE(p.ok()) << p.status().message();
  out.push_back(std::move(*p));
}

// Every kernel of `planned` compiles for sm_90; every plan runs on the host emulator and matches
// the CPU executor on random arguments.
void CompileAndRun(const std::vector<PlannedFft>& planned) {
  StatusOr<std::unique_ptr<testing::HostKernels>> host = testing::CompileAndBuildForHost(planned);
  ASSERT_TRUE(host.ok()) << host.status().message();
  std::mt19937_64 rng(5);
  const auto args = [&](const PlannedFft& p, size_t) {
    std::vector<Array> a;
    for (const Shape& s : p.exe->argument_shapes()) a.push_back(RandomArrayFft(s, rng));
    if (p.name.find("dynamic") != std::string::npos) a[1].SetDouble(0, 3);
    return a;
  };
  testing::CheckOptions options;
  options.check = [](size_t, const Array& got, const Array& want) { return CompareValues(got, want); };
  EXPECT_THAT(testing::CheckPlansAgainstTheCpu(planned, **host, args, options), ::testing::IsEmpty());
}

TEST(KernelCodegenFft, HandWrittenModulesCompileAndMatchTheCpuOnTheHost) {
  std::vector<PlannedFft> planned;
  for (const CaseFft& c : CasesFft()) {
    Plan(c.what, c.text, planned);
    if (HasFatalFailure()) return;
  }
  CompileAndRun(planned);
}

// The generated fft kernels by themselves: strategies and the in-place passes' pointers.
TEST(KernelCodegenFft, KernelsPerTransform) {
  struct Want {
    std::string text, strategy;
    size_t kernels;
  };
  const std::vector<Want> wants = {
      {Fft("c64[3,8]", "c64[3,8]", "FFT", "8"), "fft_shared_radix2", 1},
      {Fft("c64[4,5]", "c64[4,5]", "FFT", "5"), "fft_shared_dft", 1},
      {Fft("c64[2,4,6]", "c64[2,4,6]", "IFFT", "4,6"), "fft_slab", 1},
      {Fft("f32[2,4,8]", "c64[2,4,5]", "RFFT", "4,8"), "fft_slab", 1},
      {Fft("c64[128,256]", "c64[128,256]", "FFT", "128,256"), "fft_shared_radix2", 2},
      {Fft("f64[96,256]", "c128[96,129]", "RFFT", "96,256"), "fft_shared_radix2", 2},
      {Fft("c64[2,6,5]", "f32[2,6,8]", "IRFFT", "6,8"), "fft_slab", 2},
  };
  for (const Want& w : wants) {
    StatusOr<std::unique_ptr<Module>> m = ParseHloModule(w.text);
    ASSERT_TRUE(m.ok()) << m.status().message();
    StatusOr<std::vector<GeneratedKernel>> ks = GenerateOpKernels(*(*m)->entry()->root(), false);
    ASSERT_TRUE(ks.ok()) << ks.status().message();
    ASSERT_EQ(ks->size(), w.kernels) << w.text;
    EXPECT_EQ((*ks)[0].strategy.rfind(w.strategy, 0), 0u) << (*ks)[0].strategy;
    for (const GeneratedKernel& k : *ks) EXPECT_EQ(k.num_pointers, 2);
  }
  // A line longer than shared memory holds is refused, naming the op.
  StatusOr<std::unique_ptr<Module>> big = ParseHloModule(Fft("c64[5001]", "c64[5001]", "FFT", "5001"));
  ASSERT_TRUE(big.ok());
  StatusOr<std::vector<GeneratedKernel>> ks = GenerateOpKernels(*(*big)->entry()->root(), false);
  ASSERT_FALSE(ks.ok());
  EXPECT_NE(ks.status().message().find("'f'"), std::string::npos) << ks.status().message();
}

// The single-op path (GenerateOpKernel on one instruction, as the op-by-op plan runs it), on
// operands with infinities, zeros and a NaN: each op's kernel against the CPU executor.
TEST(KernelCodegenFft, SingleComplexOpsMatchTheCpuOnTheHost) {
  const std::vector<std::string> ops = {
      "c64[9] multiply(p0, p1)", "c64[9] divide(p0, p1)", "f32[9] abs(p0)", "c64[9] exponential(p0)",
      "pred[9] compare(p0, p1), direction=EQ", "c64[9] sign(p0)", "c128[9] convert(p0)", "s32[9] convert(p0)",
      "pred[9] convert(p0)", "c64[9] negate(p0)", "f32[9] imag(p0)", "c64[9] subtract(p0, p1)"};
  using C = std::complex<float>;
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<C> x = {{1, 2}, {-3.5f, 0.25f}, {0, 0}, {inf, 1}, {1e30f, -1e30f}, {nan, 0}, {2, 2}, {0, -1}, {7, 3}};
  const std::vector<C> y = {{1, 2}, {0.5f, -4}, {3, 0}, {2, 0}, {1e-30f, 3}, {1, 1}, {2, 2}, {0, 0.5f}, {-7, 3}};
  std::vector<PlannedFft> planned;
  std::vector<GeneratedKernel> kernels;
  for (const std::string& op : ops) {
    const std::string text = Entry("  p0 = c64[9] parameter(0)\n  p1 = c64[9] parameter(1)\n  ROOT r = " + op + "\n");
    StatusOr<PlannedFft> p = testing::PlanForHost(op, text);
    ASSERT_TRUE(p.ok()) << p.status().message();
    StatusOr<GeneratedKernel> k = GenerateOpKernel(*p->module->entry()->root());
    ASSERT_TRUE(k.ok()) << op << ": " << k.status().message();
    kernels.push_back(std::move(*k));
    planned.push_back(std::move(*p));
  }
  StatusOr<std::unique_ptr<testing::HostKernels>> host = testing::CompileAndBuildForHost({}, kernels);
  ASSERT_TRUE(host.ok()) << host.status().message();
  for (size_t c = 0; c < ops.size(); ++c) {
    const std::string& op = ops[c];
    const std::unique_ptr<Module>* m = &planned[c].module;
    const std::unique_ptr<Executable>* e = &planned[c].exe;
    const GeneratedKernel* k = &kernels[c];
    std::vector<Array> args = {Array::FromVector<C>({9}, x), Array::FromVector<C>({9}, y)};
    StatusOr<std::vector<Array>> want = (*e)->Run(args);
    ASSERT_TRUE(want.ok()) << op << ": " << want.status().message();
    Array got((*m)->entry()->root()->shape());
    std::vector<void*> pointers = {args[0].data()};  // the op's operands, then its result
    if ((*m)->entry()->root()->operand_count() == 2) pointers.push_back(args[1].data());
    pointers.push_back(got.data());
    ASSERT_TRUE((*host)->Launch(*k, pointers).ok()) << op;
    if (got.dtype() == DType::kPred || got.dtype() == DType::kS32) {
      EXPECT_EQ(testing::Compare(got, (*want)[0]), "") << op;
      continue;
    }
    // Elementwise: each element within 1e-6 of its own magnitude (NaN where the CPU has NaN).
    const Array g = got.Convert(DType::kC128), w = (*want)[0].Convert(DType::kC128);
    for (int64_t i = 0; i < 9; ++i) {
      const std::complex<double> a = g.values<std::complex<double>>()[i], b = w.values<std::complex<double>>()[i];
      for (const auto& [u, v] : {std::pair{a.real(), b.real()}, std::pair{a.imag(), b.imag()}}) {
        if (std::isnan(v) || std::isinf(v)) {
          EXPECT_TRUE(std::isnan(v) ? std::isnan(u) : u == v) << op << " element " << i << ": " << u << " vs CPU " << v;
        } else {
          EXPECT_LE(std::fabs(u - v), 1e-6 * std::max(1.0, std::fabs(v))) << op << " element " << i << ": " << u << " vs CPU " << v;
        }
      }
    }
  }
}

// fft([1, 2, 3, 4]) = [10, -2+2i, -2, -2-2i]; ifft of that is [1, 2, 3, 4]; rfft gives the first
// three terms; irfft(rfft(x)) = x.
TEST(KernelCodegenFft, FftOfOneToFourAsWorkedOutByHand) {
  const std::vector<std::pair<std::string, std::string>> modules = {
      {"fft", Fft("c64[4]", "c64[4]", "FFT", "4")},
      {"ifft", Fft("c64[4]", "c64[4]", "IFFT", "4")},
      {"rfft", Fft("f32[4]", "c64[3]", "RFFT", "4")},
      {"irfft", Fft("c64[3]", "f32[4]", "IRFFT", "4")},
  };
  std::vector<PlannedFft> planned;
  for (const auto& [what, text] : modules) {
    Plan(what, text, planned);
    if (HasFatalFailure()) return;
  }
  StatusOr<std::unique_ptr<testing::HostKernels>> host =
      testing::CompileAndBuildForHost(planned, {}, testing::Nvrtc::kSkip);
  ASSERT_TRUE(host.ok()) << host.status().message();
  using C = std::complex<float>;
  const std::vector<C> x = {1, 2, 3, 4}, spectrum = {{10, 0}, {-2, 2}, {-2, 0}, {-2, -2}};
  const std::vector<Array> inputs = {Array::FromVector<C>({4}, x), Array::FromVector<C>({4}, spectrum),
                                     Array::FromVector<float>({4}, {1, 2, 3, 4}),
                                     Array::FromVector<C>({3}, {spectrum[0], spectrum[1], spectrum[2]})};
  for (size_t m = 0; m < planned.size(); ++m) {
    const std::vector<Array> args = {inputs[m]};
    StatusOr<std::vector<Array>> got = testing::RunPlanOnHost(*planned[m].plan, args, **host);
    ASSERT_TRUE(got.ok()) << planned[m].name << ": " << got.status().message();
    const Array y = (*got)[0].Convert(DType::kC128);
    auto v = y.values<std::complex<double>>();
    const std::vector<C>& want = m == 0 || m == 2 ? spectrum : x;
    ASSERT_EQ(v.size(), m == 2 ? 3u : 4u) << planned[m].name;
    for (size_t i = 0; i < v.size(); ++i) {
      EXPECT_NEAR(v[i].real(), want[i].real(), 1e-6) << planned[m].name << " element " << i;
      EXPECT_NEAR(v[i].imag(), want[i].imag(), 1e-6) << planned[m].name << " element " << i;
    }
  }
}

// The modules whose GPU plans needed complex kernels (GpuPlanCompleteness): each plans, runs on
// the host and matches the CPU.
TEST(KernelCodegenFft, RepositoryAndCorpusModulesRunThroughTheirGpuPlans) {
  std::vector<std::string> files;
  const std::filesystem::path repo = XSHARD_SOURCE_DIR;
  for (const char* f : {"tests/data/hlo/fft_odd_length.hlo", "tests/data/hlo/rfft2_irfft.hlo",
                        "tests/data/spmd_partition/fft_fallback.hlo"}) {
    files.push_back((repo / f).string());
  }
  const bool corpus = xs::testing::CorpusAvailable(XSHARD_CORPUS_DIR);
  if (corpus) {
    for (const char* f : {"hlo_parser_test/Fft.hlo", "hlo_parser_test/Ifft2d.hlo", "hlo_parser_test/Rfft2d.hlo",
                          "hlo_parser_test/Irfft3d.hlo", "hlo_parser_test/TransposeC128.hlo",
                          "spmd_partitioner_test/Fft3D.hlo"}) {
      files.push_back(std::string(XSHARD_CORPUS_DIR) + "/" + f);
    }
  }
  StatusOr<std::vector<PlannedFft>> planned = testing::PlanFilesForGpu("", files);
  ASSERT_TRUE(planned.ok()) << planned.status().message();
  CompileAndRun(*planned);
  if (!corpus) GTEST_SKIP() << "the OpenXLA corpus is not at " << XSHARD_CORPUS_DIR << ": only tests/data ran";
}

}  // namespace
}  // namespace xs::cuda

#else  // !XSHARD_WITH_CUDA

TEST(KernelCodegenFft, NeedsTheCudaToolkit) { GTEST_SKIP() << "this xshard was built without CUDA support"; }

#endif  // XSHARD_WITH_CUDA
