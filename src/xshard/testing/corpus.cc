// MANIFEST.tsv reading for the corpus tests.
#include "xshard/testing/corpus.h"

#include <fstream>
#include <sstream>

#include "xshard/base/strings.h"

namespace xs::testing {

bool CorpusAvailable(const std::filesystem::path& dir) {
  return std::filesystem::exists(dir / "MANIFEST.tsv");
}

std::vector<CorpusModule> ReadCorpusManifest(const std::filesystem::path& dir) {
  std::ifstream in(dir / "MANIFEST.tsv");
  std::vector<CorpusModule> rows;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::vector<std::string_view> cols = StrSplit(line, '\t');
    if (cols.empty() || !cols[0].ends_with(".hlo")) continue;
    CorpusModule row;
    row.file = std::string(cols[0]);
    if (cols.size() > 1) row.test_name = std::string(cols[1]);
    if (cols.size() > 2 && !cols[2].empty() && !ParseInt64(cols[2], &row.num_partitions)) row.num_partitions = 0;
    if (cols.size() > 3) row.opcodes = std::string(cols[3]);
    if (cols.size() > 4) row.has_sharding = cols[4] == "yes";
    if (cols.size() > 9) row.notes = std::string(cols[9]);
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string ReadTextFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace xs::testing
