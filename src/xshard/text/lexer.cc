// Lexer: scanning primitives and clang-style error messages for HLO text.
#include "xshard/text/lexer.h"

#include <cctype>
#include <limits>

namespace xs {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

}  // namespace

bool Lexer::IsNameChar(char c) {
  return IsAlpha(c) || IsDigit(c) || c == '_' || c == '.' || c == '$' || c == '-';
}

void Lexer::SkipSpace() {
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (IsSpace(c)) {
      ++pos_;
    } else if (c == '/' && PeekRaw(1) == '*') {
      size_t end = text_.find("*/", pos_ + 2);
      if (end == std::string_view::npos) {
        unterminated_comment_ = pos_;
        pos_ = text_.size();
      } else {
        pos_ = end + 2;
      }
    } else if (c == '/' && PeekRaw(1) == '/') {
      while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
    } else {
      break;
    }
  }
}

bool Lexer::TryConsume(char c) {
  SkipSpace();
  if (PeekRaw() != c) return false;
  ++pos_;
  return true;
}

bool Lexer::TryConsume(std::string_view s) {
  SkipSpace();
  if (text_.substr(pos_, s.size()) != s) return false;
  pos_ += s.size();
  return true;
}

bool Lexer::TryConsumeWord(std::string_view word) {
  SkipSpace();
  if (text_.substr(pos_, word.size()) != word) return false;
  char after = PeekRaw(word.size());
  if (IsNameChar(after) && !(after == '-' && PeekRaw(word.size() + 1) == '>')) return false;
  pos_ += word.size();
  return true;
}

Status Lexer::Expect(char c, std::string_view context) {
  if (TryConsume(c)) return OkStatus();
  char got = PeekRaw();
  std::string found;
  if (pos_ >= text_.size()) {
    found = "end of input";
  } else if (std::isprint(static_cast<unsigned char>(got))) {
    found = StrCat("'", std::string(1, got), "'");
  } else {  // a control or non-ASCII byte: named, never echoed raw into a one-line message
    static constexpr char kHex[] = "0123456789abcdef";
    const auto b = static_cast<unsigned char>(got);
    found = StrCat("byte 0x", std::string(1, kHex[b >> 4]), std::string(1, kHex[b & 15]));
  }
  return Error(StrCat("expected '", std::string(1, c), "' ", context, ", found ", found));
}

std::string_view Lexer::ScanIdentifier() {
  SkipSpace();
  size_t start = pos_;
  bool percent = PeekRaw() == '%';
  size_t p = pos_ + (percent ? 1 : 0);
  if (p >= text_.size()) return {};
  char first = text_[p];
  if (!IsNameChar(first) || first == '-' || (!percent && IsDigit(first))) return {};
  size_t end = p;
  while (end < text_.size() && IsNameChar(text_[end])) {
    if (text_[end] == '-' && end + 1 < text_.size() && text_[end + 1] == '>') break;
    ++end;
  }
  if (end == p) return {};
  pos_ = end;
  (void)start;
  return text_.substr(p, end - p);
}

std::string_view Lexer::PeekWord() {
  SkipSpace();
  size_t end = pos_;
  while (end < text_.size() && (IsNameChar(text_[end])) &&
         !(text_[end] == '-' && end + 1 < text_.size() && text_[end + 1] == '>'))
    ++end;
  return text_.substr(pos_, end - pos_);
}

bool Lexer::ScanInt(int64_t* out) {
  SkipSpace();
  size_t p = pos_;
  bool neg = false;
  if (PeekRaw() == '-' || PeekRaw() == '+') {
    neg = PeekRaw() == '-';
    ++p;
  }
  if (p >= text_.size() || !IsDigit(text_[p])) return false;
  uint64_t v = 0;
  const uint64_t limit = neg ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  while (p < text_.size() && IsDigit(text_[p])) {
    uint64_t d = static_cast<uint64_t>(text_[p] - '0');
    if (v > (limit - d) / 10) return false;
    v = v * 10 + d;
    ++p;
  }
  *out = neg ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
  pos_ = p;
  return true;
}

std::string_view Lexer::ScanNumberText() {
  SkipSpace();
  size_t p = pos_;
  if (PeekRaw() == '-' || PeekRaw() == '+') ++p;
  auto at = [&](size_t i) { return i < text_.size() ? text_[i] : '\0'; };
  if (text_.substr(p, 3) == "inf") {
    p += 3;
  } else if (text_.substr(p, 3) == "nan") {
    p += 3;
    if (at(p) == '(') {
      size_t close = text_.find(')', p);
      if (close == std::string_view::npos) return {};
      p = close + 1;
    }
  } else if (at(p) == '0' && (at(p + 1) == 'x' || at(p + 1) == 'X')) {
    p += 2;
    while (std::isxdigit(static_cast<unsigned char>(at(p)))) ++p;
  } else {
    size_t digits = p;
    while (IsDigit(at(p))) ++p;
    if (at(p) == '.') {
      ++p;
      while (IsDigit(at(p))) ++p;
    }
    if (p == digits || (p == digits + 1 && at(digits) == '.')) return {};
    if ((at(p) == 'e' || at(p) == 'E') &&
        (IsDigit(at(p + 1)) || ((at(p + 1) == '-' || at(p + 1) == '+') && IsDigit(at(p + 2))))) {
      p += 2;
      while (IsDigit(at(p))) ++p;
    }
  }
  if (IsAlpha(at(p)) || at(p) == '_') return {};
  std::string_view out = text_.substr(pos_, p - pos_);
  pos_ = p;
  return out;
}

bool Lexer::ScanString(std::string* out, Status* status) {
  SkipSpace();
  size_t start = pos_;
  if (PeekRaw() != '"') {
    *status = ErrorAt(start, "expected a \"string\"");
    return false;
  }
  size_t p = pos_ + 1;
  out->clear();
  while (p < text_.size() && text_[p] != '"') {
    char c = text_[p++];
    if (c != '\\') {
      out->push_back(c);
      continue;
    }
    if (p >= text_.size()) break;
    char e = text_[p++];
    switch (e) {
      case 'n': out->push_back('\n'); break;
      case 't': out->push_back('\t'); break;
      case 'r': out->push_back('\r'); break;
      case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': {
        int v = e - '0';
        for (int i = 0; i < 2 && p < text_.size() && text_[p] >= '0' && text_[p] <= '7'; ++i)
          v = v * 8 + (text_[p++] - '0');
        out->push_back(static_cast<char>(v));
        break;
      }
      case 'x': {
        int v = 0, n = 0;
        while (n < 2 && p < text_.size() && std::isxdigit(static_cast<unsigned char>(text_[p]))) {
          char h = text_[p++];
          v = v * 16 + (IsDigit(h) ? h - '0' : (std::tolower(h) - 'a' + 10));
          ++n;
        }
        out->push_back(static_cast<char>(v));
        break;
      }
      default: out->push_back(e); break;  // \" \\ \' \?
    }
  }
  if (p >= text_.size()) {
    *status = ErrorAt(start, "unterminated string: add the closing '\"'");
    return false;
  }
  pos_ = p + 1;
  return true;
}

StatusOr<std::string> Lexer::ScanVerbatimValue() {
  SkipSpace();
  size_t start = pos_;
  std::string stack;  // expected closers
  size_t p = pos_;
  while (p < text_.size()) {
    char c = text_[p];
    if (c == '"') {
      size_t q = p + 1;
      while (q < text_.size() && text_[q] != '"') q += text_[q] == '\\' ? 2 : 1;
      if (q >= text_.size()) return ErrorAt(p, "unterminated string: add the closing '\"'");
      p = q + 1;
      continue;
    }
    if (stack.empty() && (c == ',' || c == '\n' || c == ')' || c == '}' || c == ']')) break;
    if (c == '(' || c == '[' || c == '{') {
      if (stack.size() >= 512) return ErrorAt(p, "value nests brackets too deeply (over 512)");
      stack.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
    } else if (c == ')' || c == ']' || c == '}') {
      if (c != stack.back())
        return ErrorAt(p, StrCat("mismatched '", std::string(1, c), "': expected '",
                                 std::string(1, stack.back()), "'"));
      stack.pop_back();
    }
    ++p;
  }
  if (!stack.empty())
    return ErrorAt(start, StrCat("unterminated value: missing '", std::string(1, stack.back()), "'"));
  pos_ = p;
  return std::string(StripWhitespace(text_.substr(start, p - start)));
}

StatusOr<std::string> Lexer::ScanBraced() {
  SkipSpace();
  if (PeekRaw() != '{') return Error("expected '{'");
  size_t start = pos_;
  int depth = 0;
  size_t p = pos_;
  while (p < text_.size()) {
    char c = text_[p];
    if (c == '"') {
      size_t q = p + 1;
      while (q < text_.size() && text_[q] != '"') q += text_[q] == '\\' ? 2 : 1;
      if (q >= text_.size()) return ErrorAt(p, "unterminated string: add the closing '\"'");
      p = q + 1;
      continue;
    }
    if (c == '{') ++depth;
    if (c == '}' && --depth == 0) {
      pos_ = p + 1;
      return std::string(text_.substr(start, pos_ - start));
    }
    ++p;
  }
  return ErrorAt(start, "unterminated '{': add the matching '}'");
}

void Lexer::LineCol(size_t pos, int* line, int* col) const {
  if (pos > text_.size()) pos = text_.size();
  *line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < pos; ++i)
    if (text_[i] == '\n') {
      ++*line;
      line_start = i + 1;
    }
  *col = static_cast<int>(pos - line_start) + 1;
}

Status Lexer::ErrorAt(size_t pos, std::string_view message) const {
  std::string msg(message);
  if (unterminated_comment_ != std::string_view::npos) {  // the root cause of what follows
    pos = unterminated_comment_;
    msg = "unterminated comment: add the closing '*/'";
  }
  if (pos > text_.size()) pos = text_.size();
  int line, col;
  LineCol(pos, &line, &col);
  size_t ls = text_.rfind('\n', pos == 0 ? 0 : pos - 1);
  ls = (ls == std::string_view::npos || (pos == 0)) ? 0 : ls + 1;
  if (pos > 0 && pos <= text_.size() && ls > pos) ls = pos;
  size_t le = text_.find('\n', ls);
  if (le == std::string_view::npos) le = text_.size();
  std::string_view source_line = text_.substr(ls, le - ls);
  std::string caret;
  for (size_t i = ls; i < pos && i < le; ++i) caret.push_back(text_[i] == '\t' ? '\t' : ' ');
  caret.push_back('^');
  return InvalidArgument(filename_, ":", line, ":", col, ": error: ", msg, "\n", source_line, "\n",
                         caret)
      .WithDetail(StatusDetail::kTextPosition);
}

}  // namespace xs
