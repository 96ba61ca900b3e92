// Tests of the collective matmuls: every algorithm x variant and seed 004's variants on 2x2,
// 2x4, 4x2 and 4x4 meshes, f32 and bf16, against a naive double-precision product; the
// divisibility errors; the systolic chunk layout by hand; the trace of a Wang OS run.
#include "xshard/cmm/cmm.h"

#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "xshard/cmm/algorithms.h"
#include "xshard/cmm/device_ops.h"

namespace xs::cmm {
namespace {

using ::testing::HasSubstr;

// C = A @ B in double from the stored layouts (cmm.h, Variant), one element at a time.
Array NaiveProduct(const CmmSpec& spec, const CmmInputs& in) {
  const MatmulDims& d = spec.dims;
  const bool fixed = spec.algo == Algorithm::kAgDot || spec.algo == Algorithm::kSlicePsum;
  const bool a_t = !fixed && spec.variant == Variant::kWS;
  const bool b_t = !fixed && spec.variant == Variant::kIS;
  Array c(DType::kF32, {d.m, d.n});
  for (int64_t i = 0; i < d.m; ++i) {
    for (int64_t j = 0; j < d.n; ++j) {
      double sum = 0;
      for (int64_t k = 0; k < d.k; ++k) {
        sum += in.a.GetDouble(a_t ? k * d.m + i : i * d.k + k) *
               in.b.GetDouble(b_t ? j * d.k + k : k * d.n + j);
      }
      c.SetDouble(i * d.n + j, sum);
    }
  }
  return c;
}

struct MeshCase {
  int64_t rows, cols;
  DType dtype;
};

void PrintTo(const MeshCase& c, std::ostream* os) {
  *os << c.rows << "x" << c.cols << " " << DTypeName(c.dtype);
}

class CmmMeshTest : public ::testing::TestWithParam<MeshCase> {};

// Inputs in [-1, 1) with k <= 128: |C| < 128 and f32 accumulation (bf16 products are exact in
// f32) stays within about k * 2^-24 * 128 < 1e-3 of the exact sum; 1e-3 would still catch a
// missing or doubled block (errors of order 1).
constexpr double kTolerance = 1e-3;

// Runs `spec` once on inputs from `seed`, checks it against the naive product and returns what
// device 0 did (nullopt after a failed assertion).
std::optional<CmmCost> RunAndCheck(Client& client, const CmmSpec& spec, uint64_t seed) {
  SCOPED_TRACE(SpecString(spec));
  StatusOr<CmmInputs> in = MakeInputs(spec, seed);
  EXPECT_TRUE(in.ok()) << in.status().ToString();
  if (!in.ok()) return std::nullopt;
  StatusOr<CmmResult> r = cmm::Run(client, spec, *in, RunOptions{});
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return std::nullopt;
  StatusOr<double> err = MaxAbsError(r->out, NaiveProduct(spec, *in));
  EXPECT_TRUE(err.ok()) << err.status().ToString();
  if (!err.ok()) return std::nullopt;
  EXPECT_LE(*err, kTolerance);
  return r->cost;
}

void CheckAll(Client& client, const MeshCase& mc, MatmulDims dims) {
  for (Algorithm algo : {Algorithm::kGspmd, Algorithm::kWang, Algorithm::kSystolic}) {
    for (Variant v : {Variant::kOS, Variant::kIS, Variant::kWS}) {
      CmmSpec spec{algo, v, mc.rows, mc.cols, dims, mc.dtype, /*chunks=*/2, /*block=*/2};
      std::optional<CmmCost> cost = RunAndCheck(client, spec, 7);
      if (cost) {
        EXPECT_EQ(cost->flops, 2 * dims.m * dims.n * dims.k / (mc.rows * mc.cols))
            << SpecString(spec);
      }
    }
  }
  for (Algorithm algo : {Algorithm::kAgDot, Algorithm::kSlicePsum}) {
    RunAndCheck(client, CmmSpec{algo, Variant::kOS, mc.rows, mc.cols, dims, mc.dtype}, 8);
  }
}

std::unique_ptr<Client> MakeClient(int64_t n) {
  ClientOptions options;
  options.num_devices = n;
  StatusOr<std::unique_ptr<Client>> c = Client::Create(options);
  XS_CHECK(c.ok(), c.status().ToString());
  return std::move(*c);
}

TEST_P(CmmMeshTest, EveryAlgorithmMatchesTheNaiveProduct) {
  const MeshCase mc = GetParam();
  auto client = MakeClient(mc.rows * mc.cols);
  // Non-square, so a swapped dim or a transposed block fails; divides 4x4 with chunks*block 4
  // (systolic: 16) and 2*cols (Wang: 8).
  CheckAll(*client, mc, {32, 48, 64});
}

INSTANTIATE_TEST_SUITE_P(
    Meshes, CmmMeshTest,
    ::testing::Values(MeshCase{2, 2, DType::kF32}, MeshCase{2, 4, DType::kF32},
                      MeshCase{4, 2, DType::kF32}, MeshCase{4, 4, DType::kF32},
                      MeshCase{2, 2, DType::kBF16}, MeshCase{2, 4, DType::kBF16},
                      MeshCase{4, 2, DType::kBF16}, MeshCase{4, 4, DType::kBF16}),
    [](const ::testing::TestParamInfo<MeshCase>& info) {
      return StrCat(info.param.rows, "x", info.param.cols, "_",
                    DTypeName(info.param.dtype));
    });

TEST(CmmTest, OddAndFlatMeshes) {
  // Any 2-D mesh: a non-power-of-two axis, a single row or column, and one device.
  for (const MeshCase& mc : {MeshCase{3, 2, DType::kF32}, MeshCase{1, 4, DType::kBF16},
                             MeshCase{4, 1, DType::kF32}, MeshCase{1, 1, DType::kF32}}) {
    SCOPED_TRACE(StrCat(mc.rows, "x", mc.cols));
    auto client = MakeClient(mc.rows * mc.cols);
    CheckAll(*client, mc, {48, 48, 96});
  }
}

TEST(CmmTest, WangWsTakesBothBranches) {
  auto client = MakeClient(4);
  // 2 * (128/2) > 2 * (16/2): the gathered input is bigger, the ring runs over 'row'.
  CmmSpec out_split{Algorithm::kWang, Variant::kWS, 2, 2, {8, 128, 16}, DType::kF32};
  EXPECT_TRUE(WangWsSplitsOutput(out_split));
  CmmSpec in_split{Algorithm::kWang, Variant::kWS, 2, 2, {8, 16, 128}, DType::kF32};
  EXPECT_FALSE(WangWsSplitsOutput(in_split));
  for (const CmmSpec& spec : {out_split, in_split}) {
    StatusOr<CmmInputs> in = MakeInputs(spec, 3);
    ASSERT_TRUE(in.ok()) << in.status().ToString();
    StatusOr<CmmResult> r = cmm::Run(*client, spec, *in, RunOptions{});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_LE(*MaxAbsError(r->out, NaiveProduct(spec, *in)), kTolerance);
  }
}

TEST(CmmTest, SeedShapes) {
  // Seed 003: X [B*S, H*D], W [H*D, 4*H*D]; IS multiplies Y by W^T, WS is X^T @ Y.
  const Bshd seed{4, 256, 48, 64};
  EXPECT_EQ(DimsFromBshd(seed, Variant::kOS).m, 1024);
  EXPECT_EQ(DimsFromBshd(seed, Variant::kOS).k, 3072);
  EXPECT_EQ(DimsFromBshd(seed, Variant::kOS).n, 12288);
  EXPECT_EQ(DimsFromBshd(seed, Variant::kIS).k, 12288);
  EXPECT_EQ(DimsFromBshd(seed, Variant::kIS).n, 3072);
  EXPECT_EQ(DimsFromBshd(seed, Variant::kWS).m, 3072);
  EXPECT_EQ(DimsFromBshd(seed, Variant::kWS).k, 1024);
  CmmSpec ws{Algorithm::kWang, Variant::kWS, 2, 4, DimsFromBshd(seed, Variant::kWS)};
  EXPECT_EQ(ADims(ws), (std::vector<int64_t>{1024, 3072}));   // X itself
  EXPECT_EQ(BDims(ws), (std::vector<int64_t>{1024, 12288}));  // Y
}

TEST(CmmTest, ErrorsNameTheDimItsSizeAndTheDivisor) {
  CmmSpec wang{Algorithm::kWang, Variant::kOS, 2, 4, {8, 12, 8}, DType::kF32};
  EXPECT_EQ(Validate(wang).message(),
            "wang os 2x4 m=8 k=12 n=8 f32: k=12 must divide by 8 = 2*cols with cols=4 (the ring splits "
            "each device's block of it into two halves); pick sizes that divide, or another "
            "mesh");
  CmmSpec gspmd{Algorithm::kGspmd, Variant::kOS, 4, 2, {6, 8, 8}, DType::kF32};
  EXPECT_EQ(Validate(gspmd).message(),
            "gspmd os 4x2 m=6 k=8 n=8 f32: m=6 must divide by 4 = rows with rows=4 (C's rows are "
            "sharded over 'row'); pick sizes that divide, or another mesh");
  CmmSpec systolic{Algorithm::kSystolic, Variant::kIS, 2, 2, {8, 8, 64}, DType::kBF16, 8, 8};
  EXPECT_THAT(Validate(systolic).message(),
              HasSubstr("n=64 must divide by 128 = rows*chunks*block with rows=2, chunks=8, "
                        "block=8 (each 'row' shard of it is cut into chunks of blocks); n=64 must "
                        "divide by 128 = cols*chunks*block with cols=2, chunks=8, block=8"));
  CmmSpec slice{Algorithm::kSlicePsum, Variant::kOS, 2, 4, {8, 6, 8}, DType::kF32};
  EXPECT_EQ(Validate(slice).message(),
            "slice_psum 2x4 m=8 k=6 n=8 f32: k=6 must divide by 4 = cols with cols=4 (A's columns are "
            "sharded over 'col'); pick sizes that divide, or another mesh");
}

TEST(CmmTest, BadDtypeAndInputShape) {
  CmmSpec spec{Algorithm::kGspmd, Variant::kOS, 2, 2, {4, 4, 4}, DType::kF16};
  EXPECT_THAT(Validate(spec).message(), HasSubstr("dtype f16 is not supported"));
  spec.dtype = DType::kF32;
  auto client = MakeClient(4);
  CmmInputs in{Array(DType::kF32, {4, 8}), Array(DType::kF32, {4, 4})};
  StatusOr<CmmResult> r = cmm::Run(*client, spec, in, RunOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("input a is f32[4,8] but must be f32[4,4]"));
}

TEST(CmmTest, ChunkPicksStridedBlocks) {
  // 12 columns, chunks=3, block=2: chunk 1 holds columns 2,3, 8,9 (j / 2 % 3 == 1).
  Array a = Array::Iota(DType::kF32, {2, 12});
  Array c = Chunk(a, 1, 1, 3, 2);
  ASSERT_EQ(c.dims(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(c.GetDouble(0), 2);
  EXPECT_EQ(c.GetDouble(1), 3);
  EXPECT_EQ(c.GetDouble(2), 8);
  EXPECT_EQ(c.GetDouble(3), 9);
  EXPECT_EQ(c.GetDouble(4), 14);
  Array rows = Chunk(Array::Iota(DType::kF32, {6, 1}), 0, 2, 3, 1);  // rows 2 and 5
  EXPECT_EQ(rows.GetDouble(0), 2);
  EXPECT_EQ(rows.GetDouble(1), 5);
  Array back(DType::kF32, {2, 12});
  for (int64_t k = 0; k < 3; ++k) PutChunk(back, Chunk(a, 1, k, 3, 2), 1, k, 3, 2);
  EXPECT_TRUE(back == a);
}

TEST(CmmTest, WangOsTraceShowsTransfersOverlappingDots) {
  auto client = MakeClient(8);
  CmmSpec spec{Algorithm::kWang, Variant::kOS, 2, 4, {32, 64, 32}, DType::kF32};
  StatusOr<CmmInputs> in = MakeInputs(spec, 1);
  ASSERT_TRUE(in.ok());
  const std::string path = ::testing::TempDir() + "/cmm_wang_trace.json";
  RunOptions options;
  options.trace_path = path;
  ASSERT_TRUE(cmm::Run(*client, spec, *in, options).ok());
  std::ifstream f(path);
  std::stringstream text;
  text << f.rdbuf();
  // Per device: in-flight intervals (pid 1) and dots (pid 0); a dot inside an interval of its
  // own device is compute overlapping a transfer.
  std::regex event(R"re(\{"name":"([^"]*)","ph":"X","pid":(\d),"tid":(\d+),"ts":([0-9.]+),"dur":([0-9.]+)\})re");
  std::map<int64_t, std::vector<std::pair<double, double>>> flights, dots;
  const std::string s = text.str();
  for (auto it = std::sregex_iterator(s.begin(), s.end(), event); it != std::sregex_iterator();
       ++it) {
    const std::string name = (*it)[1];
    const int pid = std::stoi((*it)[2]);
    const int64_t dev = std::stoll((*it)[3]);
    const double ts = std::stod((*it)[4]), end = ts + std::stod((*it)[5]);
    if (pid == 1) flights[dev].emplace_back(ts, end);
    if (pid == 0 && name.rfind("dot ", 0) == 0) dots[dev].emplace_back(ts, end);
  }
  ASSERT_EQ(flights.size(), 8u) << s.substr(0, 2000);
  for (int64_t d = 0; d < 8; ++d) {
    EXPECT_EQ(flights[d].size(), 6u) << "device " << d;  // 3 steps x (up, down)
    bool overlapped = false;
    for (const auto& [f0, f1] : flights[d]) {
      for (const auto& [d0, d1] : dots[d]) overlapped |= d0 >= f0 && d1 <= f1;
    }
    EXPECT_TRUE(overlapped) << "device " << d;
  }
}

}  // namespace
}  // namespace xs::cmm
