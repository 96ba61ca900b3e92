// DCE, CSE and the pipeline on small modules written as HLO text.
#include <gtest/gtest.h>

#include <sstream>

#include "xshard/base/strings.h"
#include "xshard/ir/verifier.h"
#include "xshard/passes/cse.h"
#include "xshard/passes/dce.h"
#include "xshard/passes/gather_batch_dims.h"
#include "xshard/passes/pipeline.h"
#include "xshard/text/parse_test_util.h"
#include "xshard/text/printer.h"

namespace xs {
namespace {

using xs::testing::ParseOrFail;

std::vector<std::string> Names(const Computation& c) {
  std::vector<std::string> out;
  for (const Instruction* i : c.instructions()) out.push_back(i->name());
  return out;
}

TEST(DceTest, RemovesUnusedInstructionsAndComputationsButKeepsSideEffects) {
  std::unique_ptr<Module> m = ParseOrFail(R"(HloModule m
unused { a = f32[] parameter(0)
 ROOT n = f32[] negate(a) }
ENTRY e {
  x = f32[4] parameter(0)
  dead = f32[4] add(x, x)
  dead2 = f32[4] multiply(dead, x)
  effect = f32[4] custom-call(x), custom_call_target="log", custom_call_has_side_effect=true
  ROOT n = f32[4] negate(x)
})");
  StatusOr<bool> changed = RemoveDeadCode(*m);
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(Names(*m->entry()), (std::vector<std::string>{"x", "effect", "n"}));
  EXPECT_EQ(m->GetComputation("unused"), nullptr);
  EXPECT_FALSE(*RemoveDeadCode(*m));
}

TEST(DceTest, KeepsComputationsTheEntryCalls) {
  std::unique_ptr<Module> m = ParseOrFail(R"(HloModule m
sum { a = f32[] parameter(0)
 b = f32[] parameter(1)
 ROOT s = f32[] add(a, b) }
ENTRY e {
  x = f32[4] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[] reduce(x, z), dimensions={0}, to_apply=sum
})");
  EXPECT_FALSE(*RemoveDeadCode(*m));
  EXPECT_NE(m->GetComputation("sum"), nullptr);
}

// Equal synchronous collectives of one value are one communication, as XLA merges a shard_map's
// repeated pmax (bench/xla_compare p5_vocab_parallel_xent: XLA's program has one); another
// channel, other groups, another reducer or an async pair keeps them apart.
TEST(CseTest, MergesEqualInstructionsAndEqualCollectivesOfOneValue) {
  std::unique_ptr<Module> m = ParseOrFail(R"(HloModule m, num_partitions=2
sum { a = f32[] parameter(0)
 b = f32[] parameter(1)
 ROOT s = f32[] add(a, b) }
sum2 { a = f32[] parameter(0)
 b = f32[] parameter(1)
 ROOT s = f32[] add(a, b) }
max { a = f32[] parameter(0)
 b = f32[] parameter(1)
 ROOT s = f32[] maximum(a, b) }
ENTRY e {
  p1 = u32[] partition-id()
  p2 = u32[] partition-id()
  c1 = s32[2] constant({0, 4})
  c2 = s32[2] constant({0, 4})
  c3 = s32[2] constant({0, 5})
  x = f32[4] parameter(0)
  r1 = f32[4] all-reduce(x), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=sum
  r2 = f32[4] all-reduce(x), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=sum2
  r3 = f32[4] all-reduce(x), channel_id=2, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=sum
  r4 = f32[4] all-reduce(x), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=max
  r5 = f32[4] all-reduce(x), channel_id=1, replica_groups={{0},{1}}, use_global_device_ids=true, to_apply=sum
  g1 = f32[8] all-gather(x), channel_id=3, replica_groups={{0,1}}, dimensions={0}, use_global_device_ids=true
  g2 = f32[8] all-gather(x), channel_id=3, replica_groups={{0,1}}, dimensions={0}, use_global_device_ids=true
  q1 = f32[4] collective-permute(x), channel_id=4, source_target_pairs={{0,1},{1,0}}
  q2 = f32[4] collective-permute(x), channel_id=4, source_target_pairs={{0,1},{1,0}}
  q3 = f32[4] collective-permute(x), channel_id=4, source_target_pairs={{0,1}}
  s1 = f32[4] all-reduce-start(x), channel_id=5, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=sum
  d1 = f32[4] all-reduce-done(s1)
  s2 = f32[4] all-reduce-start(x), channel_id=5, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=sum
  d2 = f32[4] all-reduce-done(s2)
  ROOT t = (u32[], u32[], s32[2], s32[2], s32[2], f32[4], f32[4], f32[4], f32[4], f32[4], f32[8], f32[8],
            f32[4], f32[4], f32[4], f32[4], f32[4]) tuple(p1, p2, c1, c2, c3, r1, r2, r3, r4, r5, g1, g2, q1, q2, q3, d1, d2)
})");
  StatusOr<bool> changed = EliminateCommonSubexpressions(*m);
  ASSERT_TRUE(changed.ok());
  EXPECT_TRUE(*changed);
  const Instruction* t = m->entry()->root();
  EXPECT_EQ(t->operand(1)->name(), "p1");
  EXPECT_EQ(t->operand(3)->name(), "c1");
  EXPECT_EQ(t->operand(4)->name(), "c3");
  EXPECT_EQ(t->operand(6)->name(), "r1");  // the same reducer, written twice
  EXPECT_EQ(t->operand(7)->name(), "r3");  // another channel
  EXPECT_EQ(t->operand(8)->name(), "r4");  // another reducer
  EXPECT_EQ(t->operand(9)->name(), "r5");  // other groups
  EXPECT_EQ(t->operand(11)->name(), "g1");
  EXPECT_EQ(t->operand(13)->name(), "q1");
  EXPECT_EQ(t->operand(14)->name(), "q3");  // other pairs
  EXPECT_EQ(t->operand(16)->name(), "d2");  // async pairs stay two
  ASSERT_TRUE(RemoveDeadCode(*m).ok());
  EXPECT_TRUE(Verify(*m).ok()) << Verify(*m).ToString();
}

// JAX writes a reducer per reduce (region_0, region_1 with the same add): reduces that differ only
// in which of two equal reducers they call are one computation, as XLA's CSE finds. A reducer with
// another opcode, or with its operands the other way round, is another computation, and calls of
// computations that draw random numbers are never merged.
// keep_generated_values (the global module's CSE, before propagation): values computed from
// iotas and constants alone stay apart, each to be computed in its own users' sharding; the
// rest merges as before.
TEST(CseTest, KeepGeneratedValuesLeavesIotaDerivedCopiesApart) {
  constexpr const char* kText = R"(HloModule m
ENTRY e {
  x = f32[4,4] parameter(0)
  i1 = s32[4,4] iota(), iota_dimension=0
  i2 = s32[4,4] iota(), iota_dimension=0
  j = s32[4,4] iota(), iota_dimension=1
  m1 = pred[4,4] compare(i1, j), direction=GE
  m2 = pred[4,4] compare(i2, j), direction=GE
  s1 = f32[2,4] slice(x), slice={[0:2], [0:4]}
  s2 = f32[2,4] slice(x), slice={[0:2], [0:4]}
  ROOT t = (pred[4,4], pred[4,4], f32[2,4], f32[2,4]) tuple(m1, m2, s1, s2)
})";
  std::unique_ptr<Module> kept = ParseOrFail(kText);
  StatusOr<bool> changed = EliminateCommonSubexpressions(*kept, CseOptions{.keep_generated_values = true});
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_TRUE(*changed);
  const Instruction* root = kept->entry()->root();
  EXPECT_NE(root->operand(0), root->operand(1));  // the masks (iota-derived) stay two
  EXPECT_EQ(root->operand(2), root->operand(3));  // the slices of x merge
  std::unique_ptr<Module> merged = ParseOrFail(kText);
  ASSERT_TRUE(EliminateCommonSubexpressions(*merged).ok());
  EXPECT_EQ(merged->entry()->root()->operand(0), merged->entry()->root()->operand(1));
}

TEST(CseTest, MergesReducesWhoseReducersComputeTheSameFunction) {
  std::unique_ptr<Module> m = ParseOrFail(R"(HloModule m
region_0 { a0 = f32[] parameter(0)
 b0 = f32[] parameter(1)
 ROOT s0 = f32[] add(a0, b0) }
region_1 { a1 = f32[] parameter(0)
 b1 = f32[] parameter(1)
 ROOT s1 = f32[] add(a1, b1) }
diff { a2 = f32[] parameter(0)
 b2 = f32[] parameter(1)
 ROOT s2 = f32[] subtract(a2, b2) }
swapped { a3 = f32[] parameter(0)
 b3 = f32[] parameter(1)
 ROOT s3 = f32[] add(b3, a3) }
noise0 { lo0 = f32[] parameter(0)
 hi0 = f32[] parameter(1)
 ROOT n0 = f32[4] rng(lo0, hi0), distribution=rng_uniform }
noise1 { lo1 = f32[] parameter(0)
 hi1 = f32[] parameter(1)
 ROOT n1 = f32[4] rng(lo1, hi1), distribution=rng_uniform }
ENTRY e {
  p = f32[8,4] parameter(0)
  z = f32[] constant(0)
  one = f32[] constant(1)
  u0 = f32[4] call(z, one), to_apply=noise0
  u1 = f32[4] call(z, one), to_apply=noise1
  r0 = f32[4] reduce(p, z), dimensions={0}, to_apply=region_0
  r1 = f32[4] reduce(p, z), dimensions={0}, to_apply=region_1
  r2 = f32[4] reduce(p, z), dimensions={0}, to_apply=diff
  r3 = f32[4] reduce(p, z), dimensions={0}, to_apply=swapped
  r4 = f32[8] reduce(p, z), dimensions={1}, to_apply=region_1
  ROOT t = (f32[4], f32[4], f32[4], f32[4], f32[8], f32[4], f32[4]) tuple(r0, r1, r2, r3, r4, u0, u1)
})");
  StatusOr<bool> changed = EliminateCommonSubexpressions(*m);
  ASSERT_TRUE(changed.ok());
  EXPECT_TRUE(*changed);
  const Instruction* t = m->entry()->root();
  EXPECT_EQ(t->operand(1)->name(), "r0");
  EXPECT_EQ(t->operand(2)->name(), "r2");
  EXPECT_EQ(t->operand(3)->name(), "r3");
  EXPECT_EQ(t->operand(4)->name(), "r4");
  // Two random draws stay two, even from computations written alike.
  EXPECT_EQ(t->operand(6)->name(), "u1");
}

// take_along_axis's indices as JAX 0.4.30 writes them: each lookup's row (an iota) next to its id.
constexpr char kRowsAndIds[] = R"(
  ids = s32[16,5] parameter(1)
  iota = s32[16] iota(), iota_dimension=0
  rows = s32[16,5,1] broadcast(iota), dimensions={0}
  cols = s32[16,5,1] reshape(ids)
  idx = s32[16,5,2] concatenate(rows, cols), dimensions={2}
)";

// take_along_axis as JAX 0.4.30 lowers it: the row of each lookup spelled out by an iota
// concatenated to the ids. The iota component becomes a batching pair (operand dim 0, indices dim
// 0) and leaves the indices; the concatenate, still read by the bounds check, stays; a second
// gather whose concatenate only it read loses it and its iota. A gather whose iota does not span
// the operand dim (8 rows of 16), or whose iota dim is not collapsed with slice size 1, is left
// alone.
TEST(GatherBatchDimsTest, IotaComponentsBecomeBatchingDims) {
  std::unique_ptr<Module> m = ParseOrFail(StrCat(R"(HloModule m
ENTRY e {
  x = f32[16,32] parameter(0))",
                                                 kRowsAndIds, R"(
  c0 = s32[] constant(0)
  zero = s32[16,5,2] broadcast(c0), dimensions={}
  check = pred[16,5,2] compare(idx, zero), direction=GE
  g = f32[16,5] gather(x, idx), offset_dims={}, collapsed_slice_dims={0,1}, start_index_map={0,1}, index_vector_dim=2, slice_sizes={1,1}, indices_are_sorted=true
  rows2 = s32[16,5,1] iota(), iota_dimension=0
  idx2 = s32[16,5,2] concatenate(cols, rows2), dimensions={2}
  g2 = f32[16,5] gather(x, idx2), offset_dims={}, collapsed_slice_dims={0,1}, start_index_map={1,0}, index_vector_dim=2, slice_sizes={1,1}
  rows8 = s32[8,5,1] iota(), iota_dimension=0
  ids8 = s32[8,5,1] slice(cols), slice={[0:8], [0:5], [0:1]}
  idx3 = s32[8,5,2] concatenate(rows8, ids8), dimensions={2}
  g3 = f32[8,5] gather(x, idx3), offset_dims={}, collapsed_slice_dims={0,1}, start_index_map={0,1}, index_vector_dim=2, slice_sizes={1,1}
  g4 = f32[8,5,2] gather(x, idx3), offset_dims={2}, collapsed_slice_dims={1}, start_index_map={0,1}, index_vector_dim=2, slice_sizes={2,1}
  ROOT t = (f32[16,5], f32[16,5], f32[8,5], f32[8,5,2], pred[16,5,2]) tuple(g, g2, g3, g4, check)
})"));
  StatusOr<bool> changed = MakeGatherBatchDimsExplicit(*m);
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(Verify(*m).ok()) << Verify(*m).ToString();
  const Computation& e = *m->entry();
  const Instruction* g = e.GetInstruction("g");
  EXPECT_EQ(g->operand(1)->name(), "cols");
  EXPECT_EQ(g->attrs().gather->operand_batching_dims, (std::vector<int64_t>{0}));
  EXPECT_EQ(g->attrs().gather->start_indices_batching_dims, (std::vector<int64_t>{0}));
  EXPECT_EQ(g->attrs().gather->collapsed_slice_dims, (std::vector<int64_t>{1}));
  EXPECT_EQ(g->attrs().gather->start_index_map, (std::vector<int64_t>{1}));
  EXPECT_FALSE(g->attrs().indices_are_sorted);  // sorted (row, id) pairs, not sorted ids
  EXPECT_NE(e.GetInstruction("idx"), nullptr);  // the bounds check still reads it
  const Instruction* g2 = e.GetInstruction("g2");
  EXPECT_EQ(g2->operand(1)->name(), "cols");
  EXPECT_EQ(g2->attrs().gather->start_index_map, (std::vector<int64_t>{1}));
  EXPECT_EQ(e.GetInstruction("idx2"), nullptr);
  EXPECT_EQ(e.GetInstruction("rows2"), nullptr);
  for (const char* name : {"g3", "g4"}) {
    EXPECT_EQ(e.GetInstruction(name)->operand(1)->name(), "idx3") << name;
    EXPECT_TRUE(e.GetInstruction(name)->attrs().gather->operand_batching_dims.empty()) << name;
  }
  EXPECT_FALSE(*MakeGatherBatchDimsExplicit(*m));
}

// The gradient's scatter-add as JAX 0.4.30 writes it, its indices read through an inlined call's
// tuple: the iota component becomes an input / scatter-indices batching pair.
TEST(GatherBatchDimsTest, ScatterIotaComponentThroughATupleBecomesABatchingDim) {
  std::unique_ptr<Module> m = ParseOrFail(StrCat(R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  u = f32[16,5] parameter(0))",
                                                 kRowsAndIds, R"(
  t = (s32[16,5,2], f32[16,5]) tuple(idx, u)
  read = s32[16,5,2] get-tuple-element(t), index=0
  c0 = f32[] constant(0)
  z = f32[16,32] broadcast(c0), dimensions={}
  ROOT sc = f32[16,32] scatter(z, read, u), update_window_dims={}, inserted_window_dims={0,1}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=2, to_apply=add
})"));
  StatusOr<bool> changed = MakeGatherBatchDimsExplicit(*m);
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(Verify(*m).ok()) << Verify(*m).ToString();
  const Instruction* sc = m->entry()->GetInstruction("sc");
  EXPECT_EQ(sc->operand(1)->name(), "cols");
  const ScatterDimensionNumbers& d = *sc->attrs().scatter;
  EXPECT_EQ(d.input_batching_dims, (std::vector<int64_t>{0}));
  EXPECT_EQ(d.scatter_indices_batching_dims, (std::vector<int64_t>{0}));
  EXPECT_EQ(d.inserted_window_dims, (std::vector<int64_t>{1}));
  EXPECT_EQ(d.scatter_dims_to_operand_dims, (std::vector<int64_t>{1}));
  EXPECT_EQ(m->entry()->GetInstruction("read"), nullptr);
  EXPECT_NE(m->entry()->GetInstruction("idx"), nullptr);  // the tuple still holds it
}

// x.at[jnp.arange(8)[:, None], order].set(v) as JAX writes it: the arange is reshaped, wrapped
// for negative positions (select(i < 0, i + 8, i), a no-op on an iota), broadcast and reshaped
// again before the concatenate. The component is still the rows' iota: a batching pair. A select
// that is not that no-op (i < 1) stays.
TEST(GatherBatchDimsTest, IotaThroughReshapesTheNegativeIndexWrapAndBroadcastsBecomesABatchingDim) {
  auto module = [](const std::string& bound) {
    return StrCat(R"(HloModule m
add {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] add(a, b)
}
ENTRY e {
  order = s32[8,24] parameter(0)
  v = s32[8,24] parameter(1)
  i = s32[8] iota(), iota_dimension=0
  i2 = s32[8,1] reshape(i)
  zero = s32[] constant()",
                  bound, R"()
  zeros = s32[8,1] broadcast(zero), dimensions={}
  neg = pred[8,1] compare(i2, zeros), direction=LT
  eight = s32[] constant(8)
  eights = s32[8,1] broadcast(eight), dimensions={}
  up = s32[8,1] add(i2, eights)
  wrapped = s32[8,1] select(neg, up, i2)
  b3 = s32[8,1,1] broadcast(wrapped), dimensions={0,1}
  r2 = s32[8,1] reshape(b3)
  rows = s32[8,24,1] broadcast(r2), dimensions={0,2}
  cols = s32[8,24,1] reshape(order)
  idx = s32[8,24,2] concatenate(rows, cols), dimensions={2}
  c0 = s32[] constant(0)
  z = s32[8,24] broadcast(c0), dimensions={}
  ROOT sc = s32[8,24] scatter(z, idx, v), update_window_dims={}, inserted_window_dims={0,1}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=2, to_apply=add
})");
  };
  std::unique_ptr<Module> m = ParseOrFail(module("0"));
  StatusOr<bool> changed = MakeGatherBatchDimsExplicit(*m);
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(Verify(*m).ok()) << Verify(*m).ToString();
  const Instruction* sc = m->entry()->GetInstruction("sc");
  EXPECT_EQ(sc->operand(1)->name(), "cols");
  EXPECT_EQ(sc->attrs().scatter->input_batching_dims, (std::vector<int64_t>{0}));
  EXPECT_EQ(sc->attrs().scatter->scatter_indices_batching_dims, (std::vector<int64_t>{0}));
  EXPECT_EQ(sc->attrs().scatter->scatter_dims_to_operand_dims, (std::vector<int64_t>{1}));
  // i < 1 is true at i = 0, where the select picks i + 8: not an iota.
  m = ParseOrFail(module("1"));
  EXPECT_FALSE(*MakeGatherBatchDimsExplicit(*m));
}

TEST(PipelineTest, DumpsTheModuleAfterEachPass) {
  std::unique_ptr<Module> m = ParseOrFail(R"(HloModule m
ENTRY e {
  x = f32[4] parameter(0)
  a = f32[4] negate(x)
  b = f32[4] negate(x)
  ROOT s = f32[4] add(a, b)
})");
  std::ostringstream dump;
  PipelineOptions options;
  options.dump_after_each = &dump;
  ASSERT_TRUE(RunPipeline(*m, CleanupPasses(), options).ok());
  EXPECT_EQ(Names(*m->entry()), (std::vector<std::string>{"x", "a", "s"}));
  const std::string text = dump.str();
  const size_t cse = text.find("// after cse (changed):");
  const size_t dce = text.find("// after dce (changed):");
  ASSERT_NE(cse, std::string::npos) << text;
  ASSERT_NE(dce, std::string::npos) << text;
  EXPECT_LT(cse, dce);
  // After cse the duplicate is unused but still there; dce removes it.
  EXPECT_NE(text.substr(cse, dce - cse).find("%b ="), std::string::npos);
  EXPECT_EQ(text.substr(dce).find("%b ="), std::string::npos);
}

TEST(PipelineTest, AnErrorNamesThePass) {
  std::unique_ptr<Module> m = ParseOrFail("HloModule m\nENTRY e {\n  ROOT x = f32[4] parameter(0)\n}\n");
  Pass failing{"check", [](Module&) -> StatusOr<bool> { return InvalidArgument("broken"); }};
  Status s = RunPipeline(*m, {failing});
  EXPECT_EQ(s.message(), "pass 'check': broken");
}

}  // namespace
}  // namespace xs
