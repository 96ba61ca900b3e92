// Reduce's typed argmax / argmin loop (Combiner::arg_select) against the same reducer run through
// the generic scalar-function path, bit for bit, and against hand values for JAX's semantics.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "gtest/gtest.h"
#include "xshard/kernels/numeric.h"
#include "xshard/kernels/parallel.h"
#include "xshard/kernels/reduce.h"

namespace xs::kernels {
namespace {

// The ArgSelect formula of scalar_fn.h written out on scalars of V (compared as floats for
// f16 / bf16) and I: what the region JAX emits computes, one pair at a time.
template <class V, class I>
ScalarFn ArgSelectFn(ArgSelect s) {
  return [s](std::span<const std::byte* const> a, std::span<std::byte* const> r) {
    V av, bv;
    I ai, bi;
    std::memcpy(&av, a[0], sizeof(V));
    std::memcpy(&ai, a[1], sizeof(I));
    std::memcpy(&bv, a[2], sizeof(V));
    std::memcpy(&bi, a[3], sizeof(I));
    const auto x = ToCompute(av), y = ToCompute(bv);
    bool take_a = false;
    switch (s.direction) {
      case ComparisonDirection::kGt: take_a = x > y; break;
      case ComparisonDirection::kGe: take_a = x >= y; break;
      case ComparisonDirection::kLt: take_a = x < y; break;
      case ComparisonDirection::kLe: take_a = x <= y; break;
      default: break;
    }
    if (s.nan_first && x != x) take_a = true;  // NOLINT(misc-redundant-expression): the NaN test
    const bool take_ai = take_a || (s.tie_lower_index && x == y && ai < bi);
    const V v = take_a ? av : bv;
    const I i = take_ai ? ai : bi;
    std::memcpy(r[0], &v, sizeof(V));
    std::memcpy(r[1], &i, sizeof(I));
    return OkStatus();
  };
}

template <class T>
bool SameBytes(const Array& a, const Array& b) {
  return a.dims() == b.dims() && a.dtype() == b.dtype() &&
         std::memcmp(a.data(), b.data(), a.num_elements() * sizeof(T)) == 0;
}

// Values drawn from a few distinct ones (ties are common), with NaNs, both zeros and infinities
// for floating types; indices either counting (argmax over an iota) or random with repeats.
template <class V>
Array RandomValues(const std::vector<int64_t>& dims, DType dt, std::mt19937& rng) {
  std::vector<V> v(static_cast<size_t>(Product(dims)));
  std::uniform_int_distribution<int> pick(0, 9);
  for (V& x : v) {
    const int k = pick(rng);
    if constexpr (std::is_floating_point_v<ComputeT<V>>) {
      const float specials[] = {std::numeric_limits<float>::quiet_NaN(), 0.0f, -0.0f,
                                std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()};
      const float f = k < 5 ? specials[k] : static_cast<float>(k - 7) * 0.5f;
      // NaNs and the infinities are rarer than the rest.
      x = FromCompute<V>(static_cast<ComputeT<V>>((k == 0 || k == 3) && pick(rng) > 1 ? 1.5f : f));
    } else {
      x = static_cast<V>(k - 4);
    }
  }
  Array a(Shape(dt, dims));
  std::memcpy(a.data(), v.data(), v.size() * sizeof(V));
  return a;
}

template <class I>
Array RandomIndices(const std::vector<int64_t>& dims, DType dt, bool counting, std::mt19937& rng) {
  std::vector<I> v(static_cast<size_t>(Product(dims)));
  std::uniform_int_distribution<int> pick(0, 5);
  for (size_t i = 0; i < v.size(); ++i) v[i] = counting ? static_cast<I>(i) : static_cast<I>(pick(rng));
  Array a(Shape(dt, dims));
  std::memcpy(a.data(), v.data(), v.size() * sizeof(I));
  return a;
}

template <class V, class I>
void CheckAgainstGeneric(DType vt, DType it) {
  std::mt19937 rng(7);
  const std::vector<std::vector<int64_t>> shapes = {{37}, {5, 9}, {3, 4, 5}, {9, 2, 130}, {6, 300}};
  const ComparisonDirection dirs[] = {ComparisonDirection::kGt, ComparisonDirection::kGe, ComparisonDirection::kLt,
                                      ComparisonDirection::kLe};
  int cases = 0;
  for (const auto& dims : shapes) {
    const int rank = static_cast<int>(dims.size());
    std::vector<std::vector<int64_t>> reduce_dims;
    for (int mask = 0; mask < (1 << rank); ++mask) {
      std::vector<int64_t> rd;
      for (int d = 0; d < rank; ++d) {
        if (mask & (1 << d)) rd.push_back(d);
      }
      reduce_dims.push_back(rd);
    }
    for (bool counting : {true, false}) {
      Array values = RandomValues<V>(dims, vt, rng);
      Array indices = RandomIndices<I>(dims, it, counting, rng);
      Array vinit = RandomValues<V>({}, vt, rng);
      Array iinit = RandomIndices<I>({}, it, false, rng);
      const Array* in[] = {&values, &indices};
      const Array* init[] = {&vinit, &iinit};
      for (ComparisonDirection d : dirs) {
        for (bool nan_first : {true, false}) {
          for (bool tie : {true, false}) {
            const ArgSelect s{.direction = d, .nan_first = nan_first, .tie_lower_index = tie};
            const ScalarFn fn = ArgSelectFn<V, I>(s);
            Combiner fast{CombineKind::kGeneric, fn, s};
            Combiner generic{CombineKind::kGeneric, fn, std::nullopt};
            for (const auto& rd : reduce_dims) {
              std::vector<Array> want = *Reduce(in, init, rd, generic);
              std::vector<Array> got = *Reduce(in, init, rd, fast);
              ASSERT_TRUE(SameBytes<V>(got[0], want[0])) << DTypeName(vt) << " dims " << dims.size() << " case " << cases;
              ASSERT_TRUE(SameBytes<I>(got[1], want[1])) << DTypeName(vt) << " dims " << dims.size() << " case " << cases;
              ++cases;
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(cases, 832);  // 5 shapes x their reduce-dim sets x 2 index kinds x 16 reducers
}

TEST(ArgSelectReduce, TypedLoopMatchesTheReducerFunctionBitForBit) {
  CheckAgainstGeneric<float, int32_t>(DType::kF32, DType::kS32);
  CheckAgainstGeneric<double, int64_t>(DType::kF64, DType::kS64);
  CheckAgainstGeneric<BFloat16, int32_t>(DType::kBF16, DType::kS32);
  CheckAgainstGeneric<Half, int64_t>(DType::kF16, DType::kS64);
  // Unsigned indices and the kGe / kLe directions take the generic path: still equal.
  CheckAgainstGeneric<float, uint32_t>(DType::kF32, DType::kU32);
  CheckAgainstGeneric<int32_t, int32_t>(DType::kS32, DType::kS32);
  CheckAgainstGeneric<uint8_t, int64_t>(DType::kU8, DType::kS64);
}

// Rows long and many enough to take several threads' chunks of four-row blocks and a remainder.
TEST(ArgSelectReduce, ManyLongRowsOverThreadsMatchTheReducerFunction) {
  std::mt19937 rng(11);
  const std::vector<int64_t> dims = {103, 2999};
  Array values = RandomValues<float>(dims, DType::kF32, rng);
  Array indices = RandomIndices<int32_t>(dims, DType::kS32, true, rng);
  Array vinit = Array::Scalar<float>(-std::numeric_limits<float>::infinity());
  Array iinit = Array::Scalar<int32_t>(0);
  const Array* in[] = {&values, &indices};
  const Array* init[] = {&vinit, &iinit};
  const ArgSelect s{};
  ScopedDeviceThreadShare share({.threads = 2, .concurrent = false});
  std::vector<Array> want = *Reduce(in, init, {1}, {CombineKind::kGeneric, ArgSelectFn<float, int32_t>(s), std::nullopt});
  std::vector<Array> got = *Reduce(in, init, {1}, {CombineKind::kGeneric, ArgSelectFn<float, int32_t>(s), s});
  EXPECT_TRUE(SameBytes<float>(got[0], want[0]));
  EXPECT_TRUE(SameBytes<int32_t>(got[1], want[1]));
}

// jnp.argmax / argmin's answers (JAX 0.10.2 on CPU): the first NaN wins, ties go to the first index.
TEST(ArgSelectReduce, JaxArgmaxAnswers) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Array v = Array::FromVector<float>({3, 4}, {1, nan, 3, nan, 2, 5, 5, 1, -0.0f, 0.0f, -1, 0.0f});
  Array idx = Array::FromVector<int32_t>({3, 4}, {0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3});
  Array vi = Array::Scalar<float>(-std::numeric_limits<float>::infinity()), ii = Array::Scalar<int32_t>(0);
  const Array* in[] = {&v, &idx};
  const Array* init[] = {&vi, &ii};
  const ArgSelect argmax{};
  std::vector<Array> r = *Reduce(in, init, {1}, {CombineKind::kGeneric, ArgSelectFn<float, int32_t>(argmax), argmax});
  auto got = r[1].values<int32_t>();
  EXPECT_EQ(std::vector<int32_t>(got.begin(), got.end()), (std::vector<int32_t>{1, 1, 0}));
  Array vmax = Array::Scalar<float>(std::numeric_limits<float>::infinity());
  const Array* init_min[] = {&vmax, &ii};
  const ArgSelect argmin{.direction = ComparisonDirection::kLt};
  r = *Reduce(in, init_min, {1}, {CombineKind::kGeneric, ArgSelectFn<float, int32_t>(argmin), argmin});
  got = r[1].values<int32_t>();
  EXPECT_EQ(std::vector<int32_t>(got.begin(), got.end()), (std::vector<int32_t>{1, 3, 2}));
}

}  // namespace
}  // namespace xs::kernels
