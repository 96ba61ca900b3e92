// Windowed einsum: dots whose operand would be all-gathered, or whose result would be
// reduce-scattered, become a collective-permute loop under PartitionOptions::
// windowed_einsum_threshold_bytes. Each case is run on N devices (NaN in padding) against the
// single-device result, and the loop's structure (while / collective-permute / all-gather counts,
// ring pairs, trip count) is pinned; the pairs are derived by hand from the tile assignments.
#include <gtest/gtest.h>

#include "xshard/base/strings.h"
#include "xshard/spmd/partitioner.h"
#include "xshard/spmd/run_partitioned.h"
#include "xshard/text/printer.h"

namespace xs::spmd {
namespace {

// Partitions `entry` (an ENTRY computation) for n partitions with the given threshold and checks
// the numbers against the single-device run (TestInputs(5)).
PartitionResult Check(const std::string& entry, int64_t n, int64_t threshold) {
  testing::CompareOptions options{.seeds = {5}};
  options.partition.windowed_einsum_threshold_bytes = threshold;
  return testing::PartitionAndCompare(entry, n, options);
}

// Instructions with `opcode` in every computation of the partitioned module.
int Count(const PartitionResult& p, Opcode opcode) {
  int count = 0;
  for (const Computation* c : p.module->computations()) {
    for (const Instruction* inst : c->instructions()) count += inst->opcode() == opcode;
  }
  return count;
}

const CollectiveRecord* FindKind(const PartitionResult& p, std::string_view kind) {
  for (const CollectiveRecord& c : p.report.collectives) {
    if (c.kind == kind) return &c;
  }
  return nullptr;
}

// "{{1,0},{2,1},...}": each device receives from the next ring position of its group.
std::string RingPairs(const std::vector<std::vector<int64_t>>& groups) {
  std::vector<std::string> parts;
  for (const auto& g : groups) {
    for (size_t r = 0; r < g.size(); ++r) parts.push_back(StrCat("{", g[(r + 1) % g.size()], ",", g[r], "}"));
  }
  return StrCat("{", StrJoin(parts, ","), "}");
}

std::vector<std::vector<int64_t>> Iota(int64_t n) {
  std::vector<int64_t> g;
  for (int64_t i = 0; i < n; ++i) g.push_back(i);
  return {g};
}

void ExpectWindowLoop(const PartitionResult& p, const std::string& reason, const std::string& pairs,
                      int64_t trips) {
  EXPECT_EQ(Count(p, Opcode::kWhile), 1);
  EXPECT_EQ(Count(p, Opcode::kCollectivePermute), 1);
  EXPECT_EQ(Count(p, Opcode::kAllGather), 0);
  EXPECT_EQ(Count(p, Opcode::kReduceScatter), 0);
  // n dot steps: one in the loop body (n-1 trips), one peeled outside.
  EXPECT_EQ(Count(p, Opcode::kDot), 2);
  const CollectiveRecord* cp = FindKind(p, "collective-permute");
  ASSERT_NE(cp, nullptr) << FormatReport(p.report);
  EXPECT_EQ(cp->reason, reason);
  EXPECT_EQ(cp->cause, "d");
  EXPECT_EQ(cp->groups, pairs);
  for (const Computation* c : p.module->computations()) {
    for (const Instruction* inst : c->instructions()) {
      if (inst->opcode() == Opcode::kWhile) {
        EXPECT_EQ(inst->attrs().backend_config.value_or(""),
                  StrCat("{\"known_trip_count\":{\"n\":\"", trips, "\"}}"));
      }
    }
  }
}

// x[16,8] rows split n ways, y[8,16] columns split n ways, result rows split: y is all-gathered
// without the option.
std::string AllGatherRhs(int64_t n) {
  return StrCat(R"(ENTRY e {
  x = f32[16,8] parameter(0), sharding={devices=[)", n, ",1]<=[", n, R"(]}
  y = f32[8,16] parameter(1), sharding={devices=[1,)", n, "]<=[", n, R"(]}
  ROOT d = f32[16,16] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={devices=[)",
                n, ",1]<=[", n, "]}\n}\n");
}

// x[8,64] and y[64,8] split on the contracting dim n ways, result rows split: a reduce-scatter
// without the option.
std::string ReduceScatterRows(int64_t n) {
  return StrCat(R"(ENTRY e {
  x = f32[8,64] parameter(0), sharding={devices=[1,)", n, "]<=[", n, R"(]}
  y = f32[64,8] parameter(1), sharding={devices=[)", n, ",1]<=[", n, R"(]}
  ROOT d = f32[8,8] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={devices=[)",
                n, ",1]<=[", n, "]}\n}\n");
}

TEST(WindowedEinsumTest, AllGatherOfRhsBecomesAPermuteLoopOn2And4And8Partitions) {
  for (int64_t n : {2, 4, 8}) {
    SCOPED_TRACE(n);
    PartitionResult p = Check(AllGatherRhs(n), n, 0);
    ExpectWindowLoop(p, StrCat("windowed einsum (all-gather of rhs overlapped with ", n, " dot steps)"),
                     RingPairs(Iota(n)), n - 1);
  }
}

TEST(WindowedEinsumTest, OffByDefaultTheRhsIsAllGathered) {
  EXPECT_EQ(PartitionOptions{}.windowed_einsum_threshold_bytes, -1);
  PartitionResult p = Check(AllGatherRhs(4), 4, -1);
  EXPECT_EQ(Count(p, Opcode::kWhile), 0);
  EXPECT_EQ(Count(p, Opcode::kCollectivePermute), 0);
  EXPECT_EQ(Count(p, Opcode::kAllGather), 1);
}

TEST(WindowedEinsumTest, ThresholdComparesTheGatheredOperandsGlobalBytes) {
  // y = f32[8,16] is 512 bytes (the result is 1024, x 512).
  PartitionResult at = Check(AllGatherRhs(4), 4, 512);
  EXPECT_EQ(Count(at, Opcode::kWhile), 1);
  EXPECT_EQ(Count(at, Opcode::kAllGather), 0);
  PartitionResult above = Check(AllGatherRhs(4), 4, 513);
  EXPECT_EQ(Count(above, Opcode::kWhile), 0);
  EXPECT_EQ(Count(above, Opcode::kCollectivePermute), 0);
  EXPECT_EQ(Count(above, Opcode::kAllGather), 1);
}

TEST(WindowedEinsumTest, AllGatherOfLhsFillsResultRows) {
  // The result wants the columns split, so x (rows split) is the operand that travels.
  PartitionResult p = Check(R"(ENTRY e {
  x = f32[16,8] parameter(0), sharding={devices=[4,1]<=[4]}
  y = f32[8,12] parameter(1), sharding={devices=[1,4]<=[4]}
  ROOT d = f32[16,12] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={devices=[1,4]<=[4]}
}
)", 4, 0);
  ExpectWindowLoop(p, "windowed einsum (all-gather of lhs overlapped with 4 dot steps)", RingPairs(Iota(4)), 3);
}

TEST(WindowedEinsumTest, RingFollowsTheTileAssignmentOrder) {
  // Tiles held by devices 0,2,1,3: ring positions 0..3 are devices 0,2,1,3, so 0 receives from
  // 2, 2 from 1, 1 from 3 and 3 from 0.
  PartitionResult p = Check(R"(ENTRY e {
  x = f32[16,8] parameter(0), sharding={devices=[4,1]<=[2,2]T(1,0)}
  y = f32[8,16] parameter(1), sharding={devices=[1,4]<=[2,2]T(1,0)}
  ROOT d = f32[16,16] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={devices=[4,1]<=[2,2]T(1,0)}
}
)", 4, 0);
  ExpectWindowLoop(p, "windowed einsum (all-gather of rhs overlapped with 4 dot steps)",
                   "{{2,0},{1,2},{3,1},{0,3}}", 3);
}

TEST(WindowedEinsumTest, AllGatherWithABatchDimRingsOverTheOtherAxis) {
  // Batch split 2 ways on the major axis; the ring runs over the minor axis (pairs {0,1}, {2,3}
  // for 4 devices; groups {0..3}, {4..7} for 8).
  for (int64_t n : {4, 8}) {
    SCOPED_TRACE(n);
    const int64_t m = n / 2;
    PartitionResult p = Check(StrCat(R"(ENTRY e {
  x = f32[2,16,6] parameter(0), sharding={devices=[2,)", m, ",1]<=[", n, R"(]}
  y = f32[2,6,8] parameter(1), sharding={devices=[2,1,)", m, "]<=[", n, R"(]}
  ROOT d = f32[2,16,8] dot(x, y), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}, sharding={devices=[2,)",
                                 m, ",1]<=[", n, "]}\n}\n"),
                          n, 0);
    std::vector<std::vector<int64_t>> groups(2);
    for (int64_t i = 0; i < n; ++i) groups[i / m].push_back(i);
    ExpectWindowLoop(p, StrCat("windowed einsum (all-gather of rhs overlapped with ", m, " dot steps)"),
                     RingPairs(groups), m - 1);
  }
}

TEST(WindowedEinsumTest, ContractingDimOnAnotherAxisIsAllReducedAfterTheLoop) {
  // Rows on the major axis (the ring: the rhs columns travel), the contracting dim on the minor
  // axis: the loop's result holds partial sums over the minor axis.
  PartitionResult p = Check(R"(ENTRY e {
  x = f32[16,8] parameter(0), sharding={devices=[2,2]<=[4]}
  y = f32[8,16] parameter(1), sharding={devices=[2,2]<=[2,2]T(1,0)}
  ROOT d = f32[16,16] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}
}
)", 4, 0);
  EXPECT_EQ(Count(p, Opcode::kWhile), 1);
  EXPECT_EQ(Count(p, Opcode::kCollectivePermute), 1);
  EXPECT_EQ(Count(p, Opcode::kAllGather), 0);
  EXPECT_EQ(Count(p, Opcode::kAllReduce), 1);
  const CollectiveRecord* cp = FindKind(p, "collective-permute");
  ASSERT_NE(cp, nullptr);
  EXPECT_EQ(cp->groups, "{{2,0},{0,2},{3,1},{1,3}}");
  const CollectiveRecord* ar = FindKind(p, "all-reduce");
  ASSERT_NE(ar, nullptr);
  EXPECT_EQ(ar->explicit_groups, "{{0,1},{2,3}}");
}

TEST(WindowedEinsumTest, ReduceScatterBecomesAnAccumulatorLoopOn2And4And8Partitions) {
  for (int64_t n : {2, 4, 8}) {
    SCOPED_TRACE(n);
    PartitionResult off = Check(ReduceScatterRows(n), n, -1);
    EXPECT_EQ(Count(off, Opcode::kReduceScatter), 1);
    EXPECT_EQ(Count(off, Opcode::kWhile), 0);
    PartitionResult p = Check(ReduceScatterRows(n), n, 0);
    ExpectWindowLoop(p, StrCat("windowed einsum (reduce-scatter of the result overlapped with ", n, " dot steps)"),
                     RingPairs(Iota(n)), n - 1);
    EXPECT_EQ(Count(p, Opcode::kAllReduce), 0);
  }
}

TEST(WindowedEinsumTest, ReduceScatterThresholdComparesTheResultsGlobalBytes) {
  // The result f32[8,8] is 256 bytes; the operands (2048 each) do not count.
  EXPECT_EQ(Count(Check(ReduceScatterRows(4), 4, 256), Opcode::kWhile), 1);
  PartitionResult above = Check(ReduceScatterRows(4), 4, 257);
  EXPECT_EQ(Count(above, Opcode::kWhile), 0);
  EXPECT_EQ(Count(above, Opcode::kReduceScatter), 1);
}

TEST(WindowedEinsumTest, ReduceScatterOnRhsColumnsSlicesTheRhs) {
  PartitionResult p = Check(R"(ENTRY e {
  x = f32[8,64] parameter(0), sharding={devices=[1,4]<=[4]}
  y = f32[64,12] parameter(1), sharding={devices=[4,1]<=[4]}
  ROOT d = f32[8,12] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={devices=[1,4]<=[4]}
}
)", 4, 0);
  ExpectWindowLoop(p, "windowed einsum (reduce-scatter of the result overlapped with 4 dot steps)",
                   RingPairs(Iota(4)), 3);
}

TEST(WindowedEinsumTest, ReduceScatterWithABatchDim) {
  for (int64_t n : {4, 8}) {
    SCOPED_TRACE(n);
    const int64_t m = n / 2;
    PartitionResult p = Check(StrCat(R"(ENTRY e {
  x = f32[2,8,32] parameter(0), sharding={devices=[2,1,)", m, "]<=[", n, R"(]}
  y = f32[2,32,8] parameter(1), sharding={devices=[2,)", m, ",1]<=[", n, R"(]}
  ROOT d = f32[2,8,8] dot(x, y), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}, sharding={devices=[2,)",
                                 m, ",1]<=[", n, "]}\n}\n"),
                          n, 0);
    std::vector<std::vector<int64_t>> groups(2);
    for (int64_t i = 0; i < n; ++i) groups[i / m].push_back(i);
    ExpectWindowLoop(p, StrCat("windowed einsum (reduce-scatter of the result overlapped with ", m, " dot steps)"),
                     RingPairs(groups), m - 1);
  }
}

TEST(WindowedEinsumTest, DotInsideAWhileBodyGetsItsOwnLoop) {
  PartitionResult p = Check(R"(
body {
  p = (s32[], f32[16,8], f32[8,16]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[16,8] get-tuple-element(p), index=1
  y = f32[8,16] get-tuple-element(p), index=2
  d = f32[16,16] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={devices=[4,1]<=[4]}
  s = f32[16,8] slice(d), slice={[0:16], [0:8]}
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  ROOT t = (s32[], f32[16,8], f32[8,16]) tuple(i1, s, y)
}
cond {
  p = (s32[], f32[16,8], f32[8,16]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  two = s32[] constant(2)
  ROOT lt = pred[] compare(i, two), direction=LT
}
ENTRY e {
  x = f32[16,8] parameter(0), sharding={devices=[4,1]<=[4]}
  y = f32[8,16] parameter(1), sharding={devices=[1,4]<=[4]}
  zero = s32[] constant(0)
  t = (s32[], f32[16,8], f32[8,16]) tuple(zero, x, y)
  w = (s32[], f32[16,8], f32[8,16]) while(t), condition=cond, body=body
  ROOT r = f32[16,8] get-tuple-element(w), index=1, sharding={devices=[4,1]<=[4]}
}
)", 4, 0);
  EXPECT_EQ(Count(p, Opcode::kWhile), 2);
  EXPECT_EQ(Count(p, Opcode::kCollectivePermute), 1);
  EXPECT_EQ(Count(p, Opcode::kAllGather), 0) << FormatReport(p.report);
}

TEST(WindowedEinsumTest, UnevenDimsFallBackToTheAllGather) {
  // 10 columns over 4 devices leave padding: not eligible, partitioned as usual.
  PartitionResult p = Check(R"(ENTRY e {
  x = f32[16,8] parameter(0), sharding={devices=[4,1]<=[4]}
  y = f32[8,10] parameter(1), sharding={devices=[1,4]<=[4]}
  ROOT d = f32[16,10] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={devices=[4,1]<=[4]}
}
)", 4, 0);
  EXPECT_EQ(Count(p, Opcode::kWhile), 0);
  EXPECT_EQ(Count(p, Opcode::kCollectivePermute), 0);
  EXPECT_EQ(Count(p, Opcode::kAllGather), 1);
}

TEST(WindowedEinsumTest, UnevenContractingDimFallsBackToTheReduceScatter) {
  PartitionResult p = Check(R"(ENTRY e {
  x = f32[8,62] parameter(0), sharding={devices=[1,4]<=[4]}
  y = f32[62,8] parameter(1), sharding={devices=[4,1]<=[4]}
  ROOT d = f32[8,8] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={devices=[4,1]<=[4]}
}
)", 4, 0);
  EXPECT_EQ(Count(p, Opcode::kWhile), 0);
  EXPECT_EQ(Count(p, Opcode::kReduceScatter), 1);
}

TEST(WindowedEinsumTest, ProgramSizeDoesNotGrowWithTheRing) {
  // Block sizes 12 and 6 coincide with no other constant of either program.
  std::vector<int> counts;
  for (int64_t n : {4, 8}) {
    PartitionResult p = Check(StrCat(R"(ENTRY e {
  x = f32[16,8] parameter(0), sharding={devices=[)", n, ",1]<=[", n, R"(]}
  y = f32[8,48] parameter(1), sharding={devices=[1,)", n, "]<=[", n, R"(]}
  ROOT d = f32[16,48] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={devices=[)",
                                 n, ",1]<=[", n, "]}\n}\n"),
                          n, 0);
    EXPECT_EQ(Count(p, Opcode::kWhile), 1);
    int count = 0;
    for (const Computation* c : p.module->computations()) count += c->instruction_count();
    counts.push_back(count);
  }
  EXPECT_EQ(counts[0], counts[1]);
}

TEST(WindowedEinsumTest, ReportNamesTheWindowedEinsum) {
  PartitionResult p = Check(AllGatherRhs(4), 4, 0);
  const std::string text = FormatReport(p.report);
  EXPECT_NE(text.find("windowed einsum (all-gather of rhs overlapped with 4 dot steps)"), std::string::npos) << text;
}

}  // namespace
}  // namespace xs::spmd
