// The HLO opcode table: ONE sorted X-macro list drives the enum, XLA's text name, the arity and the
// kind flags (elementwise / collective / async). Names are XLA's exactly ("all-gather").
#ifndef XSHARD_IR_OPCODE_H_
#define XSHARD_IR_OPCODE_H_

#include <cstdint>
#include <optional>
#include <string_view>

#include "xshard/base/status.h"

namespace xs {

// Arity value of an opcode that takes any number of operands.
inline constexpr int kVariadic = -1;

// The fourth column: an OR of the op's facts. Every per-op list in the compiler (shape inference's
// type rules, the factor rules of elementwise ops, DCE / CSE / propagation's side-effect sets, the
// spmd handler table) is derived from these bits; tests check the tables that cannot be derived
// (the executor's kernels) against them (jit/op_table_test.cc).
inline constexpr uint32_t kOpNone = 0;
inline constexpr uint32_t kOpElementwise = 1;  // out[i] = f(a[i], b[i], ...), shapes equal
inline constexpr uint32_t kOpCollective = 2;   // talks to other devices (incl. -start / -done)
inline constexpr uint32_t kOpAsync = 4;        // async-start / async-update / async-done
// Observable effects beyond the result (host transfers, random state, token ordering): DCE keeps
// it, CSE never merges two, propagation gives it no sharding of its own. custom-call adds its
// custom_call_has_side_effect attribute (see HasSideEffect(const Instruction&)).
inline constexpr uint32_t kOpSideEffect = 1u << 3;
// Carries a reducer computation (to_apply combines two values): reduce, reduce-window,
// select-and-scatter's scatter, scatter, all-reduce, reduce-scatter.
inline constexpr uint32_t kOpReducer = 1u << 4;
// The partitioner has no local form for the op yet although its factor rule allows one: it runs
// on replicated operands and `partition --report` warns when that gathers or slices anything.
// (Every other op with a non-barrier factor rule has a rule-driven spmd handler; tested.)
inline constexpr uint32_t kOpReplicatedForm = 1u << 5;

// Elementwise, but fused elementwise loops (exec/fusion_plan.h) do not take it; the op runs as a
// step of its own. Each has a reason: map calls a computation per element; reduce-precision's
// kernel takes exponent / mantissa bit counts and stochastic-convert reads random bits of another
// type, so neither has the one-function scalar form a fused loop calls (jit/op_table_test.cc
// checks that every other elementwise op fuses).
inline constexpr uint32_t kOpNoLoopFusion = 1u << 6;
// The executor's handler always writes a buffer of its own: the result never aliases an operand,
// so buffer assignment may reuse an operand's memory after its last use. Ops without it (and
// without a kernel that writes its result buffer) may pass (parts of) operands through (reshape,
// bitcast, tuple, get-tuple-element, while, ...), which keeps those buffers alive as long as the
// result (exec/executable_memory.cc).
inline constexpr uint32_t kOpFreshResult = 1u << 7;

// Elementwise kind (bits 8-10; each implies kOpElementwise). Unary and binary ops also list the
// element types they accept (below); shape inference reads both, the executor registers its
// generic unary / binary kernels for them.
inline constexpr uint32_t kOpKindShift = 8;
inline constexpr uint32_t kOpKindMask = 7u << kOpKindShift;
enum class ElementwiseKind : uint8_t {
  kNone = 0,     // not elementwise, or elementwise with a form of its own (copy, map)
  kUnary = 1,    // T -> T (is-finite -> pred, abs / real / imag of complex -> its component)
  kBinary = 2,   // (T, T) -> T; operand types must be equal (complex: (f, f) -> c)
  kTernary = 3,  // select (pred, T, T), clamp (T, T, T)
  kCompare = 4,  // (T, T) -> pred, with a comparison_direction
  kConvert = 5,  // the result type is an attribute of the instruction
};
inline constexpr uint32_t kOpUnary = kOpElementwise | (1u << kOpKindShift);
inline constexpr uint32_t kOpBinary = kOpElementwise | (2u << kOpKindShift);
inline constexpr uint32_t kOpTernary = kOpElementwise | (3u << kOpKindShift);
inline constexpr uint32_t kOpCompare = kOpElementwise | (4u << kOpKindShift);
inline constexpr uint32_t kOpConvert = kOpElementwise | (5u << kOpKindShift);

// Element types a unary / binary / compare op accepts (bits 12-16).
inline constexpr uint32_t kOnTypeShift = 12;
inline constexpr uint32_t kOnPred = 1u << 12;
inline constexpr uint32_t kOnSigned = 1u << 13;
inline constexpr uint32_t kOnUnsigned = 1u << 14;
inline constexpr uint32_t kOnFloat = 1u << 15;
inline constexpr uint32_t kOnComplex = 1u << 16;
inline constexpr uint32_t kOnInt = kOnSigned | kOnUnsigned;
inline constexpr uint32_t kOnNumeric = kOnInt | kOnFloat | kOnComplex;
inline constexpr uint32_t kOnAny = kOnPred | kOnNumeric;
inline constexpr uint32_t kOnTypeMask = kOnAny;

// V(enum, text name, arity, facts). Sorted by enum name, as XLA's hlo_opcode.h. Adding an op:
// one line here (see docs/architecture.md, "Adding an op").
#define XS_OPCODE_LIST(V)                                                          \
  V(kAbs, "abs", 1, kOpUnary | kOnSigned | kOnFloat | kOnComplex)                                    \
  V(kAcos, "acos", 1, kOpUnary | kOnFloat | kOnComplex)                                              \
  V(kAcosh, "acosh", 1, kOpUnary | kOnFloat | kOnComplex)                                            \
  V(kAdd, "add", 2, kOpBinary | kOnAny)                                                              \
  V(kAddDependency, "add-dependency", 2, kOpReplicatedForm)                                          \
  V(kAfterAll, "after-all", kVariadic, kOpSideEffect | kOpFreshResult)                               \
  V(kAllGather, "all-gather", kVariadic, kOpCollective)                                              \
  V(kAllGatherDone, "all-gather-done", 1, kOpCollective)                                             \
  V(kAllGatherStart, "all-gather-start", kVariadic, kOpCollective)                                   \
  V(kAllReduce, "all-reduce", kVariadic, kOpCollective | kOpReducer)                                 \
  V(kAllReduceDone, "all-reduce-done", 1, kOpCollective)                                             \
  V(kAllReduceStart, "all-reduce-start", kVariadic, kOpCollective | kOpReducer)                      \
  V(kAllToAll, "all-to-all", kVariadic, kOpCollective)                                               \
  V(kAnd, "and", 2, kOpBinary | kOnPred | kOnInt)                                                    \
  V(kAsin, "asin", 1, kOpUnary | kOnFloat | kOnComplex)                                              \
  V(kAsinh, "asinh", 1, kOpUnary | kOnFloat | kOnComplex)                                            \
  V(kAsyncDone, "async-done", 1, kOpAsync | kOpReplicatedForm)                                       \
  V(kAsyncStart, "async-start", kVariadic, kOpAsync | kOpReplicatedForm)                             \
  V(kAsyncUpdate, "async-update", kVariadic, kOpAsync | kOpReplicatedForm)                           \
  V(kAtan, "atan", 1, kOpUnary | kOnFloat | kOnComplex)                                              \
  V(kAtan2, "atan2", 2, kOpBinary | kOnNumeric)                                                      \
  V(kAtanh, "atanh", 1, kOpUnary | kOnFloat | kOnComplex)                                            \
  V(kBatchNormGrad, "batch-norm-grad", 5, kOpNone)                                                   \
  V(kBatchNormInference, "batch-norm-inference", 5, kOpNone)                                         \
  V(kBatchNormTraining, "batch-norm-training", 3, kOpNone)                                           \
  V(kBitcast, "bitcast", 1, kOpReplicatedForm)                                                       \
  V(kBitcastConvert, "bitcast-convert", 1, kOpFreshResult)                                           \
  V(kBroadcast, "broadcast", 1, kOpFreshResult)                                                      \
  V(kCall, "call", kVariadic, kOpNone)                                                               \
  V(kCbrt, "cbrt", 1, kOpUnary | kOnFloat | kOnComplex)                                              \
  V(kCeil, "ceil", 1, kOpUnary | kOnFloat)                                                           \
  V(kCholesky, "cholesky", 1, kOpNone)                                                               \
  V(kClamp, "clamp", 3, kOpTernary | kOpFreshResult)                                                 \
  V(kClz, "count-leading-zeros", 1, kOpUnary | kOnInt)                                               \
  V(kCollectiveBroadcast, "collective-broadcast", kVariadic, kOpCollective)                          \
  V(kCollectivePermute, "collective-permute", kVariadic, kOpCollective)                              \
  V(kCollectivePermuteDone, "collective-permute-done", 1, kOpCollective)                             \
  V(kCollectivePermuteStart, "collective-permute-start", kVariadic, kOpCollective)                   \
  V(kCollectiveReduce, "collective-reduce", kVariadic, kOpCollective | kOpReducer)                   \
  V(kCompare, "compare", 2, kOpCompare | kOnAny)                                                     \
  V(kComplex, "complex", 2, kOpBinary | kOnFloat)                                                    \
  V(kConcatenate, "concatenate", kVariadic, kOpFreshResult)                                          \
  V(kConditional, "conditional", kVariadic, kOpNone)                                                 \
  V(kConstant, "constant", 0, kOpFreshResult)                                                        \
  V(kConvert, "convert", 1, kOpConvert)                                                              \
  V(kConvolution, "convolution", kVariadic, kOpFreshResult)                                          \
  V(kCopy, "copy", 1, kOpElementwise)                                                                \
  V(kCopyDone, "copy-done", 1, kOpReplicatedForm)                                                    \
  V(kCopyStart, "copy-start", 1, kOpReplicatedForm)                                                  \
  V(kCos, "cosine", 1, kOpUnary | kOnFloat | kOnComplex)                                             \
  V(kCosh, "cosh", 1, kOpUnary | kOnFloat | kOnComplex)                                              \
  V(kCustomCall, "custom-call", kVariadic, kOpNone)                                                  \
  V(kDivide, "divide", 2, kOpBinary | kOnNumeric)                                                    \
  V(kDomain, "domain", 1, kOpReplicatedForm)                                                         \
  V(kDot, "dot", 2, kOpFreshResult)                                                                  \
  V(kDynamicReshape, "dynamic-reshape", kVariadic, kOpNone)                                          \
  V(kDynamicSlice, "dynamic-slice", kVariadic, kOpFreshResult)                                       \
  V(kDynamicUpdateSlice, "dynamic-update-slice", kVariadic, kOpNone)                                 \
  V(kErf, "erf", 1, kOpUnary | kOnFloat | kOnComplex)                                                \
  V(kExp, "exponential", 1, kOpUnary | kOnFloat | kOnComplex)                                        \
  V(kExpm1, "exponential-minus-one", 1, kOpUnary | kOnFloat | kOnComplex)                            \
  V(kFft, "fft", 1, kOpNone)                                                                         \
  V(kFloor, "floor", 1, kOpUnary | kOnFloat)                                                         \
  V(kFusion, "fusion", kVariadic, kOpReplicatedForm)                                                 \
  V(kGather, "gather", 2, kOpFreshResult)                                                            \
  V(kGetDimensionSize, "get-dimension-size", 1, kOpFreshResult)                                      \
  V(kGetTupleElement, "get-tuple-element", 1, kOpNone)                                               \
  V(kImag, "imag", 1, kOpUnary | kOnFloat | kOnComplex)                                              \
  V(kInfeed, "infeed", 1, kOpSideEffect)                                                             \
  V(kIota, "iota", 0, kOpFreshResult)                                                                \
  V(kIsFinite, "is-finite", 1, kOpUnary | kOnFloat)                                                  \
  V(kLog, "log", 1, kOpUnary | kOnFloat | kOnComplex)                                                \
  V(kLog1p, "log-plus-one", 1, kOpUnary | kOnFloat | kOnComplex)                                     \
  V(kLogistic, "logistic", 1, kOpUnary | kOnFloat | kOnComplex)                                      \
  V(kMap, "map", kVariadic, kOpElementwise | kOpNoLoopFusion | kOpFreshResult)                       \
  V(kMaximum, "maximum", 2, kOpBinary | kOnAny)                                                      \
  V(kMinimum, "minimum", 2, kOpBinary | kOnAny)                                                      \
  V(kMulhi, "mulhi", 2, kOpBinary | kOnInt)                                                          \
  V(kMultiply, "multiply", 2, kOpBinary | kOnAny)                                                    \
  V(kNegate, "negate", 1, kOpUnary | kOnNumeric)                                                     \
  V(kNot, "not", 1, kOpUnary | kOnPred | kOnInt)                                                     \
  V(kOptimizationBarrier, "opt-barrier", 1, kOpNone)                                                 \
  V(kOr, "or", 2, kOpBinary | kOnPred | kOnInt)                                                      \
  V(kOutfeed, "outfeed", 2, kOpSideEffect)                                                           \
  V(kPad, "pad", 2, kOpFreshResult)                                                                  \
  V(kParameter, "parameter", 0, kOpNone)                                                             \
  V(kPartitionId, "partition-id", 0, kOpReplicatedForm | kOpFreshResult)                             \
  V(kPopulationCount, "popcnt", 1, kOpUnary | kOnInt)                                                \
  V(kPower, "power", 2, kOpBinary | kOnNumeric)                                                      \
  V(kRaggedAllToAll, "ragged-all-to-all", 6, kOpCollective)                                          \
  V(kRaggedDot, "ragged-dot", 3, kOpNone)                                                            \
  V(kReal, "real", 1, kOpUnary | kOnFloat | kOnComplex)                                              \
  V(kRecv, "recv", 1, kOpSideEffect)                                                                 \
  V(kRecvDone, "recv-done", 1, kOpSideEffect)                                                        \
  V(kReduce, "reduce", kVariadic, kOpReducer | kOpFreshResult)                                       \
  V(kReducePrecision, "reduce-precision", 1, kOpUnary | kOnFloat | kOpNoLoopFusion | kOpFreshResult) \
  V(kReduceScatter, "reduce-scatter", kVariadic, kOpCollective | kOpReducer)                         \
  V(kReduceWindow, "reduce-window", kVariadic, kOpReducer | kOpFreshResult)                          \
  V(kRemainder, "remainder", 2, kOpBinary | kOnNumeric)                                              \
  V(kReplicaId, "replica-id", 0, kOpReplicatedForm | kOpFreshResult)                                 \
  V(kReshape, "reshape", 1, kOpNone)                                                                 \
  V(kReverse, "reverse", 1, kOpFreshResult)                                                          \
  V(kRng, "rng", kVariadic, kOpSideEffect | kOpReplicatedForm)                                       \
  V(kRngBitGenerator, "rng-bit-generator", 1, kOpReplicatedForm)                                     \
  V(kRngGetAndUpdateState, "rng-get-and-update-state", 0, kOpSideEffect | kOpReplicatedForm)         \
  V(kRoundNearestAfz, "round-nearest-afz", 1, kOpUnary | kOnFloat)                                   \
  V(kRoundNearestEven, "round-nearest-even", 1, kOpUnary | kOnFloat)                                 \
  V(kRsqrt, "rsqrt", 1, kOpUnary | kOnFloat | kOnComplex)                                            \
  V(kScaledDot, "scaled-dot", 4, kOpNone)                                                            \
  V(kScan, "scan", kVariadic, kOpNone)                                                               \
  V(kScatter, "scatter", kVariadic, kOpReducer | kOpFreshResult)                                     \
  V(kSelect, "select", 3, kOpTernary)                                                                \
  V(kSelectAndScatter, "select-and-scatter", 3, kOpReducer | kOpFreshResult)                         \
  V(kSend, "send", 2, kOpSideEffect)                                                                 \
  V(kSendDone, "send-done", 1, kOpSideEffect)                                                        \
  V(kSetDimensionSize, "set-dimension-size", 2, kOpReplicatedForm)                                   \
  V(kShiftLeft, "shift-left", 2, kOpBinary | kOnInt)                                                 \
  V(kShiftRightArithmetic, "shift-right-arithmetic", 2, kOpBinary | kOnInt)                          \
  V(kShiftRightLogical, "shift-right-logical", 2, kOpBinary | kOnInt)                                \
  V(kShuffle, "shuffle", 1, kOpNone)                                                                 \
  V(kSign, "sign", 1, kOpUnary | kOnSigned | kOnFloat | kOnComplex)                                  \
  V(kSin, "sine", 1, kOpUnary | kOnFloat | kOnComplex)                                               \
  V(kSinh, "sinh", 1, kOpUnary | kOnFloat | kOnComplex)                                              \
  V(kSlice, "slice", 1, kOpFreshResult)                                                              \
  V(kSort, "sort", kVariadic, kOpFreshResult)                                                        \
  V(kSqrt, "sqrt", 1, kOpUnary | kOnFloat | kOnComplex)                                              \
  V(kStochasticConvert, "stochastic-convert", 2, kOpConvert | kOpNoLoopFusion)                       \
  V(kSubtract, "subtract", 2, kOpBinary | kOnNumeric)                                                \
  V(kTan, "tan", 1, kOpUnary | kOnFloat | kOnComplex)                                                \
  V(kTanh, "tanh", 1, kOpUnary | kOnFloat | kOnComplex)                                              \
  V(kTopK, "topk", 1, kOpNone)                                                                       \
  V(kTranspose, "transpose", 1, kOpFreshResult)                                                      \
  V(kTriangularSolve, "triangular-solve", 2, kOpNone)                                                \
  V(kTuple, "tuple", kVariadic, kOpNone)                                                             \
  V(kWhile, "while", 1, kOpNone)                                                                     \
  V(kXor, "xor", 2, kOpBinary | kOnPred | kOnInt)

enum class Opcode : uint8_t {
#define XS_OPCODE_ENUM(e, name, arity, flags) e,
  XS_OPCODE_LIST(XS_OPCODE_ENUM)
#undef XS_OPCODE_ENUM
};

// Number of opcodes in the list (for tables indexed by opcode).
inline constexpr int kOpcodeCount = 0
#define XS_OPCODE_COUNT(...) +1
    XS_OPCODE_LIST(XS_OPCODE_COUNT);
#undef XS_OPCODE_COUNT

// XLA's text name: OpcodeName(Opcode::kAllGather) == "all-gather".
std::string_view OpcodeName(Opcode opcode);
// Inverse of OpcodeName; nullopt for an unknown name ("le").
std::optional<Opcode> OpcodeFromName(std::string_view name);
// Same, as a Status naming the unknown spelling (for user input).
StatusOr<Opcode> ParseOpcode(std::string_view name);
// Number of operands the opcode takes, or kVariadic.
int OpcodeArity(Opcode opcode);
// Kind flags from the table.
uint32_t OpcodeFlags(Opcode opcode);

// True for ops that map elements one to one over equal-shaped operands (add, compare, select,
// convert, copy, map, ...). Broadcast, reduce etc. are not.
inline bool IsElementwise(Opcode op) { return (OpcodeFlags(op) & kOpElementwise) != 0; }
// True for cross-device ops: all-gather, all-reduce, all-to-all, collective-permute,
// reduce-scatter, collective-broadcast, ragged-all-to-all, and their -start / -done forms.
inline bool IsCollective(Opcode op) { return (OpcodeFlags(op) & kOpCollective) != 0; }
// True for async-start / async-update / async-done.
inline bool IsAsync(Opcode op) { return (OpcodeFlags(op) & kOpAsync) != 0; }
// The opcode's own side effects (custom-call: see HasSideEffect(const Instruction&)).
inline bool HasSideEffect(Opcode op) { return (OpcodeFlags(op) & kOpSideEffect) != 0; }
// True for ops whose called computation is a reducer (reduce, all-reduce, scatter, ...).
inline bool HasReducer(Opcode op) { return (OpcodeFlags(op) & kOpReducer) != 0; }
// True for ops the partitioner deliberately computes on replicated operands (kOpReplicatedForm).
inline bool HasReplicatedForm(Opcode op) { return (OpcodeFlags(op) & kOpReplicatedForm) != 0; }
inline ElementwiseKind GetElementwiseKind(Opcode op) {
  return static_cast<ElementwiseKind>((OpcodeFlags(op) & kOpKindMask) >> kOpKindShift);
}
// True for elementwise ops that fused loops take (all but those marked kOpNoLoopFusion).
inline bool IsLoopFusible(Opcode op) {
  return IsElementwise(op) && (OpcodeFlags(op) & kOpNoLoopFusion) == 0;
}
// True for ops whose result never aliases an operand in the executor (kOpFreshResult).
inline bool ProducesFreshResult(Opcode op) { return (OpcodeFlags(op) & kOpFreshResult) != 0; }
// The kOn* element-type bits of a unary / binary / compare op (0 for other ops).
inline uint32_t OpcodeAcceptedTypes(Opcode op) { return OpcodeFlags(op) & kOnTypeMask; }

}  // namespace xs

#endif  // XSHARD_IR_OPCODE_H_
