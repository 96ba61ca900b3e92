// The kernel generators on hand-built modules: every elementwise op and dtype the CPU executor
// plans, every convert pair and the shape ops generate a kernel that NVRTC compiles for sm_90
// (no GPU needed); the strategy chosen (vector width, reduce kind, tiled transpose) is the
// expected one; unsupported types are refused naming the instruction. With a GPU, every module
// also runs on it and matches the CPU executor.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#ifdef XSHARD_WITH_CUDA

#include <chrono>
#include <cmath>
#include <limits>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "xshard/cuda/kernel_codegen.h"
#include "xshard/cuda/kernel_codegen_test_util.h"
#include "xshard/cuda/platform.h"
#include "xshard/exec/executable_plan.h"
#include "xshard/exec/fusion_plan.h"
#include "xshard/text/parser.h"

namespace xs::cuda {
namespace {

const DType kTypes[] = {DType::kPred, DType::kS8,  DType::kS16, DType::kS32, DType::kS64,
                        DType::kU8,   DType::kU16, DType::kU32, DType::kU64, DType::kF16,
                        DType::kBF16, DType::kF32, DType::kF64};

std::string T(DType t, const std::string& dims) { return std::string(DTypeName(t)) + "[" + dims + "]"; }

std::string Hlo(const std::string& params, const std::string& root) {
  return "HloModule m\nENTRY e {\n" + params + "  ROOT r = " + root + "\n}\n";
}
std::string Params(std::initializer_list<std::string> shapes) {
  std::string p;
  int k = 0;
  for (const std::string& s : shapes) {
    p += "  p" + std::to_string(k) + " = " + s + " parameter(" + std::to_string(k) + ")\n";
    ++k;
  }
  return p;
}

// Every module of the test: elementwise ops x dtypes, converts, compares, shape ops, fused chains.
std::vector<std::string> HandBuiltModules() {
  std::vector<std::string> out;
  const char* unary[] = {"abs", "negate", "exponential", "log", "sqrt", "rsqrt", "tanh", "sine", "cosine",
                         "tan", "logistic", "exponential-minus-one", "log-plus-one", "cbrt", "erf", "ceil",
                         "floor", "round-nearest-afz", "round-nearest-even", "atan", "acos", "asin", "acosh",
                         "asinh", "atanh", "cosh", "sinh", "sign", "is-finite", "not", "popcnt",
                         "count-leading-zeros", "real", "imag", "copy"};
  const char* binary[] = {"add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum", "power",
                          "atan2", "and", "or", "xor", "shift-left", "shift-right-arithmetic",
                          "shift-right-logical"};
  for (DType t : kTypes) {
    const std::string a = T(t, "37");
    for (const char* op : unary) out.push_back(Hlo(Params({a}), std::string(op) + "(p0)"));
    for (const char* op : binary) out.push_back(Hlo(Params({a, a}), std::string(op) + "(p0, p1)"));
    for (const char* dir : {"EQ", "NE", "LT", "LE", "GT", "GE"}) {
      out.push_back(Hlo(Params({a, a}), T(DType::kPred, "37") + " compare(p0, p1), direction=" + dir));
    }
    if (IsFloating(t)) {
      out.push_back(Hlo(Params({a, a}), T(DType::kPred, "37") + " compare(p0, p1), direction=LT, type=TOTALORDER"));
    }
    for (DType to : kTypes) out.push_back(Hlo(Params({a}), T(to, "37") + " convert(p0)"));
    out.push_back(Hlo(Params({T(DType::kPred, "37"), a, a}), a + " select(p0, p1, p2)"));
    out.push_back(Hlo(Params({T(t, ""), a, T(t, "")}), a + " clamp(p0, p1, p2)"));
  }
  for (DType t : {DType::kF32, DType::kBF16, DType::kS32, DType::kPred, DType::kF64, DType::kU8}) {
    const std::string m = T(t, "33,40"), c = T(t, "40,33");
    out.push_back(Hlo(Params({m}), c + " transpose(p0), dimensions={1,0}"));
    out.push_back(Hlo(Params({T(t, "3,33,40")}), T(t, "3,40,33") + " transpose(p0), dimensions={0,2,1}"));
    out.push_back(Hlo(Params({T(t, "4,5,6")}), T(t, "5,4,6") + " transpose(p0), dimensions={1,0,2}"));
    out.push_back(Hlo(Params({T(t, "40")}), m + " broadcast(p0), dimensions={1}"));
    out.push_back(Hlo(Params({m}), T(t, "10,13") + " slice(p0), slice={[3:33:3], [1:40:3]}"));
    out.push_back(Hlo(Params({m}), m + " reverse(p0), dimensions={0,1}"));
    out.push_back(Hlo(Params({m, T(t, "")}), T(t, "37,117") + " pad(p0, p1), padding=1_3x-2_1_2"));
    out.push_back(Hlo(Params({m, T(t, "33,7"), m}), T(t, "33,87") + " concatenate(p0, p1, p2), dimensions={1}"));
    out.push_back(Hlo("", T(t, "33,40") + " iota(), iota_dimension=1"));
    out.push_back(Hlo(Params({m, "s32[]", "s32[]"}), T(t, "5,9") + " dynamic-slice(p0, p1, p2), dynamic_slice_sizes={5,9}"));
    out.push_back(Hlo(Params({m, T(t, "5,9"), "s64[]", "s32[]"}), m + " dynamic-update-slice(p0, p1, p2, p3)"));
    out.push_back(Hlo(Params({m, "s32[2]"}), T(t, "5,9") + " dynamic-slice(p0, p1), dynamic_slice_sizes={5,9}"));
  }
  // Slices of an iota read inside a fused loop (jax.random's counter halves): strided 2-D slices
  // along and across the iota's dim.
  for (const char* t : {"s32", "u32", "f32"}) {
    for (int dim : {0, 1}) {
      out.push_back(StrCat("HloModule m\nENTRY e {\n  p0 = ", t, "[13,100] parameter(0)\n  io = ", t,
                           "[40,300] iota(), iota_dimension=", dim, "\n  s = ", t,
                           "[13,100] slice(io), slice={[3:40:3], [1:300:3]}\n  ROOT r = ", t,
                           "[13,100] add(s, p0)\n}\n"));
    }
  }
  // Concatenates of runs read piece by piece inside a fused loop (JAX's random bits joining the
  // counter halves): along dim 0, and reshaped.
  for (const char* t : {"f32", "u32"}) {
    out.push_back(StrCat("HloModule m\nENTRY e {\n  p0 = ", t, "[7,3] parameter(0)\n  p1 = ", t,
                         "[30,3] parameter(1)\n  p2 = ", t, "[2,3] parameter(2)\n  j = ", t,
                         "[39,3] concatenate(p0, p1, p2), dimensions={0}\n  ROOT r = ", t, "[39,3] add(j, j)\n}\n"));
    out.push_back(StrCat("HloModule m\nENTRY e {\n  p0 = ", t, "[50] parameter(0)\n  p1 = ", t,
                         "[40] parameter(1)\n  j = ", t, "[90] concatenate(p0, p1), dimensions={0}\n  r = ", t,
                         "[9,10] reshape(j)\n  ROOT n = ", t, "[9,10] multiply(r, r)\n}\n"));
  }
  const std::string reducers =
      "add { a = $T[] parameter(0)\n b = $T[] parameter(1)\n ROOT c = $T[] add(a, b) }\n"
      "mx { a = $T[] parameter(0)\n b = $T[] parameter(1)\n ROOT c = $T[] maximum(a, b) }\n"
      "mn { a = $T[] parameter(0)\n b = $T[] parameter(1)\n ROOT c = $T[] minimum(a, b) }\n"
      "ml { a = $T[] parameter(0)\n b = $T[] parameter(1)\n ROOT c = $T[] multiply(a, b) }\n";
  for (DType t : {DType::kF32, DType::kBF16, DType::kS32, DType::kF64, DType::kF16}) {
    std::string red = reducers;
    for (size_t at = red.find("$T"); at != std::string::npos; at = red.find("$T")) red.replace(at, 2, DTypeName(t));
    for (const char* fn : {"add", "mx", "mn", "ml"}) {
      // Products of 64+ values overflow or vanish in 16 bits, differently for the CPU's per-step
      // rounding and the GPU's f32 row accumulators: no comparison is meaningful.
      if (std::string(fn) == "ml" && (t == DType::kF16 || t == DType::kBF16)) continue;
      for (const std::string& dims : {std::string("{1}"), std::string("{0}"), std::string("{0,1}"), std::string("{1,2}")}) {
        const bool rank3 = dims == "{1,2}";
        const std::string in = rank3 ? T(t, "8,9,70") : T(t, "64,700");
        const std::string res = rank3 ? T(t, "8") : dims == "{1}" ? T(t, "64") : dims == "{0}" ? T(t, "700") : T(t, "");
        out.push_back("HloModule m\n" + red + "ENTRY e {\n" + Params({in, T(t, "")}) + "  ROOT r = " + res +
                      " reduce(p0, p1), dimensions=" + dims + ", to_apply=" + fn + "\n}\n");
        // The same reduce fed by an elementwise op: a fused loop ending in the reduce.
        out.push_back("HloModule m\n" + red + "ENTRY e {\n" + Params({in, T(t, "")}) + "  x = " + in +
                      " abs(p0)\n  ROOT r = " + res + " reduce(x, p1), dimensions=" + dims + ", to_apply=" + fn + "\n}\n");
      }
      out.push_back("HloModule m\n" + red + "ENTRY e {\n" + Params({T(t, "9,17"), T(t, "")}) + "  ROOT r = " +
                    T(t, "5,8") + " reduce-window(p0, p1), window={size=3x4 stride=2x2 pad=1_1x0_1 lhs_dilate=1x1 rhs_dilate=1x2}, to_apply=" +
                    fn + "\n}\n");
    }
  }
  // JAX's rotate_left (threefry): or(shift-left(x, a), shift-right-logical(x, bits - a)) is one
  // kRotateLeft op of the fused loop, the amount a scalar parameter (any value: XLA's shift rules)
  // or two constants.
  for (DType t : {DType::kU32, DType::kS32, DType::kU64, DType::kS64}) {
    const std::string v = T(t, "37"), sc = T(t, ""), bits = DTypeSize(t) == 8 ? "64" : "32";
    out.push_back("HloModule m\nENTRY e {\n" + Params({v, sc}) + "  w = " + sc + " constant(" + bits +
                  ")\n  c = " + sc + " subtract(w, p1)\n  a = " + v + " broadcast(p1), dimensions={}\n  b = " + v +
                  " broadcast(c), dimensions={}\n  l = " + v + " shift-left(p0, a)\n  r = " + v +
                  " shift-right-logical(p0, b)\n  o = " + v + " or(l, r)\n  ROOT x = " + v + " xor(o, p0)\n}\n");
    out.push_back("HloModule m\nENTRY e {\n" + Params({v}) + "  k = " + sc + " constant(13)\n  j = " + sc +
                  " constant(" + (DTypeSize(t) == 8 ? "51" : "19") + ")\n  a = " + v +
                  " broadcast(k), dimensions={}\n  b = " + v + " broadcast(j), dimensions={}\n  l = " + v +
                  " shift-left(p0, a)\n  r = " + v + " shift-right-logical(p0, b)\n  o = " + v +
                  " or(r, l)\n  ROOT x = " + v + " add(o, p0)\n}\n");
  }
  // Column reductions on tiles: long columns on 1024 threads (8 columns, 128 threads each), a kept
  // dim before the reduced one, and columns that do not fill the last tile.
  for (DType t : {DType::kF32, DType::kS32, DType::kBF16}) {
    std::string red = reducers;
    for (size_t at = red.find("$T"); at != std::string::npos; at = red.find("$T")) red.replace(at, 2, DTypeName(t));
    out.push_back("HloModule m\n" + red + "ENTRY e {\n" + Params({T(t, "3000,5"), T(t, "")}) + "  ROOT r = " + T(t, "5") +
                  " reduce(p0, p1), dimensions={0}, to_apply=add\n}\n");
    out.push_back("HloModule m\n" + red + "ENTRY e {\n" + Params({T(t, "6,100,40"), T(t, "")}) + "  x = " +
                  T(t, "6,100,40") + " negate(p0)\n  ROOT r = " + T(t, "6,40") +
                  " reduce(x, p1), dimensions={1}, to_apply=mx\n}\n");
  }
  // argmax over rows: a variadic reduce with a compare / select reducer.
  out.push_back(
      "HloModule m\nargmax { a = f32[] parameter(0)\n i = s32[] parameter(1)\n b = f32[] parameter(2)\n"
      " j = s32[] parameter(3)\n gt = pred[] compare(a, b), direction=GT\n eq = pred[] compare(a, b), direction=EQ\n"
      " lt = pred[] compare(i, j), direction=LT\n ti = pred[] and(eq, lt)\n take = pred[] or(gt, ti)\n"
      " v = f32[] select(take, a, b)\n k = s32[] select(take, i, j)\n ROOT t = (f32[], s32[]) tuple(v, k) }\n"
      "ENTRY e {\n  p0 = f32[24,50] parameter(0)\n  io = s32[24,50] iota(), iota_dimension=1\n"
      "  ninf = f32[] constant(-inf)\n  zero = s32[] constant(0)\n"
      "  ROOT r = (f32[24], s32[24]) reduce(p0, io, ninf, zero), dimensions={1}, to_apply=argmax\n}\n");
  // The same over rows of 5000 (a block per row), and a sum with a maximum of s32 along the
  // major dims of [1500,2,3] (a block per output, elements 6 apart).
  out.push_back(
      "HloModule m\nargmax { a = f32[] parameter(0)\n i = s32[] parameter(1)\n b = f32[] parameter(2)\n"
      " j = s32[] parameter(3)\n gt = pred[] compare(a, b), direction=GT\n eq = pred[] compare(a, b), direction=EQ\n"
      " lt = pred[] compare(i, j), direction=LT\n ti = pred[] and(eq, lt)\n take = pred[] or(gt, ti)\n"
      " v = f32[] select(take, a, b)\n k = s32[] select(take, i, j)\n ROOT t = (f32[], s32[]) tuple(v, k) }\n"
      "ENTRY e {\n  p0 = f32[3,5000] parameter(0)\n  io = s32[3,5000] iota(), iota_dimension=1\n"
      "  ninf = f32[] constant(-inf)\n  zero = s32[] constant(0)\n"
      "  ROOT r = (f32[3], s32[3]) reduce(p0, io, ninf, zero), dimensions={1}, to_apply=argmax\n}\n");
  out.push_back(
      "HloModule m\nsum_max { a = s32[] parameter(0)\n b = s32[] parameter(1)\n c = s32[] parameter(2)\n"
      " d = s32[] parameter(3)\n s = s32[] add(a, c)\n m = s32[] maximum(b, d)\n ROOT t = (s32[], s32[]) tuple(s, m) }\n"
      "ENTRY e {\n  p0 = s32[1500,2,3] parameter(0)\n  p1 = s32[1500,2,3] parameter(1)\n  zero = s32[] constant(0)\n"
      "  low = s32[] constant(-2147483648)\n"
      "  ROOT r = (s32[2,3], s32[2,3]) reduce(p0, p1, zero, low), dimensions={0}, to_apply=sum_max\n}\n");
  // Row gathers (jnp.take(table, ids, axis=0)) read inside a fused loop: random indices, so some
  // are out of range and clamped; rows shorter than a CPU tile, long rows, 3-D tables, unsigned
  // indices with an index vector dim of one, a rank-1 table.
  out.push_back(
      "HloModule m\nENTRY e {\n  p0 = f32[50,70] parameter(0)\n  p1 = s32[33] parameter(1)\n"
      "  g = f32[33,70] gather(p0, p1), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, "
      "index_vector_dim=1, slice_sizes={1,70}\n  ROOT r = f32[33,70] abs(g)\n}\n");
  out.push_back(
      "HloModule m\nENTRY e {\n  p0 = bf16[9,1100] parameter(0)\n  p1 = s64[7,1] parameter(1)\n"
      "  p2 = bf16[7,1100] parameter(2)\n"
      "  g = bf16[7,1100] gather(p0, p1), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, "
      "index_vector_dim=1, slice_sizes={1,1100}\n  ROOT r = bf16[7,1100] multiply(g, p2)\n}\n");
  out.push_back(
      "HloModule m\nENTRY e {\n  p0 = s32[20,3,8] parameter(0)\n  p1 = u8[4,5,1] parameter(1)\n"
      "  g = s32[4,5,3,8] gather(p0, p1), offset_dims={2,3}, collapsed_slice_dims={0}, start_index_map={0}, "
      "index_vector_dim=2, slice_sizes={1,3,8}\n  ROOT r = s32[4,5,3,8] negate(g)\n}\n");
  out.push_back(
      "HloModule m\nENTRY e {\n  p0 = f64[40] parameter(0)\n  p1 = s16[6,9] parameter(1)\n"
      "  g = f64[6,9] gather(p0, p1), offset_dims={}, collapsed_slice_dims={0}, start_index_map={0}, "
      "index_vector_dim=2, slice_sizes={1}\n  ROOT r = f64[6,9] abs(g)\n}\n");
  return out;
}

// Random values; with `edges` one in eight is an edge case: NaN, infinities, signed zeros, values past the
// integer ranges (saturating converts), subnormals; integers include their extremes and -1.
Array RandomArray(const Shape& shape, std::mt19937_64& rng, bool edges, double magnitude = 3.0) {
  Array a(shape);
  std::uniform_real_distribution<double> real(-magnitude, magnitude);
  std::uniform_int_distribution<int> small(-5, 40), pick(0, 7);
  const double inf = std::numeric_limits<double>::infinity();
  const double floats[] = {std::nan(""), inf, -inf, -0.0, 0.0, 1e30, -1e30, 3e9, -3e9, 65504, 70000, 1e-40, 2.5, -2.5, 0.5};
  const DType t = shape.dtype();
  const bool is_signed = IsSignedInteger(t);
  const double bits = static_cast<double>(DTypeSize(t) * 8);
  for (int64_t k = 0; k < a.num_elements(); ++k) {
    if (edges && pick(rng) == 0 && t != DType::kPred) {
      if (IsFloating(t)) {
        a.SetDouble(k, floats[rng() % std::size(floats)]);
      } else {
        const double lo = is_signed ? -std::ldexp(1.0, static_cast<int>(bits) - 1) : 0.0;
        const double hi = is_signed ? std::ldexp(1.0, static_cast<int>(bits) - 1) - 1 : std::ldexp(1.0, static_cast<int>(bits)) - 1;
        const double ints[] = {lo, bits <= 32 ? hi : 9.2e18 * (is_signed ? 1 : 2), -1, 0, bits, bits - 1};
        const double v = ints[rng() % std::size(ints)];
        if (v >= lo) a.SetDouble(k, v);
      }
      continue;
    }
    if (shape.dtype() == DType::kPred) {
      a.SetDouble(k, small(rng) % 2 == 0);
    } else if (IsUnsignedInteger(shape.dtype())) {
      a.SetDouble(k, std::abs(small(rng)));
    } else if (IsInteger(shape.dtype())) {
      a.SetDouble(k, small(rng));
    } else {
      a.SetDouble(k, real(rng));
    }
  }
  return a;
}

struct PlannedCodegen {
  std::string text;
  std::unique_ptr<Module> module;
  std::unique_ptr<Executable> exe;
};

std::vector<PlannedCodegen> PlanAll(const std::vector<std::string>& texts, int* cpu_refused) {
  std::vector<PlannedCodegen> out;
  for (const std::string& text : texts) {
    StatusOr<std::unique_ptr<Module>> m = ParseHloModule(text);
    if (!m.ok()) {  // an op / dtype pair HLO does not define (e.g. exponential of s32)
      ++*cpu_refused;
      continue;
    }
    StatusOr<std::unique_ptr<Executable>> e = Executable::Create(**m);
    if (!e.ok()) {
      ++*cpu_refused;  // an op / dtype pair the CPU executor does not define either
      continue;
    }
    out.push_back({text, std::move(*m), std::move(*e)});
  }
  return out;
}

TEST(KernelCodegen, EveryHandBuiltModuleTheCpuPlansGeneratesAndCompiles) {
  int cpu_refused = 0;
  const std::vector<std::string> texts = HandBuiltModules();
  std::vector<PlannedCodegen> planned = PlanAll(texts, &cpu_refused);
  testing::ModuleKernels all;
  for (const PlannedCodegen& p : planned) {
    testing::ModuleKernels mk;
    testing::CollectKernels(*p.exe, mk);
    for (const auto& [why, n] : mk.refused) ADD_FAILURE() << why << "\n" << p.text;
    // Only a copy or a same-type convert, which alias their operand, needs no kernel.
    const Instruction* root = p.module->entry()->root();
    const bool alias = root->opcode() == Opcode::kCopy ||
                       (root->opcode() == Opcode::kConvert && root->shape().dtype() == root->operand(0)->shape().dtype());
    EXPECT_EQ(mk.kernels.empty(), alias) << p.text;
    for (GeneratedKernel& k : mk.kernels) all.kernels.push_back(std::move(k));
    all.fused += mk.fused;
    all.ops += mk.ops;
  }
  int programs = 0;
  const auto start = std::chrono::steady_clock::now();
  testing::NoDiskCache no_cache;  // every kernel really goes through NVRTC
  Status compiled = testing::CompileAll(all.kernels, 150, &programs);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(compiled.ok()) << compiled.message().substr(0, 4000);
  std::cout << "hand-built modules: " << texts.size() << " (" << cpu_refused << " op / dtype pairs HLO or the CPU planner refuse), "
            << all.fused << " fused loops + " << all.ops << " op steps -> " << all.kernels.size()
            << " kernels, compiled in " << programs << " NVRTC programs in " << seconds << " s\n";
  EXPECT_GE(planned.size(), 827u);  // every module HLO and the CPU planner accept
}

// The kernels of the module's fused plan.
std::vector<GeneratedKernel> Kernels(const std::string& text) {
  StatusOr<std::unique_ptr<Module>> m = ParseHloModule(text);
  EXPECT_TRUE(m.ok()) << m.status().message();
  StatusOr<std::unique_ptr<Executable>> e = Executable::Create(**m);
  EXPECT_TRUE(e.ok()) << e.status().message();
  std::vector<GeneratedKernel> out;
  for (const Step& s : (*e)->program().entry->steps) {
    const FusedPayload* fused = s.FindPayload<FusedPayload>();
    StatusOr<GeneratedKernel> k = fused ? GenerateFusedLoopKernel(*fused->loop) : GenerateOpKernel(*s.inst);
    if (k.ok()) out.push_back(std::move(*k));
  }
  static std::vector<std::unique_ptr<Module>> keep;  // the kernels' instructions stay valid
  keep.push_back(std::move(*m));
  return out;
}

std::string Chain(DType t, const std::string& dims) {
  const std::string a = T(t, dims);
  return Hlo(Params({a, a}), a + " add(x, e)").insert(Hlo(Params({a, a}), "").find("  ROOT"),
                                                         "  x = " + a + " multiply(p0, p1)\n  e = " + a + " exponential(p0)\n");
}

TEST(KernelCodegen, FusedChainsUseSixteenByteAccessesWhenTheCountAllows) {
  const struct {
    DType t;
    std::string dims, strategy, vec;
  } cases[] = {{DType::kF32, "1024", "elementwise_vec4", "xs_vec<float, 4>"},
               {DType::kF64, "8,100", "elementwise_vec2", "xs_vec<double, 2>"},
               {DType::kBF16, "4099", "elementwise_vec8", "xs_vec<unsigned short, 8>"},
               {DType::kF32, "5", "elementwise", ""}};
  for (const auto& c : cases) {
    std::vector<GeneratedKernel> ks = Kernels(Chain(c.t, c.dims));
    ASSERT_EQ(ks.size(), 1u) << DTypeName(c.t);
    EXPECT_EQ(ks[0].strategy, c.strategy);
    EXPECT_EQ(ks[0].num_pointers, 3);  // two inputs, one output
    if (!c.vec.empty()) {
      EXPECT_NE(ks[0].source.code.find(c.vec), std::string::npos) << ks[0].body;
    }
    // The scalar loop always exists (tail, unaligned buffers).
    EXPECT_NE(ks[0].body.find("for (idx_t i = start + tid"), std::string::npos);
  }
}

TEST(KernelCodegen, ReduceStrategyFollowsWhichDimsAreReduced) {
  const std::string red = "add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT c = f32[] add(a, b) }\n";
  auto module = [&](const std::string& in, const std::string& res, const std::string& dims) {
    return "HloModule m\n" + red + "ENTRY e {\n" + Params({in, "f32[]"}) + "  x = " + in + " exponential(p0)\n  ROOT r = " +
           res + " reduce(x, p1), dimensions=" + dims + ", to_apply=add\n}\n";
  };
  const struct {
    std::string in, res, dims, strategy;
  } cases[] = {{"f32[64,100]", "f32[64]", "{1}", "reduce_row_warp"},
               {"f32[64,1000]", "f32[64]", "{1}", "reduce_row_block"},
               {"f32[4,8,300]", "f32[4]", "{1,2}", "reduce_row_block"},
               {"f32[100,64]", "f32[64]", "{0}", "reduce_column_tiles"},
               {"f32[6,100,64]", "f32[6,64]", "{1}", "reduce_column_tiles"},
               {"f32[3000,5]", "f32[5]", "{0}", "reduce_column_tiles"},
               {"f32[40,64]", "f32[64]", "{0}", "reduce_general"},          // short columns
               {"f32[100,70000]", "f32[70000]", "{0}", "reduce_general"},   // outputs enough for a thread each
               {"f32[4,100,3,5]", "f32[100,5]", "{0,2}", "reduce_general"}};  // reduced dims apart
  for (const auto& c : cases) {
    std::vector<GeneratedKernel> ks = Kernels(module(c.in, c.res, c.dims));
    ASSERT_EQ(ks.size(), 1u) << c.in;
    EXPECT_EQ(ks[0].strategy, c.strategy) << c.in << " " << c.dims;
    EXPECT_EQ(ks[0].num_pointers, 3);  // input, init, result
    if (c.strategy == "reduce_column_tiles") {
      // Columns of 1024+ elements get 1024 threads per tile.
      EXPECT_EQ(ks[0].launch.block, c.in == "f32[3000,5]" ? 1024 : 256) << c.in;
    }
  }
}

// A row gather read by an elementwise op is part of that op's fused kernel (no kernel of its own,
// no gathered array): the kernel reads the table through the clamped index.
TEST(KernelCodegen, RowGathersAreReadInsideTheFusedKernel) {
  int seen = 0;
  for (const std::string& text : HandBuiltModules()) {
    if (text.find(" gather(p0, p1)") == std::string::npos) continue;
    ++seen;
    std::vector<GeneratedKernel> ks = Kernels(text);
    ASSERT_EQ(ks.size(), 1u) << text;
    EXPECT_NE(ks[0].source.code.find("(long long)"), std::string::npos) << ks[0].source.code;
    EXPECT_EQ(ks[0].num_pointers, text.find("p2 = ") == std::string::npos ? 3 : 4) << text;
  }
  EXPECT_EQ(seen, 4);
}

// Variadic reduces (JAX's argmax): a thread per output for many or short rows, a block per
// output for few long ones (HandBuiltModules' three).
TEST(KernelCodegen, VariadicReducesOfFewLongRowsTakeABlockPerRow) {
  std::map<std::string, std::string> want = {{"f32[24,50]", "reduce_general"},
                                             {"f32[3,5000]", "reduce_general_block_per_row"},
                                             {"s32[1500,2,3]", "reduce_general_block_per_row"}};
  int seen = 0;
  for (const std::string& text : HandBuiltModules()) {
    if (text.find("to_apply=argmax") == std::string::npos && text.find("to_apply=sum_max") == std::string::npos) continue;
    for (const auto& [shape, strategy] : want) {
      if (text.find("p0 = " + shape) == std::string::npos) continue;
      ++seen;
      std::vector<std::string> reduces;  // the argmax's iota is a kernel of its own
      for (const GeneratedKernel& k : Kernels(text)) {
        if (k.strategy.rfind("reduce_general", 0) == 0) reduces.push_back(k.strategy);
      }
      EXPECT_THAT(reduces, ::testing::ElementsAre(strategy)) << shape;
    }
  }
  EXPECT_EQ(seen, 3);
}

TEST(KernelCodegen, TransposesOfTwoMinorBlocksGoThroughSharedMemoryTiles) {
  const struct {
    std::string in, out, perm, strategy;
  } cases[] = {{"f32[64,128]", "f32[128,64]", "{1,0}", "transpose_tiled"},
               {"f32[3,64,128]", "f32[3,128,64]", "{0,2,1}", "transpose_tiled"},
               {"f32[8,4,16,32]", "f32[16,32,8,4]", "{2,3,0,1}", "transpose_tiled"},
               {"f32[4,64,128]", "f32[64,4,128]", "{1,0,2}", "index_map"}};
  for (const auto& c : cases) {
    StatusOr<std::unique_ptr<Module>> m = ParseHloModule(Hlo(Params({c.in}), c.out + " transpose(p0), dimensions=" + c.perm));
    ASSERT_TRUE(m.ok()) << m.status().message();
    StatusOr<GeneratedKernel> k = GenerateOpKernel(*(*m)->entry()->root());
    ASSERT_TRUE(k.ok()) << k.status().message();
    EXPECT_EQ(k->strategy, c.strategy) << c.in << " " << c.perm;
  }
}

// Complex add / multiply / ... are generated (kernel_codegen_complex.cc); power on complex is not.
TEST(KernelCodegen, RefusesComplexNamingTheInstruction) {
  StatusOr<std::unique_ptr<Module>> m = ParseHloModule(Hlo(Params({"c64[8]", "c64[8]"}), "c64[8] power(p0, p1)"));
  ASSERT_TRUE(m.ok()) << m.status().message();
  StatusOr<GeneratedKernel> k = GenerateOpKernel(*(*m)->entry()->root());
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(k.status().message().find("'r'"), std::string::npos) << k.status().message();
  EXPECT_NE(k.status().message().find("c64"), std::string::npos) << k.status().message();
}

TEST(KernelCodegen, CombinedProgramKeepsEveryKernelOnce) {
  std::vector<GeneratedKernel> ks = Kernels(Chain(DType::kF32, "64"));
  ASSERT_EQ(ks.size(), 1u);
  std::vector<GeneratedKernel> twice = {ks[0], ks[0]};
  const KernelSource src = CombineKernels(twice);
  EXPECT_EQ(src.name, ks[0].source.name);
  size_t defs = 0;
  for (size_t at = src.code.find(ks[0].source.name + "(xs_args"); at != std::string::npos;
       at = src.code.find(ks[0].source.name + "(xs_args", at + 1)) {
    ++defs;
  }
  EXPECT_EQ(defs, 1u);
}

// Runs the generated kernels compiled for the host (no GPU needed; testing::HostKernels' SIMT
// emulator) on every hand-built module, against the CPU executor.
TEST(KernelCodegen, HandBuiltModulesMatchTheCpuWhenTheKernelsRunOnTheHost) {
  int cpu_refused = 0;
  std::vector<PlannedCodegen> planned = PlanAll(HandBuiltModules(), &cpu_refused);
  std::vector<GeneratedKernel> kernels;
  for (const PlannedCodegen& p : planned) {
    testing::ModuleKernels mk;
    testing::CollectKernels(*p.exe, mk);
    for (GeneratedKernel& k : mk.kernels) kernels.push_back(std::move(k));
  }
  const auto start = std::chrono::steady_clock::now();
  StatusOr<std::unique_ptr<testing::HostKernels>> host = testing::HostKernels::Build(kernels);
  ASSERT_TRUE(host.ok()) << host.status().message();
  const double build_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::mt19937_64 rng(7);
  int ran = 0, not_host = 0;
  for (const PlannedCodegen& p : planned) {
    std::vector<Array> args;
    // No edge values into sums: huge values cancel differently in another summation order.
    const bool edges = testing::ReduceScale(*p.module) == 1 && p.text.find("reduce(") == std::string::npos;
    // 16-bit sums of n terms stay small: the CPU rounds its accumulator after every step (it stalls
    // at 2048 or 8192 and never overflows), a GPU accumulates in f32 (see Compare).
    const double magnitude = 3.0 / testing::ReduceScale(*p.module);
    for (const Shape& s : p.exe->argument_shapes()) args.push_back(RandomArray(s, rng, edges, magnitude));
    StatusOr<std::vector<Array>> want = p.exe->Run(args);
    ASSERT_TRUE(want.ok()) << want.status().message();
    StatusOr<std::vector<Array>> got = testing::RunOnHost(*p.exe, args, **host);
    if (!got.ok() && got.status().code() == StatusCode::kUnimplemented) {
      ++not_host;
      continue;
    }
    ASSERT_TRUE(got.ok()) << got.status().message() << "\n" << p.text;
    ASSERT_EQ(got->size(), want->size());
    for (size_t i = 0; i < want->size(); ++i) {
      const std::string diff = testing::Compare((*got)[i], (*want)[i], testing::ReduceScale(*p.module));
      EXPECT_TRUE(diff.empty()) << diff << "\n" << p.text;
    }
    ++ran;
  }
  std::cout << "hand-built modules run with host-compiled kernels: " << ran << " (" << not_host
            << " have steps the harness does not run); host build " << build_seconds << " s\n";
  // Every module (827 when this was set): warp and block reductions and tiled transposes run
  // too, on the emulator's threads.
  EXPECT_GE(ran, 820);
}

TEST(KernelCodegen, HandBuiltModulesMatchTheCpuOnAGpu) {
  if (!NoGpuReason().empty()) GTEST_SKIP() << NoGpuReason();
  int cpu_refused = 0;
  std::vector<PlannedCodegen> planned = PlanAll(HandBuiltModules(), &cpu_refused);
  std::mt19937_64 rng(7);
  int ran = 0;
  for (const PlannedCodegen& p : planned) {
    std::vector<Array> args;
    // No edge values into sums: huge values cancel differently in another summation order.
    const bool edges = testing::ReduceScale(*p.module) == 1 && p.text.find("reduce(") == std::string::npos;
    // 16-bit sums of n terms stay small: the CPU rounds its accumulator after every step (it stalls
    // at 2048 or 8192 and never overflows), a GPU accumulates in f32 (see Compare).
    const double magnitude = 3.0 / testing::ReduceScale(*p.module);
    for (const Shape& s : p.exe->argument_shapes()) args.push_back(RandomArray(s, rng, edges, magnitude));
    StatusOr<std::vector<Array>> want = p.exe->Run(args);
    if (!want.ok()) continue;
    StatusOr<std::vector<Array>> got = testing::RunOnGpu(*p.exe, args);
    ASSERT_TRUE(got.ok()) << got.status().message() << "\n" << p.text;
    ASSERT_EQ(got->size(), want->size());
    for (size_t i = 0; i < want->size(); ++i) {
      const std::string diff = testing::Compare((*got)[i], (*want)[i], testing::ReduceScale(*p.module));
      EXPECT_TRUE(diff.empty()) << diff << "\n" << p.text;
    }
    ++ran;
  }
  std::cout << "hand-built modules run on the GPU: " << ran << "\n";
  EXPECT_GT(ran, 900);
}

}  // namespace
}  // namespace xs::cuda

#else

TEST(KernelCodegen, NeedsTheCudaToolkit) { GTEST_SKIP() << "this xshard was built without CUDA support"; }

#endif
