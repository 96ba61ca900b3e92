// The partitioned program computes each partition's offsets from partition-id (divide,
// remainder, multiply by constants) for iota tile assignments, so it does not grow with the
// partition count; only explicit device lists without an iota form keep per-partition tables.
// Every module is also run on the SPMD executor and compared with the single-device result.
#include <gtest/gtest.h>

#include "xshard/base/strings.h"
#include "xshard/spmd/partitioner.h"
#include "xshard/spmd/run_partitioned.h"
#include "xshard/text/printer.h"

namespace xs::spmd {
namespace {

// Partitions `body` for n partitions and, when `run`, checks the numbers on n devices
// (TestInputs(9)).
PartitionResult PartitionBody(const std::string& body, int64_t n, bool run = true) {
  return testing::PartitionAndCompare(body, n, testing::CompareOptions{.seeds = {9}, .compare = run});
}

std::string Copy(const std::string& shape, const std::string& from, const std::string& to) {
  return StrCat("ENTRY e {\n  p = ", shape, " parameter(0), sharding=", from, "\n  ROOT c = ", shape,
                " copy(p), sharding=", to, "\n}\n");
}

// Elements of the largest constant in the program (a per-partition table has N).
int64_t LargestConstant(const Module& m) {
  int64_t largest = 0;
  for (const Computation* c : m.computations()) {
    for (const Instruction* inst : c->instructions()) {
      if (inst->opcode() == Opcode::kConstant && inst->shape().IsArray()) {
        largest = std::max(largest, inst->shape().num_elements());
      }
    }
  }
  return largest;
}

int64_t Count(const Module& m, Opcode op) {
  int64_t n = 0;
  for (const Computation* c : m.computations()) {
    for (const Instruction* inst : c->instructions()) n += inst->opcode() == op;
  }
  return n;
}

TEST(PartitionOffsetsTest, TransposedIotaSlicesAtOffsetsComputedFromPartitionId) {
  // f32[6,10] on [2,4]<=[4,2]T(1,0): device p holds rows 3 * (p % 2) and columns 3 * (p / 2),
  // the last column block short (padding masked in the output).
  PartitionResult r =
      PartitionBody(Copy("f32[6,10]", "{replicated}", "{devices=[2,4]<=[4,2]T(1,0)}"), 8);
  ASSERT_NE(r.module, nullptr);
  EXPECT_EQ(LargestConstant(*r.module), 1) << PrintHloModule(*r.module);
  EXPECT_EQ(Count(*r.module, Opcode::kRemainder), 1);
  EXPECT_EQ(Count(*r.module, Opcode::kDivide), 1);
}

TEST(PartitionOffsetsTest, IotaWrittenAsAListUsesArithmeticToo) {
  // The same devices as {devices=[2,4]<=[4,2]T(1,0)}, given as a V1 list.
  PartitionResult r =
      PartitionBody(Copy("f32[6,10]", "{replicated}", "{devices=[2,4]0,2,4,6,1,3,5,7}"), 8);
  ASSERT_NE(r.module, nullptr);
  EXPECT_EQ(LargestConstant(*r.module), 1) << PrintHloModule(*r.module);
}

TEST(PartitionOffsetsTest, ArbitraryDeviceListKeepsATable) {
  // 3,1,0,2,7,5,4,6 has no iota form: the offsets come from a table of 8 entries.
  PartitionResult r =
      PartitionBody(Copy("f32[6,10]", "{replicated}", "{devices=[2,4]3,1,0,2,7,5,4,6}"), 8);
  ASSERT_NE(r.module, nullptr);
  EXPECT_EQ(LargestConstant(*r.module), 8) << PrintHloModule(*r.module);
}

TEST(PartitionOffsetsTest, ArbitraryListToTransposedIotaRuns) {
  PartitionResult r = PartitionBody(
      Copy("s32[7,5]", "{devices=[4,2]3,1,0,2,7,5,4,6}", "{devices=[2,4]<=[4,2]T(1,0)}"), 8);
  EXPECT_NE(r.module, nullptr);
}

TEST(PartitionOffsetsTest, ShardedIotaAndHaloSliceNeedNoTables) {
  // iota's per-partition offset and the slice's halo window offset are arithmetic too.
  PartitionResult r = PartitionBody(R"(ENTRY e {
  i = s32[16] iota(), iota_dimension=0, sharding={devices=[8]<=[8]}
  p = s32[16] parameter(0), sharding={devices=[8]<=[8]}
  a = s32[16] add(i, p), sharding={devices=[8]<=[8]}
  ROOT s = s32[14] slice(a), slice={[1:15]}, sharding={devices=[8]<=[8]}
})",
                                    8);
  ASSERT_NE(r.module, nullptr);
  EXPECT_EQ(LargestConstant(*r.module), 1) << PrintHloModule(*r.module);
}

// One MLP layer (as bench/mlp_module.h) on a = N / b, b partitions.
std::string MlpLayer(int64_t a, int64_t b) {
  const int64_t n = a * b;
  return StrCat(R"(ENTRY e {
  h = f32[512,256] parameter(0), sharding={devices=[)", a, ",1,", b, "]<=[", n,
                R"(] last_tile_dim_replicate}
  w = f32[256,256] parameter(1), sharding={devices=[1,)", b, ",", a, "]<=[", a, ",", b,
                R"(]T(1,0) last_tile_dim_replicate}
  bias = f32[256] parameter(2)
  d = f32[512,256] dot(h, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[512,256] broadcast(bias), dimensions={1}
  s = f32[512,256] add(d, bb)
  w2 = f32[256,256] parameter(3), sharding={devices=[1,)", b, ",", a, "]<=[", a, ",", b,
                R"(]T(1,0) last_tile_dim_replicate}
  ROOT d2 = f32[512,256] dot(s, w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
}

TEST(PartitionOffsetsTest, ProgramSizeDoesNotGrowWithThePartitionCount) {
  PartitionResult small = PartitionBody(MlpLayer(4, 2), 8);
  PartitionResult large = PartitionBody(MlpLayer(16, 64), 1024, /*run=*/false);
  ASSERT_NE(small.module, nullptr);
  ASSERT_NE(large.module, nullptr);
  int64_t small_count = 0, large_count = 0;
  for (const Computation* c : small.module->computations()) small_count += c->instruction_count();
  for (const Computation* c : large.module->computations()) large_count += c->instruction_count();
  EXPECT_EQ(small_count, large_count);
  EXPECT_EQ(LargestConstant(*large.module), 1) << PrintHloModule(*large.module);
  // Collectives print their groups in iota form whatever the count.
  for (const CollectiveRecord& c : large.report.collectives) {
    EXPECT_NE(c.groups.find("<="), std::string::npos) << c.groups;
  }
}

}  // namespace
}  // namespace xs::spmd
