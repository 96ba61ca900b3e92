// reduce / reduce-window / select-and-scatter, gather / scatter and sort against hand values,
// values JAX 0.10.2 printed on CPU (see each test) and the typed paths against the generic ones.
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>

#include "gtest/gtest.h"
#include "xshard/kernels/gather_scatter.h"
#include "xshard/kernels/parallel.h"
#include "xshard/kernels/reduce.h"
#include "xshard/kernels/sort.h"

namespace xs::kernels {
namespace {

template <typename T>
std::vector<T> Values(const Array& a) {
  auto v = a.values<T>();
  return std::vector<T>(v.begin(), v.end());
}

Array F32(std::vector<int64_t> dims, std::vector<float> v) { return Array::FromVector<float>(std::move(dims), v); }

Array Counting(std::vector<int64_t> dims) {
  std::vector<float> v(static_cast<size_t>(Product(dims)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return F32(std::move(dims), v);
}

// (value f32, index s32) pairs: the larger value, the earlier pair on ties.
ScalarFn ArgmaxFn() {
  return [](std::span<const std::byte* const> a, std::span<std::byte* const> r) {
    float av, bv;
    int32_t ai, bi;
    std::memcpy(&av, a[0], 4);
    std::memcpy(&ai, a[1], 4);
    std::memcpy(&bv, a[2], 4);
    std::memcpy(&bi, a[3], 4);
    const bool take_b = bv > av;
    std::memcpy(r[0], take_b ? &bv : &av, 4);
    std::memcpy(r[1], take_b ? &bi : &ai, 4);
    return OkStatus();
  };
}

// A generic f32 add combiner through the scalar-function path.
ScalarFn AddFn() {
  return [](std::span<const std::byte* const> a, std::span<std::byte* const> r) {
    float x, y;
    std::memcpy(&x, a[0], 4);
    std::memcpy(&y, a[1], 4);
    const float s = x + y;
    std::memcpy(r[0], &s, 4);
    return OkStatus();
  };
}

TEST(Reduce, SumOverEachDimMatchesHandValuesAndGenericPath) {
  Array a = Counting({2, 3, 4});
  Array zero = Array::Scalar<float>(0.0f);
  const Array* in[] = {&a};
  const Array* init[] = {&zero};
  // Sum over dims {0, 2}: for j, sum_i sum_k (12 i + 4 j + k) = 2*(0+...+3) + 8*4j + 12*4 = 60 + 32 j.
  std::vector<Array> r = *Reduce(in, init, {0, 2}, {CombineKind::kAdd, nullptr});
  EXPECT_EQ(Values<float>(r[0]), (std::vector<float>{60, 92, 124}));
  for (std::vector<int64_t> dims : std::vector<std::vector<int64_t>>{{0}, {1}, {2}, {0, 1, 2}, {}}) {
    Array typed = (*Reduce(in, init, dims, {CombineKind::kAdd, nullptr}))[0];
    EXPECT_EQ(typed, (*Reduce(in, init, dims, {CombineKind::kGeneric, AddFn()}))[0]);
    EXPECT_EQ(typed, (*ReduceReference(in, init, dims, {CombineKind::kAdd, nullptr}))[0]);
  }
}

// The order reduce.h documents for an f32 / f64 column sum, built from the serial reference: the
// leading `lead` dims (all reduced) are rows, cut into blocks of `block_rows`; block 0 is reduced
// from the init, the others from -0.0, and the block results are added in order.
Array BlockedColumnSumReference(const Array& a, const Array& init, int lead, const std::vector<int64_t>& dims,
                                int64_t block_rows) {
  std::vector<int64_t> rest(a.dims().begin() + lead, a.dims().end());
  int64_t rows = 1, slab = 1;
  for (int d = 0; d < lead; ++d) rows *= a.dims()[d];
  for (int64_t d : rest) slab *= d;
  std::vector<int64_t> bdims;
  for (int64_t d : dims) {
    const int64_t m = d < lead ? 0 : d - lead + 1;
    if (bdims.empty() || bdims.back() != m) bdims.push_back(m);
  }
  Array neg_zero = init;
  neg_zero.SetDouble(0, -0.0);
  std::optional<Array> total;
  const int64_t es = DTypeSize(a.dtype());
  for (int64_t b = 0; b * block_rows < rows; ++b) {
    std::vector<int64_t> shape = {std::min(block_rows, rows - b * block_rows)};
    shape.insert(shape.end(), rest.begin(), rest.end());
    Array block(Shape(a.dtype(), shape));
    std::memcpy(block.data(), a.data() + b * block_rows * slab * es, static_cast<size_t>(block.byte_size()));
    const Array* in[] = {&block};
    const Array* ini[] = {b == 0 ? &init : &neg_zero};
    Array part = (*ReduceReference(in, ini, bdims, {CombineKind::kAdd, nullptr}))[0];
    if (!total) {
      total = part;
      continue;
    }
    for (int64_t k = 0; k < part.num_elements(); ++k) {
      if (a.dtype() == DType::kF64) {
        total->values<double>()[k] = total->values<double>()[k] + part.values<double>()[k];
      } else {
        total->values<float>()[k] = total->values<float>()[k] + part.values<float>()[k];
      }
    }
  }
  return *total;
}

// Large typed reductions of the minor dim split the kept major rows over threads; each output
// combines its inputs in the serial order, so the results are the serial ones bit for bit (row
// blocks of uneven sizes). f32 / f64 column sums run their blocks of rows on the threads, in the
// order of BlockedColumnSumReference on any thread count. The other shapes run in one call.
TEST(Reduce, SplitOverThreadsMatchesOneThreadBitForBit) {
  struct Case {
    DType t;
    std::vector<int64_t> in_dims, dims;
    CombineKind kind;
    int64_t block_rows = 0;  // a column sum in blocks of this many rows (0: serial order)
  };
  const Case cases[] = {
      {DType::kF32, {601, 1000}, {1}, CombineKind::kAdd},  // row sums: 12 blocks of 50-51 rows
      {DType::kF32, {5, 300, 300}, {1, 2}, CombineKind::kMinimum},
      {DType::kBF16, {1030, 512}, {1}, CombineKind::kAdd},
      {DType::kF64, {900, 300}, {1}, CombineKind::kMaximum},
      {DType::kS32, {300, 1000}, {1}, CombineKind::kMultiply},
      {DType::kS32, {1024, 600}, {0}, CombineKind::kAdd},      // integer column sums: one call
      {DType::kF32, {300, 600}, {0}, CombineKind::kAdd},       // one block: serial
      {DType::kF32, {1024, 600}, {0}, CombineKind::kMaximum},  // column maxima: one call
      // Column sums in blocks of ceil(2^18 / slab) rows.
      {DType::kF32, {1024, 600}, {0}, CombineKind::kAdd, 437},       // x.sum(0): 3 blocks
      {DType::kF32, {64, 64, 70}, {0, 1}, CombineKind::kAdd, 3745},  // batch statistics: 2
      {DType::kF64, {3000, 100}, {0}, CombineKind::kAdd, 2622},      // 2 blocks
      {DType::kF32, {1000, 8, 50}, {0, 2}, CombineKind::kAdd, 656},  // minor dim reduced too
      {DType::kF32, {9, 2, 3000}, {0, 1}, CombineKind::kAdd, 88},    // 18 rows of 3000, 1 block
  };
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-3, 3);
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << DTypeName(c.t) << " " << Product(c.in_dims));
    Array a(Shape(c.t, c.in_dims));
    for (int64_t i = 0; i < a.num_elements(); ++i) a.SetDouble(i, c.t == DType::kS32 ? (i % 3) - 1 : u(rng));
    Array init = Array::Scalar<float>(0.0f);
    if (c.t != DType::kF32) init = init.Convert(c.t);
    if (c.kind == CombineKind::kMultiply) init.SetDouble(0, 1);
    const Array* in[] = {&a};
    const Array* inits[] = {&init};
    const Array serial = (*Reduce(in, inits, c.dims, {c.kind, nullptr}))[0];
    ScopedDeviceThreadShare share({.threads = 3, .concurrent = false});
    const Array split = (*Reduce(in, inits, c.dims, {c.kind, nullptr}))[0];
    ASSERT_EQ(split.byte_size(), serial.byte_size());
    EXPECT_EQ(std::memcmp(split.data(), serial.data(), static_cast<size_t>(serial.byte_size())), 0);
    if (c.block_rows == 0) {
      EXPECT_EQ(serial, (*ReduceReference(in, inits, c.dims, {c.kind, nullptr}))[0]);
      continue;
    }
    const int lead = c.dims[0] == 0 && c.dims.size() > 1 && c.dims[1] == 1 ? 2 : 1;
    const Array blocked = BlockedColumnSumReference(a, init, lead, c.dims, c.block_rows);
    ASSERT_EQ(blocked.byte_size(), serial.byte_size());
    EXPECT_EQ(std::memcmp(blocked.data(), serial.data(), static_cast<size_t>(serial.byte_size())), 0);
    // And it is the sum: within rounding of the serial order's (sums of up to 4096 values in
    // [-3, 3]).
    const Array in_order = (*ReduceReference(in, inits, c.dims, {c.kind, nullptr}))[0];
    for (int64_t k = 0; k < serial.num_elements(); ++k) {
      ASSERT_NEAR(serial.GetDouble(k), in_order.GetDouble(k), 1e-2) << k;
    }
  }
}

TEST(Reduce, MaxPropagatesNaN) {
  Array a = F32({4}, {1.0f, std::numeric_limits<float>::quiet_NaN(), 3.0f, 2.0f});
  Array init = Array::Scalar<float>(-std::numeric_limits<float>::infinity());
  const Array* in[] = {&a};
  const Array* ini[] = {&init};
  EXPECT_TRUE(std::isnan(Values<float>((*Reduce(in, ini, {0}, {CombineKind::kMaximum, nullptr}))[0])[0]));
}

TEST(Reduce, TwoOperandArgmaxThroughScalarFunction) {
  // reduce((values, indices), (-inf, 0)) with "keep the larger value, the first index on ties".
  Array v = F32({2, 3}, {1, 7, 7, 5, 2, 9});
  Array idx = Array::FromVector<int32_t>({2, 3}, {0, 1, 2, 0, 1, 2});
  Array vi = Array::Scalar<float>(-1e30f), ii = Array::Scalar<int32_t>(0);
  const Array* in[] = {&v, &idx};
  const Array* init[] = {&vi, &ii};
  ScalarFn argmax = ArgmaxFn();
  std::vector<Array> r = *Reduce(in, init, {1}, {CombineKind::kGeneric, argmax});
  EXPECT_EQ(Values<float>(r[0]), (std::vector<float>{7, 9}));
  EXPECT_EQ(Values<int32_t>(r[1]), (std::vector<int32_t>{1, 2}));
}

TEST(ReduceWindow, AveragePoolSumsAndPaddedMax) {
  Array a = Counting({4, 4});
  Array zero = Array::Scalar<float>(0.0f);
  const Array* in[] = {&a};
  const Array* init[] = {&zero};
  Window w;
  w.dims = {{2, 2, 0, 0, 1, 1, false}, {2, 2, 0, 0, 1, 1, false}};
  EXPECT_EQ(Values<float>((*ReduceWindow(in, init, w, {CombineKind::kAdd, nullptr}))[0]),
            (std::vector<float>{10, 18, 42, 50}));
  // 1-D max over [0,1,2,3] with window 3, stride 1, padding 1 each side: [1, 2, 3, 3].
  Array v = Counting({4});
  Array ninf = Array::Scalar<float>(-1e30f);
  const Array* vin[] = {&v};
  const Array* vinit[] = {&ninf};
  Window w1;
  w1.dims = {{3, 1, 1, 1, 1, 1, false}};
  EXPECT_EQ(Values<float>((*ReduceWindow(vin, vinit, w1, {CombineKind::kMaximum, nullptr}))[0]),
            (std::vector<float>{1, 2, 3, 3}));
}

// A window that is a prefix scan along `d` of a rank-3 input (JAX's cumsum lowering), with a
// window `extra` elements wider than the dim (still a scan).
Window ScanWindow(int d, int64_t len, int64_t extra = 0) {
  Window w;
  w.dims.assign(3, WindowDim{});
  w.dims[d].size = len + extra;
  w.dims[d].pad_low = len + extra - 1;
  return w;
}

TEST(ReduceWindow, CumulativeWindowsGiveEachPrefixFoldedInOrder) {
  // Values over seven decades, so a fold in any other order rounds differently.
  const std::vector<int64_t> dims = {3, 50, 4};
  std::vector<float> v(600);
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = std::sin(static_cast<float>(i) * 1.7f) * std::pow(10.0f, static_cast<float>(i % 7) - 3.0f);
  }
  Array x = F32(dims, v);
  Array zero = Array::Scalar<float>(0.0f);
  const Array* in[] = {&x};
  const Array* init[] = {&zero};
  const int64_t stride[3] = {200, 4, 1};
  for (int d = 0; d < 3; ++d) {
    for (int64_t extra : {int64_t{0}, int64_t{13}}) {
      const Window w = ScanWindow(d, dims[d], extra);
      ASSERT_EQ(PrefixScanDim(dims, w), d);
      for (const Combiner& add : {Combiner{CombineKind::kAdd, nullptr}, Combiner{CombineKind::kGeneric, AddFn()}}) {
        const std::vector<float> got = Values<float>((*ReduceWindow(in, init, w, add))[0]);
        ASSERT_EQ(got.size(), v.size());
        for (int64_t i = 0; i < 600; ++i) {
          const int64_t pos = (i / stride[d]) % dims[d];
          float acc = 0.0f;
          for (int64_t j = 0; j <= pos; ++j) acc += v[static_cast<size_t>(i - (pos - j) * stride[d])];
          ASSERT_EQ(got[static_cast<size_t>(i)], acc) << "dim " << d << " element " << i;
        }
      }
    }
  }
  // Two operands (JAX's cummax with its index): the larger value, the earlier index on ties.
  std::vector<int32_t> idx(600);
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int32_t>((i / 4) % 50);
  Array ix = Array::FromVector<int32_t>(dims, idx);
  Array ninf = Array::Scalar<float>(-std::numeric_limits<float>::infinity());
  Array none = Array::Scalar<int32_t>(-1);
  const Array* in2[] = {&x, &ix};
  const Array* init2[] = {&ninf, &none};
  ScalarFn argmax = ArgmaxFn();
  std::vector<Array> r = *ReduceWindow(in2, init2, ScanWindow(1, 50), {CombineKind::kGeneric, argmax});
  const std::vector<float> best = Values<float>(r[0]);
  const std::vector<int32_t> at = Values<int32_t>(r[1]);
  for (int64_t a = 0; a < 3; ++a) {
    for (int64_t c = 0; c < 4; ++c) {
      float bv = -std::numeric_limits<float>::infinity();
      int32_t bi = -1;
      for (int64_t j = 0; j < 50; ++j) {
        const size_t i = static_cast<size_t>(a * 200 + j * 4 + c);
        if (v[i] > bv) bv = v[i], bi = static_cast<int32_t>(j);
        ASSERT_EQ(best[i], bv);
        ASSERT_EQ(at[i], bi);
      }
    }
  }
}

// The typed window loop (rows of the minor dim for NHWC pooling, else one element at a time)
// against the generic combiner's window walk, bit for bit: padding, strides, both dilations.
TEST(ReduceWindow, TypedWindowsMatchTheGenericWalkBitForBit) {
  const std::vector<int64_t> dims = {2, 7, 9, 5};
  std::vector<float> v(630);
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = std::cos(static_cast<float>(i) * 0.37f) * std::pow(10.0f, static_cast<float>(i % 5) - 2.0f);
  }
  Array x = F32(dims, v);
  Array zero = Array::Scalar<float>(0.0f);
  const Array* in[] = {&x};
  const Array* init[] = {&zero};
  auto window = [](std::vector<WindowDim> d) {
    Window w;
    w.dims = std::move(d);
    return w;
  };
  const Window windows[] = {
      // 3x3 max-pool-like, stride 2, SAME padding (minor dim untouched: rows of 5).
      window({{1, 1, 0, 0, 1, 1, false}, {3, 2, 1, 1, 1, 1, false}, {3, 2, 1, 1, 1, 1, false}, {1, 1, 0, 0, 1, 1, false}}),
      // Every dim windowed, base and window dilation, uneven padding.
      window({{2, 1, 0, 1, 1, 1, false}, {2, 1, 1, 0, 2, 1, false}, {3, 2, 0, 2, 1, 2, false}, {2, 1, 1, 1, 1, 1, false}}),
  };
  for (size_t k = 0; k < 2; ++k) {
    const std::vector<float> typed = Values<float>((*ReduceWindow(in, init, windows[k], {CombineKind::kAdd, nullptr}))[0]);
    const std::vector<float> walked = Values<float>((*ReduceWindow(in, init, windows[k], {CombineKind::kGeneric, AddFn()}))[0]);
    ASSERT_EQ(typed.size(), walked.size()) << "window " << k;
    ASSERT_FALSE(typed.empty());
    for (size_t i = 0; i < typed.size(); ++i) ASSERT_EQ(typed[i], walked[i]) << "window " << k << " element " << i;
  }
  // Big enough for the typed loop to split its outputs over threads (2^18 combines and more):
  // blocks of outputs on 3 threads give the generic walk's values too.
  std::vector<float> big(4 * 30 * 30 * 64);
  for (size_t i = 0; i < big.size(); ++i) big[i] = std::sin(static_cast<float>(i) * 0.011f) * 3.0f;
  Array xb = F32({4, 30, 30, 64}, big);
  const Array* inb[] = {&xb};
  ScopedDeviceThreadShare share({.threads = 3, .concurrent = false});
  for (size_t k = 0; k < 2; ++k) {
    const std::vector<float> typed = Values<float>((*ReduceWindow(inb, init, windows[k], {CombineKind::kAdd, nullptr}))[0]);
    const std::vector<float> walked = Values<float>((*ReduceWindow(inb, init, windows[k], {CombineKind::kGeneric, AddFn()}))[0]);
    ASSERT_EQ(typed.size(), walked.size()) << "window " << k;
    for (size_t i = 0; i < typed.size(); ++i) ASSERT_EQ(typed[i], walked[i]) << "big, window " << k << " element " << i;
  }
}

// A suffix-scan window along `d` (JAX's cumsum(reverse=True), and cumsum's transpose).
Window SuffixWindow(int d, int64_t len, int64_t extra = 0) {
  Window w;
  w.dims.assign(3, WindowDim{});
  w.dims[d].size = len + extra;
  w.dims[d].pad_high = len + extra - 1;
  return w;
}

TEST(ReduceWindow, SuffixWindowsGiveEachSuffixInOnePass) {
  const std::vector<int64_t> dims = {3, 50, 4};
  std::vector<float> v(600);
  std::vector<int32_t> iv(600);
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = std::sin(static_cast<float>(i) * 1.7f) * std::pow(10.0f, static_cast<float>(i % 7) - 3.0f);
    iv[i] = static_cast<int32_t>((i * 7919) % 1000) - 500;
  }
  Array x = F32(dims, v);
  Array xi = Array::FromVector<int32_t>(dims, iv);
  Array zero = Array::Scalar<float>(0.0f), izero = Array::Scalar<int32_t>(3);  // a non-identity init
  Array ninf = Array::Scalar<float>(-std::numeric_limits<float>::infinity());
  const Array* in[] = {&x};
  const Array* iin[] = {&xi};
  const Array* init[] = {&zero};
  const Array* iinit[] = {&izero};
  const Array* minit[] = {&ninf};
  const int64_t stride[3] = {200, 4, 1};
  for (int d = 0; d < 3; ++d) {
    for (int64_t extra : {int64_t{0}, int64_t{13}}) {
      const Window w = SuffixWindow(d, dims[d], extra);
      ASSERT_EQ(SuffixScanDim(dims, w), d);
      ASSERT_EQ(PrefixScanDim(dims, w), std::nullopt);
      const std::vector<float> sum = Values<float>((*ReduceWindow(in, init, w, {CombineKind::kAdd, nullptr}))[0]);
      const std::vector<float> walked =
          Values<float>((*ReduceWindow(in, init, w, {CombineKind::kGeneric, AddFn()}))[0]);
      const std::vector<float> mx = Values<float>((*ReduceWindow(in, minit, w, {CombineKind::kMaximum, nullptr}))[0]);
      const std::vector<int32_t> isum =
          Values<int32_t>((*ReduceWindow(iin, iinit, w, {CombineKind::kAdd, nullptr}))[0]);
      ASSERT_EQ(sum.size(), v.size());
      ASSERT_EQ(isum.size(), v.size());
      for (int64_t i = 0; i < 600; ++i) {
        const int64_t pos = (i / stride[d]) % dims[d];
        double exact = 0.0, magnitude = 0.0;
        float best = -std::numeric_limits<float>::infinity();
        int32_t itotal = 3;
        for (int64_t j = pos; j < dims[d]; ++j) {
          const size_t k = static_cast<size_t>(i + (j - pos) * stride[d]);
          exact += v[k];
          magnitude += std::fabs(v[k]);
          best = std::max(best, v[k]);
          itotal += iv[k];
        }
        const size_t u = static_cast<size_t>(i);
        ASSERT_EQ(isum[u], itotal) << "dim " << d << " element " << i;
        ASSERT_EQ(mx[u], best) << "dim " << d << " element " << i;
        // Float sums are reassociated: within a few ulps of the magnitudes summed, like the walk.
        ASSERT_NEAR(sum[u], exact, 1e-6 * magnitude + 1e-30) << "dim " << d << " element " << i;
        ASSERT_NEAR(walked[u], exact, 1e-6 * magnitude + 1e-30) << "dim " << d << " element " << i;
      }
    }
  }
}

// bf16 / f16 sums of many ones: a reduce in XLA's tree order and a cumulative or pooling window
// (accumulated in f32) count them exactly where a running sum rounded every step would stop at
// 256 (bf16) or 2048 (f16).
TEST(Reduce, NarrowFloatSumsOfManyOnesDoNotStall) {
  for (DType t : {DType::kBF16, DType::kF16}) {
    SCOPED_TRACE(DTypeName(t));
    const int64_t n = 4096;
    Array ones = Array::Full(t, {2, n}, 1.0);
    Array zero = Array::Scalar<float>(0.0f).Convert(t);
    const Array* in[] = {&ones};
    const Array* init[] = {&zero};
    for (const Array& r : {(*Reduce(in, init, {1}, {CombineKind::kAdd, nullptr}))[0],
                           (*ReduceReference(in, init, {1}, {CombineKind::kAdd, nullptr}))[0]}) {
      ASSERT_EQ(r.dtype(), t);
      EXPECT_EQ(r.GetDouble(0), 4096.0);
      EXPECT_EQ(r.GetDouble(1), 4096.0);
    }
    // A cumulative sum (prefix and suffix windows) and a pooling window: each output is its
    // window's exact count rounded once to the narrow type.
    const Array zero3 = zero;
    const Array* init3[] = {&zero3};
    Array ones3 = Array::Full(t, {1, n, 1}, 1.0);
    const Array* in3[] = {&ones3};
    const Window prefix = ScanWindow(1, n), suffix = SuffixWindow(1, n);
    const Array p = (*ReduceWindow(in3, init3, prefix, {CombineKind::kAdd, nullptr}))[0];
    const Array s = (*ReduceWindow(in3, init3, suffix, {CombineKind::kAdd, nullptr}))[0];
    Window pool;
    pool.dims.assign(3, WindowDim{});
    pool.dims[1].size = 1000;
    const Array w = (*ReduceWindow(in3, init3, pool, {CombineKind::kAdd, nullptr}))[0];
    ASSERT_EQ(p.dtype(), t);
    for (int64_t j = 0; j < n; ++j) {
      const double want_p = Array::Scalar<float>(static_cast<float>(j + 1)).Convert(t).GetDouble(0);
      const double want_s = Array::Scalar<float>(static_cast<float>(n - j)).Convert(t).GetDouble(0);
      ASSERT_EQ(p.GetDouble(j), want_p) << j;
      ASSERT_EQ(s.GetDouble(j), want_s) << j;
    }
    ASSERT_EQ(w.num_elements(), n - 999);
    EXPECT_EQ(w.GetDouble(0), Array::Scalar<float>(1000.0f).Convert(t).GetDouble(0));
    // Max stays in the narrow type (exact either way).
    Array ninf = Array::Scalar<float>(-1e4f).Convert(t);
    const Array* minit[] = {&ninf};
    EXPECT_EQ((*Reduce(in, minit, {1}, {CombineKind::kMaximum, nullptr}))[0].GetDouble(0), 1.0);
  }
  // Fused loops leave narrow float sums to Reduce; f32 and max stay fusible.
  EXPECT_FALSE(FindReduceRange(CombineKind::kAdd, DType::kBF16).ok());
  EXPECT_FALSE(FindReduceRange(CombineKind::kMultiply, DType::kF16).ok());
  EXPECT_TRUE(FindReduceRange(CombineKind::kMaximum, DType::kBF16).ok());
  EXPECT_TRUE(FindReduceRange(CombineKind::kAdd, DType::kF32).ok());
}

// bf16 / f16 sums and products of lax.reduce take XLA's CPU values bit for bit: every step
// rounded to the narrow type, after XLA's tree rewrite (windows of 32 along each reduced dim
// longer than 32, the windows' results reduced in turn). Expected values printed by JAX 0.10.2
// on the CPU (jax.jit(lambda v: jax.lax.reduce(v, init, op, dims))); accumulating in f32 would
// give 2050 for the first and 2080 for the second.
TEST(Reduce, NarrowFloatSumsTakeXlaCpuTreeOrderAndRoundEveryStep) {
  auto reduce = [](DType t, const std::vector<int64_t>& dims, const std::vector<std::pair<int64_t, double>>& set,
                   const std::vector<int64_t>& rdims, CombineKind kind = CombineKind::kAdd, double init_value = 0.0,
                   double fill = 1.0) {
    Array x = Array::Full(t, dims, fill);
    for (const auto& [i, v] : set) x.SetDouble(i, v);
    Array init(Shape(t, {}));
    init.SetDouble(0, init_value);
    const Array* in[] = {&x};
    const Array* is[] = {&init};
    Array fast = (*Reduce(in, is, rdims, {kind, nullptr}))[0];
    Array ref = (*ReduceReference(in, is, rdims, {kind, nullptr}))[0];
    std::vector<double> out;
    for (int64_t i = 0; i < fast.num_elements(); ++i) {
      EXPECT_EQ(fast.GetDouble(i), ref.GetDouble(i)) << i;
      out.push_back(fast.GetDouble(i));
    }
    return out;
  };
  using V = std::vector<double>;
  const DType f16 = DType::kF16, bf16 = DType::kBF16;
  // f16 2048 followed by ones: at most 32 elements reduce in order (2048 + 1 rounds back to 2048).
  EXPECT_EQ(reduce(f16, {3}, {{0, 2048}}, {0}), V{2048});
  EXPECT_EQ(reduce(f16, {32}, {{0, 2048}}, {0}), V{2048});
  EXPECT_EQ(reduce(f16, {33}, {{0, 2048}}, {0}), V{2064});
  EXPECT_EQ(reduce(f16, {48}, {{0, 2048}}, {0}), V{2072});
  EXPECT_EQ(reduce(f16, {64}, {{0, 2048}}, {0}), V{2080});
  EXPECT_EQ(reduce(f16, {65}, {{0, 2048}}, {0}), V{2096});
  EXPECT_EQ(reduce(f16, {100}, {{0, 2048}}, {0}), V{2130});
  EXPECT_EQ(reduce(f16, {129}, {{0, 2048}}, {0}), V{2160});
  EXPECT_EQ(reduce(f16, {1000}, {{0, 2048}}, {0}), V{3028});
  EXPECT_EQ(reduce(f16, {33}, {{7, 2048}}, {0}), V{2072});
  EXPECT_EQ(reduce(f16, {33}, {{15, 2048}}, {0}), V{2080});
  EXPECT_EQ(reduce(f16, {33}, {{32, 2048}}, {0}), V{2080});
  // Several reduced dims, and a reduced major dim.
  EXPECT_EQ(reduce(f16, {40, 50}, {{0, 2048}}, {0, 1}), V{3548});
  EXPECT_EQ(reduce(f16, {3, 70, 40}, {{0, 2048}, {2800, 2048}, {2800 + 5 * 40 + 3, -1000}, {5600, 2048}}, {1, 2}),
            (V{4468, 3744, 4468}));
  EXPECT_EQ(reduce(f16, {70, 3}, {{0, 2048}, {1, 2048}, {2, 2048}}, {0}), (V{2100, 2100, 2100}));
  // bf16, an init other than 0 (counted once per window, as XLA does), products.
  EXPECT_EQ(reduce(bf16, {3}, {{0, 256}}, {0}), V{256});
  EXPECT_EQ(reduce(bf16, {1000}, {{0, 256}}, {0}), V{1232});
  EXPECT_EQ(reduce(bf16, {1000}, {{0, 256}}, {0}, CombineKind::kAdd, 3.0), V{1336});
  EXPECT_EQ(reduce(f16, {100}, {}, {0}, CombineKind::kMultiply, 1.0, 1.01), V{2.62890625});
  EXPECT_EQ(reduce(bf16, {100}, {}, {0}, CombineKind::kMultiply, 1.0, 1.01), V{2.03125});
  // An empty reduced dim next to a long one: the init.
  EXPECT_EQ(reduce(f16, {0, 100, 2}, {}, {0, 1}, CombineKind::kAdd, 5.0), (V{5, 5}));
  EXPECT_EQ(reduce(bf16, {3, 0}, {}, {0}, CombineKind::kAdd, 2.0), V{});
}

TEST(ReduceWindow, OnlyWindowsCoveringEachWholePrefixAreScans) {
  const std::vector<int64_t> dims = {4};
  auto window = [](int64_t size, int64_t low, int64_t high, int64_t stride = 1) {
    Window w;
    w.dims = {WindowDim{size, stride, low, high, 1, 1, false}};
    return w;
  };
  EXPECT_EQ(PrefixScanDim(dims, window(4, 3, 0)), 0);
  EXPECT_EQ(PrefixScanDim(dims, window(9, 8, 0)), 0);
  EXPECT_EQ(PrefixScanDim(dims, window(2, 1, 0)), std::nullopt);   // a sliding pair
  EXPECT_EQ(PrefixScanDim(dims, window(4, 0, 3)), std::nullopt);   // a suffix (reverse) scan
  EXPECT_EQ(SuffixScanDim(dims, window(4, 0, 3)), 0);
  EXPECT_EQ(SuffixScanDim(dims, window(9, 0, 8)), 0);
  EXPECT_EQ(SuffixScanDim(dims, window(4, 3, 0)), std::nullopt);  // a prefix scan
  EXPECT_EQ(SuffixScanDim(dims, window(2, 0, 1)), std::nullopt);  // a sliding pair
  EXPECT_EQ(SuffixScanDim(dims, window(4, 0, 3, 2)), std::nullopt);
  EXPECT_EQ(PrefixScanDim(dims, window(4, 3, 0, 2)), std::nullopt);
  EXPECT_EQ(PrefixScanDim(dims, window(1, 0, 0)), std::nullopt);   // no dim reduced
  Window two;
  two.dims = {WindowDim{4, 1, 3, 0, 1, 1, false}, WindowDim{2, 1, 1, 0, 1, 1, false}};
  EXPECT_EQ(PrefixScanDim({4, 2}, two), std::nullopt);              // two dims reduced
  Window dilated = window(4, 3, 0);
  dilated.dims[0].rhs_dilation = 2;
  EXPECT_EQ(PrefixScanDim(dims, dilated), std::nullopt);
  // The scan and the windows that are not one, on [1, 2, 3, 4] by hand.
  Array x = F32({4}, {1, 2, 3, 4});
  Array zero = Array::Scalar<float>(0.0f);
  const Array* in[] = {&x};
  const Array* init[] = {&zero};
  const Combiner add{CombineKind::kAdd, nullptr};
  EXPECT_EQ(Values<float>((*ReduceWindow(in, init, window(4, 3, 0), add))[0]), (std::vector<float>{1, 3, 6, 10}));
  EXPECT_EQ(Values<float>((*ReduceWindow(in, init, window(2, 1, 0), add))[0]), (std::vector<float>{1, 3, 5, 7}));
  EXPECT_EQ(Values<float>((*ReduceWindow(in, init, window(4, 0, 3), add))[0]), (std::vector<float>{10, 9, 7, 4}));
}

TEST(SelectAndScatter, MaxPoolGradientMatchesJax) {
  // jax.grad(sum(maxpool2x2(x) * [[1,2],[3,4]])) on x below -> ties pick the first maximum.
  Array x = F32({4, 4}, {1, 5, 2, 0, 3, 4, 8, 8, 0, 1, 2, 3, 9, 1, 1, 9});
  Array src = F32({2, 2}, {1, 2, 3, 4});
  Array zero = Array::Scalar<float>(0.0f);
  Window w;
  w.dims = {{2, 2, 0, 0, 1, 1, false}, {2, 2, 0, 0, 1, 1, false}};
  ScalarFn ge = [](std::span<const std::byte* const> a, std::span<std::byte* const> r) {
    float x0, x1;
    std::memcpy(&x0, a[0], 4);
    std::memcpy(&x1, a[1], 4);
    const bool b = x0 >= x1;
    std::memcpy(r[0], &b, 1);
    return OkStatus();
  };
  Array g = *SelectAndScatter(x, src, zero, w, ge, {CombineKind::kAdd, nullptr});
  EXPECT_EQ(Values<float>(g), (std::vector<float>{0, 1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 3, 0, 0, 4}));
}

TEST(Gather, BatchingDimsAndClampingMatchJax) {
  // jax.vmap(lambda o, i: o[i]) on o[2,5,3] = arange, i = [[4,0],[1,9]]: gather with
  // operand_batching_dims={0}; index 9 clamps to 4.
  Array op = Counting({2, 5, 3});
  Array idx = Array::FromVector<int32_t>({2, 2, 1}, {4, 0, 1, 9});
  GatherDimensionNumbers dn;
  dn.offset_dims = {2};
  dn.collapsed_slice_dims = {1};
  dn.start_index_map = {1};
  dn.operand_batching_dims = {0};
  dn.start_indices_batching_dims = {0};
  dn.index_vector_dim = 2;
  Array g = *Gather(op, idx, dn, {1, 1, 3});
  EXPECT_EQ(g.dims(), (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ(Values<float>(g), (std::vector<float>{12, 13, 14, 0, 1, 2, 18, 19, 20, 27, 28, 29}));
  EXPECT_EQ(g, *GatherReference(op, idx, dn, {1, 1, 3}));
}

TEST(Gather, RowTakeWithImplicitIndexVectorDimMatchesReference) {
  Array op = Counting({5, 4});
  Array idx = Array::FromVector<int64_t>({3}, {3, -2, 1});
  GatherDimensionNumbers dn;
  dn.offset_dims = {1};
  dn.collapsed_slice_dims = {0};
  dn.start_index_map = {0};
  dn.index_vector_dim = 1;  // == rank: implicit trailing 1
  Array g = *Gather(op, idx, dn, {1, 4});
  EXPECT_EQ(Values<float>(g), (std::vector<float>{12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(g, *GatherReference(op, idx, dn, {1, 4}));
}

TEST(Scatter, AddAccumulatesDuplicatesAndDropsOutOfRangeUpdates) {
  // jnp.zeros(5).at[[1,3,1,7]].add([1,2,4,8], mode='drop') -> [0,5,0,2,0].
  Array op = F32({5}, {0, 0, 0, 0, 0});
  Array idx = Array::FromVector<int32_t>({4, 1}, {1, 3, 1, 7});
  Array up = F32({4}, {1, 2, 4, 8});
  ScatterDimensionNumbers dn;
  dn.inserted_window_dims = {0};
  dn.scatter_dims_to_operand_dims = {0};
  dn.index_vector_dim = 1;
  const Array* ops[] = {&op};
  const Array* ups[] = {&up};
  std::vector<Array> r = *Scatter(ops, idx, ups, dn, {CombineKind::kAdd, nullptr});
  EXPECT_EQ(Values<float>(r[0]), (std::vector<float>{0, 5, 0, 2, 0}));
  EXPECT_EQ(r[0], (*Scatter(ops, idx, ups, dn, {CombineKind::kGeneric, AddFn()}))[0]);
  // Overwrite: the later update wins for a duplicate index.
  EXPECT_EQ(Values<float>((*Scatter(ops, idx, ups, dn, {CombineKind::kOverwrite, nullptr}))[0]),
            (std::vector<float>{0, 4, 0, 2, 0}));
}

TEST(Scatter, WindowThatDoesNotFitIsSkippedWhole) {
  Array op = F32({4}, {0, 0, 0, 0});
  Array idx = Array::FromVector<int32_t>({2, 1}, {3, 1});  // window of 2 at 3 does not fit
  Array up = F32({2, 2}, {1, 1, 5, 6});
  ScatterDimensionNumbers dn;
  dn.update_window_dims = {1};
  dn.scatter_dims_to_operand_dims = {0};
  dn.index_vector_dim = 1;
  const Array* ops[] = {&op};
  const Array* ups[] = {&up};
  EXPECT_EQ(Values<float>((*Scatter(ops, idx, ups, dn, {CombineKind::kAdd, nullptr}))[0]),
            (std::vector<float>{0, 5, 6, 0}));
}

TEST(Sort, TotalOrderPutsNaNLastAndCarriesValues) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Array keys = F32({2, 3}, {3, nan, -1, 2, 2, -0.0f});
  Array vals = Array::FromVector<int32_t>({2, 3}, {0, 1, 2, 3, 4, 5});
  const Array* in[] = {&keys, &vals};
  Comparator lt;
  lt.direction = ComparisonDirection::kLt;
  lt.type = ComparisonType::kTotalOrder;
  std::vector<Array> r = *Sort(in, 1, lt);
  std::vector<float> k = Values<float>(r[0]);
  EXPECT_EQ(k[0], -1.0f);
  EXPECT_EQ(k[1], 3.0f);
  EXPECT_TRUE(std::isnan(k[2]));
  EXPECT_EQ(Values<int32_t>(r[1]), (std::vector<int32_t>{2, 0, 1, 5, 3, 4}));  // stable among 2, 2
}

TEST(Sort, GenericComparatorSortsDescendingAlongDim0) {
  Array keys = Array::FromVector<int32_t>({3, 2}, {1, 6, 3, 4, 2, 5});
  const Array* in[] = {&keys};
  Comparator gt;
  gt.fn = [](std::span<const std::byte* const> a, std::span<std::byte* const> r) {
    int32_t x, y;
    std::memcpy(&x, a[0], 4);
    std::memcpy(&y, a[1], 4);
    const bool b = x > y;
    std::memcpy(r[0], &b, 1);
    return OkStatus();
  };
  EXPECT_EQ(Values<int32_t>((*Sort(in, 0, gt))[0]), (std::vector<int32_t>{3, 6, 2, 5, 1, 4}));
}

}  // namespace
}  // namespace xs::kernels
