// DotPlan against the naive reference (DotGeneralReference) on every kind of dims configuration,
// the plans it makes (transposes folded into BLAS flags, oneDNN for bf16), and the tiled
// transpose against TransposeReference.
#include <atomic>
#include <cstring>
#include <numeric>
#include <random>
#include <thread>

#include "gtest/gtest.h"
#include "xshard/kernels/cpu_features.h"
#include "xshard/kernels/dot.h"
#include "xshard/kernels/elementwise.h"
#include "xshard/kernels/onednn_matmul.h"
#include "xshard/kernels/parallel.h"
#include "xshard/kernels/shape_ops.h"

namespace xs::kernels {
namespace {

Array Random(DType dtype, std::vector<int64_t> dims, std::mt19937& rng) {
  Array a(Shape(DType::kF32, std::move(dims)));
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  for (float& x : a.values<float>()) x = d(rng);
  if (dtype == DType::kS32 || dtype == DType::kPred) {
    for (float& x : a.values<float>()) x = std::round(x * 3);
  }
  return dtype == DType::kF32 ? a : *Convert(a, dtype);
}

// |fast - ref| <= abs_tol + rel_tol * |ref| elementwise (real and imaginary parts for complex).
void ExpectClose(const Array& fast, const Array& ref, double abs_tol, double rel_tol,
                 const std::string& what) {
  ASSERT_EQ(fast.dims(), ref.dims()) << what;
  ASSERT_EQ(fast.dtype(), ref.dtype()) << what;
  const bool complex = fast.dtype() == DType::kC64 || fast.dtype() == DType::kC128;
  const Array f = complex ? *Convert(fast, DType::kF64) : fast;  // real part
  const Array r = complex ? *Convert(ref, DType::kF64) : ref;
  int bad = 0;
  for (int64_t i = 0; i < f.num_elements() && bad < 5; ++i) {
    const double x = f.GetDouble(i), y = r.GetDouble(i);
    if (!(std::abs(x - y) <= abs_tol + rel_tol * std::abs(y))) {
      ADD_FAILURE() << what << " element " << i << ": " << x << " vs reference " << y;
      ++bad;
    }
  }
}

DotDimensionNumbers Dn(std::vector<int64_t> lb, std::vector<int64_t> rb, std::vector<int64_t> lc,
                       std::vector<int64_t> rc) {
  DotDimensionNumbers dn;
  dn.lhs_batch = std::move(lb);
  dn.rhs_batch = std::move(rb);
  dn.lhs_contracting = std::move(lc);
  dn.rhs_contracting = std::move(rc);
  return dn;
}

struct Case {
  std::vector<int64_t> lhs, rhs;
  DotDimensionNumbers dn;
};

// A random dot: batch / contracting / free dims of random sizes (0 and 1 included when
// `allow_empty`) placed at random positions of each operand, contracting dims in random order.
Case RandomCase(std::mt19937& rng, bool allow_empty) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const int nb = pick(0, 2), nc = pick(0, 2), nl = pick(0, 2), nr = pick(0, 2);
  auto size = [&] { return allow_empty && pick(0, 12) == 0 ? 0 : pick(1, 5); };
  std::vector<int64_t> bs, cs, ls, rs;
  for (int i = 0; i < nb; ++i) bs.push_back(size());
  for (int i = 0; i < nc; ++i) cs.push_back(size());
  for (int i = 0; i < nl; ++i) ls.push_back(size());
  for (int i = 0; i < nr; ++i) rs.push_back(size());
  Case c;
  auto place = [&](const std::vector<int64_t>& free, std::vector<int64_t>& dims,
                   std::vector<int64_t>& batch, std::vector<int64_t>& contracting) {
    const int rank = nb + nc + static_cast<int>(free.size());
    std::vector<int64_t> pos(rank);
    std::iota(pos.begin(), pos.end(), 0);
    std::shuffle(pos.begin(), pos.end(), rng);
    dims.assign(rank, 0);
    int p = 0;
    for (int i = 0; i < nb; ++i, ++p) {
      dims[pos[p]] = bs[i];
      batch.push_back(pos[p]);
    }
    for (int i = 0; i < nc; ++i, ++p) {
      dims[pos[p]] = cs[i];
      contracting.push_back(pos[p]);
    }
    // Free dims keep their relative order (the result lists them in operand order).
    std::vector<int64_t> rest(pos.begin() + p, pos.end());
    std::sort(rest.begin(), rest.end());
    for (size_t i = 0; i < free.size(); ++i) dims[rest[i]] = free[i];
  };
  place(ls, c.lhs, c.dn.lhs_batch, c.dn.lhs_contracting);
  place(rs, c.rhs, c.dn.rhs_batch, c.dn.rhs_contracting);
  return c;
}

std::string Describe(const Case& c) {
  return StrCat("lhs [", JoinDims(c.lhs), "] rhs [", JoinDims(c.rhs), "] batch {", JoinDims(c.dn.lhs_batch),
                "}/{", JoinDims(c.dn.rhs_batch), "} contracting {", JoinDims(c.dn.lhs_contracting), "}/{",
                JoinDims(c.dn.rhs_contracting), "}");
}

// Returns how many of the cases ran on oneDNN.
int CheckRandomCases(DType operand, DType result, int count, double abs_tol, double rel_tol,
                     uint32_t seed) {
  std::mt19937 rng(seed);
  int onednn = 0;
  for (int i = 0; i < count; ++i) {
    const Case c = RandomCase(rng, /*allow_empty=*/true);
    const Array lhs = Random(operand, c.lhs, rng), rhs = Random(operand, c.rhs, rng);
    auto plan = DotPlan::Create(lhs.shape(), rhs.shape(), c.dn, result);
    if (!plan.ok()) {
      ADD_FAILURE() << Describe(c) << ": " << plan.status().ToString();
      continue;
    }
    onednn += (*plan)->engine() == DotPlan::Engine::kOneDnn;
    const std::string what = StrCat(Describe(c), " ", (*plan)->ToString());
    ExpectClose(*(*plan)->Run(lhs, rhs), *DotGeneralReference(lhs, rhs, c.dn, result), abs_tol,
                rel_tol, what);
  }
  return onednn;
}

TEST(DotPlan, RandomDimsConfigurationsMatchReferenceF32) { CheckRandomCases(DType::kF32, DType::kF32, 400, 1e-5, 1e-5, 1); }
TEST(DotPlan, RandomDimsConfigurationsMatchReferenceF64) { CheckRandomCases(DType::kF64, DType::kF64, 150, 1e-12, 1e-12, 2); }
TEST(DotPlan, RandomDimsConfigurationsMatchReferenceC64) { CheckRandomCases(DType::kC64, DType::kC64, 100, 1e-5, 1e-5, 3); }
// Integer and pred dots take the naive path and must match exactly (wrapping like XLA).
TEST(DotPlan, RandomDimsConfigurationsMatchReferenceS32) { CheckRandomCases(DType::kS32, DType::kS32, 150, 0, 0, 4); }
TEST(DotPlan, RandomDimsConfigurationsMatchReferencePred) { CheckRandomCases(DType::kPred, DType::kPred, 100, 0, 0, 5); }
// bf16 x bf16 -> f32 (oneDNN, f32 accumulation): only the summation order differs. Where
// oneDNN has a bf16 kernel for this CPU (AMX, AVX512_BF16, AVX-512), most random cases are
// non-empty and go to it (strided views or dense copies); on AVX2-only CPUs oneDNN takes few and
// the rest run as f32.
int MinOneDnnCases() { return HostGemmPath().bf16 == HalfPath::kOneDnn ? 101 : 0; }
TEST(DotPlan, RandomDimsConfigurationsMatchReferenceBf16ToF32) {
  EXPECT_GE(CheckRandomCases(DType::kBF16, DType::kF32, 200, 1e-5, 1e-5, 6), MinOneDnnCases());
}
// bf16 result: both round the f32 sum once; a sum on a rounding boundary may differ by 1 ulp.
TEST(DotPlan, RandomDimsConfigurationsMatchReferenceBf16) {
  EXPECT_GE(CheckRandomCases(DType::kBF16, DType::kBF16, 200, 1e-6, 1.0 / 128, 7), MinOneDnnCases());
}
// f16 (f32 GEMM on converted operands, rounded once).
TEST(DotPlan, RandomDimsConfigurationsMatchReferenceF16) { CheckRandomCases(DType::kF16, DType::kF16, 150, 1e-6, 1.0 / 1024, 8); }

// A plan's summary without its engine word and oneDNN implementation name: the operand layout
// (flags, leading dims, copies) is the same whichever library runs it.
std::string LayoutOf(std::string s) {
  s = s.substr(s.find(' ') + 1);
  const size_t impl = s.find(" impl=");
  return impl == std::string::npos ? s : s.substr(0, impl);
}

TEST(DotPlan, TransposedOperandsFoldIntoBlasFlags) {
  const DType f = DType::kF32;
  struct Want {
    Shape lhs, rhs;
    DotDimensionNumbers dn;
    std::string summary;
  };
  const std::vector<Want> wants = {
      {Shape(f, {64, 32}), Shape(f, {32, 48}), Dn({}, {}, {1}, {0}), "blas f32 batch=1 m=64 n=48 k=32 lhs=N rhs=N copies=0"},
      {Shape(f, {64, 32}), Shape(f, {48, 32}), Dn({}, {}, {1}, {1}), "blas f32 batch=1 m=64 n=48 k=32 lhs=N rhs=T copies=0"},
      {Shape(f, {32, 64}), Shape(f, {32, 48}), Dn({}, {}, {0}, {0}), "blas f32 batch=1 m=64 n=48 k=32 lhs=T rhs=N copies=0"},
      {Shape(f, {32, 64}), Shape(f, {48, 32}), Dn({}, {}, {0}, {1}), "blas f32 batch=1 m=64 n=48 k=32 lhs=T rhs=T copies=0"},
      // Batch dim in the middle of lhs and first of rhs: a strided view with lda = 4 * 32.
      {Shape(f, {64, 4, 32}), Shape(f, {4, 32, 48}), Dn({1}, {0}, {2}, {1}), "blas f32 batch=4 m=64 n=48 k=32 lhs=N rhs=N copies=0"},
      // Two contracting dims that merge in memory order; two free dims that merge.
      {Shape(f, {8, 8, 4, 8}), Shape(f, {4, 8, 48}), Dn({}, {}, {2, 3}, {0, 1}), "blas f32 batch=1 m=64 n=48 k=32 lhs=N rhs=N copies=0"},
      // Vectors: matrix-vector and dot product.
      {Shape(f, {64, 32}), Shape(f, {32}), Dn({}, {}, {1}, {0}), "blas f32 batch=1 m=64 n=1 k=32 lhs=N rhs=N copies=0"},
      {Shape(f, {32}), Shape(f, {32}), Dn({}, {}, {0}, {0}), "blas f32 batch=1 m=1 n=1 k=32 lhs=N rhs=N copies=0"},
      // Batch dim innermost in lhs: no unit-stride direction, lhs is copied.
      {Shape(f, {64, 32, 4}), Shape(f, {4, 32, 48}), Dn({2}, {0}, {1}, {1}), "blas f32 batch=4 m=64 n=48 k=32 lhs=N rhs=N copies=1"},
      // Contracting dims listed against memory order: they do not merge, lhs is copied.
      {Shape(f, {64, 4, 8}), Shape(f, {8, 4, 48}), Dn({}, {}, {2, 1}, {0, 1}), "blas f32 batch=1 m=64 n=48 k=32 lhs=N rhs=N copies=1"},
  };
  std::mt19937 rng(11);
  for (const Want& w : wants) {
    auto plan = DotPlan::Create(w.lhs, w.rhs, w.dn, f);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    EXPECT_EQ(LayoutOf((*plan)->ToString()), LayoutOf(w.summary));
    const Array a = Random(f, w.lhs.dims(), rng), b = Random(f, w.rhs.dims(), rng);
    ExpectClose(*(*plan)->Run(a, b), *DotGeneralReference(a, b, w.dn, f), 1e-5, 1e-5, w.summary);
  }
}

TEST(DotPlan, Bf16UsesOneDnnWithoutCopies) {
  std::mt19937 rng(12);
  const Shape lhs(DType::kBF16, {4, 96, 80}), rhs(DType::kBF16, {4, 64, 80});  // batched x @ y^T
  const DotDimensionNumbers dn = Dn({0}, {0}, {2}, {2});
  for (DType result : {DType::kF32, DType::kBF16}) {
    auto plan = DotPlan::Create(lhs, rhs, dn, result);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    if (HostGemmPath().bf16 == HalfPath::kOneDnn) {  // else f32 copies (AVX2-only CPUs)
      EXPECT_EQ((*plan)->engine(), DotPlan::Engine::kOneDnn) << (*plan)->ToString();
      EXPECT_EQ((*plan)->copied_operands(), 0) << (*plan)->ToString();
    }
    const Array a = Random(DType::kBF16, lhs.dims(), rng), b = Random(DType::kBF16, rhs.dims(), rng);
    ExpectClose(*(*plan)->Run(a, b), *DotGeneralReference(a, b, dn, result), 1e-5,
                result == DType::kF32 ? 1e-5 : 1.0 / 128, (*plan)->ToString());
  }
}

// The attention's batched dots with the heads a batch dim inside a row ([b, s, h, d] from a
// reshape): the [b, h] batch dims do not merge, and oneDNN takes both in one 4-d call, with no
// copies, where its brgemm runs here (f32 and bf16). A third batch dim in front is looped over.
// All agree with the reference.
TEST(DotPlan, AttentionHeadsBatchDimsGoToOneDnnInOneCall) {
  struct Case {
    Shape lhs, rhs;
    DotDimensionNumbers dn;
    const char* what;
  };
  for (DType t : {DType::kF32, DType::kBF16}) {
    const std::vector<Case> cases = {
        {Shape(t, {2, 48, 4, 16}), Shape(t, {2, 48, 4, 16}), Dn({0, 2}, {0, 2}, {3}, {3}), "q.k over d"},
        {Shape(t, {2, 48, 4, 16}), Shape(t, {2, 4, 48, 48}), Dn({0, 2}, {0, 1}, {1}, {3}), "v.p over s"},
        {Shape(t, {3, 2, 32, 4, 8}), Shape(t, {3, 2, 32, 4, 8}), Dn({0, 1, 3}, {0, 1, 3}, {4}, {4}),
         "three batch dims"},
    };
    std::mt19937 rng(21);
    for (const Case& c : cases) {
      auto plan = DotPlan::Create(c.lhs, c.rhs, c.dn, DType::kF32);
      ASSERT_TRUE(plan.ok()) << plan.status().ToString();
      const std::string what = std::string(c.what) + " " + (*plan)->ToString();
      if (OneDnnMatmul::Supports(t) && (*plan)->ToString().find("brg") != std::string::npos) {
        EXPECT_EQ((*plan)->engine(), DotPlan::Engine::kOneDnn) << what;
        EXPECT_EQ((*plan)->copied_operands(), 0) << what;
      }
      const Array a = Random(t, c.lhs.dims(), rng), b = Random(t, c.rhs.dims(), rng);
      ExpectClose(*(*plan)->Run(a, b), *DotGeneralReference(a, b, c.dn, DType::kF32), 1e-5, 1e-5, what);
    }
  }
  // Where a plain f32 product gets oneDNN's brgemm (AVX-512 CPUs), the full-size per-device q.k
  // and v.p of bench/jax_compare's transformer block do too (before: a per-head OpenBLAS loop).
  const DType f = DType::kF32;
  auto plain = DotPlan::Create(Shape(f, {128, 64}), Shape(f, {64, 96}), Dn({}, {}, {1}, {0}), f);
  ASSERT_TRUE(plain.ok());
  if ((*plain)->engine() == DotPlan::Engine::kOneDnn) {
    auto qk = DotPlan::Create(Shape(f, {2, 256, 4, 64}), Shape(f, {2, 256, 4, 64}), Dn({0, 2}, {0, 2}, {3}, {3}), f);
    auto pv = DotPlan::Create(Shape(f, {2, 256, 4, 64}), Shape(f, {2, 4, 256, 256}), Dn({0, 2}, {0, 1}, {1}, {3}), f);
    ASSERT_TRUE(qk.ok() && pv.ok());
    EXPECT_EQ((*qk)->engine(), DotPlan::Engine::kOneDnn) << (*qk)->ToString();
    EXPECT_EQ((*pv)->engine(), DotPlan::Engine::kOneDnn) << (*pv)->ToString();
    EXPECT_EQ((*qk)->copied_operands() + (*pv)->copied_operands(), 0);
  }
}

// One plan run by several threads at once (devices share plans): every result matches.
// f32: a device's projection in a sharded transformer ([2, 64, 128] . [128, 96]) goes to
// oneDNN's brgemm when it has one here; a 2048^3 product stays on OpenBLAS. Both agree with the
// reference.
// Whether oneDNN runs a dense f32 [m, k] x [k, n] product with its brgemm kernel on this CPU
// (AVX-512 / AMX; on AVX2-only CPUs it has gemm:jit, which the plan leaves to OpenBLAS).
bool OneDnnBrgemmF32(int64_t m, int64_t n, int64_t k) {
  OneDnnMatmulShape s;
  s.a_type = s.w_type = s.out_type = DType::kF32;
  s.m = m;
  s.n = n;
  s.k = k;
  s.a_strides = {m * k, k, 1};
  s.w_strides = {k * n, n, 1};
  auto mm = OneDnnMatmul::Create(s);
  return mm.ok() && *mm && (*mm)->impl().rfind("brg", 0) == 0;
}

TEST(DotPlan, F32EngineByProblemSize) {
  const DType f = DType::kF32;
  const Shape x(f, {2, 64, 128}), w(f, {128, 96});
  const DotDimensionNumbers dn = Dn({}, {}, {2}, {0});
  auto small = DotPlan::Create(x, w, dn, f);
  ASSERT_TRUE(small.ok()) << small.status().ToString();
  if (OneDnnMatmul::Supports(f) && (OneDnnBrgemmF32(128, 96, 128) || HostGemmPath().f32 == GemmLibrary::kOneDnn)) {
    EXPECT_EQ((*small)->engine(), DotPlan::Engine::kOneDnn) << (*small)->ToString();
  }
  std::mt19937 rng(12);
  const Array a = Random(f, x.dims(), rng), b = Random(f, w.dims(), rng);
  ExpectClose(*(*small)->Run(a, b), *DotGeneralReference(a, b, dn, f), 1e-5, 1e-5, (*small)->ToString());
  auto big = DotPlan::Create(Shape(f, {2048, 2048}), Shape(f, {2048, 2048}), Dn({}, {}, {1}, {0}), f);
  ASSERT_TRUE(big.ok());
  // OpenBLAS below the CPU (e.g. OPENBLAS_CORETYPE=Prescott): every f32 size goes to oneDNN.
  const bool below = HostGemmPath().f32 == GemmLibrary::kOneDnn;
  EXPECT_EQ((*big)->engine(), below ? DotPlan::Engine::kOneDnn : DotPlan::Engine::kBlas) << (*big)->ToString();
}

TEST(DotPlan, ConcurrentRunsOfOnePlanAgree) {
  std::mt19937 rng(14);
  for (DType t : {DType::kF32, DType::kBF16}) {
    const Array a = Random(t, {8, 40, 24}, rng), b = Random(t, {8, 40, 32}, rng);
    const DotDimensionNumbers dn = Dn({0}, {0}, {1}, {1});  // lhs transposed: a copy-free view
    auto plan = DotPlan::Create(a.shape(), b.shape(), dn, DType::kF32);
    ASSERT_TRUE(plan.ok());
    const Array want = *DotGeneralReference(a, b, dn, DType::kF32);
    std::vector<Array> got(4);
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i) {
      threads.emplace_back([&, i] {
        for (int r = 0; r < 20; ++r) got[i] = *(*plan)->Run(a, b);
      });
    }
    for (std::thread& th : threads) th.join();
    for (const Array& g : got) ExpectClose(g, want, 1e-5, 1e-5, (*plan)->ToString());
  }
}

TEST(DotPlan, ZeroContractingSizeGivesZerosAndEmptyResultIsFine) {
  const Array a = Array::Full(DType::kF32, {3, 0}, 1), b = Array::Full(DType::kF32, {0, 2}, 1);
  auto out = DotGeneral(a, b, Dn({}, {}, {1}, {0}), DType::kF32);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->dims(), (std::vector<int64_t>{3, 2}));
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(out->GetDouble(i), 0.0);
  auto empty = DotGeneral(Array::Full(DType::kBF16, {0, 4}, 1), Array::Full(DType::kBF16, {4, 2}, 1),
                          Dn({}, {}, {1}, {0}), DType::kF32);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->dims(), (std::vector<int64_t>{0, 2}));
}

TEST(DotPlan, RejectsMismatchedOperandsAtRun) {
  auto plan = DotPlan::Create(Shape(DType::kF32, {2, 3}), Shape(DType::kF32, {3, 4}), Dn({}, {}, {1}, {0}), DType::kF32);
  ASSERT_TRUE(plan.ok());
  auto out = (*plan)->Run(Array::Full(DType::kF32, {2, 4}, 1), Array::Full(DType::kF32, {3, 4}, 1));
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("differ from the planned f32[2,3]"), std::string::npos)
      << out.status().message();
  auto wrong_type = (*plan)->Run(Array::Full(DType::kF64, {2, 3}, 1), Array::Full(DType::kF32, {3, 4}, 1));
  EXPECT_FALSE(wrong_type.ok());
  auto twice = DotPlan::Create(Shape(DType::kF32, {3, 3}), Shape(DType::kF32, {3, 3}), Dn({0}, {0}, {0}, {1}), DType::kF32);
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("listed twice"), std::string::npos) << twice.status().message();
}

// A device sharing the cores with other devices splits a big BLAS product into row blocks
// (m >= n) or column blocks (n > m) on the pool, each a one-thread call: same values as one call.
TEST(DotPlan, SplitOverTheDeviceThreadShareMatchesOneCall) {
  std::mt19937 rng(29);
  const int saved = BlasThreads();
  struct Split {
    std::vector<int64_t> lhs, rhs;
    DotDimensionNumbers dn;
  };
  const Split cases[] = {
      {{800, 1024}, {1024, 400}, Dn({}, {}, {1}, {0})},  // rows: A N, B N
      {{1024, 300}, {520, 1024}, Dn({}, {}, {0}, {1})},  // columns: A T, B T
      {{300, 1024}, {1024, 520}, Dn({}, {}, {1}, {0})},  // columns: A N, B N
      {{2, 512, 1024}, {2, 1024, 300}, Dn({0}, {0}, {2}, {1})},  // batched
  };
  for (const Split& c : cases) {
    const Array lhs = Random(DType::kF64, c.lhs, rng), rhs = Random(DType::kF64, c.rhs, rng);
    auto plan = DotPlan::Create(lhs.shape(), rhs.shape(), c.dn, DType::kF64);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    ASSERT_EQ((*plan)->engine(), DotPlan::Engine::kBlas);
    SetBlasThreads(1);
    auto whole = (*plan)->Run(lhs, rhs);
    ASSERT_TRUE(whole.ok()) << whole.status().message();
    for (int threads : {2, 3, 5}) {
      ScopedDeviceThreadShare share({threads, /*concurrent=*/true});
      auto split = (*plan)->Run(lhs, rhs);
      ASSERT_TRUE(split.ok()) << split.status().message();
      ExpectClose(*split, *whole, 1e-12, 1e-12, StrCat((*plan)->ToString(), " threads=", threads));
    }
  }
  SetBlasThreads(saved);
}

// A device computing alone with T > 1 threads runs a batch of BLAS products T at a time on the
// pool, one single-threaded call each, when the batches split evenly or number at least 4 T: the
// same values as the products one after another, and OpenBLAS's thread count is put back.
TEST(DotPlan, BatchesOverTheThreadsOfADeviceAloneMatchOneAtATime) {
  std::mt19937 rng(31);
  const int saved = BlasThreads();
  struct Batched {
    std::vector<int64_t> lhs, rhs;
    DotDimensionNumbers dn;
  };
  const Batched cases[] = {
      {{8, 96, 64}, {8, 80, 64}, Dn({0}, {0}, {2}, {2})},              // q k^T: B transposed
      {{9, 64, 80}, {9, 80, 48}, Dn({0}, {0}, {2}, {1})},              // 9 batches: 4 T on 2 threads
      {{3, 64, 80}, {3, 80, 48}, Dn({0}, {0}, {2}, {1})},              // 3 on 2 threads: one at a time
      {{2, 3, 40, 24}, {3, 2, 24, 56}, Dn({0, 1}, {1, 0}, {3}, {2})},  // batch dims that do not merge
  };
  for (const Batched& c : cases) {
    const Array lhs = Random(DType::kF64, c.lhs, rng), rhs = Random(DType::kF64, c.rhs, rng);
    auto plan = DotPlan::Create(lhs.shape(), rhs.shape(), c.dn, DType::kF64);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    ASSERT_EQ((*plan)->engine(), DotPlan::Engine::kBlas);
    StatusOr<Array> serial = Array();
    {
      SetBlasThreads(1);
      ScopedDeviceThreadShare share({1, /*concurrent=*/false});
      serial = (*plan)->Run(lhs, rhs);
      ASSERT_TRUE(serial.ok()) << serial.status().message();
    }
    for (int threads : {2, 3, 4}) {
      SetBlasThreads(threads);
      ScopedDeviceThreadShare share({threads, /*concurrent=*/false});
      auto parallel = (*plan)->Run(lhs, rhs);
      ASSERT_TRUE(parallel.ok()) << parallel.status().message();
      ExpectClose(*parallel, *serial, 1e-12, 1e-12, StrCat((*plan)->ToString(), " threads=", threads));
      EXPECT_EQ(BlasThreads(), threads);
    }
  }
  SetBlasThreads(saved);
}

TEST(Transpose, TiledMatchesReferenceForRandomPermutationsAndElementSizes) {
  std::mt19937 rng(13);
  for (DType t : {DType::kU8, DType::kBF16, DType::kF32, DType::kF64, DType::kC128}) {
    for (int trial = 0; trial < 25; ++trial) {
      const int rank = std::uniform_int_distribution<int>(2, 5)(rng);
      std::vector<int64_t> dims(rank);
      for (int64_t& d : dims) d = std::uniform_int_distribution<int>(1, rank <= 3 ? 70 : 9)(rng);
      std::vector<int64_t> perm(rank);
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), rng);
      Array a(Shape(t, dims));  // random bytes: every element distinct with high probability
      for (int64_t i = 0; i < a.byte_size(); ++i) a.data()[i] = static_cast<std::byte>(rng());
      const Array fast = Transpose(a, perm), ref = TransposeReference(a, perm);
      ASSERT_EQ(fast.dims(), ref.dims());
      EXPECT_EQ(std::memcmp(fast.data(), ref.data(), static_cast<size_t>(ref.byte_size())), 0)
          << DTypeName(t) << " [" << JoinDims(dims) << "] perm {" << JoinDims(perm) << "}";
    }
  }
  // Hand value: 2-D transpose with both sides large enough to take the tiled path.
  const Array m = Array::Iota(DType::kS32, {5, 7});
  const Array t = Transpose(m, {1, 0});
  EXPECT_EQ(t.GetDouble(0 * 5 + 1), 7.0);   // t[0][1] = m[1][0]
  EXPECT_EQ(t.GetDouble(6 * 5 + 4), 34.0);  // t[6][4] = m[4][6]
}

// A product past 2^30 multiply-adds runs as row blocks of at least 1024 rows (1024 + 276 here),
// with op(A) read directly and transposed: every element must still be sum_k A[i][k] * 1 =
// K * (i % 7).
TEST(DotPlan, HugeProductInRowBlocksMatchesTheClosedForm) {
  constexpr int64_t m = 1300, n = 1024, k = 1000;
  for (bool transposed : {false, true}) {
    Array lhs(Shape(DType::kF32, transposed ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k}));
    float* l = reinterpret_cast<float*>(lhs.data());
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t q = 0; q < k; ++q) (transposed ? l[q * m + i] : l[i * k + q]) = static_cast<float>(i % 7);
    }
    Array rhs(Shape(DType::kF32, {k, n}));
    for (float& x : rhs.values<float>()) x = 1.0f;
    auto plan = DotPlan::Create(lhs.shape(), rhs.shape(), Dn({}, {}, {transposed ? 0 : 1}, {0}), DType::kF32);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    StatusOr<Array> out = (*plan)->Run(lhs, rhs);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    const float* o = reinterpret_cast<const float*>(out->data());
    int bad = 0;
    for (int64_t i = 0; i < m && bad < 5; ++i) {
      for (int64_t j = 0; j < n && bad < 5; ++j) {
        if (o[i * n + j] != static_cast<float>(k * (i % 7))) {
          ADD_FAILURE() << "transposed=" << transposed << " out[" << i << "][" << j << "] = " << o[i * n + j];
          ++bad;
        }
      }
    }
  }
}

// A stopped run's product returns at once, leaving the output as it was.
TEST(DotPlan, InterruptedProductReturnsEarly) {
  Array lhs(Shape(DType::kF32, {64, 64})), rhs(Shape(DType::kF32, {64, 64}));
  for (float& x : lhs.values<float>()) x = 1.0f;
  for (float& x : rhs.values<float>()) x = 1.0f;
  auto plan = DotPlan::Create(lhs.shape(), rhs.shape(), Dn({}, {}, {1}, {0}), DType::kF32);
  ASSERT_TRUE(plan.ok());
  std::vector<float> out(64 * 64, -1.0f);
  std::atomic<bool> stop{true};
  ScopedInterrupt interrupt(&stop);
  ASSERT_TRUE((*plan)->Run(lhs.data(), rhs.data(), reinterpret_cast<std::byte*>(out.data())).ok());
  EXPECT_EQ(out[0], -1.0f);
  EXPECT_EQ(out[64 * 64 - 1], -1.0f);
}

}  // namespace
}  // namespace xs::kernels
