// ScheduleAsyncCollectives on partitioned programs: the windowed-einsum loop's collective-permute
// becomes a start / done pair around the loop body's dot, and the scheduled program gives the
// same numbers as the synchronous one on 8 devices (the synchronous one is checked against the
// single-device result by spmd/windowed_einsum_test.cc); plus the basic placement on a small
// module.
#include <gtest/gtest.h>

#include <algorithm>

#include "xshard/base/strings.h"
#include "xshard/ir/verifier.h"
#include "xshard/passes/collective_schedule.h"
#include "xshard/runtime/client.h"
#include "xshard/runtime/spmd_executor.h"
#include "xshard/spmd/partitioner.h"
#include "xshard/text/parser.h"
#include "xshard/text/printer.h"

namespace xs {
namespace {

// Position of the first instruction with `opcode` in the computation's execution order, -1 if none.
int PositionOf(const Computation& c, Opcode opcode) {
  const std::vector<Instruction*> order = c.MakeInstructionPostOrder();
  for (size_t i = 0; i < order.size(); ++i) {
    if (order[i]->opcode() == opcode) return static_cast<int>(i);
  }
  return -1;
}

int Count(const Module& m, Opcode opcode) {
  int n = 0;
  for (const Computation* c : m.computations()) {
    for (const Instruction* inst : c->instructions()) n += inst->opcode() == opcode;
  }
  return n;
}

TEST(CollectiveScheduleTest, StartGoesBeforeAndDoneAfterIndependentDots) {
  StatusOr<std::unique_ptr<Module>> m = ParseHloModule(R"(HloModule m, num_partitions=2

ENTRY e {
  x = f32[4,4] parameter(0)
  y = f32[4,4] parameter(1)
  ag = f32[8,4] all-gather(x), channel_id=1, replica_groups={{0,1}}, dimensions={0}, use_global_device_ids=true
  d = f32[4,4] dot(y, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  d2 = f32[8,4] dot(ag, d), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (f32[8,4], f32[4,4], f32[8,4]) tuple(ag, d, d2)
}
)");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  StatusOr<bool> changed = ScheduleAsyncCollectives(**m);
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(Verify(**m).ok()) << Verify(**m).ToString() << PrintHloModule(**m);
  EXPECT_EQ(Count(**m, Opcode::kAllGather), 0);
  const Computation& e = *(*m)->entry();
  const std::vector<Instruction*> order = e.MakeInstructionPostOrder();
  auto pos = [&](std::string_view name) {
    for (size_t i = 0; i < order.size(); ++i) {
      if (order[i]->name() == name) return static_cast<int>(i);
    }
    return -1;
  };
  // d is independent of the all-gather: start, d, done; d2 uses the gathered value: after done.
  EXPECT_LT(pos("ag-start"), pos("d"));
  EXPECT_LT(pos("d"), pos("ag-done"));
  EXPECT_LT(pos("ag-done"), pos("d2"));
}

TEST(CollectiveScheduleTest, ReduceScatterBecomesAnAsyncStartWrappingItAndRuns) {
  const std::string text = R"(HloModule m, num_partitions=2

sum {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] add(a, b)
}

ENTRY e {
  x = s32[4] parameter(0)
  y = s32[2,2] parameter(1)
  rs = s32[2] reduce-scatter(x), channel_id=1, replica_groups={{0,1}}, dimensions={0}, use_global_device_ids=true, to_apply=sum
  d = s32[2,2] dot(y, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (s32[2], s32[2,2]) tuple(rs, d)
}
)";
  StatusOr<std::unique_ptr<Module>> m = ParseHloModule(text);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  StatusOr<bool> changed = ScheduleAsyncCollectives(**m);
  ASSERT_TRUE(changed.ok() && *changed) << changed.status().ToString();
  ASSERT_TRUE(Verify(**m).ok()) << Verify(**m).ToString() << PrintHloModule(**m);
  EXPECT_EQ(Count(**m, Opcode::kAsyncStart), 1);
  // The printed module parses back to one that verifies (XLA's text form of an async
  // reduce-scatter).
  StatusOr<std::unique_ptr<Module>> again = ParseHloModule(PrintHloModule(**m));
  ASSERT_TRUE(again.ok()) << again.status().ToString() << PrintHloModule(**m);
  ASSERT_TRUE(Verify(**again).ok()) << Verify(**again).ToString();
  const Computation& e = *(*again)->entry();
  EXPECT_LT(PositionOf(e, Opcode::kAsyncStart), PositionOf(e, Opcode::kDot));
  EXPECT_LT(PositionOf(e, Opcode::kDot), PositionOf(e, Opcode::kAsyncDone));
  // Device d: x = [10d, 10d+1, 10d+2, 10d+3], y = [[1,d],[0,1]].
  std::vector<std::vector<Array>> args(2);
  for (int32_t d = 0; d < 2; ++d) {
    args[d].push_back(Array::FromVector<int32_t>({4}, {10 * d, 10 * d + 1, 10 * d + 2, 10 * d + 3}));
    args[d].push_back(Array::FromVector<int32_t>({2, 2}, {1, d, 0, 1}));
  }
  ClientOptions o;
  o.num_devices = 2;
  auto client = Client::Create(o);
  ASSERT_TRUE(client.ok());
  auto exe = SpmdExecutable::Create(**again);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  StatusOr<SpmdResult> r = (*exe)->Run(**client, args);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // Sum [10, 12, 14, 16]: device 0 gets [10, 12], device 1 [14, 16]; y @ y = [[1,2d],[0,1]].
  auto i32 = [](const Array& a) {
    std::span<const int32_t> v = a.values<int32_t>();
    return std::vector<int32_t>(v.begin(), v.end());
  };
  EXPECT_EQ(i32(r->outputs[0][0]), (std::vector<int32_t>{10, 12}));
  EXPECT_EQ(i32(r->outputs[1][0]), (std::vector<int32_t>{14, 16}));
  EXPECT_EQ(i32(r->outputs[1][1]), (std::vector<int32_t>{1, 2, 0, 1}));
}

std::string AllGatherRhs(int64_t n) {
  return StrCat("HloModule m, num_partitions=", n, R"(
ENTRY e {
  x = f32[64,32] parameter(0), sharding={devices=[)", n, ",1]<=[", n, R"(]}
  y = f32[32,64] parameter(1), sharding={devices=[1,)", n, "]<=[", n, R"(]}
  ROOT d = f32[64,64] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={devices=[)",
                n, ",1]<=[", n, "]}\n}\n");
}

StatusOr<PartitionResult> PartitionWindowed(const Module& global, int64_t n) {
  PartitionOptions options;
  options.windowed_einsum_threshold_bytes = 0;
  return Partition(global, n, options);
}

TEST(CollectiveScheduleTest, WindowedEinsumPermuteOverlapsTheLoopBodysDotAndKeepsTheNumbers) {
  const int64_t n = 8;
  StatusOr<std::unique_ptr<Module>> global = ParseHloModule(AllGatherRhs(n));
  ASSERT_TRUE(global.ok()) << global.status().ToString();
  StatusOr<PartitionResult> sync = PartitionWindowed(**global, n);
  StatusOr<PartitionResult> async = PartitionWindowed(**global, n);
  ASSERT_TRUE(sync.ok() && async.ok()) << sync.status().ToString();
  StatusOr<bool> changed = ScheduleAsyncCollectives(*async->module);
  ASSERT_TRUE(changed.ok() && *changed) << changed.status().ToString();
  ASSERT_TRUE(Verify(*async->module).ok()) << PrintHloModule(*async->module);
  EXPECT_EQ(Count(*async->module, Opcode::kCollectivePermute), 0);
  EXPECT_EQ(Count(*async->module, Opcode::kCollectivePermuteStart), 1);
  // In the loop body: permute-start, then the dot step, then permute-done.
  bool found = false;
  for (const Computation* c : async->module->computations()) {
    const int start = PositionOf(*c, Opcode::kCollectivePermuteStart);
    if (start < 0) continue;
    found = true;
    const int dot = PositionOf(*c, Opcode::kDot);
    ASSERT_GE(dot, 0) << PrintHloModule(*async->module);
    EXPECT_LT(start, dot);
    EXPECT_LT(dot, PositionOf(*c, Opcode::kCollectivePermuteDone));
  }
  EXPECT_TRUE(found);

  // Same numbers on 8 devices, several runs.
  // x rows split 8 ways, y columns split 8 ways (even: no padding); small integers, so every
  // summation order gives the same floats.
  std::vector<std::vector<Array>> args(n);
  for (int64_t d = 0; d < n; ++d) {
    Array x(DType::kF32, {64 / n, 32}), y(DType::kF32, {32, 64 / n});
    for (int64_t i = 0; i < x.num_elements(); ++i) x.SetDouble(i, static_cast<double>((i * 7 + d * 3) % 11) - 5);
    for (int64_t i = 0; i < y.num_elements(); ++i) y.SetDouble(i, static_cast<double>((i * 5 + d) % 9) - 4);
    args[d].push_back(std::move(x));
    args[d].push_back(std::move(y));
  }
  ClientOptions o;
  o.num_devices = n;
  auto client = Client::Create(o);
  ASSERT_TRUE(client.ok());
  auto sync_exe = SpmdExecutable::Create(*sync->module);
  auto async_exe = SpmdExecutable::Create(*async->module);
  ASSERT_TRUE(sync_exe.ok() && async_exe.ok()) << async_exe.status().ToString();
  StatusOr<SpmdResult> want = (*sync_exe)->Run(**client, args);
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  // Device d's rows of x @ y by hand: column j of y is column j % 8 of device j / 8's shard.
  const int64_t w = 64 / n;
  for (int64_t d = 0; d < n; ++d) {
    const Array& out = want->outputs[d][0];
    ASSERT_EQ(out.num_elements(), w * 64);
    for (int64_t i = 0; i < w; ++i) {
      for (int64_t j = 0; j < 64; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < 32; ++k) {
          acc += args[d][0].GetDouble(i * 32 + k) * args[j / w][1].GetDouble(k * w + j % w);
        }
        ASSERT_EQ(out.GetDouble(i * 64 + j), acc) << d << " " << i << " " << j;
      }
    }
  }
  for (int rep = 0; rep < 5; ++rep) {
    StatusOr<SpmdResult> got = (*async_exe)->Run(**client, args);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    for (int64_t d = 0; d < n; ++d) {
      const Array& a = got->outputs[d][0];
      const Array& b = want->outputs[d][0];
      ASSERT_EQ(a.num_elements(), b.num_elements());
      for (int64_t i = 0; i < a.num_elements(); ++i) {
        ASSERT_EQ(a.GetDouble(i), b.GetDouble(i)) << "device " << d << " element " << i;
      }
    }
  }
}

// Seed 003's Wang output-stationary loop as JAX's shard_map lowers it (unrolled), on the 'col'
// axis of 4 devices: x_lo travels up and x_hi down the ring while each step multiplies the halves
// it holds with the matching blocks of the gathered W. Device j holds xl_j, xh_j (f32[4,2]) and
// W (f32[16,3], blocks of 2 rows: block 2s pairs with xl_s, block 2s+1 with xh_s).
std::string WangOs() {
  std::string body = R"(  xl0 = f32[4,2] parameter(0)
  xh0 = f32[4,2] parameter(1)
  w = f32[16,3] parameter(2)
  pid = u32[] partition-id()
  idx = s32[] convert(pid)
  c0 = s32[] constant(0)
  c2 = s32[] constant(2)
  c4 = s32[] constant(4)
  r0 = s32[] multiply(idx, c4)
  r1 = s32[] add(r0, c2)
  bl0 = f32[2,3] dynamic-slice(w, r0, c0), dynamic_slice_sizes={2,3}
  bh0 = f32[2,3] dynamic-slice(w, r1, c0), dynamic_slice_sizes={2,3}
  dl0 = f32[4,3] dot(xl0, bl0), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  dh0 = f32[4,3] dot(xh0, bh0), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  o0 = f32[4,3] add(dl0, dh0)
)";
  for (int i = 1; i < 4; ++i) {
    const int p = i - 1;
    body += StrCat(
        "  xl", i, " = f32[4,2] collective-permute(xl", p, "), channel_id=", 2 * i - 1,
        ", source_target_pairs={{0,1},{1,2},{2,3},{3,0}}\n",
        "  xh", i, " = f32[4,2] collective-permute(xh", p, "), channel_id=", 2 * i,
        ", source_target_pairs={{0,3},{1,0},{2,1},{3,2}}\n",
        "  k", i, " = s32[] constant(", i, ")\n",
        "  m", i, " = s32[] constant(", 4 - i, ")\n",
        "  al", i, " = s32[] add(idx, m", i, ")\n",
        "  sl", i, " = s32[] remainder(al", i, ", c4)\n",
        "  ah", i, " = s32[] add(idx, k", i, ")\n",
        "  sh", i, " = s32[] remainder(ah", i, ", c4)\n",
        "  rl", i, " = s32[] multiply(sl", i, ", c4)\n",
        "  rm", i, " = s32[] multiply(sh", i, ", c4)\n",
        "  rh", i, " = s32[] add(rm", i, ", c2)\n",
        "  bl", i, " = f32[2,3] dynamic-slice(w, rl", i, ", c0), dynamic_slice_sizes={2,3}\n",
        "  bh", i, " = f32[2,3] dynamic-slice(w, rh", i, ", c0), dynamic_slice_sizes={2,3}\n",
        "  dl", i, " = f32[4,3] dot(xl", i, ", bl", i, "), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n",
        "  dh", i, " = f32[4,3] dot(xh", i, ", bh", i, "), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n",
        "  s", i, " = f32[4,3] add(dl", i, ", dh", i, ")\n",
        "  ", i == 3 ? "ROOT " : "", "o", i, " = f32[4,3] add(o", p, ", s", i, ")\n");
  }
  return StrCat("HloModule wang, num_partitions=4\n\nENTRY main {\n", body, "}\n");
}

TEST(CollectiveScheduleTest, WangBidirectionalRingPermutesOverlapThePreviousStepsDots) {
  StatusOr<std::unique_ptr<Module>> sync = ParseHloModule(WangOs());
  StatusOr<std::unique_ptr<Module>> async = ParseHloModule(WangOs());
  ASSERT_TRUE(sync.ok() && async.ok()) << sync.status().ToString();
  StatusOr<bool> changed = ScheduleAsyncCollectives(**async);
  ASSERT_TRUE(changed.ok() && *changed) << changed.status().ToString();
  ASSERT_TRUE(Verify(**async).ok()) << Verify(**async).ToString() << PrintHloModule(**async);
  const std::vector<Instruction*> order = (*async)->entry()->MakeInstructionPostOrder();
  auto pos = [&](const std::string& name) {
    for (size_t i = 0; i < order.size(); ++i) {
      if (order[i]->name() == name) return static_cast<int>(i);
    }
    ADD_FAILURE() << "no " << name;
    return -1;
  };
  // Each shift of step i+1 is in flight during step i's dots that follow its operand (both for
  // the upward shift; the downward one's operand is ready after dl_i in this order, so dh_i).
  auto in_flight = [&](const std::string& cp, const std::string& dot) {
    return pos(cp + "-start") < pos(dot) && pos(dot) < pos(cp + "-done");
  };
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(in_flight(StrCat("xl", i + 1), StrCat("dl", i))) << i << PrintHloModule(**async);
    EXPECT_TRUE(in_flight(StrCat("xl", i + 1), StrCat("dh", i))) << i;
    EXPECT_TRUE(in_flight(StrCat("xh", i + 1), StrCat("dh", i))) << i;
  }
  // Numbers: every device computes X @ W with X = [xl_0 xh_0 xl_1 xh_1 ...] (f32[4,16]).
  std::vector<std::vector<Array>> args(4);
  Array w(DType::kF32, {16, 3});
  for (int64_t i = 0; i < w.num_elements(); ++i) w.SetDouble(i, static_cast<double>((i * 5) % 7) - 3);
  for (int64_t d = 0; d < 4; ++d) {
    Array xl(DType::kF32, {4, 2}), xh(DType::kF32, {4, 2});
    for (int64_t i = 0; i < 8; ++i) {
      xl.SetDouble(i, static_cast<double>((i * 3 + d) % 5) - 2);
      xh.SetDouble(i, static_cast<double>((i + 2 * d) % 7) - 3);
    }
    args[d].push_back(std::move(xl));
    args[d].push_back(std::move(xh));
    args[d].push_back(Array(w));
  }
  std::vector<double> want(12, 0.0);
  for (int64_t s = 0; s < 4; ++s) {
    for (int64_t r = 0; r < 4; ++r) {
      for (int64_t c = 0; c < 3; ++c) {
        for (int64_t k = 0; k < 2; ++k) {
          want[r * 3 + c] += args[s][0].GetDouble(r * 2 + k) * w.GetDouble((4 * s + k) * 3 + c) +
                             args[s][1].GetDouble(r * 2 + k) * w.GetDouble((4 * s + 2 + k) * 3 + c);
        }
      }
    }
  }
  ClientOptions o;
  o.num_devices = 4;
  auto client = Client::Create(o);
  ASSERT_TRUE(client.ok());
  for (const auto* m : {&*sync, &*async}) {
    auto exe = SpmdExecutable::Create(**m);
    ASSERT_TRUE(exe.ok()) << exe.status().ToString();
    for (int rep = 0; rep < 5; ++rep) {
      StatusOr<SpmdResult> got = (*exe)->Run(**client, args);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      for (int64_t d = 0; d < 4; ++d) {
        for (int64_t i = 0; i < 12; ++i) {
          ASSERT_EQ(got->outputs[d][0].GetDouble(i), want[i]) << "device " << d << " element " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace xs
