// Seed 004's distributed GEMM built from Pallas-style kernels (all-gather kernel over 'x', tiled
// matmul, psum over 'y') on 2x2 and 4x4 meshes, f32 and bf16 inputs, against a naive product
// computed here in double.
#include "xshard/cmm/pallas_kernels.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>

namespace xs::cmm {
namespace {

using Arrays = std::vector<Array>;

// Values in [-1, 1) with 1/64 steps (exact in bf16).
Array PatternKernels(DType dtype, int64_t rows, int64_t cols, int seed) {
  Array a(DType::kF32, {rows, cols});
  auto v = a.values<float>();
  for (int64_t i = 0; i < rows * cols; ++i) {
    v[i] = static_cast<float>(((i * 29 + seed * 13) % 128) - 64) / 64.0f;
  }
  return a.Convert(dtype);
}

// Runs DistributedGemm on an nx x ny mesh for x [m, k] and w [k, n] and checks every element
// against the double product. The inputs are multiples of 1/64 in [-1, 1) (exact in bf16), so
// with f32 accumulation and an f32 psum every partial sum is exact (multiples of 2^-12 below
// 2^7): the result must equal the double product exactly, f32 and bf16 inputs alike.
void CheckGemm(int64_t nx, int64_t ny, int64_t m, int64_t k, int64_t n, DType dtype,
               MatmulTiles tiles, AllGatherKernelKind kind) {
  SCOPED_TRACE(::testing::Message() << nx << "x" << ny << " " << DTypeName(dtype) << " "
                                  << AllGatherKernelName(kind));
  const Mesh mesh = *Mesh::Create({"x", "y"}, {nx, ny});
  ClientOptions o;
  o.num_devices = nx * ny;
  o.collective_timeout = std::chrono::milliseconds(20000);
  auto client = *Client::Create(o);
  InProcessTransport transport(nx * ny, std::chrono::milliseconds(20000));
  const PartitionSpec pxy(std::vector<PartitionSpec::Entry>{{"x"}, {"y"}});
  const PartitionSpec px(std::vector<PartitionSpec::Entry>{{"x"}, {}});
  auto f =
      ShardMap(mesh, {pxy, px}, {px}, [&](ShardMapContext& ctx, Arrays in) -> StatusOr<Arrays> {
        XS_ASSIGN_OR_RETURN(Array c, DistributedGemm(ctx, transport, in[0], in[1], tiles, kind));
        return Arrays{std::move(c)};
      });
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const Array x = PatternKernels(dtype, m, k, 1), w = PatternKernels(dtype, k, n, 2);
  auto out = (*f)(*client, Arrays{x, w});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  auto c = (*out)[0].ToArray();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->dims(), (std::vector<int64_t>{m, n}));
  ASSERT_EQ(c->dtype(), DType::kF32);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double want = 0;
      for (int64_t t = 0; t < k; ++t) want += x.GetDouble(i * k + t) * w.GetDouble(t * n + j);
      ASSERT_EQ(c->GetDouble(i * n + j), want) << i << "," << j;
    }
  }
}

TEST(DistributedGemmTest, Seed004On2x2EveryAllGatherKernel) {
  for (AllGatherKernelKind kind :
       {AllGatherKernelKind::kRing, AllGatherKernelKind::kRecursiveDoubling,
        AllGatherKernelKind::kDirect}) {
    CheckGemm(2, 2, 32, 64, 32, DType::kF32, {.bm = 8, .bk = 16, .bn = 16}, kind);
    CheckGemm(2, 2, 32, 64, 32, DType::kBF16, {.bm = 8, .bk = 16, .bn = 16}, kind);
  }
}

TEST(DistributedGemmTest, Seed004On4x4) {
  CheckGemm(4, 4, 32, 64, 16, DType::kF32, {.bm = 8, .bk = 8, .bn = 8}, AllGatherKernelKind::kRing);
  CheckGemm(4, 4, 32, 64, 16, DType::kBF16, {.bm = 4, .bk = 16, .bn = 8},
            AllGatherKernelKind::kRecursiveDoubling);
}

}  // namespace
}  // namespace xs::cmm
