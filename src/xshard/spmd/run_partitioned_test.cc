// The numeric harness of run_partitioned.h over the SPMD executor, and tests of the harness
// itself (padded input shards).
#include "xshard/ir/attributes.h"
#include "xshard/ir/module.h"
#include "xshard/ir/verifier.h"
#include "xshard/kernels/dot.h"
#include "xshard/exec/executable.h"
#include "xshard/text/parser.h"
#include "xshard/text/printer.h"
#include "xshard/runtime/client.h"
#include "xshard/comm/collectives.h"
#include "xshard/comm/communicator.h"
#include "xshard/comm/replica_groups.h"

#include "xshard/spmd/run_partitioned.h"

#include <algorithm>
#include <cmath>

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include "xshard/base/strings.h"
#include "xshard/core/numerics.h"
#include "xshard/runtime/client.h"
#include "xshard/exec/executable.h"
#include "xshard/runtime/spmd_executor.h"
#include "xshard/sharding/geometry.h"

namespace xs::spmd::testing {
namespace {

// Random inputs can make a loop run forever; both runs stop with an error instead.
constexpr int64_t kMaxWhileIterations = 10000;

std::vector<int64_t> Unravel(int64_t linear, const std::vector<int64_t>& dims) {
  std::vector<int64_t> index(dims.size());
  for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
    index[d] = dims[d] == 0 ? 0 : linear % dims[d];
    linear = dims[d] == 0 ? 0 : linear / dims[d];
  }
  return index;
}

int64_t Ravel(const std::vector<int64_t>& index, const std::vector<int64_t>& dims) {
  int64_t linear = 0;
  for (size_t d = 0; d < dims.size(); ++d) linear = linear * dims[d] + index[d];
  return linear;
}

std::vector<const Shape*> Leaves(const Shape& shape) {
  if (!shape.IsTuple()) return {&shape};
  std::vector<const Shape*> out;
  for (const Shape& e : shape.tuple_shapes()) {
    std::vector<const Shape*> sub = Leaves(e);
    out.insert(out.end(), sub.begin(), sub.end());
  }
  return out;
}

std::vector<HloSharding> LeafShardings(const Shape& shape, const HloSharding& s) {
  if (s.IsTuple()) return s.tuple_elements();
  return std::vector<HloSharding>(Leaves(shape).size(), s);
}

}  // namespace

StatusOr<std::vector<Array>> PaddedShards(const Array& global, const HloSharding& sharding,
                                          int64_t n) {
  std::vector<Array> out;
  if (sharding.IsMaximal()) {
    for (int64_t p = 0; p < n; ++p) out.push_back(p == sharding.device() ? global : Array(global.shape()));
    return out;
  }
  if (!sharding.IsTiled()) {
    out.assign(n, global);
    return out;
  }
  XS_ASSIGN_OR_RETURN(ShardGeometry g, ShardGeometry::Create(sharding, global.dims(), n));
  const std::vector<int64_t> padded = g.PaddedShardShape();
  // Garbage in the padding (NaN for floating types): it must never reach a result.
  const bool floating = IsFloating(global.dtype());
  const Array garbage = Array::Full(global.dtype(), padded, floating ? std::nan("") : 77);
  for (int64_t p = 0; p < n; ++p) {
    Array shard = garbage;
    const Box& box = g.shard(p).box;
    if (box.num_elements() > 0) shard.UpdateSlice(global.Slice(box.start, box.sizes()), std::vector<int64_t>(padded.size(), 0));
    out.push_back(std::move(shard));
  }
  return out;
}

StatusOr<std::vector<std::vector<Array>>> RunPartitioned(const PartitionResult& partitioned,
                                                         const std::vector<Array>& global_args) {
  const Module& m = *partitioned.module;
  const int64_t n = m.config().num_partitions;
  std::vector<std::vector<Array>> args(n);
  size_t leaf = 0;
  for (size_t i = 0; i < partitioned.parameter_shardings.size(); ++i) {
    const Shape& shape = m.entry()->parameter(static_cast<int>(i))->shape();
    const std::vector<HloSharding> shardings = LeafShardings(shape, partitioned.parameter_shardings[i]);
    for (const HloSharding& s : shardings) {
      if (leaf >= global_args.size()) return InvalidArgument("too few arguments");
      XS_ASSIGN_OR_RETURN(std::vector<Array> shards, PaddedShards(global_args[leaf++], s, n));
      for (int64_t p = 0; p < n; ++p) args[p].push_back(std::move(shards[p]));
    }
  }
  XS_ASSIGN_OR_RETURN(std::unique_ptr<SpmdExecutable> exe, SpmdExecutable::Create(m));
  ClientOptions options;
  options.num_devices = n;
  options.collective_timeout = std::chrono::milliseconds(20000);
  XS_ASSIGN_OR_RETURN(std::unique_ptr<Client> client, Client::Create(options));
  SpmdRunOptions run_options;
  run_options.max_while_iterations = kMaxWhileIterations;
  XS_ASSIGN_OR_RETURN(SpmdResult result, exe->Run(*client, args, run_options));
  return result.outputs;
}

Status CompareWithGlobal(const Module& global, const PartitionResult& partitioned,
                         const std::vector<Array>& global_args, double tolerance) {
  ExecuteOptions options;
  options.max_while_iterations = kMaxWhileIterations;
  XS_ASSIGN_OR_RETURN(std::vector<Array> expected, Execute(global, global_args, options));
  XS_ASSIGN_OR_RETURN(auto outputs, RunPartitioned(partitioned, global_args));
  const Shape& out_shape = global.entry()->root()->shape();
  const std::vector<HloSharding> shardings = LeafShardings(out_shape, partitioned.output_sharding);
  const int64_t n = partitioned.module->config().num_partitions;
  // |got - want| <= tolerance * (1 + |want|); NaN in both places is equal.
  const ElementBound bound{tolerance, tolerance, 0, true};
  for (size_t l = 0; l < expected.size(); ++l) {
    const Array& want = expected[l];
    const HloSharding& s = shardings[l];
    if (s.IsManual()) continue;
    std::vector<int64_t> tiles(want.rank(), 1);
    if (s.IsTiled()) {
      for (int d = 0; d < want.rank(); ++d) tiles[d] = s.tile_assignment().dim(d);
    }
    std::vector<int64_t> shard(want.rank());
    for (int d = 0; d < want.rank(); ++d) shard[d] = (want.dims()[d] + tiles[d] - 1) / tiles[d];
    std::optional<ShardGeometry> g;
    if (s.IsTiled()) {
      XS_ASSIGN_OR_RETURN(ShardGeometry geo, ShardGeometry::Create(s, want.dims(), n));
      g = std::move(geo);
    }
    for (int64_t p = 0; p < n; ++p) {
      if (s.IsMaximal() && p != s.device()) continue;
      const Array& got = outputs[p][l];
      if (got.dims() != shard) {
        return Internal("device ", p, " output ", l, " has dims ", got.shape().ToString(false),
                        ", expected [", JoinDims(shard), "]");
      }
      std::vector<int64_t> start(want.rank(), 0);
      if (g) {
        const std::vector<int64_t>& t = g->shard(p).tile_index;
        for (int d = 0; d < want.rank(); ++d) start[d] = t[d] * shard[d];
      }
      // The real elements (the box of the global result this device holds) within the bound of
      // core/numerics; the padding after them must be zero within the same bound.
      std::vector<int64_t> real(want.rank());
      for (int d = 0; d < want.rank(); ++d) {
        real[d] = std::clamp<int64_t>(want.dims()[d] - start[d], 0, shard[d]);
      }
      ElementDiffs diffs;  // a device holding only padding has an empty box (start past the dims)
      if (Product(real) > 0) {
        XS_RETURN_IF_ERROR(AccumulateElementDiffs(got, std::vector<int64_t>(want.rank(), 0), want,
                                                  start, real, bound, &diffs));
      }
      // The first failure in the device's row-major order, real or padding.
      int64_t first = got.num_elements();
      double value = 0, expect = 0;
      if (!diffs.ok()) {
        std::vector<int64_t> local = diffs.first_failure;
        for (int d = 0; d < want.rank(); ++d) local[d] -= start[d];
        first = Ravel(local, shard);
        value = diffs.first_got;
        expect = diffs.first_want;
      }
      for (int64_t i = 0; i < first; ++i) {
        const std::vector<int64_t> idx = Unravel(i, shard);
        bool padding = false;
        for (int d = 0; d < want.rank(); ++d) padding = padding || idx[d] >= real[d];
        if (padding && !CompareElement(got.GetDouble(i), 0.0, bound).close()) {
          first = i;
          value = got.GetDouble(i);
          expect = 0;
          break;
        }
      }
      if (first < got.num_elements()) {
        std::vector<int64_t> idx = Unravel(first, shard);
        bool real_element = true;
        for (int d = 0; d < want.rank(); ++d) {
          real_element = real_element && idx[d] < real[d];
          idx[d] += start[d];
        }
        return Internal("device ", p, " output ", l, " local element ", first, " (global [",
                        JoinDims(idx), "]", real_element ? "" : ", padding", "): got ", value,
                        ", expected ", expect);
      }
    }
  }
  return OkStatus();
}

std::vector<Array> TestInputs(const Module& module, uint64_t seed) {
  std::vector<Array> out;
  uint64_t state = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  for (const Instruction* p : module.entry()->parameters()) {
    for (const Shape* leaf : Leaves(p->shape())) {
      if (!leaf->IsArray()) continue;
      Array a(*leaf);
      for (int64_t i = 0; i < a.num_elements(); ++i) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        const int64_t r = static_cast<int64_t>((state >> 33) % 7);
        const bool unsigned_type = leaf->dtype() == DType::kU8 || leaf->dtype() == DType::kU16 ||
                                   leaf->dtype() == DType::kU32 || leaf->dtype() == DType::kU64;
        a.SetDouble(i, leaf->dtype() == DType::kPred ? r % 2 : unsigned_type ? r : r - 3);
      }
      out.push_back(std::move(a));
    }
  }
  return out;
}

namespace {

TEST(PaddedShardsTest, UnevenShardsArePaddedWithGarbage) {
  // s32[5] on 4 partitions: ceil(5/4) = 2 per shard; shard 2 holds [4] and one pad, shard 3 only
  // pad. The padding holds 77 (NaN for floats) so that a missing mask shows in the results.
  Array x = Array::FromVector<int32_t>({5}, {1, 2, 3, 4, 5});
  StatusOr<std::vector<Array>> shards = PaddedShards(x, *HloSharding::Parse("{devices=[4]<=[4]}"), 4);
  ASSERT_TRUE(shards.ok()) << shards.status().ToString();
  EXPECT_EQ((*shards)[0], Array::FromVector<int32_t>({2}, {1, 2}));
  EXPECT_EQ((*shards)[2], Array::FromVector<int32_t>({2}, {5, 77}));
  EXPECT_EQ((*shards)[3], Array::FromVector<int32_t>({2}, {77, 77}));
}

TEST(CompareWithGlobalTest, NamesTheDeviceAndTheFirstWrongElement) {
  // The global module copies its argument, the partitioned one negates it: every nonzero element
  // is off by 2|x|, far beyond the tolerance. f32[5] on 4 devices: 2 per device (device 2 holds
  // [4] and padding, device 3 only padding), so element i is device i / 2's local element i % 2.
  const std::string head =
      "HloModule m, num_partitions=4\nENTRY e {\n  a = f32[5] parameter(0), "
      "sharding={devices=[4]<=[4]}\n  ROOT r = f32[5] ";
  const std::string tail = "(a), sharding={devices=[4]<=[4]}\n}\n";
  StatusOr<std::unique_ptr<Module>> copy = ParseHloModule(head + "copy" + tail);
  StatusOr<std::unique_ptr<Module>> negate = ParseHloModule(head + "negate" + tail);
  ASSERT_TRUE(copy.ok() && negate.ok());
  StatusOr<PartitionResult> r = Partition(**negate, 4);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::vector<Array> inputs = TestInputs(**copy, 3);
  EXPECT_TRUE(CompareWithGlobal(**negate, *r, inputs).ok());
  int64_t i = 0;
  while (i < 5 && inputs[0].GetDouble(i) == 0) ++i;
  ASSERT_LT(i, 5) << "the inputs are all zero";
  const double x = inputs[0].GetDouble(i);
  const Status s = CompareWithGlobal(**copy, *r, inputs);
  EXPECT_EQ(s.message(), StrCat("device ", i / 2, " output 0 local element ", i % 2, " (global [", i,
                                "]): got ", -x, ", expected ", x));
}

TEST(PaddedShardsTest, TransposedDeviceOrderFollowsTheTileAssignment) {
  Array x = Array::FromVector<float>({4}, {1, 2, 3, 4});
  StatusOr<std::vector<Array>> shards = PaddedShards(x, *HloSharding::Parse("{devices=[4]3,1,0,2}"), 4);
  ASSERT_TRUE(shards.ok());
  EXPECT_EQ((*shards)[3], Array::FromVector<float>({1}, {1}));
  EXPECT_EQ((*shards)[2], Array::FromVector<float>({1}, {4}));
}

// The harness's own failures are test failures with a message, never a crash.
TEST(PartitionAndCompareTest, BadTextFailedPartitionAndWrongInputsFailTheTest) {
  EXPECT_NONFATAL_FAILURE(EXPECT_EQ(PartitionAndCompare("ENTRY e {\n  ROOT x = f32[8] nonsense(\n}\n", 4).module,
                                    nullptr),
                          "test.hlo: does not parse");
  EXPECT_NONFATAL_FAILURE(
      EXPECT_EQ(PartitionAndCompare("ENTRY e {\n  ROOT x = f32[8] parameter(0), sharding={devices=[8]<=[8]}\n}\n",
                                    4, CompareOptions{.name = "wide.hlo"})
                    .module,
                nullptr),
      "wide.hlo: Partition failed");
  // One argument short: the comparison fails, naming the inputs and printing the SPMD module.
  EXPECT_NONFATAL_FAILURE(
      PartitionAndCompare("ENTRY e {\n  ROOT x = f32[8] parameter(0), sharding={devices=[4]<=[4]}\n}\n", 4,
                          CompareOptions{.inputs = std::vector<Array>{}}),
      "test.hlo, the given inputs: ");
  EXPECT_NONFATAL_FAILURE(
      PartitionAndCompare("ENTRY e {\n  ROOT x = f32[8] parameter(0)\n}\n", 4, CompareOptions{.seeds = {}}),
      "nothing to compare on");
}

TEST(PartitionAndCompareTest, AWholeModuleIsParsedAsItStands) {
  const std::string text =
      "\nHloModule own, num_partitions=4\nENTRY e {\n  x = f32[8] parameter(0), sharding={devices=[4]<=[4]}\n"
      "  ROOT n = f32[8] negate(x), sharding={devices=[4]<=[4]}\n}\n";
  EXPECT_FALSE(ParseHloModule(StrCat("HloModule m, num_partitions=4\n", text)).ok()) << "two headers parse";
  const PartitionResult r = PartitionAndCompare(text, 4, {3});
  ASSERT_NE(r.module, nullptr);
  EXPECT_TRUE(CollectiveKinds(r).empty());
}

}  // namespace

PartitionResult PartitionAndCompare(const Module& global, int64_t n, const CompareOptions& options) {
  StatusOr<PartitionResult> r = Partition(global, n, options.partition);
  if (!r.ok()) {
    ADD_FAILURE() << options.name << ": Partition failed: " << r.status().ToString();
    return PartitionResult{};
  }
  if (!options.compare) return *std::move(r);
  if (!options.inputs.has_value() && options.seeds.empty()) {
    ADD_FAILURE() << options.name << ": nothing to compare on (no seeds and no inputs; set compare = false "
                  << "to only partition)";
  }
  const auto compare = [&](const std::vector<Array>& args, const std::string& what) {
    const Status s = CompareWithGlobal(global, *r, args, options.tolerance);
    EXPECT_TRUE(s.ok()) << options.name << ", " << what << ": " << s.ToString() << "\n"
                        << PrintHloModule(*r->module);
  };
  if (options.inputs.has_value()) {
    compare(*options.inputs, "the given inputs");
  } else {
    for (uint64_t seed : options.seeds) compare(TestInputs(global, seed), StrCat("seed ", seed));
  }
  return *std::move(r);
}

PartitionResult PartitionAndCompare(const std::string& text, int64_t n, const CompareOptions& options) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  const bool whole_module = first != std::string::npos && text.compare(first, 9, "HloModule") == 0;
  StatusOr<std::unique_ptr<Module>> global =
      ParseHloModule(whole_module ? text : StrCat("HloModule m, num_partitions=", n, "\n", text), options.name);
  if (!global.ok()) {
    ADD_FAILURE() << options.name << ": does not parse: " << global.status().ToString();
    return PartitionResult{};
  }
  return PartitionAndCompare(**global, n, options);
}

PartitionResult PartitionAndCompare(const std::string& text, int64_t n, const std::vector<uint64_t>& seeds) {
  return PartitionAndCompare(text, n, CompareOptions{.seeds = seeds});
}

std::vector<std::string> CollectiveKinds(const PartitionResult& r) {
  std::vector<std::string> out;
  for (const CollectiveRecord& c : r.report.collectives) out.push_back(c.kind);
  return out;
}

}  // namespace xs::spmd::testing
