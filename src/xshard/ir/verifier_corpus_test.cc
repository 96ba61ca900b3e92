// The verifier must accept every module of the OpenXLA conformance corpus that its tests do not
// expect to fail (MANIFEST.tsv without `test_expects_error`). Skips without the corpus.
#include <cstdio>
#include <filesystem>

#include <gtest/gtest.h>

#include "xshard/ir/verifier.h"
#include "xshard/testing/corpus.h"
#include "xshard/text/parser.h"

namespace xs {
namespace {

TEST(VerifierCorpusTest, AcceptsEveryValidCorpusModule) {
  const std::filesystem::path dir = XSHARD_CORPUS_DIR;
  if (!testing::CorpusAvailable(dir)) {
    GTEST_SKIP() << "corpus not found at " << dir << " (it lives in ../shared/corpus/xla)";
  }
  int total = 0, verified = 0, unparsed = 0, flagged = 0, flagged_rejected = 0;
  std::vector<std::string> failures;
  for (const testing::CorpusModule& row : testing::ReadCorpusManifest(dir)) {
    const std::string& file = row.file;
    auto module = ParseHloModule(testing::ReadTextFile(dir / file), file);
    if (row.expects_error()) {
      ++flagged;
      if (!module.ok() || !Verify(**module).ok()) ++flagged_rejected;
      continue;
    }
    ++total;
    if (!module.ok()) {
      ++unparsed;  // the parser's corpus test reports these
      continue;
    }
    Status st = Verify(**module);
    if (st.ok()) {
      ++verified;
    } else {
      failures.push_back(StrCat(file, ": ", st.message()));
    }
  }
  std::printf("verified %d/%d valid corpus modules (%d did not parse); rejected %d/%d modules "
              "flagged test_expects_error\n",
              verified, total - unparsed, unparsed, flagged_rejected, flagged);
  for (const std::string& f : failures) ADD_FAILURE() << f;
  EXPECT_GT(total, 1000);
  EXPECT_GE(verified, 1151) << "floor: every valid corpus module verified when it was set";
  EXPECT_GE(flagged_rejected, 63) << "floor: flagged modules rejected when it was set";
}

}  // namespace
}  // namespace xs
