// sort: per row, a stable order of positions, then every operand is permuted the same way.
// A strict recognized comparator maps each key element to an unsigned order key and sorts
// (order key, position) items: an LSD radix sort of the key's bytes for long rows (stable by
// construction), std::sort of the items packed into unique integers for short ones (unique
// items: any correct sort gives the stable order). A lone operand carries its own bits in the
// items instead of its position where that keeps the order (no gather pass after). Several keys
// (lexicographic) are radix-sorted least significant key first, each pass stable. Rows are
// spread over the threads. Anything else: std::stable_sort of positions with the comparator.
#include "xshard/kernels/sort.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <numeric>
#include <optional>
#include <type_traits>
#include <utility>

#include "xshard/kernels/elementwise.h"
#include "xshard/kernels/numeric.h"
#include "xshard/kernels/parallel.h"

namespace xs::kernels {
namespace {

// Rows of at most this many elements are sorted by comparisons, longer ones by radix passes
// (the passes' 256-bucket histograms outweigh a comparison sort below about this size).
constexpr int64_t kSmallRow = 100;
// Fewer elements than this in all rows: one thread (the pool's wake-up costs more).
constexpr int64_t kParallelElements = int64_t{1} << 15;

// How one key's elements map to unsigned order keys (same width as the element).
enum class KeyKind {
  kUnsigned,    // the bits: unsigned integers, and signed ones compared UNSIGNED
  kSigned,      // the bits with the sign bit flipped: signed integers, unsigned compared SIGNED
  kPred,        // 0 / 1
  kTotalOrder,  // floats in XLA's total order (after the canonicalization when set)
  kFloat,       // floats compared FLOAT: -0 == +0; a row holding a NaN takes the comparator path
};

struct KeyPlan {
  int operand = 0;
  int bytes = 0;
  KeyKind kind = KeyKind::kUnsigned;
  bool descending = false;
  bool canonical = false;
  uint64_t nan_bits = 0, zero_bits = 0;
  uint64_t inf_bits = 0;  // floats: +inf's bits (a larger magnitude is a NaN)
};

// +inf's bits for a float dtype, nullopt for other dtypes.
std::optional<uint64_t> InfBits(DType t) {
  switch (t) {
    case DType::kF16: return 0x7c00;
    case DType::kBF16: return 0x7f80;
    case DType::kF32: return 0x7f800000;
    case DType::kF64: return 0x7ff0000000000000ULL;
    default: return std::nullopt;
  }
}

// The order key plan of `key` on an operand of `dtype`; nullopt when it has none here (`lone`:
// the comparator has no other key, so a FLOAT float key may fall back to the comparator path).
std::optional<KeyPlan> PlanKey(const SortKey& key, DType dtype, bool lone) {
  if (key.direction != ComparisonDirection::kLt && key.direction != ComparisonDirection::kGt) {
    return std::nullopt;
  }
  if (!IsComputableDType(dtype) || IsComplex(dtype)) return std::nullopt;
  KeyPlan p;
  p.operand = key.operand;
  p.bytes = static_cast<int>(DTypeSize(dtype));
  p.descending = key.direction == ComparisonDirection::kGt;
  // compare's default type: SIGNED / UNSIGNED for integers and pred, FLOAT for floats.
  ComparisonType type = key.type;
  if (type == ComparisonType::kNone) {
    type = IsSignedInteger(dtype)                              ? ComparisonType::kSigned
           : IsUnsignedInteger(dtype) || dtype == DType::kPred ? ComparisonType::kUnsigned
                                                               : ComparisonType::kFloat;
  }
  if (const std::optional<uint64_t> inf = InfBits(dtype)) {
    p.inf_bits = *inf;
    const uint64_t all = p.bytes == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * p.bytes)) - 1;
    const uint64_t magnitude = all >> 1;
    if (key.canonical && ((key.nan_bits | key.zero_bits) & ~all) != 0) return std::nullopt;
    if (type == ComparisonType::kFloat && lone) {
      // FLOAT after the canonicalization to a NaN compares as FLOAT on the raw values (a NaN is
      // unordered either way, the zeros equal), so the canonicalization drops out.
      if (key.canonical && (key.nan_bits & magnitude) <= *inf) return std::nullopt;
      p.kind = KeyKind::kFloat;
      return p;
    }
    if (type != ComparisonType::kTotalOrder) return std::nullopt;
    p.kind = KeyKind::kTotalOrder;
    if (key.canonical) {
      // select(eq(x, Z), Z, x) only changes bits when Z is a zero (x == Z is bitwise otherwise).
      if ((key.zero_bits & magnitude) != 0) return std::nullopt;
      p.canonical = true;
      p.nan_bits = key.nan_bits;
      p.zero_bits = key.zero_bits;
    }
    return p;
  }
  if (key.canonical || type == ComparisonType::kTotalOrder) return std::nullopt;
  if (dtype == DType::kPred) {
    p.kind = KeyKind::kPred;
  } else if (type == ComparisonType::kSigned) {
    p.kind = KeyKind::kSigned;
  } else if (type == ComparisonType::kUnsigned) {
    p.kind = KeyKind::kUnsigned;
  } else {  // FLOAT on integers compares the values
    p.kind = IsSignedInteger(dtype) ? KeyKind::kSigned : KeyKind::kUnsigned;
  }
  return p;
}

// Calls sink(j, order key, bits) for the row's elements src[0], src[stride], ... (j = 0..n-1).
// False when a kFloat key met a NaN (the row has no order keys then; some sinks were called).
template <typename B, typename Sink>
bool MapKeys(const KeyPlan& k, const B* src, int64_t stride, int64_t n, Sink&& sink) {
  constexpr B kSign = static_cast<B>(B{1} << (8 * sizeof(B) - 1));
  constexpr B kMagnitude = static_cast<B>(~kSign);
  const B flip = k.descending ? static_cast<B>(~B{0}) : B{0};
  auto loop = [&](auto f) {
    if (stride == 1) {
      for (int64_t j = 0; j < n; ++j) sink(j, static_cast<B>(f(src[j]) ^ flip), src[j]);
    } else {
      for (int64_t j = 0; j < n; ++j) sink(j, static_cast<B>(f(src[j * stride]) ^ flip), src[j * stride]);
    }
  };
  // XLA's total order on the bits: negatives reversed below the positives.
  auto total = [](B b) { return static_cast<B>((b & kSign) != 0 ? ~b : b | kSign); };
  switch (k.kind) {
    case KeyKind::kUnsigned: loop([](B b) { return b; }); return true;
    case KeyKind::kSigned: loop([](B b) { return static_cast<B>(b ^ kSign); }); return true;
    case KeyKind::kPred: loop([](B b) { return static_cast<B>(b != 0); }); return true;
    case KeyKind::kTotalOrder: {
      if (!k.canonical) {
        loop(total);
        return true;
      }
      const B inf = static_cast<B>(k.inf_bits), nan = static_cast<B>(k.nan_bits);
      const B zero = static_cast<B>(k.zero_bits);
      loop([&](B b) {
        const B m = b & kMagnitude;
        return total(m > inf ? nan : m == 0 ? zero : b);
      });
      return true;
    }
    case KeyKind::kFloat: {
      const B inf = static_cast<B>(k.inf_bits);
      B worst = 0;  // the largest magnitude: above inf when some element is a NaN
      loop([&](B b) {
        const B m = b & kMagnitude;
        worst = std::max(worst, m);
        return total(m == 0 ? B{0} : b);
      });
      return worst <= inf;
    }
  }
  return true;
}

// (order key, payload) items, ordered by key then payload. Keys of up to 32 bits are packed
// with a 32-bit payload into one uint64_t (key in the high half); 64-bit keys are pairs. The
// payload is a position, or the element's own bits when it is the only operand (its output is
// then read off the sorted items; equal items are equal bits, so their order does not matter).
struct Wide {
  uint64_t key;
  uint64_t payload;
  friend bool operator<(const Wide& a, const Wide& b) { return a.key != b.key ? a.key < b.key : a.payload < b.payload; }
};
template <typename B>
using Item = std::conditional_t<(sizeof(B) <= 4), uint64_t, Wide>;

template <typename B>
inline Item<B> MakeItem(B key, uint64_t payload) {
  if constexpr (sizeof(B) <= 4) {
    return (static_cast<uint64_t>(key) << 32) | payload;
  } else {
    return Wide{key, payload};
  }
}
template <typename B>
inline uint64_t Payload(const Item<B>& it) {
  if constexpr (sizeof(B) <= 4) {
    return static_cast<uint32_t>(it);
  } else {
    return it.payload;
  }
}
// Byte d of the item's key.
template <typename B>
inline uint32_t KeyDigit(const Item<B>& it, int d) {
  if constexpr (sizeof(B) <= 4) {
    return static_cast<uint32_t>(it >> (32 + 8 * d)) & 0xff;
  } else {
    return static_cast<uint32_t>(it.key >> (8 * d)) & 0xff;
  }
}

// Counts of each value of each key byte.
template <typename B>
using Histogram = uint32_t[sizeof(B)][256];

// Counts each key byte's values over a[0..n) into `hist` (zeroed).
template <typename B>
void CountDigits(const Item<B>* a, int64_t n, Histogram<B>& hist) {
  for (int64_t i = 0; i < n; ++i) {
    for (int d = 0; d < static_cast<int>(sizeof(B)); ++d) ++hist[d][KeyDigit<B>(a[i], d)];
  }
}

// Stable LSD radix sort of a[0..n) by the key's sizeof(B) bytes, least significant first;
// `hist`: CountDigits of a (consumed). A pass whose byte is the same in every item is skipped
// (it would move nothing). Returns the buffer holding the result (a or tmp).
template <typename B>
Item<B>* RadixSort(Item<B>* a, Item<B>* tmp, int64_t n, Histogram<B>& hist) {
  constexpr int kDigits = sizeof(B);
  for (int d = 0; d < kDigits; ++d) {
    uint32_t* h = hist[d];
    if (h[KeyDigit<B>(a[0], d)] == static_cast<uint64_t>(n)) continue;
    uint32_t sum = 0;
    for (int v = 0; v < 256; ++v) {
      const uint32_t c = h[v];
      h[v] = sum;
      sum += c;
    }
    for (int64_t i = 0; i < n; ++i) {
      const Item<B> it = a[i];
      tmp[h[KeyDigit<B>(it, d)]++] = it;
    }
    std::swap(a, tmp);
  }
  return a;
}

// An uninitialized array that grows (kept across the rows of one thread).
template <typename T>
class Buffer {
 public:
  T* Get(int64_t n) {
    if (n > size_) {
      data_.reset(new T[static_cast<size_t>(n)]);
      size_ = n;
    }
    return data_.get();
  }

 private:
  std::unique_ptr<T[]> data_;
  int64_t size_ = 0;
};

struct Scratch {
  Buffer<uint64_t> keys;  // several keys: n order keys per key, widened
  Buffer<uint64_t> packed, packed_tmp;
  Buffer<Wide> wide, wide_tmp;
  Buffer<uint32_t> perm;
  template <typename B>
  std::pair<Item<B>*, Item<B>*> Items(int64_t n) {
    if constexpr (sizeof(B) <= 4) {
      return {packed.Get(n), packed_tmp.Get(n)};
    } else {
      return {wide.Get(n), wide_tmp.Get(n)};
    }
  }
};

// Stable-sorts the current order perm[0..n) of the row's positions by keys[perm[j]] (order keys
// of B's width, stored widened): a radix sort of (key, position) items never compares positions.
template <typename B>
void StableSortPositions(const uint64_t* keys, int64_t n, Scratch& s) {
  uint32_t* perm = s.perm.Get(n);
  Item<B>* const items = s.Items<B>(n).first;
  Item<B>* const tmp = s.Items<B>(n).second;
  for (int64_t j = 0; j < n; ++j) items[j] = MakeItem<B>(static_cast<B>(keys[perm[j]]), perm[j]);
  Histogram<B> hist = {};
  CountDigits<B>(items, n, hist);
  const Item<B>* sorted = RadixSort<B>(items, tmp, n, hist);
  for (int64_t j = 0; j < n; ++j) perm[j] = static_cast<uint32_t>(Payload<B>(sorted[j]));
}

// The row's positions perm[0..n) in the stable lexicographic order of several keys
// (keys[k * n + i]: key k's order key of element i, widened).
void SortByKeys(const std::vector<KeyPlan>& plans, int64_t n, Scratch& s) {
  const uint64_t* keys = s.keys.Get(n * static_cast<int64_t>(plans.size()));
  uint32_t* perm = s.perm.Get(n);
  std::iota(perm, perm + n, uint32_t{0});
  if (n <= kSmallRow) {
    const size_t nk = plans.size();
    std::sort(perm, perm + n, [&](uint32_t a, uint32_t b) {
      for (size_t k = 0; k < nk; ++k) {
        const uint64_t ka = keys[k * n + a], kb = keys[k * n + b];
        if (ka != kb) return ka < kb;
      }
      return a < b;
    });
    return;
  }
  // Least significant key first: each stable pass keeps the later keys' order among its ties.
  for (size_t k = plans.size(); k-- > 0;) {
    const uint64_t* kk = keys + k * n;
    switch (plans[k].bytes) {
      case 1: StableSortPositions<uint8_t>(kk, n, s); break;
      case 2: StableSortPositions<uint16_t>(kk, n, s); break;
      case 4: StableSortPositions<uint32_t>(kk, n, s); break;
      default: StableSortPositions<uint64_t>(kk, n, s); break;
    }
  }
}

// Calls f(TypeTag<B>{}) with B the unsigned integer of `bytes` bytes (1, 2, 4 or 8).
template <typename F>
auto WithBits(int bytes, F&& f) {
  switch (bytes) {
    case 1: return f(TypeTag<uint8_t>{});
    case 2: return f(TypeTag<uint16_t>{});
    case 4: return f(TypeTag<uint32_t>{});
    default: return f(TypeTag<uint64_t>{});
  }
}

// dst[base + j * stride] = src[base + perm[j] * stride] for the row, E the element's size.
template <size_t E>
void PermuteRow(const std::byte* src, std::byte* dst, int64_t base, int64_t stride, const uint32_t* perm, int64_t n) {
  src += base * static_cast<int64_t>(E);
  dst += base * static_cast<int64_t>(E);
  const int64_t step = stride * static_cast<int64_t>(E);
  for (int64_t j = 0; j < n; ++j) std::memcpy(dst + j * step, src + perm[j] * step, E);
}

void Permute(const Array& in, Array& out, int64_t base, int64_t stride, const uint32_t* perm, int64_t n) {
  switch (DTypeSize(in.dtype())) {
    case 1: PermuteRow<1>(in.data(), out.data(), base, stride, perm, n); break;
    case 2: PermuteRow<2>(in.data(), out.data(), base, stride, perm, n); break;
    case 4: PermuteRow<4>(in.data(), out.data(), base, stride, perm, n); break;
    case 8: PermuteRow<8>(in.data(), out.data(), base, stride, perm, n); break;
    default: PermuteRow<16>(in.data(), out.data(), base, stride, perm, n); break;
  }
}

// Rows: `rows` of `n` elements `stride` apart; row r starts at (r / stride) * n * stride +
// r % stride.
struct Rows {
  int64_t n = 0, stride = 1, rows = 0;
  int64_t Base(int64_t r) const { return (r / stride) * n * stride + r % stride; }
};

// One row with a single key of B's width. False when it has no order keys (kFloat with a
// NaN); else returns true with either the output written (`carry_bits`, the key is the only
// operand: its bits ride in the items where that is sound; *carried set) or perm holding the
// sorted positions.
template <typename B>
bool SortRowOneKey(const KeyPlan& k, const B* src, int64_t stride, int64_t n, bool carry_bits, B* dst, Scratch& s,
                   bool* carried) {
  // std::sort orders the items by their payloads too: bits may only ride along when equal keys
  // are equal bits (no canonicalization, no merged zeros); the radix sort never looks at them.
  const bool injective =
      k.kind == KeyKind::kUnsigned || k.kind == KeyKind::kSigned || (k.kind == KeyKind::kTotalOrder && !k.canonical);
  carry_bits = carry_bits && (injective || n > kSmallRow);
  // (Not a structured binding: lambdas capture these, which older clang rejects.)
  Item<B>* const items = s.Items<B>(n).first;
  Item<B>* const tmp = s.Items<B>(n).second;
  const Item<B>* sorted = items;
  const bool radix = n > kSmallRow;
  Histogram<B> hist;  // zeroed only for the radix sort (short rows are many)
  if (radix) std::memset(hist, 0, sizeof(hist));
  // Builds the items, counting the key bytes on the way when the radix sort will need them.
  auto map = [&](auto payload) {
    return radix ? MapKeys<B>(k, src, stride, n,
                              [&](int64_t j, B key, B bits) {
                                items[j] = MakeItem<B>(key, payload(j, bits));
                                for (int d = 0; d < static_cast<int>(sizeof(B)); ++d)
                                  ++hist[d][(key >> (8 * d)) & 0xff];
                              })
                 : MapKeys<B>(k, src, stride, n,
                              [&](int64_t j, B key, B bits) { items[j] = MakeItem<B>(key, payload(j, bits)); });
  };
  const bool ordered = carry_bits ? map([](int64_t, B bits) { return static_cast<uint64_t>(bits); })
                                  : map([](int64_t j, B) { return static_cast<uint64_t>(j); });
  *carried = ordered && carry_bits;
  if (!ordered) return false;
  if (radix) {
    sorted = RadixSort<B>(items, tmp, n, hist);
  } else {
    std::sort(items, items + n);
  }
  if (carry_bits) {
    for (int64_t j = 0; j < n; ++j) dst[j * stride] = static_cast<B>(Payload<B>(sorted[j]));
  } else {
    uint32_t* perm = s.perm.Get(n);
    for (int64_t j = 0; j < n; ++j) perm[j] = static_cast<uint32_t>(Payload<B>(sorted[j]));
  }
  return true;
}

// The order-key path for strict recognized keys. `compare`: kFloat's kernel for rows holding a
// NaN (null otherwise).
void FastSort(std::span<const Array* const> operands, const std::vector<KeyPlan>& plans, BinaryKernel compare,
              const Rows& rows, std::vector<Array>& outs, int threads) {
  const int64_t n = rows.n;
  const int64_t chunks =
      threads <= 1 || rows.rows * n < kParallelElements ? 1 : std::min<int64_t>(rows.rows, int64_t{threads} * 4);
  // A lone operand that is its own key travels in the items: no permutation pass.
  const bool carry_bits = plans.size() == 1 && operands.size() == 1;
  ParallelFor(chunks, threads, [&](int64_t c) {
    Scratch s;
    for (int64_t r = rows.rows * c / chunks; r < rows.rows * (c + 1) / chunks; ++r) {
      if (Interrupted()) return;
      const int64_t base = rows.Base(r);
      bool ordered = true;
      if (plans.size() == 1) {
        const KeyPlan& k = plans[0];
        bool carried = false;
        WithBits(k.bytes, [&](auto tag) {
          using B = typename decltype(tag)::type;
          ordered = SortRowOneKey<B>(k, reinterpret_cast<const B*>(operands[k.operand]->data()) + base, rows.stride, n,
                                     carry_bits, reinterpret_cast<B*>(outs[k.operand].data()) + base, s, &carried);
        });
        if (carried) continue;
      } else {
        uint64_t* keys = s.keys.Get(n * static_cast<int64_t>(plans.size()));
        for (size_t k = 0; k < plans.size(); ++k) {
          WithBits(plans[k].bytes, [&](auto tag) {
            using B = typename decltype(tag)::type;
            uint64_t* out = keys + k * n;
            MapKeys<B>(plans[k], reinterpret_cast<const B*>(operands[plans[k].operand]->data()) + base, rows.stride, n,
                       [out](int64_t j, B key, B) { out[j] = key; });
          });
        }
        SortByKeys(plans, n, s);
      }
      uint32_t* perm = s.perm.Get(n);
      if (!ordered) {
        // A NaN under a FLOAT compare: no order keys; the merge sort with the compare, as always.
        const int64_t es = plans[0].bytes;
        const std::byte* p = operands[plans[0].operand]->data() + base * es;
        const int64_t step = rows.stride * es;
        std::iota(perm, perm + n, uint32_t{0});
        std::stable_sort(perm, perm + n, [&](uint32_t a, uint32_t b) {
          bool out = false;
          compare(p + a * step, p + b * step, reinterpret_cast<std::byte*>(&out), 1);
          return out;
        });
      }
      for (size_t i = 0; i < operands.size(); ++i) Permute(*operands[i], outs[i], base, rows.stride, perm, n);
    }
  });
}

}  // namespace

bool SortKeysSupported(std::span<const SortKey> keys, std::span<const DType> dtypes) {
  if (keys.empty()) return false;
  for (const SortKey& k : keys) {
    if (k.operand < 0 || k.operand >= static_cast<int>(dtypes.size())) return false;
    if (!PlanKey(k, dtypes[k.operand], keys.size() == 1)) return false;
  }
  return true;
}

StatusOr<std::vector<Array>> Sort(std::span<const Array* const> operands, int64_t dimension,
                                  const Comparator& comparator, int threads) {
  if (operands.empty()) return InvalidArgument("sort: needs at least one operand");
  const std::vector<int64_t>& dims = operands[0]->dims();
  for (const Array* a : operands) {
    if (a->dims() != dims) {
      return InvalidArgument("sort: operand shapes differ: ", a->shape().ToString(), " vs ",
                             operands[0]->shape().ToString());
    }
  }
  if (dimension < 0 || dimension >= static_cast<int64_t>(dims.size())) {
    return InvalidArgument("sort: dimension ", dimension, " is out of range for rank ", dims.size());
  }
  const int64_t n = dims[dimension];
  // Positions are uint32_t.
  if (n > int64_t{0xffffffff}) return Unimplemented("sort: rows of more than 2^32 - 1 elements");
  Rows rows;
  rows.n = n;
  rows.stride = RowMajorStrides(dims)[dimension];
  rows.rows = n == 0 ? 0 : Product(dims) / n;
  std::vector<DType> dtypes;
  for (const Array* a : operands) dtypes.push_back(a->dtype());

  // The strict recognized comparators: order keys.
  std::vector<SortKey> keys = comparator.keys;
  BinaryKernel fast = nullptr;
  if (comparator.direction) {
    if (comparator.key < 0 || comparator.key >= static_cast<int>(operands.size())) {
      return Internal("sort: comparator key operand out of range");
    }
    XS_ASSIGN_OR_RETURN(fast,
                        FindCompareKernel(*comparator.direction, comparator.type, operands[comparator.key]->dtype()));
    keys = {SortKey{comparator.key, *comparator.direction, comparator.type}};
  } else if (keys.empty() && !comparator.fn) {
    return Internal("sort: no comparator");
  }
  std::vector<KeyPlan> plans;
  for (const SortKey& k : keys) {
    if (k.operand < 0 || k.operand >= static_cast<int>(operands.size())) {
      return Internal("sort: comparator key operand out of range");
    }
    std::optional<KeyPlan> p = PlanKey(k, dtypes[k.operand], keys.size() == 1);
    if (!p) {
      plans.clear();
      break;
    }
    plans.push_back(*p);
  }
  if (plans.empty() && !comparator.keys.empty()) return Internal("sort: unsupported comparator keys");

  if (plans.size() == 1 && plans[0].kind == KeyKind::kFloat && fast == nullptr) {
    XS_ASSIGN_OR_RETURN(fast, FindCompareKernel(keys[0].direction, keys[0].type, dtypes[keys[0].operand]));
  }

  std::vector<Array> outs;
  for (const Array* a : operands) outs.push_back(Array::Uninitialized(Shape(a->dtype(), dims)));
  if (!plans.empty()) {
    FastSort(operands, plans, fast, rows, outs, threads);
    return outs;
  }

  // A compare that is not a strict order, or a scalar-function comparator: merge sort of
  // positions calling it.
  std::vector<uint32_t> perm(static_cast<size_t>(n));
  std::vector<int64_t> perm64(static_cast<size_t>(n));
  std::vector<const std::byte*> args(2 * operands.size());
  bool pred = false;
  std::byte* res[1] = {reinterpret_cast<std::byte*>(&pred)};
  Status error;
  const int64_t stride = rows.stride;
  for (int64_t r = 0; r < rows.rows; ++r) {
    const int64_t base = rows.Base(r);
    std::iota(perm64.begin(), perm64.end(), 0);
    auto less = [&](int64_t a, int64_t b) -> bool {
      if (!error.ok()) return false;
      if (fast) {
        const Array& k = *operands[comparator.key];
        const int64_t es = DTypeSize(k.dtype());
        bool out = false;
        fast(k.data() + (base + a * stride) * es, k.data() + (base + b * stride) * es,
             reinterpret_cast<std::byte*>(&out), 1);
        return out;
      }
      for (size_t i = 0; i < operands.size(); ++i) {
        const int64_t es = DTypeSize(operands[i]->dtype());
        args[2 * i] = operands[i]->data() + (base + a * stride) * es;
        args[2 * i + 1] = operands[i]->data() + (base + b * stride) * es;
      }
      Status st = comparator.fn(args, res);
      if (!st.ok()) {
        error = st;
        return false;
      }
      return pred;
    };
    std::stable_sort(perm64.begin(), perm64.end(), less);
    XS_RETURN_IF_ERROR(error);
    for (int64_t j = 0; j < n; ++j) perm[j] = static_cast<uint32_t>(perm64[j]);
    for (size_t i = 0; i < operands.size(); ++i) Permute(*operands[i], outs[i], base, stride, perm.data(), n);
  }
  return outs;
}

}  // namespace xs::kernels
