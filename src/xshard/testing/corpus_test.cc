// The manifest reader against a small manifest written here.
#include "xshard/testing/corpus.h"

#include <fstream>

#include <gtest/gtest.h>

namespace xs::testing {
namespace {

TEST(CorpusManifestTest, ReadsHloRowsWithTheirColumns) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "xshard_corpus_manifest_test";
  std::filesystem::create_directories(dir);
  {
    std::ofstream m(dir / "MANIFEST.tsv");
    m << "file\ttest_name\tnum_partitions\topcodes\thas_sharding\tlines\tfixture\tsource\tsource_line\tnotes\n"
      << "a/One.hlo\tOne\t8\tdot,parameter\tyes\t5\t\tx.cc\t1\t\n"
      << "a/Two.hlo\tTwo\t\tadd\tno\t3\t\tx.cc\t2\ttest_expects_error\n"
      << "README.md\t\t\t\t\t\t\t\t\t\n";
  }
  ASSERT_TRUE(CorpusAvailable(dir));
  std::vector<CorpusModule> rows = ReadCorpusManifest(dir);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].file, "a/One.hlo");
  EXPECT_EQ(rows[0].folder(), "a");
  EXPECT_EQ(rows[0].num_partitions, 8);
  EXPECT_TRUE(rows[0].has_sharding);
  EXPECT_FALSE(rows[0].expects_error());
  EXPECT_EQ(rows[1].num_partitions, 0);
  EXPECT_FALSE(rows[1].has_sharding);
  EXPECT_TRUE(rows[1].expects_error());
  std::filesystem::remove_all(dir);
  EXPECT_FALSE(CorpusAvailable(dir));
  EXPECT_TRUE(ReadCorpusManifest(dir).empty());
}

}  // namespace
}  // namespace xs::testing
