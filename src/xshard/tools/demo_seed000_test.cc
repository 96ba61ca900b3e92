// The seed 000 demo section end to end: each case's z against the notebook's printed values
// (16 (i+1)(j+1)), z's sharding and the collectives against what XLA chose for the same case
// (tests/data/spmd_partition/seed000_<case>.xla.txt), and the builder's module against JAX's.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "xshard/runtime/client.h"
#include "xshard/text/parser.h"
#include "xshard/tools/demo.h"

namespace xs::tools {
namespace {

class Seed000DemoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ClientOptions options;
    options.num_devices = 8;
    StatusOr<std::unique_ptr<Client>> c = Client::Create(options);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    client_ = std::move(*c);
    StatusOr<Mesh> m = Mesh::Create({"a", "b"}, {4, 2});
    ASSERT_TRUE(m.ok());
    mesh_ = *m;
    ctx_.out = &out_;
    ctx_.timing_loops = 2;
    ctx_.timing_repeats = 3;
  }

  const Seed000Case& Case(std::string_view key) {
    for (const Seed000Case& c : Seed000Cases()) {
      if (c.key == key) return c;
    }
    ADD_FAILURE() << "no case " << key;
    return Seed000Cases()[0];
  }

  std::unique_ptr<Client> client_;
  Mesh mesh_;
  std::ostringstream out_;
  DemoContext ctx_;
};

TEST_F(Seed000DemoTest, EveryCaseGivesTheNotebooksProduct) {
  ASSERT_EQ(Seed000Cases().size(), 4u);
  for (const Seed000Case& c : Seed000Cases()) {
    StatusOr<Seed000Result> r = RunSeed000Case(ctx_, *client_, mesh_, c);
    ASSERT_TRUE(r.ok()) << c.key << ": " << r.status().ToString();
    ASSERT_EQ(r->z.dtype(), DType::kF16);
    ASSERT_EQ(r->z.dims(), (std::vector<int64_t>{4, 4}));
    for (int i = 0; i < 4; ++i) {
      for (int j = 0; j < 4; ++j) {
        EXPECT_EQ(r->z.GetDouble(i * 4 + j), 16.0 * (i + 1) * (j + 1)) << c.key << " z[" << i << "," << j << "]";
      }
    }
    EXPECT_GT(r->median_us, 0.0);
  }
  // print(z) as the notebook shows it, once per case.
  const std::string printed =
      "print(z):\n[[ 16.  32.  48.  64.]\n [ 32.  64.  96. 128.]\n [ 48.  96. 144. 192.]\n"
      " [ 64. 128. 192. 256.]]\n";
  size_t count = 0;
  for (size_t at = out_.str().find(printed); at != std::string::npos;
       at = out_.str().find(printed, at + 1)) {
    ++count;
  }
  EXPECT_EQ(count, 4u);
  EXPECT_NE(out_.str().find("sharded matmul: median "), std::string::npos);
  EXPECT_NE(out_.str().find(" over 3x2 runs"), std::string::npos);
}

// z's sharding is the one XLA's compiled programs imply: inner and mismatch return the whole
// f16[4,4] on every device, outer f16[2,4] (rows on b), full f16[2,1] (rows on b, columns on a).
TEST_F(Seed000DemoTest, ZTakesTheShardingXlaPropagates) {
  const std::pair<const char*, const char*> want[] = {
      {"inner", "{replicated}"},
      {"mismatch", "{replicated}"},
      {"outer", "{devices=[2,1,4]0,2,4,6,1,3,5,7 last_tile_dim_replicate}"},
      {"full", "{devices=[2,4]0,2,4,6,1,3,5,7}"},
  };
  for (const auto& [key, text] : want) {
    StatusOr<Seed000Result> r = RunSeed000Case(ctx_, *client_, mesh_, Case(key));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    StatusOr<HloSharding> expected = HloSharding::Parse(text);
    ASSERT_TRUE(expected.ok());
    EXPECT_EQ(r->z_sharding, *expected) << key << ": got " << r->z_sharding.ToString();
  }
}

// Collectives: inner and full insert what XLA inserts (seed000_collectives.tsv); outer re-cuts y
// with one collective-permute and all-reduces f16[2,4] like XLA (32 + 24 = 56 B); mismatch moves
// y's f16[4,4] rows (32 B) and all-reduces f16[4,4] over the 4 devices of `a` (2 * 3/4 * 32 =
// 48 B) instead of XLA's two all-gathers (64 + 96 = 160 B).
TEST_F(Seed000DemoTest, CollectivesAndBytesPerCase) {
  struct Want {
    const char* key;
    std::vector<std::string> kinds;
    int64_t bytes;
  };
  const Want wants[] = {
      {"inner", {"all-reduce"}, 48},
      {"mismatch", {"collective-permute", "all-reduce"}, 80},
      {"outer", {"collective-permute", "all-reduce"}, 56},
      {"full", {"all-gather", "all-gather"}, 64},
  };
  for (const Want& w : wants) {
    StatusOr<Seed000Result> r = RunSeed000Case(ctx_, *client_, mesh_, Case(w.key));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    std::vector<std::string> kinds;
    for (const spmd::CollectiveRecord& c : r->report.collectives) kinds.push_back(c.kind);
    EXPECT_EQ(kinds, w.kinds) << w.key;
    EXPECT_EQ(r->report.TotalCollectiveBytes(), w.bytes) << w.key;
    EXPECT_EQ(Case(w.key).xla_bytes, std::string(w.key) == "mismatch" ? 160 : w.bytes) << w.key;
  }
  StatusOr<Seed000Result> inner = RunSeed000Case(ctx_, *client_, mesh_, Case("inner"));
  ASSERT_TRUE(inner.ok());
  EXPECT_EQ(inner->report.collectives.at(0).explicit_groups, "{{0,2,4,6},{1,3,5,7}}");
  EXPECT_NE(out_.str().find("xshard: SPMD partitioning: 8 partitions, 1 collective, 48B received per device"),
            std::string::npos);
}

// What the demo prints for the inner-axes case, line by line: the input shardings (P(None,'a') is
// tile [1,4,2] over devices 0..7, P('a',None) tile [4,1,2]), z replicated, the partitioned program
// (each device multiplies its f16[4,4] pieces and all-reduces them over the groups of `a`,
// {0,2,4,6} and {1,3,5,7}), xshard's collective next to XLA's (f16[4,4], 2 * 3/4 * 32 B = 48 B).
TEST_F(Seed000DemoTest, InnerCasePrintsShardingsProgramAndCollectives) {
  StatusOr<Seed000Result> r = RunSeed000Case(ctx_, *client_, mesh_, Case("inner"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::string text = out_.str();
  for (const char* line : {
           "x: f16[4,16]  NamedSharding(mesh=Mesh('a': 4, 'b': 2), spec=P(None, 'a'))\n",
           "  sharding={devices=[1,4,2]0,1,2,3,4,5,6,7 last_tile_dim_replicate}  = "
           "{devices=[1,4,2]<=[8] last_tile_dim_replicate}\n",
           "y: f16[16,4]  NamedSharding(mesh=Mesh('a': 4, 'b': 2), spec=P('a', None))\n",
           "z = x @ y: f16[4,4]  sharding={replicated}  = P()  (propagated to the dot)\n",
           "  x = f16[4,4] parameter(0), sharding={devices=[1,4,2]<=[8] last_tile_dim_replicate}\n",
           "  z = f16[4,4] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n",
           "  ROOT all-reduce = f16[4,4] all-reduce(z), channel_id=1, replica_groups=[2,4]<=[4,2]T(1,0), "
           "use_global_device_ids=true, to_apply=spmd_add_f16\n",
           "xshard: SPMD partitioning: 8 partitions, 1 collective, 48B received per device\n",
           "  all-reduce f16[4,4]  48B  groups {{0,2,4,6},{1,3,5,7}}\n",
           "XLA:    1 collective, 48B received per device\n",
       }) {
    EXPECT_NE(text.find(line), std::string::npos) << "missing: " << line << "in:\n" << text;
  }
  // xshard's collective line and XLA's are the same line.
  const std::string collective = "  all-reduce f16[4,4]  48B  groups {{0,2,4,6},{1,3,5,7}}\n";
  const size_t first = text.find(collective);
  ASSERT_NE(first, std::string::npos);
  EXPECT_NE(text.find(collective, first + 1), std::string::npos) << "XLA's line";
}

// The builder's module carries the parameter shardings JAX lowered for each case.
TEST_F(Seed000DemoTest, BuiltModuleMatchesJaxLowering) {
  for (const Seed000Case& c : Seed000Cases()) {
    const std::string path =
        std::string(XSHARD_SOURCE_DIR) + "/tests/data/spmd_partition/seed000_" + c.key + ".hlo";
    std::ifstream in(path);
    ASSERT_TRUE(in) << path;
    std::stringstream text;
    text << in.rdbuf();
    StatusOr<std::unique_ptr<Module>> jax = ParseHloModule(text.str(), path);
    ASSERT_TRUE(jax.ok()) << jax.status().ToString();
    StatusOr<PartitionSpec> xp = PartitionSpec::Parse(c.x_spec), yp = PartitionSpec::Parse(c.y_spec);
    ASSERT_TRUE(xp.ok() && yp.ok());
    StatusOr<NamedSharding> xn = NamedSharding::Create(mesh_, *xp), yn = NamedSharding::Create(mesh_, *yp);
    ASSERT_TRUE(xn.ok() && yn.ok());
    StatusOr<std::unique_ptr<Module>> built = BuildSeed000Module(*xn, *yn);
    ASSERT_TRUE(built.ok()) << built.status().ToString();
    EXPECT_EQ((*built)->config().num_partitions, 8);
    for (int p = 0; p < 2; ++p) {
      const Instruction* want = (*jax)->entry()->parameters()[p];
      const Instruction* got = (*built)->entry()->parameters()[p];
      ASSERT_TRUE(want->sharding().has_value() && got->sharding().has_value());
      EXPECT_EQ(*got->sharding(), *want->sharding()) << c.key << " parameter " << p;
      EXPECT_EQ(got->shape().dims(), want->shape().dims());
    }
  }
}

}  // namespace
}  // namespace xs::tools
