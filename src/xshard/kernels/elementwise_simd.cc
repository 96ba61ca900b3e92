// Vector unary / binary math kernels, compiled once per Highway target (foreach_target.h) and
// chosen at run time for the CPU; plus the lookups FindUnaryKernel & co. use (see
// elementwise_simd.h). Compare, convert, select and clamp are in elementwise_simd_misc.cc.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "xshard/kernels/elementwise_simd.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "xshard/kernels/elementwise_simd.h"
#include "xshard/kernels/simd_loops-inl.h"
#include "xshard/kernels/simd_math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace xs::kernels::simd::HWY_NAMESPACE {

// Fills the unary and binary entries of `t` with this target's kernels. The SCALAR target has
// none: the scalar loops of elementwise_loops.h serve it.
void FillMath(KernelTable* t) {
  t->target = hwy::TargetName(HWY_TARGET);
#if HWY_TARGET != HWY_SCALAR
  constexpr int kF32 = static_cast<int>(FType::kF32), kF64 = static_cast<int>(FType::kF64);
  constexpr int kBF16 = static_cast<int>(FType::kBF16), kF16 = static_cast<int>(FType::kF16);
#define XS_UNARY(op, Functor, with_f64)                                       \
  {                                                                           \
    auto& row = t->unary[static_cast<int>(UOp::op)];                          \
    row[kF32] = &UnaryLoop<Functor, float>;                                   \
    if (with_f64) row[kF64] = &UnaryLoop<Functor, double>;                    \
    row[kBF16] = &UnaryLoop<Functor, BFloat16>;                               \
    if (kHaveF16) row[kF16] = &UnaryLoop<Functor, Half>;                      \
  }
  XS_UNARY(kAbs, VAbs, true)
  XS_UNARY(kNegate, VNegate, true)
  XS_UNARY(kSqrt, VSqrt, true)
  XS_UNARY(kRsqrt, VRsqrt, true)
  XS_UNARY(kFloor, VFloor, true)
  XS_UNARY(kCeil, VCeil, true)
  XS_UNARY(kRoundEven, VRoundEven, true)
  XS_UNARY(kRoundAfz, VRoundAfz, true)
  XS_UNARY(kSign, VSign, true)
  XS_UNARY(kExp, VExp, true)
  XS_UNARY(kExpm1, VExpm1, true)
  XS_UNARY(kLog, VLog, true)
  XS_UNARY(kLog1p, VLog1p, true)
  XS_UNARY(kTanh, VTanh, true)
  XS_UNARY(kLogistic, VLogistic, true)
  XS_UNARY(kErf, VErf, false)  // the rational approximation is an f32 one
  XS_UNARY(kSin, VSin, true)
  XS_UNARY(kCos, VCos, true)
  XS_UNARY(kAtan, VAtan, true)
  XS_UNARY(kAsin, VAsin, true)
  XS_UNARY(kAcos, VAcos, true)
  XS_UNARY(kAsinh, VAsinh, true)
  XS_UNARY(kAcosh, VAcosh, true)
  XS_UNARY(kAtanh, VAtanh, true)
  XS_UNARY(kSinh, VSinh, true)
#undef XS_UNARY
#define XS_BINARY(op, Functor)                                                \
  {                                                                           \
    auto& row = t->binary[static_cast<int>(BOp::op)];                         \
    row[kF32] = &BinaryLoop<Functor, float>;                                  \
    row[kF64] = &BinaryLoop<Functor, double>;                                 \
    row[kBF16] = &BinaryLoop<Functor, BFloat16>;                              \
    if (kHaveF16) row[kF16] = &BinaryLoop<Functor, Half>;                     \
  }
  XS_BINARY(kAdd, VAdd)
  XS_BINARY(kSubtract, VSubtract)
  XS_BINARY(kMultiply, VMultiply)
  XS_BINARY(kDivide, VDivide)
  XS_BINARY(kMaximum, VMaximum)
  XS_BINARY(kMinimum, VMinimum)
#undef XS_BINARY
  constexpr int kS32 = static_cast<int>(IType::kS32), kU32 = static_cast<int>(IType::kU32);
  constexpr int kS64 = static_cast<int>(IType::kS64), kU64 = static_cast<int>(IType::kU64);
#define XS_INT_BINARY(op, Functor, with_64)                                   \
  {                                                                           \
    auto& row = t->int_binary[static_cast<int>(IOp::op)];                     \
    row[kS32] = &BinaryLoop<Functor, int32_t>;                                \
    row[kU32] = &BinaryLoop<Functor, uint32_t>;                               \
    if (with_64) row[kS64] = &BinaryLoop<Functor, int64_t>;                   \
    if (with_64) row[kU64] = &BinaryLoop<Functor, uint64_t>;                  \
  }
  XS_INT_BINARY(kAdd, VAdd, true)
  XS_INT_BINARY(kSubtract, VSubtract, true)
  XS_INT_BINARY(kMultiply, VMultiply, false)
  XS_INT_BINARY(kAnd, VAnd, true)
  XS_INT_BINARY(kOr, VOr, true)
  XS_INT_BINARY(kXor, VXor, true)
  XS_INT_BINARY(kShiftLeft, VShiftLeft, true)
  XS_INT_BINARY(kShiftRightLogical, VShiftRightLogical, true)
  XS_INT_BINARY(kShiftRightArithmetic, VShiftRightArithmetic, true)
  XS_INT_BINARY(kRotateLeft, VRotateLeft, true)
#undef XS_INT_BINARY
#endif
}

}  // namespace xs::kernels::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <mutex>

#include "hwy/targets.h"

namespace xs::kernels::simd {

HWY_EXPORT(FillMath);

// Defined in elementwise_simd_misc.cc: compare / convert / select / clamp for the chosen target.
void FillMiscForChosenTarget(KernelTable* t);

namespace {

KernelTable Build() {
  KernelTable t;
  HWY_DYNAMIC_DISPATCH(FillMath)(&t);
  FillMiscForChosenTarget(&t);
  return t;
}

KernelTable& MutableTable() {
  static KernelTable table = Build();
  return table;
}

}  // namespace

const KernelTable& Table() { return MutableTable(); }

int FTypeIndex(DType t) {
  switch (t) {
    case DType::kF32: return static_cast<int>(FType::kF32);
    case DType::kF64: return static_cast<int>(FType::kF64);
    case DType::kBF16: return static_cast<int>(FType::kBF16);
    case DType::kF16: return static_cast<int>(FType::kF16);
    default: return -1;
  }
}

int UnaryIndex(Opcode op) {
  switch (op) {
#define XS_CASE(code, uop) \
  case Opcode::code: return static_cast<int>(UOp::uop);
    XS_CASE(kAbs, kAbs) XS_CASE(kNegate, kNegate) XS_CASE(kSqrt, kSqrt) XS_CASE(kRsqrt, kRsqrt)
    XS_CASE(kFloor, kFloor) XS_CASE(kCeil, kCeil) XS_CASE(kRoundNearestEven, kRoundEven)
    XS_CASE(kRoundNearestAfz, kRoundAfz) XS_CASE(kSign, kSign) XS_CASE(kExp, kExp)
    XS_CASE(kExpm1, kExpm1) XS_CASE(kLog, kLog) XS_CASE(kLog1p, kLog1p) XS_CASE(kTanh, kTanh)
    XS_CASE(kLogistic, kLogistic) XS_CASE(kErf, kErf) XS_CASE(kSin, kSin) XS_CASE(kCos, kCos)
    XS_CASE(kAtan, kAtan) XS_CASE(kAsin, kAsin) XS_CASE(kAcos, kAcos) XS_CASE(kAsinh, kAsinh)
    XS_CASE(kAcosh, kAcosh) XS_CASE(kAtanh, kAtanh) XS_CASE(kSinh, kSinh)
#undef XS_CASE
    default: return -1;
  }
}

int BinaryIndex(Opcode op) {
  switch (op) {
    case Opcode::kAdd: return static_cast<int>(BOp::kAdd);
    case Opcode::kSubtract: return static_cast<int>(BOp::kSubtract);
    case Opcode::kMultiply: return static_cast<int>(BOp::kMultiply);
    case Opcode::kDivide: return static_cast<int>(BOp::kDivide);
    case Opcode::kMaximum: return static_cast<int>(BOp::kMaximum);
    case Opcode::kMinimum: return static_cast<int>(BOp::kMinimum);
    default: return -1;
  }
}

int ITypeIndex(DType t) {
  switch (t) {
    case DType::kS32: return static_cast<int>(IType::kS32);
    case DType::kU32: return static_cast<int>(IType::kU32);
    case DType::kS64: return static_cast<int>(IType::kS64);
    case DType::kU64: return static_cast<int>(IType::kU64);
    default: return -1;
  }
}

int IntBinaryIndex(Opcode op) {
  switch (op) {
    case Opcode::kAdd: return static_cast<int>(IOp::kAdd);
    case Opcode::kSubtract: return static_cast<int>(IOp::kSubtract);
    case Opcode::kMultiply: return static_cast<int>(IOp::kMultiply);
    case Opcode::kAnd: return static_cast<int>(IOp::kAnd);
    case Opcode::kOr: return static_cast<int>(IOp::kOr);
    case Opcode::kXor: return static_cast<int>(IOp::kXor);
    case Opcode::kShiftLeft: return static_cast<int>(IOp::kShiftLeft);
    case Opcode::kShiftRightLogical: return static_cast<int>(IOp::kShiftRightLogical);
    case Opcode::kShiftRightArithmetic: return static_cast<int>(IOp::kShiftRightArithmetic);
    default: return -1;
  }
}

int ConvertIndex(DType from, DType to) {
  auto is = [&](DType f, DType t) { return from == f && to == t; };
  if (is(DType::kF32, DType::kBF16)) return static_cast<int>(CvtOp::kF32ToBF16);
  if (is(DType::kBF16, DType::kF32)) return static_cast<int>(CvtOp::kBF16ToF32);
  if (is(DType::kF32, DType::kF16)) return static_cast<int>(CvtOp::kF32ToF16);
  if (is(DType::kF16, DType::kF32)) return static_cast<int>(CvtOp::kF16ToF32);
  if (is(DType::kF32, DType::kS32)) return static_cast<int>(CvtOp::kF32ToS32);
  if (is(DType::kS32, DType::kF32)) return static_cast<int>(CvtOp::kS32ToF32);
  return -1;
}

UnaryKernel FindUnary(Opcode op, DType t) {
  const int o = UnaryIndex(op), f = FTypeIndex(t);
  return o < 0 || f < 0 ? nullptr : Table().unary[o][f];
}
BinaryKernel FindBinary(Opcode op, DType t) {
  if (const int i = ITypeIndex(t); i >= 0) {
    const int o = IntBinaryIndex(op);
    return o < 0 ? nullptr : Table().int_binary[o][i];
  }
  const int o = BinaryIndex(op), f = FTypeIndex(t);
  return o < 0 || f < 0 ? nullptr : Table().binary[o][f];
}
BinaryKernel FindRotateLeft(DType t) {
  const int i = ITypeIndex(t);
  return i < 0 ? nullptr : Table().int_binary[static_cast<int>(IOp::kRotateLeft)][i];
}
BinaryKernel FindCompare(ComparisonDirection direction, ComparisonType type, DType t) {
  const int f = FTypeIndex(t);
  if (f < 0 || (type != ComparisonType::kFloat && type != ComparisonType::kNone)) return nullptr;
  return Table().compare[static_cast<int>(direction)][f];
}
UnaryKernel FindConvert(DType from, DType to) {
  const int c = ConvertIndex(from, to);
  return c < 0 ? nullptr : Table().convert[c];
}
TernaryKernel FindSelect(DType t) {
  switch (DTypeSize(t)) {
    case 1: return Table().select_by_log2_size[0];
    case 2: return Table().select_by_log2_size[1];
    case 4: return Table().select_by_log2_size[2];
    case 8: return Table().select_by_log2_size[3];
    default: return nullptr;
  }
}
TernaryKernel FindClamp(DType t) {
  const int f = FTypeIndex(t);
  return f < 0 ? nullptr : Table().clamp[f];
}

std::vector<int64_t> SupportedTargets() { return hwy::SupportedAndGeneratedTargets(); }
std::string TargetName(int64_t target) { return hwy::TargetName(target); }

void UseTargetForTest(int64_t target) {
  hwy::SetSupportedTargetsForTest(target);
  hwy::GetChosenTarget().Update(hwy::SupportedTargets());
  MutableTable() = Build();
}

}  // namespace xs::kernels::simd
#endif  // HWY_ONCE
