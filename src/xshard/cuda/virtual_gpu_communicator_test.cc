// The virtual-GPU communicator: every generated kernel compiles with NVRTC for sm_90 (no GPU
// needed), argument errors come before any GPU work, and with a GPU the collectives of 8 virtual
// devices equal the CPU InProcessCommunicator's results.
#include <gtest/gtest.h>

#ifdef XSHARD_WITH_CUDA

#include <functional>
#include <thread>

#include "xshard/comm/inprocess_communicator.h"
#include "xshard/cuda/platform.h"
#include "xshard/cuda/virtual_gpu_communicator.h"
#include "xshard/cuda/virtual_gpu_kernels.h"

namespace xs::cuda {
namespace {

TEST(VirtualGpuKernels, EverySourceCompilesForSm90) {
  const std::vector<KernelSource> sources = AllCollectiveSources();
  // The copy kernel, plus 6 reducers over pred and 8 integer types and 4 over 4 float types.
  EXPECT_EQ(sources.size(), 1u + 9 * 6 + 4 * 4);
  for (const KernelSource& src : sources) {
    StatusOr<std::shared_ptr<const std::string>> cubin = CompileToCubin(src, 9, 0);
    ASSERT_TRUE(cubin.ok()) << cubin.status().message() << "\n" << src.code;
    EXPECT_GT((*cubin)->size(), 0u);
  }
}

TEST(VirtualGpuKernels, ReduceSourceRejectsWhatXlaRejects) {
  StatusOr<KernelSource> s = CollectiveReduceSource(ReductionKind::kAnd, DType::kF32);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  s = CollectiveReduceSource(ReductionKind::kSum, DType::kC64);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("c64"), std::string::npos) << s.status().message();
}

std::unique_ptr<VirtualGpuCommunicator> MakeComm(int n) {
  VirtualGpuOptions o;
  o.streams.assign(n, nullptr);
  o.timeout = std::chrono::milliseconds(2000);
  StatusOr<std::unique_ptr<VirtualGpuCommunicator>> c = VirtualGpuCommunicator::Create(o);
  EXPECT_TRUE(c.ok()) << c.status().message();
  return c.ok() ? std::move(*c) : nullptr;
}

TEST(VirtualGpuCommunicator, CreateNeedsOneToSixtyFourRanks) {
  VirtualGpuOptions o;
  StatusOr<std::unique_ptr<VirtualGpuCommunicator>> c = VirtualGpuCommunicator::Create(o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            "a virtual-GPU communicator needs 1 to 64 ranks (one compute stream each), got 0");
}

TEST(VirtualGpuCommunicator, ArgumentErrorsNeedNoGpu) {
  auto comm = MakeComm(4);
  ASSERT_NE(comm, nullptr);
  std::vector<float> a(8), b(8);
  const int64_t in_dims[] = {8}, bad_out[] = {8};
  ConstBufferView in{reinterpret_cast<const std::byte*>(a.data()), DType::kF32, in_dims};
  BufferView out{reinterpret_cast<std::byte*>(b.data()), DType::kF32, bad_out};
  // all-gather of f32[8] over 4 ranks must produce f32[32].
  Status s = comm->AllGather(CollectiveCall(0, "ag"), DeviceGroups::All(4), in, out, 0);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("ag"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("[32]"), std::string::npos) << s.message();
  comm->Reset();
  s = comm->AllReduce(CollectiveCall(1, "and"), DeviceGroups::All(4), in, out, ReductionKind::kAnd);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  comm->Reset();
  s = comm->AllReduce(CollectiveCall(7, "psum"), DeviceGroups::All(4), in, out, ReductionKind::kSum);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "psum: rank 7 is out of range for a communicator of 4 ranks");
  s = comm->AllReduce(CollectiveCall(0, "psum"), DeviceGroups::All(2), in, out, ReductionKind::kSum);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("built for 2 devices but the communicator has 4"), std::string::npos)
      << s.message();
  comm->Reset();
  s = comm->Finish(0, 5);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
}

// --- With a GPU: 8 virtual devices against the CPU communicator. ---

constexpr int kRanks = 8;

// Runs body(rank) on kRanks threads and returns the first error.
Status OnRanks(const std::function<Status(int)>& body) {
  std::vector<Status> st(kRanks);
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) threads.emplace_back([&, r] { st[r] = body(r); });
  for (auto& t : threads) t.join();
  for (const Status& s : st) {
    if (!s.ok()) return s;
  }
  return OkStatus();
}

// One collective run through both communicators on the same inputs (input r holds values
// r * 100 + i); the outputs must be equal bit for bit (the same left-to-right order).
using Call = std::function<Status(Communicator&, int rank, ConstBufferView, BufferView)>;
void Compare(DType dtype, std::vector<int64_t> in_dims, std::vector<int64_t> out_dims, const Call& call) {
  if (!DeviceCount().ok()) {
    GTEST_SKIP() << NoGpuReason();
  }
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  const Shape in_shape(dtype, in_dims), out_shape(dtype, out_dims);
  std::vector<Array> ins, cpu_outs, gpu_outs;
  for (int r = 0; r < kRanks; ++r) {
    Array x = Array::Iota(DType::kF64, in_dims);
    for (int64_t i = 0; i < x.num_elements(); ++i) x.SetDouble(i, r * 100 + i % 97 - 40);
    ins.push_back(x.Convert(dtype));
    cpu_outs.push_back(Array::Full(dtype, out_dims, 0));
    gpu_outs.push_back(Array::Full(dtype, out_dims, 0));
  }
  InProcessOptions cpu_options;
  cpu_options.num_ranks = kRanks;
  auto cpu = InProcessCommunicator::Create(cpu_options);
  ASSERT_TRUE(cpu.ok());
  Status s = OnRanks([&](int r) {
    return call(**cpu, r, ConstBufferView::Of(ins[r]), BufferView::Of(cpu_outs[r]));
  });
  ASSERT_TRUE(s.ok()) << s.message();
  std::vector<cudaStream_t> streams(kRanks);
  std::vector<void*> din(kRanks), dout(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&din[r], std::max<int64_t>(16, in_shape.byte_size())), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&dout[r], std::max<int64_t>(16, out_shape.byte_size())), cudaSuccess);
    cudaMemcpy(din[r], ins[r].data(), in_shape.byte_size(), cudaMemcpyHostToDevice);
  }
  VirtualGpuOptions o;
  o.streams = streams;
  auto gpu = VirtualGpuCommunicator::Create(o);
  ASSERT_TRUE(gpu.ok()) << gpu.status().message();
  s = OnRanks([&](int r) {
    cudaSetDevice(0);
    return call(**gpu, r, {static_cast<const std::byte*>(din[r]), dtype, in_dims},
                {static_cast<std::byte*>(dout[r]), dtype, out_dims});
  });
  ASSERT_TRUE(s.ok()) << s.message();
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(cudaStreamSynchronize(streams[r]), cudaSuccess);
    cudaMemcpy(gpu_outs[r].data(), dout[r], out_shape.byte_size(), cudaMemcpyDeviceToHost);
    EXPECT_EQ(std::memcmp(gpu_outs[r].data(), cpu_outs[r].data(), out_shape.byte_size()), 0)
        << "rank " << r;
    cudaFree(din[r]);
    cudaFree(dout[r]);
    cudaStreamDestroy(streams[r]);
  }
}

const DeviceGroups kPairs = *DeviceGroups::Create({{0, 1}, {2, 3}, {4, 5}, {6, 7}}, kRanks, "t");

TEST(VirtualGpuCollectives, AllReduceSumBf16EqualsCpu) {
  Compare(DType::kBF16, {1000}, {1000}, [](Communicator& c, int r, ConstBufferView in, BufferView out) {
    return c.AllReduce(CollectiveCall(r), DeviceGroups::All(kRanks), in, out, ReductionKind::kSum);
  });
}

// Over 256 KiB per member: the two-phase path (slices of 8751 f32 = 16-byte multiples, the last
// one short).
TEST(VirtualGpuCollectives, LargeAllReduceInTwoPhasesEqualsCpu) {
  Compare(DType::kF32, {70001}, {70001}, [](Communicator& c, int r, ConstBufferView in, BufferView out) {
    return c.AllReduce(CollectiveCall(r), DeviceGroups::All(kRanks), in, out, ReductionKind::kSum);
  });
}

TEST(VirtualGpuCollectives, AllReduceMaxF32InPairsEqualsCpu) {
  Compare(DType::kF32, {33, 7}, {33, 7}, [](Communicator& c, int r, ConstBufferView in, BufferView out) {
    return c.AllReduce(CollectiveCall(r), kPairs, in, out, ReductionKind::kMax);
  });
}

TEST(VirtualGpuCollectives, ReduceScatterS32EqualsCpu) {
  Compare(DType::kS32, {3, 16}, {3, 2}, [](Communicator& c, int r, ConstBufferView in, BufferView out) {
    return c.ReduceScatter(CollectiveCall(r), DeviceGroups::All(kRanks), in, out, 1, ReductionKind::kProduct);
  });
}

TEST(VirtualGpuCollectives, AllGatherAlongInnerDimEqualsCpu) {
  Compare(DType::kF16, {5, 6}, {5, 48}, [](Communicator& c, int r, ConstBufferView in, BufferView out) {
    return c.AllGather(CollectiveCall(r), DeviceGroups::All(kRanks), in, out, 1);
  });
}

TEST(VirtualGpuCollectives, AllToAllEqualsCpu) {
  Compare(DType::kF32, {16, 3}, {2, 24}, [](Communicator& c, int r, ConstBufferView in, BufferView out) {
    return c.AllToAll(CollectiveCall(r), DeviceGroups::All(kRanks), in, out, 0, 1);
  });
}

TEST(VirtualGpuCollectives, AsyncCollectivePermuteEqualsCpu) {
  const PermutePairs ring = *PermutePairs::Create({{0, 1}, {1, 2}, {2, 3}, {3, 0}, {5, 6}}, kRanks, "t");
  Compare(DType::kF64, {257}, {257}, [&](Communicator& c, int r, ConstBufferView in, BufferView out) {
    CollectiveCall call(r, "cp", 2);
    uint64_t handle = 0;
    call.async_handle = &handle;
    XS_RETURN_IF_ERROR(c.CollectivePermute(call, ring, in, out));
    return c.Finish(r, handle);
  });
}

TEST(VirtualGpuCollectives, BroadcastEqualsCpu) {
  Compare(DType::kU8, {100}, {100}, [](Communicator& c, int r, ConstBufferView in, BufferView out) {
    return c.CollectiveBroadcast(CollectiveCall(r), kPairs, in, out);
  });
}

TEST(VirtualGpuCollectives, AMissingPeerIsATimeoutNamingTheOpAndTheDevices) {
  if (!DeviceCount().ok()) {
    GTEST_SKIP() << NoGpuReason();
  }
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  std::vector<cudaStream_t> streams(kRanks);
  std::vector<void*> buf(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&buf[r], 1024), cudaSuccess);
  }
  VirtualGpuOptions o;
  o.streams = streams;
  o.timeout = std::chrono::milliseconds(300);
  auto comm = VirtualGpuCommunicator::Create(o);
  ASSERT_TRUE(comm.ok());
  const int64_t dims[] = {128};
  std::vector<Status> st(kRanks);
  std::vector<std::thread> threads;
  for (int r = 0; r + 1 < kRanks; ++r) {  // device 7 never calls
    threads.emplace_back([&, r] {
      cudaSetDevice(0);
      const auto* p = static_cast<std::byte*>(buf[r]);
      st[r] = (*comm)->AllReduce(CollectiveCall(r, "psum", 4), DeviceGroups::All(kRanks),
                                 {p, DType::kF32, dims}, {const_cast<std::byte*>(p) + 512, DType::kF32, dims},
                                 ReductionKind::kSum);
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r + 1 < kRanks; ++r) {
    ASSERT_FALSE(st[r].ok());
    EXPECT_EQ(st[r].code(), StatusCode::kDeadlineExceeded) << st[r].message();
    EXPECT_NE(st[r].message().find("psum (all-reduce, channel 4)"), std::string::npos) << st[r].message();
    EXPECT_NE(st[r].message().find("missing: 7"), std::string::npos) << st[r].message();
  }
  for (int r = 0; r < kRanks; ++r) {
    cudaFree(buf[r]);
    cudaStreamDestroy(streams[r]);
  }
}

}  // namespace
}  // namespace xs::cuda

#else

TEST(VirtualGpuCommunicator, SkippedWithoutCuda) { GTEST_SKIP() << "this xshard was built without CUDA"; }

#endif  // XSHARD_WITH_CUDA
