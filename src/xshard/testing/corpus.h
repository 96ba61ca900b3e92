// The OpenXLA conformance corpus (../shared/corpus/xla) as tests read it: the rows of its
// MANIFEST.tsv (file, test_name, num_partitions, opcodes, has_sharding, lines, fixture, source,
// source_line, notes) and the module files. Test binaries only; tests skip when it is absent.
#ifndef XSHARD_TESTING_CORPUS_H_
#define XSHARD_TESTING_CORPUS_H_

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace xs::testing {

// One MANIFEST.tsv row.
struct CorpusModule {
  std::string file;            // relative path, e.g. "spmd_partitioner_test/DotPartial.hlo"
  std::string test_name;
  int64_t num_partitions = 0;  // 0 when the row gives none
  std::string opcodes;         // comma-separated
  bool has_sharding = false;
  std::string notes;
  // The XLA test expects this module to be rejected.
  bool expects_error() const { return notes.find("test_expects_error") != std::string::npos; }
  // The first path component: "spmd_partitioner_test".
  std::string folder() const { return file.substr(0, file.find('/')); }
};

// True when `dir` holds a MANIFEST.tsv.
bool CorpusAvailable(const std::filesystem::path& dir);

// The .hlo rows of dir/MANIFEST.tsv in file order (empty when the file is missing).
std::vector<CorpusModule> ReadCorpusManifest(const std::filesystem::path& dir);

// The whole file as a string ("" when it cannot be read).
std::string ReadTextFile(const std::filesystem::path& path);

}  // namespace xs::testing

#endif  // XSHARD_TESTING_CORPUS_H_
