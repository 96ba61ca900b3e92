// String helpers: StrCat / StrAppend / StrJoin / StrSplit over std::string_view.
// Hand-written because Debian's absl is built with its own string_view type (not std's), which
// would force a conversion at every API boundary of a C++20 code base.
#ifndef XSHARD_BASE_STRINGS_H_
#define XSHARD_BASE_STRINGS_H_

#include <charconv>
#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace xs {
namespace strings_internal {

inline void AppendPiece(std::string& out, std::string_view s) { out.append(s); }
inline void AppendPiece(std::string& out, const char* s) { out.append(s); }
inline void AppendPiece(std::string& out, const std::string& s) { out.append(s); }
inline void AppendPiece(std::string& out, char c) { out.push_back(c); }
inline void AppendPiece(std::string& out, bool b) { out.append(b ? "true" : "false"); }
template <std::integral T>
  requires(!std::same_as<T, bool> && !std::same_as<T, char>)
void AppendPiece(std::string& out, T v) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, r.ptr);
}
template <std::floating_point T>
void AppendPiece(std::string& out, T v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);  // shortest round-trip form
  out.append(buf, r.ptr);
}
// Anything with ToString() (Shape, HloSharding, Mesh, ...).
template <typename T>
  requires requires(const T& t) { { t.ToString() } -> std::convertible_to<std::string>; }
void AppendPiece(std::string& out, const T& v) { out.append(v.ToString()); }

}  // namespace strings_internal

// StrCat("mesh axis '", name, "' has size ", 4) -> one string. Integers print in decimal,
// floating point in shortest round-trip form, objects through their ToString().
template <typename... Args>
std::string StrCat(const Args&... args) {
  std::string out;
  (strings_internal::AppendPiece(out, args), ...);
  return out;
}
template <typename... Args>
void StrAppend(std::string* out, const Args&... args) {
  (strings_internal::AppendPiece(*out, args), ...);
}

// StrJoin({1, 2, 3}, ",") -> "1,2,3"; elements go through StrCat's rules.
template <typename Range>
std::string StrJoin(const Range& range, std::string_view sep) {
  std::string out;
  bool first = true;
  for (const auto& x : range) {
    if (!first) out.append(sep);
    first = false;
    strings_internal::AppendPiece(out, x);
  }
  return out;
}

// Splits on every occurrence of `sep` (empty pieces kept): StrSplit("a,,b", ',') -> {a, "", b}.
std::vector<std::string_view> StrSplit(std::string_view s, char sep);
// Removes leading and trailing ASCII white space.
std::string_view StripWhitespace(std::string_view s);
// Parses a whole string as a base-10 int64; false on any junk or overflow.
bool ParseInt64(std::string_view s, int64_t* out);
// Parses a whole string as a double (decimal or hex float, inf, nan); false on junk.
bool ParseDouble(std::string_view s, double* out);
// Parses a positive byte count: a whole or decimal number with an optional binary suffix K, M, G or
// T (each may be followed by "B" or "iB"; case-insensitive) or "B": "4096", "8G", "512MiB", "1.5g".
// False on junk, zero, negatives, and counts above 2^62.
bool ParseByteCount(std::string_view s, int64_t* out);
// C-style quoting of `s` for messages and HLO text: "a\"b\n" -> "\"a\\\"b\\n\"".
std::string CEscape(std::string_view s);

}  // namespace xs

#endif  // XSHARD_BASE_STRINGS_H_
