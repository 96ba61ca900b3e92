// The Pallas-style kernel API on one device: seed 004's tiled matmul against naive products
// computed here in double, the block pipeline (revisited output blocks, program ids, When) against
// hand-computed sums, and the errors for bad specs, bad indices and semaphores left or waited on.
#include "xshard/cmm/kernel.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "xshard/cmm/kernel_ops.h"
#include "xshard/cmm/pallas_kernels.h"
#include "xshard/cmm/remote_copy.h"

namespace xs::cmm {
namespace {

using ::testing::HasSubstr;

// Deterministic values in [-1, 1) with 1/64 steps (exact in bf16 and f32).
Array Pattern(DType dtype, int64_t rows, int64_t cols, int seed) {
  Array a(DType::kF32, {rows, cols});
  auto v = a.values<float>();
  for (int64_t i = 0; i < rows * cols; ++i) {
    v[i] = static_cast<float>(((i * 37 + seed * 11) % 128) - 64) / 64.0f;
  }
  return a.Convert(dtype);
}

// x @ y in double from the arrays' own values, and sum |x||y| per element (the error scale).
void Naive(const Array& x, const Array& y, std::vector<double>& out, std::vector<double>& scale) {
  const int64_t m = x.dims()[0], k = x.dims()[1], n = y.dims()[1];
  out.assign(m * n, 0);
  scale.assign(m * n, 0);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t t = 0; t < k; ++t) {
        const double p = x.GetDouble(i * k + t) * y.GetDouble(t * n + j);
        out[i * n + j] += p;
        scale[i * n + j] += std::abs(p);
      }
    }
  }
}

TEST(TiledMatmulTest, F32MatchesTheNaiveProductExactlyOnDyadicValues) {
  // grid (2, 5, 3). Every product is a multiple of 2^-12 of magnitude <= 1 and every partial sum
  // stays below 2^7, so f32 holds each sum exactly whatever the blocking: the result must equal
  // the double product bit for bit.
  const Array x = Pattern(DType::kF32, 64, 96, 1), y = Pattern(DType::kF32, 96, 80, 2);
  auto c = TiledMatmul(x, y, {.bm = 32, .bk = 32, .bn = 16});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->dims(), (std::vector<int64_t>{64, 80}));
  std::vector<double> want, scale;
  Naive(x, y, want, scale);
  for (int64_t i = 0; i < 64 * 80; ++i) ASSERT_EQ(c->GetDouble(i), want[i]) << "element " << i;
}

TEST(TiledMatmulTest, F32MatchesTheNaiveProductOnIrregularValues) {
  // sin-shaped values: f32 rounding of 48-term sums, within 1e-6 of sum |x||y|.
  Array x(DType::kF32, {24, 48}), y(DType::kF32, {48, 40});
  for (int64_t i = 0; i < x.num_elements(); ++i) x.values<float>()[i] = std::sin(0.37 * i);
  for (int64_t i = 0; i < y.num_elements(); ++i) y.values<float>()[i] = std::cos(0.11 * i) * 3;
  auto c = TiledMatmul(x, y, {.bm = 8, .bk = 16, .bn = 20});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  std::vector<double> want, scale;
  Naive(x, y, want, scale);
  for (int64_t i = 0; i < 24 * 40; ++i) {
    ASSERT_NEAR(c->GetDouble(i), want[i], 1e-6 * scale[i]) << "element " << i;
  }
}

TEST(TiledMatmulTest, Bf16InputsAccumulateInF32) {
  // The inputs are exact bf16 values (1/64 steps); with f32 accumulation the 128-term sums are
  // exact (as above), so the f32 result equals the double product. A bf16 accumulator would be
  // off by up to ~2^-8 of the sum.
  const Array x = Pattern(DType::kBF16, 32, 128, 3), y = Pattern(DType::kBF16, 128, 48, 4);
  auto c = TiledMatmul(x, y, {.bm = 16, .bk = 32, .bn = 16});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->dtype(), DType::kF32);
  std::vector<double> want, scale;
  Naive(x, y, want, scale);
  for (int64_t i = 0; i < 32 * 48; ++i) ASSERT_EQ(c->GetDouble(i), want[i]) << "element " << i;
  // bf16 output: the exact sum rounded once to bf16, within half an ulp (2^-9 relative; stated
  // tolerance |err| <= |want| / 256).
  auto cb = TiledMatmul(x, y, {.bm = 16, .bk = 32, .bn = 16}, DType::kBF16);
  ASSERT_TRUE(cb.ok()) << cb.status().ToString();
  for (int64_t i = 0; i < 32 * 48; ++i) {
    ASSERT_NEAR(cb->GetDouble(i), want[i], std::abs(want[i]) / 256);
  }
}

TEST(TiledMatmulTest, BlocksThatDoNotDivideAreAnErrorNamingTheSpecAndDim) {
  const Array x = Pattern(DType::kF32, 64, 96, 1), y = Pattern(DType::kF32, 96, 80, 2);
  auto c = TiledMatmul(x, y, {.bm = 32, .bk = 40, .bn = 16});
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(),
              HasSubstr("kernel 'tiled_matmul' on device 0: in_specs[0]: block shape (32, 40) "
                        "does not divide the array f32[64,96]: dim 1 has 96 elements, not a "
                        "multiple of 40; pick block dims that divide the array dims"));
  auto k = TiledMatmul(x, Pattern(DType::kF32, 95, 80, 2), {});
  ASSERT_FALSE(k.ok());
  EXPECT_THAT(k.status().message(), HasSubstr("needs x [m, k] and y [k, n] with the same k"));
}

// Row sums of x [4, 12] over a (2, 3) grid: the output block (2, 1) is revisited for every j and
// written back when i changes; sums checked against values computed by hand.
TEST(PallasCallTest, RevisitedOutputBlocksAccumulateAcrossTheGrid) {
  Array x = Array::Iota(DType::kF32, {4, 12});
  std::vector<int64_t> seen;
  auto body = [&](KernelContext& k) -> Status {
    seen.push_back(k.ProgramId(0) * 10 + k.ProgramId(1));
    EXPECT_EQ(k.NumPrograms(1), 3);
    XS_RETURN_IF_ERROR(When(k.ProgramId(1) == 0, [&] { return Fill(k.out(0), 0); }));
    Array block = k.in(0).Load();
    Array acc = k.out(0).Load();
    for (int r = 0; r < 2; ++r) {
      for (int c = 0; c < 4; ++c) acc.values<float>()[r] += block.values<float>()[r * 4 + c];
    }
    return k.out(0).Store(acc);
  };
  auto kernel = PallasCall(body, {2, 3},
                           {BlockSpec::Blocked({2, 4},
                                               [](std::span<const int64_t> g) {
                                                 return Index{g[0], g[1]};
                                               })},
                           {BlockSpec::Blocked({2, 1},
                                               [](std::span<const int64_t> g) {
                                                 return Index{g[0], 0};
                                               })},
                           {Shape(DType::kF32, {4, 1})});
  ASSERT_TRUE(kernel.ok()) << kernel.status().ToString();
  auto out = kernel->Run({x});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  // Row r holds 12r .. 12r + 11: sum = 144r + 66.
  EXPECT_EQ((*out)[0], Array::FromVector<float>({4, 1}, {66, 210, 354, 498}));
  EXPECT_EQ(seen, (std::vector<int64_t>{0, 1, 2, 10, 11, 12}));  // last grid axis fastest
}

TEST(PallasCallTest, IndexMapsOutOfRangeAreAnErrorWithThePointAndTheRange) {
  auto kernel = PallasCall([](KernelContext&) { return OkStatus(); }, {2, 1},
                           {BlockSpec::Blocked({2, 4},
                                               [](std::span<const int64_t> g) {
                                                 return Index{g[0] + 1, 0};
                                               })},
                           {}, {});
  ASSERT_TRUE(kernel.ok());
  auto out = kernel->Run({Array::Iota(DType::kF32, {4, 4})});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(),
              HasSubstr("kernel 'kernel' on device 0 at grid point (1, 0): in_specs[0]: the index "
                        "map gave block index (2, 0) at grid point (1, 0), but f32[4,4] in blocks "
                        "of (2, 4) has 2 x 1 blocks; the index map must return 2 indices in "
                        "[0, 2) x [0, 1)"));
}

TEST(PallasCallTest, SpecErrorsAtCallTime) {
  auto nop = [](KernelContext&) { return OkStatus(); };
  auto g = PallasCall(nop, {2, 0}, {}, {}, {});
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(g.status().message(), HasSubstr("grid (2, 0) has a dim 0; every grid dim must be"));
  auto r = PallasCall(nop, {1}, {},
                      {BlockSpec::Blocked({2}, [](std::span<const int64_t>) { return Index{0}; })},
                      {Shape(DType::kF32, {2, 2})});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(),
              HasSubstr("out_specs[0]: block shape (2) has rank 1 but the array is f32[2,2]; give "
                        "one block dim per array dim"));
  auto n = PallasCall(nop, {1}, {}, {BlockSpec::Any()}, {});
  ASSERT_FALSE(n.ok());
  EXPECT_THAT(n.status().message(), HasSubstr("1 out specs for 0 out shapes"));
}

TEST(PallasCallTest, BadProgramIdAxisAndRefIndexFailTheCall) {
  auto kernel = PallasCall(
      [](KernelContext& k) {
        (void)k.ProgramId(3);
        return OkStatus();
      },
      {2, 3}, {}, {}, {});
  ASSERT_TRUE(kernel.ok());
  auto out = kernel->Run({});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(),
              HasSubstr("at grid point (0, 0): ProgramId(3): the grid (2, 3) has axes 0..1"));
  auto refs = PallasCall([](KernelContext& k) { return Fill(k.scratch(1), 0); }, {1}, {}, {}, {},
                         {ScratchShape::Buffer(DType::kF32, {2})});
  ASSERT_TRUE(refs.ok());
  auto r = refs->Run({});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("scratch(1): the kernel has 1 scratch refs (0..0)"));
}

TEST(PallasCallTest, LocalCopiesAndSemaphoresWithoutPeers) {
  // Copies in[0] rows into out[0] reversed with local DMAs; then the semaphore errors.
  auto kernel = PallasCall(
      [](KernelContext& k) -> Status {
        for (int64_t r = 0; r < 3; ++r) {
          XS_ASSIGN_OR_RETURN(Ref src, k.in(0).At({Ds{r, 1}}));
          XS_ASSIGN_OR_RETURN(Ref dst, k.out(0).At({Ds{2 - r, 1}}));
          XS_ASSIGN_OR_RETURN(AsyncCopy c, MakeAsyncCopy(src, dst, k.sem(0)));
          XS_RETURN_IF_ERROR(c.Start());
          XS_RETURN_IF_ERROR(c.Wait());
        }
        XS_RETURN_IF_ERROR(SemaphoreSignal(k.sem(1), 2));
        return SemaphoreWait(k.sem(1), 2);
      },
      {1}, {BlockSpec::Any()}, {BlockSpec::Any()}, {Shape(DType::kF32, {3, 2})},
      {ScratchShape::Semaphores(SemaphoreType::kDma),
       ScratchShape::Semaphores(SemaphoreType::kRegular)});
  ASSERT_TRUE(kernel.ok());
  auto out = kernel->Run({Array::Iota(DType::kF32, {3, 2})});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)[0], Array::FromVector<float>({3, 2}, {4, 5, 2, 3, 0, 1}));

  auto left = PallasCall([](KernelContext& k) { return SemaphoreSignal(k.sem(0)); }, {1}, {}, {},
                         {}, {ScratchShape::Semaphores(SemaphoreType::kRegular)});
  auto l = left->Run({});
  ASSERT_FALSE(l.ok());
  EXPECT_THAT(l.status().message(),
              HasSubstr("kernel 'kernel' on device 0: semaphore 0 (REGULAR) ends the kernel at 1, "
                        "not 0; wait for every signal and copy before the kernel ends"));
  auto forever = PallasCall([](KernelContext& k) { return SemaphoreWait(k.sem(0), 1); }, {1}, {},
                            {}, {}, {ScratchShape::Semaphores(SemaphoreType::kRegular)});
  auto f = forever->Run({});
  ASSERT_FALSE(f.ok());
  EXPECT_THAT(f.status().message(),
              HasSubstr("SemaphoreWait(semaphore 0 (REGULAR), 1) would wait forever: semaphore 0 "
                        "(REGULAR) is at 0 and needs 1, and the kernel runs without peers"));
}

TEST(PallasCallTest, RemoteCopiesNeedAMeshAndInputsAreReadOnly) {
  auto kernel = PallasCall(
      [](KernelContext& k) -> Status {
        auto into_input = MakeAsyncCopy(k.out(0), k.in(0), k.sem(0));
        EXPECT_FALSE(into_input.ok());
        EXPECT_THAT(into_input.status().message(), HasSubstr("inputs are read-only"));
        EXPECT_THAT(Fill(k.in(0), 1).message(),
                    HasSubstr("Fill into in[0] f32[2] at element 0: inputs are read-only"));
        EXPECT_THAT(k.in(0).Store(Array::Iota(DType::kF32, {2})).message(),
                    HasSubstr("Store into in[0] f32[2] at element 0: inputs are read-only"));
        auto bad_at = k.in(0).At({Ds{1, 2}});
        EXPECT_FALSE(bad_at.ok());
        EXPECT_THAT(bad_at.status().message(),
                    HasSubstr("slice ds(1, 2) leaves dim 0 of size 2; start and start + size "
                              "must lie in [0, 2]"));
        return MakeAsyncRemoteCopy(k.in(0), k.out(0), k.sem(0), k.sem(1), DeviceId::Logical(1))
            .status();
      },
      {1}, {BlockSpec::Any()}, {BlockSpec::Any()}, {Shape(DType::kF32, {2})},
      {ScratchShape::Semaphores(SemaphoreType::kDma, 2)});
  auto out = kernel->Run({Array::Iota(DType::kF32, {2})});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(),
              HasSubstr("kernel 'kernel' on device 0: device id logical 1 needs a mesh"));
}

TEST(PallasCallTest, SemaphoreKindsAndPeersWithoutATransport) {
  // Device 1 of a 2x2 mesh, no transport: copies to itself work (device_id may name this
  // device), copies to a peer, barriers, a REGULAR semaphore for a copy or a SemaphoreWait on a
  // DMA semaphore are errors naming the rule.
  const Mesh mesh = *Mesh::Create({"x", "y"}, {2, 2});
  auto kernel = PallasCall(
      [](KernelContext& k) -> Status {
        XS_ASSIGN_OR_RETURN(AsyncCopy self, MakeAsyncRemoteCopy(k.in(0), k.out(0), k.sem(0),
                                                                k.sem(1), DeviceId::Mesh({0, 1})));
        XS_RETURN_IF_ERROR(self.Start());
        XS_RETURN_IF_ERROR(self.Wait());
        auto peer =
            MakeAsyncRemoteCopy(k.in(0), k.out(0), k.sem(0), k.sem(1), DeviceId::Axes({{"x", 1}}));
        EXPECT_FALSE(peer.ok());
        EXPECT_THAT(peer.status().message(),
                    HasSubstr("kernel 'kernel' on device 1 (x=0, y=1): a remote copy to {'x': 1} "
                              "needs a RemoteTransport in PallasOptions::transport"));
        auto regular = MakeAsyncCopy(k.in(0), k.out(0), k.sem(2));
        EXPECT_FALSE(regular.ok());
        EXPECT_THAT(regular.status().message(),
                    HasSubstr("MakeAsyncCopy needs a DMA semaphore; got semaphore 2 (REGULAR)"));
        Status dma_wait = SemaphoreWait(k.sem(0), 1);
        EXPECT_THAT(dma_wait.message(),
                    HasSubstr("SemaphoreWait(semaphore 0 (DMA), 1) needs a REGULAR semaphore"));
        EXPECT_THAT(k.Barrier().message(), HasSubstr("Barrier needs a RemoteTransport"));
        return OkStatus();
      },
      {1}, {BlockSpec::Any()}, {BlockSpec::Any()}, {Shape(DType::kF32, {2})},
      {ScratchShape::Semaphores(SemaphoreType::kDma, 2),
       ScratchShape::Semaphores(SemaphoreType::kRegular)});
  ASSERT_TRUE(kernel.ok());
  auto out = kernel->RunOn(&mesh, 1, {Array::FromVector<float>({2}, {7, 8})});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)[0], Array::FromVector<float>({2}, {7, 8}));
}

TEST(PallasCallTest, TheTransportMustCoverTheMesh) {
  const Mesh mesh = *Mesh::Create({"x", "y"}, {2, 2});
  InProcessTransport three(3);
  PallasOptions options;
  options.transport = &three;
  auto kernel = PallasCall([](KernelContext&) { return OkStatus(); }, {1}, {}, {}, {}, {}, options);
  ASSERT_TRUE(kernel.ok());
  auto out = kernel->RunOn(&mesh, 0, {});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(),
              HasSubstr("kernel 'kernel' on device 0 (x=0, y=0): the transport has 3 devices but "
                        "the mesh Mesh('x': 2, 'y': 2) has 4; make one transport per mesh"));
}

}  // namespace
}  // namespace xs::cmm
