// .npy reading and writing. The header is a Python dict literal; a small parser reads the subset
// numpy writes (strings, True/False, ints with an optional Python 2 'L', tuples) and names
// anything else precisely in its error.
#include "xshard/core/npy.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <new>
#include <map>
#include <tuple>

namespace xs {
namespace {

static_assert(std::endian::native == std::endian::little, "npy I/O assumes a little-endian host");

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr size_t kAlign = 64;
constexpr size_t kGrowthAxisMaxDigits = 21;
constexpr int kMaxDepth = 16;
constexpr int kMaxRank = 64;  // numpy's NPY_MAXDIMS

// A parsed header value: only what a .npy header may hold.
struct PyValue {
  enum Kind { kStr, kInt, kBool, kNone, kTuple, kList, kDict } kind = kNone;
  std::string str;
  int64_t i = 0;
  bool b = false;
  std::vector<PyValue> items;      // kTuple, kList; kDict: the values
  std::vector<std::string> keys;   // kDict: the (string) keys
};

class HeaderParser {
 public:
  explicit HeaderParser(std::string_view text) : text_(text) {}

  StatusOr<PyValue> ParseAll() {
    PyValue v;
    XS_RETURN_IF_ERROR(Parse(v, 0));
    SkipSpace();
    if (pos_ != text_.size()) return Error("unexpected text after the dict");
    return v;
  }

 private:
  Status Error(std::string_view what) const {
    std::string_view shown = text_.substr(0, 200);
    return InvalidArgument("malformed .npy header: ", what, " at character ", pos_, " of ",
                           CEscape(shown), text_.size() > 200 ? "..." : "",
                           "; the header must be a Python dict literal like {'descr': '<f4', "
                           "'fortran_order': False, 'shape': (2, 3), }");
  }
  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' ||
                                   text_[pos_] == '\t' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool Eat(char c) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  Status Parse(PyValue& v, int depth) {
    if (depth > kMaxDepth) return Error("nesting too deep");
    SkipSpace();
    if (pos_ >= text_.size()) return Error("unexpected end");
    const char c = text_[pos_];
    if (c == '\'' || c == '"') return ParseString(v);
    if (c == '{') return ParseDict(v, depth);
    if (c == '(' || c == '[') return ParseSequence(v, depth);
    if (c == '-' || (c >= '0' && c <= '9')) return ParseInt(v);
    for (auto [word, kind, value] : {std::tuple{"True", PyValue::kBool, true},
                                     std::tuple{"False", PyValue::kBool, false},
                                     std::tuple{"None", PyValue::kNone, false}}) {
      if (text_.substr(pos_, std::strlen(word)) == word) {
        pos_ += std::strlen(word);
        v.kind = kind;
        v.b = value;
        return OkStatus();
      }
    }
    return Error(StrCat("unexpected character ", CEscape(std::string(1, c))));
  }

  Status ParseString(PyValue& v) {
    const char quote = text_[pos_++];
    v.kind = PyValue::kStr;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      if (text_[pos_] == '\\') {
        if (++pos_ >= text_.size()) break;
      }
      v.str += text_[pos_++];
    }
    if (pos_ >= text_.size()) return Error("unterminated string");
    ++pos_;
    return OkStatus();
  }

  Status ParseInt(PyValue& v) {
    const size_t start = pos_;
    if (text_[pos_] == '-') ++pos_;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
    if (!ParseInt64(text_.substr(start, pos_ - start), &v.i)) {
      return Error(StrCat("bad integer '", text_.substr(start, pos_ - start), "'"));
    }
    if (pos_ < text_.size() && (text_[pos_] == 'L' || text_[pos_] == 'l')) ++pos_;  // Python 2
    v.kind = PyValue::kInt;
    return OkStatus();
  }

  Status ParseSequence(PyValue& v, int depth) {
    const char close = text_[pos_] == '(' ? ')' : ']';
    v.kind = close == ')' ? PyValue::kTuple : PyValue::kList;
    ++pos_;
    bool trailing_comma = false;
    while (!Eat(close)) {
      PyValue item;
      XS_RETURN_IF_ERROR(Parse(item, depth + 1));
      v.items.push_back(std::move(item));
      trailing_comma = Eat(',');
      if (!trailing_comma) {
        if (Eat(close)) break;
        return Error(StrCat("expected ',' or '", std::string(1, close), "'"));
      }
    }
    // (5) is the int 5 in Python, not a tuple.
    if (v.kind == PyValue::kTuple && v.items.size() == 1 && !trailing_comma) {
      PyValue inner = std::move(v.items[0]);
      v = std::move(inner);
    }
    return OkStatus();
  }

  Status ParseDict(PyValue& v, int depth) {
    v.kind = PyValue::kDict;
    ++pos_;
    while (!Eat('}')) {
      PyValue key, value;
      XS_RETURN_IF_ERROR(Parse(key, depth + 1));
      if (key.kind != PyValue::kStr) return Error("dict keys must be strings");
      if (!Eat(':')) return Error(StrCat("expected ':' after key '", key.str, "'"));
      XS_RETURN_IF_ERROR(Parse(value, depth + 1));
      v.keys.push_back(key.str);
      v.items.push_back(std::move(value));
      if (!Eat(',')) {
        if (Eat('}')) break;
        return Error("expected ',' or '}'");
      }
    }
    return OkStatus();
  }

  std::string_view text_;
  size_t pos_ = 0;
};

// numpy type code + item size -> DType.
struct DescrType {
  char code;
  int size;
  DType dtype;
};
constexpr DescrType kDescrTypes[] = {
    // clang-format off
    {'b', 1, DType::kPred}, {'i', 1, DType::kS8},  {'i', 2, DType::kS16}, {'i', 4, DType::kS32},
    {'i', 8, DType::kS64},  {'u', 1, DType::kU8},  {'u', 2, DType::kU16}, {'u', 4, DType::kU32},
    {'u', 8, DType::kU64},  {'f', 2, DType::kF16}, {'f', 4, DType::kF32}, {'f', 8, DType::kF64},
    {'c', 8, DType::kC64},  {'c', 16, DType::kC128}, {'V', 2, DType::kBF16},
    // clang-format on
    // ml_dtypes 0.6 registers float8_e5m2 with kind 'f', so np.save writes '<f1' for it (which
    // np.load cannot read back; xshard writes '<V1' like the other 1-byte types).
    {'f', 1, DType::kF8E5M2},
};
constexpr char kSupported[] =
    "b1, i1, i2, i4, i8, u1, u2, u4, u8, f2, f4, f8, c8, c16 (byte order '<', '>', '|' or '='), "
    "f1 (float8_e5m2 as ml_dtypes saves it), V2 (bfloat16) and V1 (float8_*, float4_e2m1fn, "
    "int2, int4, uint2, uint4) with an explicit element type";

struct Descr {
  DType dtype;
  bool big_endian;
};

StatusOr<Descr> ParseDescr(const PyValue& v, std::optional<DType> opaque_dtype) {
  if (v.kind == PyValue::kList) {
    return InvalidArgument("structured dtypes (a list descr) are not supported; save a plain "
                           "numeric array (supported descrs: ", kSupported, ")");
  }
  if (v.kind != PyValue::kStr) {
    return InvalidArgument("'descr' must be a dtype string such as '<f4'");
  }
  std::string_view s = v.str;
  bool big = false;
  if (!s.empty() && (s[0] == '<' || s[0] == '>' || s[0] == '|' || s[0] == '=')) {
    big = s[0] == '>';
    s.remove_prefix(1);
  }
  if (s == "O") {
    return InvalidArgument("descr '", v.str, "' is an object array (pickled Python objects); "
                           "xshard reads numeric arrays only: save with a numeric dtype");
  }
  int64_t size = 0;
  if (s.size() >= 2 && ParseInt64(s.substr(1), &size)) {
    if (s[0] == 'V' && size == 1) {
      if (!opaque_dtype || DTypeSize(*opaque_dtype) != 1) {
        return InvalidArgument("descr '", v.str,
                               "' is an opaque 1-byte type (how ml_dtypes saves float8_*, float4_e2m1fn, int2, "
                               "int4, uint2 and uint4); pass its element type (e.g. f8e4m3fn, s4) as the opaque "
                               "dtype");
      }
      return Descr{*opaque_dtype, false};
    }
    for (const DescrType& t : kDescrTypes) {
      if (t.code == s[0] && t.size == size) {
        if (t.code == 'V' && opaque_dtype) {
          if (DTypeSize(*opaque_dtype) != 2) {
            return InvalidArgument("descr '", v.str, "' has 2-byte elements but the opaque dtype ",
                                   DTypeName(*opaque_dtype), " has ", DTypeSize(*opaque_dtype));
          }
          return Descr{*opaque_dtype, false};
        }
        return Descr{t.dtype, big && size > 1 && t.code != 'V'};
      }
    }
  }
  return InvalidArgument("unsupported dtype descr '", v.str, "'; supported: ", kSupported);
}

uint64_t ReadLe(std::span<const std::byte> b, size_t pos, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(b[pos + i]) << (8 * i);
  return v;
}

std::string PyTuple(const std::vector<int64_t>& dims) {
  return StrCat("(", StrJoin(dims, ", "), dims.size() == 1 ? ",)" : ")");
}

}  // namespace

std::optional<DType> NpyOpaqueDType(DType t) {
  const std::string_view descr = DTypeNumpyDescr(t);
  if (t != DType::kToken && (descr.empty() || descr == "<V2")) return t;
  return std::nullopt;
}

StatusOr<NpyHeader> ParseNpyHeader(std::span<const std::byte> bytes, std::optional<DType> opaque_dtype) {
  if (bytes.size() < kMagicLen ||
      std::memcmp(bytes.data(), kMagic, kMagicLen) != 0) {
    std::string start(reinterpret_cast<const char*>(bytes.data()), std::min<size_t>(bytes.size(), 8));
    return InvalidArgument("not a .npy file: expected the magic string \"\\x93NUMPY\" at the "
                           "start, got ", CEscape(start));
  }
  if (bytes.size() < kMagicLen + 2) return InvalidArgument("truncated header: no format version");
  const int major = static_cast<int>(bytes[6]), minor = static_cast<int>(bytes[7]);
  if (major < 1 || major > 3 || minor != 0) {
    return InvalidArgument("unsupported .npy format version ", major, ".", minor,
                           "; supported: 1.0, 2.0, 3.0");
  }
  const size_t len_bytes = major == 1 ? 2 : 4;
  const size_t header_start = kMagicLen + 2 + len_bytes;
  if (bytes.size() < header_start) {
    return InvalidArgument("truncated header: the file ends inside the header length field");
  }
  const uint64_t header_len = ReadLe(bytes, kMagicLen + 2, len_bytes);
  if (header_len > bytes.size() - header_start) {
    return InvalidArgument("truncated header: the header length field says ", header_len,
                           " bytes but only ", bytes.size() - header_start, " follow");
  }
  const std::string_view header(reinterpret_cast<const char*>(bytes.data()) + header_start,
                                header_len);
  XS_ASSIGN_OR_RETURN(const PyValue dict, HeaderParser(header).ParseAll());
  if (dict.kind != PyValue::kDict) {
    return InvalidArgument("malformed .npy header: it is not a dict: ", CEscape(header.substr(0, 200)));
  }
  std::map<std::string, const PyValue*> fields;
  for (size_t i = 0; i < dict.keys.size(); ++i) fields[dict.keys[i]] = &dict.items[i];
  if (fields.size() != 3 || !fields.count("descr") || !fields.count("fortran_order") ||
      !fields.count("shape")) {
    std::vector<std::string> keys;
    for (const auto& [key, value] : fields) keys.push_back("'" + key + "'");
    return InvalidArgument("malformed .npy header: the dict must have exactly the keys 'descr', "
                           "'fortran_order' and 'shape'; it has ", StrJoin(keys, ", "));
  }
  XS_ASSIGN_OR_RETURN(const Descr descr, ParseDescr(*fields["descr"], opaque_dtype));
  const PyValue& order = *fields["fortran_order"];
  if (order.kind != PyValue::kBool) {
    return InvalidArgument("malformed .npy header: 'fortran_order' must be True or False");
  }
  const PyValue& shape = *fields["shape"];
  if (shape.kind != PyValue::kTuple) {
    return InvalidArgument("malformed .npy header: 'shape' must be a tuple of ints like (2, 3)");
  }
  if (shape.items.size() > kMaxRank) {
    return InvalidArgument("malformed .npy header: shape has ", shape.items.size(),
                           " dims; numpy allows at most ", kMaxRank);
  }
  std::vector<int64_t> dims;
  bool any_zero = false;
  for (const PyValue& d : shape.items) {
    if (d.kind != PyValue::kInt || d.i < 0) {
      return InvalidArgument("malformed .npy header: 'shape' must hold non-negative ints");
    }
    dims.push_back(d.i);
    any_zero |= d.i == 0;
  }
  const int64_t item = DTypeSize(descr.dtype);
  uint64_t needed = any_zero ? 0 : static_cast<uint64_t>(item);
  for (int64_t d : dims) {
    if (!any_zero && (__builtin_mul_overflow(needed, static_cast<uint64_t>(d), &needed) ||
                      needed > static_cast<uint64_t>(INT64_MAX))) {
      return InvalidArgument("shape ", PyTuple(dims), " of '", fields["descr"]->str,
                             "' is too large (its byte count overflows 64 bits)");
    }
  }
  NpyHeader h;
  h.shape = Shape(descr.dtype, dims);
  h.descr = fields["descr"]->str;
  h.fortran_order = order.b;
  h.big_endian = descr.big_endian;
  h.data_offset = static_cast<int64_t>(header_start + header_len);
  h.data_bytes = static_cast<int64_t>(needed);
  return h;
}

StatusOr<Array> ParseNpy(std::span<const std::byte> bytes, std::optional<DType> opaque_dtype) {
  XS_ASSIGN_OR_RETURN(const NpyHeader h, ParseNpyHeader(bytes, opaque_dtype));
  const uint64_t available = bytes.size() - static_cast<size_t>(h.data_offset);
  const uint64_t needed = static_cast<uint64_t>(h.data_bytes);
  if (needed != available) {
    return InvalidArgument(needed > available ? "truncated data" : "extra data", ": shape ",
                           PyTuple(h.shape.dims()), " of '", h.descr, "' needs ", needed,
                           " data bytes but the file has ", available, " after the header");
  }
  Array raw = Array::Uninitialized(h.shape);
  if (needed > 0) std::memcpy(raw.data(), bytes.data() + h.data_offset, needed);
  return DecodeNpyData(h, std::move(raw));
}

Array DecodeNpyData(const NpyHeader& h, Array a) {
  const DType dtype = h.shape.dtype();
  const int64_t item = DTypeSize(dtype);
  const int64_t n = a.num_elements();
  if (h.fortran_order && h.shape.rank() > 1 && n > 0) {
    // Element i of the file sits at row-major position `dst` (Fortran order reverses the dims).
    const std::vector<int64_t>& dims = h.shape.dims();
    Array out = Array::Uninitialized(h.shape);
    const std::vector<int64_t> strides = RowMajorStrides(dims);
    std::vector<int64_t> index(dims.size(), 0);
    for (int64_t i = 0; i < n; ++i) {
      int64_t dst = 0;
      for (size_t k = 0; k < dims.size(); ++k) dst += index[k] * strides[k];
      for (size_t k = 0; k < dims.size() && ++index[k] == dims[k]; ++k) index[k] = 0;
      std::memcpy(out.data() + dst * item, a.data() + i * item, item);
    }
    a = std::move(out);
  }
  if (h.big_endian) {
    // Complex numbers swap each part on its own.
    const int64_t part = IsComplex(dtype) ? item / 2 : item;
    std::byte* p = a.data();
    for (int64_t i = 0; i < n * item; i += part) std::reverse(p + i, p + i + part);
  }
  // Canonical bytes for the types with spare bits: pred 0/1; s2 / s4 sign-extended from ml_dtypes'
  // low bits; u2 / u4 / f4e2m1fn the low bits.
  if (dtype == DType::kPred || IsNarrowInt(dtype) || dtype == DType::kF4E2M1FN) {
    for (int64_t i = 0; i < n; ++i) a.SetDouble(i, a.GetDouble(i));
  }
  return a;
}

std::vector<std::byte> SerializeNpyHeader(const Array& array) {
  std::string descr(DTypeNumpyDescr(array.dtype()));
  if (descr.empty()) descr = "<V1";  // ml_dtypes' spelling for its 1-byte types
  std::string header = StrCat("{'descr': '", descr, "', 'fortran_order': False, 'shape': ",
                              PyTuple(array.dims()), ", }");
  if (array.rank() > 0) {
    header.append(kGrowthAxisMaxDigits - std::to_string(array.dims()[0]).size(), ' ');
  }
  size_t len_bytes = 2;
  size_t hlen = header.size() + 1;
  size_t pad = kAlign - (kMagicLen + 2 + len_bytes + hlen) % kAlign;
  if (hlen + pad > 0xffff) {
    len_bytes = 4;
    pad = kAlign - (kMagicLen + 2 + len_bytes + hlen) % kAlign;
  }
  header.append(pad, ' ');
  header += '\n';
  std::vector<std::byte> out;
  out.reserve(kMagicLen + 2 + len_bytes + header.size());
  auto put = [&out](const void* p, size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    out.insert(out.end(), b, b + n);
  };
  put(kMagic, kMagicLen);
  const uint8_t version[2] = {static_cast<uint8_t>(len_bytes == 2 ? 1 : 2), 0};
  put(version, 2);
  const uint32_t header_len = static_cast<uint32_t>(header.size());
  put(&header_len, len_bytes);  // little-endian host
  put(header.data(), header.size());
  return out;
}

std::vector<std::byte> SerializeNpy(const Array& array) {
  std::vector<std::byte> out = SerializeNpyHeader(array);
  const size_t start = out.size();
  out.insert(out.end(), array.data(), array.data() + array.byte_size());
  if (array.dtype() == DType::kS4 || array.dtype() == DType::kS2) {  // ml_dtypes' form: the low bits only
    const std::byte mask{static_cast<uint8_t>(array.dtype() == DType::kS4 ? 0x0f : 0x03)};
    for (size_t i = start; i < out.size(); ++i) out[i] &= mask;
  }
  return out;
}

}  // namespace xs
