// FindReduceRange: feeding an array's ranges in order (any cut points) gives Reduce's result bit
// for bit, for kept and reduced inner dims and bf16 per-step rounding.
#include <cstring>
#include <random>

#include "gtest/gtest.h"
#include "xshard/kernels/reduce.h"

namespace xs::kernels {
namespace {

TEST(ReduceRange, RangesInOrderEqualReduce) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<double> u(-2, 2);
  struct Case {
    DType t;
    std::vector<int64_t> dims, reduce;
    CombineKind kind;
  };
  const std::vector<Case> cases = {
      {DType::kF32, {7, 33}, {1}, CombineKind::kAdd},      {DType::kF32, {7, 33}, {0}, CombineKind::kAdd},
      {DType::kBF16, {5, 9, 11}, {0, 2}, CombineKind::kAdd}, {DType::kF32, {4, 6, 5}, {1}, CombineKind::kMaximum},
      {DType::kS32, {300}, {0}, CombineKind::kMultiply},   {DType::kF64, {3, 4}, {}, CombineKind::kMinimum},
  };
  for (const Case& c : cases) {
    Array in(c.t, c.dims);
    for (int64_t i = 0; i < in.num_elements(); ++i) in.SetDouble(i, c.t == DType::kS32 ? (i % 3) - 1 : u(rng));
    Array init(c.t, {});
    init.SetDouble(0, c.kind == CombineKind::kMultiply ? 1 : c.kind == CombineKind::kMaximum ? -10 : 0);
    const Array* ins[] = {&in};
    const Array* inits[] = {&init};
    Combiner comb;
    comb.kind = c.kind;
    std::vector<Array> want = *Reduce(ins, inits, c.reduce, comb);
    ReduceRangeFn fn = *FindReduceRange(c.kind, c.t);
    Array got = want[0];
    const int64_t es = DTypeSize(c.t);
    for (int64_t i = 0; i < got.num_elements(); ++i) std::memcpy(got.data() + i * es, init.data(), es);
    std::vector<char> reduced(c.dims.size(), 0);
    for (int64_t d : c.reduce) reduced[d] = 1;
    std::vector<int64_t> ostride(c.dims.size(), 0);
    int64_t stride = 1;
    for (int d = static_cast<int>(c.dims.size()) - 1; d >= 0; --d) {
      if (!reduced[d]) {
        ostride[d] = stride;
        stride *= c.dims[d];
      }
    }
    for (int64_t begin = 0, step = 1; begin < in.num_elements(); begin += step, step = step * 3 % 17 + 1) {
      const int64_t n = std::min(step, in.num_elements() - begin);
      fn(in.data() + begin * es, got.data(), c.dims, ostride, begin, n);
    }
    EXPECT_EQ(0, std::memcmp(got.data(), want[0].data(), got.byte_size())) << DTypeName(c.t);
  }
  EXPECT_FALSE(FindReduceRange(CombineKind::kAnd, DType::kF32).ok());
}

}  // namespace
}  // namespace xs::kernels
