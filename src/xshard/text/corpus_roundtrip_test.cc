// Every module of the OpenXLA conformance corpus (except those its tests expect to fail) and every
// seed-notebook module in tests/data/seeds must parse, print, re-parse to an equal module, and
// print identically a second time.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "xshard/ir/module_equal.h"
#include "xshard/testing/corpus.h"
#include "xshard/text/parser.h"
#include "xshard/text/printer.h"

namespace xs {
namespace {

// Parse -> print -> parse -> compare -> print -> compare text. Returns "" or the failure.
std::string RoundTrip(const std::string& text, const std::string& name, const PrintOptions& o) {
  auto m1 = ParseHloModule(text, name);
  if (!m1.ok()) return StrCat("parse: ", m1.status().message());
  std::string p1 = PrintHloModule(**m1, o);
  auto m2 = ParseHloModule(p1, name + " (printed)");
  if (!m2.ok()) return StrCat("re-parse of printed text: ", m2.status().message(), "\n", p1);
  if (Status eq = CheckModulesEqual(**m1, **m2); !eq.ok())
    return StrCat("printed module differs: ", eq.message(), "\n", p1);
  std::string p2 = PrintHloModule(**m2, o);
  if (p1 != p2) return StrCat("printing is not idempotent:\n", p1, "\n---\n", p2);
  return "";
}

struct Outcome {
  int total = 0;
  int passed = 0;
  std::vector<std::string> failures;
};

void Check(const std::string& text, const std::string& name, Outcome& out) {
  ++out.total;
  std::string err = RoundTrip(text, name, PrintOptions());
  if (err.empty()) err = RoundTrip(text, name, PrintOptions::Short());
  if (err.empty()) {
    ++out.passed;
  } else {
    out.failures.push_back(StrCat(name, ": ", err));
  }
}

void Report(const Outcome& out, std::string_view what) {
  std::printf("parsed %d/%d %s\n", out.passed, out.total, std::string(what).c_str());
  if (const char* dump = std::getenv("XSHARD_CORPUS_FAILURES")) {
    std::ofstream f(dump);
    for (const auto& e : out.failures) f << e << "\n=====\n";
  }
  for (size_t i = 0; i < out.failures.size() && i < 5; ++i)
    ADD_FAILURE() << out.failures[i].substr(0, 3000);
}

TEST(CorpusRoundTrip, EveryXlaCorpusModuleParsesAndRoundTrips) {
  std::filesystem::path dir = XSHARD_CORPUS_DIR;
  if (!testing::CorpusAvailable(dir))
    GTEST_SKIP() << "corpus not found at " << dir << " (it lives in ../shared/corpus/xla)";
  Outcome out;
  for (const testing::CorpusModule& row : testing::ReadCorpusManifest(dir)) {
    if (!row.expects_error()) Check(testing::ReadTextFile(dir / row.file), row.file, out);
  }
  Report(out, "corpus modules round-trip");
  EXPECT_GT(out.total, 1000);
  EXPECT_GE(out.passed, 1151) << "floor: every valid corpus module round-tripped when it was set";
}

TEST(CorpusRoundTrip, SeedNotebookModulesParseAndRoundTrip) {
  std::filesystem::path dir = std::filesystem::path(XSHARD_SOURCE_DIR) / "tests/data/seeds";
  ASSERT_TRUE(std::filesystem::exists(dir)) << dir;
  Outcome out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".hlo") Check(testing::ReadTextFile(e.path()), e.path().filename(), out);
  Report(out, "seed modules round-trip");
  EXPECT_GE(out.total, 5);
  EXPECT_GE(out.passed, 8) << "floor: every seed module round-tripped when it was set";
}

}  // namespace
}  // namespace xs
