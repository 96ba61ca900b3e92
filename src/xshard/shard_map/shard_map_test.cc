// shard_map: the seed 003 flows and every named-axis collective, checked against values computed
// by hand here or printed by JAX 0.10.2 (/opt/jaxref); each JAX value quotes the expression that
// produced it, on Mesh(devices.reshape(4, 2), ('x', 'y')) where device d holds the value d under
// P(('x', 'y')), inside jax.shard_map(..., check_vma=False).
#include "xshard/shard_map/shard_map.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>

namespace xs {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using Arrays = std::vector<Array>;
using Fn = std::function<StatusOr<Arrays>(ShardMapContext&, Arrays)>;

PartitionSpec P(std::vector<PartitionSpec::Entry> entries) {
  return PartitionSpec(std::move(entries));
}

class ShardMapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ClientOptions o;
    o.num_devices = 8;
    o.collective_timeout = std::chrono::milliseconds(10000);
    client_ = *Client::Create(o);
    mesh_ = *Mesh::Create({"x", "y"}, {4, 2});
  }

  // Runs fn with in/out spec P(('x','y')) on v = [0..7], so device d's input is [d]; returns each
  // device's result (the out spec stacks them along dim 0).
  Array PerDevice(const Fn& fn, std::vector<int64_t> out_dims = {8}) {
    const PartitionSpec spec = P({{"x", "y"}});
    auto f = ShardMap(mesh_, {spec}, {spec}, fn);
    EXPECT_TRUE(f.ok()) << f.status().ToString();
    auto out = (*f)(*client_, Arrays{Array::Iota(DType::kF32, {8})});
    EXPECT_TRUE(out.ok()) << out.status().ToString();
    auto a = (*out)[0].ToArray();
    EXPECT_TRUE(a.ok()) << a.status().ToString();
    EXPECT_EQ(a->dims(), out_dims);
    return *std::move(a);
  }

  std::unique_ptr<Client> client_;
  Mesh mesh_;
};

// Plain reference matmul.
Array MatMul(const Array& a, const Array& b) {
  const int64_t m = a.dims()[0], k = a.dims()[1], n = b.dims()[1];
  Array c(DType::kF32, {m, n});
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float s = 0;
      for (int64_t t = 0; t < k; ++t) {
        s += a.values<float>()[i * k + t] * b.values<float>()[t * n + j];
      }
      c.values<float>()[i * n + j] = s;
    }
  }
  return c;
}

TEST_F(ShardMapTest, Seed003MatmulBasicMatchesTheUnshardedProduct) {
  // matmul_basic: in_specs (P('x','y'), P('y',None)), out_specs P('x',None); psum over 'y'.
  const Array a = Array::Iota(DType::kF32, {8, 16});
  const Array b = Array::Iota(DType::kF32, {16, 4});
  auto f = ShardMap(mesh_, {P({{"x"}, {"y"}}), P({{"y"}, {}})}, {P({{"x"}, {}})},
                    [](ShardMapContext& ctx, Arrays in) -> StatusOr<Arrays> {
                      EXPECT_EQ(in[0].dims(), (std::vector<int64_t>{2, 8}));
                      EXPECT_EQ(in[1].dims(), (std::vector<int64_t>{8, 4}));
                      XS_ASSIGN_OR_RETURN(Array c, ctx.Psum(MatMul(in[0], in[1]), "y"));
                      return Arrays{std::move(c)};
                    });
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  auto c = (*f)(*client_, Arrays{a, b});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ((*c)[0].dims(), (std::vector<int64_t>{8, 4}));
  EXPECT_EQ(*(*c)[0].ToArray(), MatMul(a, b));
  EXPECT_EQ((*c)[0].shard(5).shape().dims(), (std::vector<int64_t>{2, 4}));
}

TEST_F(ShardMapTest, AxisIndexAndSizeFollowTheGivenAxisOrder) {
  // JAX: axis_index(('y','x')) per device 0..7 = [0 4 1 5 2 6 3 7].
  Array idx = PerDevice([](ShardMapContext& ctx, Arrays) -> StatusOr<Arrays> {
    XS_ASSIGN_OR_RETURN(int64_t i, ctx.AxisIndex({"y", "x"}));
    XS_ASSIGN_OR_RETURN(int64_t n, ctx.AxisSize({"y", "x"}));
    XS_ASSIGN_OR_RETURN(int64_t nx, ctx.AxisSize("x"));
    if (n != 8 || nx != 4) return Internal("wrong axis size");
    return Arrays{Array::FromVector<float>({1}, {static_cast<float>(i)})};
  });
  EXPECT_EQ(idx, Array::FromVector<float>({8}, {0, 4, 1, 5, 2, 6, 3, 7}));
}

TEST_F(ShardMapTest, AllGatherOverTwoAxesOrdersByTheGivenAxes) {
  // JAX: all_gather(b, ('y','x'), axis=0, tiled=True) = [0 2 4 6 1 3 5 7] on every device.
  Array g = PerDevice(
      [](ShardMapContext& ctx, Arrays in) -> StatusOr<Arrays> {
        XS_ASSIGN_OR_RETURN(Array all, ctx.AllGather(in[0], {"y", "x"}, 0, /*tiled=*/true));
        return Arrays{all.Reshape({1, 8})};
      },
      {8, 8});
  for (int64_t d = 0; d < 8; ++d) {
    EXPECT_EQ(g.Slice({d, 0}, {1, 8}),
              Array::FromVector<float>({1, 8}, {0, 2, 4, 6, 1, 3, 5, 7}));
  }
}

TEST_F(ShardMapTest, UntiledAllGatherStacksAlongANewAxis) {
  // JAX: all_gather(b.reshape(1,1) + zeros((1,2)), 'x', axis=1, tiled=False) has shape (1,4,2);
  // device 1 gets [[1,1],[3,3],[5,5],[7,7]].
  Array g = PerDevice(
      [](ShardMapContext& ctx, Arrays in) -> StatusOr<Arrays> {
        const float v = in[0].values<float>()[0];
        XS_ASSIGN_OR_RETURN(Array all, ctx.AllGather(Array::FromVector<float>({1, 2}, {v, v}),
                                                     "x", 1, /*tiled=*/false));
        if (all.dims() != std::vector<int64_t>{1, 4, 2}) return Internal("bad dims");
        return Arrays{std::move(all)};
      },
      {8, 4, 2});
  EXPECT_EQ(g.Slice({1, 0, 0}, {1, 4, 2}),
            Array::FromVector<float>({1, 4, 2}, {1, 1, 3, 3, 5, 5, 7, 7}));
}

TEST_F(ShardMapTest, PsumPmaxPminPmeanOverOneAxis) {
  // Over 'x' the group of device d is {d % 2, d % 2 + 2, + 4, + 6}.
  Array out = PerDevice(
      [](ShardMapContext& ctx, Arrays in) -> StatusOr<Arrays> {
        XS_ASSIGN_OR_RETURN(Array s, ctx.Psum(in[0], "x"));
        XS_ASSIGN_OR_RETURN(Array mx, ctx.Pmax(in[0], "x"));
        XS_ASSIGN_OR_RETURN(Array mn, ctx.Pmin(in[0], "x"));
        XS_ASSIGN_OR_RETURN(Array mean, ctx.Pmean(in[0].Convert(DType::kS32), "x"));
        if (mean.dtype() != DType::kF32) return Internal("pmean of s32 must give f32");
        return Arrays{Array::FromVector<float>(
            {1, 4}, {s.values<float>()[0], mx.values<float>()[0], mn.values<float>()[0],
                     mean.values<float>()[0]})};
      },
      {8, 4});
  for (int64_t d = 0; d < 8; ++d) {
    const float base = static_cast<float>(d % 2);
    // JAX: pmean(int32, 'x') = [3 4 3 4 3 4 3 4] (float32).
    EXPECT_EQ(out.Slice({d, 0}, {1, 4}),
              Array::FromVector<float>({1, 4}, {4 * base + 12, base + 6, base, base + 3}))
        << d;
  }
}

TEST_F(ShardMapTest, PsumScatterTiledAndUntiled) {
  // JAX: psum_scatter(arange(8).reshape(2,4) + 100*d, 'y', scatter_dimension=0) has shape (4,);
  // device 0 -> [100 102 104 106], device 1 -> [108 110 112 114], device 6 -> [1300 ...].
  Array out = PerDevice(
      [](ShardMapContext& ctx, Arrays in) -> StatusOr<Arrays> {
        const float d = in[0].values<float>()[0];
        Array x(DType::kF32, {2, 4});
        for (int i = 0; i < 8; ++i) x.values<float>()[i] = static_cast<float>(i) + 100 * d;
        XS_ASSIGN_OR_RETURN(Array untiled, ctx.PsumScatter(x, "y", 0, /*tiled=*/false));
        XS_ASSIGN_OR_RETURN(Array tiled, ctx.PsumScatter(x, "y", 1, /*tiled=*/true));
        if (untiled.dims() != std::vector<int64_t>{4} ||
            tiled.dims() != std::vector<int64_t>{2, 2}) {
          return Internal("bad dims");
        }
        return Arrays{Array::FromVector<float>(
            {1, 8}, {untiled.values<float>()[0], untiled.values<float>()[1],
                     untiled.values<float>()[2], untiled.values<float>()[3],
                     tiled.values<float>()[0], tiled.values<float>()[1],
                     tiled.values<float>()[2], tiled.values<float>()[3]})};
      },
      {8, 8});
  EXPECT_EQ(out.Slice({0, 0}, {1, 4}), Array::FromVector<float>({1, 4}, {100, 102, 104, 106}));
  EXPECT_EQ(out.Slice({1, 0}, {1, 4}), Array::FromVector<float>({1, 4}, {108, 110, 112, 114}));
  EXPECT_EQ(out.Slice({6, 0}, {1, 4}),
            Array::FromVector<float>({1, 4}, {1300, 1302, 1304, 1306}));
  // Tiled along dim 1 on device 7 (pair {6,7}, position 1): columns 2..3 of the pair's sum,
  // sum = 2 * x + 100 * (6 + 7) -> rows [1300+4, 1300+6], [1300+12, 1300+14].
  EXPECT_EQ(out.Slice({7, 4}, {1, 4}),
            Array::FromVector<float>({1, 4}, {1304, 1306, 1312, 1314}));
}

TEST_F(ShardMapTest, PpermuteOverSeveralAxesCountsInMeshOrder) {
  // JAX: ppermute(b + 1, ('y','x'), perm=[(0,1),(1,3)]) = [0 1 0 2 0 0 0 0]: indices count
  // devices in mesh order even though the axes are given as ('y','x').
  Array out = PerDevice([](ShardMapContext& ctx, Arrays in) -> StatusOr<Arrays> {
    Array x = Array::FromVector<float>({1}, {in[0].values<float>()[0] + 1});
    XS_ASSIGN_OR_RETURN(Array p, ctx.Ppermute(x, {"y", "x"}, {{0, 1}, {1, 3}}));
    return Arrays{std::move(p)};
  });
  EXPECT_EQ(out, Array::FromVector<float>({8}, {0, 1, 0, 2, 0, 0, 0, 0}));
  // JAX: ppermute(b, 'x', perm=[(i, (i+1) % 4)]) = [6 7 0 1 2 3 4 5].
  Array shift = PerDevice([](ShardMapContext& ctx, Arrays in) -> StatusOr<Arrays> {
    XS_ASSIGN_OR_RETURN(Array p, ctx.Ppermute(in[0], "x", {{0, 1}, {1, 2}, {2, 3}, {3, 0}}));
    return Arrays{std::move(p)};
  });
  EXPECT_EQ(shift, Array::FromVector<float>({8}, {6, 7, 0, 1, 2, 3, 4, 5}));
}

TEST_F(ShardMapTest, AsyncPpermuteMatchesPpermuteWhileTheDeviceComputes) {
  // Two shifts in flight at once (up and down 'x', as a bidirectional ring does), then done in
  // start order: the same [6 7 0 1 2 3 4 5] and [2 3 4 5 6 7 0 1] as the blocking ppermute.
  Array both = PerDevice(
      [](ShardMapContext& ctx, Arrays in) -> StatusOr<Arrays> {
        XS_ASSIGN_OR_RETURN(PendingCollective up,
                            ctx.PpermuteStart(in[0], "x", {{0, 1}, {1, 2}, {2, 3}, {3, 0}}));
        XS_ASSIGN_OR_RETURN(PendingCollective dn,
                            ctx.PpermuteStart(in[0], "x", {{1, 0}, {2, 1}, {3, 2}, {0, 3}}));
        EXPECT_TRUE(up.active());
        in[0].values<float>()[0] = -1;  // the started calls own copies of their inputs
        XS_ASSIGN_OR_RETURN(Array a, ctx.Done(up));
        XS_ASSIGN_OR_RETURN(Array b, ctx.Done(dn));
        EXPECT_FALSE(up.active());
        Array out(DType::kF32, {2});
        out.values<float>()[0] = a.values<float>()[0];
        out.values<float>()[1] = b.values<float>()[0];
        return Arrays{std::move(out)};
      },
      {16});
  EXPECT_EQ(both, Array::FromVector<float>({16}, {6, 2, 7, 3, 0, 4, 1, 5, 2, 6, 3, 7, 4, 0, 5, 1}));
}

TEST_F(ShardMapTest, AsyncAllGatherMatchesAllGather) {
  // Device d = (x, y) holds [d]; gathering over 'x' gives [y, y+2, y+4, y+6] on every device.
  Array out = PerDevice(
      [](ShardMapContext& ctx, Arrays in) -> StatusOr<Arrays> {
        XS_ASSIGN_OR_RETURN(PendingCollective p, ctx.AllGatherStart(in[0], "x", 0));
        XS_ASSIGN_OR_RETURN(Array sync, ctx.AllGather(in[0], "x", 0, /*tiled=*/true));
        XS_ASSIGN_OR_RETURN(Array async, ctx.Done(p));
        EXPECT_EQ(async, sync);
        return Arrays{std::move(async)};
      },
      {32});
  for (int64_t d = 0; d < 8; ++d) {
    for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(out.GetDouble(d * 4 + i), d % 2 + 2 * i) << d;
  }
}

TEST_F(ShardMapTest, DoneTwiceIsAnError) {
  const PartitionSpec spec = P({{"x", "y"}});
  auto f = ShardMap(mesh_, {spec}, {spec}, [](ShardMapContext& ctx, Arrays in) -> StatusOr<Arrays> {
    XS_ASSIGN_OR_RETURN(PendingCollective p, ctx.PpermuteStart(in[0], "x", {{0, 1}}));
    XS_ASSIGN_OR_RETURN(Array a, ctx.Done(p));
    XS_ASSIGN_OR_RETURN(Array b, ctx.Done(p));
    return Arrays{std::move(b)};
  });
  ASSERT_TRUE(f.ok());
  auto out = (*f)(*client_, Arrays{Array::Iota(DType::kF32, {8})});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("already done; call Done once per *Start"));
}

TEST_F(ShardMapTest, UntiledAllToAllMovesTheMappedAxis) {
  // JAX: all_to_all((arange(12) + 100*d).reshape(4,3), 'x', 0, 1) has shape (3,4); device 2
  // gets [[3,203,403,603],[4,204,404,604],[5,205,405,605]].
  // JAX: all_to_all((arange(24) + 100*d).reshape(3,4,2), 'x', 1, 0) has shape (4,3,2); device 5
  // gets [[[104,105],[112,113],[120,121]], [[304,...]], [[504,...]], [[704,705],[712,713],
  // [720,721]]].
  Array out = PerDevice(
      [](ShardMapContext& ctx, Arrays in) -> StatusOr<Arrays> {
        const float d = in[0].values<float>()[0];
        Array a(DType::kF32, {4, 3}), b(DType::kF32, {3, 4, 2});
        for (int i = 0; i < 12; ++i) a.values<float>()[i] = static_cast<float>(i) + 100 * d;
        for (int i = 0; i < 24; ++i) b.values<float>()[i] = static_cast<float>(i) + 100 * d;
        XS_ASSIGN_OR_RETURN(Array ra, ctx.AllToAll(a, "x", 0, 1));
        XS_ASSIGN_OR_RETURN(Array rb, ctx.AllToAll(b, "x", 1, 0));
        if (ra.dims() != std::vector<int64_t>{3, 4} ||
            rb.dims() != std::vector<int64_t>{4, 3, 2}) {
          return Internal("bad dims");
        }
        Array both(DType::kF32, {1, 36});
        std::memcpy(both.data(), ra.data(), 48);
        std::memcpy(both.data() + 48, rb.data(), 96);
        return Arrays{std::move(both)};
      },
      {8, 36});
  EXPECT_EQ(out.Slice({2, 0}, {1, 12}),
            Array::FromVector<float>({1, 12}, {3, 203, 403, 603, 4, 204, 404, 604, 5, 205, 405,
                                               605}));
  EXPECT_EQ(out.Slice({5, 12}, {1, 24}),
            Array::FromVector<float>({1, 24}, {104, 105, 112, 113, 120, 121, 304, 305,
                                               312, 313, 320, 321, 504, 505, 512, 513,
                                               520, 521, 704, 705, 712, 713, 720, 721}));
}

TEST_F(ShardMapTest, TiledAllToAllOverTwoAxes) {
  // JAX: all_to_all(arange(8)[:,None] + 100*axis_index(('x','y')), ('y','x'), 0, 1,
  // tiled=True): device 1 (index 4 along ('y','x')) gets row 4 from senders 0,2,4,6,1,3,5,7.
  Array out = PerDevice(
      [](ShardMapContext& ctx, Arrays in) -> StatusOr<Arrays> {
        const float d = in[0].values<float>()[0];
        Array x(DType::kF32, {8, 1});
        for (int i = 0; i < 8; ++i) x.values<float>()[i] = static_cast<float>(i) + 100 * d;
        XS_ASSIGN_OR_RETURN(Array r, ctx.AllToAll(x, {"y", "x"}, 0, 1, /*tiled=*/true));
        return Arrays{std::move(r)};
      },
      {8, 8});
  EXPECT_EQ(out.Slice({1, 0}, {1, 8}),
            Array::FromVector<float>({1, 8}, {4, 204, 404, 604, 104, 304, 504, 704}));
}

TEST_F(ShardMapTest, ReplicatedOutSpecGivesTheWholeArray) {
  // seed 004's xla_allgather: all_gather over 'x' with out_specs P().
  const Array w = Array::Iota(DType::kF32, {8, 2});
  auto f = ShardMap(mesh_, {P({{"x"}})}, {P({})},
                    [](ShardMapContext& ctx, Arrays in) -> StatusOr<Arrays> {
                      XS_ASSIGN_OR_RETURN(Array full, ctx.AllGather(in[0], "x", 0, true));
                      return Arrays{std::move(full)};
                    });
  ASSERT_TRUE(f.ok());
  auto out = (*f)(*client_, Arrays{w});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*(*out)[0].ToArray(), w);
  // Already-sharded inputs with the in_spec's sharding are used in place.
  auto sharded = ShardedArray::Create(*client_, w, *NamedSharding::Create(mesh_, P({{"x"}})));
  ASSERT_TRUE(sharded.ok());
  std::vector<ShardedArray> args;
  args.push_back(*std::move(sharded));
  auto again = (*f)(*client_, args);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*(*again)[0].ToArray(), w);
}

TEST_F(ShardMapTest, ErrorsNameTheMistake) {
  auto identity = [](ShardMapContext&, Arrays in) -> StatusOr<Arrays> { return in; };
  auto f = ShardMap(mesh_, {P({{"x"}})}, {P({{"x"}})}, identity);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ((*f)(*client_, Arrays{Array::Iota(DType::kF32, {6})}).status().message(),
            "shard_map in_specs[0] P('x',) splits dim 0 of argument 0 (f32[6], size 6) over mesh "
            "axes 'x' (4 devices), which does not divide evenly; shard_map needs evenly "
            "divisible dims: pad the argument or choose another spec");
  EXPECT_THAT((*f)(*client_, Arrays{}).status().message(),
              HasSubstr("shard_map was given 0 arguments for 1 in_specs"));
  EXPECT_THAT(ShardMap(mesh_, {P({{"z"}})}, {}, identity).status().message(),
              HasSubstr("shard_map in_specs[0]: "));

  auto two_out = ShardMap(mesh_, {P({{"x"}})}, {P({{"x"}}), P({})}, identity);
  EXPECT_THAT((*two_out)(*client_, Arrays{Array::Iota(DType::kF32, {8})}).status().message(),
              AllOf(HasSubstr("shard_map fn returned 1 results on device "),
                    HasSubstr("but there are 2 out_specs")));

  auto rank = ShardMap(mesh_, {P({{"x"}})}, {P({{"x"}, {"y"}})}, identity);
  EXPECT_THAT((*rank)(*client_, Arrays{Array::Iota(DType::kF32, {8})}).status().message(),
              HasSubstr("out_specs[0] P('x', 'y') names 2 dims but fn returned f32[2] (rank 1)"));

  auto ragged = ShardMap(mesh_, {P({{"x"}})}, {P({{"x"}})},
                         [](ShardMapContext& ctx, Arrays) -> StatusOr<Arrays> {
                           return Arrays{Array(DType::kF32, {ctx.device() == 3 ? 1 : 2})};
                         });
  EXPECT_EQ((*ragged)(*client_, Arrays{Array::Iota(DType::kF32, {8})}).status().message(),
            "shard_map fn returned f32[2] on device 0 but f32[1] on device 3 for result 0; fn "
            "must return the same shape and dtype on every device");

  auto bad_axis = ShardMap(mesh_, {P({})}, {P({})},
                           [](ShardMapContext& ctx, Arrays in) -> StatusOr<Arrays> {
                             XS_ASSIGN_OR_RETURN(Array s, ctx.Psum(in[0], "z"));
                             return Arrays{std::move(s)};
                           });
  EXPECT_THAT((*bad_axis)(*client_, Arrays{Array(DType::kF32, {2})}).status().message(),
              HasSubstr("psum over 'z': unknown mesh axis 'z'; the mesh Mesh('x': 4, 'y': 2) has "
                        "axes 'x', 'y'"));
}

TEST_F(ShardMapTest, FnFailingOnOneDeviceDoesNotHangTheOthers) {
  auto f = ShardMap(mesh_, {P({{"x", "y"}})}, {P({{"x", "y"}})},
                    [](ShardMapContext& ctx, Arrays in) -> StatusOr<Arrays> {
                      if (ctx.device() == 6) return InvalidArgument("bad shard on 6");
                      XS_ASSIGN_OR_RETURN(Array s, ctx.Psum(in[0], {"x", "y"}));
                      return Arrays{std::move(s)};
                    });
  ASSERT_TRUE(f.ok());
  const auto start = std::chrono::steady_clock::now();
  auto out = (*f)(*client_, Arrays{Array::Iota(DType::kF32, {8})});
  EXPECT_EQ(out.status().message(), "device 6 failed: bad shard on 6");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
}

TEST_F(ShardMapTest, MeshWithPermutedDevicesPlacesShardsByDeviceId) {
  // Mesh('i': 4) over devices [3, 1, 0, 2]: position p holds block p, on device ids[p].
  auto mesh = *Mesh::Create({"i"}, {4}, {3, 1, 0, 2});
  auto f = ShardMap(mesh, {P({{"i"}})}, {P({{"i"}})},
                    [](ShardMapContext& ctx, Arrays in) -> StatusOr<Arrays> {
                      XS_ASSIGN_OR_RETURN(int64_t i, ctx.AxisIndex("i"));
                      Array x = in[0];
                      x.values<float>()[0] += 100.0f * static_cast<float>(i);
                      return Arrays{std::move(x)};
                    });
  ASSERT_TRUE(f.ok());
  auto out = (*f)(*client_, Arrays{Array::Iota(DType::kF32, {4})});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*(*out)[0].ToArray(), Array::FromVector<float>({4}, {0, 101, 202, 303}));
  EXPECT_EQ((*out)[0].shard(3).array(), Array::FromVector<float>({1}, {0}));
}

}  // namespace
}  // namespace xs
