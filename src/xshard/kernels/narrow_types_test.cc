// The narrow types (f8*, f4e2m1fn, s2, s4, u2, u4) in the kernels: every conversion and op row of
// tests/data/narrow_types/<type>.txt (ml_dtypes' and JAX 0.10.2's values, written by
// tests/tools/gen_narrow_type_tables.py) through the fast and the reference kernels, bit for bit;
// the f32 encoder against core's exact double one; and the widening ops (bitcast across widths,
// reduce, dot) on values derived by hand.
#include "xshard/kernels/narrow_types.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "gtest/gtest.h"
#include "xshard/kernels/dot.h"
#include "xshard/kernels/elementwise.h"
#include "xshard/kernels/reduce.h"

namespace xs::kernels {
namespace {

const char* const kNarrowTypes[] = {"f8e4m3fn", "f8e4m3fnuz", "f8e4m3b11fnuz", "f8e4m3", "f8e5m2", "f8e5m2fnuz",
                                    "f8e3m4",   "f8e8m0fnu",  "f4e2m1fn",      "s2",     "s4",     "u2",
                                    "u4"};

// One table row: op, operands, result (each a raw value: float bits or an integer).
struct NarrowRow {
  std::vector<int64_t> in;
  int64_t out = 0;
  int line = 0;
};

int64_t ParseNarrowValue(const std::string& word) {
  if (word.rfind("0x", 0) == 0) return static_cast<int64_t>(std::stoull(word.substr(2), nullptr, 16));
  return std::stoll(word);
}

std::map<std::string, std::vector<NarrowRow>> ReadNarrowTable(const std::string& type) {
  std::map<std::string, std::vector<NarrowRow>> rows;
  std::ifstream file(std::string(XSHARD_SOURCE_DIR) + "/tests/data/narrow_types/" + type + ".txt");
  EXPECT_TRUE(file.good()) << type;
  std::string line;
  for (int n = 1; std::getline(file, line); ++n) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string op, w;
    words >> op;
    NarrowRow r;
    r.line = n;
    while (words >> w) r.in.push_back(ParseNarrowValue(w));
    r.out = r.in.back();
    r.in.pop_back();
    rows[op].push_back(r);
  }
  return rows;
}

// Element i of a vector of raw values as an array of `t` (narrow integers as their value).
Array NarrowColumn(DType t, const std::vector<NarrowRow>& rows, int operand) {
  Array a(Shape(t, {static_cast<int64_t>(rows.size())}));
  const int64_t es = DTypeSize(t);
  for (size_t i = 0; i < rows.size(); ++i) {
    const int64_t v = rows[i].in[operand];
    if (IsNarrowInt(t)) {
      a.SetDouble(static_cast<int64_t>(i), static_cast<double>(v));
    } else {
      std::memcpy(a.data() + i * es, &v, static_cast<size_t>(es));  // little-endian host
    }
  }
  return a;
}

int64_t NarrowRaw(const Array& a, int64_t i) {
  if (IsNarrowInt(a.dtype())) return static_cast<int64_t>(a.GetDouble(i));
  if (a.dtype() == DType::kS32) return a.values<int32_t>()[i];
  int64_t v = 0;
  std::memcpy(&v, a.data() + i * DTypeSize(a.dtype()), static_cast<size_t>(DTypeSize(a.dtype())));
  return v;
}

void ExpectNarrowColumn(const std::string& what, const Array& got, const std::vector<NarrowRow>& rows) {
  ASSERT_EQ(got.num_elements(), static_cast<int64_t>(rows.size())) << what;
  int bad = 0;
  for (size_t i = 0; i < rows.size() && bad < 5; ++i) {
    const int64_t g = NarrowRaw(got, static_cast<int64_t>(i));
    if (g != rows[i].out) {
      ++bad;
      ADD_FAILURE() << what << " (table line " << rows[i].line << "): got 0x" << std::hex << g << ", want 0x"
                    << rows[i].out;
    }
  }
}

const std::map<std::string, DType> kNarrowConvertOps = {
    {"decode", DType::kF32}, {"f32", DType::kF32},   {"f64", DType::kF64},    {"f16", DType::kF16},
    {"bf16", DType::kBF16},  {"s32", DType::kS32},   {"to_f16", DType::kF16}, {"to_bf16", DType::kBF16},
    {"to_s32", DType::kS32}, {"to_f32", DType::kF32}};
const std::map<std::string, Opcode> kNarrowBinaryOps = {{"add", Opcode::kAdd},
                                                        {"sub", Opcode::kSubtract},
                                                        {"mul", Opcode::kMultiply},
                                                        {"div", Opcode::kDivide},
                                                        {"rem", Opcode::kRemainder},
                                                        {"max", Opcode::kMaximum},
                                                        {"min", Opcode::kMinimum},
                                                        {"and", Opcode::kAnd},
                                                        {"or", Opcode::kOr},
                                                        {"xor", Opcode::kXor},
                                                        {"shl", Opcode::kShiftLeft},
                                                        {"shra", Opcode::kShiftRightArithmetic},
                                                        {"shrl", Opcode::kShiftRightLogical}};
const std::map<std::string, Opcode> kNarrowUnaryOps = {{"sqrt", Opcode::kSqrt},
                                                       {"neg", Opcode::kNegate},
                                                       {"not", Opcode::kNot},
                                                       {"popcnt", Opcode::kPopulationCount},
                                                       {"clz", Opcode::kClz}};

class NarrowTable : public ::testing::TestWithParam<const char*> {};

TEST_P(NarrowTable, FastAndReferenceKernelsMatchTheTable) {
  const std::string name = GetParam();
  const DType t = *ParseDType(name);
  const std::map<std::string, std::vector<NarrowRow>> table = ReadNarrowTable(name);
  ASSERT_FALSE(table.empty()) << name;
  int ops = 0;
  for (const auto& [op, rows] : table) {
    const std::string what = name + " " + op;
    if (auto c = kNarrowConvertOps.find(op); c != kNarrowConvertOps.end()) {
      // "decode" / "to_*": from the type; the others: to it.
      const bool from_t = op == "decode" || op.rfind("to_", 0) == 0;
      const Array in = NarrowColumn(from_t ? t : c->second, rows, 0);
      const DType to = from_t ? c->second : t;
      ExpectNarrowColumn(what, *Convert(in, to), rows);
      ExpectNarrowColumn(what + " (reference)", *ConvertReference(in, to), rows);
    } else if (auto b = kNarrowBinaryOps.find(op); b != kNarrowBinaryOps.end()) {
      const Array x = NarrowColumn(t, rows, 0), y = NarrowColumn(t, rows, 1);
      ExpectNarrowColumn(what, *Binary(b->second, x, y), rows);
      ExpectNarrowColumn(what + " (reference)", *BinaryReference(b->second, x, y), rows);
    } else if (auto u = kNarrowUnaryOps.find(op); u != kNarrowUnaryOps.end()) {
      const Array x = NarrowColumn(t, rows, 0);
      ExpectNarrowColumn(what, *Unary(u->second, x), rows);
      ExpectNarrowColumn(what + " (reference)", *UnaryReference(u->second, x), rows);
    } else {
      ADD_FAILURE() << name << ": unknown table op " << op;
    }
    ++ops;
  }
  EXPECT_GE(ops, IsNarrowInt(t) ? 21 : 14) << name;
}

INSTANTIATE_TEST_SUITE_P(Types, NarrowTable, ::testing::ValuesIn(kNarrowTypes));

// The f32 encoder (bit arithmetic) against core's exact one on a stride through every f32: they
// differ only where XLA and ml_dtypes do (NaN -> f4e2m1fn).
template <DType T>
void ExpectEncoderMatchesCore() {
  int bad = 0;
  for (uint64_t u = 0; u < (uint64_t{1} << 32) && bad < 5; u += 4093) {
    const float f = std::bit_cast<float>(static_cast<uint32_t>(u));
    if (T == DType::kF4E2M1FN && std::isnan(f)) continue;
    const uint8_t got = FloatToNarrow<T>(f).bits, want = DoubleToFloat8(T, f);
    if (got != want && !(std::isnan(f) && std::isnan(Float8ToDouble(T, got)) && std::isnan(Float8ToDouble(T, want)))) {
      ++bad;
      ADD_FAILURE() << DTypeName(T) << " " << f << " (0x" << std::hex << u << "): 0x" << int{got} << " vs core 0x"
                    << int{want};
    }
  }
}

TEST(NarrowEncoder, MatchesCoreOnAStrideThroughEveryFloat) {
  ExpectEncoderMatchesCore<DType::kF8E4M3FN>();
  ExpectEncoderMatchesCore<DType::kF8E4M3FNUZ>();
  ExpectEncoderMatchesCore<DType::kF8E4M3B11FNUZ>();
  ExpectEncoderMatchesCore<DType::kF8E4M3>();
  ExpectEncoderMatchesCore<DType::kF8E5M2>();
  ExpectEncoderMatchesCore<DType::kF8E5M2FNUZ>();
  ExpectEncoderMatchesCore<DType::kF8E3M4>();
  ExpectEncoderMatchesCore<DType::kF8E8M0FNU>();
  ExpectEncoderMatchesCore<DType::kF4E2M1FN>();
}

Array NarrowBytes(DType t, std::vector<int64_t> dims, std::vector<uint8_t> bytes) {
  return *Array::FromBytes(Shape(t, std::move(dims)), std::as_bytes(std::span<const uint8_t>(bytes)));
}
std::vector<int> NarrowValues(const Array& a) {
  std::vector<int> v;
  for (int64_t i = 0; i < a.num_elements(); ++i) v.push_back(static_cast<int>(a.GetDouble(i)));
  return v;
}

TEST(NarrowBitcast, SubByteTypesPackLittleEndianAcrossWidths) {
  // JAX 0.10.2: bitcast_convert_type(uint8 [0xab, 0x12], uint4) -> [[11, 10], [2, 1]], and back.
  Array u8 = NarrowBytes(DType::kU8, {2}, {0xab, 0x12});
  Array u4 = *BitcastConvert(u8, DType::kU4);
  EXPECT_EQ(u4.dims(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(NarrowValues(u4), (std::vector<int>{11, 10, 2, 1}));
  EXPECT_EQ(NarrowValues(*BitcastConvert(u4, DType::kU8)), (std::vector<int>{0xab, 0x12}));
  // s4 [-1, 7, -8] -> u4 [15, 7, 8] -> f4e2m1fn [-6, 6, -0]: the sign-extended bytes re-encoded.
  Array s4(Shape(DType::kS4, {3}));
  for (int i = 0; i < 3; ++i) s4.SetDouble(i, std::vector<double>{-1, 7, -8}[i]);
  EXPECT_EQ(NarrowValues(*BitcastConvert(s4, DType::kU4)), (std::vector<int>{15, 7, 8}));
  Array f4 = *BitcastConvert(s4, DType::kF4E2M1FN);
  EXPECT_EQ(f4.GetDouble(0), -6.0);
  EXPECT_EQ(f4.GetDouble(1), 6.0);
  EXPECT_TRUE(std::signbit(f4.GetDouble(2)));
  // s8 -> s4 pairs: 0x7f = [0xf, 0x7] -> [-1, 7].
  EXPECT_EQ(NarrowValues(*BitcastConvert(NarrowBytes(DType::kS8, {1}, {0x7f}), DType::kS4)), (std::vector<int>{-1, 7}));
  EXPECT_FALSE(BitcastConvert(u4, DType::kS16).ok());  // last dim 2, not the ratio 4
}

TEST(NarrowReduce, EachAddRoundsThroughF16ToTheNarrowType) {
  // e4m3fn: 16 + 0.5 = 16.5 rounds back to 16 (spacing 2 there) at every step, as XLA's reducer
  // (f16 add, then convert to f8) does; an f32 accumulator would reach 18.
  Array x(Shape(DType::kF8E4M3FN, {5}));
  for (int i = 0; i < 5; ++i) x.SetDouble(i, i == 0 ? 16.0 : 0.5);
  Array init(Shape(DType::kF8E4M3FN, {}));
  Combiner add;
  add.kind = CombineKind::kAdd;
  const Array* in[] = {&x};
  const Array* inits[] = {&init};
  StatusOr<std::vector<Array>> out = Reduce(in, inits, {0}, add);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ((*out)[0].GetDouble(0), 16.0);
  // s4: 7 + 7 + 7 wraps at every step: 14 -> -2, then 5.
  Array s(Shape(DType::kS4, {3}));
  for (int i = 0; i < 3; ++i) s.SetDouble(i, 7);
  Array sinit(Shape(DType::kS4, {}));
  const Array* sin[] = {&s};
  const Array* sinits[] = {&sinit};
  EXPECT_EQ((*Reduce(sin, sinits, {0}, add))[0].GetDouble(0), 5.0);
}

TEST(NarrowDot, OperandsWidenExactlyAndANarrowResultRoundsThroughF16) {
  // [1, 2^-4, 2^-6] . [1, 1, 2^-6] = 1 + 2^-4 + 2^-12: f32 -> f16 gives 1.0625, the e4m3fn tie
  // between 1 and 1.125, which rounds to even (1); rounded once from f32 it would be 1.125.
  Array x(Shape(DType::kF8E4M3FN, {1, 3})), y(Shape(DType::kF8E4M3FN, {3, 1}));
  const double xs[] = {1, 0x1p-4, 0x1p-6}, ys[] = {1, 1, 0x1p-6};
  for (int i = 0; i < 3; ++i) {
    x.SetDouble(i, xs[i]);
    y.SetDouble(i, ys[i]);
  }
  DotDimensionNumbers dn;
  dn.lhs_contracting = {1};
  dn.rhs_contracting = {0};
  for (DType result : {DType::kF32, DType::kF8E4M3FN, DType::kBF16}) {
    StatusOr<std::shared_ptr<const DotPlan>> plan = DotPlan::Create(x.shape(), y.shape(), dn, result);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    Array out(Shape(result, {1, 1}));
    ASSERT_TRUE((*plan)->Run(x.data(), y.data(), out.data()).ok());
    const double want = result == DType::kF32 ? 1 + 0x1p-4 + 0x1p-12 : result == DType::kBF16 ? 1.0625 : 1.0;
    EXPECT_EQ(out.GetDouble(0), want) << DTypeName(result);
  }
  // s4 x s4 -> s32: -8 * 7 + 7 * 7 = -7.
  Array a(Shape(DType::kS4, {1, 2})), b(Shape(DType::kS4, {2, 1}));
  a.SetDouble(0, -8);
  a.SetDouble(1, 7);
  b.SetDouble(0, 7);
  b.SetDouble(1, 7);
  StatusOr<std::shared_ptr<const DotPlan>> plan = DotPlan::Create(a.shape(), b.shape(), dn, DType::kS32);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  Array out(Shape(DType::kS32, {1, 1}));
  ASSERT_TRUE((*plan)->Run(a.data(), b.data(), out.data()).ok());
  EXPECT_EQ(out.GetDouble(0), -7.0);
}

TEST(NarrowTypes, KernelsWithoutANarrowFormSayWhichTypeTheyRefuse) {
  StatusOr<BinaryKernel> k = FindBinaryKernel(Opcode::kAnd, DType::kF8E4M3FN);
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.status().message().find("f8e4m3fn"), std::string::npos) << k.status().message();
  EXPECT_FALSE(FindBinaryKernel(Opcode::kComplex, DType::kF8E5M2).ok());
  // mulhi on s4: -8 * 7 = -56 = 0xc8 -> high nibble -4; on u4: 15 * 15 = 225 = 0xe1 -> 14.
  Array s4(Shape(DType::kS4, {1})), s7(Shape(DType::kS4, {1}));
  s4.SetDouble(0, -8);
  s7.SetDouble(0, 7);
  EXPECT_EQ(Binary(Opcode::kMulhi, s4, s7)->GetDouble(0), -4.0);
  Array u15(Shape(DType::kU4, {1}));
  u15.SetDouble(0, 15);
  EXPECT_EQ(Binary(Opcode::kMulhi, u15, u15)->GetDouble(0), 14.0);
  EXPECT_TRUE(FindUnaryKernel(Opcode::kIsFinite, DType::kF8E5M2).ok());
  EXPECT_EQ(*UnaryResultDType(Opcode::kIsFinite, DType::kF8E5M2), DType::kPred);
}

}  // namespace
}  // namespace xs::kernels
