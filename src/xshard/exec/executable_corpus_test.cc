// Runs every module of the OpenXLA corpus (MANIFEST.tsv, except test_expects_error) that parses
// and plans, on random inputs: each must run or fail with a clean Status (never crash), and
// planning must fail only with an unsupported (kUnimplemented) status for ops outside the
// executor. Prints counts.
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "gtest/gtest.h"
#include "xshard/exec/executable.h"
#include "xshard/testing/corpus.h"
#include "xshard/text/parser.h"

namespace xs {
namespace {

int64_t LargestBytes(const Shape& s) {
  if (s.IsTuple()) {
    int64_t m = 0;
    for (const Shape& e : s.tuple_shapes()) m = std::max(m, LargestBytes(e));
    return m;
  }
  return s.IsArray() ? s.byte_size() : 0;
}

// Multiply-adds of the module's dots and convolutions (a rough bound: each output element
// times the contraction / window size). Modules above 2e8 are skipped to keep the test short.
double MultiplyAdds(const Module& m) {
  double total = 0;
  for (const Computation* c : m.computations()) {
    for (const Instruction* i : c->instructions()) {
      if (!i->shape().IsArray() || i->operand_count() < 2 || !i->operand(1)->shape().IsArray()) continue;
      if (i->opcode() == Opcode::kConvolution) {
        const Shape& k = i->operand(1)->shape();
        const int64_t out_f = i->attrs().conv_dims ? k.dim(static_cast<int>(i->attrs().conv_dims->kernel_output_feature)) : 1;
        total += static_cast<double>(i->shape().num_elements()) * k.num_elements() / std::max<int64_t>(1, out_f);
      } else if (i->opcode() == Opcode::kDot && i->attrs().dot) {
        double k = 1;
        for (int64_t d : i->attrs().dot->lhs_contracting) {
          if (d >= 0 && d < i->operand(0)->shape().rank()) k *= i->operand(0)->shape().dim(static_cast<int>(d));
        }
        total += static_cast<double>(i->shape().num_elements()) * k;
      }
    }
  }
  return total;
}

// Largest buffer any instruction of the module makes.
int64_t LargestBuffer(const Module& m) {
  int64_t largest = 0;
  for (const Computation* c : m.computations()) {
    for (const Instruction* i : c->instructions()) largest = std::max(largest, LargestBytes(i->shape()));
  }
  return largest;
}

Array RandomArray(const Shape& shape, std::mt19937_64& rng) {
  Array a(shape);
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::uniform_int_distribution<int> small(0, 3);
  for (int64_t k = 0; k < a.num_elements(); ++k) {
    if (IsInteger(shape.dtype()) || shape.dtype() == DType::kPred) {
      a.SetDouble(k, shape.dtype() == DType::kPred ? small(rng) % 2 : small(rng));
    } else if (IsFloating(shape.dtype()) || IsComplex(shape.dtype())) {
      a.SetDouble(k, real(rng));
    }
  }
  return a;
}

TEST(ExecutableCorpus, EveryPlannableModuleRunsOrFailsCleanly) {
  const std::string dir = XSHARD_CORPUS_DIR;
  if (!testing::CorpusAvailable(dir)) GTEST_SKIP() << "corpus not found at " << dir << "; skipping";
  std::map<std::string, int> counts;
  std::map<std::string, int> unsupported_ops;
  std::mt19937_64 rng(42);
  for (const testing::CorpusModule& row : testing::ReadCorpusManifest(dir)) {
    if (row.expects_error()) {
      ++counts["skipped: test_expects_error"];
      continue;
    }
    StatusOr<std::unique_ptr<Module>> m = ParseHloModule(testing::ReadTextFile(dir + "/" + row.file), row.file);
    if (!m.ok()) {
      ++counts["skipped: does not parse"];
      continue;
    }
    if (LargestBuffer(**m) > (int64_t{16} << 20)) {
      ++counts["skipped: a buffer over 16 MiB"];
      continue;
    }
    if (MultiplyAdds(**m) > 2e8) {
      ++counts["skipped: over 2e8 multiply-adds"];
      continue;
    }
    StatusOr<std::unique_ptr<Executable>> e = Executable::Create(**m);
    if (!e.ok()) {
      const std::string& msg = e.status().message();
      if (e.status().code() == StatusCode::kUnimplemented) {
        ++counts["plan: unsupported op or attribute"];
        ++unsupported_ops[e.status().opcode().empty() ? "(no instruction)" : e.status().opcode()];
      } else {
        ++counts["plan: other error"];
        std::cout << "  plan error: " << row.file << ": " << msg.substr(0, 160) << "\n";
      }
      continue;
    }
    std::vector<Array> args;
    for (const Shape& s : (*e)->argument_shapes()) args.push_back(RandomArray(s, rng));
    ExecuteOptions options;
    options.max_while_iterations = 100;
    StatusOr<std::vector<Array>> out = (*e)->Run(args, options);
    if (out.ok()) {
      ++counts["ran"];
    } else {
      ++counts["run: clean error"];
      std::cout << "  run error: " << row.file << ": " << out.status().message().substr(0, 160) << "\n";
    }
  }
  std::cout << "corpus modules:\n";
  for (const auto& [what, n] : counts) std::cout << "  " << what << ": " << n << "\n";
  std::cout << "unsupported ops (modules):";
  for (const auto& [op, n] : unsupported_ops) std::cout << " " << op << "=" << n;
  std::cout << "\n";
  EXPECT_GT(counts["ran"], 500) << "most of the corpus should run";
  EXPECT_GE(counts["ran"], 787) << "floor: the modules that ran when it was set";
}

}  // namespace
}  // namespace xs
