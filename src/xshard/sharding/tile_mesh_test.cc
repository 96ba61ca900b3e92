// TileMesh: the common prime-axis mesh behind a module's HloShardings, and the round trip
// HloSharding -> AxesSharding -> HloSharding. Expected texts follow NamedSharding on mesh
// (a=4, b=2) over devices 0..7 as JAX prints them (see DESIGN.md section 3).
#include "xshard/sharding/tile_mesh.h"

#include <gtest/gtest.h>

namespace xs {
namespace {

HloSharding S(const std::string& text) {
  auto s = HloSharding::Parse(text);
  EXPECT_TRUE(s.ok()) << text << ": " << s.status().message();
  return s.ok() ? *s : HloSharding::Unknown();
}

TileMesh MeshOf(int64_t n, const std::vector<std::string>& shardings) {
  TileMesh::Builder b(n);
  for (const std::string& t : shardings) EXPECT_TRUE(b.Add(S(t))) << t;
  return b.Build();
}

TEST(TileMeshTest, DeviceCountSplitsIntoPrimeAxes) {
  EXPECT_EQ(TileMesh(8).ToString(), "[2,2,2]");
  EXPECT_EQ(TileMesh(12).ToString(), "[2,2,3]");
  EXPECT_EQ(TileMesh(1).ToString(), "[]");
}

TEST(TileMeshTest, MeshAxesOfNamedShardings) {
  // P('b','a') on (a=4, b=2): dim 0 is b (the minor axis, stride 1), dim 1 is a (axes 0, 1).
  TileMesh mesh = MeshOf(8, {"{devices=[2,4]<=[4,2]T(1,0)}"});
  EXPECT_EQ(mesh.ToString(), "[2,2,2]");
  auto axes = mesh.ToAxes(S("{devices=[2,4]<=[4,2]T(1,0)}"), 2);
  ASSERT_TRUE(axes.has_value());
  EXPECT_EQ(axes->ToString(), "[{2}, {0,1}]");
  // P(None,'a'): dim 1 on a, b replicated.
  axes = mesh.ToAxes(S("{devices=[1,4,2]<=[8] last_tile_dim_replicate}"), 2);
  ASSERT_TRUE(axes.has_value());
  EXPECT_EQ(axes->ToString(), "[{}, {0,1}]");
  // The same P('b','a') written as an explicit device list.
  axes = mesh.ToAxes(S("{devices=[2,4]0,2,4,6,1,3,5,7}"), 2);
  ASSERT_TRUE(axes.has_value());
  EXPECT_EQ(axes->ToString(), "[{2}, {0,1}]");
}

TEST(TileMeshTest, AxesBackToXlaCanonicalText) {
  TileMesh mesh(8);
  EXPECT_EQ(mesh.ToHloSharding(AxesSharding{{{2}, {0, 1}}, 0}).ToString(), "{devices=[2,4]<=[4,2]T(1,0)}");
  EXPECT_EQ(mesh.ToHloSharding(AxesSharding{{{}, {0, 1}}, 0}).ToString(),
            "{devices=[1,4,2]<=[8] last_tile_dim_replicate}");
  EXPECT_EQ(mesh.ToHloSharding(AxesSharding{{{2}, {}}, 0}).ToString(),
            "{devices=[2,1,4]<=[4,2]T(1,0) last_tile_dim_replicate}");
  EXPECT_EQ(mesh.ToHloSharding(AxesSharding{{{}, {}}, 0}).ToString(), "{replicated}");
  EXPECT_EQ(mesh.ToHloSharding(AxesSharding{{{0, 1, 2}}, 0}).ToString(), "{devices=[8]<=[8]}");
  EXPECT_EQ(mesh.ToHloSharding(AxesSharding{{}, 7}).ToString(), "{manual}");
  // Dim 0 on axis 0, axis 1 manual, axis 2 replicated.
  EXPECT_EQ(mesh.ToHloSharding(AxesSharding{{{0}, {}}, 2}).ToString(),
            "{devices=[2,1,2,2]<=[8] last_tile_dims={manual, replicated}}");
}

TEST(TileMeshTest, RoundTripsEveryAxisAssignmentOfARank2Value) {
  TileMesh mesh(8);
  // Each of the 3 axes goes to dim 0, dim 1 or nowhere, in both orders within a dim.
  for (int code = 0; code < 27; ++code) {
    AxesSharding s{{{}, {}}, 0};
    for (int a = 0, c = code; a < 3; ++a, c /= 3) {
      if (c % 3 < 2) s.dims[c % 3].push_back(a);
    }
    for (int flip = 0; flip < 2; ++flip) {
      if (flip) {
        for (auto& d : s.dims) std::reverse(d.begin(), d.end());
      }
      HloSharding h = mesh.ToHloSharding(s);
      auto back = mesh.ToAxes(h, 2);
      ASSERT_TRUE(back.has_value()) << s.ToString() << " -> " << h.ToString();
      EXPECT_EQ(back->ToString(), s.ToString()) << h.ToString();
    }
  }
}

TEST(TileMeshTest, ConflictingCutsAreNotExpressible) {
  TileMesh::Builder b(6);
  EXPECT_TRUE(b.Add(S("{devices=[2,3]<=[6]}")));       // cuts 1, 3, 6
  EXPECT_FALSE(b.Add(S("{devices=[3,2]<=[6]}")));      // cut 2 does not divide 3
  EXPECT_FALSE(b.Add(S("{devices=[4]0,3,1,2}")));      // no iota form
  TileMesh mesh = b.Build();
  EXPECT_EQ(mesh.ToString(), "[2,3]");
  EXPECT_FALSE(mesh.ToAxes(S("{devices=[3,2]<=[6]}"), 2).has_value());
  EXPECT_TRUE(mesh.ToAxes(S("{devices=[2,3]<=[6]}"), 2).has_value());
}

TEST(TileMeshTest, OtherKindsAndRankMismatchHaveNoAxes) {
  TileMesh mesh(8);
  EXPECT_FALSE(mesh.ToAxes(S("{maximal device=3}"), 2).has_value());
  EXPECT_FALSE(mesh.ToAxes(S("{devices=[2,4]<=[8]}"), 3).has_value());
  EXPECT_FALSE(mesh.ToAxes(S("{devices=[2,2]<=[4]}"), 2).has_value());  // 4 devices, not 8
  auto manual = mesh.ToAxes(S("{manual}"), 2);
  ASSERT_TRUE(manual.has_value());
  EXPECT_EQ(manual->manual, 7u);
}

// torch_xla's Mesh((4, 2), ('data', 'model'), device_ids=[7,5,3,1,6,4,2,0]): the annotations
// torch_xla 2.9 wrote for an MLP (x on data, the weights on model; XLA sorts each replicated
// group), and the sharding XLA's propagation gave the first dot: {devices=[4,2]7,5,3,1,6,4,2,0}.
TEST(TileMeshTest, PermutedDeviceOrderIsReadOffExplicitLists) {
  const std::vector<HloSharding> hints = {S("{devices=[1,2,4]2,3,6,7,0,1,4,5 last_tile_dim_replicate}"),
                                          S("{devices=[2,1,4]2,3,6,7,0,1,4,5 last_tile_dim_replicate}"),
                                          S("{devices=[4,1,2]5,7,1,3,4,6,0,2 last_tile_dim_replicate}")};
  TileMesh::Builder b(8, hints);
  for (const HloSharding& h : hints) EXPECT_TRUE(b.Add(h)) << h.ToString();
  TileMesh mesh = b.Build();
  ASSERT_TRUE(mesh.permuted());
  std::optional<AxesSharding> w = mesh.ToAxes(hints[1], 2), x = mesh.ToAxes(hints[2], 2);
  ASSERT_TRUE(w.has_value() && x.has_value());
  ASSERT_TRUE(w->dims[1].empty() && x->dims[1].empty());
  // Every annotation round-trips to itself.
  for (const HloSharding& h : hints) {
    std::optional<AxesSharding> axes = mesh.ToAxes(h, 2);
    ASSERT_TRUE(axes.has_value()) << h.ToString();
    EXPECT_EQ(mesh.ToHloSharding(*axes), h) << h.ToString() << " -> " << axes->ToString();
  }
  // Rows on x's axes, columns on the weight's: XLA's sharding of the dot.
  AxesSharding dot{{x->dims[0], w->dims[0]}};
  EXPECT_EQ(mesh.ToHloSharding(dot).ToString(), "{devices=[4,2]7,5,3,1,6,4,2,0}");
  // Columns only: the model groups {7,3,6,2} and {5,1,4,0}, sorted.
  AxesSharding cols{{{}, w->dims[0]}};
  EXPECT_EQ(mesh.ToHloSharding(cols).ToString(), "{devices=[1,2,4]2,3,6,7,0,1,4,5 last_tile_dim_replicate}");
  EXPECT_EQ(mesh.Physical(mesh.Logical(6)), 6);
}

TEST(TileMeshTest, IotaAnnotationsKeepTheIdentityOrder) {
  const std::vector<HloSharding> hints = {S("{devices=[2,4]<=[4,2]T(1,0)}"), S("{devices=[8]<=[8]}")};
  TileMesh::Builder b(8, hints);
  for (const HloSharding& h : hints) EXPECT_TRUE(b.Add(h));
  EXPECT_FALSE(b.Build().permuted());
  // A list that no order makes an iota form next to the others stays inexpressible, and the
  // identity is kept because the order would lose more annotations than it wins.
  const std::vector<HloSharding> mixed = {S("{devices=[8]<=[8]}"), S("{devices=[2,4]<=[8]}"),
                                          S("{devices=[8]0,3,1,2,4,7,5,6}")};
  TileMesh::Builder m(8, mixed);
  EXPECT_TRUE(m.Add(mixed[0]));
  EXPECT_TRUE(m.Add(mixed[1]));
  EXPECT_FALSE(m.Add(mixed[2]));
  EXPECT_FALSE(m.Build().permuted());
}

TEST(TileMeshTest, DeviceOrderOfA3dMeshWithSplitAxes) {
  // Mesh (a=2, b=2, c=2) over devices 3,6,0,5,7,1,4,2: x on (a, -, (b,c)), w on (c, b).
  const std::vector<int64_t> order = {3, 6, 0, 5, 7, 1, 4, 2};
  auto at = [&](int a, int b, int c) { return order[a * 4 + b * 2 + c]; };
  std::vector<int64_t> x, w, h;
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 2; ++b)
      for (int c = 0; c < 2; ++c) x.push_back(at(a, b, c));
  for (int c = 0; c < 2; ++c)
    for (int b = 0; b < 2; ++b)
      for (int a = 0; a < 2; ++a) w.push_back(at(a, b, c));
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 2; ++b)
      for (int c = 0; c < 2; ++c) h.push_back(at(a, b, c));
  auto tiled = [](std::vector<int64_t> dims, std::vector<int64_t> devices, bool replicate) {
    StatusOr<TileAssignment> ta = TileAssignment::FromDevices(std::move(dims), std::move(devices));
    EXPECT_TRUE(ta.ok());
    return HloSharding::Tile(*ta, replicate);
  };
  const std::vector<HloSharding> hints = {tiled({2, 1, 4}, x, false), tiled({2, 2, 2}, w, true),
                                          tiled({4, 1, 2}, h, false)};
  TileMesh::Builder b(8, hints);
  for (const HloSharding& s : hints) EXPECT_TRUE(b.Add(s)) << s.ToString();
  TileMesh mesh = b.Build();
  EXPECT_TRUE(mesh.permuted());
  for (int i = 0; i < 3; ++i) {
    const int rank = i == 1 ? 2 : 3;
    std::optional<AxesSharding> axes = mesh.ToAxes(hints[i], rank);
    ASSERT_TRUE(axes.has_value()) << hints[i].ToString();
    EXPECT_EQ(mesh.ToHloSharding(*axes), hints[i]);
  }
}

TEST(TileMeshTest, OutOfRangeDevicesInHintsAreIgnored) {
  // Device 9 on 8 devices: invalid (reported by validation), never read as an order.
  const std::vector<HloSharding> hints = {S("{devices=[8]1,0,2,3,4,5,6,9}"), S("{devices=[8]1,0,3,2,5,4,7,6}")};
  TileMesh::Builder b(8, hints);
  EXPECT_FALSE(b.Add(hints[0]));
  TileMesh mesh = b.Build();
  EXPECT_FALSE(mesh.ToAxes(hints[0], 1).has_value());
}

}  // namespace
}  // namespace xs
