// Propagation against XLA: every tests/data/propagate/NAME.hlo has NAME.expected, the shardings
// XLA's GSPMD propagation chose for it (written by tests/tools/gen_propagate_cases.py through the
// reference JAX). Each instruction XLA's dump lets us recognize must get the same sharding.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "xshard/propagation/propagation.h"
#include "xshard/text/parser.h"

namespace xs {
namespace {

std::string ReadAll(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class OracleTest : public ::testing::TestWithParam<std::string> {};

TEST_P(OracleTest, MatchesXlaShardingPropagation) {
  const std::filesystem::path dir = std::filesystem::path(XSHARD_SOURCE_DIR) / "tests/data/propagate";
  const std::string name = GetParam();
  auto module = ParseHloModule(ReadAll(dir / (name + ".hlo")), name + ".hlo");
  ASSERT_TRUE(module.ok()) << module.status().message();
  auto result = PropagateShardings(**module);
  ASSERT_TRUE(result.ok()) << result.status().message();
  const std::vector<Computation*> comps = (*module)->computations();
  std::istringstream expected(ReadAll(dir / (name + ".expected")));
  std::string line;
  int compared = 0;
  while (std::getline(expected, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    int ci = -1;
    std::string inst_name, sharding;
    fields >> ci >> inst_name;
    std::getline(fields >> std::ws, sharding);
    if (sharding == "{absent}") continue;
    ASSERT_TRUE(ci >= 0 && ci < static_cast<int>(comps.size())) << line;
    const Instruction* inst = comps[ci]->GetInstruction(inst_name);
    ASSERT_NE(inst, nullptr) << line;
    ++compared;
    if (sharding == "{none}") {
      EXPECT_TRUE(!inst->has_sharding() || inst->sharding()->IsReplicated())
          << name << ": " << inst_name << " is " << inst->sharding()->ToString() << ", XLA left it unsharded";
      continue;
    }
    auto want = HloSharding::Parse(sharding);
    ASSERT_TRUE(want.ok()) << line;
    ASSERT_TRUE(inst->has_sharding()) << name << ": " << inst_name;
    EXPECT_EQ(*inst->sharding(), *want) << name << ": " << inst_name << " got " << inst->sharding()->ToString()
                                        << ", XLA " << sharding << " (" << result->Explain(*inst) << ")";
  }
  EXPECT_GT(compared, 0);
}

std::vector<std::string> Cases() {
  std::vector<std::string> names;
  const std::filesystem::path dir = std::filesystem::path(XSHARD_SOURCE_DIR) / "tests/data/propagate";
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".hlo") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

INSTANTIATE_TEST_SUITE_P(Cases, OracleTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
}  // namespace xs
