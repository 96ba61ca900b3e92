// The partitioner cases of the OpenXLA corpus (modules with shardings and a partition count, not
// flagged test_expects_error): each is partitioned for its partition count (which verifies the
// SPMD module) and, unless it is too big for the reference kernels, the single-device executor
// cannot run it, or it has per-device meaning (manual regions, unreduced values, collectives),
// run on that many devices; it must compute what the global module computes on one device.
// Internal partitioner errors and numeric mismatches fail; the counts are printed.
#include "xshard/exec/executable.h"

#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "xshard/base/strings.h"
#include "xshard/spmd/partitioner.h"
#include "xshard/spmd/run_partitioned.h"
#include "xshard/text/parser.h"

namespace xs::spmd {
namespace {

struct Row {
  std::string file;
  int64_t num_partitions = 0;
  std::string notes;
};

std::vector<Row> PartitionerCases(const std::string& dir) {
  std::ifstream in(dir + "/MANIFEST.tsv");
  std::vector<Row> rows;
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::vector<std::string_view> cols = StrSplit(line, '\t');
    if (cols.size() < 5 || cols[2].empty() || cols[4] != "yes") continue;
    Row r{std::string(cols[0]), 0, cols.size() > 9 ? std::string(cols[9]) : ""};
    if (!ParseInt64(cols[2], &r.num_partitions) || r.notes.find("test_expects_error") != std::string::npos) continue;
    rows.push_back(std::move(r));
  }
  return rows;
}

// Manual regions, unreduced values and collectives written in the global program mean something
// per device: one device running the global module does not compute the same thing.
bool PerDeviceMeaning(const Module& m) {
  for (const Computation* c : m.computations()) {
    for (const Instruction* inst : c->instructions()) {
      if (IsCollective(inst->opcode())) return true;
      if (inst->sharding() && inst->sharding()->ToString().find("unreduced") != std::string::npos) return true;
      if (inst->sharding() && inst->sharding()->ToString().find("manual") != std::string::npos) return true;
      if (inst->opcode() == Opcode::kCustomCall &&
          inst->attrs().custom_call_target.value_or("").find("SPMD") != std::string::npos) {
        return true;
      }
    }
  }
  return false;
}

// Too slow for the reference kernels: big arrays, or contractions over many elements.
bool TooBig(const Module& m) {
  for (const Computation* c : m.computations()) {
    for (const Instruction* inst : c->instructions()) {
      if (inst->shape().byte_size() > (16 << 20)) return true;
      if (inst->opcode() == Opcode::kDot || inst->opcode() == Opcode::kConvolution) {
        const double work = static_cast<double>(inst->shape().num_elements()) *
                            static_cast<double>(inst->operand(1)->shape().num_elements());
        if (work > 2e9) return true;
      }
    }
  }
  return false;
}

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(SpmdCorpusTest, PartitionedModulesComputeWhatTheGlobalModuleComputes) {
  const std::string dir = XSHARD_CORPUS_DIR;
  if (!std::ifstream(dir + "/MANIFEST.tsv")) GTEST_SKIP() << "corpus not found at " << dir;
  const char* only = std::getenv("XSHARD_SPMD_CORPUS_FILTER");
  std::map<std::string, int> counts;
  std::vector<std::string> failures;
  for (const Row& row : PartitionerCases(dir)) {
    if (only != nullptr && row.file.find(only) == std::string::npos) continue;
    StatusOr<std::unique_ptr<Module>> global = ParseHloModule(Read(dir + "/" + row.file), row.file);
    if (!global.ok()) {
      ++counts["skipped: does not parse"];
      continue;
    }
    StatusOr<PartitionResult> r = Partition(**global, row.num_partitions);
    if (!r.ok()) {
      ++counts[StrCat("partition error: ", StatusCodeName(r.status().code()))];
      if (r.status().code() == StatusCode::kInternal) failures.push_back(StrCat(row.file, ": ", r.status().message()));
      continue;
    }
    if (PerDeviceMeaning(**global)) {
      ++counts["partitioned, not run: manual regions, unreduced values or collectives"];
      continue;
    }
    if (TooBig(**global)) {
      ++counts["partitioned, not run: too much work for the reference kernels"];
      continue;
    }
    if (!Executable::Create(**global).ok()) {
      ++counts["partitioned, not run: the single-device executor cannot run the global module"];
      continue;
    }
    const std::vector<Array> args = testing::TestInputs(**global, 1);
    StatusOr<std::vector<Array>> ran = Execute(**global, args, ExecuteOptions{0, 10000});
    if (!ran.ok()) {
      ++counts["partitioned, not run: the global module fails on the test inputs"];
      continue;
    }
    Status s = testing::CompareWithGlobal(**global, *r, args, 1e-3);
    if (s.ok()) {
      ++counts["partitioned, same numbers"];
    } else {
      ++counts["mismatch or run error"];
      failures.push_back(StrCat(row.file, ": ", s.message()));
    }
  }
  for (const auto& [what, n] : counts) std::cout << "  " << n << "  " << what << "\n";
  for (const std::string& f : failures) ADD_FAILURE() << f;
  if (only != nullptr) return;
  // Floors (the counts when they were set): a partitioner change that stops partitioning a
  // module, or stops running it with the same numbers, fails here even without an error.
  int partitioned = 0;
  for (const auto& [what, n] : counts) partitioned += what.rfind("partitioned", 0) == 0 ? n : 0;
  EXPECT_GE(partitioned, 557) << "modules partitioned without error";
  EXPECT_GE(counts["partitioned, same numbers"], 320) << "modules partitioned and run with the same numbers";
}

}  // namespace
}  // namespace xs::spmd
