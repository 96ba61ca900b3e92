// Piece geometry and box copies.
#include "xshard/comm/chunking.h"

#include <gtest/gtest.h>

#include "xshard/core/array.h"

namespace xs {
namespace {

TEST(ChunkingTest, FlatPiecesUseCeilDivisionWithShortTail) {
  // 10 floats in 4 pieces of ceil(10/4) = 3: [0,3) [3,6) [6,9) [9,10).
  const Chunking ch = Chunking::Flat(10, 4, 4);
  EXPECT_EQ(ch.Start(0), 0);
  EXPECT_EQ(ch.Len(0), 12);
  EXPECT_EQ(ch.Start(3), 36);
  EXPECT_EQ(ch.Len(3), 4);
  // 2 elements in 4 pieces: the last two are empty.
  const Chunking small = Chunking::Flat(2, 4, 4);
  EXPECT_EQ(small.Len(1), 4);
  EXPECT_EQ(small.Len(2), 0);
  EXPECT_EQ(small.Len(3), 0);
}

TEST(ChunkingTest, AlongDimPiecesAreStridedRuns) {
  // [2, 6] f32 split along dim 1 in 3: each piece is 2 runs of 2 floats, 24 bytes apart.
  const int64_t dims[] = {2, 6};
  const Chunking ch = Chunking::AlongDim(dims, 1, 3, 4);
  EXPECT_EQ(ch.outer, 2);
  EXPECT_EQ(ch.stride, 24);
  EXPECT_EQ(ch.Start(2), 16);
  EXPECT_EQ(ch.Len(2), 8);
  Array full = Array::Iota(DType::kF32, {2, 6});
  Array piece(DType::kF32, {2, 2});
  CopyChunk(ch, 2, {piece.data(), true}, {full.data(), false});
  EXPECT_EQ(piece, Array::FromVector<float>({2, 2}, {4, 5, 10, 11}));
}

TEST(ChunkingTest, CopyBoxMovesASubBoxBetweenShapes) {
  // Box [1:3, 0:2] of a 3x4 iota into position [0:2, 2:4] of a 2x5 zero array.
  Array src = Array::Iota(DType::kS32, {3, 4});
  Array dst(DType::kS32, {2, 5});
  const int64_t src_dims[] = {3, 4}, src_start[] = {1, 0};
  const int64_t dst_dims[] = {2, 5}, dst_start[] = {0, 2}, box[] = {2, 2};
  CopyBox(src.data(), src_dims, src_start, dst.data(), dst_dims, dst_start, box, 4);
  EXPECT_EQ(dst, Array::FromVector<int32_t>({2, 5}, {0, 0, 4, 5, 0, 0, 0, 8, 9, 0}));
}

TEST(ChunkingTest, CopyBoxOfFullTrailingDimsIsOneRun) {
  Array src = Array::Iota(DType::kF32, {4, 2, 3});
  Array dst(DType::kF32, {2, 2, 3});
  const int64_t src_dims[] = {4, 2, 3}, src_start[] = {2, 0, 0};
  const int64_t dst_dims[] = {2, 2, 3}, dst_start[] = {0, 0, 0}, box[] = {2, 2, 3};
  CopyBox(src.data(), src_dims, src_start, dst.data(), dst_dims, dst_start, box, 4);
  EXPECT_EQ(dst, src.Slice({2, 0, 0}, {2, 2, 3}));
}

TEST(ChunkingTest, StreamCopyHandlesUnalignedHeadsAndTails) {
  // Offsets 0..17 and lengths around the 64-byte block size and the stream threshold.
  std::vector<std::byte> src(kStreamThreshold + 300), dst(kStreamThreshold + 300);
  for (size_t i = 0; i < src.size(); ++i) src[i] = std::byte{static_cast<uint8_t>(i * 7 + 3)};
  for (int64_t offset : {0, 1, 5, 16, 17}) {
    for (int64_t n : {int64_t{0}, int64_t{63}, int64_t{64}, int64_t{200}, kStreamThreshold + 1}) {
      std::fill(dst.begin(), dst.end(), std::byte{0});
      CopyBytes(dst.data() + offset, src.data() + 3, n);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(dst[offset + i], src[3 + i]) << offset << " " << n;
      ASSERT_EQ(dst[offset + n], std::byte{0}) << "wrote past the end";
      StreamCopy(dst.data() + offset, src.data() + 1, n);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(dst[offset + i], src[1 + i]) << offset << " " << n;
    }
  }
}

}  // namespace
}  // namespace xs
