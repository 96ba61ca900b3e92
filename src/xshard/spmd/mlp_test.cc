// One training step of a 2-layer tanh MLP as JAX lowers it (tests/data/spmd_partition/
// mlp_step.hlo: batch on mesh axis a, hidden layer on b, Megatron style), partitioned for 8
// devices and checked against the single-device run, with XLA's collectives for reference
// (mlp_step_collectives.tsv, from tests/tools/gen_spmd_cases.py).
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "xshard/base/strings.h"
#include "xshard/spmd/partitioner.h"
#include "xshard/spmd/run_partitioned.h"

namespace xs::spmd {
namespace {

const std::string kDir = std::string(XSHARD_SOURCE_DIR) + "/tests/data/spmd_partition/";

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(MlpStepTest, PartitionedStepComputesTheSameLossAndUpdates) {
  const PartitionResult r = testing::PartitionAndCompare(
      Read(kDir + "mlp_step.hlo"), 8,
      testing::CompareOptions{.seeds = {11}, .tolerance = 1e-4, .name = "mlp_step.hlo"});
  ASSERT_NE(r.module, nullptr);
  EXPECT_TRUE(r.report.warnings.empty()) << FormatReport(r.report);
}

TEST(MlpStepTest, ForwardPartialSumsOverTheHiddenAxisAreAllReducedAsXlaDoes) {
  // h @ w2 contracts the hidden dim, sharded on b: partial sums all-reduced over the pairs of b
  // ({0,1}, {2,3}, ...), which is XLA's first collective too. (XLA then sums all four gradient
  // contributions over a in one tuple all-reduce, after its all-reduce combiner.)
  const PartitionResult r = testing::PartitionAndCompare(
      Read(kDir + "mlp_step.hlo"), 8, testing::CompareOptions{.compare = false, .name = "mlp_step.hlo"});
  ASSERT_FALSE(r.report.collectives.empty());
  const CollectiveRecord& first = r.report.collectives[0];
  EXPECT_EQ(first.cause, "dot_general.6");
  const std::string ours = StrCat(first.kind, "\t-\t", first.explicit_groups);
  std::istringstream xla(Read(kDir + "mlp_step_collectives.tsv"));
  std::string header, xla_first;
  std::getline(xla, header);
  std::getline(xla, xla_first);
  EXPECT_EQ(ours, xla_first);
  EXPECT_EQ(ours, "all-reduce\t-\t{{0,1},{2,3},{4,5},{6,7}}");
}

}  // namespace
}  // namespace xs::spmd
