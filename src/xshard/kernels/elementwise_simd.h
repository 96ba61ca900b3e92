// Vectorized elementwise kernels (Google Highway, runtime dispatch to the CPU's widest target:
// AVX-512, AVX2, SSE4, else the portable baseline). The tables here are consulted by
// FindUnaryKernel & co. before the scalar loops; a null entry means "no vector kernel, use the
// scalar one". Internal to kernels/.
#ifndef XSHARD_KERNELS_ELEMENTWISE_SIMD_H_
#define XSHARD_KERNELS_ELEMENTWISE_SIMD_H_

#include <cstdint>
#include <string>
#include <vector>

#include "xshard/kernels/elementwise.h"

namespace xs::kernels::simd {

// Float storage types with vector kernels (f16 / bf16 compute in f32 and round back per op).
enum class FType : int { kF32, kF64, kBF16, kF16, kCount };

// Unary ops with vector kernels. Transcendentals stay within the ulp bounds asserted by
// elementwise_simd_test.cc against the libm reference; the others are bit-exact.
enum class UOp : int {
  kAbs, kNegate, kSqrt, kRsqrt, kFloor, kCeil, kRoundEven, kRoundAfz, kSign,
  kExp, kExpm1, kLog, kLog1p, kTanh, kLogistic, kErf, kSin, kCos,
  kAtan, kAsin, kAcos, kAsinh, kAcosh, kAtanh, kSinh, kCount
};
// Binary ops with vector kernels (all bit-exact: IEEE ops, XLA's NaN / signed-zero max / min).
enum class BOp : int { kAdd, kSubtract, kMultiply, kDivide, kMaximum, kMinimum, kCount };
// Integer binary ops with vector kernels, on s32 / u32 / s64 / u64 (bit-exact against
// scalar_ops.h: wrapping arithmetic; XLA's shifts, where an amount outside [0, bits) gives 0, or
// the sign for an arithmetic right shift). No 64-bit multiply (no such vector instruction before
// AVX-512DQ: the scalar loop serves it).
// kRotateLeft has no opcode: shift-left(a, b) | shift-right-logical(a, bits - b), with XLA's shift
// rules (fused loops compute JAX's rotate_left, threefry's rounds, as one op).
enum class IOp : int {
  kAdd,
  kSubtract,
  kMultiply,
  kAnd,
  kOr,
  kXor,
  kShiftLeft,
  kShiftRightLogical,
  kShiftRightArithmetic,
  kRotateLeft,
  kCount
};
enum class IType : int { kS32, kU32, kS64, kU64, kCount };
// Converts with vector kernels (bit-exact against ConvertScalar).
enum class CvtOp : int {
  kF32ToBF16, kBF16ToF32, kF32ToF16, kF16ToF32, kF32ToS32, kS32ToF32, kCount
};

struct KernelTable {
  UnaryKernel unary[static_cast<int>(UOp::kCount)][static_cast<int>(FType::kCount)] = {};
  BinaryKernel binary[static_cast<int>(BOp::kCount)][static_cast<int>(FType::kCount)] = {};
  BinaryKernel int_binary[static_cast<int>(IOp::kCount)][static_cast<int>(IType::kCount)] = {};
  // compare type FLOAT, indexed by ComparisonDirection's value and operand type.
  BinaryKernel compare[6][static_cast<int>(FType::kCount)] = {};
  UnaryKernel convert[static_cast<int>(CvtOp::kCount)] = {};
  TernaryKernel select_by_log2_size[4] = {};  // element sizes 1, 2, 4, 8
  TernaryKernel clamp[static_cast<int>(FType::kCount)] = {};
  const char* target = "none";
};

// The table for the best target this CPU supports (resolved once, thread-safe).
const KernelTable& Table();

// The vector kernel for an op and operand dtype, or nullptr when there is none (the caller then
// uses its scalar kernel). `type` of compare must already be resolved (kNone counts as FLOAT).
UnaryKernel FindUnary(Opcode op, DType t);
BinaryKernel FindBinary(Opcode op, DType t);
BinaryKernel FindRotateLeft(DType t);  // IOp::kRotateLeft
BinaryKernel FindCompare(ComparisonDirection direction, ComparisonType type, DType t);
UnaryKernel FindConvert(DType from, DType to);
TernaryKernel FindSelect(DType t);
TernaryKernel FindClamp(DType t);

// Table indices: -1 when the op or dtype has no vector kernel.
int FTypeIndex(DType t);
int UnaryIndex(Opcode op);
int BinaryIndex(Opcode op);
int ITypeIndex(DType t);
int IntBinaryIndex(Opcode op);
int ConvertIndex(DType from, DType to);

// For tests: the targets compiled in and supported by this CPU (best first), their names, and
// a switch that rebuilds Table() for one of them (0 restores the best). Not for concurrent use.
std::vector<int64_t> SupportedTargets();
std::string TargetName(int64_t target);
void UseTargetForTest(int64_t target);

}  // namespace xs::kernels::simd

#endif  // XSHARD_KERNELS_ELEMENTWISE_SIMD_H_
