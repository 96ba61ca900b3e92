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
    {'b', 1, DType::kPred}, {'i', 1, DType::kS8},  {'i', 2, DType::kS16}, {'i', 4, DType::kS32},
    {'i', 8, DType::kS64},  {'u', 1, DType::kU8},  {'u', 2, DType::kU16}, {'u', 4, DType::kU32},
    {'u', 8, DType::kU64},  {'f', 2, DType::kF16}, {'f', 4, DType::kF32}, {'f', 8, DType::kF64},
    {'c', 8, DType::kC64},  {'c', 16, DType::kC128}, {'V', 2, DType::kBF16},
};
constexpr char kSupported[] =
    "b1, i1, i2, i4, i8, u1, u2, u4, u8, f2, f4, f8, c8, c16 (byte order '<', '>', '|' or '='), "
    "V2 (bfloat16 as ml_dtypes saves it) and V1 (float8_*, int4, uint4) with an explicit element "
    "type";

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
        return InvalidArgument(
            "descr '", v.str, "' is an opaque 1-byte type (how ml_dtypes saves float8_*, int4 "
            "and uint4); pass its element type (e.g. f8e4m3fn, s4) as the opaque dtype");
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

StatusOr<Array> ParseNpy(std::span<const std::byte> bytes, std::optional<DType> opaque_dtype) {
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
  const size_t data_start = header_start + header_len;
  const uint64_t available = bytes.size() - data_start;
  uint64_t needed = any_zero ? 0 : static_cast<uint64_t>(item);
  for (int64_t d : dims) {
    if (!any_zero && __builtin_mul_overflow(needed, static_cast<uint64_t>(d), &needed)) {
      return InvalidArgument("shape ", PyTuple(dims), " of '", fields["descr"]->str,
                             "' is too large (its byte count overflows 64 bits)");
    }
  }
  if (needed != available) {
    return InvalidArgument(needed > available ? "truncated data" : "extra data", ": shape ",
                           PyTuple(dims), " of '", fields["descr"]->str, "' needs ", needed,
                           " data bytes but the file has ", available, " after the header");
  }
  Array a(Shape(descr.dtype, dims));
  const std::byte* src = bytes.data() + data_start;
  const int64_t n = a.num_elements();
  // Element i of the file sits at row-major position `dst` (Fortran order reverses the dims).
  const std::vector<int64_t> strides = RowMajorStrides(dims);
  std::vector<int64_t> index(dims.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t dst = i;
    if (order.b) {
      dst = 0;
      for (size_t k = 0; k < dims.size(); ++k) dst += index[k] * strides[k];
      for (size_t k = 0; k < dims.size() && ++index[k] == dims[k]; ++k) index[k] = 0;
    }
    std::memcpy(a.data() + dst * item, src + i * item, item);
  }
  if (descr.big_endian) {
    // Complex numbers swap each part on its own.
    const int64_t part = IsComplex(descr.dtype) ? item / 2 : item;
    std::byte* p = a.data();
    for (int64_t i = 0; i < n * item; i += part) std::reverse(p + i, p + i + part);
  }
  // Canonical bytes for the types with spare bits: pred 0/1; s4 sign-extended from ml_dtypes'
  // low nibble; u4 the low nibble.
  if (descr.dtype == DType::kPred || descr.dtype == DType::kS4 || descr.dtype == DType::kU4) {
    for (int64_t i = 0; i < n; ++i) a.SetDouble(i, a.GetDouble(i));
  }
  return a;
}

std::vector<std::byte> SerializeNpy(const Array& array) {
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
  out.reserve(kMagicLen + 2 + len_bytes + header.size() + array.byte_size());
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
  put(array.data(), array.byte_size());
  if (array.dtype() == DType::kS4) {  // ml_dtypes' form: the low nibble only
    for (size_t i = out.size() - array.byte_size(); i < out.size(); ++i) out[i] &= std::byte{0x0f};
  }
  return out;
}

// The most bytes read from a device or pipe (no file size to check first).
constexpr int64_t kMaxStreamBytes = int64_t{1} << 30;

StatusOr<Array> ReadNpy(const std::string& path, std::optional<DType> opaque_dtype) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return InvalidArgument("'", path, "' is a directory, not a file; give the path of a .npy file");
  }
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    return NotFound("cannot open '", path, "' for reading: ", std::strerror(errno));
  }
  std::vector<std::byte> bytes;
  std::byte buf[1 << 16];
  size_t n;
  bool out_of_memory = false;
  // A device or pipe has no size: reading stops past kMaxStreamBytes, so an endless one
  // (/dev/zero) fails with a message instead of filling memory.
  const bool regular = std::filesystem::is_regular_file(path, ec);
  bool endless = false;
  try {
    while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) {
      bytes.insert(bytes.end(), buf, buf + n);
      // Not a .npy at all (/dev/zero): ParseNpy names the missing magic string; read no more.
      if (!regular && bytes.size() >= kMagicLen && std::memcmp(bytes.data(), kMagic, kMagicLen) != 0) break;
      if (!regular && static_cast<int64_t>(bytes.size()) > kMaxStreamBytes) {
        endless = true;
        break;
      }
    }
  } catch (const std::bad_alloc&) {
    out_of_memory = true;
  }
  if (endless) {
    std::fclose(f);
    return ResourceExhausted("reading '", path, "' stopped after ", kMaxStreamBytes >> 30,
                             " GiB: it is a device or pipe with more data than that (one that never ends?); "
                             "give a .npy file");
  }
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (out_of_memory) {
    return ResourceExhausted("reading '", path, "' needs more host memory than is available (", bytes.size(),
                             " bytes read so far)");
  }
  if (failed) return Unavailable("error reading '", path, "'");
  StatusOr<Array> a = ParseNpy(bytes, opaque_dtype);
  if (!a.ok()) return Annotate(a.status(), StrCat(path, ": "));
  return a;
}

Status WriteNpy(const std::string& path, const Array& array) {
  const std::vector<std::byte> bytes = SerializeNpy(array);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    return Unavailable("cannot open '", path, "' for writing: ", std::strerror(errno));
  }
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  if (std::fclose(f) != 0 || !ok) return Unavailable("error writing '", path, "'");
  return OkStatus();
}

}  // namespace xs
