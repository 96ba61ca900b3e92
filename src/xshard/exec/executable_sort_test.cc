// The executor's sort comparator recognition (ClassifySortComparator) on the comparators JAX
// 0.10.2 lowers jnp.sort / jnp.argsort / lax.sort to (copied from its HLO), and near misses that
// must stay on the generic path; and every recognized form run end to end against the same
// module with its comparator made unrecognizable (`and(root, true)`: the generic scalar path),
// bit for bit, on inputs with NaNs of both signs, +-0, +-inf, denormals and duplicates.
#include <cstring>
#include <random>
#include <string>

#include "gtest/gtest.h"
#include "xshard/base/strings.h"
#include "xshard/exec/exec_test_util.h"
#include "xshard/exec/executable.h"
#include "xshard/exec/executable_plan.h"
#include "xshard/text/parser.h"

namespace xs {
namespace {

// JAX's float canonicalization of parameters (2i, 2i+1) named a<i> / b<i> (T: the dtype).
std::string CanonicalPair(int i, std::string_view t) {
  return StrCat("  pa", i, " = ", t, "[] parameter(", 2 * i, ")\n",                        //
                "  ne.a", i, " = pred[] compare(pa", i, ", pa", i, "), direction=NE\n",    //
                "  nan", i, " = ", t, "[] constant(nan)\n",                                //
                "  zero", i, " = ", t, "[] constant(0)\n",                                 //
                "  eq.a", i, " = pred[] compare(pa", i, ", zero", i, "), direction=EQ\n",  //
                "  s.a", i, " = ", t, "[] select(eq.a", i, ", zero", i, ", pa", i, ")\n",  //
                "  a", i, " = ", t, "[] select(ne.a", i, ", nan", i, ", s.a", i, ")\n",    //
                "  pb", i, " = ", t, "[] parameter(", 2 * i + 1, ")\n",                    //
                "  ne.b", i, " = pred[] compare(pb", i, ", pb", i, "), direction=NE\n",    //
                "  eq.b", i, " = pred[] compare(pb", i, ", zero", i, "), direction=EQ\n",  //
                "  s.b", i, " = ", t, "[] select(eq.b", i, ", zero", i, ", pb", i, ")\n",  //
                "  b", i, " = ", t, "[] select(ne.b", i, ", nan", i, ", s.b", i, ")\n");
}
std::string PlainPair(int i, std::string_view t) {
  return StrCat("  a", i, " = ", t, "[] parameter(", 2 * i, ")\n", "  b", i, " = ", t, "[] parameter(", 2 * i + 1,
                ")\n");
}

// A JAX sort comparator on `types` (operands in order; the first `keys` are keys, floats
// canonicalized and compared TOTALORDER) as lax.sort lowers it:
// or(lt0, and(eq0, or(lt1, and(eq1, lt2)))) for three keys.
std::string JaxComparator(const std::vector<std::string>& types, int keys) {
  std::string body;
  auto is_float = [](const std::string& t) { return t[0] == 'f' || t == "bf16"; };
  for (int i = 0; i < static_cast<int>(types.size()); ++i) {
    body += i < keys && is_float(types[i]) ? CanonicalPair(i, types[i]) : PlainPair(i, types[i]);
  }
  for (int i = 0; i < keys; ++i) {
    const std::string type = is_float(types[i]) ? ", type=TOTALORDER" : "";
    body += StrCat("  lt", i, " = pred[] compare(a", i, ", b", i, "), direction=LT", type, "\n");
    if (i + 1 < keys) body += StrCat("  eq", i, " = pred[] compare(a", i, ", b", i, "), direction=EQ", type, "\n");
  }
  std::string root = StrCat("lt", keys - 1);
  for (int i = keys - 2; i >= 0; --i) {
    body += StrCat("  and", i, " = pred[] and(eq", i, ", ", root, ")\n");
    body += StrCat("  or", i, " = pred[] or(lt", i, ", and", i, ")\n");
    root = StrCat("or", i);
  }
  return StrCat("cmp {\n", body, "  ROOT r = pred[] and(", root, ", ", root, ")\n}\n");
}

// A module sorting parameters of `types` and `dims` along `dim` with comparator `cmp` (its
// computation named cmp; its ROOT line is the last one).
std::string SortModule(const std::vector<std::string>& types, const std::vector<int64_t>& dims, int64_t dim,
                       std::string cmp) {
  const std::string shape = StrCat("[", JoinDims(dims), "]");
  std::string params, names, result;
  for (size_t i = 0; i < types.size(); ++i) {
    params += StrCat("  p", i, " = ", types[i], shape, " parameter(", i, ")\n");
    names += StrCat(i ? ", " : "", "p", i);
    result += StrCat(i ? ", " : "", types[i], shape);
  }
  if (types.size() > 1) result = StrCat("(", result, ")");
  return StrCat("HloModule m\n\n", cmp, "\nENTRY main {\n", params, "  ROOT s = ", result, " sort(", names,
                "), dimensions={", dim, "}, is_stable=true, to_apply=cmp\n}\n");
}

// The comparator's root is written `and(x, x)` (JaxComparator) or is a plain compare: returns
// the text with the root `x` itself (the recognized form) or `and(x, true)` (unrecognizable,
// the same order).
std::string WithRoot(const std::string& module, bool recognizable) {
  const size_t at = module.find("  ROOT r = pred[] and(");
  EXPECT_NE(at, std::string::npos);
  const size_t open = module.find('(', at), comma = module.find(',', open), close = module.find(')', comma);
  const std::string x = module.substr(open + 1, comma - open - 1);
  const std::string root = recognizable
                               ? StrCat("  ROOT r = pred[] and(", x, ", ", x, ")")
                               : StrCat("  true = pred[] constant(true)\n  ROOT r = pred[] and(", x, ", true)");
  std::string out = module.substr(0, at) + root + module.substr(close + 1);
  if (recognizable) {
    // `and(x, x)` is not the form either: make x the root.
    const size_t line = out.find(StrCat("  ", x, " = pred[]"));
    EXPECT_NE(line, std::string::npos);
    out.insert(line + 2, "ROOT ");
    const size_t r = out.find("  ROOT r = pred[] and(");
    out.erase(r, out.find('\n', r) - r + 1);
  }
  return out;
}

// `text` with its first `from` replaced by `to` (which must be there).
std::string Replace(std::string text, std::string_view from, std::string_view to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

const Instruction* FindSort(const Module& m) {
  for (const Instruction* i : m.entry()->instructions()) {
    if (i->opcode() == Opcode::kSort) return i;
  }
  return nullptr;
}

kernels::Comparator Classify(const std::string& text) {
  StatusOr<std::unique_ptr<Module>> m = ParseHloModule(text);
  EXPECT_TRUE(m.ok()) << m.status().ToString() << "\n" << text;
  if (!m.ok()) return {};
  const Instruction* sort = FindSort(**m);
  EXPECT_NE(sort, nullptr);
  return sort == nullptr ? kernels::Comparator{} : ClassifySortComparator(*sort);
}

Array RandomArray(DType t, const std::vector<int64_t>& dims, uint32_t seed) {
  Array a = Array::Uninitialized(Shape(t, dims));
  std::mt19937_64 rng(seed);
  const int bytes = static_cast<int>(DTypeSize(t));
  std::vector<uint64_t> specials;
  switch (t) {
    case DType::kF32:
      specials = {0x7fc00000, 0xffc00000, 0x7f800001, 0x00000000, 0x80000000, 0x7f800000,
                  0xff800000, 0x00000001, 0x80000003, 0x3f800000, 0xbf800000};
      break;
    case DType::kF64:
      specials = {0x7ff8000000000000, 0xfff8000000000000, 0x0000000000000000, 0x8000000000000000,
                  0x7ff0000000000000, 0xfff0000000000000, 0x0000000000000001, 0x3ff0000000000000};
      break;
    case DType::kF16: specials = {0x7e00, 0xfe00, 0x7c01, 0x0000, 0x8000, 0x7c00, 0xfc00, 0x0001, 0x3c00}; break;
    case DType::kBF16: specials = {0x7fc0, 0xffc0, 0x7f81, 0x0000, 0x8000, 0x7f80, 0xff80, 0x0001, 0x3f80}; break;
    default: specials = {0, 1, 2, 0xffffffffffffffff, 0x80, 0x8000, 0x80000000}; break;
  }
  std::vector<uint64_t> repeated;
  for (int i = 0; i < 4; ++i) repeated.push_back(rng());
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    const int pick = static_cast<int>(rng() % 3);
    const uint64_t bits = pick == 0 ? specials[rng() % specials.size()] : pick == 1 ? repeated[rng() % 4] : rng();
    std::memcpy(a.data() + i * bytes, &bits, static_cast<size_t>(bytes));
  }
  return a;
}

// Runs the recognized module and the unrecognizable one on the same random inputs and expects
// the same bytes in every output.
void ExpectSameAsGeneric(const std::string& module, const std::vector<DType>& dtypes, const std::vector<int64_t>& dims,
                         uint32_t seed) {
  const std::string fast = WithRoot(module, true), generic = WithRoot(module, false);
  const kernels::Comparator slow = Classify(generic);
  ASSERT_TRUE(!slow.direction && slow.keys.empty()) << "the generic variant was recognized:\n" << generic;
  std::vector<Array> args;
  for (size_t i = 0; i < dtypes.size(); ++i)
    args.push_back(RandomArray(dtypes[i], dims, seed + static_cast<uint32_t>(i)));
  StatusOr<std::vector<Array>> want = testing::RunText(generic, args);
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  StatusOr<std::vector<Array>> got = testing::RunText(fast, args);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), want->size());
  for (size_t i = 0; i < got->size(); ++i) {
    const Array& g = (*got)[i];
    const Array& w = (*want)[i];
    ASSERT_EQ(g.shape(), w.shape());
    EXPECT_EQ(std::memcmp(g.data(), w.data(), static_cast<size_t>(g.num_elements() * DTypeSize(g.dtype()))), 0)
        << "output " << i << " of\n"
        << fast;
  }
}

TEST(SortComparator, JaxFloatSortIsRecognizedAndMatchesGeneric) {
  const std::pair<std::string, DType> floats[] = {
      {"f32", DType::kF32}, {"f64", DType::kF64}, {"bf16", DType::kBF16}, {"f16", DType::kF16}};
  for (const auto& [name, t] : floats) {
    SCOPED_TRACE(name);
    const std::string m = SortModule({name}, {3000}, 0, JaxComparator({name}, 1));
    const kernels::Comparator c = Classify(WithRoot(m, true));
    ASSERT_EQ(c.keys.size(), 1u);
    EXPECT_FALSE(c.direction);
    EXPECT_EQ(c.keys[0].operand, 0);
    EXPECT_EQ(c.keys[0].direction, ComparisonDirection::kLt);
    EXPECT_EQ(c.keys[0].type, ComparisonType::kTotalOrder);
    EXPECT_TRUE(c.keys[0].canonical);
    EXPECT_EQ(c.keys[0].zero_bits, 0u);
    ExpectSameAsGeneric(m, {t}, {3000}, 1);
    // Rows of both lengths (comparison and radix paths), along a minor and a major dim.
    ExpectSameAsGeneric(SortModule({name}, {40, 300}, 1, JaxComparator({name}, 1)), {t}, {40, 300}, 2);
    ExpectSameAsGeneric(SortModule({name}, {300, 7}, 0, JaxComparator({name}, 1)), {t}, {300, 7}, 3);
    ExpectSameAsGeneric(SortModule({name}, {5, 64, 3}, 1, JaxComparator({name}, 1)), {t}, {5, 64, 3}, 4);
  }
}

TEST(SortComparator, ArgsortAndCarriedOperands) {
  // jnp.argsort sorts (x, iota); lax.sort((x, y), num_keys=1) carries y.
  const std::string m = SortModule({"f32", "s64"}, {2, 1000}, 1, JaxComparator({"f32", "s64"}, 1));
  const kernels::Comparator c = Classify(WithRoot(m, true));
  ASSERT_EQ(c.keys.size(), 1u);
  EXPECT_EQ(c.keys[0].operand, 0);
  ExpectSameAsGeneric(m, {DType::kF32, DType::kS64}, {2, 1000}, 5);
  ExpectSameAsGeneric(SortModule({"f64", "c64", "u8"}, {700}, 0, JaxComparator({"f64", "c64", "u8"}, 1)),
                      {DType::kF64, DType::kC64, DType::kU8}, {700}, 6);
}

TEST(SortComparator, LexicographicKeys) {
  // lax.sort((x, y), num_keys=2), (s32, f32, s32) with num_keys=3, jnp.lexsort's (b, a, iota).
  const std::vector<std::vector<std::string>> forms = {{"f32", "s32"}, {"s32", "f32", "s32"}, {"s32", "f32", "s64"}};
  const std::vector<int> num_keys = {2, 3, 2};
  for (size_t f = 0; f < forms.size(); ++f) {
    SCOPED_TRACE(f);
    std::vector<DType> dtypes;
    for (const std::string& t : forms[f]) dtypes.push_back(*ParseDType(t));
    const std::string m = SortModule(forms[f], {2000}, 0, JaxComparator(forms[f], num_keys[f]));
    const kernels::Comparator c = Classify(WithRoot(m, true));
    ASSERT_EQ(c.keys.size(), static_cast<size_t>(num_keys[f]));
    for (int k = 0; k < num_keys[f]; ++k) {
      EXPECT_EQ(c.keys[k].operand, k);
      EXPECT_EQ(c.keys[k].canonical, dtypes[k] == DType::kF32);
      EXPECT_EQ(c.keys[k].direction, ComparisonDirection::kLt);
    }
    ExpectSameAsGeneric(m, dtypes, {2000}, 7);
    ExpectSameAsGeneric(SortModule(forms[f], {9, 50}, 1, JaxComparator(forms[f], num_keys[f])), dtypes, {9, 50}, 8);
  }
}

TEST(SortComparator, SwappedOperandsAreRecognizedWithTheirMeaning) {
  // or(and(lex, eq), lt) and compare(b, a): the same order written differently, and the
  // descending order of compare(b, a).
  std::string cmp = JaxComparator({"f32", "s32"}, 2);
  cmp = Replace(cmp, "or(lt0, and0)", "or(and0, lt0)");
  cmp = Replace(cmp, "and(eq0, lt1)", "and(lt1, eq0)");
  cmp = Replace(cmp, "compare(a1, b1), direction=LT", "compare(b1, a1), direction=LT");
  const std::string m = SortModule({"f32", "s32"}, {1500}, 0, cmp);
  const kernels::Comparator c = Classify(WithRoot(m, true));
  ASSERT_EQ(c.keys.size(), 2u);
  EXPECT_EQ(c.keys[0].direction, ComparisonDirection::kLt);
  EXPECT_EQ(c.keys[1].direction, ComparisonDirection::kGt);
  ExpectSameAsGeneric(m, {DType::kF32, DType::kS32}, {1500}, 9);
}

TEST(SortComparator, CanonicalizedFloatCompareWithoutTotalOrder) {
  // compare LT (FLOAT) after the canonicalization: NaN rows take the compare's merge sort.
  const std::string cmp = Replace(JaxComparator({"f32", "s32"}, 1), ", type=TOTALORDER", "");
  const std::string m = SortModule({"f32", "s32"}, {6, 500}, 1, cmp);
  const kernels::Comparator c = Classify(WithRoot(m, true));
  ASSERT_EQ(c.keys.size(), 1u);
  EXPECT_EQ(c.keys[0].type, ComparisonType::kNone);
  ExpectSameAsGeneric(m, {DType::kF32, DType::kS32}, {6, 500}, 10);
}

TEST(SortComparator, NearMissesStayGeneric) {
  const std::string base = WithRoot(SortModule({"f32", "s32"}, {8}, 0, JaxComparator({"f32", "s32"}, 2)), true);
  ASSERT_EQ(Classify(base).keys.size(), 2u);
  auto expect_generic = [&](std::string_view from, std::string_view to) {
    const std::string text = Replace(base, from, to);
    const kernels::Comparator c = Classify(text);
    EXPECT_TRUE(!c.direction && c.keys.empty()) << "recognized:\n" << text;
  };
  // ne(x, x) under TOTALORDER is never true: no NaN canonicalization.
  expect_generic("compare(pa0, pa0), direction=NE", "compare(pa0, pa0), direction=NE, type=TOTALORDER");
  // The select's arms swapped; the zero select on the other parameter.
  expect_generic("select(ne.a0, nan0, s.a0)", "select(ne.a0, s.a0, nan0)");
  expect_generic("select(eq.b0, zero0, pb0)", "select(eq.b0, zero0, pa0)");
  // A zero constant that is not zero.
  expect_generic("zero0 = f32[] constant(0)", "zero0 = f32[] constant(1)");
  // The tie test on another key, a non-strict or mismatched compare.
  expect_generic("eq0 = pred[] compare(a0, b0), direction=EQ, type=TOTALORDER",
                 "eq0 = pred[] compare(a1, b1), direction=EQ, type=TOTALORDER");
  expect_generic("eq0 = pred[] compare(a0, b0), direction=EQ, type=TOTALORDER",
                 "eq0 = pred[] compare(a0, b0), direction=EQ");
  expect_generic("lt0 = pred[] compare(a0, b0), direction=LT", "lt0 = pred[] compare(a0, b0), direction=LE");
  expect_generic("lt1 = pred[] compare(a1, b1), direction=LT", "lt1 = pred[] compare(a1, b1), direction=NE");
  // Both sides one parameter; a key's compare mixing two operands.
  expect_generic("lt1 = pred[] compare(a1, b1)", "lt1 = pred[] compare(a1, a1)");
  expect_generic("lt1 = pred[] compare(a1, b1)", "lt1 = pred[] compare(b0, b1)");
  // and / or swapped.
  expect_generic("or0 = pred[] or(lt0, and0)", "or0 = pred[] and(lt0, and0)");
  // A float key compared as an integer would be: SIGNED (unsupported on floats).
  expect_generic("lt0 = pred[] compare(a0, b0), direction=LT, type=TOTALORDER",
                 "lt0 = pred[] compare(a0, b0), direction=LT, type=SIGNED");
}

}  // namespace
}  // namespace xs
