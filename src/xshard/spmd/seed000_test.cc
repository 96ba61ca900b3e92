// Seed 000's four matmul cases (f16 x[4,16] @ y[16,4] on the 4x2 mesh (a, b), x = repeat
// ([1,2,3,4], 16), y = x.T): partitioned, run on 8 devices, and the inserted collectives compared
// with what XLA inserts (tests/data/spmd_partition/seed000_collectives.tsv, written by
// tests/tools/gen_spmd_cases.py from the reference JAX).
#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "xshard/base/strings.h"
#include "xshard/exec/executable.h"
#include "xshard/spmd/partitioner.h"
#include "xshard/spmd/run_partitioned.h"
#include "xshard/text/parse_test_util.h"

namespace xs::spmd {
namespace {

const std::string kDir = std::string(XSHARD_SOURCE_DIR) + "/tests/data/spmd_partition/";

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "kind dim groups" rows of XLA's collectives per case.
std::map<std::string, std::vector<std::string>> XlaCollectives() {
  std::map<std::string, std::vector<std::string>> out;
  std::istringstream in(Read(kDir + "seed000_collectives.tsv"));
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string_view> f = StrSplit(line, '\t');
    out[std::string(f[0])].push_back(StrCat(f[1], " ", f[2], " ", f[3]));
  }
  return out;
}

std::vector<std::string> Ours(const PartitionResult& r) {
  std::vector<std::string> out;
  for (const CollectiveRecord& c : r.report.collectives) {
    out.push_back(StrCat(c.kind, " ", c.dimension < 0 ? "-" : StrCat(c.dimension), " ", c.explicit_groups));
  }
  return out;
}

std::string FileName(const std::string& name) { return "seed000_" + name + ".hlo"; }

// The case's module, partitioned for 8 devices (not run); a parse or partition error fails the
// calling test (not the whole binary) and returns an empty result.
PartitionResult Load(const std::string& name) {
  return testing::PartitionAndCompare(Read(kDir + FileName(name)), 8,
                                      testing::CompareOptions{.compare = false, .name = FileName(name)});
}

std::vector<Array> Inputs() {
  std::vector<float> x, y;
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 16; ++j) x.push_back(static_cast<float>(i + 1));
  }
  for (int j = 0; j < 16; ++j) {
    for (int i = 0; i < 4; ++i) y.push_back(static_cast<float>(i + 1));
  }
  return {Array::FromVector<float>({4, 16}, x).Convert(DType::kF16),
          Array::FromVector<float>({16, 4}, y).Convert(DType::kF16)};
}

// z = x @ y = 16 * outer([1,2,3,4], [1,2,3,4]), as seed 000 prints it.
Array ExpectedZ() {
  std::vector<float> z;
  for (int i = 1; i <= 4; ++i) {
    for (int j = 1; j <= 4; ++j) z.push_back(16.0f * static_cast<float>(i * j));
  }
  return Array::FromVector<float>({4, 4}, z).Convert(DType::kF16);
}

class Seed000Test : public ::testing::TestWithParam<std::string> {};

TEST_P(Seed000Test, EveryDeviceHoldsItsPieceOfZ) {
  const std::string file = FileName(GetParam());
  const std::unique_ptr<Module> global = xs::testing::ParseOrFail(Read(kDir + file), file);
  StatusOr<std::vector<Array>> z = Execute(*global, Inputs());
  ASSERT_TRUE(z.ok()) << z.status().ToString();
  EXPECT_EQ((*z)[0], ExpectedZ());
  testing::PartitionAndCompare(*global, 8, testing::CompareOptions{.inputs = Inputs(), .tolerance = 0, .name = file});
}

INSTANTIATE_TEST_SUITE_P(Cases, Seed000Test, ::testing::Values("inner", "mismatch", "outer", "full"));

TEST(Seed000Test, InnerAxesAllReducesOverTheGroupsOfAExactlyAsXla) {
  // Contracting dim on `a` on both sides: partial sums, all-reduced over {0,2,4,6} and {1,3,5,7}.
  const PartitionResult r = Load("inner");
  ASSERT_NE(r.module, nullptr);
  EXPECT_EQ(Ours(r), (std::vector<std::string>{"all-reduce - {{0,2,4,6},{1,3,5,7}}"}));
  EXPECT_EQ(Ours(r), XlaCollectives()["inner"]);
}

TEST(Seed000Test, FullShardingAllGathersBothOperandsExactlyAsXla) {
  // Output P('b','a') uses both mesh axes for its free dims, so the contracting dim cannot be
  // sharded: x gathers dim 1 over a, y gathers dim 0 over b.
  const PartitionResult r = Load("full");
  ASSERT_NE(r.module, nullptr);
  EXPECT_EQ(Ours(r),
            (std::vector<std::string>{"all-gather 1 {{0,2,4,6},{1,3,5,7}}", "all-gather 0 {{0,1},{2,3},{4,5},{6,7}}"}));
  std::vector<std::string> xla = XlaCollectives()["full"];
  std::vector<std::string> ours = Ours(r);
  std::sort(xla.begin(), xla.end());
  std::sort(ours.begin(), ours.end());
  EXPECT_EQ(ours, xla);
}

TEST(Seed000Test, OuterAxesPermutesYThenAllReducesOverAAsXla) {
  // x: P('b','a'), y: P('b', None); the output keeps b on its rows, so the contracting dim takes a:
  // each device cuts the quarter of y it must send from its half and a collective-permute moves
  // it (XLA picks another, equally valid matching of devices), then the partial products are
  // all-reduced over the groups of a.
  const PartitionResult r = Load("outer");
  ASSERT_NE(r.module, nullptr);
  ASSERT_EQ(r.report.collectives.size(), 2u);
  EXPECT_EQ(r.report.collectives[0].kind, "collective-permute");
  EXPECT_EQ(Ours(r)[1], "all-reduce - {{0,2,4,6},{1,3,5,7}}");
  const std::vector<std::string> xla = XlaCollectives()["outer"];
  ASSERT_EQ(xla.size(), 2u);
  EXPECT_EQ(xla[0].substr(0, 18), "collective-permute");
  EXPECT_EQ(xla[1], Ours(r)[1]);
}

TEST(Seed000Test, MeshAxesMismatchMovesFewerBytesThanXlasTwoAllGathers) {
  // x contracts on a, y on b. XLA all-gathers both operands: x receives 3/4 and y 1/2 of their
  // gathered 128 B, 96 + 64 = 160 B per device. Moving y's rows onto a (one 32 B collective-permute) and
  // all-reducing the f16[4,4] partial products over a (2 * 3/4 * 32 B = 48 B) receives 80 B.
  const PartitionResult r = Load("mismatch");
  ASSERT_NE(r.module, nullptr);
  EXPECT_EQ(XlaCollectives()["mismatch"].size(), 2u);
  ASSERT_EQ(r.report.collectives.size(), 2u);
  EXPECT_EQ(r.report.collectives[0].kind, "collective-permute");
  EXPECT_EQ(Ours(r)[1], "all-reduce - {{0,2,4,6},{1,3,5,7}}");
  EXPECT_EQ(r.report.TotalCollectiveBytes(), 80);
}

}  // namespace
}  // namespace xs::spmd
