// Mesh-axes replica groups read by the HLO parser and expanded as XLA's MeshAxesReplicaGroupList
// does; expected groups are worked out by hand from numpy's
// ids.reshape(dims).transpose(perm).reshape(groups, size). Errors pin the position and the rule.
#include "xshard/text/mesh_replica_groups.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "xshard/text/parser.h"
#include "xshard/text/printer.h"

namespace xs {
namespace {

using ::testing::HasSubstr;
using Groups = std::vector<std::vector<int64_t>>;

constexpr std::string_view kHead =
    "HloModule m, num_partitions=8\n"
    "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
    "ENTRY e {\n  p = f32[] parameter(0)\n";
// The all-reduce is on line 9; its replica_groups value starts after this prefix.
constexpr std::string_view kPrefix =
    "  ROOT r = f32[] all-reduce(p), channel_id=1, to_apply=add, replica_groups=";
constexpr std::string_view kTail = ", use_global_device_ids=true\n}\n";

std::string ModuleText(std::string_view groups) { return StrCat(kHead, kPrefix, groups, kTail); }

StatusOr<std::unique_ptr<Module>> ParseGroups(std::string_view groups) {
  return ParseHloModule(ModuleText(groups), "t.hlo");
}

const ReplicaGroups* GroupsOf(const Module& m) {
  const Instruction* r = m.entry()->root();
  return r && r->attrs().replica_groups ? &*r->attrs().replica_groups : nullptr;
}

Groups Expand(std::string_view groups) {
  StatusOr<std::unique_ptr<Module>> m = ParseGroups(groups);
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (!m.ok()) return {};
  const ReplicaGroups* rg = GroupsOf(**m);
  EXPECT_NE(rg, nullptr) << groups << " left no replica_groups";
  if (rg == nullptr) return {};
  EXPECT_EQ(rg->mesh_form, groups);
  EXPECT_TRUE((*m)->entry()->root()->attrs().other.empty()) << "kept as an unparsed attribute";
  return rg->Groups();
}

// The parse error for `groups`, which must point at the first occurrence of `at` in it.
void ExpectError(std::string_view groups, std::string_view at, std::string_view message) {
  StatusOr<std::unique_ptr<Module>> m = ParseGroups(groups);
  ASSERT_FALSE(m.ok()) << groups << " parsed";
  const size_t offset = groups.find(at);
  ASSERT_NE(offset, std::string_view::npos) << at;
  const std::string location = StrCat("t.hlo:9:", kPrefix.size() + offset + 1, ": error: ");
  EXPECT_THAT(m.status().message(), HasSubstr(location)) << m.status().message();
  EXPECT_THAT(m.status().message(), HasSubstr(message));
}

TEST(MeshAxesReplicaGroups, MinorAxisGroupsNeighbours) {
  EXPECT_EQ(Expand("mesh['x'=4,'y'=2] {'y'}"), (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
}

TEST(MeshAxesReplicaGroups, MajorAxisGroupsStrided) {
  EXPECT_EQ(Expand("mesh['x'=4,'y'=2] {'x'}"), (Groups{{0, 2, 4, 6}, {1, 3, 5, 7}}));
}

TEST(MeshAxesReplicaGroups, AxesInGivenOrderMakeOneGroup) {
  // transpose(1, 0) of [[0,1],[2,3],[4,5],[6,7]] flattened.
  EXPECT_EQ(Expand("mesh['x'=4,'y'=2] {'y','x'}"), (Groups{{0, 2, 4, 6, 1, 3, 5, 7}}));
  EXPECT_EQ(Expand("mesh['x'=4,'y'=2] {'x','y'}"), (Groups{{0, 1, 2, 3, 4, 5, 6, 7}}));
}

TEST(MeshAxesReplicaGroups, JaxSizeOneAxisAndNoAxes) {
  // What JAX 0.10 prints for a 2-device all-gather.
  EXPECT_EQ(Expand("mesh['axis_0'=2,'axis_1'=1] {'axis_0'}"), (Groups{{0, 1}}));
  EXPECT_EQ(Expand("mesh['x'=2] {}"), (Groups{{0}, {1}}));
}

TEST(MeshAxesReplicaGroups, SubAxisTakesTheMiddleFactor) {
  // a=8 as [pre=2, size=2, rest=2]; group over the middle: device 4i + 2j + k, grouped over j.
  EXPECT_EQ(Expand("mesh['a'=8] {'a':(2)2}"), (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
  // Two sub-axes (1)2 and (4)2 of a=8: dims [2,2,2], grouped over dims 0 and 2, in that order.
  EXPECT_EQ(Expand("mesh['a'=8] {'a':(1)2,'a':(4)2}"), (Groups{{0, 1, 4, 5}, {2, 3, 6, 7}}));
  // Listed minor first: the minor piece varies slowest within a group.
  EXPECT_EQ(Expand("mesh['a'=8] {'a':(4)2,'a':(1)2}"), (Groups{{0, 4, 1, 5}, {2, 6, 3, 7}}));
}

TEST(MeshAxesReplicaGroups, ExplicitDeviceIdsArePermuted) {
  // ids [[0,2],[1,3]]; groups along y: {0,2} and {1,3}.
  EXPECT_EQ(Expand("mesh['x'=2,'y'=2], device_ids=(0,2,1,3) {'y'}"), (Groups{{0, 2}, {1, 3}}));
  EXPECT_EQ(Expand("mesh['x'=2,'y'=2], device_ids=(3,2,1,0) {'x'}"), (Groups{{3, 1}, {2, 0}}));
}

TEST(MeshAxesReplicaGroups, IotaDeviceIdsAsXlaPrintsThem) {
  // arange(8).reshape(4,2).T = [0,2,4,6,1,3,5,7] as [[0,2,4,6],[1,3,5,7]]; groups along axis_1.
  EXPECT_EQ(Expand("mesh['axis_0'=2,'axis_1'=4], device_ids=([4,2]T(1,0)) {'axis_1'}"),
            (Groups{{0, 2, 4, 6}, {1, 3, 5, 7}}));
  // tests/data/xla_compiled/uneven_swap.txt: arange(8).reshape(2,2,2).transpose(0,2,1) =
  // [[0,2,1,3],[4,6,5,7]]; axis_1 as [pre=2, size=2], grouped over the size-2 piece.
  EXPECT_EQ(Expand("mesh['axis_0'=2,'axis_1'=4], device_ids=([2,2,2]T(0,2,1)) {'axis_1':(2)2}"),
            (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
}

TEST(MeshAxesReplicaGroups, PrintsAsWrittenAndReparsesEqual) {
  const std::string groups = "mesh['x'=2,'y'=4], device_ids=([2,2,2]T(0,2,1)) {'y':(2)2}";
  StatusOr<std::unique_ptr<Module>> m = ParseGroups(groups);
  ASSERT_TRUE(m.ok()) << m.status().message();
  const std::string printed = PrintHloModule(**m);
  EXPECT_THAT(printed, HasSubstr(StrCat("replica_groups=", groups, ",")));
  StatusOr<std::unique_ptr<Module>> again = ParseHloModule(printed, "printed.hlo");
  ASSERT_TRUE(again.ok()) << again.status().message();
  ASSERT_NE(GroupsOf(**again), nullptr);
  EXPECT_EQ(*GroupsOf(**again), *GroupsOf(**m));
  EXPECT_EQ(GroupsOf(**again)->Groups(), (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
}

TEST(MeshAxesReplicaGroups, UnknownAxisIsAnErrorNamingTheMeshAxes) {
  ExpectError("mesh['x'=4,'y'=2] {'z'}", "'z'", "the mesh has no axis 'z' (it has 'x', 'y')");
}

TEST(MeshAxesReplicaGroups, SubAxisThatDoesNotDivideIsAnError) {
  ExpectError("mesh['x'=4] {'x':(3)2}", "'x':", "pre_size * size dividing the axis size 4");
  ExpectError("mesh['x'=4] {'x':(1)1}", "'x':", "size >= 2");
}

TEST(MeshAxesReplicaGroups, AxisNamedTwiceIsAnError) {
  ExpectError("mesh['x'=4,'y'=2] {'y','x','y'}", "'y'}", "axis 'y' is named twice");
  ExpectError("mesh['a'=8] {'a','a':(2)2}", "'a':", "axis 'a' is named twice");
  ExpectError("mesh['a'=8] {'a':(1)4,'a':(2)2}", "'a':(2)", "sub-axes of 'a' overlap");
  ExpectError("mesh['x'=2,'x'=2] {'x'}", "'x'=2]", "the mesh names axis 'x' twice");
}

TEST(MeshAxesReplicaGroups, DeviceIdsThatAreNotAPermutationAreAnError) {
  ExpectError("mesh['x'=2,'y'=2], device_ids=(0,0,1,3) {'y'}", "0,0",
              "device_ids must list each of 0..3 once");
  ExpectError("mesh['x'=2,'y'=2], device_ids=(0,1,2) {'y'}", "0,1", "but lists 3");
  ExpectError("mesh['x'=2,'y'=2], device_ids=(0,1,2,3,4) {'y'}", "4)", "more than 4 ids");
  ExpectError("mesh['x'=2,'y'=2], device_ids=([2,4]T(1,0)) {'y'}", "[2,4]",
              "holds 8 devices but the mesh has 4");
  ExpectError("mesh['x'=2,'y'=2], device_ids=([2,2]T(0,0)) {'y'}", "[2,2]",
              "must be a permutation of its reshape dims");
}

TEST(MeshAxesReplicaGroups, MoreDevicesThanTheLimitIsAnError) {
  ExpectError("mesh['x'=8192,'y'=2] {'y'}", "2]", "multiply to at most 8192 devices");
  ExpectError("mesh['x'=0] {'x'}", "0]", "mesh axis sizes must be >= 1");
  ExpectError("mesh['x'=2], device_ids=([9000]) {'x'}", "9000", "at most 8192 devices");
}

TEST(MeshAxesReplicaGroups, MalformedTextIsAnError) {
  ExpectError("mesh['x'=2], to_apply=add", "to_apply",
              "expected ' {axes}' or ', device_ids=(...)'");
  ExpectError("mesh['x'=2] {'x':2}", "2}", "expected '('");
  ExpectError("mesh['x'=2 {'x'}", "{", "expected ']'");
}

}  // namespace
}  // namespace xs
