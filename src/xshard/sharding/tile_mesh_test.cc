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

}  // namespace
}  // namespace xs
