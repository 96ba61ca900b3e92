// Rules of individual ops, as einsum-like text derived by hand from each op's semantics.
#include "xshard/rules/rule_registry.h"

#include <gtest/gtest.h>

#include "xshard/text/parser.h"

namespace xs {
namespace {

// The rule text of instruction `name` in the entry computation of `hlo`.
std::string RuleText(const std::string& hlo, const std::string& name) {
  auto module = ParseHloModule(hlo, "test.hlo");
  if (!module.ok()) return "parse error: " + std::string(module.status().message());
  const Instruction* inst = (*module)->entry()->GetInstruction(name);
  if (inst == nullptr) return "no instruction " + name;
  auto rule = GetRule(*inst);
  if (!rule.ok()) return "rule error: " + std::string(rule.status().message());
  return rule->ToString();
}

std::string Entry(const std::string& body) { return "HloModule m\n\nENTRY e {\n" + body + "}\n"; }

TEST(RuleRegistryTest, EveryOpcodeHasARule) {
  for (int i = 0; i < kOpcodeCount; ++i) {
    EXPECT_TRUE(HasRule(static_cast<Opcode>(i))) << OpcodeName(static_cast<Opcode>(i));
  }
}

TEST(RuleRegistryTest, ElementwiseSharesOneFactorPerDim) {
  EXPECT_EQ(RuleText(Entry("  a = f32[4,8] parameter(0)\n  b = f32[4,8] parameter(1)\n"
                           "  ROOT c = f32[4,8] add(a, b)\n"), "c"),
            "([i, j], [i, j]) -> ([i, j]) {i=4, j=8}");
}

TEST(RuleRegistryTest, ClampWithScalarBoundsIgnoresThem) {
  EXPECT_EQ(RuleText(Entry("  lo = f32[] parameter(0)\n  x = f32[4] parameter(1)\n"
                           "  ROOT c = f32[4] clamp(lo, x, lo)\n"), "c"),
            "(_, [i], _) -> ([i]) {i=4}");
}

TEST(RuleRegistryTest, DotHasBatchFreeAndContractingFactors) {
  EXPECT_EQ(RuleText(Entry("  x = f16[4,16] parameter(0)\n  y = f16[16,4] parameter(1)\n"
                           "  ROOT d = f16[4,4] dot(x, y), lhs_contracting_dims={1}, "
                           "rhs_contracting_dims={0}\n"), "d"),
            "([i, k], [k, j]) -> ([i, j]) {i=4, j=4, k=16 reduction}");
  EXPECT_EQ(RuleText(Entry("  x = f32[2,4,16] parameter(0)\n  y = f32[2,16,8] parameter(1)\n"
                           "  ROOT d = f32[2,4,8] dot(x, y), lhs_batch_dims={0}, "
                           "lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}\n"), "d"),
            "([i, j, l], [i, l, k]) -> ([i, j, k]) {i=2, j=4, k=8, l=16 reduction}");
}

TEST(RuleRegistryTest, ReshapeMergesAndSplitsIntoCompoundFactors) {
  EXPECT_EQ(RuleText(Entry("  x = f32[4,6] parameter(0)\n  ROOT r = f32[24] reshape(x)\n"), "r"),
            "([i, j]) -> ([(ij)]) {i=4, j=6}");
  EXPECT_EQ(RuleText(Entry("  x = f32[24] parameter(0)\n  ROOT r = f32[4,6] reshape(x)\n"), "r"),
            "([(ij)]) -> ([i, j]) {i=4, j=6}");
  EXPECT_EQ(RuleText(Entry("  x = f32[8,4] parameter(0)\n  ROOT r = f32[2,16] reshape(x)\n"), "r"),
            "([(ij), k]) -> ([i, (jk)]) {i=2, j=4, k=4}");
  EXPECT_EQ(RuleText(Entry("  x = f32[4,1,6] parameter(0)\n  ROOT r = f32[24] reshape(x)\n"), "r"),
            "([i, 1, j]) -> ([(ij)]) {i=4, j=6}");
}

TEST(RuleRegistryTest, ReshapeWithMisalignedDimsKeepsOnlyTheCommonMajorFactor) {
  // [6,4] -> [4,6]: both start with a factor 2 (device stride 12); then 3 vs 2 do not line up.
  EXPECT_EQ(RuleText(Entry("  x = f32[6,4] parameter(0)\n  ROOT r = f32[4,6] reshape(x)\n"), "r"),
            "([(ij), k]) -> ([(il), m]) {i=2, j=3 need-replication, k=4 need-replication, "
            "l=2 need-replication, m=6 need-replication}");
}

TEST(RuleRegistryTest, BroadcastAndTranspose) {
  EXPECT_EQ(RuleText(Entry("  x = f32[4] parameter(0)\n  ROOT b = f32[4,8] broadcast(x), dimensions={0}\n"), "b"),
            "([i]) -> ([i, j]) {i=4, j=8}");
  EXPECT_EQ(RuleText(Entry("  x = f32[4,8] parameter(0)\n  ROOT t = f32[8,4] transpose(x), dimensions={1,0}\n"), "t"),
            "([j, i]) -> ([i, j]) {i=8, j=4}");
}

TEST(RuleRegistryTest, ReduceMakesReducedDimsReductionFactors) {
  EXPECT_EQ(RuleText("HloModule m\n\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                     "  ROOT s = f32[] add(a, b)\n}\n\nENTRY e {\n  x = f32[4,16] parameter(0)\n"
                     "  z = f32[] constant(0)\n  ROOT r = f32[4] reduce(x, z), dimensions={1}, to_apply=add\n}\n", "r"),
            "([i, j], _) -> ([i]) {i=4, j=16 reduction}");
}

TEST(RuleRegistryTest, GatherEmbeddingLookup) {
  EXPECT_EQ(RuleText(Entry("  t = f32[100,64] parameter(0)\n  i = s32[8,1] parameter(1)\n"
                           "  ROOT g = f32[8,64] gather(t, i), offset_dims={1}, collapsed_slice_dims={0}, "
                           "start_index_map={0}, index_vector_dim=1, slice_sizes={1,64}\n"), "g"),
            "([k, j], [i, 1]) -> ([i, j]) {i=8, j=64, k=100 need-replication}");
}

TEST(RuleRegistryTest, ScatterUpdateRowsAreReductionFactors) {
  EXPECT_EQ(RuleText("HloModule m\n\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                     "  ROOT s = f32[] add(a, b)\n}\n\nENTRY e {\n  t = f32[100,64] parameter(0)\n"
                     "  i = s32[8,1] parameter(1)\n  u = f32[8,64] parameter(2)\n"
                     "  ROOT s = f32[100,64] scatter(t, i, u), update_window_dims={1}, "
                     "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, "
                     "to_apply=add\n}\n", "s"),
            "([i, j], [k, 1], [k, j]) -> ([i, j]) {i=100, j=64, k=8 reduction}");
}

TEST(RuleRegistryTest, ConvolutionSpatialDimsWithAWindowArePermutations) {
  EXPECT_EQ(RuleText(Entry("  x = f32[8,32,32,16] parameter(0)\n  k = f32[3,3,16,64] parameter(1)\n"
                           "  ROOT c = f32[8,32,32,64] convolution(x, k), window={size=3x3 pad=1_1x1_1}, "
                           "dim_labels=b01f_01io->b01f\n"), "c"),
            "([i, l, n, j], [m, o, j, k]) -> ([i, l, n, k]) {i=8, j=16 reduction, k=64, "
            "l=32 permutation, m=3 need-replication, n=32 permutation, o=3 need-replication}");
}

// A weight gradient: the "kernel" (the output gradient) is as large as the image and the result
// spatial dims are the small kernel's. Image and kernel spatial dims move together (halo
// exchange, partial sums); the result's spatial dims are their own, so propagation does not
// split a 3-wide dim over the image's axes.
TEST(RuleRegistryTest, ConvolutionWithAKernelLargerThanTheResultLinksInputAndKernel) {
  EXPECT_EQ(RuleText(Entry("  x = f32[2,16,8,3] parameter(0)\n  g = f32[2,16,8,4] parameter(1)\n"
                           "  ROOT c = f32[3,3,3,4] convolution(x, g), window={size=16x8 pad=1_1x1_1}, "
                           "dim_labels=f01b_i01o->01bf\n"), "c"),
            "([j, l, n, i], [j, l, n, k]) -> ([m, o, i, k]) {i=3, j=2 reduction, k=4, l=16 permutation, "
            "m=3 need-replication, n=8 permutation, o=3 need-replication}");
}

// A transposed convolution's weight gradient (lhs dilation 2): no halo form, so every spatial dim
// is its own and needs replication; the image's split does not reach the 2-wide result dims.
TEST(RuleRegistryTest, TransposedConvolutionWeightGradientKeepsSpatialDimsApart) {
  EXPECT_EQ(
      RuleText(Entry("  x = f32[2,16,8,16] parameter(0)\n  g = f32[2,32,16,8] parameter(1)\n"
                     "  ROOT c = f32[2,2,16,8] convolution(x, g), window={size=32x16 pad=1_1x1_1 lhs_dilate=2x2}, "
                     "dim_labels=f01b_i01o->01bf\n"),
               "c"),
      "([j, l, o, i], [j, m, p, k]) -> ([n, q, i, k]) {i=16, j=2 reduction, k=8, l=16 need-replication, "
      "m=32 need-replication, n=2 need-replication, o=8 need-replication, p=16 need-replication, "
      "q=2 need-replication}");
}

// A kernel as wide as the result (jax.scipy.linalg.toeplitz: the 15 values of c and r slid
// against an 8x8 identity): a result tile would need a halo of the kernel's width, so the result
// is not tied to the input's split.
TEST(RuleRegistryTest, ConvolutionWithAKernelAsWideAsTheResultKeepsSpatialDimsApart) {
  EXPECT_EQ(RuleText(Entry("  x = f32[1,15,1] parameter(0)\n  k = f32[1,8,8] parameter(1)\n"
                           "  ROOT c = f32[1,8,8] convolution(x, k), window={size=8}, "
                           "dim_labels=b0f_io0->b0f\n"),
                     "c"),
            "([1, j, 1], [1, i, k]) -> ([1, l, i]) {i=8, j=15 need-replication, k=8 need-replication, "
            "l=8 need-replication}");
}

TEST(RuleRegistryTest, TupleAndGetTupleElementPassLeaves) {
  const std::string hlo = Entry("  a = f32[4] parameter(0)\n  b = f32[2,3] parameter(1)\n"
                                "  t = (f32[4], f32[2,3]) tuple(a, b)\n"
                                "  ROOT g = f32[2,3] get-tuple-element(t), index=1\n");
  EXPECT_EQ(RuleText(hlo, "t"), "([i], [j, k]) -> ([i], [j, k]) {i=4, j=2, k=3}");
  EXPECT_EQ(RuleText(hlo, "g"), "(_, [i, j]) -> ([i, j]) {i=2, j=3}");
}

TEST(RuleRegistryTest, SlicingOps) {
  EXPECT_EQ(RuleText(Entry("  x = f32[16,8] parameter(0)\n  i = s32[] parameter(1)\n"
                           "  ROOT d = f32[4,8] dynamic-slice(x, i, i), dynamic_slice_sizes={4,8}\n"), "d"),
            "([i, k], _, _) -> ([j, k]) {i=16 need-replication, j=4, k=8}");
  EXPECT_EQ(RuleText(Entry("  x = f32[16,8] parameter(0)\n  ROOT s = f32[4,8] slice(x), slice={[0:4], [0:8]}\n"), "s"),
            "([i, j]) -> ([i, j]) {i=16 permutation, j=8}");
  EXPECT_EQ(RuleText(Entry("  a = f32[4,8] parameter(0)\n  ROOT c = f32[4,16] concatenate(a, a), dimensions={1}\n"), "c"),
            "([i, j], [i, j]) -> ([i, j]) {i=4, j=16 permutation}");
}

TEST(RuleRegistryTest, SortDimNeedsReplication) {
  EXPECT_EQ(RuleText("HloModule m\n\nlt {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                     "  ROOT c = pred[] compare(a, b), direction=LT\n}\n\nENTRY e {\n"
                     "  x = f32[4,16] parameter(0)\n  ROOT s = f32[4,16] sort(x), dimensions={1}, to_apply=lt\n}\n", "s"),
            "([i, j]) -> ([i, j]) {i=4, j=16 need-replication}");
}

TEST(RuleRegistryTest, ShardingCustomCallPassesThroughAndManualConvertersAreBarriers) {
  const std::string hlo = Entry(
      "  x = f32[4,8] parameter(0)\n"
      "  s = f32[4,8] custom-call(x), custom_call_target=\"Sharding\", sharding={devices=[2,1]<=[2]}\n"
      "  ROOT m = f32[2,8] custom-call(s), custom_call_target=\"SPMDFullToShardShape\", sharding={manual}\n");
  EXPECT_EQ(RuleText(hlo, "s"), "([i, j]) -> ([i, j]) {i=4, j=8}");
  EXPECT_EQ(RuleText(hlo, "m"), "(_) -> ([i, j]) {i=2, j=8} barrier");
}

TEST(RuleRegistryTest, BadAttributesAreErrorsNamingTheInstruction) {
  // A concatenate without dimensions= (built by hand; the parser would reject it).
  auto x = Instruction::Create(Opcode::kParameter, Shape(DType::kF32, {4, 8}), {}, "x");
  auto bad = Instruction::Create(Opcode::kConcatenate, Shape(DType::kF32, {8, 8}), {x.get(), x.get()}, "cat");
  auto rule = GetRule(*bad);
  ASSERT_FALSE(rule.ok());
  EXPECT_NE(rule.status().message().find("cat"), std::string::npos) << rule.status().message();
  EXPECT_NE(rule.status().message().find("dimensions={d}"), std::string::npos);
}

// Sparse dots and convolutions keep their declared shapes (the sparse operand is stored
// compressed), so dim numbers outside an operand's rank reach the rules: an error naming the
// operand, not a read past its dims.
TEST(RuleRegistryTest, SparseConvolutionWithDimsOutsideTheKernelIsAnError) {
  const std::string text = RuleText(Entry("  input = f32[1,2] parameter(0)\n  filter = f32[232] parameter(1)\n"
                                          "  ROOT c = f32[1,2] convolution(input, filter), dim_labels=bf_io->bf,\n"
                                          "    sparsity_config={rhs={sparsity=3x4 dimension=0 stride=1}}\n"),
                                    "c");
  EXPECT_NE(text.find("rule error"), std::string::npos) << text;
  EXPECT_NE(text.find("kernel (1) is outside its rank 1"), std::string::npos) << text;
}

}  // namespace
}  // namespace xs
