// libFuzzer target: ParseNpy must return an error or an Array for every input, never crash; an
// Array it returns must survive SerializeNpy -> ParseNpy unchanged (read back with its own type
// for the 'V1' / 'V2' files SerializeNpy writes for the types numpy lacks).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "xshard/core/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  // The input length's parity picks whether 'V1' files may be read, so that path is fuzzed too.
  const std::optional<xs::DType> opaque =
      size % 2 == 1 ? std::optional(xs::DType::kF8E4M3FN) : std::nullopt;
  xs::StatusOr<xs::Array> a = xs::ParseNpy(bytes, opaque);
  if (!a.ok()) return 0;
  const std::vector<std::byte> again = xs::SerializeNpy(*a);
  xs::StatusOr<xs::Array> b = xs::ParseNpy(again, xs::NpyOpaqueDType(a->dtype()));
  if (!b.ok() || !(*a == *b)) __builtin_trap();
  return 0;
}
