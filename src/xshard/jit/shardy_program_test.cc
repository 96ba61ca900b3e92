// End to end: shard_map programs as JAX 0.10 lowers them by default (Shardy), compiled and run on
// 8 devices, against the outputs JAX computed (tests/data/shardy, tests/tools/gen_shardy_shard_map.py).
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "xshard/core/npy.h"
#include "xshard/jit/compile_pipeline.h"
#include "xshard/jit/sharded_program.h"
#include "xshard/runtime/client.h"
#include "xshard/text/parser.h"

namespace xs {
namespace {

const std::filesystem::path kDir = std::filesystem::path(XSHARD_SOURCE_DIR) / "tests/data/shardy";

// Compiles `hlo` (a file of kDir) for 8 devices, runs it on NAME.argI.npy and compares with JAX's
// NAME.outI.npy.
void ExpectJaxOutputs(const std::string& hlo, const std::string& name) {
  std::ifstream in(kDir / hlo);
  ASSERT_TRUE(in) << hlo;
  std::stringstream text;
  text << in.rdbuf();
  auto module = ParseHloModule(text.str(), hlo);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto program = ShardedProgram::Compile(**module, 8);
  ASSERT_TRUE(program.ok()) << program.status().ToString();
  std::vector<Array> args;
  for (int i = 0; std::filesystem::exists(kDir / (name + ".arg" + std::to_string(i) + ".npy")); ++i) {
    auto a = ReadNpy((kDir / (name + ".arg" + std::to_string(i) + ".npy")).string());
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    args.push_back(std::move(*a));
  }
  ClientOptions options;
  options.num_devices = 8;
  auto client = Client::Create(options);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto result = (*program)->Run(**client, args);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  int outputs = 0;
  for (int i = 0; std::filesystem::exists(kDir / (name + ".out" + std::to_string(i) + ".npy")); ++i) {
    auto want = ReadNpy((kDir / (name + ".out" + std::to_string(i) + ".npy")).string());
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    ASSERT_LT(i, static_cast<int>(result->outputs.size()));
    const Array& got = result->outputs[i];
    ASSERT_EQ(got.shape().ToString(false), want->shape().ToString(false)) << hlo << " out" << i;
    auto g = got.values<float>();
    auto w = want->values<float>();
    for (size_t k = 0; k < w.size(); ++k) {
      ASSERT_NEAR(g[k], w[k], 1e-5 + 1e-5 * std::fabs(w[k])) << hlo << " out" << i << " element " << k;
    }
    ++outputs;
  }
  EXPECT_EQ(outputs, static_cast<int>(result->outputs.size()));
  EXPECT_GT(outputs, 0);
}

class ShardyProgramTest : public ::testing::TestWithParam<const char*> {};

// A shard_map whose boundaries name their mesh inline (`<mesh<["a"=4, "b"=2]>, ...>`, the form of
// XLA's shardy_xla_pass_test ShardMap) in a module with no xla.sdy.meshes and no sharding={...}:
// each device doubles its [2,4] block of p0, multiplies it by its [4,3] rows of p1 and psums over
// 'b'. Expected: 2 * p0 @ p1, computed by numpy (inputs: default_rng(7), uniform [-1, 1)).
TEST(ShardyProgramTest, InlineMeshWithoutModuleMeshes) { ExpectJaxOutputs("inline_mesh.hlo", "inline_mesh"); }

TEST_P(ShardyProgramTest, MatchesJaxOutputs) { ExpectJaxOutputs(std::string(GetParam()) + ".hlo", GetParam()); }

// The same programs lowered with jax_use_shardy_partitioner=False (tests/data/shardy/gspmd): a
// Sharding annotation with unspecified dims that feeds a manual-region boundary is refined only
// together with the boundary (wsc_inside and nested ran wrong when propagation refined the
// annotation alone), and a psum's reducer annotated {manual, replicated} (partial_manual) runs
// as an add.
class GspmdShardMapTest : public ::testing::TestWithParam<const char*> {};

TEST_P(GspmdShardMapTest, MatchesJaxOutputs) {
  ExpectJaxOutputs(std::string("gspmd/") + GetParam() + ".hlo", GetParam());
}

INSTANTIATE_TEST_SUITE_P(JaxShardMap, GspmdShardMapTest,
                         ::testing::Values("psum", "all_gather", "ppermute_ring", "partial_manual", "none_dims",
                                           "in_jit", "axis_index", "scan", "two_maps", "psum_scatter",
                                           "all_to_all", "wsc_inside", "device_order", "nested", "nested_both"));

// The same programs as JAX 0.4.38 lowers them with its Shardy partitioner turned on
// (tests/data/shardy/jax0438): that release writes the shard_map's xla.sdy.in_shardings,
// manual_axes and out_shardings on the call of the body, none on the boundary custom-calls (the
// import stopped at "has no frontend attribute xla.sdy.manual_axes"), and quotes its meshes.
class OldShardyExportTest : public ::testing::TestWithParam<const char*> {};

TEST_P(OldShardyExportTest, MatchesJaxOutputs) {
  ExpectJaxOutputs(std::string("jax0438/") + GetParam() + ".hlo", GetParam());
}

INSTANTIATE_TEST_SUITE_P(JaxShardMap, OldShardyExportTest,
                         ::testing::Values("psum", "ppermute_ring", "none_dims", "in_jit", "axis_index", "scan",
                                           "two_maps", "psum_scatter", "all_to_all", "device_order"));

INSTANTIATE_TEST_SUITE_P(JaxShardMap, ShardyProgramTest,
                         ::testing::Values("psum", "all_gather", "ppermute_ring", "partial_manual", "none_dims",
                                           "in_jit", "axis_index", "scan", "two_maps", "psum_scatter",
                                           "all_to_all", "wsc_inside", "device_order", "nested", "nested_both"));

// An operand tiled more finely than a partially manual region's boundary names, on a free axis
// over an open dim ({"x", ?}, {?} / unspecified_dims): the region keeps the finer pieces, as XLA
// merges the operand's tiling into the boundary, instead of gathering them at the boundary
// (wsc_inside: P('x','y') into a region manual over x with a constraint on y inside; nested:
// P('x','y') into x, then psum over y inside). No inserted collective (the Shardy forms and the
// GSPMD nested used to all-gather over y at the boundary, 96 B per device; JAX's compiled Shardy
// programs have none either; the report lists the regions' own collectives, marked written). The GSPMD form of wsc_inside writes the region's result into a
// tuple annotated P('x', None), closed: one all-gather there (192 B before), as XLA's GSPMD
// compile of it also gathers.
TEST(ShardMapBoundaryTest, FinerOperandTilingOnAFreeAxisIsKeptInsideTheRegion) {
  {
    std::ifstream in(kDir / "gspmd/wsc_inside.hlo");
    std::stringstream text;
    text << in.rdbuf();
    auto module = ParseHloModule(text.str(), "wsc_inside");
    ASSERT_TRUE(module.ok()) << module.status().ToString();
    StatusOr<CompiledModule> compiled = CompileModule(**module, 8);
    ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
    std::vector<spmd::CollectiveRecord> c;
    for (const spmd::CollectiveRecord& r : compiled->partitioned.report.collectives) {
      if (!r.written) c.push_back(r);  // the region's own collectives are listed too
    }
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].kind, "all-gather");
    EXPECT_EQ(c[0].cause, "tuple.1");
    EXPECT_EQ(c[0].bytes, 96);
  }
  for (const char* hlo : {"wsc_inside.hlo", "nested.hlo", "gspmd/nested.hlo"}) {
    SCOPED_TRACE(hlo);
    std::ifstream in(kDir / hlo);
    ASSERT_TRUE(in);
    std::stringstream text;
    text << in.rdbuf();
    auto module = ParseHloModule(text.str(), hlo);
    ASSERT_TRUE(module.ok()) << module.status().ToString();
    StatusOr<CompiledModule> compiled = CompileModule(**module, 8);
    ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
    // Only the region's own collectives (the psum, the constraint's) are listed; none inserted.
    for (const spmd::CollectiveRecord& r : compiled->partitioned.report.collectives) {
      EXPECT_TRUE(r.written) << r.kind << " caused by " << r.cause;
    }
  }
}

}  // namespace
}  // namespace xs
