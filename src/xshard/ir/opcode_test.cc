// The opcode table: names round-trip, the list is sorted, and arity / kind flags match XLA.
#include "xshard/ir/opcode.h"

#include <set>

#include <gtest/gtest.h>

namespace xs {
namespace {

TEST(Opcode, EveryNameRoundTripsAndIsUnique) {
  std::set<std::string_view> names;
  for (int i = 0; i < kOpcodeCount; ++i) {
    Opcode op = static_cast<Opcode>(i);
    std::string_view name = OpcodeName(op);
    EXPECT_TRUE(names.insert(name).second) << name;
    EXPECT_EQ(OpcodeFromName(name), op) << name;
  }
}

TEST(Opcode, ListIsSortedByEnumName) {
  std::vector<std::string> enums = {
#define XS_OPCODE_ENUM_NAME(e, name, arity, flags) #e,
      XS_OPCODE_LIST(XS_OPCODE_ENUM_NAME)
#undef XS_OPCODE_ENUM_NAME
  };
  EXPECT_TRUE(std::is_sorted(enums.begin(), enums.end()));
}

TEST(Opcode, NamesAndAritiesMatchXla) {
  EXPECT_EQ(OpcodeName(Opcode::kAllGather), "all-gather");
  EXPECT_EQ(OpcodeName(Opcode::kClz), "count-leading-zeros");
  EXPECT_EQ(OpcodeName(Opcode::kOptimizationBarrier), "opt-barrier");
  EXPECT_EQ(OpcodeName(Opcode::kPopulationCount), "popcnt");
  EXPECT_EQ(OpcodeName(Opcode::kExp), "exponential");
  EXPECT_EQ(OpcodeArity(Opcode::kAdd), 2);
  EXPECT_EQ(OpcodeArity(Opcode::kSelect), 3);
  EXPECT_EQ(OpcodeArity(Opcode::kBatchNormGrad), 5);
  EXPECT_EQ(OpcodeArity(Opcode::kTuple), kVariadic);
  EXPECT_EQ(OpcodeArity(Opcode::kParameter), 0);
}

TEST(Opcode, KindFlags) {
  EXPECT_TRUE(IsElementwise(Opcode::kAdd));
  EXPECT_TRUE(IsElementwise(Opcode::kCompare));
  EXPECT_TRUE(IsElementwise(Opcode::kConvert));
  EXPECT_FALSE(IsElementwise(Opcode::kBroadcast));
  EXPECT_FALSE(IsElementwise(Opcode::kAllReduce));
  EXPECT_TRUE(IsCollective(Opcode::kAllReduce));
  EXPECT_TRUE(IsCollective(Opcode::kCollectivePermuteDone));
  EXPECT_TRUE(IsCollective(Opcode::kReduceScatter));
  EXPECT_FALSE(IsCollective(Opcode::kDot));
  EXPECT_TRUE(IsAsync(Opcode::kAsyncUpdate));
  EXPECT_FALSE(IsAsync(Opcode::kAllGatherStart));
}

// The facts column against XLA (hlo_instruction.cc's HasSideEffectNoRecurse, shape_inference.cc's
// per-op type checks), written out independently of the table.
TEST(Opcode, FactsMatchXla) {
  for (Opcode op : {Opcode::kSend, Opcode::kSendDone, Opcode::kRecv, Opcode::kRecvDone,
                    Opcode::kInfeed, Opcode::kOutfeed, Opcode::kRng,
                    Opcode::kRngGetAndUpdateState}) {
    EXPECT_TRUE(HasSideEffect(op)) << OpcodeName(op);
  }
  for (Opcode op : {Opcode::kAdd, Opcode::kRngBitGenerator, Opcode::kParameter, Opcode::kCustomCall,
                    Opcode::kAllReduce}) {
    EXPECT_FALSE(HasSideEffect(op)) << OpcodeName(op);
  }
  EXPECT_EQ(GetElementwiseKind(Opcode::kTan), ElementwiseKind::kUnary);
  EXPECT_EQ(GetElementwiseKind(Opcode::kIsFinite), ElementwiseKind::kUnary);
  EXPECT_EQ(GetElementwiseKind(Opcode::kAtan2), ElementwiseKind::kBinary);
  EXPECT_EQ(GetElementwiseKind(Opcode::kCompare), ElementwiseKind::kCompare);
  EXPECT_EQ(GetElementwiseKind(Opcode::kSelect), ElementwiseKind::kTernary);
  EXPECT_EQ(GetElementwiseKind(Opcode::kConvert), ElementwiseKind::kConvert);
  EXPECT_EQ(GetElementwiseKind(Opcode::kMap), ElementwiseKind::kNone);
  EXPECT_EQ(GetElementwiseKind(Opcode::kDot), ElementwiseKind::kNone);
  EXPECT_EQ(OpcodeAcceptedTypes(Opcode::kFloor), kOnFloat);
  EXPECT_EQ(OpcodeAcceptedTypes(Opcode::kNot), kOnPred | kOnSigned | kOnUnsigned);
  EXPECT_EQ(OpcodeAcceptedTypes(Opcode::kShiftLeft), kOnSigned | kOnUnsigned);
  EXPECT_TRUE(HasReducer(Opcode::kReduce));
  EXPECT_TRUE(HasReducer(Opcode::kAllReduce));
  EXPECT_FALSE(HasReducer(Opcode::kSort));  // a comparator, not a reducer
  EXPECT_TRUE(HasReplicatedForm(Opcode::kRng));
  EXPECT_FALSE(HasReplicatedForm(Opcode::kCholesky));
}

// Every elementwise kind implies kOpElementwise, every unary / binary / compare op lists the types
// it accepts, and the kind agrees with the arity.
TEST(Opcode, FactsAreConsistent) {
  for (int i = 0; i < kOpcodeCount; ++i) {
    const Opcode op = static_cast<Opcode>(i);
    const ElementwiseKind kind = GetElementwiseKind(op);
    if (kind != ElementwiseKind::kNone) {
      EXPECT_TRUE(IsElementwise(op)) << OpcodeName(op);
    }
    const bool typed = kind == ElementwiseKind::kUnary || kind == ElementwiseKind::kBinary ||
                       kind == ElementwiseKind::kCompare;
    EXPECT_EQ(typed, OpcodeAcceptedTypes(op) != 0) << OpcodeName(op);
    if (kind == ElementwiseKind::kUnary) {
      EXPECT_EQ(OpcodeArity(op), 1) << OpcodeName(op);
    }
    if (kind == ElementwiseKind::kBinary || kind == ElementwiseKind::kCompare) {
      EXPECT_EQ(OpcodeArity(op), 2) << OpcodeName(op);
    }
    if (kind == ElementwiseKind::kTernary) {
      EXPECT_EQ(OpcodeArity(op), 3) << OpcodeName(op);
    }
  }
}

TEST(Opcode, UnknownNameIsAnErrorNamingTheSpelling) {
  EXPECT_FALSE(OpcodeFromName("le").has_value());
  auto op = ParseOpcode("le");
  ASSERT_FALSE(op.ok());
  EXPECT_NE(op.status().message().find("unknown opcode 'le'"), std::string::npos);
}

}  // namespace
}  // namespace xs
