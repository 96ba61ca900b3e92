// Executor behaviour: argument checking, unsupported-op errors, control flow, one-participant
// collectives, custom-call identities, buffer freeing and in-place reuse, tuple results.
#include "xshard/exec/executable.h"

#include "gtest/gtest.h"
#include "xshard/text/parse_test_util.h"

namespace xs {
namespace {

using xs::testing::ParseOrFail;

StatusOr<std::vector<Array>> RunHlo(std::string_view text, std::vector<Array> args,
                                 const ExecuteOptions& options = {}) {
  std::unique_ptr<Module> m = ParseOrFail(text);
  return Execute(*m, args, options);
}

bool Contains(const Status& s, std::string_view what) {
  return s.message().find(what) != std::string::npos;
}

constexpr std::string_view kAddOne = R"(
HloModule add_one
ENTRY main {
  p = f32[3] parameter(0)
  one = f32[] constant(1)
  b = f32[3] broadcast(one), dimensions={}
  ROOT r = f32[3] add(p, b)
})";

TEST(Executable, WrongArgumentTypeNamesArgumentAndParameter) {
  StatusOr<std::vector<Array>> r = RunHlo(kAddOne, {Array::FromVector<int32_t>({3}, {1, 2, 3})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "argument 0 has shape s32[3] but parameter 0 'p' of 'main' is f32[3]");
  r = RunHlo(kAddOne, {Array(DType::kF32, {4})});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.status(), "argument 0 has shape f32[4] but parameter 0 'p'"));
}

TEST(Executable, WrongArgumentCountIsAnError) {
  StatusOr<std::vector<Array>> r = RunHlo(kAddOne, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "'main' takes 1 argument(s) but 0 were given");
}

TEST(Executable, UnsupportedOpIsAnErrorNamingTheInstruction) {
  std::unique_ptr<Module> m = ParseOrFail(R"(
HloModule f
ENTRY main {
  tok = token[] after-all()
  ROOT infeed.3 = ((f32[8]), token[]) infeed(tok)
})");
  StatusOr<std::unique_ptr<Executable>> e = Executable::Create(*m);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().message(), "unsupported: instruction 'infeed.3' (infeed) is not supported by the executor");
}

TEST(Executable, UnknownCustomCallTargetIsUnsupported) {
  std::unique_ptr<Module> m = ParseOrFail(R"(
HloModule f
ENTRY main {
  p = f32[2] parameter(0)
  ROOT c = f32[2] custom-call(p), custom_call_target="foo"
})");
  StatusOr<std::unique_ptr<Executable>> e = Executable::Create(*m);
  ASSERT_FALSE(e.ok());
  EXPECT_TRUE(Contains(e.status(), "unsupported: instruction 'c' (custom-call)"));
  EXPECT_TRUE(Contains(e.status(), "custom_call_target=\"foo\""));
}

// jax.debug.print / debug.callback / pure_callback / io_callback lower to a custom-call into the
// Python process that traced them (JAX 0.10.2's form, copied from jax.debug.print's lowering). One
// with no results (debug.print, debug.callback) is skipped: the program's values do not depend on
// it. One with results (pure_callback, io_callback) is refused in one line naming the
// instruction, what it is and what to do, not a list of targets.
TEST(Executable, PythonCallbackWithoutResultsIsSkippedWithResultsRefused) {
  std::unique_ptr<Module> m = ParseOrFail(R"(
HloModule f
ENTRY main {
  p = f32[2] parameter(0)
  debug_print.1 = () custom-call(p), custom_call_target="xla_ffi_python_cpu_callback", operand_layout_constraints={f32[2]}, custom_call_has_side_effect=true, api_version=API_VERSION_TYPED_FFI
  ROOT r = f32[2] negate(p)
})");
  StatusOr<std::unique_ptr<Executable>> e = Executable::Create(*m);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  Array x = Array::FromVector<float>({2}, {1.5f, -2.0f});
  StatusOr<std::vector<Array>> out = (*e)->Run(std::span<const Array>(&x, 1));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)[0], Array::FromVector<float>({2}, {-1.5f, 2.0f}));
  std::unique_ptr<Module> pure = ParseOrFail(R"(
HloModule f
ENTRY main {
  p = f32[2] parameter(0)
  cb.1 = (f32[2]) custom-call(p), custom_call_target="xla_ffi_python_cpu_callback", operand_layout_constraints={f32[2]}, custom_call_has_side_effect=false, api_version=API_VERSION_TYPED_FFI
  ROOT r = f32[2] get-tuple-element(cb.1), index=0
})");
  StatusOr<std::unique_ptr<Executable>> refused = Executable::Create(*pure);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(),
            "unsupported: instruction 'cb.1' (custom-call) is not supported by the executor; "
            "custom_call_target=\"xla_ffi_python_cpu_callback\" is a Python host callback (jax.debug.print, "
            "jax.debug.callback, jax.pure_callback or io_callback), which only the JAX process that traced "
            "it can call: remove it from the jitted function (return the values to print or check instead) "
            "and export again");
}

// jax.experimental.custom_partitioning lowers to a CustomSPMDPartitioning custom-call whose
// backend_config is the address of its Python callbacks (JAX 0.10.2's form, copied): refused in one
// line saying what it is and what to do, not a list of supported targets.
TEST(Executable, CustomPartitioningIsRefusedNamingWhatToDo) {
  std::unique_ptr<Module> m = ParseOrFail(R"(
HloModule f
ENTRY main {
  a.1 = f32[16,16]{1,0} parameter(0)
  custom_partitioning.1 = f32[16,16]{1,0} custom-call(a.1), custom_call_target="CustomSPMDPartitioning", api_version=API_VERSION_STATUS_RETURNING, backend_config="140310476566544"
  ROOT r = f32[16,16] negate(custom_partitioning.1)
})");
  StatusOr<std::unique_ptr<Executable>> e = Executable::Create(*m);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().message(),
            "unsupported: instruction 'custom_partitioning.1' (custom-call) is not supported by the executor; "
            "custom_call_target=\"CustomSPMDPartitioning\" is a jax.experimental.custom_partitioning op: its "
            "lowering and partitioner are Python functions of the JAX process that traced it (backend_config "
            "holds their address), which xshard cannot call: call the op's plain JAX implementation instead "
            "and export again");
}

// A constant printed as {...} (JAX 0.4's lowered.as_text drops large constants) parses, but has no
// values: running it is an error naming the constant and how to print it whole, not a run on
// zeros (which gave NaN for x / arange(1, 65) and no error). One in a called computation too.
TEST(Executable, ElidedConstantIsAnErrorNotZeros) {
  struct Case {
    const char *text, *names;
  };
  for (const Case& c : {Case{R"(
HloModule f
ENTRY main {
  p = f32[64] parameter(0)
  n.4 = f32[64] constant({...})
  ROOT d = f32[64] divide(p, n.4)
})",
                             "constant 'n.4' (f32[64]) of 'main'"},
                        Case{R"(
HloModule f
callee {
  x = f32[2,3] parameter(0)
  c.7 = f32[2,3] constant({...})
  ROOT a = f32[2,3] add(x, c.7)
}
ENTRY main {
  p = f32[2,3] parameter(0)
  ROOT r = f32[2,3] call(p), to_apply=callee
})",
                             "constant 'c.7' (f32[2,3]) of 'callee'"}}) {
    std::unique_ptr<Module> m = ParseOrFail(c.text);
    StatusOr<std::unique_ptr<Executable>> e = Executable::Create(*m);
    ASSERT_FALSE(e.ok());
    EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
    for (const char* part : {c.names, "was printed without its values ({...})", "print_large_constants=True"}) {
      EXPECT_TRUE(Contains(e.status(), part)) << part << " in " << e.status().message();
    }
  }
  // Written out, the same constant runs.
  StatusOr<std::vector<Array>> r = RunHlo(R"(
HloModule f
ENTRY main {
  p = f32[2] parameter(0)
  n = f32[2] constant({2, 4})
  ROOT d = f32[2] divide(p, n)
})",
                                          {Array::FromVector<float>({2}, {1, 1})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0], Array::FromVector<float>({2}, {0.5f, 0.25f}));
}

TEST(Executable, ShardingCustomCallsAreIdentities) {
  std::vector<Array> out = *RunHlo(R"(
HloModule f
ENTRY main {
  p = f32[2,2] parameter(0)
  s = f32[2,2] custom-call(p), custom_call_target="Sharding", sharding={devices=[2,1]0,1}
  m = f32[2,2] custom-call(s), custom_call_target="SPMDFullToShardShape", sharding={manual}
  ROOT f = f32[2,2] custom-call(m), custom_call_target="SPMDShardToFullShape", sharding={devices=[2,1]0,1}
})", {Array::FromVector<float>({2, 2}, {1, 2, 3, 4})});
  EXPECT_EQ(out[0], Array::FromVector<float>({2, 2}, {1, 2, 3, 4}));
}

TEST(Executable, WhileLoopSumsAndHonoursTheIterationLimit) {
  constexpr std::string_view kLoop = R"(
HloModule w
cond {
  s = (s32[], s32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(10)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], s32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  acc = s32[] get-tuple-element(s), index=1
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  acc1 = s32[] add(acc, i1)
  ROOT t = (s32[], s32[]) tuple(i1, acc1)
}
ENTRY main {
  z = s32[] constant(0)
  init = (s32[], s32[]) tuple(z, z)
  ROOT w = (s32[], s32[]) while(init), condition=cond, body=body
})";
  std::vector<Array> out = *RunHlo(kLoop, {});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].GetDouble(0), 10);
  EXPECT_EQ(out[1].GetDouble(0), 55);  // 1 + 2 + ... + 10
  ExecuteOptions limited;
  limited.max_while_iterations = 3;
  StatusOr<std::vector<Array>> r = RunHlo(kLoop, {}, limited);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.status(), "while loop 'w' exceeded 3 iterations"));
}

constexpr std::string_view kConditional = R"(
HloModule c
neg { p = f32[] parameter(0)
  ROOT n = f32[] negate(p) }
dbl { p = f32[] parameter(0)
  ROOT d = f32[] add(p, p) }
ENTRY main {
  i = s32[] parameter(0)
  x = f32[] parameter(1)
  ROOT c = f32[] conditional(i, x, x), branch_computations={neg, dbl}
})";

TEST(Executable, IndexedConditionalRunsTheLastBranchForOutOfRangeIndices) {
  auto run = [](int32_t i) {
    return (*RunHlo(kConditional, {Array::Scalar<int32_t>(i), Array::Scalar<float>(3.0f)}))[0].GetDouble(0);
  };
  EXPECT_EQ(run(0), -3.0);
  EXPECT_EQ(run(1), 6.0);
  EXPECT_EQ(run(7), 6.0);
  EXPECT_EQ(run(-1), 6.0);
}

TEST(Executable, PredConditionalPicksTrueThenFalse) {
  constexpr std::string_view kPred = R"(
HloModule c
t { p = f32[] parameter(0)
  ROOT n = f32[] negate(p) }
f { p = f32[] parameter(0)
  ROOT d = f32[] add(p, p) }
ENTRY main {
  b = pred[] parameter(0)
  x = f32[] parameter(1)
  ROOT c = f32[] conditional(b, x, x), true_computation=t, false_computation=f
})";
  EXPECT_EQ((*RunHlo(kPred, {Array::Scalar<bool>(true), Array::Scalar<float>(2.0f)}))[0].GetDouble(0), -2.0);
  EXPECT_EQ((*RunHlo(kPred, {Array::Scalar<bool>(false), Array::Scalar<float>(2.0f)}))[0].GetDouble(0), 4.0);
}

TEST(Executable, CallAndFusionRunTheirComputations) {
  std::vector<Array> out = *RunHlo(R"(
HloModule c
sq { p = f32[2] parameter(0)
  ROOT m = f32[2] multiply(p, p) }
fused { a = f32[2] parameter(0)
  b = f32[2] parameter(1)
  ROOT s = f32[2] subtract(a, b) }
ENTRY main {
  x = f32[2] parameter(0)
  c = f32[2] call(x), to_apply=sq
  ROOT f = f32[2] fusion(c, x), kind=kLoop, calls=fused
})", {Array::FromVector<float>({2}, {3, -2})});
  EXPECT_EQ(out[0], Array::FromVector<float>({2}, {6, 6}));
}

TEST(Executable, OneParticipantCollectivesAreIdentities) {
  std::vector<Array> out = *RunHlo(R"(
HloModule c, num_partitions=1
add { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b) }
ENTRY main {
  p = f32[4] parameter(0)
  ar = f32[4] all-reduce(p), replica_groups={{0}}, to_apply=add
  ag = f32[4] all-gather(ar), replica_groups={{0}}, dimensions={0}
  rs = f32[4] reduce-scatter(ag), replica_groups={}, dimensions={0}, to_apply=add
  a2a = f32[4] all-to-all(rs), replica_groups={{0}}, dimensions={0}
  cp = f32[4] collective-permute(a2a), source_target_pairs={{0,0}}
  pid = u32[] partition-id()
  ROOT t = (f32[4], u32[]) tuple(cp, pid)
})", {Array::FromVector<float>({4}, {1, 2, 3, 4})});
  EXPECT_EQ(out[0], Array::FromVector<float>({4}, {1, 2, 3, 4}));
  EXPECT_EQ(out[1].GetDouble(0), 0);
}

TEST(Executable, CollectivePermuteWithNoSenderGivesZeros) {
  std::vector<Array> out = *RunHlo(R"(
HloModule c
ENTRY main {
  p = f32[2] parameter(0)
  ROOT cp = f32[2] collective-permute(p), source_target_pairs={{1,2}}
})", {Array::FromVector<float>({2}, {5, 6})});
  EXPECT_EQ(out[0], Array::FromVector<float>({2}, {0, 0}));
}

TEST(Executable, MultiParticipantGroupsNeedAMultiDeviceRuntime) {
  StatusOr<std::vector<Array>> r = RunHlo(R"(
HloModule c
add { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b) }
ENTRY main {
  p = f32[2] parameter(0)
  ROOT ar = f32[2] all-reduce(p), replica_groups={{0,1}}, to_apply=add
})", {Array::FromVector<float>({2}, {5, 6})});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.status(), "unsupported: instruction 'ar' (all-reduce)"));
  EXPECT_TRUE(Contains(r.status(), "2 participants"));
}

TEST(Executable, ChainOfElementwiseOpsReusesBuffersInPlace) {
  // 8 chained negates of a 1 MiB array: each result reuses its dying operand's buffer, so at most
  // one executor buffer is alive (the argument is the caller's and is never written).
  std::string text = "HloModule chain\nENTRY main {\n  x0 = f32[262144] parameter(0)\n";
  for (int i = 1; i <= 8; ++i) text += StrCat("  x", i, " = f32[262144] negate(x", i - 1, ")\n");
  text += "  ROOT r = f32[262144] add(x8, x0)\n}\n";
  std::unique_ptr<Module> m = ParseOrFail(text);
  std::unique_ptr<Executable> e = *Executable::Create(*m);
  Array x = Array::Full(DType::kF32, {262144}, 2.0);
  ExecuteStats stats;
  std::vector<Array> out = *e->Run(std::span<const Array>(&x, 1), {}, &stats);
  EXPECT_EQ(out[0].GetDouble(100), 4.0);  // (-1)^8 * 2 + 2
  EXPECT_EQ(x.GetDouble(100), 2.0);       // argument untouched
  EXPECT_EQ(stats.instructions_run, 9);
  EXPECT_EQ(stats.peak_bytes, 262144 * 4);
}

TEST(Executable, DonatedArgumentsAreUpdatedInPlace) {
  std::unique_ptr<Module> m = ParseOrFail(R"(
HloModule d
ENTRY main {
  a = f32[1024] parameter(0)
  b = f32[1024] parameter(1)
  ROOT c = f32[1024] add(a, b)
})");
  std::unique_ptr<Executable> e = *Executable::Create(*m);
  std::vector<Array> args = {Array::Full(DType::kF32, {1024}, 1.0), Array::Full(DType::kF32, {1024}, 2.0)};
  const std::byte* a_buffer = args[0].data();
  std::vector<Array> out = *e->RunDonated(std::move(args));
  EXPECT_EQ(out[0].GetDouble(7), 3.0);
  EXPECT_EQ(out[0].data(), a_buffer);  // the sum was written into a's buffer
  StatusOr<std::vector<Array>> bad = e->RunDonated({Array(DType::kF32, {1024})});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "'main' takes 2 argument(s) but 1 were given");
}

TEST(Executable, DeadValuesAreFreedBeforeLaterOnes) {
  // a and b (4 MiB each) die before c is made: the peak holds two buffers, not three.
  std::vector<Array> args = {Array(DType::kF32, {1 << 20})};
  std::unique_ptr<Module> m = ParseOrFail(R"(
HloModule f
ENTRY main {
  p = f32[1048576] parameter(0)
  a = f32[1048576] exponential(p)
  b = f32[1048576] sine(p)
  ab = f32[1048576] multiply(a, b)
  c = f32[1048576] cosine(p)
  ROOT r = f32[1048576] add(ab, c)
})");
  std::unique_ptr<Executable> e = *Executable::Create(*m);
  ExecuteStats stats;
  ExecuteOptions op_by_op;
  op_by_op.fusion = false;  // fused, the chain holds only its result
  ASSERT_TRUE(e->Run(args, op_by_op, &stats).ok());
  EXPECT_EQ(stats.peak_bytes, 2 * 4 * (1 << 20));
  ASSERT_TRUE(e->Run(args, {}, &stats).ok());
  EXPECT_EQ(stats.peak_bytes, 4 * (1 << 20));
}

TEST(Executable, TupleParameterTakesItsLeavesAndRunTupleKeepsStructure) {
  std::unique_ptr<Module> m = ParseOrFail(R"(
HloModule t
ENTRY main {
  p = (f32[2], s32[]) parameter(0)
  a = f32[2] get-tuple-element(p), index=0
  b = s32[] get-tuple-element(p), index=1
  n = f32[2] negate(a)
  inner = (s32[], f32[2]) tuple(b, n)
  ROOT t = ((s32[], f32[2]), f32[2]) tuple(inner, a)
})");
  std::vector<Array> args = {Array::FromVector<float>({2}, {1, 2}), Array::Scalar<int32_t>(7)};
  StatusOr<Value> v = ExecuteTuple(*m, args);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  ASSERT_TRUE(v->IsTuple());
  ASSERT_EQ(v->elements.size(), 2u);
  EXPECT_EQ(v->elements[0].elements[0].array->GetDouble(0), 7);
  EXPECT_EQ(*v->elements[0].elements[1].array, Array::FromVector<float>({2}, {-1, -2}));
  std::vector<Array> flat = std::move(*v).Flatten();
  EXPECT_EQ(flat.size(), 3u);
}

TEST(Executable, DynamicUpdateSliceInWhileBodyUpdatesInPlaceAndClampsIndices) {
  std::vector<Array> out = *RunHlo(R"(
HloModule d
ENTRY main {
  x = f32[4] parameter(0)
  u = f32[2] constant({9, 8})
  i = s32[] constant(3)
  ROOT d = f32[4] dynamic-update-slice(x, u, i)
})", {Array::FromVector<float>({4}, {1, 2, 3, 4})});
  EXPECT_EQ(out[0], Array::FromVector<float>({4}, {1, 2, 9, 8}));  // start 3 clamps to 2
}

TEST(Executable, GenericReducerAndComparatorRunAsScalarComputations) {
  std::vector<Array> out = *RunHlo(R"(
HloModule r
absmax { a = f32[] parameter(0)
  b = f32[] parameter(1)
  aa = f32[] abs(a)
  ab = f32[] abs(b)
  ROOT m = f32[] maximum(aa, ab) }
desc { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT gt = pred[] compare(a, b), direction=GT }
ENTRY main {
  x = f32[2,3] parameter(0)
  z = f32[] constant(0)
  r = f32[2] reduce(x, z), dimensions={1}, to_apply=absmax
  s = f32[2,3] sort(x), dimensions={1}, to_apply=desc
  ROOT t = (f32[2], f32[2,3]) tuple(r, s)
})", {Array::FromVector<float>({2, 3}, {1, -5, 2, 3, 0, -1})});
  EXPECT_EQ(out[0], Array::FromVector<float>({2}, {5, 3}));
  EXPECT_EQ(out[1], Array::FromVector<float>({2, 3}, {2, 1, -5, 3, 0, -1}));
}

TEST(Executable, ReducerThatCallsAnotherComputationRunsThroughTheGenericPath) {
  // The call keeps the reducer out of the compiled scalar path: each step runs the plan.
  std::vector<Array> out = *RunHlo(R"(
HloModule r
inner { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] multiply(a, b) }
prod { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] call(a, b), to_apply=inner }
ENTRY main {
  x = f32[2,3] parameter(0)
  one = f32[] constant(1)
  ROOT r = f32[3] reduce(x, one), dimensions={0}, to_apply=prod
})", {Array::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6})});
  EXPECT_EQ(out[0], Array::FromVector<float>({3}, {4, 10, 18}));
}

TEST(Executable, MapAppliesItsComputationPerElement) {
  std::vector<Array> out = *RunHlo(R"(
HloModule m
f { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] subtract(a, b) }
ENTRY main {
  x = f32[3] parameter(0)
  y = f32[3] parameter(1)
  ROOT m = f32[3] map(x, y), dimensions={0}, to_apply=f
})", {Array::FromVector<float>({3}, {5, 6, 7}), Array::FromVector<float>({3}, {1, 1, 2})});
  EXPECT_EQ(out[0], Array::FromVector<float>({3}, {4, 5, 5}));
}

TEST(Executable, ScalarPredicateSelectPicksAWholeOperand) {
  std::vector<Array> out = *RunHlo(R"(
HloModule s
ENTRY main {
  p = pred[] parameter(0)
  a = f32[2] parameter(1)
  b = f32[2] parameter(2)
  ROOT s = f32[2] select(p, a, b)
})", {Array::Scalar<bool>(false), Array::FromVector<float>({2}, {1, 2}), Array::FromVector<float>({2}, {3, 4})});
  EXPECT_EQ(out[0], Array::FromVector<float>({2}, {3, 4}));
}

}  // namespace
}  // namespace xs
