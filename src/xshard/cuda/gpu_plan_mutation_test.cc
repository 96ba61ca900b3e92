// The GPU planner and its kernel generators on mutated modules: every module of tests/data and
// the XLA corpus with one integer of its text changed (a dim, an attribute, an index) at a time.
// A mutant the parser, the verifier or the CPU planner rejects is skipped; for the rest,
// GpuPlan::Create must return a plan whose every step is a kernel list, a library call or an
// "unsupported" with a reason, and never crash, abort or hang. What fails here is a crash of the
// test binary (or an assertion naming the mutant). Small mutants that plan completely also run
// through their GPU plans on the host emulator against the CPU executor (edge shapes and
// attributes the hand-written suites do not reach).
#include <gtest/gtest.h>

#ifdef XSHARD_WITH_CUDA

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "xshard/base/strings.h"
#include "xshard/cuda/gpu_executable.h"
#include "xshard/cuda/gpu_executable_plan.h"
#include "xshard/cuda/kernel_codegen.h"
#include "xshard/cuda/kernel_codegen_test_util.h"
#include "xshard/ir/computation.h"
#include "xshard/ir/verifier.h"
#include "xshard/testing/corpus.h"
#include "xshard/text/parser.h"

namespace xs::cuda {
namespace {

// Whether the OpenXLA corpus (XSHARD_CORPUS_DIR, beside the checkout by default) is there: a
// clone without it mutates tests/data's modules alone, about a quarter as many.
bool WithCorpus() { return xs::testing::CorpusAvailable(XSHARD_CORPUS_DIR); }

// The module texts: tests/data's *.hlo and the corpus modules that are not meant to fail.
std::vector<std::pair<std::string, std::string>> Texts() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& f : std::filesystem::recursive_directory_iterator(XSHARD_SOURCE_DIR "/tests/data")) {
    if (f.path().extension() == ".hlo") out.emplace_back(f.path().string(), xs::testing::ReadTextFile(f.path()));
  }
  const std::string dir = XSHARD_CORPUS_DIR;
  if (xs::testing::CorpusAvailable(dir)) {
    for (const xs::testing::CorpusModule& row : xs::testing::ReadCorpusManifest(dir)) {
      if (!row.expects_error()) out.emplace_back(row.file, xs::testing::ReadTextFile(dir + "/" + row.file));
    }
  }
  return out;
}

// `text` with its k-th integer literal (counting from 0, wrapping) replaced by `value`.
std::string ReplaceInteger(const std::string& text, size_t k, int64_t value, int64_t* old_value) {
  static const std::regex kInt("[0-9]+");
  std::vector<std::pair<size_t, size_t>> spans;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kInt); it != std::sregex_iterator(); ++it) {
    const size_t at = static_cast<size_t>(it->position());
    // Whole numbers only: not inside a name ("add.3", "f32", "param_1") or a float ("0.5").
    const char before = at == 0 ? ' ' : text[at - 1];
    const size_t end = at + static_cast<size_t>(it->length());
    const char after = end < text.size() ? text[end] : ' ';
    if (std::isalpha(static_cast<unsigned char>(before)) || before == '_' || before == '.' || after == '.' ||
        std::isalpha(static_cast<unsigned char>(after)) || after == '_') {
      continue;
    }
    spans.emplace_back(at, static_cast<size_t>(it->length()));
  }
  if (spans.empty()) return text;
  const auto [at, len] = spans[k % spans.size()];
  *old_value = std::stoll(text.substr(at, std::min<size_t>(len, 18)));
  return text.substr(0, at) + std::to_string(value) + text.substr(at + len);
}

TEST(GpuPlanMutations, NoMutantCrashesThePlannerOrTheGenerators) {
  const std::vector<std::pair<std::string, std::string>> texts = Texts();
  ASSERT_GT(texts.size(), 100u);
  std::mt19937_64 rng(2026);
  int tried = 0, planned = 0, unsupported = 0;
  // Mutants per module: enough to reach most modules' attributes over the suite.
  const int per_module = std::getenv("XSHARD_MUTANTS") ? std::atoi(std::getenv("XSHARD_MUTANTS")) : 6;
  for (const auto& [name, text] : texts) {
    for (int i = 0; i < per_module; ++i) {
      int64_t old_value = 0;
      const size_t k = static_cast<size_t>(rng() % 4096);
      const int choice = static_cast<int>(rng() % 6);
      std::string mutant = ReplaceInteger(text, k, 0, &old_value);
      const int64_t values[] = {0, 1, 2, old_value + 1, old_value > 0 ? old_value - 1 : 3, old_value * 2 + 1};
      mutant = ReplaceInteger(text, k, values[choice], &old_value);
      StatusOr<std::unique_ptr<Module>> m = ParseHloModule(mutant, name);
      if (!m.ok() || !Verify(**m).ok()) continue;
      StatusOr<std::unique_ptr<Executable>> e = Executable::Create(**m);
      if (!e.ok()) continue;
      // Small enough to plan quickly: the generators bake shapes into source text.
      ++tried;
      StatusOr<std::unique_ptr<GpuPlan>> plan = GpuPlan::Create(**e);
      ASSERT_TRUE(plan.ok()) << name << " with integer " << k << " set to " << values[choice] << ": "
                             << plan.status().message();
      if ((*plan)->Supported().ok()) {
        ++planned;
      } else {
        ++unsupported;
        ASSERT_FALSE((*plan)->report().unsupported.empty()) << name;
        const GpuPlanReport::Unsupported& u = (*plan)->report().unsupported.front();
        EXPECT_FALSE(u.why.empty()) << name;
        if (std::getenv("XSHARD_TEST_VERBOSE") != nullptr) {
          std::cout << "unsupported: " << name << " [" << k << "=" << values[choice] << "] " << u.opcode << ": "
                    << u.why.substr(0, 160) << "\n";
        }
      }
    }
  }
  std::cout << "mutants the CPU plans: " << tried << " (" << planned << " GPU-planned, " << unsupported
            << " with an unsupported step, each saying why)\n";
  // 188 from tests/data alone when this was set.
  EXPECT_GT(tried, WithCorpus() ? 200 : 150);
}

// Random arguments as the corpus suites make them: floats in [-1, 1), integers 0..3, both parts
// of complex values.
Array RandomArgument(const Shape& shape, std::mt19937_64& rng) {
  Array a(shape);
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  for (int64_t k = 0; k < a.num_elements(); ++k) {
    if (shape.dtype() == DType::kC64) {
      reinterpret_cast<float*>(a.data())[2 * k] = static_cast<float>(real(rng));
      reinterpret_cast<float*>(a.data())[2 * k + 1] = static_cast<float>(real(rng));
    } else if (shape.dtype() == DType::kC128) {
      reinterpret_cast<double*>(a.data())[2 * k] = real(rng);
      reinterpret_cast<double*>(a.data())[2 * k + 1] = real(rng);
    } else if (IsFloating(shape.dtype())) {
      a.SetDouble(k, real(rng));
    } else {
      a.SetDouble(k, shape.dtype() == DType::kPred ? static_cast<double>(rng() % 2) : static_cast<double>(rng() % 4));
    }
  }
  return a;
}

// `args` with every real floating element multiplied by 1 + u 2^-20, u uniform in [-1, 1].
std::vector<Array> Nudged(const std::vector<Array>& args, std::mt19937_64& rng) {
  std::vector<Array> out = args;
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (Array& a : out) {
    const DType t = a.dtype();
    if (!IsFloating(t) || t == DType::kC64 || t == DType::kC128) continue;
    for (int64_t k = 0; k < a.num_elements(); ++k) a.SetDouble(k, a.GetDouble(k) * (1 + u(rng) * 0x1p-20));
  }
  return out;
}

// Compare's verdict for real floating results, except that each element may also differ from
// the CPU's by as much as the CPU's own result moves for nudged arguments (`nudged`): an
// ill-conditioned element, not a kernel's fault. Complex results are compared as Compare does.
std::string WithinSensitivity(const Array& got, const Array& want, const Array& nudged, double scale) {
  const DType t = want.dtype();
  if (t == DType::kC64 || t == DType::kC128 || got.dims() != want.dims() || nudged.dims() != want.dims()) {
    return testing::Compare(got, want, scale);
  }
  const double rtol = testing::RelativeTolerance(t);
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    const double g = got.GetDouble(i), w = want.GetDouble(i), n = nudged.GetDouble(i);
    if (g == w || (std::isnan(g) && std::isnan(w))) continue;
    if (std::fabs(g - w) <= scale * rtol * std::max(1.0, std::fabs(w)) + std::fabs(n - w)) continue;
    return "element " + std::to_string(i) + ": " + std::to_string(g) + " vs CPU " + std::to_string(w) +
           " (nudged arguments: " + std::to_string(n) + ")";
  }
  return "";
}

// Every value of `m` small (the emulator runs each thread in turn).
bool Small(const Module& m) {
  int64_t total = 0;
  for (const Computation* c : m.computations()) {
    for (const Instruction* i : c->instructions()) {
      std::vector<Shape> leaves;
      FlattenArrayShapes(i->shape(), leaves);
      for (const Shape& s : leaves) {
        if (s.num_elements() > 4096) return false;
        total += s.num_elements();
      }
      for (const Instruction* o : i->operands()) {
        if (o->shape().IsArray() && o->shape().num_elements() > 4096) return false;
      }
    }
  }
  return total <= 65536;
}

TEST(GpuPlanMutations, SmallMutantsMatchTheCpuOnTheHost) {
  std::vector<std::pair<std::string, std::string>> texts = Texts();
  std::mt19937_64 rng(7);
  std::shuffle(texts.begin(), texts.end(), rng);  // the budget spread over every source
  const int per_module = std::getenv("XSHARD_MUTANTS") ? std::atoi(std::getenv("XSHARD_MUTANTS")) : 4;
  const size_t most = std::getenv("XSHARD_MUTANTS") ? SIZE_MAX : 400;  // the suite's budget
  struct Mutant {
    std::string what;
    std::unique_ptr<Module> module;
    std::unique_ptr<Executable> exe;
    std::unique_ptr<GpuPlan> plan;
  };
  std::vector<Mutant> mutants;
  std::vector<GeneratedKernel> kernels;
  for (const auto& [name, text] : texts) {
    for (int i = 0; i < per_module && mutants.size() < most; ++i) {
      int64_t old_value = 0;
      const size_t k = static_cast<size_t>(rng() % 4096);
      (void)ReplaceInteger(text, k, 0, &old_value);
      const int64_t value = std::vector<int64_t>{0, 1, 2, old_value + 1, old_value > 0 ? old_value - 1 : 3}[rng() % 5];
      const std::string mutant = ReplaceInteger(text, k, value, &old_value);
      if (mutant == text) continue;
      StatusOr<std::unique_ptr<Module>> m = ParseHloModule(mutant, name);
      if (!m.ok() || !Verify(**m).ok() || !Small(**m)) continue;
      StatusOr<std::unique_ptr<Executable>> e = Executable::Create(**m);
      if (!e.ok()) continue;
      StatusOr<std::unique_ptr<GpuPlan>> plan = GpuPlan::Create(**e);
      ASSERT_TRUE(plan.ok()) << name << ": " << plan.status().message();
      if (!(*plan)->Supported().ok()) continue;
      for (GeneratedKernel& g : testing::PlanKernels(**plan)) kernels.push_back(std::move(g));
      mutants.push_back({StrCat(name, " with integer ", k, " set to ", value), std::move(*m), std::move(*e), std::move(*plan)});
    }
  }
  StatusOr<std::unique_ptr<testing::HostKernels>> host = testing::HostKernels::Build(kernels);
  ASSERT_TRUE(host.ok()) << host.status().message();
  int ran = 0;
  for (const Mutant& mu : mutants) {
    std::vector<Array> args;
    for (const Shape& s : mu.exe->argument_shapes()) args.push_back(RandomArgument(s, rng));
    ExecuteOptions options;
    options.max_while_iterations = 100;
    StatusOr<std::vector<Array>> want = mu.exe->Run(args, options);
    if (!want.ok()) continue;  // the CPU refuses these arguments at run time
    StatusOr<std::vector<Array>> got = testing::RunPlanOnHost(*mu.plan, args, **host);
    if (!got.ok() && got.status().code() == StatusCode::kUnimplemented) continue;
    ASSERT_TRUE(got.ok()) << mu.what << ": " << got.status().message();
    ASSERT_EQ(got->size(), want->size()) << mu.what;
    // Random arguments make some results ill-conditioned (x / (sqrt(v) / b + c) with the
    // denominator near 0, as in an AdamW step): there the GPU's other summation order in a dot
    // moves the result by far more than the tolerance. A mismatch is judged against the CPU's own
    // sensitivity: its results for arguments nudged by up to 2^-20 relative.
    std::optional<std::vector<Array>> nudged;
    for (size_t r = 0; r < want->size(); ++r) {
      std::string diff = testing::Compare((*got)[r], (*want)[r], testing::ReduceScale(*mu.module));
      if (!diff.empty() && IsFloating((*want)[r].dtype())) {
        if (!nudged) {
          StatusOr<std::vector<Array>> n = mu.exe->Run(Nudged(args, rng), options);
          nudged = n.ok() ? std::move(*n) : *want;
        }
        diff = WithinSensitivity((*got)[r], (*want)[r], (*nudged)[r], testing::ReduceScale(*mu.module));
      }
      EXPECT_EQ(diff, "") << mu.what << " result " << r;
    }
    ++ran;
  }
  std::cout << "small mutants run through their GPU plans on the host: " << ran << " of " << mutants.size() << " planned ("
            << kernels.size() << " kernels)\n";
  // 71 from tests/data alone when this was set.
  EXPECT_GT(ran, WithCorpus() ? 100 : 50);
}

}  // namespace
}  // namespace xs::cuda

#else  // !XSHARD_WITH_CUDA

TEST(GpuPlanMutations, NeedsTheCudaToolkit) { GTEST_SKIP() << "this build has no CUDA toolkit (XSHARD_WITH_CUDA)"; }

#endif
