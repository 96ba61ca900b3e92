// Sharding propagation on small modules whose expected shardings follow by hand from the op
// semantics (mesh a=4, b=2 over devices 0..7 as in DESIGN.md section 3).
#include "xshard/propagation/propagation.h"

#include <gtest/gtest.h>

#include "xshard/text/parser.h"
#include "xshard/text/printer.h"

namespace xs {
namespace {

constexpr char kPa_[] = "{devices=[4,1,2]<=[8] last_tile_dim_replicate}";   // P('a', None)
constexpr char k_Pa[] = "{devices=[1,4,2]<=[8] last_tile_dim_replicate}";   // P(None, 'a')
constexpr char kPb_[] = "{devices=[2,1,4]<=[4,2]T(1,0) last_tile_dim_replicate}";  // P('b', None)
constexpr char kPab[] = "{devices=[4,2]<=[8]}";                              // P('a', 'b')

struct Outcome {
  std::unique_ptr<Module> module;
  StatusOr<PropagationResult> result = Internal("not run");
  std::string Sharding(const std::string& name, const std::string& comp = "") const {
    const Computation* c = comp.empty() ? module->entry() : module->GetComputation(comp);
    const Instruction* inst = c ? c->GetInstruction(name) : nullptr;
    if (inst == nullptr) return "no instruction " + name;
    return inst->has_sharding() ? inst->sharding()->ToString() : "none";
  }
  std::string Origin(const std::string& name, int leaf = 0) const {
    const Instruction* inst = module->entry()->GetInstruction(name);
    const ShardingOrigin* o = inst ? result->OriginOf(*inst, leaf) : nullptr;
    return o ? o->ToString() : "none";
  }
};

Outcome Propagate(const std::string& hlo, PropagationOptions options = {}) {
  Outcome run;
  auto m = ParseHloModule(hlo, "test.hlo");
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (!m.ok()) return run;
  run.module = std::move(*m);
  run.result = PropagateShardings(*run.module, options);
  return run;
}

std::string Module8(const std::string& header_flags, const std::string& body) {
  return "HloModule m" + header_flags + ", num_partitions=8\n\nENTRY e {\n" + body + "}\n";
}
const std::string kToOutput = ", allow_spmd_sharding_propagation_to_output={true}";

TEST(PropagationTest, ElementwiseChainTakesTheOperandSharding) {
  Outcome r = Propagate(Module8(kToOutput, std::string("  x = f32[8,4] parameter(0), sharding=") + kPa_ +
                                           "\n  n = f32[8,4] negate(x)\n  ROOT e = f32[8,4] exponential(n)\n"));
  ASSERT_TRUE(r.result.ok()) << r.result.status().message();
  EXPECT_EQ(r.Sharding("n"), kPa_);
  EXPECT_EQ(r.Sharding("e"), kPa_);
  EXPECT_EQ(r.Origin("n"), "forward from %x (level 0)");
  EXPECT_EQ(r.Origin("x"), "user annotation");
}

// jnp.gradient's edge difference x[:, 1:2] - x[:, 0:1] of x P('a', 'b'): the slices keep 'b' on the
// dim they cut to one element (tile 0 holds it), and so must the subtract, as in GSPMD and Shardy;
// an elementwise rule without a factor for size-1 dims replicated the difference along 'b', and
// the partitioner gathered both slices.
TEST(PropagationTest, ElementwiseKeepsTheAxesOfASize1DimItsOperandsHave) {
  Outcome r = Propagate(Module8("", std::string("  x = f32[8,16] parameter(0), sharding=") + kPab +
                                        "\n  s1 = f32[8,1] slice(x), slice={[0:8], [1:2]}"
                                        "\n  s0 = f32[8,1] slice(x), slice={[0:8], [0:1]}"
                                        "\n  d = f32[8,1] subtract(s1, s0)"
                                        "\n  ROOT n = f32[8,1] negate(d)\n"));
  ASSERT_TRUE(r.result.ok()) << r.result.status().message();
  EXPECT_EQ(r.Sharding("s1"), kPab);
  EXPECT_EQ(r.Sharding("d"), kPab);
  EXPECT_EQ(r.Origin("d"), "forward from %s1 (level 1)");
}

// A tuple root whose written sharding leaves some outputs {unknown} (jax.jit's out_shardings with
// a None entry, as the Python package writes it) keeps the written leaves and takes propagation's
// result for the open ones; the whole tuple was kept as written, and the unknown leaf ended up
// replicated.
TEST(PropagationTest, UnknownLeavesOfAWrittenTupleShardingTakeThePropagatedSharding) {
  Outcome r = Propagate(Module8(kToOutput, std::string("  x = f32[8,4] parameter(0), sharding=") + kPab +
                                               "\n  n = f32[8,4] negate(x)"
                                               "\n  e = f32[8,4] exponential(x)"
                                               "\n  ROOT t = (f32[8,4], f32[8,4]) tuple(n, e), "
                                               "sharding={{replicated}, {unknown}}\n"));
  ASSERT_TRUE(r.result.ok()) << r.result.status().message();
  EXPECT_EQ(r.Sharding("t"), std::string("{{replicated}, ") + kPab + "}");
}

// An FFT, a Cholesky factorization and a triangular solve pass their batch dims' axes through
// (Shardy's rules: the transformed dims need replication, the others are batch dims), so a
// batched transform of a batch-sharded signal runs on each device's own rows with nothing moved;
// the transformed dims take no axes.
TEST(PropagationTest, FftCholeskyAndTriangularSolvePassBatchAxesThrough) {
  Outcome r = Propagate(Module8(kToOutput, std::string("  x = f32[8,32] parameter(0), sharding=") + kPa_ +
                                               "\n  f = c64[8,17] fft(x), fft_type=RFFT, fft_length={32}"
                                               "\n  a = f32[8,4,4] parameter(1), sharding={devices=[4,1,1,2]<=[8] "
                                               "last_tile_dim_replicate}"
                                               "\n  l = f32[8,4,4] cholesky(a), lower=true"
                                               "\n  b = f32[8,4,3] parameter(2)"
                                               "\n  s = f32[8,4,3] triangular-solve(l, b), left_side=true, lower=true, "
                                               "transpose_a=NO_TRANSPOSE"
                                               "\n  y = f32[8,16] parameter(3), sharding=" +
                                               kPab +
                                               "\n  g = c64[8,9] fft(y), fft_type=RFFT, fft_length={16}"
                                               "\n  ROOT t = (c64[8,17], f32[8,4,3], c64[8,9]) tuple(f, s, g)\n"));
  ASSERT_TRUE(r.result.ok()) << r.result.status().message();
  EXPECT_EQ(r.Sharding("f"), kPa_);
  EXPECT_EQ(r.Sharding("l"), "{devices=[4,1,1,2]<=[8] last_tile_dim_replicate}");
  EXPECT_EQ(r.Sharding("s"), "{devices=[4,1,1,2]<=[8] last_tile_dim_replicate}");
  EXPECT_EQ(r.Sharding("g"), kPa_);  // 'b' on the transformed dim does not pass
}

// A sort along a sharded dim takes its operand's sharding whole, as GSPMD (the partitioner then
// moves the sorted dim's axes to another dim with all-to-alls): jnp.argsort(x, axis=0) of x
// P('a', 'b') gives keys and positions in P('a', 'b'); the positions iota, taken backward,
// stays P(None, 'b'). A sorted dim its axes would split unevenly (6 over 'a'=4) passes only the
// other dims' axes on.
TEST(PropagationTest, SortAlongAShardedDimTakesTheOperandsShardingWhereEven) {
  const std::string lt = "\nlt {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  c = s32[] parameter(2)\n"
                         "  d = s32[] parameter(3)\n  ROOT r = pred[] compare(a, b), direction=LT\n}\n";
  auto argsort = [&](const std::string& dims) {
    return Propagate(Module8(kToOutput, "  x = f32[" + dims + "] parameter(0), sharding=" + kPab +
                                            "\n  i = s32[" + dims + "] iota(), iota_dimension=0"
                                            "\n  ROOT s = (f32[" + dims + "], s32[" + dims + "]) sort(x, i), "
                                            "dimensions={0}, to_apply=lt\n") + lt);
  };
  const std::string pb = "{devices=[1,2,4]<=[4,2]T(1,0) last_tile_dim_replicate}";  // P(None, 'b')
  Outcome even = argsort("16,8");
  ASSERT_TRUE(even.result.ok()) << even.result.status().message();
  EXPECT_EQ(even.Sharding("s"), std::string("{") + kPab + ", " + kPab + "}");
  EXPECT_EQ(even.Sharding("i"), pb);
  Outcome uneven = argsort("6,8");
  ASSERT_TRUE(uneven.result.ok()) << uneven.result.status().message();
  EXPECT_EQ(uneven.Sharding("s"), "{" + pb + ", " + pb + "}");
}

// A dynamic-slice that cuts a sharded dim (a decode step reading 4 positions of a cache x
// P('a', 'b') at a traced position, then summing them; bench/xla_compare at_set_window) keeps the
// other dims' axes: the window is P('a', None), as XLA's plan under both of JAX's lowerings (GSPMD
// holds back only at level 0). Skipping the source left the window and its sum replicated, and
// the partitioner gathered the batch dim too (1 KiB per device against XLA's 768 B).
TEST(PropagationTest, DynamicSliceOfAShardedDimKeepsTheOtherDimsAxes) {
  Outcome r = Propagate(
      "HloModule m, allow_spmd_sharding_propagation_to_output={true}, num_partitions=8\n\n"
      "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n\n"
      "ENTRY e {\n  x = f32[8,16] parameter(0), sharding={devices=[4,2]<=[8]}\n"
      "  i = s32[] parameter(1), sharding={replicated}\n  z = s32[] constant(0)\n"
      "  w = f32[8,4] dynamic-slice(x, z, i), dynamic_slice_sizes={8,4}\n  c = f32[] constant(0)\n"
      "  ROOT r = f32[8] reduce(w, c), dimensions={1}, to_apply=add\n}\n");
  ASSERT_TRUE(r.result.ok()) << r.result.status().message();
  EXPECT_EQ(r.Sharding("w"), kPa_);
  EXPECT_EQ(r.Sharding("r"), "{devices=[4,2]<=[8] last_tile_dim_replicate}");
}

TEST(PropagationTest, OutputsAreOpenAsUnderJaxAndParametersClosedUnlessAllowed) {
  // No allow_spmd_sharding_propagation_* in the header: the output is open anyway (JAX compiles
  // with it open and does not print the flag), the unannotated parameter y is closed.
  const std::string body = std::string("  x = f32[8,4] parameter(0), sharding=") + kPa_ +
                           "\n  y = f32[8,4] parameter(1)\n  ROOT s = f32[8,4] add(x, y)\n";
  Outcome by_default = Propagate(Module8("", body));
  ASSERT_TRUE(by_default.result.ok());
  EXPECT_EQ(by_default.Sharding("s"), kPa_);
  EXPECT_EQ(by_default.Origin("s"), "forward from %x (level 0)");
  EXPECT_EQ(by_default.Sharding("y"), "{replicated}");
  EXPECT_EQ(by_default.Origin("y"), "entry parameter / output closed to propagation: replicated");
  PropagationOptions closed_options;
  closed_options.allow_to_output = false;
  // Closing the output wins over the header's allow_spmd_sharding_propagation_to_output={true}.
  Outcome closed = Propagate(Module8(kToOutput, body), closed_options);
  ASSERT_TRUE(closed.result.ok());
  EXPECT_EQ(closed.Sharding("s"), "{replicated}");
  EXPECT_EQ(closed.Origin("s"), "entry parameter / output closed to propagation: replicated");
  PropagationOptions open;
  open.allow_to_parameters = true;
  Outcome opened = Propagate(Module8("", body), open);
  ASSERT_TRUE(opened.result.ok());
  EXPECT_EQ(opened.Sharding("s"), kPa_);
  EXPECT_EQ(opened.Sharding("y"), kPa_);
  EXPECT_EQ(opened.Origin("y"), "backward from %s (level 0)");
}

// An open output that P('a','b') would split unevenly along dim 1 (8 in 'a'=4 is even, 7 in
// 2 is not): GSPMD replicates it whole (as XLA's oracle case even_boundary); a module lowered
// with Shardy (xla.sdy.meshes) replicates only dim 1 and keeps dim 0 on 'a' (XLA's compiled
// program for such a JAX module returns the even dim's pieces).
TEST(PropagationTest, UnevenOutputsReplicateWholeUnderGspmdAndOnlyTheUnevenDimsUnderShardy) {
  Outcome gspmd = Propagate(Module8("", std::string("  x = f32[8,7] parameter(0), sharding=") + kPab +
                                            "\n  ROOT n = f32[8,7] negate(x)\n"));
  ASSERT_TRUE(gspmd.result.ok());
  EXPECT_EQ(gspmd.Sharding("n"), "{replicated}");
  EXPECT_EQ(gspmd.Origin("n"), "replicated: the sharding from %x splits this entry parameter / output unevenly");
  Outcome shardy = Propagate(Module8(", frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<[\"a\"=4, \"b\"=2]>}}",
                                     std::string("  x = f32[8,7] parameter(0), sharding=") + kPab +
                                         "\n  ROOT n = f32[8,7] negate(x)\n"));
  ASSERT_TRUE(shardy.result.ok());
  EXPECT_EQ(shardy.Sharding("n"), kPa_);
  EXPECT_EQ(shardy.Origin("n"), "forward from %x (level 0)");
}

TEST(PropagationTest, AnUnannotatedCollectiveAtTheRootStaysReplicated) {
  // A collective written in the global program computes on whole arrays (XLA's
  // AllReduceNoSharding): the open output does not hand it the parameter's tiling.
  Outcome r = Propagate(std::string("HloModule m, num_partitions=8\n\nsum {\n  a = f32[] parameter(0)\n"
                        "  b = f32[] parameter(1)\n  ROOT c = f32[] add(a, b)\n}\n\nENTRY e {\n"
                        "  x = f32[8,4] parameter(0), sharding=") + kPa_ +
                        "\n  ROOT s = f32[8,4] all-reduce(x), to_apply=sum, "
                        "replica_groups={{0,1,2,3,4,5,6,7}}, channel_id=1\n}\n");
  ASSERT_TRUE(r.result.ok()) << r.result.status().ToString();
  EXPECT_EQ(r.Sharding("s"), "{replicated}");
}

TEST(PropagationTest, UserAnnotationsAreNeverChanged) {
  // x is P('a', None); the root insists on P('b', None): x keeps its annotation.
  Outcome r = Propagate(Module8(kToOutput, std::string("  x = f32[8,4] parameter(0), sharding=") + kPa_ +
                                           "\n  n = f32[8,4] negate(x)\n  ROOT e = f32[8,4] exponential(n), sharding=" +
                                           kPb_ + "\n"));
  ASSERT_TRUE(r.result.ok());
  EXPECT_EQ(r.Sharding("x"), kPa_);
  EXPECT_EQ(r.Sharding("e"), kPb_);
  EXPECT_EQ(r.Sharding("n"), kPa_);  // forward at level 0 reaches n before the backward pass
}

TEST(PropagationTest, DotWithShardedContractingDimGivesAReplicatedResult) {
  // Seed 000 "inner axes": k is split over a on both sides, so the result holds partial sums
  // and no result dim is split.
  Outcome r = Propagate(Module8(kToOutput, std::string("  x = f16[4,16] parameter(0), sharding=") + k_Pa +
                                           "\n  y = f16[16,4] parameter(1), sharding=" + kPa_ +
                                           "\n  ROOT z = f16[4,4] dot(x, y), lhs_contracting_dims={1}, "
                                           "rhs_contracting_dims={0}\n"));
  ASSERT_TRUE(r.result.ok());
  EXPECT_EQ(r.Sharding("z"), "{replicated}");
}

TEST(PropagationTest, DotCombinesTheFreeDimsOfBothOperands) {
  // lhs rows on a, rhs columns on b -> result P('a', 'b').
  Outcome r = Propagate(Module8(kToOutput, std::string("  x = f32[8,16] parameter(0), sharding=") + kPa_ +
                                           "\n  y = f32[16,4] parameter(1), sharding={devices=[1,2,4]<=[4,2]T(1,0) last_tile_dim_replicate}"
                                           "\n  ROOT z = f32[8,4] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"));
  ASSERT_TRUE(r.result.ok());
  EXPECT_EQ(r.Sharding("z"), kPab);
}

TEST(PropagationTest, ReshapeSplitsAMergedDimMajorFirst) {
  // [32] split 8 ways -> [4,8]: the 8 tiles cover dim 0 (4) then dim 1 (2).
  Outcome r = Propagate(Module8(kToOutput, "  x = f32[32] parameter(0), sharding={devices=[8]<=[8]}\n"
                                       "  ROOT y = f32[4,8] reshape(x)\n"));
  ASSERT_TRUE(r.result.ok());
  EXPECT_EQ(r.Sharding("y"), kPab);
  // Merging back: [4,8] split as P('a','b') -> [32] split 8 ways.
  Outcome back = Propagate(Module8(kToOutput, std::string("  x = f32[4,8] parameter(0), sharding=") + kPab +
                                              "\n  ROOT y = f32[32] reshape(x)\n"));
  ASSERT_TRUE(back.result.ok());
  EXPECT_EQ(back.Sharding("y"), "{devices=[8]<=[8]}");
}

TEST(PropagationTest, ReduceDropsTheReducedDimAndBroadcastTakesItsUsers) {
  Outcome r = Propagate("HloModule m, allow_spmd_sharding_propagation_to_output={true}, num_partitions=8\n\n"
                    "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n\n"
                    "ENTRY e {\n  x = f32[8,16] parameter(0), sharding={devices=[4,2]<=[8]}\n"
                    "  z = f32[] constant(0)\n  r = f32[8] reduce(x, z), dimensions={1}, to_apply=add\n"
                    "  b = f32[8,16] broadcast(r), dimensions={0}\n  ROOT d = f32[8,16] subtract(x, b)\n}\n");
  ASSERT_TRUE(r.result.ok());
  EXPECT_EQ(r.Sharding("r"), "{devices=[4,2]<=[8] last_tile_dim_replicate}");
  EXPECT_EQ(r.Sharding("b"), "{devices=[4,2]<=[8]}");
  EXPECT_EQ(r.Origin("b"), "backward from %d (level 2)");
  // The reducer's scalars are not part of the partitioned program.
  EXPECT_EQ(r.Sharding("s", "add"), "none");
}

TEST(PropagationTest, ShardingCustomCallFixesItsOperandAndRefinesUnspecifiedDims) {
  Outcome r = Propagate(Module8(kToOutput,
                            "  x = f32[8,4] parameter(0), sharding={devices=[1,2,4]<=[4,2]T(1,0) last_tile_dim_replicate}\n"
                            "  n = f32[8,4] negate(x)\n"
                            "  c = f32[8,4] custom-call(n), custom_call_target=\"Sharding\", "
                            "sharding={devices=[4,1,2]<=[8] last_tile_dim_replicate}, backend_config=\"unspecified_dims=[1]\"\n"
                            "  m = f32[8,4] negate(x)\n"
                            "  d = f32[8,4] custom-call(m), custom_call_target=\"Sharding\", sharding={devices=[8,1]0,1,2,3,4,5,6,7}\n"
                            "  ROOT s = f32[8,4] add(c, d)\n"));
  ASSERT_TRUE(r.result.ok()) << r.result.status().message();
  // c: dim 0 on a as annotated, dim 1 left open takes x's b.
  EXPECT_EQ(r.Sharding("c"), kPab);
  // d's operand m takes the annotation itself, as written (GSPMD folds the custom-call into it).
  EXPECT_EQ(r.Sharding("m"), "{devices=[8,1]0,1,2,3,4,5,6,7}");
  EXPECT_EQ(r.Origin("m"), "user annotation of custom-call Sharding %d");
}

TEST(PropagationTest, ManualRegionsStayManual) {
  Outcome r = Propagate(Module8(kToOutput,
                            "  x = f32[8,4] parameter(0), sharding={devices=[8,1]<=[8]}\n"
                            "  m = f32[1,4] custom-call(x), custom_call_target=\"SPMDFullToShardShape\", sharding={manual}\n"
                            "  n = f32[1,4] negate(m)\n"
                            "  f = f32[8,4] custom-call(n), custom_call_target=\"SPMDShardToFullShape\", sharding={devices=[8,1]<=[8]}\n"
                            "  ROOT e = f32[8,4] exponential(f)\n"));
  ASSERT_TRUE(r.result.ok());
  EXPECT_EQ(r.Sharding("n"), "{manual}");
  EXPECT_EQ(r.Sharding("e"), "{devices=[8,1]<=[8]}");
}

TEST(PropagationTest, TupleValuesGetTupleShardings) {
  Outcome r = Propagate(Module8(kToOutput, std::string("  x = f32[8,4] parameter(0), sharding=") + kPa_ +
                                           "\n  y = f32[4] parameter(1), sharding={replicated}\n"
                                           "  ROOT t = (f32[8,4], f32[4]) tuple(x, y)\n"));
  ASSERT_TRUE(r.result.ok());
  EXPECT_EQ(r.Sharding("t"), std::string("{") + kPa_ + ", {replicated}}");
}

TEST(PropagationTest, CallEdgesCarryShardingsIntoAndOutOfCalledComputations) {
  Outcome r = Propagate("HloModule m, allow_spmd_sharding_propagation_to_output={true}, num_partitions=8\n\n"
                    "f {\n  p = f32[8,4] parameter(0)\n  ROOT q = f32[8,4] negate(p)\n}\n\n"
                    "ENTRY e {\n  x = f32[8,4] parameter(0), sharding={devices=[4,1,2]<=[8] last_tile_dim_replicate}\n"
                    "  c = f32[8,4] call(x), to_apply=f\n  ROOT s = f32[8,4] exponential(c)\n}\n");
  ASSERT_TRUE(r.result.ok());
  EXPECT_EQ(r.Sharding("q", "f"), kPa_);
  EXPECT_EQ(r.Sharding("c"), kPa_);
  EXPECT_EQ(r.Sharding("s"), kPa_);
}

TEST(PropagationTest, ConditionalBranchesShareTheResultSharding) {
  Outcome r = Propagate("HloModule m, allow_spmd_sharding_propagation_to_output={true}, num_partitions=8\n\n"
                    "t {\n  p = f32[8,4] parameter(0)\n  ROOT q = f32[8,4] negate(p)\n}\n\n"
                    "f {\n  p = f32[8,4] parameter(0)\n  ROOT q = f32[8,4] exponential(p)\n}\n\n"
                    "ENTRY e {\n  c = pred[] parameter(0), sharding={replicated}\n"
                    "  x = f32[8,4] parameter(1), sharding={devices=[4,1,2]<=[8] last_tile_dim_replicate}\n"
                    "  ROOT r = f32[8,4] conditional(c, x, x), true_computation=t, false_computation=f\n}\n");
  ASSERT_TRUE(r.result.ok()) << r.result.status().message();
  EXPECT_EQ(r.Sharding("p", "t"), kPa_);
  EXPECT_EQ(r.Sharding("q", "f"), kPa_);
  EXPECT_EQ(r.Sharding("r"), kPa_);
}

TEST(PropagationTest, ShardingsOffTheCommonMeshAreCopiedVerbatim) {
  // Device order 0,3,1,2 has no iota form, and no device order makes it one next to y's iota
  // list: kept as is and copied through elementwise ops only.
  Outcome r = Propagate(
      Module8(kToOutput,
              "  y = f32[8] parameter(1), sharding={devices=[8]<=[8]}\n"
              "  x = f32[8,4] parameter(0), sharding={devices=[4,1,2]0,3,1,2,4,5,6,7 last_tile_dim_replicate}\n"
              "  n = f32[8,4] negate(x)\n  ROOT t = f32[4,8] transpose(n), dimensions={1,0}\n"));
  ASSERT_TRUE(r.result.ok());
  EXPECT_EQ(r.Sharding("n"), "{devices=[4,1,2]0,3,1,2,4,5,6,7 last_tile_dim_replicate}");
  EXPECT_EQ(r.Sharding("t"), "{replicated}");
  EXPECT_EQ(r.result->notes.size(), 1u);
}

TEST(PropagationTest, AMeshOverPermutedDevicesPropagatesThroughEveryOp) {
  // The same list alone: the mesh takes its device order and the transpose keeps the tiling.
  Outcome r = Propagate(
      Module8(kToOutput,
              "  x = f32[8,4] parameter(0), sharding={devices=[4,1,2]0,3,1,2,4,5,6,7 last_tile_dim_replicate}\n"
              "  n = f32[8,4] negate(x)\n  ROOT t = f32[4,8] transpose(n), dimensions={1,0}\n"));
  ASSERT_TRUE(r.result.ok());
  EXPECT_EQ(r.Sharding("t"), "{devices=[1,4,2]0,3,1,2,4,5,6,7 last_tile_dim_replicate}");
  EXPECT_TRUE(r.result->notes.empty());
}

TEST(PropagationTest, AnnotationsThatDoNotFitAreErrorsNamingTheInstruction) {
  Outcome rank = Propagate(Module8("", "  x = f32[8,4,2] parameter(0), sharding={devices=[4,2]<=[8]}\n"
                                   "  ROOT n = f32[8,4,2] negate(x)\n"));
  ASSERT_FALSE(rank.result.ok());
  EXPECT_NE(rank.result.status().message().find("%x"), std::string::npos) << rank.result.status().message();
  Outcome devices = Propagate(Module8("", "  x = f32[8] parameter(0), sharding={devices=[16]<=[16]}\n"
                                      "  ROOT n = f32[8] negate(x)\n"));
  ASSERT_FALSE(devices.result.ok());
  EXPECT_NE(devices.result.status().message().find("8 devices"), std::string::npos) << devices.result.status().message();
}

TEST(PropagationTest, ResultsAreDeterministic) {
  const std::string hlo = Module8(kToOutput, std::string("  x = f32[8,16] parameter(0), sharding=") + kPa_ +
                                                 "\n  y = f32[16,8] parameter(1), sharding=" + kPb_ +
                                                 "\n  d = f32[8,8] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}"
                                                 "\n  ROOT s = f32[8,8] add(d, d)\n");
  Outcome a = Propagate(hlo), b = Propagate(hlo);
  ASSERT_TRUE(a.result.ok() && b.result.ok());
  EXPECT_EQ(PrintHloModule(*a.module), PrintHloModule(*b.module));
}

TEST(PropagationTest, ExplainAppendsOriginsToInstructionLines) {
  Outcome r = Propagate(Module8(kToOutput, std::string("  x = f32[8,4] parameter(0), sharding=") + kPa_ +
                                           "\n  ROOT n = f32[8,4] negate(x)\n"));
  ASSERT_TRUE(r.result.ok());
  const std::string text = AnnotateWithOrigins(PrintHloModule(*r.module, PrintOptions::Short()), *r.module, *r.result);
  EXPECT_NE(text.find("negate(x), sharding={devices=[4,1,2]<=[8] last_tile_dim_replicate}  // <- forward from %x (level 0)"),
            std::string::npos) << text;
  // The annotated text still parses.
  EXPECT_TRUE(ParseHloModule(text).ok());
}

// JAX's Shardy lowering ends each result with an xla.sdy.FuncResultSharding custom-call carrying
// the result's out_sharding: like a Sharding custom-call it is a user annotation that reaches its
// operand at level 0, before a dynamic-update-slice takes its update's sharding (level 1). A
// scan's gradient buffer otherwise took the update's split dim and was all-to-all'ed at the end
// (bench/xla_compare ho_remat_scan_grad: 47 KiB -> 29 KiB).
TEST(PropagationTest, FuncResultShardingReachesItsOperandBeforeAnUpdatesSharding) {
  Outcome r = Propagate(Module8("", std::string("  buf = f32[4,8,8] parameter(0)\n"
                                                "  u = f32[1,8,8] parameter(1), sharding=") + "{devices=[1,1,8]<=[8]}" +
                                    "\n  i = s32[] parameter(2)\n  z = s32[] constant(0)\n"
                                    "  d = f32[4,8,8] dynamic-update-slice(buf, u, i, z, z)\n"
                                    "  ROOT r = f32[4,8,8] custom-call(d), custom_call_target=\"xla.sdy.FuncResultSharding\", "
                                    "custom_call_has_side_effect=true, sharding={devices=[1,8,1]<=[8]}\n"));
  ASSERT_TRUE(r.result.ok()) << r.result.status().message();
  EXPECT_EQ(r.Sharding("d"), "{devices=[1,8,1]<=[8]}");
  EXPECT_EQ(r.Origin("d"), "backward from %r (level 0)");
}

// A dynamic-update-slice passes its sharding back to its update at level 0, like the other
// pass-through ops, so the update's producer takes it before a dot (level 1) picks one of its
// operands' conflicting splits. A scan's per-step gradients written into a stacked buffer then
// come out in the buffer's layout (bench/xla_compare ho_remat_scan_grad: 29,840 -> 20,624 B, as
// XLA); before, the dot took its lhs's split and the update was all-to-all'ed into place.
TEST(PropagationTest, ADynamicUpdateSlicePassesItsShardingToTheUpdateBeforeADotChooses) {
  Outcome r = Propagate(Module8("", "  buf = f32[4,8,8] parameter(0), sharding={devices=[1,1,8]<=[8]}\n"
                                    "  a = f32[8,8] parameter(1), sharding={devices=[8,1]<=[8]}\n"
                                    "  b = f32[8,8] parameter(2), sharding={devices=[1,8]<=[8]}\n"
                                    "  g = f32[8,8] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
                                    "  u = f32[1,8,8] reshape(g)\n"
                                    "  i = s32[] parameter(3), sharding={replicated}\n  z = s32[] constant(0)\n"
                                    "  ROOT d = f32[4,8,8] dynamic-update-slice(buf, u, i, z, z), "
                                    "sharding={devices=[1,1,8]<=[8]}\n"));
  ASSERT_TRUE(r.result.ok()) << r.result.status().message();
  EXPECT_EQ(r.Sharding("u"), "{devices=[1,1,8]<=[8]}");
  EXPECT_EQ(r.Origin("u"), "backward from %d (level 0)");
  EXPECT_EQ(r.Sharding("g"), "{devices=[1,8]<=[8]}");
}

// An open output split unevenly is replicated (GSPMD); a concatenate the output alone reads is
// then built replicated too, so its operands are gathered rather than the padded result (jnp.pad
// reflect of 16 rows over 8: 19 rows). A concatenate with another user keeps its sharding.
TEST(PropagationTest, AConcatenateOnlyAnUnevenOutputReadsIsBuiltAsTheOutput) {
  Outcome r = Propagate(Module8(kToOutput, "  x = f32[16,3] parameter(0), sharding={devices=[8,1]<=[8]}\n"
                                           "  a = f32[1,3] slice(x), slice={[1:2], [0:3]}\n"
                                           "  b = f32[2,3] slice(x), slice={[13:15], [0:3]}\n"
                                           "  c = f32[19,3] concatenate(a, x, b), dimensions={0}\n"
                                           "  d = f32[19,3] concatenate(b, x, a), dimensions={0}\n"
                                           "  n = f32[19,3] negate(d)\n"
                                           "  ROOT t = (f32[19,3], f32[19,3], f32[19,3]) tuple(c, d, n)\n"));
  ASSERT_TRUE(r.result.ok()) << r.result.status().message();
  EXPECT_EQ(r.Sharding("t"), "{{replicated}, {replicated}, {replicated}}");
  EXPECT_EQ(r.Sharding("c"), "{replicated}");
  EXPECT_EQ(r.Origin("c"), "as the output it alone produces, %t, whose uneven split was dropped");
  EXPECT_EQ(r.Sharding("d"), "{devices=[8,1]<=[8]}");  // n reads it too
}

// jnp.roll(x, s) with a traced s: concatenate(x, x) read only by a dynamic-slice along the
// concatenated dim, which needs that dim whole. The concatenate keeps x's other axes but not the
// split of its rows (the partitioner gathers x, half the size, instead of splitting the
// concatenate and gathering it); a concatenate something else reads keeps the split.
TEST(PropagationTest, AConcatenateOnlyDynamicSlicesReadAlongItsDimIsNotSplitThere) {
  Outcome r =
      Propagate(Module8(kToOutput, std::string("  x = f32[16,4] parameter(0), sharding=") + kPab +
                                       "\n  s = s32[] parameter(1), sharding={replicated}\n"
                                       "  z = s32[] constant(0)\n"
                                       "  c = f32[32,4] concatenate(x, x), dimensions={0}\n"
                                       "  r = f32[16,4] dynamic-slice(c, s, z), dynamic_slice_sizes={16,4}\n"
                                       "  p = f32[20,4] pad(x, z), padding=2_2x0_0\n"
                                       "  q = f32[16,4] dynamic-slice(p, s, z), dynamic_slice_sizes={16,4}\n"
                                       "  d = f32[32,4] concatenate(x, x), dimensions={0}\n"
                                       "  e = f32[16,4] dynamic-slice(d, s, z), dynamic_slice_sizes={16,4}\n"
                                       "  n = f32[32,4] negate(d)\n"
                                       "  ROOT t = (f32[16,4], f32[16,4], f32[16,4], f32[32,4]) tuple(r, q, e, n)\n"));
  ASSERT_TRUE(r.result.ok()) << r.result.status().message();
  const std::string k_Pb = "{devices=[1,2,4]<=[4,2]T(1,0) last_tile_dim_replicate}";  // P(None, 'b')
  EXPECT_EQ(r.Sharding("c"), k_Pb);
  EXPECT_EQ(r.Sharding("r"), k_Pb);
  EXPECT_EQ(r.Sharding("p"), k_Pb);
  EXPECT_EQ(r.Sharding("d"), kPab);
}

// A loop whose body computes tanh(b) + a for the state a (P('a', None)) from b (P(None, 'a')): the
// add takes a's split, which its user (the body's root, tied to the loop state) holds, not its
// first operand's, so the body reshards tanh(b) once instead of resharding the add's operand and
// then its result. With no user holding a sharding, the first operand still wins.
TEST(PropagationTest, AnElementwiseConflictTakesTheSplitItsUserHolds) {
  const std::string hlo = std::string(
                              "HloModule m, num_partitions=8\n\n"
                              "body {\n"
                              "  p = (s32[], f32[16,16], f32[16,16]) parameter(0)\n"
                              "  i = s32[] get-tuple-element(p), index=0\n"
                              "  one = s32[] constant(1)\n"
                              "  i1 = s32[] add(i, one)\n"
                              "  a = f32[16,16] get-tuple-element(p), index=1\n"
                              "  b = f32[16,16] get-tuple-element(p), index=2\n"
                              "  t = f32[16,16] tanh(b)\n"
                              "  na = f32[16,16] add(t, a)\n"
                              "  nb = f32[16,16] multiply(a, a)\n"
                              "  ROOT r = (s32[], f32[16,16], f32[16,16]) tuple(i1, na, nb)\n"
                              "}\n\n"
                              "cond {\n"
                              "  p = (s32[], f32[16,16], f32[16,16]) parameter(0)\n"
                              "  i = s32[] get-tuple-element(p), index=0\n"
                              "  n = s32[] constant(5)\n"
                              "  ROOT lt = pred[] compare(i, n), direction=LT\n"
                              "}\n\n"
                              "ENTRY e {\n"
                              "  x = f32[16,16] parameter(0), sharding=") +
                          kPa_ +
                          "\n"
                          "  y = f32[16,16] parameter(1), sharding=" +
                          k_Pa +
                          "\n"
                          "  z = s32[] constant(0)\n"
                          "  init = (s32[], f32[16,16], f32[16,16]) tuple(z, x, y)\n"
                          "  w = (s32[], f32[16,16], f32[16,16]) while(init), condition=cond, body=body\n"
                          "  wa = f32[16,16] get-tuple-element(w), index=1\n"
                          "  wb = f32[16,16] get-tuple-element(w), index=2\n"
                          "  t2 = f32[16,16] tanh(y)\n"
                          "  free = f32[16,16] add(t2, x)\n"
                          "  ROOT o = (f32[16,16], f32[16,16], f32[16,16]) tuple(wa, wb, free)\n"
                          "}\n";
  Outcome r = Propagate(hlo);
  ASSERT_TRUE(r.result.ok()) << r.result.status().message();
  EXPECT_EQ(r.Sharding("a", "body"), kPa_);
  EXPECT_EQ(r.Sharding("t", "body"), k_Pa);
  EXPECT_EQ(r.Sharding("na", "body"), kPa_);  // was P(None, 'a'), its first operand's
  EXPECT_EQ(r.Sharding("free"), k_Pa);        // no user holds one: the first operand's
}

// top_k of scores split (batch 'a', database 'b'): the batch dim passes its split on to both
// results (values and indices), the sorted dim is whole, as under Shardy; a gather of values at
// those indices then stays batch-split instead of running on the whole batch.
TEST(PropagationTest, TopKKeepsTheBatchSplit) {
  Outcome r = Propagate(Module8(kToOutput, std::string("  x = f32[8,16] parameter(0), sharding=") + kPab +
                                               "\n  t = (f32[8,5], s32[8,5]) topk(x), k=5, largest=true\n"
                                               "  v = f32[8,5] get-tuple-element(t), index=0\n"
                                               "  i = s32[8,5] get-tuple-element(t), index=1\n"
                                               "  ROOT o = (f32[8,5], s32[8,5]) tuple(v, i)\n"));
  ASSERT_TRUE(r.result.ok()) << r.result.status().message();
  EXPECT_EQ(r.Sharding("v"), kPa_);
  EXPECT_EQ(r.Sharding("i"), kPa_);
}

}  // namespace
}  // namespace xs
