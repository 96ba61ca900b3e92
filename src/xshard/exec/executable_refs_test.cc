// Runs the committed reference modules (tests/data/hlo/NAME.hlo: the seed notebooks' modules and
// modules JAX 0.10.2 lowered, incl. seed 002's CNN) and compares every output leaf with JAX's CPU
// result (NAME.out<i>.npy). Inputs come from MakeInput, the same formula
// tests/tools/gen_executor_refs.py uses, so nothing but outputs is stored.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gtest/gtest.h"
#include "xshard/core/npy.h"
#include "xshard/exec/executable.h"
#include "xshard/text/parser.h"

namespace xs {
namespace {

const std::string kDataDir = std::string(XSHARD_SOURCE_DIR) + "/tests/data/hlo/";

// Element k of parameter i (see gen_executor_refs.py's Input).
Array MakeInput(int i, const Shape& shape) {
  Array a(shape);
  for (int64_t k = 0; k < a.num_elements(); ++k) {
    double v;
    if (shape.dtype() == DType::kPred) {
      v = static_cast<double>((k + i) % 2);
    } else if (IsInteger(shape.dtype())) {
      v = static_cast<double>((7 * k + 3 * i) % 11 - 5);
    } else {
      v = static_cast<double>((37 * k + 11 * i) % 101 - 50) / 64.0;
    }
    a.SetDouble(k, v);
  }
  return a;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Relative tolerance by dtype: f16 / bf16 keep ~3 digits; transcendental f32 ops differ from
// XLA's vectorized versions in the last bits.
double Tolerance(DType t) {
  if (t == DType::kF16 || t == DType::kBF16) return 1e-2;
  if (t == DType::kF32 || t == DType::kC64) return 2e-5;
  return 1e-12;
}

void ExpectMatches(const std::string& name, int leaf, const Array& got, const Array& want) {
  ASSERT_EQ(got.dtype(), want.dtype()) << name << " out" << leaf;
  ASSERT_EQ(got.dims(), want.dims()) << name << " out" << leaf;
  const double tol = Tolerance(got.dtype());
  int bad = 0;
  for (int64_t k = 0; k < got.num_elements() && bad < 5; ++k) {
    const double g = got.GetDouble(k), w = want.GetDouble(k);
    if (std::isnan(w) && std::isnan(g)) continue;
    if (std::isinf(w) && g == w) continue;
    if (!(std::fabs(g - w) <= tol * std::max(1.0, std::fabs(w)))) {
      ++bad;
      ADD_FAILURE() << name << " out" << leaf << "[" << k << "]: got " << g << ", JAX " << w;
    }
  }
}

class ExecutableRefs : public ::testing::TestWithParam<std::string> {};

TEST_P(ExecutableRefs, MatchesJaxOnCpu) {
  const std::string name = GetParam();
  StatusOr<std::unique_ptr<Module>> m = ParseHloModule(ReadText(kDataDir + name + ".hlo"), name + ".hlo");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  StatusOr<std::unique_ptr<Executable>> exe = Executable::Create(**m);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  std::vector<Array> args;
  for (size_t i = 0; i < (*exe)->argument_shapes().size(); ++i) {
    args.push_back(MakeInput(static_cast<int>(i), (*exe)->argument_shapes()[i]));
  }
  StatusOr<std::vector<Array>> out = (*exe)->Run(args);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  for (size_t leaf = 0; leaf < out->size(); ++leaf) {
    const std::string path = kDataDir + name + ".out" + std::to_string(leaf) + ".npy";
    // ml_dtypes saves its types (f8*, int4, ...) as opaque '<V1': read as the output's type.
    StatusOr<Array> want = ReadNpy(path, NpyOpaqueDType((*out)[leaf].dtype()));
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    ExpectMatches(name, static_cast<int>(leaf), (*out)[leaf], *want);
  }
  EXPECT_FALSE(std::filesystem::exists(kDataDir + name + ".out" + std::to_string(out->size()) + ".npy"))
      << name << ": JAX produced more outputs";
}

INSTANTIATE_TEST_SUITE_P(
    Seeds, ExecutableRefs,
    ::testing::Values("seed_sigmoid", "seed_sigmoid_grad", "seed_irtohlo_multiply", "seed_pjit_square",
                      "seed_pjit_dot", "matmul_f16", "cnn_seed002"));
INSTANTIATE_TEST_SUITE_P(
    JaxLowered, ExecutableRefs,
    ::testing::Values("gather_batching", "scatter_add_drop", "maxpool_grad", "argsort_stable", "argmax_rows",
                      "fori_loop_sum", "switch3", "scan_cumprod_dus", "int_floor_div_rem", "cumsum_window",
                      "bf16_matmul_f32_acc", "conv_feature_groups", "logsumexp_softmax",
                      "dynamic_slice_clamp", "pad_negative_interior", "einsum_batch",
                      "clamp_select_compare", "erf_tanh_logistic"));
// topk, fft and jnp.linalg, which JAX lowers on CPU to LAPACK custom-calls (potrf, getrf, trsm).
INSTANTIATE_TEST_SUITE_P(
    JaxExtraOps, ExecutableRefs,
    ::testing::Values("top_k_rows", "fft_odd_length", "rfft2_irfft", "cholesky_lapack", "solve_triangular_lapack",
                      "linalg_solve_det_inv"));

// float8 / float4 / int4 / int2, which XLA's CPU backend computes widened (tests/tools/
// gen_executor_refs.py NarrowTypeCases): outputs of those types compare exactly.
INSTANTIATE_TEST_SUITE_P(JaxNarrowTypes, ExecutableRefs,
                         ::testing::Values("narrow_f8_scaled_matmul", "narrow_int4_matmul", "narrow_f8_elementwise",
                                           "narrow_f8_reduce", "narrow_converts"));

TEST(ExecutableRefs, SeedSigmoidPrintsTheNotebookValue) {
  // jit(sigmoid)(ones(10)) = 1 / (1 + e^-1) = 0.7310586; jit(grad(sigmoid))(1.) = 0.19661194.
  StatusOr<std::unique_ptr<Module>> m = ParseHloModule(ReadText(kDataDir + "seed_sigmoid.hlo"));
  ASSERT_TRUE(m.ok());
  std::vector<Array> args = {Array::Full(DType::kF32, {10}, 1.0)};
  std::vector<Array> out = *Execute(**m, args);
  EXPECT_FLOAT_EQ(static_cast<float>(out[0].GetDouble(9)), 0.7310586f);
  m = ParseHloModule(ReadText(kDataDir + "seed_sigmoid_grad.hlo"));
  ASSERT_TRUE(m.ok());
  std::vector<Array> one = {Array::Scalar<float>(1.0f)};
  EXPECT_FLOAT_EQ(static_cast<float>((*Execute(**m, one))[0].GetDouble(0)), 0.19661194f);
}

TEST(ExecutableRefs, SeedIrToHloMultiplyGivesTwelve) {
  // Seed 001: execute([[3.]], [[4.]]) -> [DeviceArray([[12.]])].
  StatusOr<std::unique_ptr<Module>> m = ParseHloModule(ReadText(kDataDir + "seed_irtohlo_multiply.hlo"));
  ASSERT_TRUE(m.ok());
  std::vector<Array> args = {Array::FromVector<float>({1, 1}, {3.0f}), Array::FromVector<float>({1, 1}, {4.0f})};
  std::vector<Array> out = *Execute(**m, args);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].ToString(), "[[12.]]");
}

TEST(ExecutableRefs, SeedPjitDotGivesZeroToSeven) {
  // Seed 002: pjit(jnp.dot)(eye(8), arange(8).reshape(8,1)) -> 0..7 (one row per device).
  StatusOr<std::unique_ptr<Module>> m = ParseHloModule(ReadText(kDataDir + "seed_pjit_dot.hlo"));
  ASSERT_TRUE(m.ok());
  Array eye(DType::kF32, {8, 8});
  for (int i = 0; i < 8; ++i) eye.SetDouble(i * 9, 1.0);
  std::vector<Array> args = {eye, Array::Iota(DType::kS32, {8, 1})};
  std::vector<Array> out = *Execute(**m, args);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(out[0].GetDouble(i), i);
}

}  // namespace
}  // namespace xs
