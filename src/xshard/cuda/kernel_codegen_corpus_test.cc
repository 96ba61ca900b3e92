// Every fused loop and codegen-op step of real modules generates a kernel that NVRTC compiles
// for sm_90: the modules under tests/data and the OpenXLA corpus modules the CPU executor plans.
// Prints the counts (modules, kernels generated / compiled / refused with reasons) and times.
// With a GPU, every module whose GPU plan is complete runs as the runtime runs it and matches
// the CPU executor.
#include <gtest/gtest.h>

#ifdef XSHARD_WITH_CUDA

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "xshard/cuda/kernel_codegen_test_util.h"
#include "xshard/cuda/platform.h"
#include "xshard/ir/computation.h"
#include "xshard/ir/verifier.h"
#include "xshard/testing/corpus.h"
#include "xshard/text/parser.h"

namespace xs::cuda {
namespace {

struct PlannedCorpus {
  std::string file;
  std::unique_ptr<Module> module;
  std::unique_ptr<Executable> exe;
};

// Modules of tests/data (*.hlo, sorted) that parse and plan.
std::vector<PlannedCorpus> TestDataModules(int* skipped) {
  std::vector<std::string> files;
  const std::filesystem::path dir = std::filesystem::path(XSHARD_SOURCE_DIR) / "tests" / "data";
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().extension() == ".hlo") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  std::vector<PlannedCorpus> out;
  for (const std::string& f : files) {
    StatusOr<std::unique_ptr<Module>> m = ParseHloModule(xs::testing::ReadTextFile(f), f);
    if (!m.ok() || !Verify(**m).ok()) {  // the reliability cases are malformed on purpose
      ++*skipped;
      continue;
    }
    StatusOr<std::unique_ptr<Executable>> e = Executable::Create(**m);
    if (!e.ok()) {
      ++*skipped;
      continue;
    }
    out.push_back({f, std::move(*m), std::move(*e)});
  }
  return out;
}

// Corpus modules (MANIFEST order, expected errors excluded) that parse and plan.
std::vector<PlannedCorpus> CorpusModules(int* skipped) {
  std::vector<PlannedCorpus> out;
  const std::string dir = XSHARD_CORPUS_DIR;
  for (const xs::testing::CorpusModule& row : xs::testing::ReadCorpusManifest(dir)) {
    if (row.expects_error()) continue;
    StatusOr<std::unique_ptr<Module>> m = ParseHloModule(xs::testing::ReadTextFile(dir + "/" + row.file), row.file);
    if (!m.ok() || !Verify(**m).ok()) {  // the reliability cases are malformed on purpose
      ++*skipped;
      continue;
    }
    StatusOr<std::unique_ptr<Executable>> e = Executable::Create(**m);
    if (!e.ok()) {
      ++*skipped;
      continue;
    }
    out.push_back({row.file, std::move(*m), std::move(*e)});
  }
  return out;
}

// Generates and compiles every kernel of `modules`; returns the kernels generated.
void GenerateAndCompile(const char* what, const std::vector<PlannedCorpus>& modules, int skipped) {
  testing::NoDiskCache no_cache;
  const auto t0 = std::chrono::steady_clock::now();
  testing::ModuleKernels all;
  for (const PlannedCorpus& p : modules) testing::CollectKernels(*p.exe, all);
  const auto t1 = std::chrono::steady_clock::now();
  int programs = 0;
  Status compiled = testing::CompileAll(all.kernels, 150, &programs);
  const auto t2 = std::chrono::steady_clock::now();
  EXPECT_TRUE(compiled.ok()) << compiled.message().substr(0, 4000);
  int refused = 0;
  for (const auto& [why, n] : all.refused) {
    refused += n;
    // Refusals are the generators' documented limits, never a bug or a bad plan.
    EXPECT_EQ(why.rfind("cuda: ", 0), 0u) << why;
  }
  std::vector<std::string> names;
  for (const GeneratedKernel& k : all.kernels) names.push_back(k.source.name);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  std::cout << what << ": " << modules.size() << " modules planned (" << skipped << " do not parse or plan), "
            << all.fused << " fused loops + " << all.ops << " op steps -> " << all.kernels.size()
            << " kernels generated (" << names.size() << " distinct), " << refused << " refused; generating "
            << std::chrono::duration<double>(t1 - t0).count() << " s, compiling " << programs << " NVRTC programs "
            << std::chrono::duration<double>(t2 - t1).count() << " s\n";
  for (const auto& [why, n] : all.refused) std::cout << "  refused " << n << ": " << why << "\n";
}

TEST(KernelCodegenCorpus, TestDataModulesGenerateAndCompile) {
  int skipped = 0;
  std::vector<PlannedCorpus> modules = TestDataModules(&skipped);
  EXPECT_GE(modules.size(), 100u);
  GenerateAndCompile("tests/data", modules, skipped);
}

TEST(KernelCodegenCorpus, XlaCorpusModulesGenerateAndCompile) {
  if (!xs::testing::CorpusAvailable(XSHARD_CORPUS_DIR)) GTEST_SKIP() << "corpus not found at " << XSHARD_CORPUS_DIR;
  int skipped = 0;
  std::vector<PlannedCorpus> modules = CorpusModules(&skipped);
  EXPECT_GE(modules.size(), 700u);
  GenerateAndCompile("XLA corpus", modules, skipped);
}

Array RandomArrayCorpus(const Shape& shape, std::mt19937_64& rng) {
  Array a(shape);
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::uniform_int_distribution<int> small(0, 3);
  for (int64_t k = 0; k < a.num_elements(); ++k) {
    if (IsInteger(shape.dtype()) || shape.dtype() == DType::kPred) {
      a.SetDouble(k, shape.dtype() == DType::kPred ? small(rng) % 2 : small(rng));
    } else if (IsFloating(shape.dtype())) {
      a.SetDouble(k, real(rng));
    } else if (shape.dtype() == DType::kC64) {
      reinterpret_cast<float*>(a.data())[2 * k] = static_cast<float>(real(rng));
      reinterpret_cast<float*>(a.data())[2 * k + 1] = static_cast<float>(real(rng));
    } else if (shape.dtype() == DType::kC128) {
      reinterpret_cast<double*>(a.data())[2 * k] = real(rng);
      reinterpret_cast<double*>(a.data())[2 * k + 1] = real(rng);
    }
  }
  return a;
}

// Every planned module whose buffers all stay under 16 MiB (as the executor's corpus test).
std::vector<PlannedCorpus> AllModules() {
  int skipped = 0;
  std::vector<PlannedCorpus> all = TestDataModules(&skipped);
  if (xs::testing::CorpusAvailable(XSHARD_CORPUS_DIR)) {
    for (PlannedCorpus& p : CorpusModules(&skipped)) all.push_back(std::move(p));
  }
  std::vector<PlannedCorpus> small;
  for (PlannedCorpus& p : all) {
    bool fits = p.exe->arena_bytes() < (int64_t{64} << 20);
    for (const Computation* c : p.module->computations()) {
      for (const Instruction* i : c->instructions()) {
        fits = fits && (!i->shape().IsArray() || i->shape().byte_size() < (int64_t{16} << 20));
      }
    }
    if (fits) small.push_back(std::move(p));
  }
  return small;
}

// Roughly the scalar operations a module's kernels do (each result element times the terms it
// combines: a dot's contracting size, a convolution's window times input features, a reduce's
// reduced count, a sort's passes): the emulator runs unoptimized host code, thread after
// thread, about 100x slower than the CPU executor.
double EmulatorWork(const Module& m) {
  double work = 0;
  for (const Computation* c : m.computations()) {
    for (const Instruction* i : c->instructions()) {
      const Opcode op = i->opcode();
      if (op == Opcode::kSort || op == Opcode::kTopK ||
          (op == Opcode::kCustomCall && i->attrs().custom_call_target == "TopK")) {
        // A sorting network: about log2(n)^2 / 2 passes over the row, each ending at a block
        // barrier where every thread (fiber) switches: 5 per element and pass squared.
        if (i->operand_count() == 0 || !i->operand(0)->shape().IsArray()) continue;
        const Shape& in = i->operand(0)->shape();
        const int64_t len = in.rank() == 0 ? 1 : in.dim(op == Opcode::kSort && !i->dimensions().empty()
                                                            ? static_cast<int>(i->dimensions()[0]) : in.rank() - 1);
        const double passes = std::log2(static_cast<double>(std::max<int64_t>(2, len)));
        work += 5 * passes * passes * static_cast<double>(in.num_elements());
        continue;
      }
      if (!i->shape().IsArray()) continue;
      double terms = 1;
      if (op == Opcode::kDot && i->attrs().dot) {
        for (int64_t d : i->attrs().dot->lhs_contracting) terms *= static_cast<double>(i->operand(0)->shape().dim(static_cast<int>(d)));
      } else if (op == Opcode::kConvolution && i->attrs().conv_dims) {
        const Shape& k = i->operand(1)->shape();
        terms = static_cast<double>(k.num_elements()) /
                std::max<int64_t>(1, k.dim(static_cast<int>(i->attrs().conv_dims->kernel_output_feature)));
      } else if ((op == Opcode::kRaggedDot || op == Opcode::kCholesky || op == Opcode::kTriangularSolve ||
                  (op == Opcode::kCustomCall && (i->attrs().custom_call_target == "__op$block_scaled_dot" ||
                                                 i->attrs().custom_call_target.value_or("").rfind("lapack_", 0) == 0))) &&
                 i->operand_count() > 0 && i->operand(0)->shape().IsArray() && i->operand(0)->shape().rank() > 0) {
        // The lhs's (or the matrix's) minor dim: the contracting size of JAX's ragged and
        // block-scaled dots, the order of a factorization or a solve.
        terms = static_cast<double>(i->operand(0)->shape().dims().back());
      } else if (op == Opcode::kReduce && i->operand(0)->shape().IsArray()) {
        terms = static_cast<double>(i->operand(0)->shape().num_elements()) / std::max<int64_t>(1, i->shape().num_elements());
      }
      work += terms * static_cast<double>(i->shape().num_elements());
    }
  }
  return work;
}
// Modules above this much EmulatorWork run on a GPU only (a few seconds each on the emulator).
constexpr double kEmulatorWorkLimit = 3e7;

// Random arguments for `p` and the CPU executor's results on them (while loops capped at 100
// iterations); an error when the CPU cannot run them (the module is then skipped).
StatusOr<std::vector<Array>> CpuRun(const PlannedCorpus& p, std::mt19937_64& rng, std::vector<Array>& args) {
  for (const Shape& s : p.exe->argument_shapes()) args.push_back(RandomArrayCorpus(s, rng));
  ExecuteOptions options;
  options.max_while_iterations = 100;
  return p.exe->Run(args, options);
}

// `got` (a host or GPU run) against the CPU executor's `want`, within Compare's tolerance.
void ExpectMatches(const PlannedCorpus& p, const StatusOr<std::vector<Array>>& got, const std::vector<Array>& want) {
  ASSERT_TRUE(got.ok()) << p.file << ": " << got.status().message();
  ASSERT_EQ(got->size(), want.size()) << p.file;
  for (size_t i = 0; i < want.size(); ++i) {
    const std::string diff = testing::Compare((*got)[i], want[i], testing::ReduceScale(*p.module));
    EXPECT_TRUE(diff.empty()) << p.file << " result " << i << ": " << diff;
  }
}

// The modules whose entry plan has only steps the test harness runs, with the kernels compiled
// for the host and run by its SIMT emulator: against the CPU executor.
TEST(KernelCodegenCorpus, ModulesTheHostHarnessRunsMatchTheCpu) {
  std::vector<PlannedCorpus> all = AllModules(), modules;
  std::vector<GeneratedKernel> kernels;
  int too_big = 0;
  for (PlannedCorpus& p : all) {
    if (EmulatorWork(*p.module) > kEmulatorWorkLimit) {
      ++too_big;
      continue;
    }
    std::vector<GeneratedKernel> ks;
    if (!testing::HostRunsEntry(*p.exe, &ks)) continue;
    for (GeneratedKernel& k : ks) kernels.push_back(std::move(k));
    modules.push_back(std::move(p));
  }
  const auto start = std::chrono::steady_clock::now();
  StatusOr<std::unique_ptr<testing::HostKernels>> host = testing::HostKernels::Build(kernels);
  ASSERT_TRUE(host.ok()) << host.status().message();
  std::cout << "host build of " << kernels.size() << " kernels: "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << " s\n";
  std::mt19937_64 rng(42);
  int ran = 0, not_run = 0;
  std::vector<std::pair<double, std::string>> slowest;  // seconds on the emulator, module
  for (const PlannedCorpus& p : modules) {
    std::vector<Array> args;
    StatusOr<std::vector<Array>> want = CpuRun(p, rng, args);
    if (!want.ok()) continue;
    if (std::getenv("XSHARD_TEST_VERBOSE") != nullptr) std::cerr << "running " << p.file << "\n";
    const auto module_start = std::chrono::steady_clock::now();
    StatusOr<std::vector<Array>> got = testing::RunOnHost(*p.exe, args, **host);
    slowest.emplace_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - module_start).count(), p.file);
    if (!got.ok() && got.status().code() == StatusCode::kUnimplemented) {
      ++not_run;
      continue;
    }
    ExpectMatches(p, got, *want);
    ++ran;
  }
  std::sort(slowest.rbegin(), slowest.rend());
  std::cout << "slowest on the emulator:";
  for (size_t i = 0; i < slowest.size() && i < 5; ++i) std::cout << " " << slowest[i].second << " " << slowest[i].first << " s;";
  std::cout << "\n";
  std::cout << "modules run with host-compiled kernels: " << ran << " of " << all.size()
            << " (the others have steps the harness does not run: collectives, control flow, ...; "
            << too_big << " too big for the emulator; " << not_run << " refused late)\n";
  // Floors: 714 ran with the OpenXLA corpus, 51 from the repository's test data alone (2026-11-29).
  if (xs::testing::CorpusAvailable(XSHARD_CORPUS_DIR)) {
    EXPECT_GE(ran, 700);
  } else {
    EXPECT_GE(ran, 49);
    std::cout << "the OpenXLA corpus is not at " << XSHARD_CORPUS_DIR << ": only the test data ran\n";
  }
}

// Every module whose GPU plan is complete, run as the GPU executor runs it (its actions, arena
// offsets, aliases, in-place results, GEMM and convolution layouts, control flow) in host
// memory with the plan's kernels on the emulator: against the CPU executor.
TEST(KernelCodegenCorpus, GpuPlansRunOnTheHostMatchTheCpu) {
  std::vector<PlannedCorpus> all = AllModules();
  struct Ready {
    const PlannedCorpus* p;
    std::unique_ptr<GpuPlan> plan;
  };
  std::vector<Ready> ready;
  std::vector<GeneratedKernel> kernels;
  int too_big = 0, unsupported = 0;
  for (const PlannedCorpus& p : all) {
    if (EmulatorWork(*p.module) > kEmulatorWorkLimit) {
      ++too_big;
      continue;
    }
    StatusOr<std::unique_ptr<GpuPlan>> plan = GpuPlan::Create(*p.exe);
    ASSERT_TRUE(plan.ok()) << p.file << ": " << plan.status().message();
    if (!(*plan)->Supported().ok()) {
      ++unsupported;
      continue;
    }
    for (GeneratedKernel& k : testing::PlanKernels(**plan)) kernels.push_back(std::move(k));
    ready.push_back({&p, std::move(*plan)});
  }
  StatusOr<std::unique_ptr<testing::HostKernels>> host = testing::HostKernels::Build(kernels);
  ASSERT_TRUE(host.ok()) << host.status().message();
  std::mt19937_64 rng(43);
  int ran = 0, not_run = 0;
  std::map<std::string, int> why_not;
  for (const Ready& r : ready) {
    const PlannedCorpus& p = *r.p;
    std::vector<Array> args;
    StatusOr<std::vector<Array>> want = CpuRun(p, rng, args);
    if (!want.ok()) continue;
    StatusOr<std::vector<Array>> got = testing::RunPlanOnHost(*r.plan, args, **host);
    if (!got.ok() && got.status().code() == StatusCode::kUnimplemented) {
      ++not_run;
      ++why_not[got.status().message().substr(0, 60)];
      continue;
    }
    ExpectMatches(p, got, *want);
    ++ran;
  }
  std::cout << "GPU plans run on the host: " << ran << " of " << all.size() << " (" << unsupported
            << " have an unsupported step, " << too_big << " too big for the emulator, " << not_run
            << " not run here:";
  for (const auto& [why, n] : why_not) std::cout << " " << n << " x " << why << ";";
  std::cout << ")\n";
  // Floors: 900 ran with the OpenXLA corpus, 90 from the repository's test data alone (2026-11-29).
  if (xs::testing::CorpusAvailable(XSHARD_CORPUS_DIR)) {
    EXPECT_GE(ran, 890);
  } else {
    EXPECT_GE(ran, 87);
  }
}

// On a GPU: every module whose GPU plan is complete, loaded as the runtime loads it
// (GpuExecutable: arena, constants, NVRTC-compiled kernels, cuBLASLt / cuDNN plans) and run with
// the CPU executor's random arguments, against the CPU executor. Loads (mostly NVRTC compiles)
// run on every core, a batch at a time; the runs one after another.
TEST(KernelCodegenCorpus, GpuExecutablesMatchTheCpuOnAGpu) {
  if (!NoGpuReason().empty()) GTEST_SKIP() << NoGpuReason();
  const auto start = std::chrono::steady_clock::now();
  std::vector<PlannedCorpus> modules = AllModules();
  struct Job {
    const PlannedCorpus* p = nullptr;
    std::unique_ptr<GpuPlan> plan;
    StatusOr<std::unique_ptr<GpuExecutable>> gpu = Unimplemented("not loaded");
  };
  std::vector<Job> jobs;
  int unsupported = 0;
  for (const PlannedCorpus& p : modules) {
    StatusOr<std::unique_ptr<GpuPlan>> plan = GpuPlan::Create(*p.exe);
    ASSERT_TRUE(plan.ok()) << p.file << ": " << plan.status().message();
    if (!(*plan)->Supported().ok()) {
      ++unsupported;
      continue;
    }
    Job j;
    j.p = &p;
    j.plan = std::move(*plan);
    jobs.push_back(std::move(j));
  }
  const int threads = std::max(1, std::min(16, static_cast<int>(std::thread::hardware_concurrency())));
  constexpr size_t kBatch = 64;  // executables held at once (each with its arena)
  std::mt19937_64 rng(44);
  int ran = 0, cpu_skipped = 0;
  double load_s = 0, run_s = 0;
  for (size_t b = 0; b < jobs.size(); b += kBatch) {
    const size_t e = std::min(jobs.size(), b + kBatch);
    const auto t0 = std::chrono::steady_clock::now();
    std::atomic<size_t> next{b};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&] {
        for (size_t i = next++; i < e; i = next++) jobs[i].gpu = GpuExecutable::Load(std::move(jobs[i].plan), {});
      });
    }
    for (std::thread& t : pool) t.join();
    const auto t1 = std::chrono::steady_clock::now();
    for (size_t i = b; i < e; ++i) {
      const PlannedCorpus& p = *jobs[i].p;
      std::vector<Array> args;
      StatusOr<std::vector<Array>> want = CpuRun(p, rng, args);
      if (!want.ok()) {
        ++cpu_skipped;
        jobs[i].gpu = Unimplemented("done");
        continue;
      }
      if (!jobs[i].gpu.ok()) {
        ADD_FAILURE() << p.file << ": " << jobs[i].gpu.status().message();
        continue;
      }
      std::vector<const Array*> arg_ptrs;
      for (const Array& a : args) arg_ptrs.push_back(&a);
      GpuRunOptions options;
      options.max_while_iterations = 100;  // as CpuRun
      StatusOr<std::vector<DeviceArray>> out = (*jobs[i].gpu)->Run(arg_ptrs, options);
      StatusOr<std::vector<Array>> got = out.ok() ? (*jobs[i].gpu)->CopyToHost(*out) : StatusOr<std::vector<Array>>(out.status());
      ExpectMatches(p, got, *want);
      ++ran;
      jobs[i].gpu = Unimplemented("done");  // frees its device memory
    }
    load_s += std::chrono::duration<double>(t1 - t0).count();
    run_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  }
  std::cout << "GPU executables run on the GPU: " << ran << " of " << modules.size() << " modules (" << unsupported
            << " have an unsupported step, " << cpu_skipped << " the CPU does not run with random arguments); loading "
            << load_s << " s on " << threads << " threads, running and checking " << run_s << " s, in all "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << " s\n";
  EXPECT_GT(ran, 800);
}

}  // namespace
}  // namespace xs::cuda

#else

TEST(KernelCodegenCorpus, NeedsTheCudaToolkit) { GTEST_SKIP() << "this xshard was built without CUDA support"; }

#endif
