// The partitioned forms of the ops that used to be replicated silently (cholesky, triangular-solve,
// fft, topk, batch norm): batch dims stay sharded with no collective, the dims the op transforms
// are gathered first (along those dims only); ops declared kOpReplicatedForm warn in the report.
// Expected local shapes and collectives are worked out by hand from each op's semantics.
#include <gtest/gtest.h>

#include "xshard/base/strings.h"
#include "xshard/spmd/partition_forms.h"
#include "xshard/spmd/partitioner.h"
#include "xshard/text/parser.h"
#include "xshard/text/printer.h"

namespace xs::spmd {
namespace {

StatusOr<PartitionResult> PartitionText(const std::string& body, int64_t n) {
  XS_ASSIGN_OR_RETURN(std::unique_ptr<Module> global,
                      ParseHloModule(StrCat("HloModule m, num_partitions=", n, "\n", body)));
  return Partition(*global, n);
}

std::vector<std::string> Kinds(const PartitionResult& r) {
  std::vector<std::string> out;
  for (const CollectiveRecord& c : r.report.collectives) out.push_back(c.kind);
  return out;
}

// The printed SPMD module contains `text` (the local op with its local shape).
bool Prints(const PartitionResult& r, std::string_view text) {
  return PrintHloModule(*r.module).find(text) != std::string::npos;
}

TEST(PartitionFormsTest, CholeskyWithShardedBatchDimRunsLocally) {
  StatusOr<PartitionResult> r = PartitionText(R"(ENTRY e {
  a = f32[4,3,3] parameter(0), sharding={devices=[2,1,1]<=[2]}
  ROOT c = f32[4,3,3] cholesky(a), lower=true, sharding={devices=[2,1,1]<=[2]}
})", 2);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(Kinds(*r).empty());
  EXPECT_TRUE(Prints(*r, "f32[2,3,3] cholesky(")) << PrintHloModule(*r->module);
  EXPECT_TRUE(r->report.warnings.empty());
}

TEST(PartitionFormsTest, CholeskyMatrixDimsAreNeverSplit) {
  // Rows of each matrix sharded, result sharded by batch: cholesky needs whole matrices, so the
  // row sharding moves to the batch dim with one all-to-all (never a full replication), and each
  // device factors its 2 whole 6x6 matrices.
  StatusOr<PartitionResult> r = PartitionText(R"(ENTRY e {
  a = f32[4,6,6] parameter(0), sharding={devices=[1,2,1]<=[2]}
  ROOT c = f32[4,6,6] cholesky(a), lower=true, sharding={devices=[2,1,1]<=[2]}
})", 2);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Kinds(*r), (std::vector<std::string>{"all-to-all"}));
  EXPECT_TRUE(Prints(*r, "f32[2,6,6] cholesky(")) << PrintHloModule(*r->module);
}

TEST(PartitionFormsTest, TriangularSolveFftTopKBatchNormKeepBatchShards) {
  StatusOr<PartitionResult> ts = PartitionText(R"(ENTRY e {
  a = f32[4,3,3] parameter(0), sharding={devices=[2,1,1]<=[2]}
  b = f32[4,3,5] parameter(1), sharding={devices=[2,1,1]<=[2]}
  ROOT x = f32[4,3,5] triangular-solve(a, b), left_side=true, lower=true, transpose_a=NO_TRANSPOSE, sharding={devices=[2,1,1]<=[2]}
})", 2);
  ASSERT_TRUE(ts.ok()) << ts.status().ToString();
  EXPECT_TRUE(Kinds(*ts).empty());
  EXPECT_TRUE(Prints(*ts, "f32[2,3,5] triangular-solve(")) << PrintHloModule(*ts->module);

  StatusOr<PartitionResult> fft = PartitionText(R"(ENTRY e {
  x = c64[6,8] parameter(0), sharding={devices=[2,1]<=[2]}
  ROOT f = c64[6,8] fft(x), fft_type=FFT, fft_length={8}, sharding={devices=[2,1]<=[2]}
})", 2);
  ASSERT_TRUE(fft.ok()) << fft.status().ToString();
  EXPECT_TRUE(Kinds(*fft).empty());
  EXPECT_TRUE(Prints(*fft, "c64[3,8] fft(")) << PrintHloModule(*fft->module);

  StatusOr<PartitionResult> topk = PartitionText(R"(ENTRY e {
  x = f32[4,10] parameter(0), sharding={devices=[2,1]<=[2]}
  ROOT t = (f32[4,2], s32[4,2]) topk(x), k=2, largest=true, sharding={{devices=[2,1]<=[2]}, {devices=[2,1]<=[2]}}
})", 2);
  ASSERT_TRUE(topk.ok()) << topk.status().ToString();
  EXPECT_TRUE(Kinds(*topk).empty());
  EXPECT_TRUE(Prints(*topk, "(f32[2,2], s32[2,2]) topk(")) << PrintHloModule(*topk->module);

  // Batch norm training: statistics reduce over every dim but the feature dim (1), so only the
  // feature dim may stay sharded.
  StatusOr<PartitionResult> bn = PartitionText(R"(ENTRY e {
  x = f32[8,4] parameter(0), sharding={devices=[1,2]<=[2]}
  s = f32[4] parameter(1), sharding={devices=[2]<=[2]}
  o = f32[4] parameter(2), sharding={devices=[2]<=[2]}
  ROOT b = (f32[8,4], f32[4], f32[4]) batch-norm-training(x, s, o), epsilon=0.001, feature_index=1, sharding={{devices=[1,2]<=[2]}, {devices=[2]<=[2]}, {devices=[2]<=[2]}}
})", 2);
  ASSERT_TRUE(bn.ok()) << bn.status().ToString();
  EXPECT_TRUE(Kinds(*bn).empty());
  EXPECT_TRUE(Prints(*bn, "(f32[8,2], f32[2], f32[2]) batch-norm-training("))
      << PrintHloModule(*bn->module);
}

// JAX's CPU linear algebra: LAPACK custom-calls marked num_batch_dims (as XLA registers them
// batch-partitionable). Each device factors its own matrices; the layout constraints follow the
// local operand shapes.
TEST(PartitionFormsTest, BatchPartitionableCustomCallsRunOnTheirBatchRows) {
  StatusOr<PartitionResult> r = PartitionText(R"(ENTRY e {
  a = f32[8,6,6] parameter(0), sharding={devices=[4,1,1]<=[4]}
  c = (f32[8,6,6]{1,2,0}, s32[8]{0}) custom-call(a), custom_call_target="lapack_spotrf_ffi", operand_layout_constraints={f32[8,6,6]{1,2,0}}, api_version=API_VERSION_TYPED_FFI, frontend_attributes={num_batch_dims="1"}, backend_config={uplo = 76 : ui8}
  l = f32[8,6,6] get-tuple-element(c), index=0
  b = f32[8,6,3] parameter(1), sharding={devices=[4,1,1]<=[4]}
  ROOT x = f32[8,6,3]{1,2,0} custom-call(l, b), custom_call_target="lapack_strsm_ffi", operand_layout_constraints={f32[8,6,6]{1,2,0}, f32[8,6,3]{1,2,0}}, api_version=API_VERSION_TYPED_FFI, frontend_attributes={num_batch_dims="1"}, backend_config={diag = 78 : ui8, side = 76 : ui8, trans_x = 78 : ui8, uplo = 76 : ui8}, sharding={devices=[4,1,1]<=[4]}
})",
                                              4);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(Kinds(*r).empty()) << PrintHloModule(*r->module);
  EXPECT_TRUE(Prints(*r, "(f32[2,6,6], s32[2]) custom-call(")) << PrintHloModule(*r->module);
  EXPECT_TRUE(Prints(*r, "operand_layout_constraints={f32[2,6,6]{1,2,0}, f32[2,6,3]{1,2,0}}"))
      << PrintHloModule(*r->module);

  // Matrix rows sharded: the rows are gathered (the matrices stay whole), the batch stays split.
  StatusOr<PartitionResult> rows = PartitionText(R"(ENTRY e {
  a = f32[8,6,6] parameter(0), sharding={devices=[2,2,1]<=[4]}
  ROOT c = (f32[8,6,6]{1,2,0}, s32[8]{0}) custom-call(a), custom_call_target="lapack_spotrf_ffi", api_version=API_VERSION_TYPED_FFI, frontend_attributes={num_batch_dims="1"}, backend_config={uplo = 76 : ui8}, sharding={{devices=[2,1,1,2]<=[4] last_tile_dim_replicate}, {devices=[2,2]<=[4] last_tile_dim_replicate}}
})",
                                                 4);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_EQ(Kinds(*rows), (std::vector<std::string>{"all-gather"})) << PrintHloModule(*rows->module);
  EXPECT_TRUE(Prints(*rows, "(f32[4,6,6], s32[4]) custom-call(")) << PrintHloModule(*rows->module);

  // Without the attribute, or with one that does not fit the shapes, a custom-call is opaque: it
  // runs on replicated operands.
  for (const char* attrs :
       {"", ", frontend_attributes={num_batch_dims=\"3\"}", ", frontend_attributes={num_batch_dims=\"x\"}"}) {
    StatusOr<PartitionResult> opaque =
        PartitionText(StrCat(R"(ENTRY e {
  a = f32[8,6,6] parameter(0), sharding={devices=[4,1,1]<=[4]}
  ROOT c = (f32[8,6,6], s32[8]) custom-call(a), custom_call_target="lapack_spotrf_ffi")",
                             attrs, R"(, sharding={{devices=[4,1,1]<=[4]}, {devices=[4]<=[4]}}
})"),
                      4);
    ASSERT_TRUE(opaque.ok()) << opaque.status().ToString();
    EXPECT_TRUE(Prints(*opaque, "(f32[8,6,6], s32[8]) custom-call(")) << attrs << PrintHloModule(*opaque->module);
  }
}

TEST(PartitionFormsTest, DeclaredReplicatedOpWarnsWhenItsResultIsSharded) {
  StatusOr<PartitionResult> r = PartitionText(R"(ENTRY e {
  lo = f32[] constant(0)
  hi = f32[] constant(1)
  ROOT r = f32[8,4] rng(lo, hi), distribution=rng_uniform, sharding={devices=[2,1]<=[2]}
})", 2);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->report.warnings.size(), 1u);
  EXPECT_NE(r->report.warnings[0].find("(rng): no partitioned form yet"), std::string::npos)
      << r->report.warnings[0];
}

}  // namespace
}  // namespace xs::spmd
