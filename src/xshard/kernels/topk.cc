// topk by selection per row; see topk.h. Each element maps to an unsigned order key (larger:
// better; smallest-k flips it) and, with its position, to an item whose integer order is the
// result order (key descending, then position ascending), so items are unique and any selection
// gives the one answer. A row is scanned once: an element joins a candidate buffer only when its
// key beats the k-th best candidate kept so far (a later element with an equal key is worse), and
// a full buffer is cut back to its best k with nth_element. Blocks of elements none of which beats
// that threshold are skipped after a vectorizable max. Expected O(n + k log(n / k) log k) per row;
// at worst (every element a new candidate) O(n) amortized nth_element work.
#include "xshard/kernels/topk.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "xshard/kernels/numeric.h"
#include "xshard/kernels/parallel.h"

namespace xs::kernels {
namespace {

// Fewer elements than this in all rows: one thread.
constexpr int64_t kTopKParallelElements = int64_t{1} << 15;
// Elements whose maximum is checked against the threshold at once.
constexpr int64_t kTopKBlock = 32;

enum class TopKKeyKind { kUnsigned, kSigned, kPred, kTotalOrder };

// The order key of bits `b` (XLA's total order for floats), flipped for smallest-k.
template <typename B, TopKKeyKind kKind>
inline B OrderKey(B b, B flip) {
  constexpr B kSign = static_cast<B>(B{1} << (8 * sizeof(B) - 1));
  B u;
  if constexpr (kKind == TopKKeyKind::kUnsigned) {
    u = b;
  } else if constexpr (kKind == TopKKeyKind::kSigned) {
    u = static_cast<B>(b ^ kSign);
  } else if constexpr (kKind == TopKKeyKind::kPred) {
    u = static_cast<B>(b != 0);
  } else {
    u = static_cast<B>((b & kSign) != 0 ? ~b : b | kSign);
  }
  return static_cast<B>(u ^ flip);
}

// Items: keys of up to 32 bits packed with the inverted position into one uint64_t; 64-bit keys
// as pairs. Larger item: better.
struct TopKWide {
  uint64_t key;
  uint32_t inv;  // ~position
  friend bool operator>(const TopKWide& a, const TopKWide& b) { return a.key != b.key ? a.key > b.key : a.inv > b.inv; }
};
template <typename B>
using TopKItem = std::conditional_t<(sizeof(B) <= 4), uint64_t, TopKWide>;

template <typename B>
inline TopKItem<B> MakeItem(B key, int64_t pos) {
  const uint32_t inv = ~static_cast<uint32_t>(pos);
  if constexpr (sizeof(B) <= 4) {
    return (static_cast<uint64_t>(key) << 32) | inv;
  } else {
    return TopKWide{key, inv};
  }
}
template <typename B>
inline B ItemKey(const TopKItem<B>& it) {
  if constexpr (sizeof(B) <= 4) {
    return static_cast<B>(it >> 32);
  } else {
    return it.key;
  }
}
template <typename B>
inline int32_t ItemPos(const TopKItem<B>& it) {
  if constexpr (sizeof(B) <= 4) {
    return static_cast<int32_t>(~static_cast<uint32_t>(it));
  } else {
    return static_cast<int32_t>(~it.inv);
  }
}

// One row: values / indices of its k best elements, best first.
template <typename B, TopKKeyKind kKind>
void SelectRow(const B* row, int64_t n, int64_t k, B flip, std::vector<TopKItem<B>>& buf, B* values, int32_t* indices) {
  const int64_t cap = std::min(n, std::max(2 * k, k + 64));
  const auto better = [](const TopKItem<B>& a, const TopKItem<B>& b) { return a > b; };
  buf.clear();
  bool full = false;  // the buffer was cut back once: `threshold` is the k-th best so far
  B threshold = 0;
  auto offer = [&](int64_t j, B key) {
    buf.push_back(MakeItem<B>(key, j));
    if (static_cast<int64_t>(buf.size()) == cap) {
      std::nth_element(buf.begin(), buf.begin() + (k - 1), buf.end(), better);
      buf.resize(static_cast<size_t>(k));
      threshold = ItemKey<B>(buf[k - 1]);
      full = true;
    }
  };
  int64_t j = 0;
  while (j < n) {
    if (full && j + kTopKBlock <= n) {
      // Equal keys lose to the earlier element already kept, so only larger keys matter.
      B m = 0;
      for (int64_t t = 0; t < kTopKBlock; ++t) m = std::max(m, OrderKey<B, kKind>(row[j + t], flip));
      if (m <= threshold) {
        j += kTopKBlock;
        continue;
      }
      const int64_t end = j + kTopKBlock;
      for (; j < end; ++j) {
        const B key = OrderKey<B, kKind>(row[j], flip);
        if (!full || key > threshold) offer(j, key);
      }
      continue;
    }
    const B key = OrderKey<B, kKind>(row[j], flip);
    if (!full || key > threshold) offer(j, key);
    ++j;
  }
  if (static_cast<int64_t>(buf.size()) > k) {
    std::nth_element(buf.begin(), buf.begin() + (k - 1), buf.end(), better);
    buf.resize(static_cast<size_t>(k));
  }
  std::sort(buf.begin(), buf.end(), better);
  for (int64_t t = 0; t < k; ++t) {
    const int32_t pos = ItemPos<B>(buf[t]);
    indices[t] = pos;
    values[t] = row[pos];
  }
}

template <typename B, TopKKeyKind kKind>
void SelectRows(const Array& in, int64_t k, bool largest, Array& values, Array& indices, int threads) {
  const int64_t n = in.dims().back();
  const int64_t rows = n == 0 || k == 0 ? 0 : in.num_elements() / n;
  const B* src = reinterpret_cast<const B*>(in.data());
  B* vals = reinterpret_cast<B*>(values.data());
  int32_t* idx = reinterpret_cast<int32_t*>(indices.data());
  const B flip = largest ? B{0} : static_cast<B>(~B{0});
  const int64_t chunks =
      threads <= 1 || rows * n < kTopKParallelElements ? 1 : std::min<int64_t>(rows, int64_t{threads} * 4);
  ParallelFor(chunks, threads, [&](int64_t c) {
    std::vector<TopKItem<B>> buf;
    for (int64_t r = rows * c / chunks; r < rows * (c + 1) / chunks; ++r) {
      if (Interrupted()) return;
      SelectRow<B, kKind>(src + r * n, n, k, flip, buf, vals + r * k, idx + r * k);
    }
  });
}

template <typename B>
void SelectRowsOf(TopKKeyKind kind, const Array& in, int64_t k, bool largest, Array& values, Array& indices, int threads) {
  switch (kind) {
    case TopKKeyKind::kUnsigned: SelectRows<B, TopKKeyKind::kUnsigned>(in, k, largest, values, indices, threads); break;
    case TopKKeyKind::kSigned: SelectRows<B, TopKKeyKind::kSigned>(in, k, largest, values, indices, threads); break;
    case TopKKeyKind::kPred: SelectRows<B, TopKKeyKind::kPred>(in, k, largest, values, indices, threads); break;
    case TopKKeyKind::kTotalOrder: SelectRows<B, TopKKeyKind::kTotalOrder>(in, k, largest, values, indices, threads); break;
  }
}

}  // namespace

StatusOr<std::pair<Array, Array>> TopK(const Array& in, int64_t k, bool largest, int threads) {
  if (in.rank() < 1) return InvalidArgument("topk needs an operand of rank >= 1, got a scalar");
  const DType t = in.dtype();
  if (IsComplex(t)) return InvalidArgument("topk has no order for complex ", DTypeName(t));
  const int64_t n = in.dims().back();
  if (k < 0 || k > n) return InvalidArgument("topk: k=", k, " must be in [0, ", n, "] (the last dim)");
  if (n > int64_t{0x7fffffff}) return Unimplemented("topk: rows of more than 2^31 - 1 elements (s32 indices)");
  std::vector<int64_t> out_dims = in.dims();
  out_dims.back() = k;
  Array values = Array::Uninitialized(Shape(t, out_dims));
  Array indices = Array::Uninitialized(Shape(DType::kS32, out_dims));
  TopKKeyKind kind;
  if (t == DType::kF16 || t == DType::kBF16 || t == DType::kF32 || t == DType::kF64) {
    kind = TopKKeyKind::kTotalOrder;
  } else if (t == DType::kPred) {
    kind = TopKKeyKind::kPred;
  } else if (IsSignedInteger(t)) {
    kind = TopKKeyKind::kSigned;  // s4 is stored sign-extended in a byte: its int8 order
  } else if (IsUnsignedInteger(t)) {
    kind = TopKKeyKind::kUnsigned;
  } else {
    // fp8 formats (their NaN and zero encodings differ): selected by their f64 values' total
    // order, the values then copied from the input.
    Array wide = in.Convert(DType::kF64);
    Array wide_values = Array::Uninitialized(Shape(DType::kF64, out_dims));
    SelectRowsOf<uint64_t>(TopKKeyKind::kTotalOrder, wide, k, largest, wide_values, indices, threads);
    const int64_t es = DTypeSize(t);
    auto idx = indices.values<int32_t>();
    for (int64_t i = 0; i < values.num_elements(); ++i) {
      std::memcpy(values.data() + i * es, in.data() + ((i / k) * n + idx[i]) * es, static_cast<size_t>(es));
    }
    return std::make_pair(std::move(values), std::move(indices));
  }
  switch (DTypeSize(t)) {
    case 1: SelectRowsOf<uint8_t>(kind, in, k, largest, values, indices, threads); break;
    case 2: SelectRowsOf<uint16_t>(kind, in, k, largest, values, indices, threads); break;
    case 4: SelectRowsOf<uint32_t>(kind, in, k, largest, values, indices, threads); break;
    default: SelectRowsOf<uint64_t>(kind, in, k, largest, values, indices, threads); break;
  }
  return std::make_pair(std::move(values), std::move(indices));
}

}  // namespace xs::kernels
