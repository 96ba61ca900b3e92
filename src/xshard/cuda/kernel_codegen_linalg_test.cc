// The linear algebra kernels (cholesky, triangular-solve, lapack_?potrf / ?getrf / ?trsm_ffi) on
// hand-written modules as JAX and XLA write them (f32 and f64, batched, both triangles, both
// sides, transposed, unit diagonal, sizes off multiples of 32, matrices wider than a block of
// threads, shared-memory and global-memory working copies, a matrix that is not positive
// definite, a singular one): every kernel compiles with NVRTC for sm_90 and gives the CPU
// executor's results on the host emulator; small cases are checked against values worked out by
// hand; and the repository / XLA-corpus modules that need these ops plan for the GPU and run
// whole (RunPlanOnHost) as the CPU does.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#ifdef XSHARD_WITH_CUDA

#include <cmath>
#include <filesystem>
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

// How the arguments of a case are drawn.
enum class Fill {
  kSpd,         // B B^T + n I per matrix (cholesky, potrf)
  kTriangular,  // a: diagonal in [1, 2], off-diagonal in [-1, 1] / m; b uniform (solves)
  kGeneral,     // uniform [-1, 1] (LU with pivoting)
  kDominant,    // uniform [-1, 1] plus n on the diagonal (LU without row swaps)
  kTies,        // small integers in [-2, 2]: ties between pivot candidates, zero pivots
};

struct CaseLinalg {
  std::string what, text, strategy;
  Fill fill;
};

std::string EntryModule(const std::string& params, const std::string& root) {
  return "HloModule m\nENTRY e {\n" + params + "  ROOT r = " + root + "\n}\n";
}

std::string Cholesky(const std::string& t, const std::string& dims, bool lower) {
  return EntryModule("  x = " + t + dims + " parameter(0)\n",
                     t + dims + " cholesky(x), lower=" + (lower ? "true" : "false"));
}

std::string Solve(const std::string& t, const std::string& adims, const std::string& bdims, bool left, bool lower,
                  bool transpose, bool unit) {
  return EntryModule("  a = " + t + adims + " parameter(0)\n  b = " + t + bdims + " parameter(1)\n",
                     t + bdims + " triangular-solve(a, b), left_side=" + (left ? "true" : "false") +
                         ", lower=" + (lower ? "true" : "false") + ", unit_diagonal=" + (unit ? "true" : "false") +
                         ", transpose_a=" + (transpose ? "TRANSPOSE" : "NO_TRANSPOSE"));
}

std::string Potrf(const std::string& t, const std::string& dims, const std::string& batch, char uplo) {
  const std::string target = t == "f32" ? "lapack_spotrf_ffi" : "lapack_dpotrf_ffi";
  return EntryModule("  x = " + t + dims + " parameter(0)\n",
                     "(" + t + dims + ", s32" + batch + ") custom-call(x), custom_call_target=\"" + target +
                         "\", api_version=API_VERSION_TYPED_FFI, backend_config={uplo = " + std::to_string(int{uplo}) +
                         " : ui8}");
}

std::string Getrf(const std::string& t, const std::string& dims, const std::string& pivots, const std::string& batch) {
  const std::string target = t == "f32" ? "lapack_sgetrf_ffi" : "lapack_dgetrf_ffi";
  return EntryModule("  x = " + t + dims + " parameter(0)\n",
                     "(" + t + dims + ", s32" + pivots + ", s32" + batch + ") custom-call(x), custom_call_target=\"" +
                         target + "\", api_version=API_VERSION_TYPED_FFI, backend_config={}");
}

std::string Trsm(const std::string& t, const std::string& adims, const std::string& bdims, char side, char uplo,
                 char trans, char diag) {
  const std::string target = t == "f32" ? "lapack_strsm_ffi" : "lapack_dtrsm_ffi";
  auto code = [](char c) { return std::to_string(int{c}) + " : ui8"; };
  return EntryModule("  a = " + t + adims + " parameter(0)\n  b = " + t + bdims + " parameter(1)\n",
                     t + bdims + " custom-call(a, b), custom_call_target=\"" + target +
                         "\", api_version=API_VERSION_TYPED_FFI, backend_config={diag = " + code(diag) +
                         ", side = " + code(side) + ", trans_x = " + code(trans) + ", uplo = " + code(uplo) + "}");
}

std::vector<CaseLinalg> CasesLinalg() {
  std::vector<CaseLinalg> c = {
      {"cholesky f32 lower, batch 3, n 37", Cholesky("f32", "[3,37,37]", true), "linalg_cholesky_shared", Fill::kSpd},
      {"cholesky f64 upper, batch 2x2, n 20", Cholesky("f64", "[2,2,20,20]", false), "linalg_cholesky_shared",
       Fill::kSpd},
      {"cholesky f32 upper, n 100 (global memory)", Cholesky("f32", "[2,100,100]", false), "linalg_cholesky_global",
       Fill::kSpd},
      {"cholesky f64 lower, n 270 > a block of threads", Cholesky("f64", "[270,270]", true), "linalg_cholesky_global",
       Fill::kSpd},
      {"cholesky f32, not positive definite: NaN", Cholesky("f32", "[4,6,6]", true), "linalg_cholesky_shared",
       Fill::kGeneral},
      {"potrf f32 L, batch 2, n 5", Potrf("f32", "[2,5,5]", "[2]", 'L'), "linalg_cholesky_shared", Fill::kSpd},
      {"potrf f64 U, batch 3, n 40", Potrf("f64", "[3,40,40]", "[3]", 'U'), "linalg_cholesky_shared", Fill::kSpd},
      {"potrf f32 U, n 90 (global memory)", Potrf("f32", "[90,90]", "[]", 'U'), "linalg_cholesky_global", Fill::kSpd},
      {"potrf f64 L, not positive definite: info", Potrf("f64", "[5,7,7]", "[5]", 'L'), "linalg_cholesky_shared",
       Fill::kGeneral},
      {"getrf f32 4x4", Getrf("f32", "[4,4]", "[4]", "[]"), "linalg_lu_shared", Fill::kGeneral},
      {"getrf f64 batch 3, tall 7x5", Getrf("f64", "[3,7,5]", "[3,5]", "[3]"), "linalg_lu_shared", Fill::kGeneral},
      {"getrf f32 batch 2, wide 6x9", Getrf("f32", "[2,6,9]", "[2,6]", "[2]"), "linalg_lu_shared", Fill::kGeneral},
      {"getrf f64 batch 9 of 33x33 (more matrices than emulated blocks)", Getrf("f64", "[9,33,33]", "[9,33]", "[9]"),
       "linalg_lu_shared", Fill::kGeneral},
      {"getrf f64 90x90 (global memory)", Getrf("f64", "[90,90]", "[90]", "[]"), "linalg_lu_global", Fill::kGeneral},
      {"getrf f32 300x300 (global memory, n > a block)", Getrf("f32", "[300,300]", "[300]", "[]"), "linalg_lu_global",
       Fill::kDominant},
      {"getrf f64 ties and zero pivots", Getrf("f64", "[6,5,5]", "[6,5]", "[6]"), "linalg_lu_shared", Fill::kTies},
      {"trsm f32 L U N N (jax.scipy solve_triangular)", Trsm("f32", "[4,4]", "[4,3]", 'L', 'U', 'N', 'N'),
       "linalg_substitution_shared", Fill::kTriangular},
      {"trsm f64 R L T U batch 2", Trsm("f64", "[2,6,6]", "[2,5,6]", 'R', 'L', 'T', 'U'), "linalg_substitution_shared",
       Fill::kTriangular},
      {"triangular-solve f32 left lower, m 270 > a block",
       Solve("f32", "[270,270]", "[270,3]", true, true, false, false), "linalg_substitution_shared", Fill::kTriangular},
      {"triangular-solve f64 right upper transposed, b in global memory",
       Solve("f64", "[2,40,40]", "[2,170,40]", false, false, true, false), "linalg_substitution_global",
       Fill::kTriangular},
      {"triangular-solve f32 left upper, b in global memory",
       Solve("f32", "[33,33]", "[33,200]", true, false, false, true), "linalg_substitution_global", Fill::kTriangular},
  };
  // Every side / triangle / transpose / diagonal combination, f32 and f64, batched.
  for (int bits = 0; bits < 16; ++bits) {
    const bool left = bits & 1, lower = bits & 2, transpose = bits & 4, unit = bits & 8;
    const std::string t = bits % 3 == 0 ? "f64" : "f32";
    const std::string bdims = left ? "[3,7,5]" : "[3,5,7]";
    c.push_back({"triangular-solve " + t + (left ? " left" : " right") + (lower ? " lower" : " upper") +
                     (transpose ? " transposed" : "") + (unit ? " unit" : ""),
                 Solve(t, "[3,7,7]", bdims, left, lower, transpose, unit), "linalg_substitution_shared",
                 Fill::kTriangular});
  }
  return c;
}

// Arguments for `shapes` (the matrix is each one's two minor dims).
std::vector<Array> Arguments(const std::vector<Shape>& shapes, Fill fill, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0), diag(1.0, 2.0);
  std::uniform_int_distribution<int> small(-2, 2);
  std::vector<Array> args;
  for (size_t p = 0; p < shapes.size(); ++p) {
    const Shape& s = shapes[p];
    Array a(s);
    if (s.rank() < 2 || a.num_elements() == 0) {
      for (int64_t i = 0; i < a.num_elements(); ++i) a.SetDouble(i, u(rng));
      args.push_back(std::move(a));
      continue;
    }
    const int64_t rows = s.dim(s.rank() - 2), cols = s.dim(s.rank() - 1), mat = rows * cols;
    for (int64_t base = 0; base < a.num_elements(); base += mat) {
      if (fill == Fill::kSpd && rows == cols) {
        std::vector<double> g(static_cast<size_t>(mat));
        for (double& x : g) x = u(rng);
        for (int64_t i = 0; i < rows; ++i) {
          for (int64_t j = 0; j < cols; ++j) {
            double v = i == j ? static_cast<double>(rows) : 0.0;
            for (int64_t k = 0; k < cols; ++k) v += g[i * cols + k] * g[j * cols + k];
            a.SetDouble(base + i * cols + j, v);
          }
        }
        continue;
      }
      for (int64_t i = 0; i < rows; ++i) {
        for (int64_t j = 0; j < cols; ++j) {
          double v = fill == Fill::kTies ? small(rng) : u(rng);
          if (fill == Fill::kTriangular && p == 0) v = i == j ? diag(rng) : v / static_cast<double>(rows);
          if (fill == Fill::kDominant && i == j) v += static_cast<double>(rows);
          a.SetDouble(base + i * cols + j, v);
        }
      }
    }
    args.push_back(std::move(a));
  }
  return args;
}

TEST(KernelCodegenLinalg, KernelsCompileForSm90AndMatchTheCpuOnTheHost) {
  std::vector<testing::PlannedModule> planned;
  std::vector<GeneratedKernel> all;
  const std::vector<CaseLinalg> cases = CasesLinalg();
  for (const CaseLinalg& c : cases) {
    StatusOr<testing::PlannedModule> p = testing::PlanForHost(c.what, c.text);
    ASSERT_TRUE(p.ok()) << p.status().message();
    StatusOr<GeneratedKernel> k = testing::OneRootKernel(*p, c.strategy);
    ASSERT_TRUE(k.ok()) << k.status().message();
    EXPECT_LE(k->launch.block, 256) << c.what;
    all.push_back(std::move(*k));
    planned.push_back(std::move(*p));
  }
  StatusOr<std::unique_ptr<testing::HostKernels>> host = testing::CompileAndBuildForHost({}, all);
  ASSERT_TRUE(host.ok()) << host.status().message();
  std::mt19937_64 rng(7);
  int nan_results = 0, failed_infos = 0, swaps = 0, zero_pivots = 0;
  for (size_t c = 0; c < cases.size(); ++c) {
    const std::vector<Array> args = Arguments(planned[c].exe->argument_shapes(), cases[c].fill, rng);
    StatusOr<std::vector<Array>> want = planned[c].exe->Run(args);
    ASSERT_TRUE(want.ok()) << cases[c].what << ": " << want.status().message();
    StatusOr<std::vector<Array>> got = testing::RunOnHost(*planned[c].exe, args, **host);
    ASSERT_TRUE(got.ok()) << cases[c].what << ": " << got.status().message();
    ASSERT_EQ(got->size(), want->size()) << cases[c].what;
    for (size_t i = 0; i < want->size(); ++i) {
      EXPECT_EQ(testing::Compare((*got)[i], (*want)[i]), "") << cases[c].what << ", result " << i;
    }
    // The cases reach what they are meant to (so a skipped path cannot pass unnoticed).
    const Array& first = (*want)[0];
    if (std::isnan(first.GetDouble(0))) ++nan_results;
    if (cases[c].text.find("potrf") != std::string::npos) {
      for (int64_t b = 0; b < (*want)[1].num_elements(); ++b) failed_infos += (*want)[1].GetDouble(b) != 0;
    }
    if (cases[c].text.find("getrf") != std::string::npos) {
      const Array& piv = (*want)[1];
      const int64_t k = piv.dims().back();
      for (int64_t e = 0; e < piv.num_elements(); ++e) swaps += piv.GetDouble(e) != static_cast<double>(e % k + 1);
      for (int64_t b = 0; b < (*want)[2].num_elements(); ++b) zero_pivots += (*want)[2].GetDouble(b) != 0;
    }
  }
  EXPECT_GE(nan_results, 1) << "no cholesky case failed as not positive definite";
  EXPECT_GE(failed_infos, 1) << "no potrf case reported a failure in info";
  EXPECT_GE(swaps, 10) << "the LU cases hardly pivot";
  EXPECT_GE(zero_pivots, 1) << "no LU case met a zero pivot";
}

// Modules whose root kernels are built for the host together (one host compile), then run.
class HostRuns {
 public:
  explicit HostRuns(const std::vector<std::string>& texts) : texts_(texts) {
    std::vector<GeneratedKernel> kernels;
    for (const std::string& text : texts) {
      StatusOr<std::unique_ptr<Module>> m = ParseHloModule(text);
      if (!m.ok()) {
        host_ = m.status();
        return;
      }
      StatusOr<std::unique_ptr<Executable>> e = Executable::Create(**m);
      if (!e.ok()) {
        host_ = e.status();
        return;
      }
      StatusOr<std::vector<GeneratedKernel>> ks = GenerateOpKernels(*(*m)->entry()->root(), false);
      if (!ks.ok()) {
        host_ = ks.status();
        return;
      }
      for (GeneratedKernel& k : *ks) kernels.push_back(std::move(k));
      modules_.push_back(std::move(*m));
      exes_.push_back(std::move(*e));
    }
    host_ = testing::HostKernels::Build(kernels);
  }
  // The module of `text` (one of the constructor's) run with `args`.
  StatusOr<std::vector<Array>> Run(const std::string& text, const std::vector<Array>& args) {
    if (!host_.ok()) return host_.status();
    for (size_t i = 0; i < texts_.size(); ++i) {
      if (texts_[i] == text) return testing::RunOnHost(*exes_[i], args, **host_);
    }
    return NotFound("module not prepared:\n", text);
  }

 private:
  std::vector<std::string> texts_;
  std::vector<std::unique_ptr<Module>> modules_;
  std::vector<std::unique_ptr<Executable>> exes_;
  StatusOr<std::unique_ptr<testing::HostKernels>> host_ = Unimplemented("not built");
};

Array Matrix(DType t, std::vector<int64_t> dims, const std::vector<double>& v) {
  Array a(Shape(t, dims));
  for (int64_t i = 0; i < a.num_elements(); ++i) a.SetDouble(i, v[static_cast<size_t>(i)]);
  return a;
}

void ExpectValues(const Array& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.num_elements(), static_cast<int64_t>(want.size())) << what;
  for (int64_t i = 0; i < got.num_elements(); ++i) {
    EXPECT_NEAR(got.GetDouble(i), want[static_cast<size_t>(i)], 1e-6) << what << ", element " << i;
  }
}

// [[4, 2], [2, 5]] = L L^T with L = [[2, 0], [1, 2]]; upper gives L^T. potrf keeps the other
// triangle's 2. A lower triangle [[2, 0], [1, 1]] solves x = [2, 3] to [1, 2]. LU of
// [[1, 2], [3, 4]] swaps the rows (|3| > |1|): [[3, 4], [1/3, 2/3]], pivots [2, 2].
TEST(KernelCodegenLinalg, SmallCasesMatchValuesWorkedOutByHand) {
  HostRuns runs({Cholesky("f32", "[2,2]", true), Cholesky("f64", "[2,2]", false), Potrf("f32", "[2,2]", "[]", 'L'),
                 Potrf("f64", "[2,2]", "[]", 'L'), Solve("f32", "[2,2]", "[2,1]", true, true, false, false),
                 Trsm("f64", "[2,2]", "[1,2]", 'R', 'U', 'N', 'N'), Getrf("f64", "[2,2]", "[2]", "[]"),
                 Getrf("f32", "[2,2]", "[2]", "[]")});
  auto RunOne = [&](const std::string& text, const std::vector<Array>& args) { return runs.Run(text, args); };
  const std::vector<double> spd = {4, 2, 2, 5};
  StatusOr<std::vector<Array>> lower = RunOne(Cholesky("f32", "[2,2]", true), {Matrix(DType::kF32, {2, 2}, spd)});
  ASSERT_TRUE(lower.ok()) << lower.status().message();
  ExpectValues((*lower)[0], {2, 0, 1, 2}, "cholesky lower");
  StatusOr<std::vector<Array>> upper = RunOne(Cholesky("f64", "[2,2]", false), {Matrix(DType::kF64, {2, 2}, spd)});
  ASSERT_TRUE(upper.ok()) << upper.status().message();
  ExpectValues((*upper)[0], {2, 1, 0, 2}, "cholesky upper");
  StatusOr<std::vector<Array>> potrf = RunOne(Potrf("f32", "[2,2]", "[]", 'L'), {Matrix(DType::kF32, {2, 2}, spd)});
  ASSERT_TRUE(potrf.ok()) << potrf.status().message();
  ExpectValues((*potrf)[0], {2, 2, 1, 2}, "potrf factor");
  ExpectValues((*potrf)[1], {0}, "potrf info");
  // [[1, 2], [2, 1]] is not positive definite: the second pivot is 1 - 4 < 0, info 2, the first
  // column factored ([1, 2]) and the second left as it was.
  StatusOr<std::vector<Array>> bad =
      RunOne(Potrf("f64", "[2,2]", "[]", 'L'), {Matrix(DType::kF64, {2, 2}, {1, 2, 2, 1})});
  ASSERT_TRUE(bad.ok()) << bad.status().message();
  ExpectValues((*bad)[0], {1, 2, 2, 1}, "potrf factor when not positive definite");
  ExpectValues((*bad)[1], {2}, "potrf info when not positive definite");
  StatusOr<std::vector<Array>> chol_bad =
      RunOne(Cholesky("f32", "[2,2]", true), {Matrix(DType::kF32, {2, 2}, {1, 2, 2, 1})});
  ASSERT_TRUE(chol_bad.ok()) << chol_bad.status().message();
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(std::isnan((*chol_bad)[0].GetDouble(i))) << "element " << i;

  StatusOr<std::vector<Array>> x =
      RunOne(Solve("f32", "[2,2]", "[2,1]", true, true, false, false),
             {Matrix(DType::kF32, {2, 2}, {2, 0, 1, 1}), Matrix(DType::kF32, {2, 1}, {2, 3})});
  ASSERT_TRUE(x.ok()) << x.status().message();
  ExpectValues((*x)[0], {1, 2}, "forward substitution");
  // Upper [[2, 1], [0, 4]] from the right: x [[2, 1], [0, 4]] = [4, 6] gives x = [2, 1].
  StatusOr<std::vector<Array>> xr =
      RunOne(Trsm("f64", "[2,2]", "[1,2]", 'R', 'U', 'N', 'N'),
             {Matrix(DType::kF64, {2, 2}, {2, 1, 0, 4}), Matrix(DType::kF64, {1, 2}, {4, 6})});
  ASSERT_TRUE(xr.ok()) << xr.status().message();
  ExpectValues((*xr)[0], {2, 1}, "trsm from the right");

  StatusOr<std::vector<Array>> lu =
      RunOne(Getrf("f64", "[2,2]", "[2]", "[]"), {Matrix(DType::kF64, {2, 2}, {1, 2, 3, 4})});
  ASSERT_TRUE(lu.ok()) << lu.status().message();
  ExpectValues((*lu)[0], {3, 4, 1.0 / 3, 2.0 / 3}, "lu");
  ExpectValues((*lu)[1], {2, 2}, "pivots");
  ExpectValues((*lu)[2], {0}, "info");
  // [[1, 1], [-1, -1]]: a tie for the pivot keeps row 1; the second pivot is exactly zero.
  StatusOr<std::vector<Array>> sing =
      RunOne(Getrf("f32", "[2,2]", "[2]", "[]"), {Matrix(DType::kF32, {2, 2}, {1, 1, -1, -1})});
  ASSERT_TRUE(sing.ok()) << sing.status().message();
  ExpectValues((*sing)[0], {1, 1, -1, 0}, "singular lu");
  ExpectValues((*sing)[1], {1, 2}, "singular pivots");
  ExpectValues((*sing)[2], {2}, "singular info");
}

// The modules of tests/data and of the XLA corpus that need these ops: planned for the GPU with
// no unsupported step, and run whole on the host against the CPU, with uniform [-1, 1] arguments
// (most factorizations fail: NaN / info paths) and with symmetric positive definite ones.
TEST(KernelCodegenLinalg, ModulesNeedingLinalgPlanForTheGpuAndRunOnTheHost) {
  struct File {
    std::string path;
    bool corpus;
  };
  const std::filesystem::path data = std::filesystem::path(XSHARD_SOURCE_DIR) / "tests" / "data" / "hlo";
  std::vector<File> files = {{(data / "cholesky_lapack.hlo").string(), false},
                             {(data / "linalg_solve_det_inv.hlo").string(), false},
                             {(data / "solve_triangular_lapack.hlo").string(), false}};
  const bool corpus = xs::testing::CorpusAvailable(XSHARD_CORPUS_DIR);
  if (corpus) {
    for (const char* f : {"hlo_parser_test/MetadataWithCholesky.hlo", "hlo_parser_test/TriangularSolve.hlo",
                          "spmd_partitioner_test/Cholesky.hlo", "spmd_partitioner_test/TriangularSolve.hlo"}) {
      files.push_back({std::string(XSHARD_CORPUS_DIR) + "/" + f, true});
    }
  }
  std::mt19937_64 rng(11);
  for (const File& f : files) {
    StatusOr<testing::PlannedModule> p = testing::PlanFileForGpu(f.path);
    ASSERT_TRUE(p.ok()) << p.status().message();
    int linalg = 0;
    for (const GeneratedKernel& k : testing::PlanKernels(*p->plan)) linalg += k.strategy.rfind("linalg_", 0) == 0;
    EXPECT_GE(linalg, 1) << f.path << ": no linear algebra kernel in the plan";
    const std::span<const testing::PlannedModule> one(&*p, 1);
    StatusOr<std::unique_ptr<testing::HostKernels>> host =
        testing::CompileAndBuildForHost(one, {}, testing::Nvrtc::kSkip);
    ASSERT_TRUE(host.ok()) << f.path << ": " << host.status().message();
    for (Fill fill : {Fill::kGeneral, Fill::kSpd}) {
      const auto args = [&](const testing::PlannedModule& m, size_t) {
        return Arguments(m.exe->argument_shapes(), fill, rng);
      };
      EXPECT_THAT(testing::CheckPlansAgainstTheCpu(one, **host, args), ::testing::IsEmpty())
          << (fill == Fill::kSpd ? "(positive definite arguments)" : "");
    }
  }
  if (!corpus) GTEST_SKIP() << "the XLA corpus is not at " << XSHARD_CORPUS_DIR << ": only tests/data ran";
}

// Complex matrices and integer ones are refused with the op's name, not miscomputed.
TEST(KernelCodegenLinalg, UnsupportedElementTypesAreRefusedByName) {
  StatusOr<std::unique_ptr<Module>> m = ParseHloModule(Cholesky("c64", "[3,3]", true));
  ASSERT_TRUE(m.ok()) << m.status().message();
  StatusOr<std::vector<GeneratedKernel>> ks = GenerateOpKernels(*(*m)->entry()->root(), false);
  ASSERT_FALSE(ks.ok());
  EXPECT_EQ(ks.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(ks.status().message().find("'r'"), std::string::npos) << ks.status().message();
  EXPECT_EQ(ks.status().message().rfind("cuda: ", 0), 0u) << ks.status().message();
}

}  // namespace
}  // namespace xs::cuda

#else  // !XSHARD_WITH_CUDA

TEST(KernelCodegenLinalg, NeedsTheCudaToolkit) { GTEST_SKIP() << "this xshard was built without CUDA support"; }

#endif  // XSHARD_WITH_CUDA
