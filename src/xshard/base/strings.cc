// String helpers.
#include "xshard/base/strings.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace xs {

std::vector<std::string_view> StrSplit(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    if (pos == std::string_view::npos) {
      out.push_back(s.substr(start));
      return out;
    }
    out.push_back(s.substr(start, pos - start));
    start = pos + 1;
  }
}

std::string_view StripWhitespace(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool ParseInt64(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  const char* begin = s.data();
  if (*begin == '+') ++begin;
  auto r = std::from_chars(begin, s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

bool ParseByteCount(std::string_view s, int64_t* out) {
  std::string unit;
  size_t end = s.size();
  while (end > 0 && std::isalpha(static_cast<unsigned char>(s[end - 1]))) --end;
  for (char c : s.substr(end)) unit += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  int shift = -1;
  const std::string_view rest = unit.empty() ? std::string_view() : std::string_view(unit).substr(1);
  if (unit.empty() || unit == "B") {
    shift = 0;
  } else if (const size_t i = std::string_view("KMGT").find(unit[0]);
             i != std::string_view::npos && (rest.empty() || rest == "B" || rest == "IB")) {
    shift = 10 * static_cast<int>(i + 1);
  }
  double value = 0;
  const std::string_view number = s.substr(0, end);
  if (shift < 0 || number.empty() || number.find_first_not_of("0123456789.") != std::string_view::npos ||
      !ParseDouble(number, &value)) {
    return false;
  }
  const double bytes = value * static_cast<double>(int64_t{1} << shift);
  if (!(bytes >= 1) || bytes > 4.6e18) return false;
  *out = static_cast<int64_t>(bytes);
  return true;
}

bool ParseDouble(std::string_view s, double* out) {
  if (s.empty() || s.size() > 512) return false;
  std::string copy(s);
  std::string_view body = copy;
  bool neg = false;
  if (!body.empty() && (body[0] == '-' || body[0] == '+')) {
    neg = body[0] == '-';
    body.remove_prefix(1);
  }
  if (body == "inf" || body == "infinity") {
    *out = neg ? -INFINITY : INFINITY;
    return true;
  }
  if (body == "nan") {
    *out = neg ? -NAN : NAN;
    return true;
  }
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size()) return false;
  *out = v;
  return true;
}

std::string CEscape(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          const char* hex = "0123456789abcdef";
          out += "\\x";
          out += hex[(c >> 4) & 0xf];
          out += hex[c & 0xf];
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace xs
