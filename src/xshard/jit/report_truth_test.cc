// `--report` describes the program that runs: after cse / dce, the report lists exactly the
// collectives of the printed SPMD module, with bytes recounted here from each instruction's shape
// and replica groups (ring model), and FLOPs recounted from its dots and
// convolutions.
#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "xshard/base/strings.h"
#include "xshard/jit/compile_pipeline.h"
#include "xshard/text/parser.h"

namespace xs {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Bytes one device receives for `inst`, from its shape and groups alone: all-gather (g-1)/g of
// its result, all-reduce 2(g-1)/g, reduce-scatter and all-to-all (g-1)/g of the operand,
// collective-permute the whole operand.
int64_t RingBytes(const Instruction& inst) {
  const Attributes& a = inst.attrs();
  int64_t g = 1;
  if (a.replica_groups && !a.replica_groups->Groups().empty()) {
    g = static_cast<int64_t>(a.replica_groups->Groups()[0].size());
  }
  const int64_t result = inst.shape().byte_size();
  const int64_t operand = inst.operand(0)->shape().byte_size();
  switch (inst.opcode()) {
    case Opcode::kAllGather: return result * (g - 1) / g;
    case Opcode::kAllReduce: return 2 * result * (g - 1) / g;
    case Opcode::kReduceScatter:
    case Opcode::kAllToAll: return operand * (g - 1) / g;
    case Opcode::kCollectivePermute: return operand;
    default: return -1;
  }
}

struct Counted {
  std::multiset<std::string> names;  // "kind name"
  int64_t bytes = 0;
  double flops = 0;
};

Counted CountProgram(const Module& m) {
  Counted c;
  for (const Computation* comp : m.computations()) {
    for (const Instruction* inst : comp->instructions()) {
      if (IsCollective(inst->opcode())) {
        c.names.insert(StrCat(OpcodeName(inst->opcode()), " ", inst->name()));
        c.bytes += RingBytes(*inst);
      }
      if (inst->opcode() == Opcode::kDot) {
        double k = 1;
        for (int64_t d : inst->attrs().dot->lhs_contracting) k *= static_cast<double>(inst->operand(0)->shape().dim(static_cast<int>(d)));
        c.flops += 2 * static_cast<double>(inst->shape().num_elements()) * k;
      }
      if (inst->opcode() == Opcode::kConvolution) {
        // Each output element: input features x kernel window multiply-adds.
        const ConvolutionDimensionNumbers& d = *inst->attrs().conv_dims;
        const Shape& kernel = inst->operand(1)->shape();
        double k = static_cast<double>(kernel.dim(static_cast<int>(d.kernel_input_feature)));
        for (int64_t s : d.kernel_spatial) k *= static_cast<double>(kernel.dim(static_cast<int>(s)));
        c.flops += 2 * static_cast<double>(inst->shape().num_elements()) * k;
      }
    }
  }
  return c;
}

void ExpectReportMatchesProgram(const std::string& text, const std::string& what, int64_t min_dropped = 0) {
  StatusOr<std::unique_ptr<Module>> m = ParseHloModule(text, what);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  // The partitioner's own record (no cleanup) and the pipeline's (after cse / dce).
  CompileOptions raw_options;
  raw_options.cleanup = false;
  StatusOr<CompiledModule> raw = CompileModule(**m, 8, raw_options);
  ASSERT_TRUE(raw.ok()) << what << ": " << raw.status().ToString();
  StatusOr<CompiledModule> r = CompileModule(**m, 8);
  ASSERT_TRUE(r.ok()) << what << ": " << r.status().ToString();
  const spmd::PartitionReport& report = r->partitioned.report;
  const Counted program = CountProgram(*r->partitioned.module);
  std::multiset<std::string> reported;
  for (const spmd::CollectiveRecord& c : report.collectives) {
    reported.insert(StrCat(c.kind, " ", c.name));
    EXPECT_FALSE(c.cause.empty()) << what << ": " << c.name << " names no cause";
  }
  EXPECT_EQ(reported, program.names) << what;
  EXPECT_EQ(report.TotalCollectiveBytes(), program.bytes) << what;
  EXPECT_DOUBLE_EQ(report.flops, program.flops) << what;
  EXPECT_GE(raw->partitioned.report.collectives.size(), report.collectives.size() + min_dropped) << what;
  const spmd::MachineModel& mm = report.machine;
  double latency_us = 0;
  for (const std::string& name : program.names) {
    const std::string kind = name.substr(0, name.find(' '));
    latency_us += kind == "collective-permute" ? 0.4 * mm.collective_latency_us : mm.collective_latency_us;
  }
  EXPECT_NEAR(report.EstimatedSeconds(),
              static_cast<double>(program.bytes) / (mm.link_gbps * 1e9) + latency_us * 1e-6 +
                  program.flops / (mm.device_gflops * 1e9),
              1e-12)
      << what;
}

TEST(ReportTruthTest, TotalsEqualTheCollectivesOfTheFinalProgram) {
  const std::string dir = std::string(XSHARD_SOURCE_DIR) + "/tests/data/";
  for (const char* file : {"spmd_partition/seed000_inner.hlo", "spmd_partition/seed000_mismatch.hlo",
                           "spmd_partition/seed000_outer.hlo", "spmd_partition/seed000_full.hlo",
                           "propagate/mlp.hlo", "propagate/reduce.hlo", "propagate/reshape_chain.hlo",
                           "propagate/conv_pad_slice.hlo"}) {
    SCOPED_TRACE(file);
    ExpectReportMatchesProgram(Read(dir + file), file);
  }
}

TEST(ReportTruthTest, CollectivesOfDeadAnnotatedReshapesAreNotReported) {
  // As JAX emits them: `reshape ... sharding=` lines nobody uses. Replicating `dead` would
  // all-gather x; dce deletes that all-gather, so the report must not list it. The output n stays
  // sharded like x: the final program has no collective at all.
  const std::string text = R"(HloModule dead, num_partitions=8
ENTRY e {
  x = f32[8,8] parameter(0), sharding={devices=[8,1]<=[8]}
  dead = f32[8,8] reshape(x), sharding={replicated}
  ROOT n = f32[8,8] negate(x)
})";
  ExpectReportMatchesProgram(text, "dead", /*min_dropped=*/1);
  StatusOr<std::unique_ptr<Module>> m = ParseHloModule(text, "dead");
  ASSERT_TRUE(m.ok());
  StatusOr<CompiledModule> r = CompileModule(**m, 8);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->partitioned.report.collectives.empty());
}

TEST(ReportTruthTest, DeadCollectiveNamedLikeALiveOneInAnotherComputationIsNotReported) {
  // jnp.flip and jnp.roll of P('x') rows (bench/xla_compare's reverse_roll), each in its own
  // called computation: the flip's collective-permute and the roll's dead slice window (the
  // rotation reads around the slices) are both named "collective-permute". dce deletes the
  // window; matching the report to the program by name alone kept it listed.
  ExpectReportMatchesProgram(R"(HloModule roll, num_partitions=8
flip {
  a = f32[16,4] parameter(0)
  ROOT r = f32[16,4] reverse(a), dimensions={0}
}
roll {
  a = f32[16,4] parameter(0)
  s2 = f32[3,4] slice(a), slice={[13:16], [0:4]}
  s3 = f32[13,4] slice(a), slice={[0:13], [0:4]}
  ROOT c = f32[16,4] concatenate(s2, s3), dimensions={0}
}
ENTRY e {
  a = f32[16,4] parameter(0), sharding={devices=[8,1]<=[8]}
  f = f32[16,4] call(a), to_apply=flip
  g = f32[16,4] call(a), to_apply=roll
  ROOT t = (f32[16,4], f32[16,4]) tuple(f, g)
})", "roll", /*min_dropped=*/1);
}

TEST(ReportTruthTest, AllReduceBytesRoundOnceAsTheRingModelDoes) {
  // x.sum() of P('x','y') on 2 x 4: a scalar f32 all-reduce over all 8 devices receives
  // 2 * 4 * 7 / 8 = 7 B; the report rounded (4 * 7 / 8) first and said 6 B.
  ExpectReportMatchesProgram(R"(HloModule scalar, num_partitions=8
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY e {
  x = f32[16,32] parameter(0), sharding={devices=[2,4]<=[8]}
  z = f32[] constant(0)
  ROOT r = f32[] reduce(x, z), dimensions={0,1}, to_apply=sum
})", "scalar");
}

}  // namespace
}  // namespace xs
