// Propagation over the OpenXLA corpus modules of sharding_propagation_test/ and
// spmd_partitioner_test/ (MANIFEST.tsv, not flagged test_expects_error): each must propagate or
// fail with a clear Unimplemented / InvalidArgument error; never crash or loop. Skips without
// the corpus.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>

#include <gtest/gtest.h>

#include "xshard/propagation/propagation.h"
#include "xshard/testing/corpus.h"
#include "xshard/text/parser.h"

namespace xs {
namespace {

TEST(PropagationCorpusTest, PropagatesEveryShardingCorpusModule) {
  const std::filesystem::path dir = XSHARD_CORPUS_DIR;
  if (!testing::CorpusAvailable(dir)) {
    GTEST_SKIP() << "corpus not found at " << dir << " (it lives in ../shared/corpus/xla)";
  }
  std::map<std::string, int> total, ok, unparsed;
  std::vector<std::string> errors, bad_errors;
  for (const testing::CorpusModule& row : testing::ReadCorpusManifest(dir)) {
    const std::string& file = row.file;
    const std::string folder = row.folder();
    if (row.expects_error()) continue;
    if (folder != "sharding_propagation_test" && folder != "spmd_partitioner_test") continue;
    ++total[folder];
    auto module = ParseHloModule(testing::ReadTextFile(dir / file), file);
    if (!module.ok()) {
      ++unparsed[folder];  // the parser's corpus test reports these
      continue;
    }
    const auto start = std::chrono::steady_clock::now();
    auto result = PropagateShardings(**module);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // A guard against runaway fixed points, not a speed target (propagation_bench measures speed).
    EXPECT_LT(seconds, 30.0) << file << " took " << seconds << " s";
    if (result.ok()) {
      ++ok[folder];
      continue;
    }
    const StatusCode code = result.status().code();
    const std::string msg = StrCat(file, ": ", StatusCodeName(code), ": ", result.status().message());
    if (code == StatusCode::kUnimplemented || code == StatusCode::kInvalidArgument) {
      errors.push_back(msg);
    } else {
      bad_errors.push_back(msg);
    }
  }
  for (const auto& [folder, n] : total) {
    std::printf("%s: propagated %d of %d modules (%d did not parse, %d errors)\n", folder.c_str(),
                ok[folder], n, unparsed[folder], n - ok[folder] - unparsed[folder]);
  }
  for (const std::string& e : errors) std::printf("  %s\n", e.c_str());
  for (const std::string& e : bad_errors) ADD_FAILURE() << e;
  EXPECT_GT(total["spmd_partitioner_test"], 500);
  // Floors (the counts when they were set): every module of both folders propagates.
  EXPECT_GE(ok["sharding_propagation_test"], 288);
  EXPECT_GE(ok["spmd_partitioner_test"], 526);
}

}  // namespace
}  // namespace xs
