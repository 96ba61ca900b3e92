// gather / scatter against slow references, bit for bit. Gather: the library's GatherReference
// (one output element at a time). Scatter: RefScatter below, written
// from XLA's definition (the evaluator's loop: scatter indices row-major, then the window
// row-major; a window that does not fit is skipped whole), one update element at a time through
// the per-element combine of reduce.h (FindTypedCombine, what scatter called per element before
// its typed loops) or a test-written combine. Shapes cover out-of-range, negative and duplicate
// indices, batching dims, non-trailing and partial (overlapping) windows, strided runs, every
// combine kind, several dtypes and index dtypes, and generic (variadic) combiners.
#include "xshard/kernels/gather_scatter.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <ostream>
#include <random>
#include <span>

#include "gtest/gtest.h"
#include "xshard/kernels/numeric.h"
#include "xshard/kernels/reduce.h"

namespace xs::kernels {
namespace {

// One element combine on raw bytes: acc = combine(acc, x).
using ElemCombine = std::function<void(std::byte* acc, const std::byte* x)>;

int64_t IndexAt(const Array& indices, int64_t linear) {
  // GetDouble would round s64 beyond 2^53; the tests' indices are small.
  return static_cast<int64_t>(indices.GetDouble(linear));
}

std::vector<int64_t> Strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (int64_t i = static_cast<int64_t>(dims.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * dims[i + 1];
  return s;
}

bool Has(const std::vector<int64_t>& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// Advances a row-major multi-index; false after the last.
bool Next(std::vector<int64_t>& idx, const std::vector<int64_t>& dims) {
  for (int64_t i = static_cast<int64_t>(dims.size()) - 1; i >= 0; --i) {
    if (++idx[i] < dims[i]) return true;
    idx[i] = 0;
  }
  return false;
}

// XLA scatter, one update element at a time. `combine[i]` combines operand i's element with
// update i's when there is one operand; with several, `variadic` gets all of them.
std::vector<Array> RefScatter(
    std::vector<Array> outs, const Array& indices, const std::vector<Array>& updates, const ScatterDimensionNumbers& dn,
    const ElemCombine& combine,
    const std::function<void(std::vector<std::byte*>&, std::vector<const std::byte*>&)>& variadic = nullptr) {
  const std::vector<int64_t>& od = outs[0].dims();
  const std::vector<int64_t>& ud = updates[0].dims();
  const std::vector<int64_t>& id = indices.dims();
  const int64_t rank = static_cast<int64_t>(od.size());
  std::vector<int64_t> window_operand_dims;
  for (int64_t d = 0; d < rank; ++d) {
    if (!Has(dn.inserted_window_dims, d) && !Has(dn.input_batching_dims, d)) window_operand_dims.push_back(d);
  }
  std::vector<int64_t> scatter_dims, scatter_sizes, window_sizes;
  for (int64_t d = 0; d < static_cast<int64_t>(ud.size()); ++d) {
    if (Has(dn.update_window_dims, d)) {
      window_sizes.push_back(ud[d]);
    } else {
      scatter_dims.push_back(d);
      scatter_sizes.push_back(ud[d]);
    }
  }
  const std::vector<int64_t> os = Strides(od), us = Strides(ud), is = Strides(id);
  const int64_t ivd = dn.index_vector_dim;
  const int64_t vec = ivd < static_cast<int64_t>(id.size()) ? id[ivd] : 1;
  std::vector<int64_t> b(scatter_sizes.size(), 0), w(window_sizes.size()), oi(rank), ui(ud.size());
  if (Product(scatter_sizes) == 0 || Product(window_sizes) == 0) return outs;
  do {
    // The index vector of scatter index b: b fills the indices' dims other than ivd, in order.
    std::vector<int64_t> start(rank, 0);
    for (int64_t k = 0; k < vec; ++k) {
      int64_t off = 0;
      for (int64_t d = 0, j = 0; d < static_cast<int64_t>(id.size()); ++d) {
        off += (d == ivd ? k : b[j++]) * is[d];
      }
      if (k < static_cast<int64_t>(dn.scatter_dims_to_operand_dims.size())) {
        start[dn.scatter_dims_to_operand_dims[k]] = IndexAt(indices, off);
      }
    }
    for (size_t i = 0; i < dn.input_batching_dims.size(); ++i) {
      const int64_t ibd = dn.scatter_indices_batching_dims[i];
      start[dn.input_batching_dims[i]] = b[ibd > ivd ? ibd - 1 : ibd];
    }
    bool fits = true;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t size = 1;
      for (size_t j = 0; j < window_operand_dims.size(); ++j) {
        if (window_operand_dims[j] == d) size = window_sizes[j];
      }
      if (start[d] < 0 || start[d] + size > od[d]) fits = false;
    }
    if (!fits) continue;
    std::fill(w.begin(), w.end(), 0);
    do {
      oi = start;
      for (size_t j = 0; j < window_operand_dims.size(); ++j) oi[window_operand_dims[j]] += w[j];
      for (size_t j = 0; j < scatter_dims.size(); ++j) ui[scatter_dims[j]] = b[j];
      for (size_t j = 0; j < dn.update_window_dims.size(); ++j) ui[dn.update_window_dims[j]] = w[j];
      int64_t o = 0, u = 0;
      for (int64_t d = 0; d < rank; ++d) o += oi[d] * os[d];
      for (size_t d = 0; d < ud.size(); ++d) u += ui[d] * us[d];
      if (outs.size() == 1) {
        const int64_t es = DTypeSize(outs[0].dtype());
        combine(outs[0].data() + o * es, updates[0].data() + u * es);
      } else {
        std::vector<std::byte*> acc;
        std::vector<const std::byte*> x;
        for (size_t i = 0; i < outs.size(); ++i) {
          const int64_t es = DTypeSize(outs[i].dtype());
          acc.push_back(outs[i].data() + o * es);
          x.push_back(updates[i].data() + u * es);
        }
        variadic(acc, x);
      }
    } while (Next(w, window_sizes));
  } while (Next(b, scatter_sizes));
  return outs;
}

// Bitwise equality, naming the first differing element.
::testing::AssertionResult SameBits(const Array& got, const Array& want) {
  if (got.shape() != want.shape()) {
    return ::testing::AssertionFailure() << "shape " << got.shape().ToString() << " vs " << want.shape().ToString();
  }
  const int64_t es = DTypeSize(got.dtype());
  for (int64_t i = 0; i < got.num_elements(); ++i) {
    if (std::memcmp(got.data() + i * es, want.data() + i * es, static_cast<size_t>(es)) != 0) {
      return ::testing::AssertionFailure() << "element " << i << " of " << got.num_elements() << ": got "
                                           << got.GetDouble(i) << ", want " << want.GetDouble(i);
    }
  }
  return ::testing::AssertionSuccess();
}

// Random values of `dtype`; floats get a sprinkle of NaN, +-0 and +-inf when `specials`.
Array RandomArray(DType dtype, std::vector<int64_t> dims, uint32_t seed, bool specials = false) {
  Array a(dtype, std::move(dims));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> real(-4.0, 4.0);
  std::uniform_int_distribution<int> small(0, 9), pick(0, 15);
  const bool is_float = dtype == DType::kF32 || dtype == DType::kF64 || dtype == DType::kBF16 || dtype == DType::kF16 ||
                        dtype == DType::kC64 || dtype == DType::kC128;
  // NaNs of both signs: maximum / minimum return their first NaN operand, which shows.
  const double kSpecial[] = {
      std::numeric_limits<double>::quiet_NaN(), -std::numeric_limits<double>::quiet_NaN(), 0.0, -0.0,
      std::numeric_limits<double>::infinity(),  -std::numeric_limits<double>::infinity()};
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    double v =
        is_float ? real(rng) : (dtype == DType::kPred ? small(rng) % 2 : small(rng) + (pick(rng) == 0 ? 200 : 0));
    if (specials && is_float && pick(rng) < 5) v = kSpecial[pick(rng) % 6];
    a.SetDouble(i, v);
  }
  if (dtype == DType::kC64 || dtype == DType::kC128) {
    // Distinct imaginary parts: each 4- or 8-byte half moves with its element.
    const int64_t half = DTypeSize(dtype) / 2;
    for (int64_t i = 0; i < a.num_elements(); ++i) {
      if (half == 4) {
        const float im = static_cast<float>(real(rng));
        std::memcpy(a.data() + i * 2 * half + half, &im, 4);
      } else {
        const double im = real(rng);
        std::memcpy(a.data() + i * 2 * half + half, &im, 8);
      }
    }
  }
  return a;
}

Array RandomIndices(DType dtype, std::vector<int64_t> dims, int64_t lo, int64_t hi, uint32_t seed) {
  Array a(dtype, std::move(dims));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> d(lo, hi - 1);
  for (int64_t i = 0; i < a.num_elements(); ++i) a.SetDouble(i, static_cast<double>(d(rng)));
  return a;
}

// The per-element combine scatter used before its typed loops.
ElemCombine OldCombine(CombineKind kind, DType dtype) {
  StatusOr<TypedCombineFn> f = FindTypedCombine(kind, dtype);
  XS_CHECK(f.ok(), f.status().ToString());
  const TypedCombineFn fn = *f;
  return [fn](std::byte* acc, const std::byte* x) { fn(acc, x); };
}

// A scatter geometry: operand / indices / updates dims, dimension numbers, index range.
struct ScatterCase {
  const char* name;
  std::vector<int64_t> operand, indices, updates;
  ScatterDimensionNumbers dn;
  int64_t lo, hi;  // indices drawn from [lo, hi)
};

ScatterDimensionNumbers Sdn(std::vector<int64_t> update_window, std::vector<int64_t> inserted,
                            std::vector<int64_t> to_operand, int64_t ivd, std::vector<int64_t> input_batching = {},
                            std::vector<int64_t> indices_batching = {}) {
  ScatterDimensionNumbers dn;
  dn.update_window_dims = std::move(update_window);
  dn.inserted_window_dims = std::move(inserted);
  dn.scatter_dims_to_operand_dims = std::move(to_operand);
  dn.index_vector_dim = ivd;
  dn.input_batching_dims = std::move(input_batching);
  dn.scatter_indices_batching_dims = std::move(indices_batching);
  return dn;
}

std::vector<ScatterCase> ScatterCases() {
  return {
      // segment_sum: whole rows, duplicates, negative and too-large rows.
      {"rows", {64, 48}, {3000, 1}, {3000, 48}, Sdn({1}, {0}, {0}, 1), -3, 70},
      // bincount: one element per update, implicit index vector dim.
      {"scalars", {500}, {200000}, {200000}, Sdn({}, {0}, {0}, 1), -2, 505},
      // x.at[:, idx].add(u): the window is a whole strided column (the column walk).
      {"column", {300, 20}, {500, 1}, {300, 500}, Sdn({0}, {1}, {1}, 1), -1, 21},
      // Columns of 200 of the 300 rows at any start row: overlapping strided windows, not walked
      // column-wise (that would reorder an element's updates).
      {"partial_column", {300, 20}, {400, 2}, {200, 400}, Sdn({0}, {1}, {0, 1}, 1), -1, 101},
      // Windows of 5 rows overlapping each other; starts past 45 or below 0 do not fit.
      {"overlapping_rows", {50, 8}, {4000, 1}, {4000, 5, 8}, Sdn({1, 2}, {}, {0}, 1), -2, 50},
      // Windows of 7 elements inside a row, at any column: overlapping, some do not fit.
      {"partial_minor", {20, 30}, {25000, 2}, {25000, 7}, Sdn({1}, {0}, {0, 1}, 1), -1, 30},
      // The same with windows of 40 in rows of 64.
      {"partial_minor_wide", {20, 64}, {5000, 2}, {5000, 40}, Sdn({1}, {0}, {0, 1}, 1), -1, 30},
      // Window dims 0 and 2 around an inserted dim 1: runs of 20 with a stride between them.
      {"non_trailing_window", {40, 30, 20}, {60, 1}, {40, 60, 20}, Sdn({0, 2}, {1}, {1}, 1), -2, 32},
      // Window dims contiguous in the operand (one run there) but apart in the updates.
      {"split_window_dims", {10, 4, 6}, {50, 1}, {4, 50, 6}, Sdn({0, 2}, {0}, {0}, 1), -1, 11},
      // Two index components in an index vector dim that is not last.
      {"points_ivd_first", {30, 40}, {2, 3000}, {3000}, Sdn({}, {0, 1}, {0, 1}, 0), -1, 41},
      // Batching dims (vmapped scatter): operand dim 0 follows indices dim 0.
      {"batching", {6, 50, 16}, {6, 400, 1}, {6, 400, 16}, Sdn({2}, {1}, {1}, 2, {0}, {0}), -2, 52},
      // A batching dim of the indices after their index vector dim.
      {"batching_after_ivd", {5, 40}, {1, 5, 300}, {5, 300}, Sdn({}, {1}, {1}, 0, {0}, {1}), -1, 41},
      // Nothing to scatter.
      {"no_updates", {10, 4}, {0, 1}, {0, 4}, Sdn({1}, {0}, {0}, 1), 0, 10},
  };
}

void PrintTo(const ScatterCase& c, std::ostream* os) { *os << c.name; }

class ScatterAgainstReference : public ::testing::TestWithParam<ScatterCase> {};

// Every (kind, dtype) against the old per-element combine on the reference walk.
TEST_P(ScatterAgainstReference, EveryTypedCombineMatchesBitForBit) {
  const ScatterCase& c = GetParam();
  const struct {
    CombineKind kind;
    DType dtype;
  } kinds[] = {
      {CombineKind::kAdd, DType::kF32},        {CombineKind::kMultiply, DType::kF32},
      {CombineKind::kMaximum, DType::kF32},    {CombineKind::kMinimum, DType::kF32},
      {CombineKind::kOverwrite, DType::kF32},  {CombineKind::kAdd, DType::kBF16},
      {CombineKind::kAdd, DType::kF64},        {CombineKind::kMaximum, DType::kF16},
      {CombineKind::kAdd, DType::kS32},        {CombineKind::kMultiply, DType::kS32},
      {CombineKind::kMinimum, DType::kS32},    {CombineKind::kAnd, DType::kU8},
      {CombineKind::kOr, DType::kS16},         {CombineKind::kAdd, DType::kU8},
      {CombineKind::kAnd, DType::kPred},       {CombineKind::kOr, DType::kPred},
      {CombineKind::kAdd, DType::kC64},        {CombineKind::kOverwrite, DType::kC128},
      {CombineKind::kOverwrite, DType::kBF16},
  };
  uint32_t seed = 1;
  for (const auto& k : kinds) {
    SCOPED_TRACE(::testing::Message() << c.name << " kind " << static_cast<int>(k.kind) << " " << DTypeName(k.dtype));
    const bool specials =
        k.kind == CombineKind::kMaximum || k.kind == CombineKind::kMinimum || k.kind == CombineKind::kOverwrite;
    const Array op = RandomArray(k.dtype, c.operand, seed++, specials);
    const Array up = RandomArray(k.dtype, c.updates, seed++, specials);
    const DType index_type = seed % 3 == 0 ? DType::kS64 : (seed % 3 == 1 ? DType::kS32 : DType::kS16);
    const Array idx = RandomIndices(index_type, c.indices, c.lo, c.hi, seed++);
    const Array want = RefScatter({op}, idx, {up}, c.dn, OldCombine(k.kind, k.dtype))[0];
    const Array* ops[] = {&op};
    const Array* ups[] = {&up};
    StatusOr<std::vector<Array>> got = Scatter(ops, idx, ups, c.dn, {k.kind, nullptr});
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_TRUE(SameBits((*got)[0], want));
  }
}

// f32 add against a test-written add, and a generic combiner that is not commutative (the
// update order per element shows), through the scalar-function path.
TEST_P(ScatterAgainstReference, GenericCombinerKeepsTheUpdateOrder) {
  const ScatterCase& c = GetParam();
  const Array op = RandomArray(DType::kF32, c.operand, 11);
  const Array up = RandomArray(DType::kF32, c.updates, 12);
  const Array idx = RandomIndices(DType::kS32, c.indices, c.lo, c.hi, 13);
  auto load = [](const std::byte* p) {
    float v;
    std::memcpy(&v, p, 4);
    return v;
  };
  const ElemCombine add = [&](std::byte* acc, const std::byte* x) {
    const float s = load(acc) + load(x);
    std::memcpy(acc, &s, 4);
  };
  const ElemCombine blend = [&](std::byte* acc, const std::byte* x) {
    const float s = load(acc) * 0.5f + load(x);
    std::memcpy(acc, &s, 4);
  };
  const Array* ops[] = {&op};
  const Array* ups[] = {&up};
  EXPECT_TRUE(SameBits((*Scatter(ops, idx, ups, c.dn, {CombineKind::kAdd, nullptr}))[0],
                       RefScatter({op}, idx, {up}, c.dn, add)[0]));
  ScalarFn blend_fn = [&](std::span<const std::byte* const> a, std::span<std::byte* const> r) {
    const float s = load(a[0]) * 0.5f + load(a[1]);
    std::memcpy(r[0], &s, 4);
    return OkStatus();
  };
  EXPECT_TRUE(SameBits((*Scatter(ops, idx, ups, c.dn, {CombineKind::kGeneric, blend_fn}))[0],
                       RefScatter({op}, idx, {up}, c.dn, blend)[0]));
}

// Two operands (f32 value, s32 count) combined by one generic function.
TEST_P(ScatterAgainstReference, VariadicGenericCombinerUpdatesEveryOperand) {
  const ScatterCase& c = GetParam();
  const Array v = RandomArray(DType::kF32, c.operand, 21);
  const Array n = RandomArray(DType::kS32, c.operand, 22);
  const Array uv = RandomArray(DType::kF32, c.updates, 23);
  const Array un = RandomArray(DType::kS32, c.updates, 24);
  const Array idx = RandomIndices(DType::kS64, c.indices, c.lo, c.hi, 25);
  auto step = [](float& acc_v, int32_t& acc_n, float x_v, int32_t x_n) {
    acc_v = acc_v * 0.5f + x_v * static_cast<float>(acc_n % 3);
    acc_n = acc_n * 2 + x_n;
  };
  ScalarFn fn = [&](std::span<const std::byte* const> a, std::span<std::byte* const> r) {
    float av, xv;
    int32_t an, xn;
    std::memcpy(&av, a[0], 4);
    std::memcpy(&an, a[1], 4);
    std::memcpy(&xv, a[2], 4);
    std::memcpy(&xn, a[3], 4);
    step(av, an, xv, xn);
    std::memcpy(r[0], &av, 4);
    std::memcpy(r[1], &an, 4);
    return OkStatus();
  };
  const std::vector<Array> want = RefScatter({v, n}, idx, {uv, un}, c.dn, nullptr,
                                             [&](std::vector<std::byte*>& acc, std::vector<const std::byte*>& x) {
                                               float av, xv;
                                               int32_t an, xn;
                                               std::memcpy(&av, acc[0], 4);
                                               std::memcpy(&an, acc[1], 4);
                                               std::memcpy(&xv, x[0], 4);
                                               std::memcpy(&xn, x[1], 4);
                                               step(av, an, xv, xn);
                                               std::memcpy(acc[0], &av, 4);
                                               std::memcpy(acc[1], &an, 4);
                                             });
  const Array* ops[] = {&v, &n};
  const Array* ups[] = {&uv, &un};
  StatusOr<std::vector<Array>> got = Scatter(ops, idx, ups, c.dn, {CombineKind::kGeneric, fn});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(SameBits((*got)[0], want[0]));
  EXPECT_TRUE(SameBits((*got)[1], want[1]));
}

// ScatterInPlace on the operand's own buffer gives Scatter's result.
TEST_P(ScatterAgainstReference, InPlaceOnTheOperandMatchesACopy) {
  const ScatterCase& c = GetParam();
  Array op = RandomArray(DType::kF32, c.operand, 31);
  const Array up = RandomArray(DType::kF32, c.updates, 32);
  const Array idx = RandomIndices(DType::kS32, c.indices, c.lo, c.hi, 33);
  const Array want = RefScatter({op}, idx, {up}, c.dn, OldCombine(CombineKind::kAdd, DType::kF32))[0];
  Array* outs[] = {&op};
  const Array* ups[] = {&up};
  const std::byte* buffer = op.data();
  ASSERT_TRUE(ScatterInPlace(outs, idx, ups, c.dn, {CombineKind::kAdd, nullptr}).ok());
  EXPECT_EQ(op.data(), buffer);
  EXPECT_TRUE(SameBits(op, want));
}

INSTANTIATE_TEST_SUITE_P(Shapes, ScatterAgainstReference, ::testing::ValuesIn(ScatterCases()),
                         [](const ::testing::TestParamInfo<ScatterCase>& i) { return std::string(i.param.name); });

TEST(Scatter, HandValuesOfOverlappingWindowsInUpdateOrder) {
  // Windows of 2 at starts 0, 1, 3 (does not fit: skipped), -1 (skipped), 1 on f32[4]:
  // element 1 gets update 0's second value before update 1's first, and so on.
  const Array op = Array::FromVector<float>({4}, {0, 0, 0, 0});
  const Array idx = Array::FromVector<int32_t>({5, 1}, {0, 1, 3, -1, 1});
  const Array up = Array::FromVector<float>({5, 2}, {1, 2, 3, 4, 50, 60, 70, 80, 5, 6});
  const ScatterDimensionNumbers dn = Sdn({1}, {}, {0}, 1);
  const Array* ops[] = {&op};
  const Array* ups[] = {&up};
  EXPECT_EQ(*Scatter(ops, idx, ups, dn, {CombineKind::kAdd, nullptr}),
            std::vector<Array>{Array::FromVector<float>({4}, {1, 2 + 3 + 5, 4 + 6, 0})});
  // Overwrite: the last update of each element wins.
  EXPECT_EQ(*Scatter(ops, idx, ups, dn, {CombineKind::kOverwrite, nullptr}),
            std::vector<Array>{Array::FromVector<float>({4}, {1, 5, 6, 0})});
}

TEST(Scatter, AddBlocksDependOnTheShapesOnly) {
  // 2^22 update elements: 4 blocks of 2^20; the partials may cost at most 1/8 of the updates.
  EXPECT_EQ(ScatterAddBlocks(CombineKind::kAdd, DType::kF32, 262144, int64_t{1} << 22, 4096), 4);
  EXPECT_EQ(ScatterAddBlocks(CombineKind::kAdd, DType::kF64, 262144, int64_t{1} << 22, 4096), 4);
  EXPECT_EQ(ScatterAddBlocks(CombineKind::kAdd, DType::kF32, 262144, int64_t{1} << 22, int64_t{1} << 20), 1);
  EXPECT_EQ(ScatterAddBlocks(CombineKind::kAdd, DType::kF32, 262144, int64_t{1} << 28, 4096), 64);
  EXPECT_EQ(ScatterAddBlocks(CombineKind::kAdd, DType::kF32, 3, int64_t{1} << 22, 4096), 3);
  EXPECT_EQ(ScatterAddBlocks(CombineKind::kAdd, DType::kF32, 1000, (int64_t{1} << 20) - 1, 16), 1);
  // Integer sums and other combiners keep the window order (integer addition is exact anyway).
  EXPECT_EQ(ScatterAddBlocks(CombineKind::kAdd, DType::kS32, 262144, int64_t{1} << 22, 4096), 1);
  EXPECT_EQ(ScatterAddBlocks(CombineKind::kMaximum, DType::kF32, 262144, int64_t{1} << 22, 4096), 1);
}

// segment_sum's scatter-add: f32[262144,16] rows into f32[256,16]. Four blocks of 65536 windows,
// each summed in window order, then (((result + p1) + p2) + p3): the same bits on 1, 2, 3 and 8
// threads, within rounding of a double-precision sum, and exact where the sums are exact.
TEST(Scatter, LargeAddsSumFixedBlocksOnAnyThreadCount) {
  constexpr int64_t kRows = 262144, kCols = 16, kSegments = 256, kBlocks = 4;
  std::mt19937 rng(41);
  std::uniform_int_distribution<int32_t> seg(0, kSegments - 1);
  std::uniform_real_distribution<float> val(-1.0f, 1.0f);
  Array idx(DType::kS32, {kRows, 1}), up(DType::kF32, {kRows, kCols}), op(DType::kF32, {kSegments, kCols});
  int32_t* ids = reinterpret_cast<int32_t*>(idx.data());
  float* u = reinterpret_cast<float*>(up.data());
  float* o = reinterpret_cast<float*>(op.data());
  for (int64_t r = 0; r < kRows; ++r) ids[r] = seg(rng);
  for (int64_t k = 0; k < kRows * kCols; ++k) u[k] = val(rng);
  for (int64_t k = 0; k < kSegments * kCols; ++k) o[k] = val(rng);
  ASSERT_EQ(ScatterAddBlocks(CombineKind::kAdd, DType::kF32, kRows, kRows * kCols, kSegments * kCols), kBlocks);
  const ScatterDimensionNumbers dn = Sdn({1}, {0}, {0}, 1);
  const Array* ups[] = {&up};
  // The documented order, computed here one element at a time.
  std::vector<float> want(o, o + kSegments * kCols);
  std::vector<double> exact(o, o + kSegments * kCols);
  for (int64_t b = 0; b < kBlocks; ++b) {
    std::vector<float> part(kSegments * kCols, -0.0f);
    float* target = b == 0 ? want.data() : part.data();
    for (int64_t r = kRows * b / kBlocks; r < kRows * (b + 1) / kBlocks; ++r) {
      for (int64_t c = 0; c < kCols; ++c) {
        target[ids[r] * kCols + c] += u[r * kCols + c];
        exact[ids[r] * kCols + c] += u[r * kCols + c];
      }
    }
    if (b > 0) {
      for (int64_t k = 0; k < kSegments * kCols; ++k) want[k] = want[k] + part[k];
    }
  }
  for (int threads : {1, 2, 3, 8}) {
    Array out = op;
    Array* outs[] = {&out};
    ASSERT_TRUE(ScatterInPlace(outs, idx, ups, dn, {CombineKind::kAdd, nullptr}, threads).ok());
    const float* got = reinterpret_cast<const float*>(out.data());
    for (int64_t k = 0; k < kSegments * kCols; ++k) {
      ASSERT_EQ(got[k], want[k]) << "element " << k << " on " << threads << " threads";
      ASSERT_NEAR(got[k], exact[k], 1e-4) << k;
    }
  }
  // Small integers: every partial sum is exact, so the blocks give the window-order result.
  for (int64_t k = 0; k < kRows * kCols; ++k) u[k] = static_cast<float>(static_cast<int>(k % 7) - 3);
  Array serial = op, blocked = op;
  for (float& x : std::span<float>(reinterpret_cast<float*>(serial.data()), kSegments * kCols)) x = 0;
  for (float& x : std::span<float>(reinterpret_cast<float*>(blocked.data()), kSegments * kCols)) x = 0;
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t c = 0; c < kCols; ++c) reinterpret_cast<float*>(serial.data())[ids[r] * kCols + c] += u[r * kCols + c];
  }
  Array* outs[] = {&blocked};
  ASSERT_TRUE(ScatterInPlace(outs, idx, ups, dn, {CombineKind::kAdd, nullptr}, 2).ok());
  EXPECT_EQ(blocked, serial);
}

TEST(Scatter, BadIndicesAndDimensionNumbersAreErrors) {
  const Array op(DType::kF32, {4, 3});
  const Array up(DType::kF32, {2, 3});
  const Array* ops[] = {&op};
  const Array* ups[] = {&up};
  const Array float_idx(DType::kF32, {2, 1});
  StatusOr<std::vector<Array>> r = Scatter(ops, float_idx, ups, Sdn({1}, {0}, {0}, 1), {CombineKind::kAdd, nullptr});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "indices must have an integer type, got f32");
  const Array idx(DType::kS32, {2, 1});
  r = Scatter(ops, idx, ups, Sdn({1}, {0}, {2}, 1), {CombineKind::kAdd, nullptr});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "index map names dim 2 of an operand of rank 2");
  const Array wrong_up(DType::kF32, {3, 3});
  const Array* wrong_ups[] = {&wrong_up};
  r = Scatter(ops, idx, wrong_ups, Sdn({1}, {0}, {0}, 1), {CombineKind::kAdd, nullptr});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "scatter: update scatter dim 0 has size 3 but the indices batch dim has 2");
}

// ---- gather ----

struct GatherCase {
  const char* name;
  std::vector<int64_t> operand, indices, slice_sizes;
  GatherDimensionNumbers dn;
  int64_t lo, hi;
};

GatherDimensionNumbers Gdn(std::vector<int64_t> offset, std::vector<int64_t> collapsed, std::vector<int64_t> map,
                           int64_t ivd, std::vector<int64_t> operand_batching = {},
                           std::vector<int64_t> indices_batching = {}) {
  GatherDimensionNumbers dn;
  dn.offset_dims = std::move(offset);
  dn.collapsed_slice_dims = std::move(collapsed);
  dn.start_index_map = std::move(map);
  dn.index_vector_dim = ivd;
  dn.operand_batching_dims = std::move(operand_batching);
  dn.start_indices_batching_dims = std::move(indices_batching);
  return dn;
}

std::vector<GatherCase> GatherCases() {
  return {
      // jnp.take(table, ids, axis=0): whole rows, clamped ids.
      {"rows", {100, 64}, {5000}, {1, 64}, Gdn({1}, {0}, {0}, 1), -5, 110},
      // x[i0, i1]: one element per index pair.
      {"points", {50, 60}, {20000, 2}, {1, 1}, Gdn({}, {0, 1}, {0, 1}, 1), -2, 62},
      // take_along_axis: batching dims.
      {"take_along", {64, 100}, {64, 16, 1}, {1, 1}, Gdn({}, {1}, {1}, 2, {0}, {0}), -3, 103},
      // A batching dim of the indices after their index vector dim.
      {"batching_after_ivd", {5, 40}, {1, 5, 300}, {1, 1}, Gdn({}, {1}, {1}, 0, {0}, {1}), -3, 43},
      // A 10 x 7 slice around a collapsed dim, starts clamped in dims 1 and 2 (outer runs).
      {"non_trailing_window", {10, 20, 30}, {3000, 2}, {10, 1, 7}, Gdn({1, 2}, {1}, {1, 2}, 1), -2, 31},
      // The slice's dim comes first in the result: strided destination runs.
      {"offset_dim_first", {20, 30}, {700}, {20, 1}, Gdn({0}, {1}, {1}, 1), -1, 31},
      // x[:, idx] with a result of 1.2-4.8 MB: the column walk split over threads.
      {"columns_large", {300, 2000}, {1000}, {300, 1}, Gdn({0}, {1}, {1}, 1), -1, 2001},
      // Slice dims contiguous in the operand (one run there) but apart in the result.
      {"split_offset_dims", {10, 4, 6}, {50}, {1, 4, 6}, Gdn({0, 2}, {0}, {0}, 1), -1, 11},
      // Partial rows, an index vector dim that is not last.
      {"ivd_first", {40, 50}, {2, 900}, {3, 11}, Gdn({1, 2}, {}, {0, 1}, 0), -4, 52},
      // Nothing to gather.
      {"no_indices", {10, 4}, {0}, {1, 4}, Gdn({1}, {0}, {0}, 1), 0, 10},
  };
}

void PrintTo(const GatherCase& c, std::ostream* os) { *os << c.name; }

class GatherAgainstReference : public ::testing::TestWithParam<GatherCase> {};

TEST_P(GatherAgainstReference, EveryElementSizeMatchesTheReference) {
  const GatherCase& c = GetParam();
  uint32_t seed = 100;
  for (DType t : {DType::kF32, DType::kU8, DType::kBF16, DType::kF64, DType::kC128}) {
    for (DType it : {DType::kS32, DType::kS64, DType::kS8}) {
      if (it == DType::kS8 && c.hi > 127) continue;
      SCOPED_TRACE(::testing::Message() << c.name << " " << DTypeName(t) << " indices " << DTypeName(it));
      const Array op = RandomArray(t, c.operand, seed++);
      const Array idx = RandomIndices(it, c.indices, c.lo, c.hi, seed++);
      const StatusOr<Array> want = GatherReference(op, idx, c.dn, c.slice_sizes);
      ASSERT_TRUE(want.ok()) << want.status().ToString();
      // Results of 512 KiB or more are copied in pieces on the threads given.
      for (int threads : {1, 3}) {
        StatusOr<Array> got = Gather(op, idx, c.dn, c.slice_sizes, threads);
        ASSERT_TRUE(got.ok()) << got.status().ToString();
        EXPECT_TRUE(SameBits(*got, *want)) << threads << " threads";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, GatherAgainstReference, ::testing::ValuesIn(GatherCases()),
                         [](const ::testing::TestParamInfo<GatherCase>& i) { return std::string(i.param.name); });

TEST(Gather, IntoABufferOfTheWrongShapeIsAnError) {
  const Array op = Array::Iota(DType::kF32, {5, 4});
  const Array idx = Array::FromVector<int32_t>({3}, {3, -2, 9});
  const GatherDimensionNumbers dn = Gdn({1}, {0}, {0}, 1);
  Array out(DType::kF32, {3, 4});
  ASSERT_TRUE(GatherInto(op, idx, dn, {1, 4}, out).ok());
  // Rows 3, 0 (clamped from -2) and 4 (clamped from 9).
  EXPECT_EQ(out, Array::FromVector<float>({3, 4}, {12, 13, 14, 15, 0, 1, 2, 3, 16, 17, 18, 19}));
  Array wrong(DType::kF32, {4, 4});
  const Status st = GatherInto(op, idx, dn, {1, 4}, wrong);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(), "gather: result buffer f32[4,4] for a result of f32[3,4]");
}

}  // namespace
}  // namespace xs::kernels
