// Data-movement kernels against hand-computed values and their naive references.
#include "xshard/kernels/shape_ops.h"

#include <cstring>
#include <random>
#include <utility>

#include "gtest/gtest.h"

namespace xs::kernels {
namespace {

template <typename T>
std::vector<T> ValuesOps(const Array& a) {
  auto v = a.values<T>();
  return std::vector<T>(v.begin(), v.end());
}

// 0, 1, 2, ... as s32 with `dims`.
Array CountingOps(std::vector<int64_t> dims) {
  std::vector<int32_t> v(static_cast<size_t>(Product(dims)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>(i);
  return Array::FromVector<int32_t>(std::move(dims), v);
}

Array S32Scalar(int32_t v) { return Array::Scalar<int32_t>(v); }

TEST(ShapeOps, TransposeMatchesReferenceForEveryPermutationOfRank3) {
  Array a = CountingOps({2, 3, 4});
  std::vector<int64_t> perm = {0, 1, 2};
  do {
    EXPECT_EQ(Transpose(a, perm), TransposeReference(a, perm)) << JoinDims(perm);
  } while (std::next_permutation(perm.begin(), perm.end()));
  // Hand value: transpose of [[0,1,2],[3,4,5]] is [[0,3],[1,4],[2,5]].
  EXPECT_EQ(ValuesOps<int32_t>(Transpose(CountingOps({2, 3}), {1, 0})), (std::vector<int32_t>{0, 3, 1, 4, 2, 5}));
}

// 4-byte transposes run in SIMD 4 x 4 blocks with element-by-element edges: shapes around the
// block and 64-wide tile sizes (edges in i, j, both, tiles with partial blocks, rank 3 with the
// transposed pair inside), checked element by element against the definition out[j, i] = in[i, j]
// and against the naive reference; f32 bit patterns (NaN payloads, -0) come through unchanged.
TEST(ShapeOps, FourByteTransposeBlocksAndEdges) {
  for (auto [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{
           {4, 4}, {5, 7}, {64, 64}, {67, 130}, {128, 3}, {3, 128}, {1, 9}, {130, 67}}) {
    Array a = CountingOps({rows, cols});
    Array t = Transpose(a, {1, 0});
    ASSERT_EQ(t.dims(), (std::vector<int64_t>{cols, rows}));
    const auto in = a.values<int32_t>();
    const auto out = t.values<int32_t>();
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) ASSERT_EQ(out[j * rows + i], in[i * cols + j]) << rows << "x" << cols;
    }
  }
  Array r3 = CountingOps({3, 37, 70});
  for (std::vector<int64_t> perm : {std::vector<int64_t>{0, 2, 1}, {2, 1, 0}, {1, 2, 0}, {2, 0, 1}}) {
    EXPECT_EQ(Transpose(r3, perm), TransposeReference(r3, perm)) << JoinDims(perm);
  }
  const uint32_t bits[] = {0x7fc01234u, 0x80000000u, 0xff800000u, 0x3f800000u};
  std::vector<float> f(8 * 12);
  for (size_t k = 0; k < f.size(); ++k) {
    const uint32_t b = bits[k % 4] + static_cast<uint32_t>(k % 4 == 3 ? k : 0);
    std::memcpy(&f[k], &b, 4);
  }
  Array fa = Array::FromVector<float>({8, 12}, f);
  Array ft = Transpose(fa, {1, 0});
  for (int64_t i = 0; i < 8; ++i) {
    for (int64_t j = 0; j < 12; ++j) {
      EXPECT_EQ(0, std::memcmp(ft.data() + (j * 8 + i) * 4, fa.data() + (i * 12 + j) * 4, 4)) << i << "," << j;
    }
  }
}

TEST(ShapeOps, BroadcastPlacesOperandDimsAtGivenResultDims) {
  Array v = CountingOps({3});
  EXPECT_EQ(ValuesOps<int32_t>(Broadcast(v, {2, 3}, {1})), (std::vector<int32_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(ValuesOps<int32_t>(Broadcast(v, {3, 2}, {0})), (std::vector<int32_t>{0, 0, 1, 1, 2, 2}));
  EXPECT_EQ(ValuesOps<int32_t>(Broadcast(S32Scalar(7), {2, 2}, {})), (std::vector<int32_t>{7, 7, 7, 7}));
}

TEST(ShapeOps, SliceWithStridesAndReverse) {
  Array a = CountingOps({3, 5});
  EXPECT_EQ(ValuesOps<int32_t>(Slice(a, {{0, 3, 2}, {1, 5, 3}})), (std::vector<int32_t>{1, 4, 11, 14}));
  EXPECT_EQ(ValuesOps<int32_t>(Reverse(a, {1})).front(), 4);
  EXPECT_EQ(ValuesOps<int32_t>(Reverse(CountingOps({2, 2}), {0, 1})), (std::vector<int32_t>{3, 2, 1, 0}));
}

TEST(ShapeOps, ConcatenateAlongInnerDim) {
  Array a = CountingOps({2, 2}), b = CountingOps({2, 1});
  const Array* in[] = {&a, &b};
  Array c = Concatenate(in, 1);
  EXPECT_EQ(c.dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(ValuesOps<int32_t>(c), (std::vector<int32_t>{0, 1, 0, 2, 3, 1}));
}

TEST(ShapeOps, PadWithNegativeAndInteriorPaddingMatchesReference) {
  Array a = CountingOps({3, 4});
  Array value = S32Scalar(-1);
  const std::vector<std::vector<PaddingDim>> cases = {
      {{1, 2, 0}, {0, 0, 1}}, {{-1, 1, 1}, {2, -3, 2}}, {{-2, -1, 0}, {-5, 1, 1}}, {{0, 0, 0}, {-7, 0, 1}}};
  for (const auto& p : cases) EXPECT_EQ(Pad(a, value, p), PadReference(a, value, p));
  // Hand value: pad [1,2] with low=1, high=-1, interior=1 -> [-1, 1, -1] (the trailing 2 cropped).
  Array v = Array::FromVector<int32_t>({2}, {1, 2});
  EXPECT_EQ(ValuesOps<int32_t>(Pad(v, value, {{1, -1, 1}})), (std::vector<int32_t>{-1, 1, -1}));
}

TEST(ShapeOps, IotaAlongEachDim) {
  EXPECT_EQ(ValuesOps<int32_t>(*Iota(DType::kS32, {2, 3}, 0)), (std::vector<int32_t>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(ValuesOps<float>(*Iota(DType::kF32, {2, 3}, 1)), (std::vector<float>{0, 1, 2, 0, 1, 2}));
  // A middle dim: runs of the inner size, repeated for each outer index; against the definition.
  for (int dim = 0; dim < 3; ++dim) {
    const std::vector<int64_t> dims = {3, 4, 5};
    const int64_t inner = dim == 2 ? 1 : dim == 1 ? 5 : 20;
    std::vector<int32_t> want(60);
    for (int64_t i = 0; i < 60; ++i) want[i] = static_cast<int32_t>((i / inner) % dims[dim]);
    EXPECT_EQ(ValuesOps<int32_t>(*Iota(DType::kS32, dims, dim)), want) << dim;
  }
  // One long dim, as jax.random counts its bits: 0 .. n-1 in u32.
  const std::vector<uint32_t> got = ValuesOps<uint32_t>(*Iota(DType::kU32, {100000}, 0));
  ASSERT_EQ(got.size(), 100000u);
  for (uint32_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], i);
}

TEST(ShapeOps, DynamicSliceClampsOutOfRangeStarts) {
  Array a = CountingOps({4, 4});
  Array big = S32Scalar(10), neg = S32Scalar(-3);
  const Array* starts[] = {&big, &neg};
  // Start (10, -3) clamps to (4-2, 0) = (2, 0).
  EXPECT_EQ(ValuesOps<int32_t>(DynamicSlice(a, starts, {2, 2})), (std::vector<int32_t>{8, 9, 12, 13}));
}

TEST(ShapeOps, DynamicUpdateSliceClampsAndWritesInPlace) {
  Array a = CountingOps({3, 3});
  Array u = Array::FromVector<int32_t>({2, 2}, {-1, -2, -3, -4});
  Array s0 = S32Scalar(5), s1 = S32Scalar(1);
  const Array* starts[] = {&s0, &s1};
  DynamicUpdateSliceInPlace(a, u, starts);  // start (5,1) clamps to (1,1)
  EXPECT_EQ(ValuesOps<int32_t>(a), (std::vector<int32_t>{0, 1, 2, 3, -1, -2, 6, -3, -4}));
}

TEST(ShapeOps, StridedCopyHandlesBroadcastNegativeAndZeroSizeBoxes) {
  Array out(Shape(DType::kS32, {2, 3}));
  const int32_t src[] = {5, 6, 7};
  // Read the source backwards, repeated for each row.
  StridedCopy(reinterpret_cast<const std::byte*>(src + 2), out.data(), 4, {2, 3}, {0, -1}, {3, 1});
  EXPECT_EQ(ValuesOps<int32_t>(out), (std::vector<int32_t>{7, 6, 5, 7, 6, 5}));
  StridedCopy(reinterpret_cast<const std::byte*>(src), out.data(), 4, {0, 3}, {3, 1}, {3, 1});
  EXPECT_EQ(ValuesOps<int32_t>(out)[0], 7);
}

// `into` of the result's dtype and dims receives the result (garbage in it is overwritten) and the
// returned array views it; an `into` of other dims is ignored.
TEST(ShapeOps, IntoBufferReceivesTheResult) {
  const Array in = Array::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Array into = Array::Full(DType::kF32, {3, 2}, -7.0);
  Array t = Transpose(in, {1, 0}, &into);
  EXPECT_EQ(t.data(), into.data());
  const std::vector<double> want = {1, 4, 2, 5, 3, 6};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(into.GetDouble(i), want[i]) << i;
  Array wrong = Array::Full(DType::kF32, {2, 3}, -7.0);
  Array t2 = Transpose(in, {1, 0}, &wrong);
  EXPECT_NE(t2.data(), wrong.data());
  EXPECT_EQ(t2.GetDouble(1), 4.0);
  EXPECT_EQ(wrong.GetDouble(1), -7.0);
  const Array zero = Array::FromVector<float>({}, {0});
  Array padded = Array::Full(DType::kF32, {4}, -7.0);
  Array p = Pad(Array::FromVector<float>({2}, {1, 2}), zero, {PaddingDim{1, 1, 0}}, &padded);
  EXPECT_EQ(p.data(), padded.data());
  for (int i = 0; i < 4; ++i) EXPECT_EQ(padded.GetDouble(i), (std::vector<double>{0, 1, 2, 0})[i]) << i;
}

}  // namespace
}  // namespace xs::kernels
