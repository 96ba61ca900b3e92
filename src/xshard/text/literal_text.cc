// Literal parsing and printing with a bit-exact codec for every element type.
#include "xshard/text/literal_text.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace xs {
namespace {

// A binary floating-point format. kIeee has infinities and NaNs with an all-ones exponent; kFn
// (e4m3fn) has no infinity and NaN only at all-ones exponent and mantissa; kFnuz has no infinity,
// no negative zero and NaN = the sign bit alone; kE8M0 is unsigned powers of two with NaN = 0xff;
// kFinite (f4e2m1fn) has neither infinity nor NaN.
enum class FloatKind { kIeee, kFn, kFnuz, kE8M0, kFinite };
struct FloatFormat {
  int exp_bits, man_bits, bias;
  FloatKind kind;
};

std::optional<FloatFormat> FormatOf(DType t) {
  switch (t) {
    case DType::kF16: return FloatFormat{5, 10, 15, FloatKind::kIeee};
    case DType::kBF16: return FloatFormat{8, 7, 127, FloatKind::kIeee};
    case DType::kF32: case DType::kC64: return FloatFormat{8, 23, 127, FloatKind::kIeee};
    case DType::kF64: case DType::kC128: return FloatFormat{11, 52, 1023, FloatKind::kIeee};
    case DType::kF8E4M3FN: return FloatFormat{4, 3, 7, FloatKind::kFn};
    case DType::kF8E4M3B11FNUZ: return FloatFormat{4, 3, 11, FloatKind::kFnuz};
    case DType::kF8E5M2: return FloatFormat{5, 2, 15, FloatKind::kIeee};
    case DType::kF8E8M0FNU: return FloatFormat{8, 0, 127, FloatKind::kE8M0};
    case DType::kF8E4M3FNUZ: return FloatFormat{4, 3, 8, FloatKind::kFnuz};
    case DType::kF8E5M2FNUZ: return FloatFormat{5, 2, 16, FloatKind::kFnuz};
    case DType::kF8E4M3: return FloatFormat{4, 3, 7, FloatKind::kIeee};
    case DType::kF8E3M4: return FloatFormat{3, 4, 3, FloatKind::kIeee};
    case DType::kF4E2M1FN: return FloatFormat{2, 1, 1, FloatKind::kFinite};
    default: return std::nullopt;
  }
}

// A parsed float token: value, or NaN with sign and optional payload.
struct FloatToken {
  double value = 0;
  bool is_nan = false;
  bool negative = false;
  std::optional<uint64_t> payload;
};

StatusOr<uint64_t> EncodeFloat(const FloatFormat& f, const FloatToken& tok, std::string_view text,
                               DType t) {
  const uint64_t man_mask = (uint64_t{1} << f.man_bits) - 1;
  const uint64_t exp_all = (uint64_t{1} << f.exp_bits) - 1;
  const int sign_shift = f.exp_bits + f.man_bits;
  auto err = [&](std::string_view why) {
    return InvalidArgument("constant value '", text, "' is not representable as ", DTypeName(t),
                           ": ", why);
  };
  if (tok.is_nan) {
    switch (f.kind) {
      case FloatKind::kIeee: {
        uint64_t payload = tok.payload.value_or(uint64_t{1} << (f.man_bits - 1));
        if (payload == 0 || payload > man_mask)
          return err(StrCat("a NaN payload must be in 1..", man_mask));
        return (uint64_t{tok.negative} << sign_shift) | (exp_all << f.man_bits) | payload;
      }
      case FloatKind::kFn:
        if (tok.payload && *tok.payload != man_mask)
          return err("this type has a single NaN encoding; write nan without a payload");
        return (uint64_t{tok.negative} << sign_shift) | (exp_all << f.man_bits) | man_mask;
      case FloatKind::kFnuz:
        if (tok.payload) return err("this type has a single NaN; write nan without a payload");
        return uint64_t{1} << sign_shift;
      case FloatKind::kE8M0:
        if (tok.payload) return err("this type has a single NaN; write nan without a payload");
        return 0xff;
      case FloatKind::kFinite: return err("the type has no NaN");
    }
  }
  double v = tok.value;
  bool neg = std::signbit(v);
  double a = std::fabs(v);
  if (std::isinf(v)) {
    if (f.kind != FloatKind::kIeee) return err("the type has no infinity");
    return (uint64_t{neg} << sign_shift) | (exp_all << f.man_bits);
  }
  if (f.kind == FloatKind::kE8M0) {
    if (neg || a == 0) return err("f8e8m0fnu holds only positive powers of two");
    int e = static_cast<int>(std::lround(std::log2(a)));
    if (e + f.bias < 0 || e + f.bias > 254) return err("out of range");
    return static_cast<uint64_t>(e + f.bias);
  }
  uint64_t sign = (f.kind == FloatKind::kFnuz && a == 0) ? 0 : uint64_t{neg} << sign_shift;
  if (a == 0) return sign;
  int exp2;
  std::frexp(a, &exp2);
  int e = exp2 - 1;  // a = 1.x * 2^e
  const int emin = 1 - f.bias;
  uint64_t exp_field, man;
  if (e < emin) {  // subnormal (may round up to the smallest normal: the carry sets exp to 1)
    double m = std::nearbyint(std::ldexp(a, f.man_bits - emin));
    man = static_cast<uint64_t>(m);
    exp_field = 0;
    if (man > man_mask) {
      exp_field = 1;
      man = 0;
    }
  } else {
    double m = std::nearbyint(std::ldexp(a, f.man_bits - e)) - std::ldexp(1.0, f.man_bits);
    man = static_cast<uint64_t>(m);
    if (man > man_mask) {
      man = 0;
      ++e;
    }
    exp_field = static_cast<uint64_t>(e + f.bias);
  }
  uint64_t max_exp = f.kind == FloatKind::kIeee ? exp_all - 1 : exp_all;
  uint64_t max_man_at_top = f.kind == FloatKind::kFn ? man_mask - 1 : man_mask;
  if (exp_field > max_exp || (exp_field == max_exp && man > max_man_at_top))
    return err("out of range (it overflows to infinity)");
  return sign | (exp_field << f.man_bits) | man;
}

// Decodes bits; sets *nan when the encoding is a NaN.
double DecodeFloat(const FloatFormat& f, uint64_t bits, bool* nan) {
  const uint64_t man_mask = (uint64_t{1} << f.man_bits) - 1;
  const uint64_t exp_all = (uint64_t{1} << f.exp_bits) - 1;
  const int sign_shift = f.exp_bits + f.man_bits;
  *nan = false;
  if (f.kind == FloatKind::kE8M0) {
    if (bits == 0xff) return *nan = true, 0;
    return std::ldexp(1.0, static_cast<int>(bits) - f.bias);
  }
  bool neg = (bits >> sign_shift) & 1;
  uint64_t exp_field = (bits >> f.man_bits) & exp_all;
  uint64_t man = bits & man_mask;
  if (f.kind == FloatKind::kFnuz && bits == (uint64_t{1} << sign_shift)) return *nan = true, 0;
  if (f.kind == FloatKind::kFn && exp_field == exp_all && man == man_mask) return *nan = true, 0;
  if (f.kind == FloatKind::kIeee && exp_field == exp_all) {
    if (man != 0) return *nan = true, 0;
    return neg ? -HUGE_VAL : HUGE_VAL;
  }
  double mag = exp_field == 0
                   ? std::ldexp(static_cast<double>(man), 1 - f.bias - f.man_bits)
                   : std::ldexp(static_cast<double>(man | (uint64_t{1} << f.man_bits)),
                                static_cast<int>(exp_field) - f.bias - f.man_bits);
  return neg ? -mag : mag;
}

std::string FloatText(const FloatFormat& f, uint64_t bits) {
  bool nan;
  double v = DecodeFloat(f, bits, &nan);
  const int sign_shift = f.exp_bits + f.man_bits;
  const uint64_t man_mask = (uint64_t{1} << f.man_bits) - 1;
  if (nan) {
    bool neg = f.kind != FloatKind::kE8M0 && ((bits >> sign_shift) & 1);
    std::string s = neg ? "-nan" : "nan";
    uint64_t man = bits & man_mask;
    if (f.kind == FloatKind::kIeee && man != (uint64_t{1} << (f.man_bits - 1))) {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "(0x%llx)", static_cast<unsigned long long>(man));
      s += buf;
    }
    return s;
  }
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  // Like XLA: the type's digits10 significant digits when that round-trips, else more.
  char buf[64];
  for (int p = f.man_bits > 23 ? 15 : 6; p <= 17; ++p) {
    std::snprintf(buf, sizeof(buf), "%.*g", p, v);
    FloatToken tok;
    tok.value = std::strtod(buf, nullptr);
    auto back = EncodeFloat(f, tok, buf, DType::kF64);
    if (back.ok() && *back == bits) break;
  }
  return buf;
}

struct IntRange {
  bool is_signed;
  int bits;
};

StatusOr<FloatToken> ParseFloatToken(Lexer& lex, DType t) {
  size_t at = (lex.SkipSpace(), lex.pos());
  std::string_view text = lex.ScanNumberText();
  if (text.empty())
    return lex.ErrorAt(at, StrCat("expected a number for a ", DTypeName(t), " constant element"));
  FloatToken tok;
  std::string_view body = text;
  if (!body.empty() && (body[0] == '-' || body[0] == '+')) {
    tok.negative = body[0] == '-';
    body.remove_prefix(1);
  }
  if (body.substr(0, 3) == "nan") {
    tok.is_nan = true;
    if (body.size() > 3) {  // nan(0x...)
      std::string_view hex = body.substr(4, body.size() - 5);
      if (hex.substr(0, 2) != "0x" || hex.size() < 3 || hex.size() > 18)
        return lex.ErrorAt(at, StrCat("bad NaN payload '", text, "': write nan(0x<hex>)"));
      tok.payload = std::strtoull(std::string(hex.substr(2)).c_str(), nullptr, 16);
    }
    return tok;
  }
  if (!ParseDouble(std::string(text), &tok.value))
    return lex.ErrorAt(at, StrCat("bad number '", text, "'"));
  if (std::isinf(tok.value) && body.substr(0, 3) != "inf")
    return lex.ErrorAt(at, StrCat("constant value '", text, "' overflows ", DTypeName(t)));
  return tok;
}

Status ParseFloatInto(Lexer& lex, DType t, const FloatFormat& f, std::byte* dst) {
  size_t at = (lex.SkipSpace(), lex.pos());
  XS_ASSIGN_OR_RETURN(FloatToken tok, ParseFloatToken(lex, t));
  std::string_view text = lex.text().substr(at, lex.pos() - at);
  auto bits = EncodeFloat(f, tok, text, t);
  if (!bits.ok()) return lex.ErrorAt(at, bits.status().message());
  int bytes = static_cast<int>(DTypeSize(t)) / (IsComplex(t) ? 2 : 1);
  uint64_t b = *bits;
  std::memcpy(dst, &b, bytes);  // little-endian host
  return OkStatus();
}

Status ParseIntInto(Lexer& lex, DType t, std::byte* dst) {
  size_t at = (lex.SkipSpace(), lex.pos());
  std::string_view text = lex.ScanNumberText();
  if (text.empty())
    return lex.ErrorAt(at, StrCat("expected an integer for a ", DTypeName(t), " constant element"));
  bool is_signed = IsSignedInteger(t);
  int bits = IsNarrowInt(t) ? DTypeBitWidth(t) : static_cast<int>(DTypeSize(t)) * 8;
  uint64_t raw;
  int64_t sv;
  if (ParseInt64(text, &sv)) {
    // u64 accepts negative values as their two's complement, as XLA's parser does.
    bool ok = is_signed ? (bits == 64 || (sv >= -(int64_t{1} << (bits - 1)) &&
                                          sv < (int64_t{1} << (bits - 1))))
                        : (bits == 64 || (sv >= 0 && sv < (int64_t{1} << bits)));
    if (!ok)
      return lex.ErrorAt(at, StrCat("constant value ", text, " is out of range for ",
                                    DTypeName(t)));
    raw = static_cast<uint64_t>(sv);
  } else {
    char* end = nullptr;
    std::string s(text);
    errno = 0;
    raw = std::strtoull(s.c_str(), &end, 10);
    if (is_signed || bits != 64 || s[0] == '-' || errno != 0 || end != s.c_str() + s.size())
      return lex.ErrorAt(at, StrCat("constant value '", text, "' is not a valid ", DTypeName(t),
                                    " integer"));
  }
  std::memcpy(dst, &raw, DTypeSize(t));
  return OkStatus();
}

Status ParseElement(Lexer& lex, Array& arr, int64_t index) {
  DType t = arr.dtype();
  std::byte* dst = arr.data() + index * DTypeSize(t);
  if (t == DType::kPred) {
    if (lex.TryConsumeWord("true") || lex.TryConsume('1')) {
      dst[0] = std::byte{1};
    } else if (lex.TryConsumeWord("false") || lex.TryConsume('0')) {
      dst[0] = std::byte{0};
    } else {
      return lex.Error("expected true, false, 1 or 0 for a pred constant element");
    }
    return OkStatus();
  }
  if (IsComplex(t)) {
    const FloatFormat f = *FormatOf(t);
    int half = static_cast<int>(DTypeSize(t)) / 2;
    XS_RETURN_IF_ERROR(lex.Expect('(', "to open a complex value (re, im)"));
    XS_RETURN_IF_ERROR(ParseFloatInto(lex, t, f, dst));
    XS_RETURN_IF_ERROR(lex.Expect(',', "between the real and imaginary parts"));
    XS_RETURN_IF_ERROR(ParseFloatInto(lex, t, f, dst + half));
    return lex.Expect(')', "to close a complex value");
  }
  if (auto f = FormatOf(t)) return ParseFloatInto(lex, t, *f, dst);
  if (IsInteger(t)) return ParseIntInto(lex, t, dst);
  return lex.Error(StrCat("constants of type ", DTypeName(t), " are not supported"));
}

// Parses `{...}` nesting for dims[d..] into arr starting at linear index *next.
Status ParseNested(Lexer& lex, Array& arr, int d, int64_t* next) {
  const auto& dims = arr.dims();
  size_t open = (lex.SkipSpace(), lex.pos());
  XS_RETURN_IF_ERROR(lex.Expect('{', StrCat("to open dim ", d, " of the constant")));
  int64_t count = 0;
  if (!lex.TryConsume('}')) {
    do {
      if (count >= dims[d])
        return lex.Error(StrCat("too many elements in dim ", d, " of the constant: the shape ",
                                arr.shape().ToString(), " has ", dims[d]));
      if (d + 1 < arr.rank()) {
        XS_RETURN_IF_ERROR(ParseNested(lex, arr, d + 1, next));
      } else {
        XS_RETURN_IF_ERROR(ParseElement(lex, arr, (*next)++));
      }
      ++count;
    } while (lex.TryConsume(','));
    XS_RETURN_IF_ERROR(lex.Expect('}', StrCat("to close dim ", d, " of the constant")));
  }
  if (count != dims[d])
    return lex.ErrorAt(open, StrCat("dim ", d, " of the constant has ", count,
                                    " element(s) but the shape ", arr.shape().ToString(),
                                    " needs ", dims[d]));
  return OkStatus();
}

constexpr int64_t kMaxConstantBytes = int64_t{1} << 28;

void PrintNested(const Array& arr, int d, int64_t* next, std::string* out) {
  bool spaced = arr.rank() > 1;
  out->append(spaced ? "{ " : "{");
  for (int64_t i = 0; i < arr.dims()[d]; ++i) {
    if (i) out->append(", ");
    if (d + 1 < arr.rank()) {
      PrintNested(arr, d + 1, next, out);
    } else {
      out->append(PrintElement(arr, (*next)++));
    }
  }
  if (arr.dims()[d] == 0 && spaced) out->pop_back();
  out->append(spaced && arr.dims()[d] > 0 ? " }" : "}");
}

}  // namespace

StatusOr<Literal> ParseLiteral(Lexer& lex, const Shape& shape) {
  Literal lit;
  if (shape.IsTuple()) {
    XS_RETURN_IF_ERROR(lex.Expect('(', "to open a tuple constant"));
    for (int i = 0; i < shape.tuple_size(); ++i) {
      if (i > 0) XS_RETURN_IF_ERROR(lex.Expect(',', "between tuple constant elements"));
      XS_ASSIGN_OR_RETURN(Literal e, ParseLiteral(lex, shape.tuple_shape(i)));
      lit.elements.push_back(std::move(e));
    }
    XS_RETURN_IF_ERROR(lex.Expect(')', StrCat("to close a tuple constant of ", shape.tuple_size(),
                                              " element(s)")));
    return lit;
  }
  if (shape.IsToken()) return lex.Error("a constant cannot have a token shape");
  for (int i = 0; i < shape.rank(); ++i)
    if (shape.is_dynamic_dim(i) || shape.dim(i) < 0)
      return lex.Error(StrCat("a constant needs a static shape, got ", shape.ToString()));
  if (shape.byte_size() > kMaxConstantBytes)
    return lex.Error(StrCat("constant of shape ", shape.ToString(), " is larger than 256 MiB"));
  Array arr(shape.WithoutLayout());
  if (shape.rank() > 0 && lex.TryConsume("{...}")) {
    lit.elided = true;
  } else if (shape.rank() == 0 || lex.Peek() != '{') {
    // A single value fills the whole array (XLA accepts `f32[5,1024] constant(1)`).
    if (arr.num_elements() > 0) XS_RETURN_IF_ERROR(ParseElement(lex, arr, 0));
    // Doubling copies: O(log n) calls for multi-million-element splats.
    int64_t total = arr.num_elements() * DTypeSize(arr.dtype());
    for (int64_t done = DTypeSize(arr.dtype()); done > 0 && done < total; done *= 2)
      std::memcpy(arr.data() + done, arr.data(), std::min(done, total - done));
  } else {
    int64_t next = 0;
    XS_RETURN_IF_ERROR(ParseNested(lex, arr, 0, &next));
  }
  lit.array = std::move(arr);
  return lit;
}

std::string PrintElement(const Array& arr, int64_t index) {
  DType t = arr.dtype();
  const std::byte* src = arr.data() + index * DTypeSize(t);
  // XLA writes pred scalars as true / false and pred array elements as 1 / 0.
  if (t == DType::kPred)
    return arr.rank() == 0 ? (src[0] != std::byte{0} ? "true" : "false")
                           : (src[0] != std::byte{0} ? "1" : "0");
  if (auto f = FormatOf(t)) {
    int bytes = static_cast<int>(DTypeSize(t)) / (IsComplex(t) ? 2 : 1);
    auto read = [&](const std::byte* p) {
      uint64_t b = 0;
      std::memcpy(&b, p, bytes);
      return b;
    };
    if (IsComplex(t))
      return StrCat("(", FloatText(*f, read(src)), ", ", FloatText(*f, read(src + bytes)), ")");
    return FloatText(*f, read(src));
  }
  uint64_t raw = 0;
  std::memcpy(&raw, src, DTypeSize(t));
  if (IsSignedInteger(t)) {
    int bits = t == DType::kS4 ? 8 : static_cast<int>(DTypeSize(t)) * 8;
    int64_t v = static_cast<int64_t>(raw << (64 - bits)) >> (64 - bits);
    return StrCat(v);
  }
  return StrCat(raw);
}

std::string PrintLiteral(const Literal& lit) {
  if (lit.IsTuple()) {
    std::string s = "(";
    for (size_t i = 0; i < lit.elements.size(); ++i)
      StrAppend(&s, i ? ", " : "", PrintLiteral(lit.elements[i]));
    return s + ")";
  }
  const Array& arr = *lit.array;
  if (arr.rank() == 0) {
    std::string e = PrintElement(arr, 0);
    return e;
  }
  if (lit.elided) return "{...}";
  // Large arrays of one repeated value print as that value (a splat, which ParseLiteral reads).
  int64_t n = arr.num_elements(), size = DTypeSize(arr.dtype());
  // Every element equals the previous one iff the bytes equal themselves shifted by one element.
  if (n > 16 && size > 0 && std::memcmp(arr.data() + size, arr.data(), (n - 1) * size) == 0)
    return PrintElement(arr, 0);
  std::string out;
  int64_t next = 0;
  PrintNested(arr, 0, &next, &out);
  return out;
}

}  // namespace xs
