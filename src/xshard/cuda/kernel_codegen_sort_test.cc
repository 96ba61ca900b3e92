// The sort / top-k kernel generator on hand-written modules: every kernel compiles with NVRTC for
// sm_90, and, compiled for the host with CUDA's built-ins emulated, produces exactly (bit for
// bit) the CPU executor's results: NaNs and signed zeros under JAX's comparators, stability
// under many ties, descending and multi-key orders, non-minor sort dims, odd and unit row
// lengths, bf16 / s64 keys, rows held only as positions in shared memory, topk and TopK.
#include <gtest/gtest.h>

#ifdef XSHARD_WITH_CUDA

#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "xshard/cuda/kernel_codegen.h"
#include "xshard/cuda/kernel_codegen_test_util.h"
#include "xshard/cuda/platform.h"
#include "xshard/exec/executable_plan.h"
#include "xshard/text/parser.h"

namespace xs::cuda {
namespace {

// JAX's argsort comparator for f32 keys: -0 and every NaN canonicalized, then a total-order LT.
constexpr const char* kJaxF32Lt = R"(jax_lt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  zero = f32[] constant(0)
  nan = f32[] constant(nan)
  az = pred[] compare(a, zero), direction=EQ
  a0 = f32[] select(az, zero, a)
  an = pred[] compare(a, a), direction=NE
  ka = f32[] select(an, nan, a0)
  bz = pred[] compare(b, zero), direction=EQ
  b0 = f32[] select(bz, zero, b)
  bn = pred[] compare(b, b), direction=NE
  kb = f32[] select(bn, nan, b0)
  ROOT lt = pred[] compare(ka, kb), direction=LT, type=TOTALORDER
}
)";

// A comparator on the first of `types` (one scalar parameter pair per type) in `direction`.
std::string KeyCmp(const std::string& name, const std::vector<std::string>& types, const std::string& direction,
                   bool total_order) {
  std::string c = name + " {\n";
  for (size_t k = 0; k < types.size(); ++k) {
    c += std::string("  p") + std::to_string(2 * k) + " = " + types[k] + "[] parameter(" + std::to_string(2 * k) + ")\n";
    c += std::string("  p") + std::to_string(2 * k + 1) + " = " + types[k] + "[] parameter(" + std::to_string(2 * k + 1) + ")\n";
  }
  return c + "  ROOT r = pred[] compare(p0, p1), direction=" + direction + (total_order ? ", type=TOTALORDER" : "") + "\n}\n";
}

std::string SortModule(const std::string& comparator, const std::vector<std::string>& shapes, int64_t dim,
                       int iota_operand = -1, int64_t iota_dim = -1) {
  std::string m = "HloModule m\n" + comparator + "ENTRY e {\n";
  std::string operands, result;
  for (size_t k = 0; k < shapes.size(); ++k) {
    const std::string v = std::string("p") + std::to_string(k);
    if (static_cast<int>(k) == iota_operand) {
      m += "  " + v + " = " + shapes[k] + " iota(), iota_dimension=" + std::to_string(iota_dim) + "\n";
    } else {
      m += "  " + v + " = " + shapes[k] + " parameter(" + std::to_string(k) + ")\n";
    }
    if (k > 0) operands += ", ", result += ", ";
    operands += v;
    result += shapes[k];
  }
  if (shapes.size() > 1) result = "(" + result + ")";
  const std::string cmp_name = comparator.substr(0, comparator.find(' '));
  return m + "  ROOT r = " + result + " sort(" + operands + "), dimensions={" + std::to_string(dim) +
         "}, is_stable=true, to_apply=" + cmp_name + "\n}\n";
}

std::string TopKModule(const std::string& in, const std::string& out, const std::string& how) {
  return "HloModule m\nENTRY e {\n  p0 = " + in + " parameter(0)\n  ROOT r = " + out + " " + how + "\n}\n";
}

// Random values with many ties (`distinct` values per type) and, for floats, the edge values
// a sort must order: NaNs of both signs, +-0, +-inf.
Array Values(const Shape& s, std::mt19937_64& rng, int distinct) {
  Array a(s);
  std::uniform_int_distribution<int> pick(0, distinct - 1);
  const float edges[] = {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(), 0.0f, -0.0f,
                         std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()};
  for (int64_t i = 0; i < s.num_elements(); ++i) {
    const int v = pick(rng);
    float f = static_cast<float>(v - distinct / 2) * 0.75f;
    if (v < 6 && distinct > 12) f = edges[v];
    std::byte* at = a.data() + i * DTypeSize(s.dtype());
    switch (s.dtype()) {
      case DType::kF32: std::memcpy(at, &f, 4); break;
      case DType::kBF16: {
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        const uint16_t h = static_cast<uint16_t>(bits >> 16);
        std::memcpy(at, &h, 2);
        break;
      }
      case DType::kF16: {  // +-NaN, +-0, +-inf, then small integers times 0.75 (exact in f16)
        const uint16_t edge16[] = {0x7e00, 0xfe00, 0x0000, 0x8000, 0x7c00, 0xfc00};
        uint16_t h = v < 6 && distinct > 12 ? edge16[v] : 0;
        if (!(v < 6 && distinct > 12)) {
          Array one = Array(Shape(DType::kF32, {1}));
          one.values<float>()[0] = f;
          h = *reinterpret_cast<const uint16_t*>(one.Convert(DType::kF16).data());
        }
        std::memcpy(at, &h, 2);
        break;
      }
      case DType::kS32: { const int32_t x = v - distinct / 2; std::memcpy(at, &x, 4); break; }
      case DType::kS64: {
        const int64_t x = (static_cast<int64_t>(v) - distinct / 2) * 1000000007LL * 1000;
        std::memcpy(at, &x, 8);
        break;
      }
      case DType::kU8: { const uint8_t x = static_cast<uint8_t>(v); std::memcpy(at, &x, 1); break; }
      default: ADD_FAILURE() << "no values for " << DTypeName(s.dtype());
    }
  }
  return a;
}

// Bit-exact equality (a sort permutes its operands: no rounding is allowed).
std::string ExactDiff(const Array& got, const Array& want) {
  if (got.dtype() != want.dtype() || got.dims() != want.dims()) return "shape " + got.shape().ToString() + " vs " + want.shape().ToString();
  const int64_t es = DTypeSize(want.dtype());
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    if (std::memcmp(got.data() + i * es, want.data() + i * es, es) != 0) {
      return std::string("element ") + std::to_string(i) + ": " + std::to_string(got.GetDouble(i)) + " vs CPU " + std::to_string(want.GetDouble(i));
    }
  }
  return "";
}

struct CaseSort {
  std::string what, text, strategy;
  int distinct = 8;
};

std::vector<CaseSort> CasesSort() {
  const std::string lt_s32_s32 = KeyCmp("lt", {"s32", "s32"}, "LT", false);
  std::vector<CaseSort> c;
  c.push_back({"f32 NaN / -0 under JAX's comparator, argsort", SortModule(kJaxF32Lt, {"f32[4,1000]", "s32[4,1000]"}, 1, 1, 1),
               "sort_bitonic_shared", 40});
  c.push_back({"f32 alone, total order (-0 < +0, -NaN first)", SortModule(KeyCmp("lt", {"f32"}, "LT", true), {"f32[3,1000]"}, 1),
               "sort_bitonic_shared", 40});
  c.push_back({"argsort of s32 keys with many ties (stability)",
               SortModule(lt_s32_s32, {"s32[3,513]", "s32[3,513]"}, 1, 1, 1), "sort_bitonic_shared", 5});
  c.push_back({"descending f32, total order", SortModule(KeyCmp("gt", {"f32", "s32"}, "GT", true), {"f32[2,777]", "s32[2,777]"}, 1, 1, 1),
               "sort_bitonic_shared", 40});
  c.push_back({"rank 3 along the middle dim", SortModule(KeyCmp("lt", {"f32", "s32"}, "LT", true), {"f32[5,37,6]", "s32[5,37,6]"}, 1, 1, 1),
               "sort_bitonic_shared", 9});
  c.push_back({"rank 3 along the major dim", SortModule(KeyCmp("lt", {"s32", "u8"}, "LT", false), {"s32[33,4,3]", "u8[33,4,3]"}, 0),
               "sort_bitonic_shared", 6});
  c.push_back({"rows of one element", SortModule(KeyCmp("lt", {"f32"}, "LT", true), {"f32[7,1]"}, 1), "sort_bitonic_shared", 40});
  c.push_back({"bf16 keys", SortModule(KeyCmp("lt", {"bf16", "s32"}, "LT", true), {"bf16[3,300]", "s32[3,300]"}, 1, 1, 1),
               "sort_bitonic_shared", 40});
  c.push_back({"s64 keys", SortModule(KeyCmp("lt", {"s64", "s32"}, "LT", false), {"s64[2,1000]", "s32[2,1000]"}, 1, 1, 1),
               "sort_bitonic_shared", 50});
  // Two keys: (p0, then p2) lexicographic, with a third operand carried along.
  c.push_back({"two keys and a carried operand",
               SortModule("lex {\n  a = s32[] parameter(0)\n  b = s32[] parameter(1)\n  c = f32[] parameter(2)\n"
                          "  d = f32[] parameter(3)\n  e = u8[] parameter(4)\n  f = u8[] parameter(5)\n"
                          "  lt0 = pred[] compare(a, b), direction=LT\n  eq0 = pred[] compare(a, b), direction=EQ\n"
                          "  lt1 = pred[] compare(c, d), direction=LT, type=TOTALORDER\n  both = pred[] and(eq0, lt1)\n"
                          "  ROOT r = pred[] or(lt0, both)\n}\n",
                          {"s32[6,100]", "f32[6,100]", "u8[6,100]"}, 1),
               "sort_bitonic_shared", 4});
  // 8192 padded slots x (4 + 4 + 2) bytes exceed 48 KiB: positions only in shared memory.
  c.push_back({"long rows: positions in shared memory", SortModule(lt_s32_s32, {"s32[2,5000]", "s32[2,5000]"}, 1, 1, 1),
               "sort_bitonic_index", 30});
  c.push_back({"topk largest with ties and NaNs", TopKModule("f32[3,500]", "(f32[3,17], s32[3,17])", "topk(p0), k=17, largest=true"),
               "sort_bitonic_shared", 40});
  c.push_back({"topk smallest f16", TopKModule("f16[4,129]", "(f16[4,9], s32[4,9])", "topk(p0), k=9, largest=false"),
               "sort_bitonic_shared", 40});
  c.push_back({"TopK custom-call on s32 with ties", TopKModule("s32[2,3,64]", "(s32[2,3,5], s32[2,3,5])", "custom-call(p0), custom_call_target=\"TopK\""),
               "sort_bitonic_shared", 6});
  c.push_back({"TopK custom-call, k = n", TopKModule("f32[5,33]", "(f32[5,33], s32[5,33])", "custom-call(p0), custom_call_target=\"TopK\""),
               "sort_bitonic_shared", 40});
  // 32768 padded slots x 2 bytes: 64 KiB of dynamic shared memory (above the default 48 KiB).
  c.push_back({"positions above 48 KiB of shared memory", SortModule(lt_s32_s32, {"s32[1,20000]", "s32[1,20000]"}, 1, 1, 1),
               "sort_bitonic_index", 1000});
  // Rows above 65536 elements: chunks ranked against each other (the corpus sorts 209664).
  c.push_back({"rows above 65536 elements, many ties", SortModule(KeyCmp("lt", {"u8", "s32"}, "LT", false), {"u8[1,70001]", "s32[1,70001]"}, 1, 1, 1),
               "sort_ranked_chunks", 5});
  // Rows too long for shared memory: the best k and a chunk of the row, round after round.
  c.push_back({"TopK of long rows, small k", TopKModule("f32[2,20000]", "(f32[2,33], s32[2,33])", "custom-call(p0), custom_call_target=\"TopK\""),
               "topk_chunked", 40});
  c.push_back({"topk of long rows, k of half the slots", TopKModule("bf16[2,9000]", "(bf16[2,1500], s32[2,1500])", "topk(p0), k=1500, largest=true"),
               "topk_chunked", 40});
  c.push_back({"topk smallest of long rows with few values", TopKModule("s32[3,9000]", "(s32[3,100], s32[3,100])", "topk(p0), k=100, largest=false"),
               "topk_chunked", 5});
  return c;
}

struct Planned {
  CaseSort c;
  std::unique_ptr<Module> module;
  std::unique_ptr<Executable> exe;
};

// Every case parsed, planned by the CPU executor, its root's kernel of the expected strategy and
// pointer count; `all` receives every kernel of the plans.
void PlanCases(std::vector<Planned>& planned, std::vector<GeneratedKernel>& all) {
  for (const CaseSort& c : CasesSort()) {
    StatusOr<std::unique_ptr<Module>> m = ParseHloModule(c.text);
    ASSERT_TRUE(m.ok()) << c.what << ": " << m.status().message() << "\n" << c.text;
    StatusOr<std::unique_ptr<Executable>> e = Executable::Create(**m);
    ASSERT_TRUE(e.ok()) << c.what << ": " << e.status().message();
    Planned p{c, std::move(*m), std::move(*e)};
    const Instruction& root = *p.module->entry()->root();
    StatusOr<GeneratedKernel> k = GenerateOpKernel(root);
    ASSERT_TRUE(k.ok()) << c.what << ": " << k.status().message();
    EXPECT_EQ(k->strategy, c.strategy) << c.what;
    EXPECT_EQ(k->num_pointers, root.operand_count() + (root.shape().IsTuple() ? root.shape().tuple_size() : 1)) << c.what;
    testing::ModuleKernels mk;
    testing::CollectKernels(*p.exe, mk);
    for (const auto& [why, n] : mk.refused) ADD_FAILURE() << c.what << ": " << why;
    for (const GeneratedKernel& g : mk.kernels) all.push_back(g);
    planned.push_back(std::move(p));
  }
}

// Runs every case through `run` and compares with the CPU executor bit for bit.
void RunCases(const std::vector<Planned>& planned,
              const std::function<StatusOr<std::vector<Array>>(const Executable&, std::span<const Array>)>& run) {
  std::mt19937_64 rng(11);
  for (const Planned& p : planned) {
    std::vector<Array> args;
    for (const Shape& s : p.exe->argument_shapes()) args.push_back(Values(s, rng, p.c.distinct));
    StatusOr<std::vector<Array>> want = p.exe->Run(args);
    ASSERT_TRUE(want.ok()) << p.c.what << ": " << want.status().message();
    StatusOr<std::vector<Array>> got = run(*p.exe, args);
    ASSERT_TRUE(got.ok()) << p.c.what << ": " << got.status().message();
    ASSERT_EQ(got->size(), want->size()) << p.c.what;
    for (size_t i = 0; i < want->size(); ++i) {
      const std::string diff = ExactDiff((*got)[i], (*want)[i]);
      EXPECT_TRUE(diff.empty()) << p.c.what << ", result " << i << ": " << diff << "\n" << p.c.text;
    }
  }
}

TEST(KernelCodegenSort, KernelsCompileForSm90AndMatchTheCpuExactlyOnTheHost) {
  std::vector<Planned> planned;
  std::vector<GeneratedKernel> all;
  PlanCases(planned, all);
  {
    testing::NoDiskCache no_cache;
    Status compiled = testing::CompileAll(all, 64);
    ASSERT_TRUE(compiled.ok()) << compiled.message().substr(0, 4000);
  }
  StatusOr<std::unique_ptr<testing::HostKernels>> host = testing::HostKernels::Build(all);
  ASSERT_TRUE(host.ok()) << host.status().message();
  RunCases(planned, [&](const Executable& e, std::span<const Array> args) { return testing::RunOnHost(e, args, **host); });
}

// Launches above 48 KiB of dynamic shared memory (the case marked so) need the kernel's
// cudaFuncAttributeMaxDynamicSharedMemorySize raised by the launcher.
TEST(KernelCodegenSort, KernelsMatchTheCpuExactlyOnAGpu) {
  if (!NoGpuReason().empty()) GTEST_SKIP() << NoGpuReason();
  std::vector<Planned> planned;
  std::vector<GeneratedKernel> all;
  PlanCases(planned, all);
  RunCases(planned, [](const Executable& e, std::span<const Array> args) { return testing::RunOnGpu(e, args); });
}

TEST(KernelCodegenSort, RefusesWhatItDoesNotCoverNamingTheInstruction) {
  const struct {
    std::string text, says;
  } cases[] = {
      {TopKModule("f32[2,200000]", "(f32[2,3000], s32[2,3000])", "topk(p0), k=3000, largest=true"), "200000"},
      {SortModule(KeyCmp("lt", {"f32", "c64"}, "LT", false), {"f32[8]", "c64[8]"}, 0), "c64"},
  };
  for (const auto& c : cases) {
    StatusOr<std::unique_ptr<Module>> m = ParseHloModule(c.text);
    ASSERT_TRUE(m.ok()) << m.status().message();
    StatusOr<GeneratedKernel> k = GenerateOpKernel(*(*m)->entry()->root());
    ASSERT_FALSE(k.ok()) << c.text;
    EXPECT_EQ(k.status().code(), StatusCode::kUnimplemented) << k.status().message();
    EXPECT_NE(k.status().message().find("'r'"), std::string::npos) << k.status().message();
    EXPECT_NE(k.status().message().find(c.says), std::string::npos) << k.status().message();
  }
}

}  // namespace
}  // namespace xs::cuda

#endif  // XSHARD_WITH_CUDA
