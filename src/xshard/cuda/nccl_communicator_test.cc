// NcclCommunicator: XLA reducers and dtypes onto NCCL's (worked out from NCCL's and XLA's tables),
// option errors before anything is loaded, and with a GPU a one-rank communicator per GPU.
#include <gtest/gtest.h>

#ifdef XSHARD_WITH_CUDA

#include <thread>

#include "xshard/cuda/nccl_communicator_internal.h"
#include "xshard/cuda/platform.h"

namespace xs::cuda {
namespace {

TEST(NcclMapping, TypesWithoutAnNcclTypeAreNamed) {
  EXPECT_EQ(NcclType(DType::kBF16), ncclBfloat16);
  EXPECT_EQ(NcclType(DType::kPred), ncclUint8);
  EXPECT_EQ(NcclType(DType::kS64), ncclInt64);
  EXPECT_FALSE(NcclType(DType::kS16).has_value());
  EXPECT_FALSE(NcclType(DType::kC64).has_value());
  StatusOr<ncclRedOp_t> r = NcclReduction(ReductionKind::kSum, DType::kU16, "psum");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "psum: NCCL has no element type for u16; convert to a wider type first");
}

TEST(NcclMapping, PredAndOrBecomeMinMaxButIntegerBitwiseIsRefused) {
  EXPECT_EQ(*NcclReduction(ReductionKind::kAnd, DType::kPred, "x"), ncclMin);
  EXPECT_EQ(*NcclReduction(ReductionKind::kOr, DType::kPred, "x"), ncclMax);
  EXPECT_EQ(*NcclReduction(ReductionKind::kSum, DType::kPred, "x"), ncclMax);
  EXPECT_EQ(*NcclReduction(ReductionKind::kProduct, DType::kF32, "x"), ncclProd);
  StatusOr<ncclRedOp_t> r = NcclReduction(ReductionKind::kOr, DType::kS32, "any");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(r.status().message(),
            "any: NCCL has no bitwise or for s32 (only pred's and / or map onto min / max)");
  EXPECT_FALSE(NcclReduction(ReductionKind::kAnd, DType::kF32, "x").ok());
}

TEST(NcclCommunicator, OptionErrorsComeFirst) {
  NcclOptions o;
  StatusOr<std::unique_ptr<NcclCommunicator>> c = NcclCommunicator::Create(o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), "an NCCL communicator needs one GPU and one compute stream per "
                                  "local rank; got 0 GPUs and 0 streams");
  o.gpus = {0};
  o.streams = {nullptr};
  o.num_ranks = 4;
  c = NcclCommunicator::Create(o);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("needs share_id"), std::string::npos) << c.status().message();
  o.first_rank = 4;
  c = NcclCommunicator::Create(o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), "NCCL ranks 4..4 do not fit a communicator of 4 ranks");
}

// With GPUs: one rank per GPU in this process; an all-reduce sum of rank-valued inputs and an
// all-gather, checked against values worked out by hand.
TEST(NcclCommunicatorGpu, AllReduceAndAllGatherOverEveryGpu) {
  StatusOr<int> gpus = DeviceCount();
  if (!gpus.ok()) {
    GTEST_SKIP() << NoGpuReason();
  }
  const int n = *gpus;
  NcclOptions o;
  std::vector<float*> in(n), out(n), gathered(n);
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(cudaSetDevice(r), cudaSuccess);
    cudaStream_t s;
    ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    o.gpus.push_back(r);
    o.streams.push_back(s);
    cudaMalloc(&in[r], 64 * sizeof(float));
    cudaMalloc(&out[r], 64 * sizeof(float));
    cudaMalloc(&gathered[r], 64 * n * sizeof(float));
    std::vector<float> v(64, static_cast<float>(r + 1));
    cudaMemcpy(in[r], v.data(), 64 * sizeof(float), cudaMemcpyHostToDevice);
  }
  auto comm = NcclCommunicator::Create(o);
  ASSERT_TRUE(comm.ok()) << comm.status().message();
  std::vector<Status> st(n);
  std::vector<std::thread> threads;
  const int64_t dims[] = {64}, gdims[] = {64 * n};
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      cudaSetDevice(r);
      const ConstBufferView x{reinterpret_cast<const std::byte*>(in[r]), DType::kF32, dims};
      st[r] = (*comm)->AllReduce(CollectiveCall(r), DeviceGroups::All(n), x,
                                 {reinterpret_cast<std::byte*>(out[r]), DType::kF32, dims},
                                 ReductionKind::kSum);
      if (st[r].ok()) {
        st[r] = (*comm)->AllGather(CollectiveCall(r), DeviceGroups::All(n), x,
                                   {reinterpret_cast<std::byte*>(gathered[r]), DType::kF32, gdims}, 0);
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(st[r].ok()) << st[r].message();
    cudaStreamSynchronize(o.streams[r]);
    std::vector<float> sum(64), all(64 * n);
    cudaMemcpy(sum.data(), out[r], 64 * sizeof(float), cudaMemcpyDeviceToHost);
    cudaMemcpy(all.data(), gathered[r], 64 * n * sizeof(float), cudaMemcpyDeviceToHost);
    EXPECT_EQ(sum[63], n * (n + 1) / 2.0f);
    for (int j = 0; j < n; ++j) EXPECT_EQ(all[64 * j + 5], static_cast<float>(j + 1));
  }
}

}  // namespace
}  // namespace xs::cuda

#else

TEST(NcclCommunicator, SkippedWithoutCuda) { GTEST_SKIP() << "this xshard was built without CUDA"; }

#endif  // XSHARD_WITH_CUDA
