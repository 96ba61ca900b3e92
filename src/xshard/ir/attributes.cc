// Name tables of the enum-valued attributes (comparison direction / type, precision, fft type,
// triangular-solve transpose).
#include "xshard/ir/attributes.h"

#include <array>

namespace xs {
namespace {

template <typename E, size_t N>
std::optional<E> Lookup(const std::array<std::pair<E, std::string_view>, N>& table,
                        std::string_view s) {
  for (const auto& [e, name] : table)
    if (name == s) return e;
  return std::nullopt;
}
template <typename E, size_t N>
std::string_view NameOf(const std::array<std::pair<E, std::string_view>, N>& table, E e) {
  for (const auto& [v, name] : table)
    if (v == e) return name;
  return "";
}

constexpr std::array<std::pair<ComparisonDirection, std::string_view>, 6> kDirections = {{
    {ComparisonDirection::kEq, "EQ"}, {ComparisonDirection::kNe, "NE"},
    {ComparisonDirection::kGe, "GE"}, {ComparisonDirection::kGt, "GT"},
    {ComparisonDirection::kLe, "LE"}, {ComparisonDirection::kLt, "LT"},
}};
constexpr std::array<std::pair<ComparisonType, std::string_view>, 4> kCompareTypes = {{
    {ComparisonType::kFloat, "FLOAT"}, {ComparisonType::kTotalOrder, "TOTALORDER"},
    {ComparisonType::kSigned, "SIGNED"}, {ComparisonType::kUnsigned, "UNSIGNED"},
}};
constexpr std::array<std::pair<Precision, std::string_view>, 4> kPrecisions = {{
    {Precision::kDefault, "default"}, {Precision::kHigh, "high"},
    {Precision::kHighest, "highest"}, {Precision::kPacketNibble, "packed_nibble"},
}};
constexpr std::array<std::pair<FftType, std::string_view>, 4> kFftTypes = {{
    {FftType::kFft, "FFT"}, {FftType::kIfft, "IFFT"},
    {FftType::kRfft, "RFFT"}, {FftType::kIrfft, "IRFFT"},
}};
constexpr std::array<std::pair<TransposeKind, std::string_view>, 3> kTransposeKinds = {{
    {TransposeKind::kNoTranspose, "NO_TRANSPOSE"}, {TransposeKind::kTranspose, "TRANSPOSE"},
    {TransposeKind::kAdjoint, "ADJOINT"},
}};

}  // namespace

std::string_view ComparisonDirectionName(ComparisonDirection d) { return NameOf(kDirections, d); }
std::string_view ComparisonTypeName(ComparisonType t) { return NameOf(kCompareTypes, t); }
std::optional<ComparisonDirection> ParseComparisonDirection(std::string_view s) {
  return Lookup(kDirections, s);
}
std::optional<ComparisonType> ParseComparisonType(std::string_view s) {
  return Lookup(kCompareTypes, s);
}
std::string_view PrecisionName(Precision p) { return NameOf(kPrecisions, p); }
std::optional<Precision> ParsePrecision(std::string_view s) { return Lookup(kPrecisions, s); }
std::string_view FftTypeName(FftType t) { return NameOf(kFftTypes, t); }
std::optional<FftType> ParseFftType(std::string_view s) { return Lookup(kFftTypes, s); }
std::string_view TransposeKindName(TransposeKind t) { return NameOf(kTransposeKinds, t); }
std::optional<TransposeKind> ParseTransposeKind(std::string_view s) {
  return Lookup(kTransposeKinds, s);
}

}  // namespace xs
