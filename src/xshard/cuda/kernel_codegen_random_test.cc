// The rng, rng-bit-generator and rng-get-and-update-state kernels: they compile with NVRTC for
// sm_90 and, on the host emulator (one op alone and whole GPU plans), give the CPU executor's
// bits; published Philox-4x32-10 / Threefry-2x32-20 vectors; the state sequence worked out by
// hand; the corpus modules holding these ops.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#ifdef XSHARD_WITH_CUDA

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "xshard/cuda/kernel_codegen.h"
#include "xshard/cuda/kernel_codegen_test_util.h"
#include "xshard/cuda/platform.h"
#include "xshard/testing/corpus.h"
#include "xshard/text/parser.h"

namespace xs::cuda {
namespace {

struct CaseRandom {
  std::string what, text;
  std::vector<Array> args;
  bool exact = true;  // bit for bit; else within Compare's tolerance (rng_normal)
};

using PlannedRandom = testing::PlannedModule;

// Parses, plans for the CPU and the GPU (asserting the GPU plan is complete: PlanForGpu).
void Plan(const std::string& what, const std::string& text, PlannedRandom& p) {
  StatusOr<PlannedRandom> planned = testing::PlanForGpu(what, text);
  ASSERT_TRUE(planned.ok()) << planned.status().message();
  p = std::move(*planned);
}

Array U64(std::vector<uint64_t> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Array::FromVector<uint64_t>({n}, std::move(v));
}

std::string BitsModule(const std::string& state, const std::string& result, const std::string& algorithm) {
  return "HloModule m\nENTRY e {\n  s = " + state + " parameter(0)\n  ROOT r = " + result +
         " rng-bit-generator(s), algorithm=" + algorithm + "\n}\n";
}

std::vector<CaseRandom> BitCases() {
  const uint64_t wrap = ~uint64_t{0} - 2;  // the counter wraps inside the output
  return {
      {"JAX threefry key: (u64[2], u32[2,4])",
       BitsModule("u64[2]", "(u64[2], u32[2,4])", "rng_three_fry"),
       {U64({0x0370734413198a2eULL, 0x85a308d3243f6a88ULL})}},
      {"threefry u8[37] alone (an odd dim: the last counter fills one)", BitsModule("u64[2]", "u8[37]", "rng_three_fry"), {U64({42, 7})}},
      {"threefry u16[3,5], the counter wrapping", BitsModule("u64[2]", "(u64[2], u16[3,5])", "rng_three_fry"), {U64({1, wrap})}},
      {"threefry u32[3,5] (no even dim: pairs along the larger)",
       BitsModule("u64[2]", "(u64[2], u32[3,5])", "rng_three_fry"),
       {U64({5, 7})}},
      {"threefry s8[3,4,5] (pairs along the middle dim)",
       BitsModule("u64[2]", "s8[3,4,5]", "rng_three_fry"),
       {U64({5, 7})}},
      {"threefry u32[] (one counter)", BitsModule("u64[2]", "(u64[2], u32[])", "rng_three_fry"), {U64({5, 7})}},
      {"threefry u64[9]", BitsModule("u64[2]", "(u64[2], u64[9])", "rng_three_fry"), {U64({99, 1000})}},
      {"rbg (rng_default) u32[1000] alone",
       BitsModule("u64[2]", "u32[1000]", "rng_default"),
       {U64({0xdeadbeefcafef00dULL, 3})}},
      {"philox u16[3,7] (21 words: a partial final block)",
       BitsModule("u64[2]", "(u64[2], u16[3,7])", "rng_philox"),
       {U64({5, 6})}},
      {"philox u64[3] state, carry into the third word",
       BitsModule("u64[3]", "(u64[3], u64[11])", "rng_philox"),
       {U64({17, wrap, 9})}},
      {"philox u64[3] state, all ones",
       BitsModule("u64[3]", "(u64[3], s32[13])", "rng_default"),
       {U64({~0ULL, ~0ULL, ~0ULL})}},
      {"philox u64[8] state (extra words kept)",
       BitsModule("u64[8]", "(u64[8], u8[2,3,5])", "rng_default"),
       {U64({1, 2, 3, 4, 5, 6, 7, 8})}},
      {"philox s64[4,33]", BitsModule("u64[2]", "(u64[2], s64[4,33])", "rng_philox"), {U64({123456789, 0})}},
  };
}

std::string RngModule(const std::string& t, const std::string& dims, const std::string& a, const std::string& b,
                      const std::string& dist, const std::string& name = "rng.7") {
  return "HloModule m\nENTRY e {\n  a = " + t + "[] constant(" + a + ")\n  b = " + t + "[] constant(" + b + ")\n  ROOT " + name +
         " = " + t + dims + " rng(a, b), distribution=" + dist + "\n}\n";
}

std::vector<CaseRandom> RngCases() {
  std::vector<CaseRandom> c = {
      {"uniform f32[1001] [0, 1)", RngModule("f32", "[1001]", "0", "1", "rng_uniform"), {}},
      {"uniform f32, a one-ulp range (rounding lands on b)", RngModule("f32", "[64]", "1", "1.00000012", "rng_uniform"), {}},
      {"uniform bf16[3,171] [-2, 3)", RngModule("bf16", "[3,171]", "-2", "3", "rng_uniform"), {}},
      {"uniform f16[257] [10, 11)", RngModule("f16", "[257]", "10", "11", "rng_uniform"), {}},
      {"uniform f64[99] [-1e6, 1e6)", RngModule("f64", "[99]", "-1e6", "1e6", "rng_uniform"), {}},
      {"uniform f32, b < a", RngModule("f32", "[9]", "5", "-5", "rng_uniform"), {}},
      {"uniform s32[777] [-5, 100)", RngModule("s32", "[777]", "-5", "100", "rng_uniform"), {}},
      {"uniform s32 [0, 2^31-1) (the corpus' range)", RngModule("s32", "[4]", "0", "2147483647", "rng_uniform"), {}},
      {"uniform u8[33] [3, 250)", RngModule("u8", "[33]", "3", "250", "rng_uniform"), {}},
      {"uniform s64[17] wide range", RngModule("s64", "[17]", "-4611686018427387904", "4611686018427387904", "rng_uniform"), {}},
      {"uniform s32, b < a (all a)", RngModule("s32", "[5]", "7", "2", "rng_uniform"), {}},
      {"normal f32[2,301]", RngModule("f32", "[2,301]", "0", "1", "rng_normal"), {}, false},
      {"normal f64[50] mean 3 sd 0.5", RngModule("f64", "[50]", "3", "0.5", "rng_normal"), {}, false},
      {"normal bf16[40]", RngModule("bf16", "[40]", "-1", "2", "rng_normal"), {}, false},
  };
  // Operands as parameters (read by the kernel at run time).
  c.push_back({"uniform f32 from parameters",
               "HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
               "  ROOT r = f32[5,7] rng(a, b), distribution=rng_uniform\n}\n",
               {Array::Scalar<float>(-0.25f), Array::Scalar<float>(4.5f)}});
  return c;
}

// Runs every case on the CPU and, with one host library, through RunOnHost and RunPlanOnHost.
void RunCases(const std::vector<CaseRandom>& cases) {
  std::vector<PlannedRandom> planned(cases.size());
  std::vector<GeneratedKernel> ops;
  for (size_t i = 0; i < cases.size(); ++i) {
    Plan(cases[i].what, cases[i].text, planned[i]);
    if (::testing::Test::HasFatalFailure()) return;
    StatusOr<GeneratedKernel> k = testing::OneRootKernel(planned[i]);
    ASSERT_TRUE(k.ok()) << k.status().message();
    ops.push_back(std::move(*k));
  }
  StatusOr<std::unique_ptr<testing::HostKernels>> host = testing::CompileAndBuildForHost(planned, ops);
  ASSERT_TRUE(host.ok()) << host.status().message();
  testing::CheckOptions options;
  options.op_alone = true;
  options.check = [&](size_t i, const Array& got, const Array& want) {
    return cases[i].exact ? testing::CompareAndBits(got, want) : testing::Compare(got, want);
  };
  EXPECT_THAT(testing::CheckPlansAgainstTheCpu(
                  planned, **host, [&](const PlannedRandom&, size_t i) { return cases[i].args; }, options),
              ::testing::IsEmpty());
}

TEST(KernelCodegenRandom, BitGeneratorMatchesTheCpuBitForBit) { RunCases(BitCases()); }

TEST(KernelCodegenRandom, RngMatchesTheCpu) { RunCases(RngCases()); }

// Published known answers (Random123's kat_vectors; JAX's threefry test), through the kernels.
TEST(KernelCodegenRandom, KnownAnswerVectors) {
  const struct {
    std::string text;
    Array state;
    std::vector<uint32_t> bits;
    std::vector<uint64_t> next;
  } cases[] = {
      // Threefry-2x32-20, key (0x13198a2e, 0x03707344), counter (0x243f6a88, 0x85a308d3).
      {BitsModule("u64[2]", "(u64[2], u32[2])", "rng_three_fry"), U64({0x0370734413198a2eULL, 0x85a308d3243f6a88ULL}),
       {0xc4923a9cu, 0x483df7a0u}, {0x0370734413198a2eULL, 0x85a308d3243f6a89ULL}},
      // Threefry-2x32-20, zero key and counter.
      {BitsModule("u64[2]", "(u64[2], u32[2])", "rng_three_fry"), U64({0, 0}), {0x6b200159u, 0x99ba4efeu}, {0, 1}},
      // Philox-4x32-10, zero key and counter.
      {BitsModule("u64[3]", "(u64[3], u32[4])", "rng_philox"), U64({0, 0, 0}),
       {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}, {0, 1, 0}},
      // Philox-4x32-10, all-ones key and counter: the counter wraps to zero, carrying into word 2.
      {BitsModule("u64[3]", "(u64[3], u32[4])", "rng_philox"), U64({~0ULL, ~0ULL, ~0ULL}),
       {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}, {~0ULL, 0, 0}},
  };
  std::vector<PlannedRandom> planned(std::size(cases));
  for (size_t i = 0; i < std::size(cases); ++i) {
    Plan("known answer", cases[i].text, planned[i]);
    if (HasFatalFailure()) return;
  }
  StatusOr<std::unique_ptr<testing::HostKernels>> host =
      testing::CompileAndBuildForHost(planned, {}, testing::Nvrtc::kSkip);
  ASSERT_TRUE(host.ok()) << host.status().message();
  for (size_t i = 0; i < std::size(cases); ++i) {
    const auto& c = cases[i];
    const PlannedRandom& p = planned[i];
    const std::vector<Array> args = {c.state};
    StatusOr<std::vector<Array>> got = testing::RunPlanOnHost(*p.plan, args, **host);
    ASSERT_TRUE(got.ok()) << got.status().message();
    ASSERT_EQ(got->size(), 2u);
    for (size_t i = 0; i < c.next.size(); ++i) EXPECT_EQ((*got)[0].values<uint64_t>()[i], c.next[i]) << c.text << " state word " << i;
    for (size_t i = 0; i < c.bits.size(); ++i) EXPECT_EQ((*got)[1].values<uint32_t>()[i], c.bits[i]) << c.text << " word " << i;
  }
}

// An output buffer that is not 16-byte aligned takes the byte path and writes the same bytes.
TEST(KernelCodegenRandom, UnalignedOutputWritesTheSameBytes) {
  for (const std::string alg : {"rng_philox", "rng_three_fry"}) {
    PlannedRandom p;
    Plan(alg, BitsModule("u64[2]", "u8[45]", alg), p);
    if (HasFatalFailure()) return;
    StatusOr<std::vector<GeneratedKernel>> ks = GenerateOpKernels(*p.module->entry()->root(), false);
    ASSERT_TRUE(ks.ok()) << ks.status().message();
    StatusOr<std::unique_ptr<testing::HostKernels>> host = testing::HostKernels::Build(*ks);
    ASSERT_TRUE(host.ok()) << host.status().message();
    const std::vector<Array> args = {U64({77, 5})};
    StatusOr<std::vector<Array>> want = p.exe->Run(args);
    ASSERT_TRUE(want.ok()) << want.status().message();
    std::vector<unsigned char> buffer(64 + 45 + 1, 0xee);
    unsigned char* out = buffer.data() + (64 - reinterpret_cast<uintptr_t>(buffer.data()) % 64) % 64 + 1;
    Array state = args[0];
    ASSERT_TRUE((*host)->Launch((*ks)[0], {state.data(), out}).ok());
    EXPECT_EQ(std::memcmp(out, (*want)[0].data(), 45), 0) << alg;
    EXPECT_EQ(out[45], 0xee) << alg << ": wrote past the end";
  }
}

// rng-get-and-update-state: worked out by hand, (0, 0), then (delta, 0), (2 delta, 0); with
// delta = 2^64 - 1 the low word wraps on the second call and carries into the high word.
TEST(KernelCodegenRandom, StateAdvancesByDeltaAcrossRunsAsWorkedOutByHand) {
  const std::string text =
      "HloModule states\nENTRY e {\n  g = u64[2] rng-get-and-update-state(), delta=4096\n"
      "  h = u64[2] rng-get-and-update-state(), delta=-1\n  ROOT t = (u64[2], u64[2]) tuple(g, h)\n}\n";
  PlannedRandom p;
  Plan("states", text, p);
  if (HasFatalFailure()) return;
  const std::vector<GeneratedKernel> ks = testing::PlanKernels(*p.plan);
  ASSERT_EQ(ks.size(), 2u);
  EXPECT_NE(ks[0].source.name, ks[1].source.name);
  {
    testing::NoDiskCache no_cache;
    const Status compiled = testing::CompileAll(ks, 8);
    ASSERT_TRUE(compiled.ok()) << compiled.message().substr(0, 4000);
  }
  StatusOr<std::unique_ptr<testing::HostKernels>> host = testing::HostKernels::Build(ks);
  ASSERT_TRUE(host.ok()) << host.status().message();
  const uint64_t m1 = ~uint64_t{0};
  const std::vector<std::vector<uint64_t>> g = {{0, 0}, {4096, 0}, {8192, 0}};
  const std::vector<std::vector<uint64_t>> h = {{0, 0}, {m1, 0}, {m1 - 1, 1}};
  const std::vector<Array> none;
  std::vector<std::byte> constants;  // the executable's constant region, kept across its runs
  for (int run = 0; run < 3; ++run) {
    StatusOr<std::vector<Array>> want = p.exe->Run(none);
    StatusOr<std::vector<Array>> got = testing::RunPlanOnHost(*p.plan, none, **host, &constants);
    ASSERT_TRUE(want.ok() && got.ok()) << want.status().message() << got.status().message();
    ASSERT_EQ(got->size(), 2u);
    for (int r = 0; r < 2; ++r) {
      EXPECT_EQ(testing::Compare((*got)[r], (*want)[r]), "") << "run " << run << " result " << r;
      const std::vector<uint64_t>& by_hand = r == 0 ? g[run] : h[run];
      for (int w = 0; w < 2; ++w) EXPECT_EQ((*got)[r].values<uint64_t>()[w], by_hand[w]) << "run " << run << " result " << r;
    }
  }
  // Each executable keeps its own state (the CPU's does too): a second plan of the same module,
  // with the same kernels in the same host library, starts again at 0.
  PlannedRandom again;
  Plan("states", text, again);
  if (HasFatalFailure()) return;
  std::vector<std::byte> again_constants;
  StatusOr<std::vector<Array>> want = again.exe->Run(none);
  StatusOr<std::vector<Array>> got = testing::RunPlanOnHost(*again.plan, none, **host, &again_constants);
  ASSERT_TRUE(want.ok() && got.ok()) << want.status().message() << got.status().message();
  EXPECT_EQ((*got)[0].values<uint64_t>()[0], 0u);
  EXPECT_EQ(testing::Compare((*got)[0], (*want)[0]), "");
  // The first executable's state went on where it was.
  got = testing::RunPlanOnHost(*p.plan, none, **host, &constants);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ((*got)[0].values<uint64_t>()[0], 3 * 4096u);
}

// On a GPU (skipped without one): every case through the GPU executor (NVRTC, the loader, the
// device), equal to the CPU; the state module three times in a row.
TEST(KernelCodegenRandom, MatchesTheCpuOnAGpu) {
  if (!NoGpuReason().empty()) GTEST_SKIP() << NoGpuReason();
  std::vector<CaseRandom> cases = BitCases();
  for (CaseRandom& c : RngCases()) cases.push_back(std::move(c));
  cases.push_back({"state, three runs",
                   "HloModule gpu_states\nENTRY e {\n  ROOT g = u64[2] rng-get-and-update-state(), delta=1000\n}\n", {}});
  for (const CaseRandom& c : cases) {
    PlannedRandom p;
    Plan(c.what, c.text, p);
    if (HasFatalFailure()) return;
    StatusOr<std::unique_ptr<GpuExecutable>> gpu = GpuExecutable::Load(std::move(p.plan), {});
    ASSERT_TRUE(gpu.ok()) << c.what << ": " << gpu.status().message();
    std::vector<const Array*> ptrs;
    for (const Array& a : c.args) ptrs.push_back(&a);
    for (int run = 0; run < 3; ++run) {
      StatusOr<std::vector<Array>> want = p.exe->Run(c.args);
      ASSERT_TRUE(want.ok()) << c.what << ": " << want.status().message();
      StatusOr<std::vector<DeviceArray>> out = (*gpu)->Run(ptrs);
      ASSERT_TRUE(out.ok()) << c.what << ": " << out.status().message();
      StatusOr<std::vector<Array>> got = (*gpu)->CopyToHost(*out);
      ASSERT_TRUE(got.ok()) << c.what << ": " << got.status().message();
      ASSERT_EQ(got->size(), want->size()) << c.what;
      for (size_t r = 0; r < want->size(); ++r) {
        EXPECT_EQ(testing::Compare((*got)[r], (*want)[r]), "") << c.what << ", run " << run << ", result " << r;
        if (c.exact) {
          EXPECT_EQ(std::memcmp((*got)[r].data(), (*want)[r].data(), (*want)[r].byte_size()), 0)
              << c.what << ", run " << run << ", result " << r << " differs in bits";
        }
      }
    }
  }
}

TEST(KernelCodegenRandom, RefusesWhatTheCpuRejects) {
  const std::string texts[] = {
      RngModule("s32", "[4]", "0", "1", "rng_normal"),
      BitsModule("u64[3]", "(u64[3], u32[4])", "rng_three_fry"),
      BitsModule("u32[2]", "u32[4]", "rng_philox"),
  };
  for (const std::string& text : texts) {
    StatusOr<std::unique_ptr<Module>> m = ParseHloModule(text, "m");
    ASSERT_TRUE(m.ok()) << m.status().message();
    StatusOr<std::vector<GeneratedKernel>> ks = GenerateOpKernels(*(*m)->entry()->root(), false);
    ASSERT_FALSE(ks.ok()) << text;
    EXPECT_EQ(ks.status().message().rfind("cuda: ", 0), 0u) << ks.status().message();
    EXPECT_NE(ks.status().message().find("'r"), std::string::npos) << ks.status().message();
  }
}

// The corpus modules holding rng, rng-bit-generator or rng-get-and-update-state: GPU plans
// complete, run on the host, equal to the CPU (bit for bit: every one is uniform or bits).
TEST(KernelCodegenRandom, CorpusModulesRunOnTheHostAndMatchTheCpu) {
  if (!xs::testing::CorpusAvailable(XSHARD_CORPUS_DIR)) GTEST_SKIP() << "corpus not found at " << XSHARD_CORPUS_DIR;
  const std::string files[] = {
      "hlo_parser_test/Rng.hlo",
      "hlo_parser_test/RngBitGenerator.hlo",
      "hlo_parser_test/RngGetAndUpdateState.hlo",
      "sharding_propagation_test/ReplicateRngBitGeneratorSeed.hlo",
      "sharding_propagation_test/ReplicatedToSideEffecting.hlo",
      "shardy_xla_pass_test/RngBitGenerator.hlo",
      "spmd_partitioner_test/ManualRng.hlo",
      "spmd_partitioner_test/PartialReplicatedRng.hlo",
      "spmd_partitioner_test/PartitionedRng.hlo",
      "spmd_partitioner_test/ReplicatedRng.hlo",
      "stateful_rng_spmd_partitioner_test/RngPartitionedConsumer.hlo",
      "stateful_rng_spmd_partitioner_test/RngReplicatedConsumer.hlo",
  };
  StatusOr<std::vector<PlannedRandom>> planned = testing::PlanFilesForGpu(XSHARD_CORPUS_DIR, files);
  ASSERT_TRUE(planned.ok()) << planned.status().message();
  StatusOr<std::unique_ptr<testing::HostKernels>> host =
      testing::CompileAndBuildForHost(*planned, {}, testing::Nvrtc::kSkip);
  ASSERT_TRUE(host.ok()) << host.status().message();
  const auto args = [](const PlannedRandom& p, size_t i) {
    std::vector<Array> a;
    int64_t next = 1 + static_cast<int64_t>(i);
    for (const Shape& s : p.exe->argument_shapes()) {
      Array x(s);
      // States and rng bounds: small increasing values (a < b for rng's operands).
      for (int64_t k = 0; k < x.num_elements(); ++k, next += 37) x.SetDouble(k, static_cast<double>(next));
      a.push_back(std::move(x));
    }
    return a;
  };
  testing::CheckOptions options;
  options.check = [](size_t, const Array& got, const Array& want) { return testing::CompareAndBits(got, want); };
  EXPECT_THAT(testing::CheckPlansAgainstTheCpu(*planned, **host, args, options), ::testing::IsEmpty());
}

}  // namespace
}  // namespace xs::cuda

#else  // !XSHARD_WITH_CUDA

TEST(KernelCodegenRandom, NeedsTheCudaToolkit) { GTEST_SKIP() << "this xshard was built without CUDA support"; }

#endif  // XSHARD_WITH_CUDA
