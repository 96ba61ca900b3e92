// The cross-table test: for every opcode of ir/opcode.h, an op whose factor rule relates dims (not
// a barrier) must have a partitioned form (or be declared replicated), an executor handler and
// shape inference. Known gaps are the commented allow-lists below; shrink them as ops are added,
// never grow them without a reason (an entry that is no longer a gap fails the test too).
#include <cstring>
#include <limits>
#include <set>
#include <span>
#include <utility>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "xshard/ir/opcode.h"
#include "xshard/ir/shape_inference.h"
#include "xshard/kernels/elementwise.h"
#include "xshard/rules/rule_registry.h"
#include "xshard/exec/executable.h"
#include "xshard/spmd/partition_forms.h"
#include "xshard/text/parser.h"

namespace xs {
namespace {

using spmd::PartitionForm;

// Ops with a non-barrier rule that the executor does not run yet.
const std::set<Opcode> kExecutorGaps = {
    // Dynamic-shape ops with no kernel yet.
    Opcode::kSetDimensionSize,
    // collective-reduce (parsed for completeness) has neither kernel nor shape inference yet.
    Opcode::kCollectiveReduce,
};

// Ops with a non-barrier rule whose shape is taken as declared (no inference yet).
const std::set<Opcode> kShapeInferenceGaps = {
    // bitcast's result is any shape with the operand's byte size (layout-dependent in XLA).
    Opcode::kBitcast,
    Opcode::kCollectiveReduce,
};

// Element types shape inference accepts but kernels/ has no kernel for (the run then stops with
// "unsupported: ..." naming the op and type). Complex forms of the inverse trig / hyperbolic
// functions and friends, and complex maximum / minimum / remainder, have no kernel yet; atan2's
// table row still says kOnNumeric although XLA allows only floating and complex types (tighten it
// to kOnFloat | kOnComplex, then drop the entry).
const std::set<std::pair<Opcode, DType>> kKernelTypeGaps = [] {
  std::set<std::pair<Opcode, DType>> gaps;
  for (Opcode op : {Opcode::kAcos, Opcode::kAcosh, Opcode::kAsin, Opcode::kAsinh, Opcode::kAtan,
                    Opcode::kAtanh, Opcode::kCosh, Opcode::kSinh, Opcode::kCbrt, Opcode::kErf,
                    Opcode::kExpm1, Opcode::kLog1p, Opcode::kMaximum, Opcode::kMinimum,
                    Opcode::kRemainder}) {
    gaps.insert({op, DType::kC64});
    gaps.insert({op, DType::kC128});
  }
  for (DType t : {DType::kS8, DType::kS16, DType::kS32, DType::kS64, DType::kU8, DType::kU16, DType::kU32, DType::kU64,
                  DType::kS2, DType::kS4, DType::kU2, DType::kU4}) {
    gaps.insert({Opcode::kAtan2, t});
  }
  return gaps;
}();

std::string Name(Opcode op) { return std::string(OpcodeName(op)); }

template <typename T>
std::vector<T> Values(const Array& a) {
  std::span<const T> v = a.values<T>();
  return std::vector<T>(v.begin(), v.end());
}

TEST(OpTable, EveryOpWithARuleHasAPartitionedFormAKernelAndShapeInference) {
  std::vector<std::string> missing;
  for (int i = 0; i < kOpcodeCount; ++i) {
    const Opcode op = static_cast<Opcode>(i);
    const std::string name = "opcode '" + Name(op) + "': ";
    if (!HasRule(op)) {
      missing.push_back(name + "has no factor rule (add one in src/xshard/rules/)");
      continue;
    }
    const PartitionForm form = spmd::PartitionFormOf(op);
    if (HasReplicatedForm(op) && !HasNonBarrierRule(op)) {
      missing.push_back(name + "is declared kOpReplicatedForm but its rule is a barrier (drop the flag)");
    }
    // Parameters are bound by the executor's frame and take their declared shape by definition.
    if (!HasNonBarrierRule(op) || op == Opcode::kParameter) continue;
    if (form == PartitionForm::kReplicated) {
      missing.push_back(name + "has a factor rule but the partitioner replicates it silently (add a "
                        "handler in spmd/handler_table.cc or declare kOpReplicatedForm in ir/opcode.h)");
    }
    const bool executor_gap = kExecutorGaps.count(op) > 0;
    if (!ExecutorSupports(op) && !executor_gap) {
      missing.push_back(name + "has a factor rule but no executor handler");
    } else if (ExecutorSupports(op) && executor_gap) {
      missing.push_back(name + "has an executor handler now: remove it from kExecutorGaps");
    }
    const bool shape_gap = kShapeInferenceGaps.count(op) > 0;
    if (!HasShapeInference(op) && !shape_gap) {
      missing.push_back(name + "has a factor rule but no shape-inference entry");
    } else if (HasShapeInference(op) && shape_gap) {
      missing.push_back(name + "has shape inference now: remove it from kShapeInferenceGaps");
    }
  }
  std::string all;
  for (const std::string& m : missing) all += m + "\n";
  EXPECT_TRUE(missing.empty()) << all;
}

// The forms the issue asked for, written out: the ops that used to be replicated silently now
// partition through their rules (batch dims sharded, transformed dims gathered first), and the
// ops without a local form yet say so.
TEST(OpTable, FormerlySilentOpsHaveForms) {
  for (Opcode op : {Opcode::kFft, Opcode::kCholesky, Opcode::kTriangularSolve, Opcode::kTopK,
                    Opcode::kBatchNormTraining, Opcode::kBatchNormInference,
                    Opcode::kBatchNormGrad, Opcode::kReverse, Opcode::kAdd, Opcode::kDot}) {
    EXPECT_EQ(spmd::PartitionFormOf(op), PartitionForm::kLocal) << Name(op);
  }
  EXPECT_EQ(spmd::PartitionFormOf(Opcode::kRng), PartitionForm::kReplicatedWithWarning);
  EXPECT_EQ(spmd::PartitionFormOf(Opcode::kAllGather), PartitionForm::kCollective);
  EXPECT_EQ(spmd::PartitionFormOf(Opcode::kSend), PartitionForm::kReplicated);
}

// Every unary / binary elementwise op of the table that has a kernel runs, and the table's
// elementwise ops all have shape inference (their type rules come from the table).
TEST(OpTable, ElementwiseOpsInferShapes) {
  for (int i = 0; i < kOpcodeCount; ++i) {
    const Opcode op = static_cast<Opcode>(i);
    if (IsElementwise(op)) {
      EXPECT_TRUE(HasShapeInference(op)) << Name(op);
    }
  }
}

// Shape inference and the executor agree on element types: for every unary / binary op the
// executor runs and every computable element type (the narrow ones too) that shape inference
// accepts, the executor has a kernel (no "verified, then refused at run time" outside
// kKernelTypeGaps). The executor may run more types than XLA allows (abs of u32): the verifier
// refuses those first.
TEST(OpTable, ShapeInferenceAndKernelsAcceptTheSameElementTypes) {
  const DType types[] = {
      DType::kPred, DType::kS8, DType::kS16, DType::kS32, DType::kS64, DType::kU8, DType::kU16, DType::kU32,
      DType::kU64, DType::kF16, DType::kBF16, DType::kF32, DType::kF64, DType::kC64, DType::kC128,
      // the narrow types, computed on widened
      DType::kS2, DType::kS4, DType::kU2, DType::kU4, DType::kF8E4M3FN, DType::kF8E4M3FNUZ, DType::kF8E4M3B11FNUZ,
      DType::kF8E4M3, DType::kF8E5M2, DType::kF8E5M2FNUZ, DType::kF8E3M4, DType::kF8E8M0FNU, DType::kF4E2M1FN};
  std::vector<std::string> mismatches;
  for (int i = 0; i < kOpcodeCount; ++i) {
    const Opcode op = static_cast<Opcode>(i);
    const ElementwiseKind kind = GetElementwiseKind(op);
    if (!ExecutorSupports(op) || op == Opcode::kReducePrecision ||
        (kind != ElementwiseKind::kUnary && kind != ElementwiseKind::kBinary)) {
      continue;
    }
    for (DType t : types) {
      const Shape s(t, {2});
      const bool inferred = kind == ElementwiseKind::kUnary ? InferUnaryOpShape(op, s).ok()
                                                            : InferBinaryOpShape(op, s, s).ok();
      const bool runs = kind == ElementwiseKind::kUnary ? kernels::FindUnaryKernel(op, t).ok()
                                                        : kernels::FindBinaryKernel(op, t).ok();
      const bool gap = kKernelTypeGaps.count({op, t}) > 0;
      if (inferred && !runs && !gap) {
        mismatches.push_back(Name(op) + " on " + std::string(DTypeName(t)) +
                             ": shape inference accepts it but the executor has no kernel");
      } else if (gap && (!inferred || runs)) {
        mismatches.push_back(Name(op) + " on " + std::string(DTypeName(t)) +
                             " is no longer a gap: remove it from kKernelTypeGaps");
      }
    }
  }
  std::string all;
  for (const std::string& m : mismatches) all += m + "\n";
  EXPECT_TRUE(mismatches.empty()) << all;
}

// The "add an op" flow of docs/architecture.md with mulhi: the table line gave it parsing, shape
// inference, its factor rule and its spmd handler; the kernel's table line made it run. Values by
// hand: the high half of the double-width product (floor division by 2^w).
TEST(OpTable, MulhiRunsWithTheHighHalfOfTheProduct) {
  EXPECT_EQ(spmd::PartitionFormOf(Opcode::kMulhi), PartitionForm::kLocal);
  StatusOr<std::unique_ptr<Module>> m = ParseHloModule(R"(HloModule m
ENTRY e {
  a = s32[4] parameter(0)
  b = s32[4] parameter(1)
  c = u32[1] parameter(2)
  d = s64[2] parameter(3)
  x = s32[4] mulhi(a, b)
  y = u32[1] mulhi(c, c)
  z = s64[2] mulhi(d, d)
  ROOT t = (s32[4], u32[1], s64[2]) tuple(x, y, z)
})");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const std::vector<Array> args = {
      Array::FromVector<int32_t>({4}, {1 << 30, -1, 123456789, -123456789}),
      Array::FromVector<int32_t>({4}, {4, 1, 987654321, 987654321}),
      Array::FromVector<uint32_t>({1}, {0xFFFFFFFFu}),
      Array::FromVector<int64_t>({2}, {int64_t{1} << 62, -1})};
  StatusOr<std::vector<Array>> out = Execute(**m, args);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), 3u);
  // 2^30 * 4 = 2^32 -> 1; -1 * 1 -> -1; 123456789 * 987654321 = 121932631112635269 -> 28389652;
  // its negation -> floor(-28389652.x) = -28389653.
  EXPECT_EQ(Values<int32_t>((*out)[0]), (std::vector<int32_t>{1, -1, 28389652, -28389653}));
  // (2^32 - 1)^2 = 2^64 - 2^33 + 1 -> 2^32 - 2.
  EXPECT_EQ(Values<uint32_t>((*out)[1]), (std::vector<uint32_t>{4294967294u}));
  // 2^62 * 2^62 = 2^124 -> 2^60; -1 * -1 = 1 -> 0.
  EXPECT_EQ(Values<int64_t>((*out)[2]), (std::vector<int64_t>{int64_t{1} << 60, 0}));
}

// stochastic-convert, the op of the issue's "done when": its table line, shape inference and
// elementwise rule existed; the executor entry (exec/executable_elementwise.cc) made it run.
// Values by hand from XLA's definition: |x| = t + f rounds up when random < f * 2^bits.
TEST(OpTable, StochasticConvertRoundsUpWhenTheRandomBitsAreBelowTheFraction) {
  EXPECT_EQ(spmd::PartitionFormOf(Opcode::kStochasticConvert), PartitionForm::kLocal);
  StatusOr<std::unique_ptr<Module>> m = ParseHloModule(R"(HloModule m
ENTRY e {
  x = f32[8] parameter(0)
  r = u32[8] parameter(1)
  y = bf16[4] parameter(2)
  q = u16[4] parameter(3)
  a = s32[8] stochastic-convert(x, r)
  b = s8[4] stochastic-convert(y, q)
  ROOT t = (s32[8], s8[4]) tuple(a, b)
})");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // bf16 operand 0.5, 0.5, 200, -200 (bit patterns 0x3F00, 0x4348, 0xC348).
  Array y(DType::kBF16, {4});
  const uint16_t bf16_bits[4] = {0x3F00, 0x3F00, 0x4348, 0xC348};
  std::memcpy(y.data(), bf16_bits, sizeof(bf16_bits));
  const std::vector<Array> args = {
      Array::FromVector<float>({8}, {2.25f, 2.25f, -2.75f, -2.75f, 5.0f, nan, 3e9f, -3e9f}),
      // f * 2^32: 0.25 -> 2^30, 0.75 -> 3 * 2^30.
      Array::FromVector<uint32_t>({8}, {(1u << 30) - 1, 1u << 30, 3u << 30, (3u << 30) - 1, 0, 0, 0, 0}),
      y, Array::FromVector<uint16_t>({4}, {0x7FFF, 0x8000, 0, 0})};
  StatusOr<std::vector<Array>> out = Execute(**m, args);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), 2u);
  // 2.25: random 2^30 - 1 < 2^30 rounds up (3), 2^30 does not (2); -2.75: 3 * 2^30 is not below
  // 3 * 2^30 (-2), one less is (-3); integral 5 stays; NaN -> 0; +-3e9 clamp to s32's range.
  EXPECT_EQ(Values<int32_t>((*out)[0]),
            (std::vector<int32_t>{3, 2, -2, -3, 5, 0, 2147483647, -2147483647 - 1}));
  // 0.5 * 2^16 = 0x8000: 0x7FFF rounds up to 1, 0x8000 stays 0; 200 and -200 clamp to s8.
  EXPECT_EQ(Values<int8_t>((*out)[1]), (std::vector<int8_t>{1, 0, 127, -128}));
}

// Elementwise ops that fused loops leave out, each for its reason (marked kOpNoLoopFusion in
// ir/opcode.h; every other elementwise op must fuse).
const std::set<Opcode> kNotLoopFused = {
    Opcode::kMap,                // calls a computation per element
    Opcode::kReducePrecision,    // its kernel takes exponent / mantissa bit counts
    Opcode::kStochasticConvert,  // reads random bits of another type: no one-function scalar form
};

TEST(OpTable, EveryElementwiseOpFusesUnlessExcludedWithAReason) {
  for (int i = 0; i < kOpcodeCount; ++i) {
    const Opcode op = static_cast<Opcode>(i);
    if (!IsElementwise(op)) {
      EXPECT_FALSE(IsLoopFusible(op)) << Name(op) << " is not elementwise";
      continue;
    }
    EXPECT_EQ(IsLoopFusible(op), kNotLoopFused.count(op) == 0)
        << Name(op) << ": kOpNoLoopFusion in ir/opcode.h and kNotLoopFused here must agree";
  }
  for (Opcode op : kNotLoopFused) EXPECT_TRUE(IsElementwise(op)) << Name(op) << " is not elementwise";
  // The two the hand-written list used to leave out silently: one fuses, one has its reason.
  EXPECT_TRUE(IsLoopFusible(Opcode::kMulhi));
  EXPECT_FALSE(IsLoopFusible(Opcode::kStochasticConvert));
}

// The element type a fusion probe runs `op` on, and its result type.
std::pair<std::string, std::string> ProbeTypes(Opcode op) {
  const uint32_t types = OpcodeAcceptedTypes(op);
  const std::string t = (types & kOnFloat) ? "f32" : (types & kOnSigned) ? "s32" : "pred";
  if (op == Opcode::kIsFinite || op == Opcode::kCompare) return {t, "pred"};
  if (op == Opcode::kComplex) return {t, "c64"};
  if (op == Opcode::kConvert) return {t, "s16"};
  return {t, t};
}

// Every unary / binary / compare / convert op the table calls fusible really joins a loop in the
// executor: fed by a broadcast of a constant, the fused loop reads the constant in place and the
// broadcast never runs (2 instructions: the op and the constant; 3 op by op).
TEST(OpTable, FusibleOpsJoinALoopInTheExecutor) {
  int probed = 0;
  for (int i = 0; i < kOpcodeCount; ++i) {
    const Opcode op = static_cast<Opcode>(i);
    const ElementwiseKind kind = GetElementwiseKind(op);
    if (!IsLoopFusible(op) || !ExecutorSupports(op) ||
        (kind != ElementwiseKind::kUnary && kind != ElementwiseKind::kBinary &&
         kind != ElementwiseKind::kCompare && kind != ElementwiseKind::kConvert)) {
      continue;
    }
    const auto [t, result] = ProbeTypes(op);
    const bool binary = kind == ElementwiseKind::kBinary || kind == ElementwiseKind::kCompare;
    const std::string value = t == "pred" ? "true" : "1";
    std::string text = "HloModule m\nENTRY e {\n  c = " + t + "[] constant(" + value + ")\n  b = " + t +
                       "[64,8] broadcast(c), dimensions={}\n  ROOT r = " + result + "[64,8] " + Name(op) +
                       (binary ? "(b, b)" : "(b)") + (op == Opcode::kCompare ? ", direction=LT" : "") + "\n}\n";
    StatusOr<std::unique_ptr<Module>> m = ParseHloModule(text);
    ASSERT_TRUE(m.ok()) << m.status().ToString() << "\n" << text;
    StatusOr<std::unique_ptr<Executable>> e = Executable::Create(**m);
    ASSERT_TRUE(e.ok()) << e.status().ToString() << "\n" << text;
    ExecuteStats stats;
    const std::vector<Array> no_args;
    StatusOr<std::vector<Array>> out = (*e)->Run(no_args, {}, &stats);
    ASSERT_TRUE(out.ok()) << out.status().ToString() << "\n" << text;
    EXPECT_EQ(stats.instructions_run, 2) << Name(op) << " did not join a fused loop:\n" << text;
    ++probed;
  }
  EXPECT_GT(probed, 50);
}

}  // namespace
}  // namespace xs
