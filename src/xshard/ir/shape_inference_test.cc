// Tests of the per-op shape rules. Expected shapes are derived by hand from XLA's operation
// semantics (https://openxla.org/xla/operation_semantics).
#include "xshard/ir/shape_inference.h"

#include <gtest/gtest.h>

namespace xs {
namespace {

Shape F32Inference(std::vector<int64_t> dims) { return Shape(DType::kF32, std::move(dims)); }
Shape S32(std::vector<int64_t> dims) { return Shape(DType::kS32, std::move(dims)); }
Shape Pred(std::vector<int64_t> dims) { return Shape(DType::kPred, std::move(dims)); }

// Unwraps a StatusOr<Shape> to its text, or "ERROR: <message>".
std::string Text(const StatusOr<Shape>& s) {
  return s.ok() ? s->ToString() : "ERROR: " + s.status().message();
}

ProgramShape Sig(std::vector<Shape> params, Shape result) {
  return ProgramShape{std::move(params), std::move(result)};
}

TEST(ShapeInferenceTest, ElementwiseBinaryKeepsShapeAndCompareGivesPred) {
  EXPECT_EQ(Text(InferBinaryOpShape(Opcode::kAdd, F32Inference({4, 16}), F32Inference({4, 16}))), "f32[4,16]");
  EXPECT_EQ(Text(InferBinaryOpShape(Opcode::kCompare, F32Inference({3}), F32Inference({3}))), "pred[3]");
  EXPECT_EQ(Text(InferBinaryOpShape(Opcode::kComplex, F32Inference({2}), F32Inference({2}))), "c64[2]");
}

// As XLA's verifier without mixed precision (and as the executor, which has no mixed kernels):
// add(f32, bf16) is an error naming both operands and the fix.
TEST(ShapeInferenceTest, MixedFloatingPrecisionIsAnError) {
  EXPECT_EQ(Text(InferBinaryOpShape(Opcode::kAdd, F32Inference({2}), Shape(DType::kBF16, {2}))),
            "ERROR: add operands have different element types: lhs f32[2], rhs bf16[2]; convert "
            "one of them (e.g. convert(rhs) to f32) so both have the same element type");
  EXPECT_EQ(Text(InferBinaryOpShape(Opcode::kCompare, Shape(DType::kF16, {2}), F32Inference({2}))),
            "ERROR: compare operands have different element types: lhs f16[2], rhs f32[2]; "
            "convert one of them (e.g. convert(rhs) to f16) so both have the same element type");
  EXPECT_EQ(Text(InferTernaryOpShape(Opcode::kSelect, Pred({2}), F32Inference({2}), Shape(DType::kBF16, {2}))),
            "ERROR: select's on_true f32[2] and on_false bf16[2] must have the same shape and "
            "element type; convert or broadcast one of them");
  EXPECT_EQ(Text(InferTernaryOpShape(Opcode::kClamp, Shape(DType::kF64, {}), F32Inference({2}), F32Inference({}))),
            "ERROR: clamp's min f64[], operand f32[2] and max f32[] have different element types; "
            "convert the bounds to f32");
}

TEST(ShapeInferenceTest, ElementwiseBinaryRejectsImplicitBroadcastAndTypeMix) {
  EXPECT_EQ(Text(InferBinaryOpShape(Opcode::kAdd, F32Inference({4, 16}), F32Inference({1, 16}))),
            "ERROR: operands have different dims: lhs f32[4,16], rhs f32[1,16]; HLO does not "
            "broadcast implicitly, insert a broadcast");
  EXPECT_EQ(Text(InferBinaryOpShape(Opcode::kAdd, F32Inference({2}), S32({2}))),
            "ERROR: add operands have different element types: lhs f32[2], rhs s32[2]; convert "
            "one of them (e.g. convert(rhs) to f32) so both have the same element type");
  EXPECT_EQ(Text(InferBinaryOpShape(Opcode::kAnd, F32Inference({2}), F32Inference({2}))),
            "ERROR: and needs pred or integer operands, got f32[2]");
  EXPECT_EQ(Text(InferBinaryOpShape(Opcode::kSubtract, Pred({2}), Pred({2}))),
            "ERROR: subtract needs numeric (not pred) operands, got pred[2]");
}

TEST(ShapeInferenceTest, UnaryRulesFollowElementTypes) {
  EXPECT_EQ(Text(InferUnaryOpShape(Opcode::kNegate, S32({3}))), "s32[3]");
  EXPECT_EQ(Text(InferUnaryOpShape(Opcode::kIsFinite, F32Inference({3}))), "pred[3]");
  EXPECT_EQ(Text(InferUnaryOpShape(Opcode::kAbs, Shape(DType::kC64, {2}))), "f32[2]");
  EXPECT_EQ(Text(InferUnaryOpShape(Opcode::kReal, Shape(DType::kC128, {2}))), "f64[2]");
  EXPECT_EQ(Text(InferUnaryOpShape(Opcode::kFloor, S32({3}))),
            "ERROR: floor needs a floating operand, got s32[3]");
  EXPECT_EQ(Text(InferUnaryOpShape(Opcode::kNot, F32Inference({3}))),
            "ERROR: not needs a pred or integer operand, got f32[3]");
}

TEST(ShapeInferenceTest, SelectNeedsPredOfOnTrueDims) {
  EXPECT_EQ(Text(InferTernaryOpShape(Opcode::kSelect, Pred({2, 3}), F32Inference({2, 3}), F32Inference({2, 3}))),
            "f32[2,3]");
  EXPECT_EQ(Text(InferTernaryOpShape(Opcode::kSelect, Pred({}), F32Inference({2, 3}), F32Inference({2, 3}))),
            "ERROR: the predicate pred[] must have the dims of on_true f32[2,3]; broadcast it "
            "first");
  EXPECT_EQ(Text(InferTernaryOpShape(Opcode::kSelect, S32({2}), F32Inference({2}), F32Inference({2}))),
            "ERROR: the predicate must have element type pred, got s32[2]");
  EXPECT_EQ(Text(InferTernaryOpShape(Opcode::kClamp, F32Inference({}), F32Inference({5}), F32Inference({}))), "f32[5]");
}

TEST(ShapeInferenceTest, ConvertAndBitcastConvertWidths) {
  EXPECT_EQ(Text(InferConvertShape(S32({8, 1}), DType::kF32)), "f32[8,1]");
  EXPECT_EQ(Text(InferBitcastConvertShape(F32Inference({4}), DType::kS32)), "s32[4]");
  // 32 -> 8 bits: a new minor dim of 4; 8 -> 32 bits: the minor dim of 4 goes away.
  EXPECT_EQ(Text(InferBitcastConvertShape(F32Inference({4}), DType::kU8)), "u8[4,4]");
  EXPECT_EQ(Text(InferBitcastConvertShape(Shape(DType::kU8, {3, 4}), DType::kF32)), "f32[3]");
  EXPECT_EQ(Text(InferBitcastConvertShape(Shape(DType::kU8, {3, 2}), DType::kF32)),
            "ERROR: bitcast-convert from u8[3,2] to f32 needs a last dim of 4 (the width ratio)");
}

TEST(ShapeInferenceTest, BroadcastMapsOperandDimsToOutputDims) {
  std::vector<int64_t> out = {2, 3, 4};
  EXPECT_EQ(Text(InferBroadcastShape(F32Inference({3}), out, std::vector<int64_t>{1})), "f32[2,3,4]");
  EXPECT_EQ(Text(InferBroadcastShape(F32Inference({}), out, std::vector<int64_t>{})), "f32[2,3,4]");
  EXPECT_EQ(Text(InferBroadcastShape(F32Inference({3}), out, std::vector<int64_t>{2})),
            "ERROR: broadcast maps operand dim 0 (size 3) of f32[3] to output dim 2 (size 4) of "
            "f32[2,3,4]; sizes must be equal (reshape away size-1 dims first)");
  EXPECT_EQ(Text(InferBroadcastShape(F32Inference({3}), out, std::vector<int64_t>{3})),
            "ERROR: broadcast dimension 3 is out of range for f32[2,3,4] (rank 3)");
}

TEST(ShapeInferenceTest, ReshapeKeepsElementCountTransposePermutes) {
  EXPECT_EQ(Text(InferReshapeShape(F32Inference({}), std::vector<int64_t>{1, 1})), "f32[1,1]");
  EXPECT_EQ(Text(InferReshapeShape(F32Inference({2, 6}), std::vector<int64_t>{3, 5})),
            "ERROR: reshape from f32[2,6] (12 elements) to f32[3,5] (15 elements) changes the "
            "element count");
  EXPECT_EQ(Text(InferTransposeShape(F32Inference({2, 3, 4}), std::vector<int64_t>{2, 0, 1})),
            "f32[4,2,3]");
  EXPECT_EQ(Text(InferTransposeShape(F32Inference({2, 3}), std::vector<int64_t>{0, 0})),
            "ERROR: transpose dimensions={0,0} is not a permutation of the dims of f32[2,3]");
}

TEST(ShapeInferenceTest, DotGeneralOrdersBatchLhsFreeRhsFree) {
  DotDimensionNumbers mm{{}, {}, {1}, {0}};
  EXPECT_EQ(Text(InferDotShape(F32Inference({4, 16}), F32Inference({16, 8}), mm)), "f32[4,8]");
  // [b,m,k] x [b,k,n] -> [b,m,n]
  DotDimensionNumbers bmm{{0}, {0}, {2}, {1}};
  EXPECT_EQ(Text(InferDotShape(F32Inference({3, 4, 5}), F32Inference({3, 5, 6}), bmm)), "f32[3,4,6]");
  // Batch dims need not lead: lhs [k,b] x rhs [n,b,k] -> [b, n].
  DotDimensionNumbers odd{{1}, {1}, {0}, {2}};
  EXPECT_EQ(Text(InferDotShape(F32Inference({5, 3}), F32Inference({7, 3, 5}), odd)), "f32[3,7]");
  EXPECT_EQ(Text(InferDotShape(F32Inference({4, 16}), F32Inference({16, 8}), DotDimensionNumbers{{}, {}, {2}, {0}})),
            "ERROR: lhs contracting dim 2 is out of range for f32[4,16]");
  EXPECT_EQ(Text(InferDotShape(F32Inference({4, 16}), F32Inference({8, 8}), mm)),
            "ERROR: contracting dim sizes differ: lhs dim 1 of f32[4,16] is 16, rhs dim 0 of "
            "f32[8,8] is 8");
  // The declared (preferred) type may widen s8 x s8 to s32.
  EXPECT_EQ(Text(InferDotShape(Shape(DType::kS8, {2, 3}), Shape(DType::kS8, {3, 4}), mm,
                               DType::kS32)),
            "s32[2,4]");
}

TEST(ShapeInferenceTest, ConvolutionOutputFromWindowAndDimLabels) {
  // b01f_01io->b01f: lhs [1, 5, 5, 2], kernel [3, 3, 2, 8], stride 2, pad 1_1:
  // spatial out = floor((1 + 5 + 1 - 3) / 2) + 1 = 3.
  ConvolutionDimensionNumbers dn{0, 3, {1, 2}, 2, 3, {0, 1}, 0, 3, {1, 2}};
  Window w;
  w.dims = {WindowDim{3, 2, 1, 1, 1, 1, false}, WindowDim{3, 2, 1, 1, 1, 1, false}};
  EXPECT_EQ(Text(InferConvolutionShape(F32Inference({1, 5, 5, 2}), F32Inference({3, 3, 2, 8}), 1, 1, w, dn)),
            "f32[1,3,3,8]");
  // Depthwise: 2 feature groups of 1 input feature each.
  EXPECT_EQ(Text(InferConvolutionShape(F32Inference({1, 5, 5, 2}), F32Inference({3, 3, 1, 8}), 2, 1, w, dn)),
            "f32[1,3,3,8]");
  // lhs dilation 2 on 5 -> 9, window 3 with rhs dilation 2 -> 5: (1 + 9 + 1 - 5) / 2 + 1 = 4.
  w.dims[0].lhs_dilation = 2;
  w.dims[0].rhs_dilation = 2;
  EXPECT_EQ(Text(InferConvolutionShape(F32Inference({1, 5, 5, 2}), F32Inference({3, 3, 2, 8}), 1, 1, w, dn)),
            "f32[1,4,3,8]");
  // batch_group_count 2 halves the batch: [4,...] -> [2,...].
  w.dims[0] = WindowDim{3, 2, 1, 1, 1, 1, false};
  EXPECT_EQ(Text(InferConvolutionShape(F32Inference({4, 5, 5, 2}), F32Inference({3, 3, 2, 8}), 1, 2, w, dn)),
            "f32[2,3,3,8]");
}

TEST(ShapeInferenceTest, ReduceDropsDimsAndChecksTheReducer) {
  ProgramShape add = Sig({F32Inference({}), F32Inference({})}, F32Inference({}));
  std::vector<Shape> ops = {F32Inference({4, 8, 2}), F32Inference({})};
  EXPECT_EQ(Text(InferReduceShape(ops, std::vector<int64_t>{0, 2}, add)), "f32[8]");
  // Variadic (argmax-style) reduce: (f32, s32) inputs -> tuple result.
  ProgramShape pair = Sig({F32Inference({}), S32({}), F32Inference({}), S32({})}, Shape::Tuple({F32Inference({}), S32({})}));
  std::vector<Shape> two = {F32Inference({4, 8}), S32({4, 8}), F32Inference({}), S32({})};
  EXPECT_EQ(Text(InferReduceShape(two, std::vector<int64_t>{1}, pair)), "(f32[4], s32[4])");
  EXPECT_EQ(Text(InferReduceShape(ops, std::vector<int64_t>{3}, add)),
            "ERROR: reduce dimension 3 is out of range for f32[4,8,2] (rank 3)");
  ProgramShape bad = Sig({F32Inference({}), F32Inference({})}, F32Inference({2}));
  EXPECT_EQ(Text(InferReduceShape(ops, std::vector<int64_t>{0}, bad)),
            "ERROR: the reducer (f32[], f32[]) -> f32[2] must return scalars");
  ProgramShape three = Sig({F32Inference({}), F32Inference({}), F32Inference({})}, F32Inference({}));
  EXPECT_EQ(Text(InferReduceShape(ops, std::vector<int64_t>{0}, three)),
            "ERROR: the reducer (f32[], f32[], f32[]) -> f32[] must take 2 parameters "
            "(accumulators then inputs) for 1 input(s)");
}

TEST(ShapeInferenceTest, ReduceWindowUsesWindowArithmetic) {
  // size 2 stride 2 over 7 with pad 0_1: floor((7 + 1 - 2) / 2) + 1 = 4.
  Window w;
  w.dims = {WindowDim{2, 2, 0, 1, 1, 1, false}};
  std::vector<Shape> ops = {F32Inference({7}), F32Inference({})};
  EXPECT_EQ(Text(InferReduceWindowShape(ops, w, Sig({F32Inference({}), F32Inference({})}, F32Inference({})))), "f32[4]");
}

TEST(ShapeInferenceTest, SliceConcatenatePadReverse) {
  std::vector<SliceDim> sl = {{0, 4, 1}, {1, 8, 2}};
  EXPECT_EQ(Text(InferSliceShape(F32Inference({4, 8}), sl)), "f32[4,4]");
  std::vector<SliceDim> oob = {{0, 5, 1}, {0, 8, 1}};
  EXPECT_EQ(Text(InferSliceShape(F32Inference({4, 8}), oob)),
            "ERROR: slice dim 0 [0:5:1] is invalid for size 4 of f32[4,8]; need 0 <= start <= "
            "limit <= size and stride >= 1");
  std::vector<Shape> cat = {F32Inference({2, 3}), F32Inference({5, 3})};
  EXPECT_EQ(Text(InferConcatenateShape(cat, 0)), "f32[7,3]");
  // pad 2 with low -1, high 2, interior 1 on 4: 4 - 1 + 2 + 3 * 1 = 8.
  std::vector<PaddingDim> pad = {{-1, 2, 1}};
  EXPECT_EQ(Text(InferPadShape(F32Inference({4}), F32Inference({}), pad)), "f32[8]");
  std::vector<PaddingDim> neg = {{-3, -2, 0}};
  EXPECT_EQ(Text(InferPadShape(F32Inference({4}), F32Inference({}), neg)),
            "ERROR: padding -3_-2_0 of dim 0 of f32[4] gives a negative size -1");
  EXPECT_EQ(Text(InferReverseShape(F32Inference({4, 2}), std::vector<int64_t>{1, 1})),
            "ERROR: reverse dimension 1 appears twice in {1,1}");
}

TEST(ShapeInferenceTest, DynamicSliceAndUpdate) {
  std::vector<Shape> idx = {S32({}), S32({})};
  EXPECT_EQ(Text(InferDynamicSliceShape(F32Inference({8, 8}), idx, std::vector<int64_t>{2, 8})),
            "f32[2,8]");
  EXPECT_EQ(Text(InferDynamicUpdateSliceShape(F32Inference({8, 8}), F32Inference({2, 8}), idx)), "f32[8,8]");
  std::vector<Shape> one = {S32({})};
  EXPECT_EQ(Text(InferDynamicSliceShape(F32Inference({8, 8}), one, std::vector<int64_t>{2, 8})),
            "ERROR: got 1 start indices for f32[8,8]; give one integer scalar per dim");
}

TEST(ShapeInferenceTest, GatherWithAndWithoutBatchingDims) {
  // Row gather: operand [5,8], indices [3] (index_vector_dim=1 = rank -> implicit), slice [1,8]
  // collapsing dim 0 -> [3,8].
  GatherDimensionNumbers rows{{1}, {0}, {0}, {}, {}, 1};
  EXPECT_EQ(Text(InferGatherShape(F32Inference({5, 8}), S32({3}), rows, std::vector<int64_t>{1, 8})),
            "f32[3,8]");
  // Batched: operand [2,5,8] with batch dim 0; indices [2,3,1] (batch dim 0, vector dim 2):
  // output [2,3,8] (batch and gather dims from the indices, then the offset dim 8).
  GatherDimensionNumbers batched{{2}, {1}, {1}, {0}, {0}, 2};
  EXPECT_EQ(Text(InferGatherShape(F32Inference({2, 5, 8}), S32({2, 3, 1}), batched,
                                  std::vector<int64_t>{1, 1, 8})),
            "f32[2,3,8]");
  EXPECT_EQ(Text(InferGatherShape(F32Inference({5, 8}), S32({3}), rows, std::vector<int64_t>{2, 8})),
            "ERROR: collapsed or batching dim 0 must have slice size <= 1, got 2");
  // Slice size 0 on a collapsed dim: nothing to read for a non-empty result; an empty one is fine.
  EXPECT_EQ(Text(InferGatherShape(F32Inference({5, 8}), S32({3}), rows, std::vector<int64_t>{0, 8})),
            "ERROR: collapsed or batching dim 0 has slice size 0, so the result's 24 elements have nothing to "
            "read; give it slice size 1");
  EXPECT_EQ(Text(InferGatherShape(F32Inference({5, 8}), S32({3}), rows, std::vector<int64_t>{0, 0})), "f32[3,0]");
}

TEST(ShapeInferenceTest, ScatterKeepsOperandShape) {
  ScatterDimensionNumbers dn{{1}, {0}, {0}, {}, {}, 1};
  ProgramShape add = Sig({F32Inference({}), F32Inference({})}, F32Inference({}));
  std::vector<Shape> args = {F32Inference({5, 8}), S32({3}), F32Inference({3, 8})};
  EXPECT_EQ(Text(InferScatterShape(args, add, dn)), "f32[5,8]");
  std::vector<Shape> bad = {F32Inference({5, 8}), S32({3}), F32Inference({4, 8})};
  EXPECT_EQ(Text(InferScatterShape(bad, add, dn)),
            "ERROR: updates scatter dim 0 of f32[4,8] must equal the indices bound 3");
}

TEST(ShapeInferenceTest, SortTopKAndTuples) {
  ProgramShape lt = Sig({F32Inference({}), F32Inference({}), S32({}), S32({})}, Pred({}));
  std::vector<Shape> ops = {F32Inference({4, 3}), S32({4, 3})};
  EXPECT_EQ(Text(InferSortShape(ops, 1, lt)), "(f32[4,3], s32[4,3])");
  EXPECT_EQ(Text(InferTopKShape(F32Inference({10, 5}), 2)), "(f32[10,2], s32[10,2])");
  Shape t = Shape::Tuple({F32Inference({2}), S32({})});
  EXPECT_EQ(Text(InferGetTupleElementShape(t, 1)), "s32[]");
  EXPECT_EQ(Text(InferGetTupleElementShape(t, 2)),
            "ERROR: tuple index 2 is out of range for (f32[2], s32[]) (2 elements)");
}

TEST(ShapeInferenceTest, ControlFlowSignatures) {
  Shape state = Shape::Tuple({S32({}), F32Inference({4})});
  ProgramShape cond = Sig({state}, Pred({}));
  ProgramShape body = Sig({state}, state);
  EXPECT_EQ(Text(InferWhileShape(cond, body, state)), "(s32[], f32[4])");
  EXPECT_EQ(Text(InferWhileShape(Sig({state}, S32({})), body, state)),
            "ERROR: while condition must return pred[], returns s32[]");
  ProgramShape br = Sig({F32Inference({4})}, F32Inference({}));
  std::vector<ProgramShape> branches = {br, br};
  std::vector<Shape> args = {F32Inference({4}), F32Inference({4})};
  EXPECT_EQ(Text(InferConditionalShape(Pred({}), branches, args)), "f32[]");
  std::vector<Shape> call_args = {F32Inference({4}), F32Inference({4})};
  EXPECT_EQ(Text(InferCallShape(call_args, br)),
            "ERROR: the called computation (f32[4]) -> f32[] takes 1 parameters but gets 2 "
            "arguments");
}

TEST(ShapeInferenceTest, CollectivesUseTheGroupSize) {
  std::vector<Shape> x = {F32Inference({4, 16})};
  EXPECT_EQ(Text(InferAllGatherShape(x, 1, 4)), "f32[4,64]");
  EXPECT_EQ(Text(InferReduceScatterShape(x, 1, 4)), "f32[4,4]");
  EXPECT_EQ(Text(InferReduceScatterShape(x, 0, 3)),
            "ERROR: reduce-scatter dim 0 of f32[4,16] (size 4) does not divide by the group "
            "size 3");
  EXPECT_EQ(Text(InferAllToAllArrayShape(F32Inference({8, 2}), 0, 4)), "f32[8,2]");
  EXPECT_EQ(Text(InferAllReduceShape(x)), "f32[4,16]");
  std::vector<Shape> two = {F32Inference({2}), F32Inference({2})};
  EXPECT_EQ(Text(InferAllToAllTupleShape(two)), "(f32[2], f32[2])");
}

}  // namespace
}  // namespace xs
