// Names and parsing for the communicator's enums, and buffer-view helpers.
#include "xshard/comm/communicator.h"

#include <array>

namespace xs {
namespace {

constexpr std::array<std::string_view, 6> kReductionNames = {"sum", "product", "min",
                                                             "max", "and",     "or"};
constexpr std::array<std::string_view, 3> kAlgorithmNames = {"direct", "ring",
                                                             "recursive-doubling"};
constexpr std::array<std::string_view, 7> kKindNames = {
    "all-gather",         "all-reduce",           "reduce-scatter", "all-to-all",
    "collective-permute", "collective-broadcast", "barrier"};

}  // namespace

std::string_view ReductionKindName(ReductionKind kind) {
  return kReductionNames[static_cast<int>(kind)];
}

StatusOr<ReductionKind> ParseReductionKind(std::string_view name) {
  for (size_t i = 0; i < kReductionNames.size(); ++i) {
    if (kReductionNames[i] == name) return static_cast<ReductionKind>(i);
  }
  if (name == "add") return ReductionKind::kSum;
  if (name == "multiply") return ReductionKind::kProduct;
  if (name == "minimum") return ReductionKind::kMin;
  if (name == "maximum") return ReductionKind::kMax;
  return InvalidArgument("unknown reduction '", name, "'; use one of ",
                         StrJoin(kReductionNames, ", "));
}

std::string_view CollectiveAlgorithmName(CollectiveAlgorithm a) {
  return kAlgorithmNames[static_cast<int>(a)];
}

StatusOr<CollectiveAlgorithm> ParseCollectiveAlgorithm(std::string_view name) {
  for (size_t i = 0; i < kAlgorithmNames.size(); ++i) {
    if (kAlgorithmNames[i] == name) return static_cast<CollectiveAlgorithm>(i);
  }
  if (name == "rd") return CollectiveAlgorithm::kRecursiveDoubling;
  return InvalidArgument("unknown collective algorithm '", name, "'; use one of ",
                         StrJoin(kAlgorithmNames, ", "));
}

std::string_view CollectiveKindName(CollectiveKind kind) {
  return kKindNames[static_cast<int>(kind)];
}

int64_t ConstBufferView::num_elements() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::string ConstBufferView::ShapeString() const {
  return StrCat(DTypeName(dtype), "[", StrJoin(dims, ","), "]");
}

}  // namespace xs
