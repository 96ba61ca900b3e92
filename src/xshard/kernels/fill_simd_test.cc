// FillRun against the element copied one at a time: every element size, lengths 0..300 at
// unaligned starts, bytes past the run untouched, on every Highway target this CPU runs.
#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "xshard/kernels/elementwise_simd.h"
#include "xshard/kernels/fill_simd.h"

namespace xs::kernels {
namespace {

TEST(FillRun, EqualsElementByElementCopiesOnEveryTarget) {
  for (int64_t target : simd::SupportedTargets()) {
    simd::UseTargetForTest(target);
    SCOPED_TRACE(simd::TargetName(target));
    for (int esize : {1, 2, 4, 8, 3, 16}) {
      std::vector<std::byte> elem(esize);
      for (int b = 0; b < esize; ++b) elem[b] = std::byte(0xA1 + 7 * b);  // distinct bytes
      for (int64_t n = 0; n <= 300; n += (n < 40 ? 1 : 13)) {
        for (int64_t start : {0, 1, 5}) {
          const int64_t guard = 70;
          std::vector<std::byte> buf((start + n) * esize + guard, std::byte{0x5c});
          FillRun(buf.data() + start * esize, elem.data(), n, esize);
          for (int64_t i = 0; i < static_cast<int64_t>(buf.size()); ++i) {
            const int64_t rel = i - start * esize;
            const std::byte want = rel >= 0 && rel < n * esize ? elem[rel % esize] : std::byte{0x5c};
            ASSERT_EQ(buf[i], want) << "esize " << esize << " n " << n << " start " << start << " byte " << i;
          }
        }
      }
    }
  }
  simd::UseTargetForTest(0);
}

}  // namespace
}  // namespace xs::kernels
