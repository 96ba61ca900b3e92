// Elementwise CPU kernels with XLA's exact semantics: unary / binary / ternary math, compare,
// convert and bitcast-convert, for every computable dtype. f16 / bf16 compute in f32 and round
// back after each op (as XLA's CPU backend does); so do the narrow types (f8*, f4e2m1fn in f32,
// s2 / s4 / u2 / u4 in s8 / u8: narrow_types.h has their rounding rules). Kernels are looked up once (at plan time) and
// return plain function pointers, so running one costs a call. Each has a naive reference twin.
//
// Integer semantics (XLA): x / 0 = -1 (signed) or all ones (unsigned); x % 0 = x; INT_MIN / -1 =
// INT_MIN and INT_MIN % -1 = 0; shifts by >= the bit width give 0 (shift-right-arithmetic: the
// sign fill); power with a negative exponent is 0 unless the base is 1 (x^0 = 1 = 1^x).
// Float: maximum / minimum propagate NaN and order -0 < +0; compare FLOAT is IEEE (NaN unordered),
// TOTALORDER orders -NaN < -inf < ... < -0 < +0 < ... < +NaN; sign keeps NaN and signed zero.
#ifndef XSHARD_KERNELS_ELEMENTWISE_H_
#define XSHARD_KERNELS_ELEMENTWISE_H_

#include <cstddef>
#include <cstdint>

#include "xshard/base/status.h"
#include "xshard/core/array.h"
#include "xshard/ir/attributes.h"
#include "xshard/ir/opcode.h"

namespace xs::kernels {

// out[i] = f(in[i]) for i in [0, n).
using UnaryKernel = void (*)(const std::byte* in, std::byte* out, int64_t n);
// out[i] = f(a[i], b[i]).
using BinaryKernel = void (*)(const std::byte* a, const std::byte* b, std::byte* out, int64_t n);
// out[i] = f(a[i], b[i], c[i]) (select: a is pred; clamp: a = low, b = x, c = high).
using TernaryKernel = void (*)(const std::byte* a, const std::byte* b, const std::byte* c,
                               std::byte* out, int64_t n);

// The dtype `op` produces from an operand of `operand` dtype: pred for is-finite, the component
// type for real / imag / abs of complex, else `operand`. Error when the op does not apply.
StatusOr<DType> UnaryResultDType(Opcode op, DType operand);

// Unary math ops (abs, negate, exponential, ..., not, popcnt, count-leading-zeros, is-finite,
// real, imag, copy). Error names the op and dtype when unsupported (e.g. "sine" on s32).
StatusOr<UnaryKernel> FindUnaryKernel(Opcode op, DType operand);
// Binary arithmetic / logic (add ... xor, shifts, power, atan2, remainder, maximum, minimum,
// complex). Both operands have dtype `operand`; the result has it too except `complex`
// (f32 -> c64, f64 -> c128).
StatusOr<BinaryKernel> FindBinaryKernel(Opcode op, DType operand);
// shift-left(a, b) | shift-right-logical(a, bits - b) on s32 / u32 / s64 / u64 (bits - b wrapping
// as unsigned; XLA's shift rules, so b > bits gives 0): JAX's rotate_left as one kernel, for fused
// loops. Error for other dtypes.
StatusOr<BinaryKernel> FindRotateLeftKernel(DType operand);
// compare(a, b) -> pred. `type` kNone picks XLA's default for the dtype (FLOAT for floats,
// SIGNED / UNSIGNED for ints). TOTALORDER applies to floats only.
StatusOr<BinaryKernel> FindCompareKernel(ComparisonDirection direction, ComparisonType type,
                                         DType operand);
// convert: any computable dtype to any other (see ConvertScalar in numeric.h for the rules).
StatusOr<UnaryKernel> FindConvertKernel(DType from, DType to);
// The narrow types' wide twin for ops that compute on a wider copy (dot, convolution): f8* and
// f4e2m1fn -> f32, s2 / s4 -> s32, u2 / u4 -> u32 (every value exact); other types unchanged.
DType WidenedDType(DType t);
// A wide op result (f32 from a dot or convolution) rounded to `to` as XLA rounds an op result of
// a narrow float type: f32 -> f16 -> narrow (its f16 normalization); f8e8m0fnu and every other
// pair as FindConvertKernel.
StatusOr<UnaryKernel> FindResultRoundKernel(DType from, DType to);
// select(pred, on_true, on_false) for `dtype`, and clamp(low, x, high).
StatusOr<TernaryKernel> FindSelectKernel(DType dtype);
StatusOr<TernaryKernel> FindClampKernel(DType dtype);

// Reference versions: same semantics, one element at a time through the generic scalar path with
// no chunking or vectorization. Used by tests to check the fast kernels.
StatusOr<Array> UnaryReference(Opcode op, const Array& in);
StatusOr<Array> BinaryReference(Opcode op, const Array& a, const Array& b);
StatusOr<Array> CompareReference(ComparisonDirection direction, ComparisonType type,
                                 const Array& a, const Array& b);
StatusOr<Array> ConvertReference(const Array& in, DType to);

// Results at least this large are better written with StreamCopy than with plain stores: they
// do not fit the caches, and a plain store first reads the destination line from memory.
inline constexpr int64_t kStreamMinBytes = int64_t{4} << 20;
// Copies `bytes` from a cache-resident buffer to `dst` with non-temporal stores where `dst` is
// 16-byte aligned (a plain copy otherwise). The calling thread must call StreamFence() after its
// last StreamCopy and before another thread reads `dst`.
void StreamCopy(std::byte* dst, const std::byte* src, int64_t bytes);
void StreamFence();

// Convenience for tests and small callers: run the fast kernel on whole arrays (shapes must be
// equal; error otherwise).
StatusOr<Array> Unary(Opcode op, const Array& in);
StatusOr<Array> Binary(Opcode op, const Array& a, const Array& b);
StatusOr<Array> Compare(ComparisonDirection direction, ComparisonType type, const Array& a,
                        const Array& b);
StatusOr<Array> Convert(const Array& in, DType to);
// Reinterprets the bits of `in` as `to` with XLA's shape rule: equal element widths keep dims;
// a narrower `to` appends a dim of the width ratio; a wider one drops the last dim (must equal the
// ratio). Types narrower than a byte (s2, s4, u2, u4, f4e2m1fn; one per byte on the host) pack
// little-endian as XLA does: u8 0xab -> u4 [0xb, 0xa].
StatusOr<Array> BitcastConvert(const Array& in, DType to);
// The same into `out` (dtype and dims set, possibly `in`'s own buffer when the widths are equal).
Status BitcastInto(const Array& in, Array& out);
// Elementwise bitcast between two types of one width (a byte copy, or the re-encoding between a
// sign-extended s2 / s4 and u2 / u4 / f4e2m1fn); error for different widths.
StatusOr<UnaryKernel> FindBitcastKernel(DType from, DType to);

}  // namespace xs::kernels

#endif  // XSHARD_KERNELS_ELEMENTWISE_H_
