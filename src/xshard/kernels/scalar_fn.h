// How kernels that take a computation (reduce, reduce-window, select-and-scatter, scatter, sort,
// map) receive it: a recognized binary op they run in a typed loop, or a general scalar function
// the caller builds from the computation (the executor compiles the HLO computation into one).
#ifndef XSHARD_KERNELS_SCALAR_FN_H_
#define XSHARD_KERNELS_SCALAR_FN_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/ir/attributes.h"

namespace xs::kernels {

// Reads one element through each pointer of `args` and writes one element through each pointer
// of `results` (dtypes are the computation's parameter / result types). `results` may alias
// `args`: an implementation must read all args before writing.
using ScalarFn =
    std::function<Status(std::span<const std::byte* const> args, std::span<std::byte* const> results)>;

// A combiner of (accumulator / old value, new value) pairs. The typed kinds apply to one operand
// of one dtype: kOverwrite returns the new value (scatter's "set"), the others are XLA's
// add / multiply / maximum / minimum / and / or. kGeneric calls `fn` with 2N args (the N
// accumulators, then the N new values) and N results.
enum class CombineKind { kGeneric, kAdd, kMultiply, kMaximum, kMinimum, kAnd, kOr, kOverwrite };

// The argmax / argmin reducer of (value, index) pairs that jnp.argmax / argmin lower to, with
// (a, ai) the accumulator pair (parameters 0, 1) and (b, bi) the new pair (parameters 2, 3):
//   take_a = direction(a, b) || (nan_first && a != a)
//   value  = take_a ? a : b
//   index  = (take_a || (tie_lower_index && a == b && ai < bi)) ? ai : bi
// with XLA's default comparisons of the value and index types. Reduce runs the form JAX emits
// (kGt / kLt, ties to the lower index, the NaN test on floats, s32 / s64 indices) as a typed loop
// with exactly these selects, bit for bit with the reducer computation; other forms call `fn`.
struct ArgSelect {
  ComparisonDirection direction = ComparisonDirection::kGt;  // kGt, kGe, kLt or kLe
  bool nan_first = true;
  bool tie_lower_index = true;
};

struct Combiner {
  CombineKind kind = CombineKind::kGeneric;
  ScalarFn fn;  // required for kGeneric, ignored otherwise
  // kGeneric reducers of two operands that are an ArgSelect (Reduce's fast path; `fn` is still
  // required: other kernels and unsupported dtypes call it).
  std::optional<ArgSelect> arg_select = std::nullopt;
};

// One key of a recognized lexicographic sort comparator: `compare(v(a), v(b))` with a strict
// direction (kLt ascending, kGt descending) on the elements a, b of operand `operand`, where v is
// the identity or, with `canonical`, JAX's float canonicalization
// `select(ne(x, x), NaN, select(eq(x, Z), Z, x))` (the constants' bit patterns kept, widened).
struct SortKey {
  int operand = 0;
  ComparisonDirection direction = ComparisonDirection::kLt;
  ComparisonType type = ComparisonType::kNone;  // compare's type= (kNone: the dtype's default)
  bool canonical = false;
  uint64_t nan_bits = 0, zero_bits = 0;  // with `canonical`: NaN's and Z's bits
};

// A sort comparator: a recognized `compare(p[2k], p[2k+1])` on operand `key` (fast path), a
// recognized lexicographic order on `keys` (JAX's comparators: keys[0] first, the next key
// breaking its ties, ...), or a general function of 2N args (a and b of operand 0, a and b of
// operand 1, ...) -> pred.
struct Comparator {
  std::optional<ComparisonDirection> direction;  // set: the single-compare fast path
  ComparisonType type = ComparisonType::kNone;
  int key = 0;
  std::vector<SortKey> keys;  // non-empty: the lexicographic fast path (direction unset)
  ScalarFn fn;
};

}  // namespace xs::kernels

#endif  // XSHARD_KERNELS_SCALAR_FN_H_
