// JAX's jnp.linalg / jax.scipy.linalg programs that lower on CPU to the LAPACK custom-calls of
// executable_lapack.cc (geqrf, orgqr, ormqr, geqp3, syevd / heevd, gesdd, gesvd, geev, gees,
// gehrd, sytrd, gtsv): the committed modules tests/data/hlo/lapack_*.hlo run on the executor and
// every output leaf is compared with JAX 0.10.2's CPU result (NAME.out<i>.npy, written by
// tests/tools/gen_executor_refs.py's LapackCases; inputs by the same formula as there).
//
// Outputs are compared as they are, signs included: JAX's kernels and xshard's call the same
// LAPACK routines (JAX through scipy's OpenBLAS, xshard through the system's), and Householder QR,
// the symmetric / SVD divide-and-conquer, geev and the real Schur / Hessenberg reductions fix
// their signs by the algorithm, not by rounding. Checked to hold with every OpenBLAS kernel set
// (OPENBLAS_CORETYPE=Prescott, Nehalem, Sandybridge, Haswell, Zen, SkylakeX, Cooperlake) on the
// same references, with two provisions made in gen_executor_refs.py: the inputs of svd / eig /
// schur get + 2 I (gen's Input matrices are often singular, and the vectors of a zero singular
// value or eigenvalue follow rounding), and the complex Schur case compares T's diagonal, |T|,
// |Z| and Z T Z^H (its Schur vectors' unit phases do follow rounding: they differed between
// kernel sets). The tolerances cover the rounding differences of the two builds' BLAS kernels.
#include <cmath>
#include <complex>
#include <fstream>
#include <sstream>

#include "gtest/gtest.h"
#include "xshard/core/npy.h"
#include "xshard/exec/executable.h"
#include "xshard/text/parser.h"

namespace xs {
namespace lapack_refs {
namespace {

const std::string kLapackDataDir = std::string(XSHARD_SOURCE_DIR) + "/tests/data/hlo/";

// Element k of parameter i: gen_executor_refs.py's Input (complex: the real part, imaginary 0).
Array LapackInput(int i, const Shape& shape) {
  Array a(shape);
  for (int64_t k = 0; k < a.num_elements(); ++k) {
    a.SetDouble(k, IsInteger(shape.dtype()) ? static_cast<double>((7 * k + 3 * i) % 11 - 5)
                                            : static_cast<double>((37 * k + 11 * i) % 101 - 50) / 64.0);
  }
  return a;
}

std::string LapackReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// |got - want| <= tol * max(1, |want|): f32 / c64 results of 4..6-order factorizations differ
// in the last bits between the two OpenBLAS builds (their BLAS kernels round differently).
double LapackTolerance(DType t) { return t == DType::kF32 || t == DType::kC64 ? 2e-5 : 1e-12; }

void ExpectLeafClose(const std::string& name, int leaf, const Array& got, const Array& want) {
  ASSERT_EQ(got.dtype(), want.dtype()) << name << " out" << leaf;
  ASSERT_EQ(got.dims(), want.dims()) << name << " out" << leaf;
  if (IsInteger(got.dtype())) {
    for (int64_t k = 0; k < got.num_elements(); ++k) {
      EXPECT_EQ(got.GetDouble(k), want.GetDouble(k)) << name << " out" << leaf << "[" << k << "]";
    }
    return;
  }
  const Array g = got.Convert(DType::kC128), w = want.Convert(DType::kC128);
  const auto gv = g.values<std::complex<double>>(), wv = w.values<std::complex<double>>();
  const double tol = LapackTolerance(got.dtype());
  int bad = 0;
  double worst = 0;
  for (int64_t k = 0; k < got.num_elements(); ++k) {
    const std::complex<double> x = gv[k], y = wv[k];
    if (std::isnan(y.real()) || std::isnan(y.imag())) {
      EXPECT_TRUE(std::isnan(x.real()) || std::isnan(x.imag())) << name << " out" << leaf << "[" << k << "]";
      continue;
    }
    const double err = std::abs(x - y) / std::max(1.0, std::abs(y));
    worst = std::max(worst, err);
    if (!(err <= tol) && ++bad <= 5) {
      ADD_FAILURE() << name << " out" << leaf << "[" << k << "]: got " << x << ", JAX " << y;
    }
  }
  ::testing::Test::RecordProperty(StrCat(name, "_out", leaf, "_max_rel_err"), StrCat(worst));
}

class ExecutableLapackRefs : public ::testing::TestWithParam<std::string> {};

TEST_P(ExecutableLapackRefs, MatchesJaxOnCpu) {
  const std::string name = GetParam();
  StatusOr<std::unique_ptr<Module>> m = ParseHloModule(LapackReadText(kLapackDataDir + name + ".hlo"), name + ".hlo");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  StatusOr<std::unique_ptr<Executable>> exe = Executable::Create(**m);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  std::vector<Array> args;
  for (size_t i = 0; i < (*exe)->argument_shapes().size(); ++i) {
    args.push_back(LapackInput(static_cast<int>(i), (*exe)->argument_shapes()[i]));
  }
  StatusOr<std::vector<Array>> out = (*exe)->Run(args);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  for (size_t leaf = 0; leaf < out->size(); ++leaf) {
    StatusOr<Array> want = ReadNpy(kLapackDataDir + name + ".out" + std::to_string(leaf) + ".npy");
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    ExpectLeafClose(name, static_cast<int>(leaf), (*out)[leaf], *want);
  }
  std::ifstream more(kLapackDataDir + name + ".out" + std::to_string(out->size()) + ".npy");
  EXPECT_FALSE(more.good()) << name << ": JAX produced more outputs";
}

INSTANTIATE_TEST_SUITE_P(F32AndC64, ExecutableLapackRefs,
                         ::testing::Values("lapack_qr_batch", "lapack_qr_wide", "lapack_qr_complete_c64",
                                           "lapack_qr_pivoting", "lapack_qr_multiply", "lapack_eigh",
                                           "lapack_eigh_upper", "lapack_eigvalsh_c64", "lapack_svd_full",
                                           "lapack_svd_values", "lapack_svd_values_c64", "lapack_svd_qr_algorithm",
                                           "lapack_eig", "lapack_eig_c64", "lapack_schur", "lapack_schur_c64",
                                           "lapack_hessenberg", "lapack_tridiagonal", "lapack_tridiagonal_solve",
                                           "lapack_pinv_lstsq", "lapack_det_slogdet_solve_inv"));
INSTANTIATE_TEST_SUITE_P(F64, ExecutableLapackRefs,
                         ::testing::Values("lapack_qr_complete_f64", "lapack_eigh_f64", "lapack_svd_economy_f64",
                                           "lapack_eigvals_f64", "lapack_schur_f64", "lapack_hessenberg_f64",
                                           "lapack_tridiagonal_upper_f64", "lapack_tridiagonal_solve_f64",
                                           "lapack_pinv_lstsq_f64", "lapack_det_slogdet_solve_inv_f64"));

// A LAPACK custom-call whose result tuple does not fit its operand fails at plan time, naming
// the instruction, and an unknown mode character names the allowed ones.
TEST(ExecutableLapackRefs, MalformedCallsAreErrorsNamingTheInstruction) {
  auto plan = [](const std::string& body) {
    StatusOr<std::unique_ptr<Module>> m =
        ParseHloModule("HloModule m\nENTRY main {\n  a = f32[3,4,4] parameter(0)\n" + body + "\n}\n");
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    if (!m.ok()) return m.status();
    return Executable::Create(**m).status();
  };
  Status s = plan(R"(  ROOT q = (f32[3,4,4], f32[3,3]) custom-call(a), custom_call_target="lapack_sgeqrf_ffi")");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("custom-call 'q' (lapack_sgeqrf_ffi): the result must be (f32[3,4,4], f32[3,4])"),
            std::string::npos)
      << s.message();
  s = plan(
      R"(  ROOT e = (f32[3,4,4], f32[3,4], s32[3]) custom-call(a), custom_call_target="lapack_ssyevd_ffi", backend_config={mode = 88 : ui8, uplo = 76 : ui8})");
  EXPECT_NE(
      s.message().find("'e' (lapack_ssyevd_ffi): backend_config field mode = 88 is not one of 'V' (86), 'N' (78)"),
      std::string::npos)
      << s.message();
  s = plan(
      R"(  ROOT e = (f64[3,4,4], f64[3,4], s32[3]) custom-call(a), custom_call_target="lapack_dsyevd_ffi", backend_config={mode = 86 : ui8, uplo = 76 : ui8})");
  EXPECT_NE(s.message().find("operand 0 is f32[3,4,4]; the target's letter (s, d, c, z) takes f64 arrays"),
            std::string::npos)
      << s.message();
  s = plan(
      R"(  ROOT v = (f32[3,4,4], f32[3,4], f32[3,4,4], f32[3,4,4], s32[3]) custom-call(a), custom_call_target="lapack_sgesdd_ffi")");
  EXPECT_NE(s.message().find("backend_config needs the field mode"), std::string::npos) << s.message();
  s = plan(
      R"(  ROOT t = (f32[3,4,4], f32[3,4,4], f32[3,4], f32[3,4], s32[3], s32[3]) custom-call(a, a), custom_call_target="lapack_sgees_ffi", backend_config={mode = 86 : ui8, sort = 78 : ui8})");
  EXPECT_NE(s.message().find("takes 1 operand(s), got 2"), std::string::npos) << s.message();
  // Mode 'N' with economy u / vt (svd(compute_uv=False, full_matrices=False)) plans, as does the
  // full form.
  EXPECT_TRUE(plan(R"(  a2 = f32[3,4,6] parameter(1)
  ROOT v = (f32[3,4,6], f32[3,4], f32[3,4,4], f32[3,4,6], s32[3]) custom-call(a2), custom_call_target="lapack_sgesdd_ffi", backend_config={mode = 78 : ui8})")
                  .ok());
  EXPECT_TRUE(plan(R"(  a2 = f32[3,4,6] parameter(1)
  ROOT v = (f32[3,4,6], f32[3,4], f32[3,4,4], f32[3,6,6], s32[3]) custom-call(a2), custom_call_target="lapack_sgesdd_ffi", backend_config={mode = 78 : ui8})")
                  .ok());
  // A routine JAX does not register for that letter stays an unsupported custom-call.
  s = plan(R"(  ROOT h = (f32[3,4,4], f32[3,4], s32[3]) custom-call(a), custom_call_target="lapack_sheevd_ffi")");
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented) << s.message();
  EXPECT_NE(s.message().find("lapack_{c,z}heevd_ffi"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace lapack_refs
}  // namespace xs
