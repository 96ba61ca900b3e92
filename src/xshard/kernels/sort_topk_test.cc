// Sort's order-key paths (Comparator::keys and strict `direction` compares) against the generic
// path (a scalar-function comparator written here, evaluating each key's compare the way the
// comparator computation reads), bit for bit on every output; TopK against a full stable sort
// done here. Inputs mix NaNs of both signs and several payloads, +-0, +-inf, denormals,
// duplicates and random bit patterns.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "gtest/gtest.h"
#include "xshard/base/strings.h"
#include "xshard/kernels/sort.h"
#include "xshard/kernels/topk.h"

namespace xs::kernels {
namespace {

// ---- inputs ----

uint64_t Mask(int bytes) { return bytes == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * bytes)) - 1; }

// Bit patterns worth sorting for `t`: NaNs, zeros, infinities, denormals (floats), extremes
// (integers).
std::vector<uint64_t> Specials(DType t) {
  switch (t) {
    case DType::kF32:
      return {0x7fc00000, 0xffc00000, 0x7f800001, 0x7fc12345, 0xff812345, 0x00000000, 0x80000000, 0x7f800000,
              0xff800000, 0x00000001, 0x80000005, 0x007fffff, 0x3f800000, 0xbf800000, 0x7f7fffff, 0xff7fffff};
    case DType::kF64:
      return {0x7ff8000000000000, 0xfff8000000000000, 0x7ff0000000000001, 0x7ff8000000012345,
              0x0000000000000000, 0x8000000000000000, 0x7ff0000000000000, 0xfff0000000000000,
              0x0000000000000001, 0x8000000000000003, 0x3ff0000000000000, 0xbff0000000000000};
    case DType::kF16:
      return {0x7e00, 0xfe00, 0x7c01, 0x7e55, 0x0000, 0x8000, 0x7c00, 0xfc00, 0x0001, 0x8002, 0x3c00, 0xbc00};
    case DType::kBF16:
      return {0x7fc0, 0xffc0, 0x7f81, 0x7fd5, 0x0000, 0x8000, 0x7f80, 0xff80, 0x0001, 0x8002, 0x3f80, 0xbf80};
    case DType::kPred: return {0, 1};
    default: {
      const int bytes = static_cast<int>(DTypeSize(t));
      const uint64_t m = Mask(bytes), top = uint64_t{1} << (8 * bytes - 1);
      return {0, 1, m, top, top - 1, top + 1, 2, m - 1};
    }
  }
}

// `count` elements of `t`: a third specials, a third from a few repeated patterns, a third random.
Array RandomArray(DType t, std::vector<int64_t> dims, uint32_t seed) {
  Array a = Array::Uninitialized(Shape(t, dims));
  std::mt19937_64 rng(seed);
  const std::vector<uint64_t> specials = Specials(t);
  const int bytes = static_cast<int>(DTypeSize(t));
  std::vector<uint64_t> repeated;
  for (int i = 0; i < 5; ++i) repeated.push_back(rng() & Mask(bytes));
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    uint64_t bits;
    switch (rng() % 3) {
      case 0: bits = specials[rng() % specials.size()]; break;
      case 1: bits = repeated[rng() % repeated.size()]; break;
      default: bits = rng() & Mask(bytes); break;
    }
    if (t == DType::kPred) bits &= 1;
    std::memcpy(a.data() + i * bytes, &bits, static_cast<size_t>(bytes));
  }
  return a;
}

// ---- the generic comparator ----

uint64_t Bits(const std::byte* p, int bytes) {
  uint64_t b = 0;
  std::memcpy(&b, p, static_cast<size_t>(bytes));
  return b;
}

// A float element as a double (exact for every format here).
double FloatValue(uint64_t bits, DType t) {
  switch (t) {
    case DType::kF16: return HalfToFloat(Half{static_cast<uint16_t>(bits)});
    case DType::kBF16: return BFloat16ToFloat(BFloat16{static_cast<uint16_t>(bits)});
    case DType::kF32: {
      float f;
      const uint32_t b = static_cast<uint32_t>(bits);
      std::memcpy(&f, &b, 4);
      return f;
    }
    default: {
      double d;
      std::memcpy(&d, &bits, 8);
      return d;
    }
  }
}

// XLA's TOTALORDER: the bits as a signed integer, negatives with their magnitude bits reversed.
__int128 TotalOrder(uint64_t bits, int bytes) {
  const int w = 8 * bytes;
  __int128 v = static_cast<__int128>(bits);
  const bool negative = (bits >> (w - 1)) & 1;
  if (!negative) return v;
  // -(magnitude) - 1 keeps -0 just below +0 and orders negatives by reversed magnitude.
  const uint64_t magnitude = bits & (Mask(bytes) >> 1);
  return -static_cast<__int128>(magnitude) - 1;
}

// The value an integer / pred compare of `type` looks at.
__int128 IntegerValue(uint64_t bits, DType t, ComparisonType type) {
  const int bytes = static_cast<int>(DTypeSize(t));
  if (t == DType::kPred) return bits != 0;
  const bool as_signed = type == ComparisonType::kSigned ||
                         ((type == ComparisonType::kNone || type == ComparisonType::kFloat) && IsSignedInteger(t));
  if (!as_signed) return bits;
  const int w = 8 * bytes;
  const bool negative = (bits >> (w - 1)) & 1;
  return negative ? static_cast<__int128>(bits) - (static_cast<__int128>(1) << w) : bits;
}

// lex: for each key in turn, less -> true, not equal -> false, equal -> next key; all equal ->
// false. A key reads like its HLO: canonicalize (JAX's selects), then compare LT / GT / EQ.
ScalarFn GenericComparator(std::vector<SortKey> keys, std::vector<DType> dtypes) {
  return [keys, dtypes](std::span<const std::byte* const> a, std::span<std::byte* const> r) {
    bool result = false;
    for (const SortKey& k : keys) {
      const DType t = dtypes[k.operand];
      const int bytes = static_cast<int>(DTypeSize(t));
      uint64_t x = Bits(a[2 * k.operand], bytes), y = Bits(a[2 * k.operand + 1], bytes);
      bool lt, eq;
      if (IsFloating(t)) {
        if (k.canonical) {
          auto canon = [&](uint64_t b) {
            const double v = FloatValue(b, t);
            return v != v ? k.nan_bits : v == 0.0 ? k.zero_bits : b;
          };
          x = canon(x);
          y = canon(y);
        }
        const ComparisonType type = k.type == ComparisonType::kNone ? ComparisonType::kFloat : k.type;
        if (type == ComparisonType::kTotalOrder) {
          const __int128 kx = TotalOrder(x, bytes), ky = TotalOrder(y, bytes);
          lt = k.direction == ComparisonDirection::kLt ? kx < ky : kx > ky;
          eq = kx == ky;
        } else {
          const double vx = FloatValue(x, t), vy = FloatValue(y, t);
          lt = k.direction == ComparisonDirection::kLt ? vx < vy : vx > vy;
          eq = vx == vy;
        }
      } else {
        const __int128 vx = IntegerValue(x, t, k.type), vy = IntegerValue(y, t, k.type);
        lt = k.direction == ComparisonDirection::kLt ? vx < vy : vx > vy;
        eq = vx == vy;
      }
      if (lt) {
        result = true;
        break;
      }
      if (!eq) break;
    }
    std::memcpy(r[0], &result, 1);
    return OkStatus();
  };
}

void ExpectSameBytes(const std::vector<Array>& got, const std::vector<Array>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].shape(), want[i].shape()) << what;
    const size_t size = static_cast<size_t>(got[i].num_elements() * DTypeSize(got[i].dtype()));
    EXPECT_EQ(std::memcmp(got[i].data(), want[i].data(), size), 0) << what << ": output " << i << " differs";
  }
}

struct Case {
  std::vector<int64_t> dims;
  int64_t dimension;
};

// Shapes with rows on the comparison path (<= 100 elements) and the radix path, sorted along
// minor and non-minor dims, empty and single-element rows, and enough elements for the rows to
// be spread over threads (32768).
std::vector<Case> Cases() {
  return {{{0}, 0},         {{1}, 0},         {{7}, 0},      {{300}, 0},     {{3000}, 0},
          {{3, 257}, 1},    {{257, 3}, 0},    {{4, 64}, 0},  {{5, 0, 3}, 1}, {{4, 3, 300}, 2},
          {{4, 300, 3}, 1}, {{300, 2, 3}, 0}, {{16, 40}, 1}, {{2, 5000}, 1}, {{101, 100}, 0},
          {{700, 50}, 1},   {{40, 1000}, 1}};
}

// Sorts operands of `dtypes` (operand 0 .. : random; the rest too) with `keys` on the fast path
// and with the generic comparator, on every case and 1 or 3 threads, and expects equal bytes.
void CheckKeys(const std::vector<SortKey>& keys, const std::vector<DType>& dtypes, uint32_t seed) {
  ASSERT_TRUE(SortKeysSupported(keys, dtypes));
  for (const Case& c : Cases()) {
    std::vector<Array> arrays;
    for (size_t i = 0; i < dtypes.size(); ++i) {
      arrays.push_back(RandomArray(dtypes[i], c.dims, seed + 101 * static_cast<uint32_t>(i)));
    }
    std::vector<const Array*> in;
    for (const Array& a : arrays) in.push_back(&a);
    Comparator fast;
    fast.keys = keys;
    Comparator generic;
    generic.fn = GenericComparator(keys, dtypes);
    StatusOr<std::vector<Array>> want = Sort(in, c.dimension, generic);
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    for (int threads : {1, 3}) {
      StatusOr<std::vector<Array>> got = Sort(in, c.dimension, fast, threads);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      ExpectSameBytes(*got, *want,
                      StrCat("dims [", JoinDims(c.dims), "] along ", c.dimension, ", ", threads, " threads"));
    }
  }
}

SortKey Key(int operand, ComparisonDirection d, ComparisonType type = ComparisonType::kNone) {
  SortKey k;
  k.operand = operand;
  k.direction = d;
  k.type = type;
  return k;
}

// JAX's float key: canonicalized to `nan` / `zero`, compared TOTALORDER.
SortKey JaxFloatKey(int operand, uint64_t nan, uint64_t zero = 0, ComparisonDirection d = ComparisonDirection::kLt) {
  SortKey k = Key(operand, d, ComparisonType::kTotalOrder);
  k.canonical = true;
  k.nan_bits = nan;
  k.zero_bits = zero;
  return k;
}

constexpr ComparisonDirection kLt = ComparisonDirection::kLt;
constexpr ComparisonDirection kGt = ComparisonDirection::kGt;

TEST(SortKeys, JaxFloatSortMatchesGeneric) {
  // jnp.sort / argsort of f32, f64, f16, bf16 (constant(nan) and constant(0) as JAX writes them).
  const std::pair<DType, uint64_t> floats[] = {
      {DType::kF32, 0x7fc00000}, {DType::kF64, 0x7ff8000000000000}, {DType::kF16, 0x7e00}, {DType::kBF16, 0x7fc0}};
  for (const auto& [t, nan] : floats) {
    SCOPED_TRACE(DTypeName(t));
    CheckKeys({JaxFloatKey(0, nan)}, {t}, 1);
    CheckKeys({JaxFloatKey(0, nan)}, {t, DType::kS64}, 2);  // argsort: (x, iota)
  }
}

TEST(SortKeys, CanonicalizedKeyWithOtherConstantsAndDescending) {
  // -NaN and -0 as the constants: NaNs go first; the zeros become -0 (still one class).
  CheckKeys({JaxFloatKey(0, 0xffc00000, 0x80000000)}, {DType::kF32, DType::kS32}, 3);
  CheckKeys({JaxFloatKey(0, 0x7fc00000, 0, kGt)}, {DType::kF32, DType::kC64}, 4);
  CheckKeys({JaxFloatKey(1, 0x7ff8000000000000, 0, kGt)}, {DType::kS8, DType::kF64}, 5);
}

TEST(SortKeys, TotalOrderWithoutCanonicalization) {
  for (DType t : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16}) {
    SCOPED_TRACE(DTypeName(t));
    CheckKeys({Key(0, kLt, ComparisonType::kTotalOrder)}, {t}, 6);
    CheckKeys({Key(0, kGt, ComparisonType::kTotalOrder)}, {t, DType::kU8}, 7);
  }
}

TEST(SortKeys, IntegerAndPredKeys) {
  for (DType t : {DType::kS8, DType::kS16, DType::kS32, DType::kS64, DType::kU8, DType::kU16, DType::kU32, DType::kU64,
                  DType::kPred}) {
    SCOPED_TRACE(DTypeName(t));
    CheckKeys({Key(0, kLt)}, {t}, 8);
    CheckKeys({Key(0, kGt)}, {t, DType::kS32}, 9);
    if (t == DType::kPred) continue;
    CheckKeys({Key(0, kLt, ComparisonType::kSigned)}, {t}, 10);
    CheckKeys({Key(0, kGt, ComparisonType::kUnsigned)}, {t}, 11);
    CheckKeys({Key(0, kLt, ComparisonType::kFloat)}, {t}, 12);
  }
}

TEST(SortKeys, LexicographicKeysAsJaxLowersThem) {
  // lax.sort((x, y, z), num_keys=2) with x s32, y f32 and z carried; jnp.lexsort((a, b)) sorts
  // (b, a, iota) with two keys; num_keys=3 of (s32, f32, s32).
  CheckKeys({Key(0, kLt), JaxFloatKey(1, 0x7fc00000)}, {DType::kS32, DType::kF32, DType::kS64}, 13);
  CheckKeys({JaxFloatKey(0, 0x7fc00000), Key(1, kLt)}, {DType::kF32, DType::kS32}, 14);
  CheckKeys({Key(0, kLt), JaxFloatKey(1, 0x7fc00000), Key(2, kLt)}, {DType::kS32, DType::kF32, DType::kS32}, 15);
  // Narrow keys (most pairs tie on the first), mixed directions, a 64-bit key, a later operand
  // as the first key.
  CheckKeys({Key(0, kGt), Key(1, kLt), JaxFloatKey(2, 0x7ff8000000000000, 0, kGt)},
            {DType::kPred, DType::kU8, DType::kF64, DType::kBF16}, 16);
  CheckKeys({Key(2, kLt), JaxFloatKey(0, 0x7e00)}, {DType::kF16, DType::kS16, DType::kU64}, 17);
}

TEST(SortKeys, StrictCompareComparatorMatchesGeneric) {
  // The single `compare(p0, p1)` form (Comparator::direction), FLOAT on floats included: rows
  // holding a NaN take the compare's merge sort, the others the order keys.
  for (DType t : {DType::kF32, DType::kF64, DType::kBF16, DType::kS32, DType::kU16}) {
    for (ComparisonDirection d : {kLt, kGt}) {
      SCOPED_TRACE(StrCat(DTypeName(t), " ", ComparisonDirectionName(d)));
      for (const Case& c : Cases()) {
        Array x = RandomArray(t, c.dims, 20);
        // Rows without NaNs too: small values only in the first half of the flat array.
        if (IsFloating(t)) {
          for (int64_t i = 0; i < x.num_elements() / 2; ++i) {
            const double v = FloatValue(Bits(x.data() + i * DTypeSize(t), static_cast<int>(DTypeSize(t))), t);
            if (v != v) std::memset(x.data() + i * DTypeSize(t), 0, static_cast<size_t>(DTypeSize(t)));
          }
        }
        Array y = RandomArray(DType::kS32, c.dims, 21);
        const Array* in[] = {&x, &y};
        Comparator fast;
        fast.direction = d;
        Comparator generic;
        generic.fn = GenericComparator({Key(0, d)}, {t, DType::kS32});
        StatusOr<std::vector<Array>> want = Sort(in, c.dimension, generic);
        ASSERT_TRUE(want.ok()) << want.status().ToString();
        for (int threads : {1, 2}) {
          StatusOr<std::vector<Array>> got = Sort(in, c.dimension, fast, threads);
          ASSERT_TRUE(got.ok()) << got.status().ToString();
          ExpectSameBytes(*got, *want, StrCat("dims [", JoinDims(c.dims), "] along ", c.dimension));
        }
      }
    }
  }
}

TEST(SortKeys, HandValues) {
  // Independent of the generic comparator: JAX's f32 sort puts -0 and +0 together in input
  // order and every NaN last in input order; argsort's indices say so.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Array x = Array::FromVector<float>(
      {8}, {1.0f, -nan, 0.0f, -0.0f, nan, -1.0f, 0.0f, -std::numeric_limits<float>::infinity()});
  Array iota = Array::FromVector<int64_t>({8}, {0, 1, 2, 3, 4, 5, 6, 7});
  const Array* in[] = {&x, &iota};
  Comparator c;
  c.keys = {JaxFloatKey(0, 0x7fc00000)};
  std::vector<Array> r = *Sort(in, 0, c);
  auto idx = r[1].values<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(idx.begin(), idx.end()), (std::vector<int64_t>{7, 5, 2, 3, 6, 0, 1, 4}));
  EXPECT_TRUE(std::signbit(r[0].values<float>()[3]));  // the -0.0 kept its bits
  // Descending (compare(b, a)): ties still in input order.
  c.keys = {JaxFloatKey(0, 0x7fc00000, 0, kGt)};
  r = *Sort(in, 0, c);
  idx = r[1].values<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(idx.begin(), idx.end()), (std::vector<int64_t>{1, 4, 0, 2, 3, 6, 5, 7}));
}

TEST(SortKeys, SupportedOnlyWhenTheOrderIsKnown) {
  const std::vector<DType> f32{DType::kF32}, s32{DType::kS32};
  EXPECT_TRUE(SortKeysSupported(std::vector<SortKey>{JaxFloatKey(0, 0x7fc00000)}, f32));
  EXPECT_FALSE(SortKeysSupported(std::vector<SortKey>{}, f32));
  EXPECT_FALSE(SortKeysSupported(std::vector<SortKey>{Key(1, kLt)}, f32));  // no operand 1
  EXPECT_FALSE(SortKeysSupported(std::vector<SortKey>{Key(0, ComparisonDirection::kLe)}, s32));
  EXPECT_FALSE(SortKeysSupported(std::vector<SortKey>{Key(0, kLt, ComparisonType::kTotalOrder)}, s32));
  EXPECT_FALSE(SortKeysSupported(std::vector<SortKey>{Key(0, kLt, ComparisonType::kSigned)}, f32));
  // A zero constant that is not a zero; a canonicalized integer.
  EXPECT_FALSE(SortKeysSupported(std::vector<SortKey>{JaxFloatKey(0, 0x7fc00000, 0x3f800000)}, f32));
  SortKey canonical_int = JaxFloatKey(0, 0x7fc00000);
  canonical_int.type = ComparisonType::kNone;
  EXPECT_FALSE(SortKeysSupported(std::vector<SortKey>{canonical_int}, s32));
  // FLOAT on floats: alone (NaN rows fall back), never with other keys.
  EXPECT_TRUE(SortKeysSupported(std::vector<SortKey>{Key(0, kLt)}, f32));
  EXPECT_FALSE(
      SortKeysSupported(std::vector<SortKey>{Key(0, kLt), Key(1, kLt)}, std::vector<DType>{DType::kF32, DType::kS32}));
  EXPECT_FALSE(SortKeysSupported(std::vector<SortKey>{Key(0, kLt)}, std::vector<DType>{DType::kC64}));
}

// ---- top-k ----

// The reference: every row fully stable-sorted by its total-order key (descending for largest),
// the first k kept.
void CheckTopK(const Array& in, int64_t k, bool largest) {
  const DType t = in.dtype();
  const int bytes = static_cast<int>(DTypeSize(t));
  const int64_t n = in.dims().back();
  const int64_t rows = n == 0 ? 0 : in.num_elements() / n;
  StatusOr<std::pair<Array, Array>> got = TopK(in, k, largest);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  // Rows spread over threads give the same bytes.
  StatusOr<std::pair<Array, Array>> threaded = TopK(in, k, largest, 3);
  ASSERT_TRUE(threaded.ok()) << threaded.status().ToString();
  EXPECT_EQ(threaded->first, got->first);
  EXPECT_EQ(threaded->second, got->second);
  auto idx = got->second.values<int32_t>();
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<std::pair<__int128, int32_t>> order;
    for (int64_t j = 0; j < n; ++j) {
      const uint64_t b = Bits(in.data() + (r * n + j) * bytes, bytes);
      const __int128 key = IsFloating(t) ? TotalOrder(b, bytes) : IntegerValue(b, t, ComparisonType::kNone);
      order.emplace_back(key, static_cast<int32_t>(j));
    }
    std::stable_sort(order.begin(), order.end(), [largest](const auto& a, const auto& b) {
      return largest ? a.first > b.first : a.first < b.first;
    });
    for (int64_t j = 0; j < k; ++j) {
      ASSERT_EQ(idx[r * k + j], order[j].second) << "row " << r << " rank " << j << " k=" << k << " n=" << n;
      EXPECT_EQ(Bits(got->first.data() + (r * k + j) * bytes, bytes),
                Bits(in.data() + (r * n + order[j].second) * bytes, bytes));
    }
  }
}

TEST(TopKSelect, MatchesFullStableSort) {
  for (DType t : {DType::kF32, DType::kBF16, DType::kF64, DType::kS32, DType::kU8, DType::kS64, DType::kPred}) {
    for (int64_t n : {1, 9, 300, 5000}) {
      Array in = RandomArray(t, {3, n}, 30 + static_cast<uint32_t>(n));
      for (int64_t k : std::vector<int64_t>{0, 1, 2, 8, 64, 65, 200, n - 1, n}) {
        if (k < 0 || k > n) continue;
        for (bool largest : {true, false}) {
          SCOPED_TRACE(StrCat(DTypeName(t), " n=", n, " k=", k, largest ? " largest" : " smallest"));
          CheckTopK(in, k, largest);
        }
      }
    }
  }
}

TEST(TopKSelect, AdversarialOrdersAndRanks) {
  // Ascending and descending rows (every element a new candidate, or none), all equal, rank 3.
  std::vector<float> up(4000), down(4000), same(4000, 2.0f);
  for (int i = 0; i < 4000; ++i) {
    up[i] = static_cast<float>(i % 1000);
    down[i] = -static_cast<float>(i);
  }
  for (const std::vector<float>& v : {up, down, same}) {
    Array in = Array::FromVector<float>({4000}, v);
    for (int64_t k : {1, 8, 64, 100, 3999}) {
      CheckTopK(in, k, true);
      CheckTopK(in, k, false);
    }
  }
  CheckTopK(RandomArray(DType::kF32, {2, 3, 700}, 40), 16, true);
  CheckTopK(RandomArray(DType::kBF16, {40, 1000}, 42), 10, false);  // over threads
  CheckTopK(RandomArray(DType::kF32, {2, 0}, 41), 0, true);
}

TEST(TopKSelect, HandValues) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Array in = Array::FromVector<float>({7}, {0.0f, -0.0f, nan, 3.0f, -nan, 3.0f, -1.0f});
  std::pair<Array, Array> r = *TopK(in, 4, true);
  auto idx = r.second.values<int32_t>();
  EXPECT_EQ(std::vector<int32_t>(idx.begin(), idx.end()), (std::vector<int32_t>{2, 3, 5, 0}));
  r = *TopK(in, 3, false);
  idx = r.second.values<int32_t>();
  EXPECT_EQ(std::vector<int32_t>(idx.begin(), idx.end()), (std::vector<int32_t>{4, 6, 1}));
  EXPECT_FALSE(TopK(in, 8, true).ok());
  EXPECT_FALSE(TopK(in, -1, true).ok());
}

}  // namespace
}  // namespace xs::kernels
