// Array::ToString and Array::Repr: numpy's array2string with default print options (precision 8,
// threshold 1000, edgeitems 3, linewidth 75) and JAX's Array repr, ported from numpy's
// arrayprint.py (_formatArray, FloatingFormat, ...) and jax/_src/array.py (ArrayImpl.__repr__).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>

#include "xshard/core/array.h"
#include "xshard/core/float_format.h"

namespace xs {
namespace {

constexpr int kLineWidth = 75;
constexpr int64_t kThreshold = 1000;
constexpr int64_t kEdgeItems = 3;
constexpr int kPrecision = 8;

// numpy picks a formatter by scalar type; ml_dtypes types (bfloat16, float8_*, float4_e2m1fn,
// int2, int4, uint2, uint4) are not numpy number subclasses, so numpy prints them with repr() of
// each element, unpadded.
enum class PrintKind { kBool, kInt, kFloat, kComplex, kRepr };

PrintKind KindOf(DType t) {
  if (t == DType::kPred) return PrintKind::kBool;
  if (t == DType::kBF16 || IsNarrowType(t)) {
    return PrintKind::kRepr;
  }
  if (IsInteger(t)) return PrintKind::kInt;
  if (IsComplex(t)) return PrintKind::kComplex;
  return PrintKind::kFloat;
}

FloatWidth WidthOf(DType t) {
  if (t == DType::kF16) return FloatWidth::k16;
  if (t == DType::kF32 || t == DType::kC64) return FloatWidth::k32;
  return FloatWidth::k64;
}

// `x` rounded to the width: the value numpy holds after computing in that dtype.
double RoundTo(FloatWidth w, double x) {
  if (w == FloatWidth::k16) return HalfToFloat(DoubleToHalf(x));
  if (w == FloatWidth::k32) return static_cast<float>(x);
  return x;
}

double ImagAt(const Array& a, int64_t i) {
  if (a.dtype() == DType::kC64) return a.values<std::complex<float>>()[i].imag();
  return a.values<std::complex<double>>()[i].imag();
}

std::string RStrip(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

// numpy's FloatingFormat (floatmode 'maxprec', suppress=False, sign '-' or '+'): one layout for
// every element, chosen from the finite values shown.
class FloatFormatter {
 public:
  FloatFormatter(const std::vector<double>& data, FloatWidth width, bool plus)
      : width_(width), plus_(plus) {
    std::vector<double> finite;
    double max_val = 0, min_val = INFINITY;
    bool any_non_finite = false, any_neg_inf = false;
    for (double x : data) {
      if (!std::isfinite(x)) {
        any_non_finite = true;
        any_neg_inf |= std::isinf(x) && x < 0;
        continue;
      }
      finite.push_back(x);
      if (x != 0) {
        max_val = std::max(max_val, std::fabs(x));
        min_val = std::min(min_val, std::fabs(x));
      }
    }
    if (max_val > 0) {
      // Computed in the dtype, as numpy does (numpy 2 compares with the Python float rounded to
      // the dtype; the cutoff is 10**min(8, finfo.precision)).
      static constexpr double kExpCutoff[] = {1e3, 1e6, 1e8};
      double ratio = max_val / min_val;
      if (width == FloatWidth::k16) {
        ratio = HalfToFloat(FloatToHalf(static_cast<float>(max_val) / static_cast<float>(min_val)));
      } else if (width == FloatWidth::k32) {
        ratio = static_cast<float>(max_val) / static_cast<float>(min_val);
      }
      exp_format_ = max_val >= kExpCutoff[static_cast<int>(width)] ||
                    min_val < RoundTo(width, 0.0001) || ratio > 1000.0;
    }
    FloatFormatOptions o;
    o.precision = kPrecision;
    o.trim = TrimMode::kZeros;
    o.sign = plus_;
    if (finite.empty()) {
      pad_left_ = pad_right_ = 0;
    } else if (exp_format_) {
      size_t int_len = 0, frac_len = 0, exp_len = 0;
      for (double x : finite) {
        const std::string s = FormatFloatScientific(x, width, o);
        const size_t dot = s.find('.'), e = s.find('e');
        int_len = std::max(int_len, dot);
        frac_len = std::max(frac_len, e - dot - 1);
        exp_len = std::max(exp_len, s.size() - e - 1);
      }
      exp_size_ = static_cast<int>(exp_len) - 1;
      trim_ = TrimMode::kKeep;
      precision_ = min_digits_ = static_cast<int>(frac_len);
      pad_left_ = static_cast<int>(int_len);
      pad_right_ = exp_size_ + 2 + precision_;
    } else {
      size_t int_len = 0, frac_len = 0;
      for (double x : finite) {
        const std::string s = FormatFloatPositional(x, width, o);
        const size_t dot = s.find('.');
        int_len = std::max(int_len, dot);
        frac_len = std::max(frac_len, s.size() - dot - 1);
      }
      pad_left_ = static_cast<int>(int_len);
      pad_right_ = static_cast<int>(frac_len);
      min_digits_ = 0;
    }
    if (any_non_finite) {
      const int offset = pad_right_ + 1;
      const int neg_inf = (plus_ || any_neg_inf) ? 1 : 0;
      pad_left_ = std::max({pad_left_, 3 - offset, 3 + neg_inf - offset});
    }
  }

  std::string operator()(double x) const {
    if (!std::isfinite(x)) {
      std::string ret = std::isnan(x) ? std::string(plus_ ? "+" : "") + "nan"
                                      : std::string(x < 0 ? "-" : plus_ ? "+" : "") + "inf";
      const int pad = pad_left_ + pad_right_ + 1 - static_cast<int>(ret.size());
      return std::string(std::max(pad, 0), ' ') + ret;
    }
    FloatFormatOptions o;
    o.precision = precision_;
    o.min_digits = min_digits_;
    o.trim = trim_;
    o.sign = plus_;
    o.pad_left = pad_left_;
    if (exp_format_) {
      o.exp_digits = exp_size_;
      return FormatFloatScientific(x, width_, o);
    }
    o.pad_right = pad_right_;
    return FormatFloatPositional(x, width_, o);
  }

 private:
  FloatWidth width_;
  bool plus_;
  bool exp_format_ = false;
  int precision_ = kPrecision;
  int min_digits_ = -1;
  TrimMode trim_ = TrimMode::kZeros;
  int pad_left_ = 0, pad_right_ = 0, exp_size_ = -1;
};

// repr() of one ml_dtypes element: C++ ostream << float (%g, 6 digits), NaN without its sign.
std::string ReprWord(const Array& a, int64_t i) {
  if (IsNarrowInt(a.dtype())) {
    return std::to_string(static_cast<int64_t>(a.GetDouble(i)));
  }
  const float f = static_cast<float>(a.GetDouble(i));
  if (std::isnan(f)) return "nan";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", static_cast<double>(f));
  return buf;
}

// Integers exactly (GetDouble would round past 2^53).
std::string IntWord(const Array& a, int64_t i) {
  switch (a.dtype()) {
    case DType::kS8: return std::to_string(a.values<int8_t>()[i]);
    case DType::kS16: return std::to_string(a.values<int16_t>()[i]);
    case DType::kS32: return std::to_string(a.values<int32_t>()[i]);
    case DType::kS64: return std::to_string(a.values<int64_t>()[i]);
    case DType::kU8: return std::to_string(a.values<uint8_t>()[i]);
    case DType::kU16: return std::to_string(a.values<uint16_t>()[i]);
    case DType::kU32: return std::to_string(a.values<uint32_t>()[i]);
    default: return std::to_string(a.values<uint64_t>()[i]);
  }
}

using Formatter = std::function<std::string(int64_t)>;

// The element formatter numpy would build from the shown elements `shown`.
Formatter MakeFormatter(const Array& a, const std::vector<int64_t>& shown) {
  switch (KindOf(a.dtype())) {
    case PrintKind::kBool: {
      const std::string true_str = a.rank() == 0 ? "True" : " True";
      return [&a, true_str](int64_t i) { return a.GetDouble(i) != 0 ? true_str : "False"; };
    }
    case PrintKind::kInt: {
      // Width of the longest of str(max) and str(min); every element right-aligned to it.
      size_t width = 0;
      for (int64_t i : shown) width = std::max(width, IntWord(a, i).size());
      return [&a, width](int64_t i) {
        const std::string w = IntWord(a, i);
        return std::string(width - w.size(), ' ') + w;
      };
    }
    case PrintKind::kFloat: {
      std::vector<double> data;
      for (int64_t i : shown) data.push_back(a.GetDouble(i));
      FloatFormatter f(data, WidthOf(a.dtype()), false);
      return [&a, f](int64_t i) { return f(a.GetDouble(i)); };
    }
    case PrintKind::kComplex: {
      std::vector<double> re, im;
      for (int64_t i : shown) {
        re.push_back(a.GetDouble(i));
        im.push_back(ImagAt(a, i));
      }
      FloatFormatter fr(re, WidthOf(a.dtype()), false), fi(im, WidthOf(a.dtype()), true);
      return [&a, fr, fi](int64_t i) {
        std::string imag = fi(ImagAt(a, i));
        imag.insert(RStrip(imag).size(), 1, 'j');  // 'j' goes before the right padding
        return fr(a.GetDouble(i)) + imag;
      };
    }
    case PrintKind::kRepr:
      return [&a](int64_t i) { return ReprWord(a, i); };
  }
  return {};
}

// numpy's _leading_trailing: the elements kept when summarizing (all when not).
void CollectShown(const Array& a, const std::vector<int64_t>& strides, bool summarize, int axis,
                  int64_t offset, std::vector<int64_t>* out) {
  if (axis == a.rank()) {
    out->push_back(offset);
    return;
  }
  const int64_t n = a.dims()[axis];
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) i = n - kEdgeItems;
    CollectShown(a, strides, summarize, axis + 1, offset + i * strides[axis], out);
  }
}

// numpy's _extendLine: wrap before `word` when it would pass `width`, unless the line is empty.
void ExtendLine(std::string& s, std::string& line, const std::string& word, int width,
                const std::string& next_line_prefix) {
  if (line.size() + word.size() > static_cast<size_t>(width) &&
      line.size() > next_line_prefix.size()) {
    s += RStrip(line) + "\n";
    line = next_line_prefix;
  }
  line += word;
}

struct PrintContext {
  const Array& array;
  std::vector<int64_t> strides;
  const Formatter& format;
  std::string separator;
  bool summarize;
};

// numpy's _formatArray recurser.
std::string Recurse(const PrintContext& c, int axis, int64_t offset, const std::string& hanging,
                    int width) {
  const int axes_left = c.array.rank() - axis;
  if (axes_left == 0) return c.format(offset);
  const std::string next_hanging = hanging + " ";
  const int next_width = width - 1;
  const int64_t n = c.array.dims()[axis];
  const bool show_summary = c.summarize && 2 * kEdgeItems < n;
  const int64_t leading = show_summary ? kEdgeItems : 0;
  const int64_t trailing = show_summary ? kEdgeItems : n;
  auto nested = [&](int64_t i) {
    return Recurse(c, axis + 1, offset + i * c.strides[axis], next_hanging, next_width);
  };
  std::string s;
  if (axes_left == 1) {
    const int elem_width = width - 1;  // room for the ',' or ']' after the element
    std::string line = hanging;
    for (int64_t i = 0; i < leading; ++i) {
      ExtendLine(s, line, nested(i), elem_width, hanging);
      line += c.separator;
    }
    if (show_summary) {
      ExtendLine(s, line, "...", elem_width, hanging);
      line += c.separator;
    }
    for (int64_t i = trailing; i > 1; --i) {
      ExtendLine(s, line, nested(n - i), elem_width, hanging);
      line += c.separator;
    }
    ExtendLine(s, line, nested(n - 1), elem_width, hanging);
    s += line;
  } else {
    const std::string line_sep = RStrip(c.separator) + std::string(axes_left - 1, '\n');
    for (int64_t i = 0; i < leading; ++i) s += hanging + nested(i) + line_sep;
    if (show_summary) s += hanging + "..." + line_sep;
    for (int64_t i = trailing; i > 1; --i) s += hanging + nested(n - i) + line_sep;
    s += hanging + nested(n - 1);
  }
  return StrCat("[", std::string_view(s).substr(hanging.size()), "]");
}

// numpy's array2string for a non-empty array.
std::string Array2String(const Array& a, const std::string& separator, const std::string& prefix,
                         int line_width) {
  const bool summarize = a.num_elements() > kThreshold;
  const std::vector<int64_t> strides = RowMajorStrides(a.dims());
  std::vector<int64_t> shown;
  CollectShown(a, strides, summarize, 0, 0, &shown);
  const Formatter format = MakeFormatter(a, shown);
  const PrintContext context{a, strides, format, separator, summarize};
  return Recurse(context, 0, 0, std::string(prefix.size() + 1, ' '), line_width);
}

// str() of a 0-d array: str() of its scalar.
std::string ScalarStr(const Array& a) {
  switch (KindOf(a.dtype())) {
    case PrintKind::kBool: return a.GetDouble(0) != 0 ? "True" : "False";
    case PrintKind::kInt: return IntWord(a, 0);
    case PrintKind::kFloat: return FloatScalarStr(a.GetDouble(0), WidthOf(a.dtype()));
    case PrintKind::kRepr: return ReprWord(a, 0);
    case PrintKind::kComplex: break;
  }
  const FloatWidth w = WidthOf(a.dtype());
  const double re = a.GetDouble(0), im = ImagAt(a, 0);
  constexpr TrimMode kTrim = TrimMode::kDptZeros;
  if (re == 0 && !std::signbit(re)) return FloatScalarStr(im, w, kTrim, kTrim) + "j";
  const std::string rs = std::isfinite(re)  ? FloatScalarStr(re, w, kTrim, kTrim)
                         : std::isnan(re) ? "nan"
                         : re > 0         ? "inf"
                                          : "-inf";
  const std::string is = std::isfinite(im) ? FloatScalarStr(im, w, kTrim, kTrim, true)
                         : std::isnan(im)  ? "+nan"
                         : im > 0          ? "+inf"
                                           : "-inf";
  return StrCat("(", rs, is, "j)");
}

}  // namespace

std::string Array::ToString() const {
  if (rank() == 0) return ScalarStr(*this);
  if (num_elements() == 0) return "[]";
  return Array2String(*this, " ", "", kLineWidth);
}

std::string Array::Repr() const {
  const std::string prefix = "Array(";
  const std::string dtype_str = StrCat("dtype=", DTypeNumpyName(dtype()));
  std::string s;
  if (num_elements() == 0) {
    s = StrCat("[], shape=(", StrJoin(dims(), ", "), rank() == 1 ? ",)" : ")");
  } else {
    // JAX passes suffix=',' which numpy takes off the line width.
    s = Array2String(*this, ", ", prefix, kLineWidth - 1);
  }
  const size_t newline = s.rfind('\n');
  const size_t last_line_len = newline == std::string::npos ? s.size() + 2 : s.size() - newline + 1;
  // JAX's rule (sic: spaces, not a newline, when the dtype does not fit).
  const std::string sep =
      last_line_len + dtype_str.size() + 2 > kLineWidth ? std::string(prefix.size(), ' ') : " ";
  return StrCat(prefix, s, ",", sep, dtype_str, ")");
}

}  // namespace xs
