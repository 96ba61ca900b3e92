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

// ---- XLA's total-order comparators (comparators.cc as XLA's TopK, TensorFlow and older JAX
// emit them: floats compared as signed integers of their total order, a select chain of keys) ----

struct XlaKey {
  std::string type;            // the operand's dtype
  std::string direction;       // LT or GT
  bool canonical = false;      // older JAX: NaNs and zeros canonicalized before the bits
  bool via_f32 = false;        // bf16 converted to f32 first
  bool neither_tie = true;     // tie as eq(gt(a, b), gt(b, a)); else compare(a, b), direction=EQ
};

// v(x) for operand i's side `s` (a or b): the total-order bits for a float key, the parameter
// for an integer one.
std::string XlaValue(int i, char side, const XlaKey& k) {
  const std::string p = StrCat("p", side, i), v = StrCat(side, i);
  const int number = 2 * i + (side == 'b' ? 1 : 0);
  const bool is_float = k.type[0] == 'f' || k.type == "bf16";
  if (!is_float) return StrCat("  ", v, " = ", k.type, "[] parameter(", number, ")\n");
  std::string out = StrCat("  ", p, " = ", k.type, "[] parameter(", number, ")\n");
  std::string x = p, ft = k.type;
  if (k.via_f32) {
    out += StrCat("  x", side, i, " = f32[] convert(", p, ")\n");
    x = StrCat("x", side, i);
    ft = "f32";
  }
  const int bits = ft == "f64" ? 64 : ft == "f32" ? 32 : 16;
  const std::string st = StrCat("s", bits), ut = StrCat("u", bits);
  const std::string max = bits == 64 ? "9223372036854775807" : bits == 32 ? "2147483647" : "32767";
  out += StrCat("  i", side, i, " = ", st, "[] bitcast-convert(", x, ")\n");
  std::string y = StrCat("i", side, i);
  if (k.canonical) {
    const std::string nan = bits == 64 ? "9221120237041090560" : bits == 32 ? "2143289344" : "32704";
    out += StrCat("  ne", side, i, " = pred[] compare(", x, ", ", x, "), direction=NE\n",              //
                  "  nanc", side, i, " = ", st, "[] constant(", nan, ")\n",                          //
                  "  f0", side, i, " = ", ft, "[] constant(0)\n",                                    //
                  "  eqz", side, i, " = pred[] compare(", x, ", f0", side, i, "), direction=EQ\n",   //
                  "  z0", side, i, " = ", st, "[] constant(0)\n",                                    //
                  "  sz", side, i, " = ", st, "[] select(eqz", side, i, ", z0", side, i, ", ", y, ")\n",  //
                  "  y", side, i, " = ", st, "[] select(ne", side, i, ", nanc", side, i, ", sz", side, i, ")\n");
    y = StrCat("y", side, i);
  }
  out += StrCat("  zero", side, i, " = ", st, "[] constant(0)\n",                                      //
                "  neg", side, i, " = pred[] compare(", y, ", zero", side, i, "), direction=LT\n",     //
                "  max", side, i, " = ", ut, "[] constant(", max, ")\n",                              //
                "  u", side, i, " = ", ut, "[] bitcast-convert(", x, ")\n",                          //
                "  sub", side, i, " = ", ut, "[] subtract(max", side, i, ", u", side, i, ")\n",        //
                "  nb", side, i, " = ", st, "[] bitcast-convert(sub", side, i, ")\n",                 //
                "  ", v, " = ", st, "[] select(neg", side, i, ", nb", side, i, ", ", y, ")\n");
  return out;
}

// The comparator over `keys` (operands 0..keys-1) and carried operands of `carried` types:
//   select(t0 and ... and t(i-1), c(i), r(i-1)), r(0) = c(0).
std::string XlaComparator(const std::vector<XlaKey>& keys, const std::vector<std::string>& carried) {
  std::string body;
  for (int i = 0; i < static_cast<int>(keys.size()); ++i) {
    body += XlaValue(i, 'a', keys[i]) + XlaValue(i, 'b', keys[i]);
    const std::string d = keys[i].direction;
    body += StrCat("  c", i, " = pred[] compare(a", i, ", b", i, "), direction=", d, "\n");
    if (keys[i].neither_tie) {
      body += StrCat("  cr", i, " = pred[] compare(b", i, ", a", i, "), direction=", d, "\n",
                     "  t", i, " = pred[] compare(c", i, ", cr", i, "), direction=EQ\n");
    } else {
      body += StrCat("  t", i, " = pred[] compare(a", i, ", b", i, "), direction=EQ\n");
    }
  }
  for (size_t j = 0; j < carried.size(); ++j) body += PlainPair(static_cast<int>(keys.size() + j), carried[j]);
  std::string root = "c0", ties = "t0";
  for (int i = 1; i < static_cast<int>(keys.size()); ++i) {
    body += StrCat("  r", i, " = pred[] select(", ties, ", c", i, ", ", root, ")\n");
    root = StrCat("r", i);
    if (i + 1 < static_cast<int>(keys.size())) {
      body += StrCat("  all", i, " = pred[] and(", ties, ", t", i, ")\n");
      ties = StrCat("all", i);
    }
  }
  return StrCat("cmp {\n", body, "  ROOT r = pred[] and(", root, ", ", root, ")\n}\n");
}

DType DTypeNamed(const std::string& t) {
  return t == "f32" ? DType::kF32 : t == "f64" ? DType::kF64 : t == "f16" ? DType::kF16 : t == "bf16" ? DType::kBF16
       : t == "s32" ? DType::kS32 : t == "u32" ? DType::kU32 : DType::kS64;
}

TEST(SortComparator, XlaTopKComparatorsAreRecognizedAndMatchGeneric) {
  struct Case {
    std::vector<XlaKey> keys;
    std::vector<std::string> carried;
  };
  const Case cases[] = {
      // XLA's TopK: values descending by total order, ties to the lower index.
      {{{"f32", "GT"}, {"s32", "LT"}}, {}},
      {{{"bf16", "GT", false, true}, {"s32", "LT"}}, {}},
      {{{"bf16", "GT"}, {"s32", "LT"}}, {}},
      {{{"f64", "LT"}, {"s32", "LT"}}, {}},
      {{{"f16", "GT"}, {"s32", "LT"}}, {}},
      // Older JAX: canonicalized NaNs and zeros, then the bits.
      {{{"f32", "LT", true}, {"s32", "LT"}}, {}},
      // One key carrying another operand; three keys with EQ ties and an and of two ties.
      {{{"f32", "GT"}}, {"s32"}},
      {{{"f32", "LT"}, {"s32", "GT", false, false, false}, {"u32", "LT"}}, {"f32"}},
  };
  uint32_t seed = 100;
  for (const Case& c : cases) {
    std::vector<std::string> types;
    std::vector<DType> dtypes;
    for (const XlaKey& k : c.keys) types.push_back(k.type);
    for (const std::string& t : c.carried) types.push_back(t);
    for (const std::string& t : types) dtypes.push_back(DTypeNamed(t));
    const std::string m = SortModule(types, {5, 700}, 1, XlaComparator(c.keys, c.carried));
    const kernels::Comparator got = Classify(WithRoot(m, true));
    ASSERT_EQ(got.keys.size(), c.keys.size()) << WithRoot(m, true);
    for (size_t i = 0; i < c.keys.size(); ++i) {
      EXPECT_EQ(got.keys[i].operand, static_cast<int>(i));
      EXPECT_EQ(got.keys[i].direction, c.keys[i].direction == "GT" ? ComparisonDirection::kGt : ComparisonDirection::kLt);
      const bool is_float = IsFloating(dtypes[i]);
      EXPECT_EQ(got.keys[i].type, is_float ? ComparisonType::kTotalOrder : ComparisonType::kNone);
      EXPECT_EQ(got.keys[i].canonical, c.keys[i].canonical);
    }
    ExpectSameAsGeneric(m, dtypes, {5, 700}, seed++);
  }
}

TEST(SortComparator, XlaTotalOrderNearMissesStayGeneric) {
  const std::string base =
      WithRoot(SortModule({"f32", "s32"}, {8}, 0, XlaComparator({{"f32", "GT"}, {"s32", "LT"}}, {})), true);
  ASSERT_EQ(Classify(base).keys.size(), 2u);
  auto expect_generic = [&](std::string_view from, std::string_view to) {
    const std::string text = Replace(base, from, to);
    const kernels::Comparator c = Classify(text);
    EXPECT_TRUE(!c.direction && c.keys.empty()) << "recognized:\n" << text;
  };
  // Not the total-order map: another constant, a non-strict sign test, the subtraction reversed.
  expect_generic("maxa0 = u32[] constant(2147483647)", "maxa0 = u32[] constant(2147483646)");
  expect_generic("nega0 = pred[] compare(ia0, zeroa0), direction=LT", "nega0 = pred[] compare(ia0, zeroa0), direction=LE");
  expect_generic("suba0 = u32[] subtract(maxa0, ua0)", "suba0 = u32[] subtract(ua0, maxa0)");
  expect_generic("zeroa0 = s32[] constant(0)", "zeroa0 = s32[] constant(1)");
  // The keys compared UNSIGNED do not order the floats.
  expect_generic("c0 = pred[] compare(a0, b0), direction=GT", "c0 = pred[] compare(a0, b0), direction=GT, type=UNSIGNED");
  // The tie test of another pair, the select's arms swapped, a tie that is one compare.
  expect_generic("t0 = pred[] compare(c0, cr0), direction=EQ", "t0 = pred[] compare(c0, c0), direction=EQ");
  expect_generic("r1 = pred[] select(t0, c1, c0)", "r1 = pred[] select(t0, c0, c1)");
  expect_generic("r1 = pred[] select(t0, c1, c0)", "r1 = pred[] select(c0, c1, c0)");
  // Mixed sides: a's bits from b's parameter.
  expect_generic("ua0 = u32[] bitcast-convert(pa0)", "ua0 = u32[] bitcast-convert(pb0)");
  // Neither-before ties of a FLOAT compare are not equality (NaN): stays generic.
  const std::string floats = WithRoot(
      SortModule({"f32", "s32"}, {8}, 0,
                 StrCat("cmp {\n", PlainPair(0, "f32"), PlainPair(1, "s32"),
                        "  c0 = pred[] compare(a0, b0), direction=GT\n  cr0 = pred[] compare(b0, a0), direction=GT\n"
                        "  t0 = pred[] compare(c0, cr0), direction=EQ\n  c1 = pred[] compare(a1, b1), direction=LT\n"
                        "  r1 = pred[] select(t0, c1, c0)\n  ROOT r = pred[] and(r1, r1)\n}\n")),
      true);
  const kernels::Comparator c = Classify(floats);
  EXPECT_TRUE(!c.direction && c.keys.empty()) << floats;
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
