// SPMD modules exactly as JAX 0.10 partitions and compiles them (tests/data/spmd/*.hlo, made by
// tests/tools/make_spmd_data.py): each device's inputs from <name>.args/dev<d>/, compared with the
// outputs JAX computed on the same device (<name>.out/dev<d>/out0.npy).
#include "xshard/ir/attributes.h"
#include "xshard/ir/module.h"
#include "xshard/ir/verifier.h"
#include "xshard/kernels/dot.h"
#include "xshard/exec/executable.h"
#include "xshard/text/parser.h"
#include "xshard/text/printer.h"
#include "xshard/runtime/client.h"
#include "xshard/comm/collectives.h"
#include "xshard/comm/communicator.h"
#include "xshard/comm/replica_groups.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "xshard/core/npy.h"
#include "xshard/runtime/spmd_executor.h"
#include "xshard/runtime/spmd_executor_io.h"

namespace xs {
namespace {

namespace fs = std::filesystem;

const fs::path kDir = fs::path(XSHARD_SOURCE_DIR) / "tests" / "data" / "spmd";

class JaxPartitionedTest : public ::testing::TestWithParam<const char*> {};

TEST_P(JaxPartitionedTest, MatchesJaxOnEveryDevice) {
  const std::string name = GetParam();
  std::ifstream in(kDir / (name + ".hlo"));
  ASSERT_TRUE(in) << "missing " << (kDir / (name + ".hlo"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  StatusOr<std::unique_ptr<Module>> module = ParseHloModule(text);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  StatusOr<std::unique_ptr<SpmdExecutable>> exe = SpmdExecutable::Create(**module);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  const int64_t n = (*exe)->num_devices();
  std::vector<int64_t> devices(n);
  for (int64_t d = 0; d < n; ++d) devices[d] = d;
  StatusOr<std::vector<std::vector<Array>>> args = ReadDeviceArguments(
      (kDir / (name + ".args")).string(), devices, (*exe)->executable().argument_shapes());
  ASSERT_TRUE(args.ok()) << args.status().ToString();
  ClientOptions options;
  options.num_devices = n;
  StatusOr<std::unique_ptr<Client>> client = Client::Create(options);
  ASSERT_TRUE(client.ok());
  StatusOr<SpmdResult> r = (*exe)->Run(**client, *args);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (int64_t d = 0; d < n; ++d) {
    StatusOr<Array> want = ReadNpy((kDir / (name + ".out") / StrCat("dev", d) / "out0.npy").string());
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    const Array& got = r->outputs[d][0];
    ASSERT_EQ(got.shape().ToString(false), want->shape().ToString(false)) << "device " << d;
    for (int64_t k = 0; k < got.num_elements(); ++k) {
      const double w = want->GetDouble(k);
      EXPECT_NEAR(got.GetDouble(k), w, 1e-5 * std::max(1.0, std::abs(w)))
          << name << " device " << d << " element " << k;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(SpmdData, JaxPartitionedTest,
                         ::testing::Values("seed001_add", "seed003_matmul_basic",
                                           "rows_to_columns", "matmul_reduce_scatter"));

}  // namespace
}  // namespace xs
