// Internal helpers shared by the shape_inference*.cc files (not part of the public API).
#ifndef XSHARD_IR_SHAPE_INFERENCE_UTIL_H_
#define XSHARD_IR_SHAPE_INFERENCE_UTIL_H_

#include <cstdint>
#include <span>
#include <string_view>

#include "xshard/base/status.h"
#include "xshard/core/shape.h"

namespace xs::shape_inference {

// Error "<what> must be an array, but is (f32[], s32[])" unless `shape` is an array.
Status ExpectArray(const Shape& shape, std::string_view what);
// The wider of two floating types (f32 over bf16); `a` when they are not both floating.
DType HigherPrecision(DType a, DType b);
// `shape` with a new element type, keeping its bounded-dynamic dims, without layout.
Shape WithDTypeKeepDynamic(const Shape& shape, DType dtype);
// Each of `dims` in [0, rank) (and, with `unique`, no repeats); messages name `what` and `shape`.
Status CheckDimsInRange(std::span<const int64_t> dims, int64_t rank, std::string_view what,
                        const Shape& shape, bool unique);
// Strictly increasing.
Status CheckSortedUnique(std::span<const int64_t> dims, std::string_view what);
// A permutation of 0..n-1.
bool IsPermutation(std::span<const int64_t> perm, int64_t n);
// XLA's bit width: pred 1, s4 4, f32 32, c64 64.
inline int BitWidth(DType t) { return t == DType::kPred ? 1 : DTypeBitWidth(t); }
// True when `dims` contains `d`.
inline bool Contains(std::span<const int64_t> dims, int64_t d) {
  for (int64_t x : dims) {
    if (x == d) return true;
  }
  return false;
}

}  // namespace xs::shape_inference

#endif  // XSHARD_IR_SHAPE_INFERENCE_UTIL_H_
