// Remote copies and semaphores between devices inside shard_map: the three all-gather kernels
// against the runtime's all-gather (and a hand-computed gather) on 2-D and 3-D meshes, device ids
// by mesh coordinates, and the bounded errors (a peer that never signals, a device that never
// runs the kernel, a semaphore left signaled, bad device ids).
#include "xshard/cmm/remote_copy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>

#include "xshard/cmm/kernel.h"
#include "xshard/cmm/kernel_ops.h"
#include "xshard/cmm/pallas_kernels.h"

namespace xs::cmm {
namespace {

using ::testing::HasSubstr;
using Arrays = std::vector<Array>;
using std::chrono::milliseconds;

std::unique_ptr<Client> MakeClientCopy(int64_t devices) {
  ClientOptions o;
  o.num_devices = devices;
  o.collective_timeout = milliseconds(20000);
  return *Client::Create(o);
}

// P((all mesh axes), None): device d's block is rows [2d', 2d' + 2) of the global array.
PartitionSpec AllAxes(const Mesh& mesh) {
  return PartitionSpec(std::vector<PartitionSpec::Entry>{mesh.axis_names(), {}});
}

// Runs the all-gather kernels `kinds` (default: all three) over `axes` (along `dim`) on every
// device, `repeat` times, and compares them with ShardMapContext::AllGather(tiled); returns the
// first mismatch or failure.
Status CompareAllGathers(const Mesh& mesh, const std::vector<std::string>& axes, int dim,
                         std::vector<AllGatherKernelKind> kinds =
                             {AllGatherKernelKind::kRing, AllGatherKernelKind::kRecursiveDoubling,
                              AllGatherKernelKind::kDirect},
                         int repeat = 1) {
  auto client = MakeClientCopy(mesh.num_devices());
  InProcessTransport transport(mesh.num_devices(), milliseconds(20000));
  const PartitionSpec spec = AllAxes(mesh);
  XS_ASSIGN_OR_RETURN(
      ShardMapped f,
      ShardMap(mesh, {spec}, {spec}, [&](ShardMapContext& ctx, Arrays in) -> StatusOr<Arrays> {
        XS_ASSIGN_OR_RETURN(Array want, ctx.AllGather(in[0], axes, dim, /*tiled=*/true));
        for (int r = 0; r < repeat; ++r) {
          for (AllGatherKernelKind kind : kinds) {
            XS_ASSIGN_OR_RETURN(Array got, AllGatherKernel(ctx, transport, in[0], axes, kind, dim));
            if (!(got == want)) {
              Status st = Internal(AllGatherKernelName(kind), " on device ", ctx.device(), ": got ",
                                   got.ToString(), " want ", want.ToString());
              transport.Abort(st);  // the peers stop at their next kernel instead of waiting
              return st;
            }
          }
        }
        return Arrays{in[0]};
      }));
  const Array x = Array::Iota(DType::kF32, {2 * mesh.num_devices(), 3});
  XS_ASSIGN_OR_RETURN(std::vector<ShardedArray> out, f(*client, Arrays{x}));
  return OkStatus();
}

TEST(AllGatherKernelTest, MatchesTheRuntimeOn2x2) {
  const Mesh mesh = *Mesh::Create({"x", "y"}, {2, 2});
  for (const auto& axes : std::vector<std::vector<std::string>>{{"x"}, {"y"}, {"x", "y"}}) {
    for (int dim : {0, 1}) {
      Status st = CompareAllGathers(mesh, axes, dim);
      EXPECT_TRUE(st.ok()) << axes[0] << " dim " << dim << ": " << st.ToString();
    }
  }
}

TEST(AllGatherKernelTest, MatchesTheRuntimeOn4x4) {
  const Mesh mesh = *Mesh::Create({"x", "y"}, {4, 4});
  for (const auto& axes : std::vector<std::vector<std::string>>{{"x"}, {"y", "x"}}) {
    Status st = CompareAllGathers(mesh, axes, 0);
    EXPECT_TRUE(st.ok()) << st.ToString();
  }
}

// Regression: recursive doubling once shared one byte-counting receive semaphore between its
// steps, so the 2^(s+1)-chunk copy of the next step's partner could satisfy this step's wait
// before this step's data landed (seen as wrong rows on 4x4 about every other run).
TEST(AllGatherKernelTest, RecursiveDoublingStepsWaitForTheirOwnData) {
  const Mesh mesh = *Mesh::Create({"x", "y"}, {4, 4});
  Status st = CompareAllGathers(mesh, {"x", "y"}, 0, {AllGatherKernelKind::kRecursiveDoubling},
                                /*repeat=*/20);
  EXPECT_TRUE(st.ok()) << st.ToString();
}

TEST(AllGatherKernelTest, MatchesTheRuntimeOn2x2x2) {
  const Mesh mesh = *Mesh::Create({"x", "y", "z"}, {2, 2, 2});
  for (const auto& axes :
       std::vector<std::vector<std::string>>{{"x"}, {"z"}, {"x", "z"}, {"z", "y", "x"}}) {
    Status st = CompareAllGathers(mesh, axes, axes.size() == 2 ? 1 : 0);
    EXPECT_TRUE(st.ok()) << st.ToString();
  }
}

TEST(AllGatherKernelTest, Seed004GatherOverXOn2x2ByHand) {
  // Seed 004's failing case: weights P('x', None) on Mesh(2x2, ('x','y')), gathered over 'x' with
  // DeviceIdType.MESH. Global w = iota [4, 2]: devices with x = 0 hold rows 0-1, x = 1 rows 2-3;
  // every device must end with all four rows.
  const Mesh mesh = *Mesh::Create({"x", "y"}, {2, 2});
  auto client = MakeClientCopy(4);
  InProcessTransport transport(4, milliseconds(20000));
  const PartitionSpec px(std::vector<PartitionSpec::Entry>{{"x"}, {}});
  const PartitionSpec rep(std::vector<PartitionSpec::Entry>{{}, {}});
  auto f = ShardMap(mesh, {px}, {rep}, [&](ShardMapContext& ctx, Arrays in) -> StatusOr<Arrays> {
    XS_ASSIGN_OR_RETURN(Array g,
                        AllGatherKernel(ctx, transport, in[0], {"x"}, AllGatherKernelKind::kRing));
    return Arrays{g};
  });
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  auto out = (*f)(*client, Arrays{Array::Iota(DType::kF32, {4, 2})});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  auto a = (*out)[0].ToArray();  // replicated copies must agree bit for bit
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(*a, Array::FromVector<float>({4, 2}, {0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(AllGatherKernelTest, RecursiveDoublingNeedsAPowerOfTwo) {
  const Mesh mesh = *Mesh::Create({"x", "y"}, {3, 2});
  auto client = MakeClientCopy(6);
  InProcessTransport transport(6, milliseconds(20000));
  const PartitionSpec spec = AllAxes(mesh);
  auto f = ShardMap(mesh, {spec}, {spec}, [&](ShardMapContext& ctx, Arrays in) -> StatusOr<Arrays> {
    XS_ASSIGN_OR_RETURN(Array g, AllGatherKernel(ctx, transport, in[0], {"x"},
                                                 AllGatherKernelKind::kRecursiveDoubling));
    return Arrays{in[0]};
  });
  auto out = (*f)(*client, Arrays{Array::Iota(DType::kF32, {12, 3})});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(),
              HasSubstr("recursive-doubling all-gather kernel over (x): the group has 3 devices; "
                        "recursive doubling needs a power of two"));
}

// A kernel on a 2x2 mesh whose body is `body`, with `sems` REGULAR semaphores; the transport times
// out after 200 ms. Returns the run's status and how long it took.
Status RunOn2x2(const KernelBody& body, InProcessTransport& transport, milliseconds* took,
                bool skip_device_3 = false) {
  const Mesh mesh = *Mesh::Create({"x", "y"}, {2, 2});
  auto client = MakeClientCopy(4);
  PallasOptions options;
  options.name = "lonely";
  options.transport = &transport;
  XS_ASSIGN_OR_RETURN(PallasKernel kernel,
                      PallasCall(body, {1}, {}, {}, {},
                                 {ScratchShape::Semaphores(SemaphoreType::kRegular, 2)}, options));
  const PartitionSpec spec = AllAxes(mesh);
  XS_ASSIGN_OR_RETURN(
      ShardMapped f,
      ShardMap(mesh, {spec}, {spec}, [&](ShardMapContext& ctx, Arrays in) -> StatusOr<Arrays> {
        if (skip_device_3 && ctx.device() == 3) return Arrays{in[0]};
        XS_RETURN_IF_ERROR(kernel(ctx, {}).status());
        return Arrays{in[0]};
      }));
  const auto start = std::chrono::steady_clock::now();
  Status st = f(*client, Arrays{Array::Iota(DType::kF32, {8, 1})}).status();
  *took = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - start);
  return st;
}

TEST(RemoteSemaphoreTest, APeerThatNeverSignalsEndsInABoundedError) {
  InProcessTransport transport(4, milliseconds(200));
  milliseconds took;
  // Device (1, 1) waits for a signal that no device sends.
  Status st = RunOn2x2(
      [](KernelContext& k) -> Status {
        return When(k.device() == 3, [&] { return SemaphoreWait(k.sem(0), 1); });
      },
      transport, &took);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(),
              HasSubstr("kernel 'lonely' on device 3 (x=1, y=1): SemaphoreWait(semaphore 0 "
                        "(REGULAR), 1): timed out after 200 ms waiting for semaphore 0 (REGULAR) "
                        "to reach 1 (it is at 0); no peer signaled it in time"));
  EXPECT_LT(took.count(), 10000);

  // After Reset the same transport runs a correct exchange: each device signals the device with
  // the other x coordinate (by mesh coordinates) and waits for its signal.
  transport.Reset();
  st = RunOn2x2(
      [](KernelContext& k) -> Status {
        XS_ASSIGN_OR_RETURN(int64_t x, k.AxisIndex("x"));
        XS_ASSIGN_OR_RETURN(int64_t y, k.AxisIndex("y"));
        XS_RETURN_IF_ERROR(SemaphoreSignal(k.sem(1), 1, DeviceId::Mesh({1 - x, y})));
        return SemaphoreWait(k.sem(1), 1);
      },
      transport, &took);
  EXPECT_TRUE(st.ok()) << st.ToString();
}

TEST(RemoteSemaphoreTest, AFailingDeviceStopsItsPeersAtOnce) {
  // Devices 0, 1, 2 wait for a signal device 3 would send after its work; device 3's body fails
  // first. The abort reaches the waiters long before the 20 s timeout, with device 3's error.
  InProcessTransport transport(4, milliseconds(20000));
  milliseconds took;
  Status st = RunOn2x2(
      [](KernelContext& k) -> Status {
        if (k.device() == 3) return InvalidArgument("device 3's body failed");
        return SemaphoreWait(k.sem(0), 1);
      },
      transport, &took);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("kernel 'lonely' on device 3 (x=1, y=1) at grid point (0): "
                                      "device 3's body failed"));
  EXPECT_LT(took.count(), 5000);
}

TEST(RemoteSemaphoreTest, ADeviceThatNeverRunsTheKernelEndsInABoundedError) {
  InProcessTransport transport(4, milliseconds(200));
  milliseconds took;
  Status st = RunOn2x2([](KernelContext&) { return OkStatus(); }, transport, &took,
                       /*skip_device_3=*/true);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("timed out after 200 ms at the kernel's entry waiting for "
                                      "device(s) 3 (arrived: 0, 1, 2)"));
  EXPECT_LT(took.count(), 10000);
}

TEST(RemoteSemaphoreTest, ASignalNobodyWaitsForFailsTheKernel) {
  InProcessTransport transport(4, milliseconds(2000));
  milliseconds took;
  Status st = RunOn2x2(
      [](KernelContext& k) -> Status {
        return When(k.device() == 0, [&] {
          return SemaphoreSignal(k.sem(0), 1, DeviceId::Axes({{"y", 1}}));
        });
      },
      transport, &took);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("kernel 'lonely' on device 1 (x=0, y=1): semaphore 0 "
                                      "(REGULAR) ends the kernel at 1, not 0"));
}

TEST(DeviceIdTest, ResolvesMeshCoordinatesOnAnyRank) {
  const Mesh mesh = *Mesh::Create({"x", "y", "z"}, {2, 2, 2});
  EXPECT_EQ(*DeviceId::Mesh({1, 0, 1}).Resolve(mesh, 0), 5);
  EXPECT_EQ(*DeviceId::Axes({{"y", 1}}).Resolve(mesh, 4), 6);  // (1, 0, 0) -> (1, 1, 0)
  EXPECT_EQ(*DeviceId::Logical(7).Resolve(mesh, 0), 7);
  auto few = DeviceId::Mesh({1, 0}).Resolve(mesh, 0);
  ASSERT_FALSE(few.ok());
  EXPECT_THAT(few.status().message(),
              HasSubstr("device id mesh(1, 0) has 2 coordinates but Mesh('x': 2, 'y': 2, 'z': 2) "
                        "has 3 axes; give one coordinate per axis"));
  auto far = DeviceId::Axes({{"z", 2}}).Resolve(mesh, 0);
  ASSERT_FALSE(far.ok());
  EXPECT_THAT(far.status().message(),
              HasSubstr("device id {'z': 2}: coordinate 2 of axis 'z' is outside 0..1"));
  auto unknown = DeviceId::Axes({{"w", 0}}).Resolve(mesh, 0);
  ASSERT_FALSE(unknown.ok());
  auto logical = DeviceId::Logical(8).Resolve(mesh, 0);
  ASSERT_FALSE(logical.ok());
  EXPECT_THAT(logical.status().message(), HasSubstr("logical ids run 0..7"));
}

TEST(RemoteSemaphoreTest, BarriersOrderWritesBetweenDevices) {
  // Each device d of a 2x2x2 mesh writes d into slot d of every peer's scratch with remote
  // copies and meets the others at k.Barrier(); after it every device must hold 0..7. Waits then
  // drain the semaphores.
  const Mesh mesh = *Mesh::Create({"x", "y", "z"}, {2, 2, 2});
  auto client = MakeClientCopy(8);
  InProcessTransport transport(8, milliseconds(20000));
  PallasOptions options;
  options.name = "ids";
  options.transport = &transport;
  auto kernel = PallasCall(
      [](KernelContext& k) -> Status {
        XS_ASSIGN_OR_RETURN(Ref mine, k.scratch(0).At({Ds{k.device(), 1}}));
        XS_RETURN_IF_ERROR(Fill(mine, static_cast<double>(k.device())));
        std::vector<AsyncCopy> copies;
        for (int64_t d = 0; d < 8; ++d) {
          if (d == k.device()) continue;
          XS_ASSIGN_OR_RETURN(AsyncCopy c, MakeAsyncRemoteCopy(mine, mine, k.sem(0), k.sem(1),
                                                               DeviceId::Logical(d)));
          XS_RETURN_IF_ERROR(c.Start());
          copies.push_back(c);
        }
        XS_RETURN_IF_ERROR(k.Barrier());  // every copy has landed everywhere
        XS_RETURN_IF_ERROR(StoreConverted(k.scratch(0), k.out(0)));
        for (const AsyncCopy& c : copies) {  // drain the semaphores: 7 sends, 7 receipts
          XS_RETURN_IF_ERROR(c.WaitSend());
          XS_RETURN_IF_ERROR(c.WaitRecv());
        }
        return OkStatus();
      },
      {1}, {}, {BlockSpec::Any()}, {Shape(DType::kF32, {8})},
      {ScratchShape::Buffer(DType::kF32, {8}), ScratchShape::Semaphores(SemaphoreType::kDma, 2)},
      options);
  ASSERT_TRUE(kernel.ok());
  const PartitionSpec spec = AllAxes(mesh);
  auto f = ShardMap(mesh, {spec}, {spec}, [&](ShardMapContext& ctx, Arrays in) -> StatusOr<Arrays> {
    XS_ASSIGN_OR_RETURN(Arrays out, (*kernel)(ctx, {}));
    if (!(out[0] == Array::Iota(DType::kF32, {8}))) return Internal(out[0].ToString());
    return Arrays{in[0]};
  });
  auto out = (*f)(*client, Arrays{Array::Iota(DType::kF32, {16, 1})});
  EXPECT_TRUE(out.ok()) << out.status().ToString();
}

}  // namespace
}  // namespace xs::cmm
