// Tests for Mesh: validation messages, the CLI text form, coordinates and printing.
#include "xshard/sharding/mesh.h"

#include <unordered_set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace xs {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(MeshTest, CreateDefaultsToRowMajorDevices) {
  StatusOr<Mesh> mesh = Mesh::Create({"a", "b"}, {4, 2});
  ASSERT_TRUE(mesh.ok()) << mesh.status().ToString();
  EXPECT_EQ(mesh->num_axes(), 2);
  EXPECT_EQ(mesh->num_devices(), 8);
  EXPECT_THAT(mesh->device_ids(), ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
  EXPECT_EQ(mesh->DeviceAt({2, 1}), 5);
  EXPECT_THAT(mesh->CoordsOf(5), ElementsAre(2, 1));
  EXPECT_EQ(mesh->ToString(), "Mesh('a': 4, 'b': 2)");
}

TEST(MeshTest, CustomDeviceOrderIsKeptAndPrinted) {
  StatusOr<Mesh> mesh = Mesh::Parse("a=4,b=2", "0,2,4,6,1,3,5,7");
  ASSERT_TRUE(mesh.ok()) << mesh.status().ToString();
  // Row-major positions: (0,0)=0 (0,1)=2 (1,0)=4 ... (3,1)=7.
  EXPECT_EQ(mesh->DeviceAt({0, 1}), 2);
  EXPECT_EQ(mesh->DeviceAt({2, 0}), 1);
  EXPECT_THAT(mesh->CoordsOf(1), ElementsAre(2, 0));
  EXPECT_EQ(mesh->ToString(), "Mesh('a': 4, 'b': 2, device_ids=[0,2,4,6,1,3,5,7])");
}

TEST(MeshTest, ParseAcceptsSpacesQuotesAndBrackets) {
  StatusOr<Mesh> mesh = Mesh::Parse(" 'x' = 2 , y=2 ", "[3, 2, 1, 0]");
  ASSERT_TRUE(mesh.ok()) << mesh.status().ToString();
  EXPECT_THAT(mesh->axis_names(), ElementsAre("x", "y"));
  EXPECT_THAT(mesh->axis_sizes(), ElementsAre(2, 2));
  EXPECT_THAT(mesh->device_ids(), ElementsAre(3, 2, 1, 0));
}

TEST(MeshTest, AxisLookup) {
  Mesh mesh = Mesh::Create({"a", "b"}, {4, 2}).value();
  EXPECT_EQ(*mesh.AxisIndex("b"), 1);
  EXPECT_TRUE(mesh.HasAxis("a"));
  EXPECT_FALSE(mesh.HasAxis("c"));
  EXPECT_EQ(mesh.AxisSize(0), 4);
  Status missing = mesh.AxisIndex("c").status();
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.message(), HasSubstr("mesh axis 'c' does not exist; the mesh has axes "
                                           "('a': 4, 'b': 2)"));
}

TEST(MeshTest, ZeroAxisMeshHasOneDevice) {
  StatusOr<Mesh> mesh = Mesh::Create({}, {});
  ASSERT_TRUE(mesh.ok());
  EXPECT_EQ(mesh->num_devices(), 1);
  EXPECT_EQ(mesh->ToString(), "Mesh()");
}

TEST(MeshTest, EqualityComparesNamesSizesAndOrder) {
  EXPECT_EQ(*Mesh::Parse("a=2"), *Mesh::Create({"a"}, {2}, {0, 1}));
  EXPECT_FALSE(*Mesh::Parse("a=2") == *Mesh::Parse("a=2", "1,0"));
  EXPECT_FALSE(*Mesh::Parse("a=2") == *Mesh::Parse("b=2"));
}

TEST(MeshTest, ErrorsNameTheAxisOrDevice) {
  auto message = [](StatusOr<Mesh> m) { return m.status().message(); };
  EXPECT_THAT(message(Mesh::Create({"a"}, {2, 2})),
              HasSubstr("mesh has 1 axis names but 2 axis sizes"));
  EXPECT_THAT(message(Mesh::Create({"a", ""}, {2, 2})),
              HasSubstr("mesh axis 1 has an empty name"));
  EXPECT_THAT(message(Mesh::Create({"a", "b", "a"}, {2, 2, 2})),
              HasSubstr("mesh axis name 'a' is used twice (axes 0 and 2)"));
  EXPECT_THAT(message(Mesh::Create({"a"}, {0})),
              HasSubstr("mesh axis 'a' has size 0; axis sizes must be >= 1"));
  EXPECT_THAT(message(Mesh::Parse("a=4,b=2", "0,1,2")),
              HasSubstr("mesh device_ids has 3 ids but the mesh ('a': 4, 'b': 2) has 8 devices"));
  EXPECT_THAT(message(Mesh::Parse("a=2", "0,2")),
              HasSubstr("mesh device id 2 is out of range; device_ids must be a permutation "
                        "of 0..1"));
  EXPECT_THAT(message(Mesh::Parse("a=2", "1,1")), HasSubstr("lists device 1 twice"));
  EXPECT_THAT(message(Mesh::Parse("a4,b=2")),
              HasSubstr("entry \"a4\" must look like name=size, e.g. a=4,b=2"));
  EXPECT_THAT(message(Mesh::Parse("a=2", "0,x")), HasSubstr("\"x\" is not a device id"));
  EXPECT_THAT(message(Mesh::Create({"a", "b"}, {2048, 1024})),
              HasSubstr("more than 8192 devices"));
}

TEST(MeshTest, EqualMeshesHashEqual) {
  Mesh a = Mesh::Create({"x", "y"}, {4, 2}).value();
  Mesh b = Mesh::Parse("x=4,y=2").value();
  Mesh c = Mesh::Create({"x", "y"}, {4, 2}, {0, 2, 4, 6, 1, 3, 5, 7}).value();
  Mesh d = Mesh::Create({"x", "y"}, {2, 4}).value();
  ASSERT_EQ(a, b);
  EXPECT_EQ(a.Hash(), b.Hash());
  std::unordered_set<Mesh> set = {a, b, c, d, Mesh::Parse("y=4,x=2").value()};
  EXPECT_EQ(set.size(), 4u);
  EXPECT_EQ(set.count(Mesh::Parse("x=4,y=2", "0,2,4,6,1,3,5,7").value()), 1u);
}

}  // namespace
}  // namespace xs
