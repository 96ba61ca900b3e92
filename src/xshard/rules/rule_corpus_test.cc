// Every instruction of every parsable OpenXLA corpus module gets a well-formed rule: one factor
// list per dim of every leaf, valid factor ids, and pass-through dims whose factor sizes multiply
// to the dim size. Skips without the corpus.
#include <cstdio>
#include <filesystem>

#include <gtest/gtest.h>

#include "xshard/rules/rule_registry.h"
#include "xshard/testing/corpus.h"
#include "xshard/text/parser.h"

namespace xs {
namespace {

// Empty when the rule fits the instruction's shapes, else what is wrong.
std::string CheckRule(const Instruction& inst, const OpShardingRule& rule) {
  std::vector<const Shape*> ops;
  for (const Instruction* op : inst.operands()) {
    for (const Shape* s : ShapeLeaves(op->shape())) ops.push_back(s);
  }
  const std::vector<const Shape*> res = ShapeLeaves(inst.shape());
  if (ops.size() != rule.operands.size() || res.size() != rule.results.size()) return "leaf count";
  auto check = [&](const Shape& s, const TensorFactors& t) -> std::string {
    const int rank = s.IsArray() ? s.rank() : 0;
    if (static_cast<int>(t.dims.size()) != rank) return "rank";
    for (int d = 0; d < rank; ++d) {
      int64_t prod = 1;
      bool all_pass = !t.dims[d].empty();
      for (int f : t.dims[d]) {
        if (f < 0 || f >= rule.num_factors()) return "factor id";
        prod *= rule.factors[f].size;
        all_pass &= rule.factors[f].kind == FactorKind::kPassThrough;
      }
      if (all_pass && prod != s.dim(d)) return StrCat("dim ", d, " factors multiply to ", prod);
    }
    return "";
  };
  for (size_t i = 0; i < ops.size(); ++i) {
    std::string e = check(*ops[i], rule.operands[i]);
    if (!e.empty()) return StrCat("operand leaf ", i, ": ", e);
  }
  for (size_t i = 0; i < res.size(); ++i) {
    std::string e = check(*res[i], rule.results[i]);
    if (!e.empty()) return StrCat("result leaf ", i, ": ", e);
  }
  return "";
}

TEST(RuleCorpusTest, EveryCorpusInstructionHasAWellFormedRule) {
  const std::filesystem::path dir = XSHARD_CORPUS_DIR;
  if (!testing::CorpusAvailable(dir)) {
    GTEST_SKIP() << "corpus not found at " << dir << " (it lives in ../shared/corpus/xla)";
  }
  int modules = 0, instructions = 0, rule_errors = 0;
  std::vector<std::string> failures;
  for (const testing::CorpusModule& row : testing::ReadCorpusManifest(dir)) {
    const std::string& file = row.file;
    if (row.expects_error()) continue;
    auto module = ParseHloModule(testing::ReadTextFile(dir / file), file);
    if (!module.ok()) continue;
    ++modules;
    for (Computation* c : (*module)->computations()) {
      for (Instruction* inst : c->instructions()) {
        ++instructions;
        auto rule = GetRule(*inst);
        if (!rule.ok()) {
          ++rule_errors;  // malformed attributes are reported, never a crash
          std::printf("  rule error: %s: %s\n", file.c_str(), std::string(rule.status().message()).c_str());
          continue;
        }
        std::string e = CheckRule(*inst, *rule);
        if (!e.empty()) failures.push_back(StrCat(file, ": ", inst->ShortString(), ": ", e, ": ", rule->ToString()));
      }
    }
  }
  std::printf("rules for %d instructions of %d corpus modules (%d rule errors)\n", instructions,
              modules, rule_errors);
  for (size_t i = 0; i < failures.size() && i < 20; ++i) ADD_FAILURE() << failures[i];
  EXPECT_TRUE(failures.empty()) << failures.size() << " malformed rules";
  EXPECT_GT(modules, 1000);
  // Floors (the counts when they were set): fewer modules or instructions with rules, or more rule
  // errors, is a regression even when no rule is malformed.
  EXPECT_GE(modules, 1151);
  EXPECT_GE(instructions, 6812);
  EXPECT_LE(rule_errors, 1) << "the one known error: hlo_parser_test/DesugarParsingTest_DotStart.hlo";
}

}  // namespace
}  // namespace xs
