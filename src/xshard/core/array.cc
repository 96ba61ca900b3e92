// Array storage, element access and conversion (XLA convert semantics), box copies and reshape.
// Printing lives in array_print.cc.
#include "xshard/core/array.h"
#include "xshard/core/allocation_failure.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <unordered_map>

#include <sys/mman.h>

namespace xs {
namespace {

constexpr size_t kAlignment = 64;
constexpr size_t kHugePage = size_t{2} << 20;

// One element, held exactly: integers (and pred) as int64 / uint64, floats and complex as doubles
// (every float type xshard has is exactly representable in double).
struct Element {
  enum Kind { kSigned, kUnsigned, kFloat } kind = kSigned;
  int64_t s = 0;
  uint64_t u = 0;
  double re = 0, im = 0;
};

template <typename T>
T Load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <typename T>
void Store(std::byte* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

Element Signed(int64_t v) { return {Element::kSigned, v, 0, 0, 0}; }
Element Unsigned(uint64_t v) { return {Element::kUnsigned, 0, v, 0, 0}; }
Element Float(double re, double im = 0) { return {Element::kFloat, 0, 0, re, im}; }

// Nearest-to-odd double of an integer: exact below 2^53, otherwise the dropped bits become a
// sticky low bit, so a later rounding to a narrower float (<= 51 bits) is rounded only once.
double RoundToOddDouble(uint64_t u) {
  if (u < (uint64_t{1} << 53)) return static_cast<double>(u);
  const int shift = std::bit_width(u) - 53;
  uint64_t m = u >> shift;
  if ((u & ((uint64_t{1} << shift) - 1)) != 0) m |= 1;
  return std::ldexp(static_cast<double>(m), shift);
}
double RoundToOddDouble(const Element& e) {
  if (e.kind == Element::kFloat) return e.re;
  if (e.kind == Element::kUnsigned) return RoundToOddDouble(e.u);
  const uint64_t mag = e.s < 0 ? 0 - static_cast<uint64_t>(e.s) : static_cast<uint64_t>(e.s);
  return e.s < 0 ? -RoundToOddDouble(mag) : RoundToOddDouble(mag);
}

// Real (or real-part) value as float / double, each rounded once.
float ToF32(const Element& e) {
  if (e.kind == Element::kSigned) return static_cast<float>(e.s);
  if (e.kind == Element::kUnsigned) return static_cast<float>(e.u);
  return static_cast<float>(e.re);
}
double ToF64(const Element& e) {
  if (e.kind == Element::kSigned) return static_cast<double>(e.s);
  if (e.kind == Element::kUnsigned) return static_cast<double>(e.u);
  return e.re;
}

// To an integer type with range [lo, hi]: integers wrap (two's complement, as XLA's convert
// does), floats truncate toward zero and saturate, NaN becomes 0.
template <typename T>
T ToInt(const Element& e) {
  if (e.kind == Element::kSigned) return static_cast<T>(e.s);
  if (e.kind == Element::kUnsigned) return static_cast<T>(e.u);
  if (std::isnan(e.re)) return 0;
  const double t = std::trunc(e.re);
  // The bounds as doubles: min is exact (0 or -2^(n-1)); max+1 is 2^n or 2^(n-1), exact too.
  const double min = static_cast<double>(std::numeric_limits<T>::min());
  const double max_plus_one = std::ldexp(1.0, std::numeric_limits<T>::digits);
  if (t <= min) return std::numeric_limits<T>::min();
  if (t >= max_plus_one) return std::numeric_limits<T>::max();
  return static_cast<T>(t);
}
// To a `bits`-wide integer (s2, s4, u2, u4) held in a byte: integers wrap, floats truncate and
// saturate, NaN becomes 0 (as XLA converts to s4: saturating from floats, wrapping from ints).
int8_t ToNarrowSigned(const Element& e, int bits) {
  const double hi = std::ldexp(1.0, bits - 1) - 1;
  if (e.kind == Element::kFloat) {
    if (std::isnan(e.re)) return 0;
    return static_cast<int8_t>(std::clamp(std::trunc(e.re), -hi - 1, hi));
  }
  const uint8_t mask = static_cast<uint8_t>((1u << bits) - 1), sign = static_cast<uint8_t>(1u << (bits - 1));
  const uint8_t low = static_cast<uint8_t>(e.kind == Element::kSigned ? e.s : e.u) & mask;
  return static_cast<int8_t>((low ^ sign) - sign);
}
uint8_t ToNarrowUnsigned(const Element& e, int bits) {
  if (e.kind == Element::kFloat) {
    if (std::isnan(e.re)) return 0;
    return static_cast<uint8_t>(std::clamp(std::trunc(e.re), 0.0, std::ldexp(1.0, bits) - 1));
  }
  return static_cast<uint8_t>(e.kind == Element::kSigned ? e.s : e.u) & ((1u << bits) - 1);
}
template <int kBits>
Element ReadNarrowSigned(DType, const std::byte* p) {
  constexpr uint8_t kMask = (1u << kBits) - 1, kSign = 1u << (kBits - 1);
  return Signed(static_cast<int8_t>(((Load<uint8_t>(p) & kMask) ^ kSign) - kSign));
}
bool ToPred(const Element& e) {
  if (e.kind == Element::kSigned) return e.s != 0;
  if (e.kind == Element::kUnsigned) return e.u != 0;
  return e.re != 0 || e.im != 0;  // NaN != 0 holds, so NaN is true
}

// Per-dtype element readers and writers, indexed by DType.
struct Codec {
  Element (*read)(DType, const std::byte*);
  void (*write)(DType, std::byte*, const Element&);
};

template <typename T>
Codec IntCodec() {
  return {[](DType, const std::byte* p) {
            if constexpr (std::is_signed_v<T>) return Signed(Load<T>(p));
            else return Unsigned(Load<T>(p));
          },
          [](DType, std::byte* p, const Element& e) { Store<T>(p, ToInt<T>(e)); }};
}

// The narrow float types share one codec (Float8ToDouble / DoubleToFloat8 know each format).
constexpr Codec kNarrowFloatCodec = {
    [](DType t, const std::byte* p) { return Float(Float8ToDouble(t, Load<uint8_t>(p))); },
    [](DType t, std::byte* p, const Element& e) { Store<uint8_t>(p, DoubleToFloat8(t, RoundToOddDouble(e))); }};

const Codec kCodecs[] = {
    // kPred
    {[](DType, const std::byte* p) { return Signed(Load<uint8_t>(p) != 0); },
     [](DType, std::byte* p, const Element& e) { Store<uint8_t>(p, ToPred(e) ? 1 : 0); }},
    // kS2, kS4: one value per byte as a sign-extended int8 (-1 is 0xff); reads use the low bits
    // only, so ml_dtypes' form (-1 as 0x03 / 0x0f) reads the same.
    {&ReadNarrowSigned<2>, [](DType, std::byte* p, const Element& e) { Store<int8_t>(p, ToNarrowSigned(e, 2)); }},
    {&ReadNarrowSigned<4>, [](DType, std::byte* p, const Element& e) { Store<int8_t>(p, ToNarrowSigned(e, 4)); }},
    IntCodec<int8_t>(), IntCodec<int16_t>(), IntCodec<int32_t>(), IntCodec<int64_t>(),
    // kU2, kU4
    {[](DType, const std::byte* p) { return Signed(Load<uint8_t>(p) & 0x3); },
     [](DType, std::byte* p, const Element& e) { Store<uint8_t>(p, ToNarrowUnsigned(e, 2)); }},
    {[](DType, const std::byte* p) { return Signed(Load<uint8_t>(p) & 0xf); },
     [](DType, std::byte* p, const Element& e) { Store<uint8_t>(p, ToNarrowUnsigned(e, 4)); }},
    IntCodec<uint8_t>(), IntCodec<uint16_t>(), IntCodec<uint32_t>(), IntCodec<uint64_t>(),
    // kF8E4M3FN, kF8E4M3B11FNUZ, kF8E5M2, kF8E8M0FNU
    kNarrowFloatCodec, kNarrowFloatCodec, kNarrowFloatCodec, kNarrowFloatCodec,
    // kF8E4M3FNUZ, kF8E5M2FNUZ, kF8E4M3, kF8E3M4, kF4E2M1FN
    kNarrowFloatCodec, kNarrowFloatCodec, kNarrowFloatCodec, kNarrowFloatCodec, kNarrowFloatCodec,
    // kF16
    {[](DType, const std::byte* p) { return Float(HalfToFloat(Load<Half>(p))); },
     [](DType, std::byte* p, const Element& e) { Store(p, DoubleToHalf(RoundToOddDouble(e))); }},
    // kBF16
    {[](DType, const std::byte* p) { return Float(BFloat16ToFloat(Load<BFloat16>(p))); },
     [](DType, std::byte* p, const Element& e) {
       Store(p, DoubleToBFloat16(RoundToOddDouble(e)));
     }},
    // kF32, kF64
    {[](DType, const std::byte* p) { return Float(Load<float>(p)); },
     [](DType, std::byte* p, const Element& e) { Store(p, ToF32(e)); }},
    {[](DType, const std::byte* p) { return Float(Load<double>(p)); },
     [](DType, std::byte* p, const Element& e) { Store(p, ToF64(e)); }},
    // kC64, kC128: real to (x, 0); complex part by part.
    {[](DType, const std::byte* p) { return Float(Load<float>(p), Load<float>(p + 4)); },
     [](DType, std::byte* p, const Element& e) {
       Store(p, ToF32(e));
       Store(p + 4, static_cast<float>(e.im));
     }},
    {[](DType, const std::byte* p) { return Float(Load<double>(p), Load<double>(p + 8)); },
     [](DType, std::byte* p, const Element& e) {
       Store(p, ToF64(e));
       Store(p + 8, e.im);
     }},
    // kToken: no elements
    {[](DType, const std::byte*) { return Signed(0); }, [](DType, std::byte*, const Element&) {}},
};
static_assert(std::size(kCodecs) == static_cast<size_t>(DType::kToken) + 1);

const Codec& CodecOf(DType t) { return kCodecs[static_cast<int>(t)]; }

// Copies the box `sizes` at `src_start` of a row-major `src_dims` array to `dst_start` of a
// `dst_dims` array: one memcpy per innermost run.
void CopyBox(const std::byte* src, const std::vector<int64_t>& src_dims,
             const std::vector<int64_t>& src_start, std::byte* dst,
             const std::vector<int64_t>& dst_dims, const std::vector<int64_t>& dst_start,
             const std::vector<int64_t>& sizes, int64_t elem_bytes) {
  const int rank = static_cast<int>(sizes.size());
  if (Product(sizes) == 0) return;
  if (rank == 0) {
    std::memcpy(dst, src, elem_bytes);
    return;
  }
  const std::vector<int64_t> src_strides = RowMajorStrides(src_dims);
  const std::vector<int64_t> dst_strides = RowMajorStrides(dst_dims);
  const int64_t run_bytes = sizes[rank - 1] * elem_bytes;
  std::vector<int64_t> index(rank, 0);
  while (true) {
    int64_t s = 0, d = 0;
    for (int i = 0; i < rank; ++i) {
      s += (src_start[i] + index[i]) * src_strides[i];
      d += (dst_start[i] + index[i]) * dst_strides[i];
    }
    std::memcpy(dst + d * elem_bytes, src + s * elem_bytes, run_bytes);
    int axis = rank - 2;
    while (axis >= 0 && ++index[axis] == sizes[axis]) index[axis--] = 0;
    if (axis < 0) return;
  }
}

void CheckBox(const char* what, const std::vector<int64_t>& dims,
              const std::vector<int64_t>& start, const std::vector<int64_t>& sizes) {
  XS_CHECK(start.size() == dims.size() && sizes.size() == dims.size(), what,
           ": box rank mismatch for [", JoinDims(dims), "]");
  for (size_t i = 0; i < dims.size(); ++i) {
    XS_CHECK(start[i] >= 0 && sizes[i] >= 0 && start[i] + sizes[i] <= dims[i], what, ": box [",
             JoinDims(start), "] + [", JoinDims(sizes), "] outside [", JoinDims(dims), "]");
  }
}

// Freed host buffers of 1 MiB or more are kept (up to 1 GiB in all) and handed to the next
// allocation of the same padded size, the way a device allocator keeps its pool: a program run
// again and again then gets its outputs and kernel buffers without mapping fresh pages and
// faulting them in (a 64 MiB result is 16k page faults otherwise).
class LargeBufferCache {
 public:
  static LargeBufferCache& Get() {
    static auto* cache = new LargeBufferCache();  // never destroyed: Arrays may outlive statics
    return *cache;
  }
  std::byte* Take(size_t bytes) {
    if (bytes < kMinBytes) return nullptr;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.find(bytes);
    if (it == free_.end()) return nullptr;
    std::byte* p = it->second;
    free_.erase(it);
    cached_ -= bytes;
    return p;
  }
  // Keeps `p` for reuse; false when it is small or the cache is full (the caller frees it).
  bool Give(std::byte* p, size_t bytes) {
    if (bytes < kMinBytes) return false;
    std::lock_guard<std::mutex> lock(mu_);
    if (cached_ + bytes > kMaxCachedBytes) return false;
    free_.emplace(bytes, p);
    cached_ += bytes;
    return true;
  }

 private:
  static constexpr size_t kMinBytes = size_t{1} << 20;
  static constexpr size_t kMaxCachedBytes = size_t{1} << 30;
  std::mutex mu_;
  std::unordered_multimap<size_t, std::byte*> free_;
  size_t cached_ = 0;
};

}  // namespace

void Array::FreeDeleter::operator()(std::byte* p) const {
  if (borrowed) return;
  if (!LargeBufferCache::Get().Give(p, bytes)) std::free(p);
}

Array::Array() : Array(Shape(DType::kF32, {})) {}

Array::Array(Shape shape) : Array(std::move(shape), NoInit{}) {
  std::memset(data(), 0, static_cast<size_t>(byte_size()));
}

Array Array::Uninitialized(Shape shape) { return Array(std::move(shape), NoInit{}); }

Array Array::View(Shape shape, std::byte* data) { return View(std::move(shape), data, nullptr); }

Array Array::View(Shape shape, std::byte* data, std::shared_ptr<const void> keep_alive) {
  XS_CHECK(shape.IsArray(), "Array needs an array shape, got ", shape.ToString());
  XS_CHECK(data != nullptr, "Array::View of null memory for ", shape.ToString());
  Array a(Shape(shape.dtype(), {}), NoInit{});  // a 64-byte placeholder, replaced below
  a.shape_ = Shape(shape.dtype(), shape.dims());
  a.data_ = std::unique_ptr<std::byte[], FreeDeleter>(data, FreeDeleter{true, 0, std::move(keep_alive)});
  return a;
}

size_t BufferCapacity(size_t bytes) {
  const size_t align = bytes >= kHugeBufferBytes ? kHugePage : kAlignment;
  return std::max<size_t>(kAlignment, (bytes + align - 1) / align * align);
}

void* AllocateBuffer(size_t bytes) {
  const size_t capacity = BufferCapacity(bytes);
  if (capacity < kHugeBufferBytes) return std::aligned_alloc(kAlignment, capacity);
  void* p = std::aligned_alloc(kHugePage, capacity);
  // Advice only: without transparent huge pages (or with them off) the call fails harmlessly.
  if (p != nullptr) madvise(p, capacity, MADV_HUGEPAGE);
  return p;
}

Array::Array(Shape shape, NoInit) : shape_(shape.dtype(), shape.dims()) {
  XS_CHECK(shape.IsArray(), "Array needs an array shape, got ", shape.ToString());
  for (int64_t d : shape_.dims()) XS_CHECK(d >= 0, "Array needs static dims, got ", shape.ToString());
  // Round up to the alignment (aligned_alloc requires it) and never allocate zero bytes, so
  // data() is a valid pointer even for empty arrays.
  const size_t bytes = static_cast<size_t>(shape_.byte_size());
  const size_t padded = BufferCapacity(bytes);
  std::byte* p = LargeBufferCache::Get().Take(padded);
  if (p == nullptr) p = static_cast<std::byte*>(AllocateBuffer(padded));
  if (p == nullptr) throw AllocationFailure(static_cast<int64_t>(padded), shape_.ToString());
  // The tail padding to the next 64 bytes only (a huge buffer's rounding beyond is never read).
  const size_t tail_end = std::min(padded, (bytes + kAlignment - 1) / kAlignment * kAlignment);
  if (tail_end > bytes) std::memset(p + bytes, 0, tail_end - bytes);
  data_ = std::unique_ptr<std::byte[], FreeDeleter>(p, FreeDeleter{false, padded, nullptr});
}

Array::Array(const Array& other) : Array(other.shape_, NoInit{}) {
  std::memcpy(data(), other.data(), byte_size());
}

Array& Array::operator=(const Array& other) {
  if (this != &other) *this = Array(other);
  return *this;
}

Array Array::Iota(DType dtype, std::vector<int64_t> dims) {
  Array a(Shape(dtype, std::move(dims)));
  const int64_t size = DTypeSize(dtype);
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    CodecOf(dtype).write(dtype, a.data() + i * size, Signed(i));
  }
  return a;
}

Array Array::Full(DType dtype, std::vector<int64_t> dims, double value) {
  Array a(Shape(dtype, std::move(dims)));
  for (int64_t i = 0; i < a.num_elements(); ++i) a.SetDouble(i, value);
  return a;
}

StatusOr<Array> Array::FromBytes(Shape shape, std::span<const std::byte> bytes) {
  if (!shape.IsArray()) {
    return InvalidArgument("Array::FromBytes: shape ", shape.ToString(),
                           " is not an array shape; pass an array shape such as f32[2,3]");
  }
  for (int64_t d : shape.dims()) {
    if (d < 0) {
      return InvalidArgument("Array::FromBytes: shape ", shape.ToString(),
                             " has a dynamic dim; pass static dims");
    }
  }
  Array a(Shape(shape.dtype(), shape.dims()));
  if (static_cast<int64_t>(bytes.size()) != a.byte_size()) {
    return InvalidArgument("Array::FromBytes: ", a.shape().ToString(), " needs ", a.byte_size(),
                           " bytes (", a.num_elements(), " elements x ", DTypeSize(a.dtype()),
                           "), got ", bytes.size());
  }
  if (!bytes.empty()) std::memcpy(a.data(), bytes.data(), bytes.size());
  return a;
}

double Array::GetDouble(int64_t linear) const {
  XS_CHECK(linear >= 0 && linear < num_elements(), "GetDouble: index ", linear, " outside ",
           shape_.ToString());
  const Element e = CodecOf(dtype()).read(dtype(), data() + linear * DTypeSize(dtype()));
  return ToF64(e);
}

void Array::SetDouble(int64_t linear, double value) {
  XS_CHECK(linear >= 0 && linear < num_elements(), "SetDouble: index ", linear, " outside ",
           shape_.ToString());
  CodecOf(dtype()).write(dtype(), data() + linear * DTypeSize(dtype()), Float(value));
}

double Array::At(const std::vector<int64_t>& index) const {
  XS_CHECK(static_cast<int>(index.size()) == rank(), "At: index rank ", index.size(),
           " for ", shape_.ToString());
  const std::vector<int64_t> strides = RowMajorStrides(dims());
  int64_t linear = 0;
  for (int i = 0; i < rank(); ++i) {
    XS_CHECK(index[i] >= 0 && index[i] < dims()[i], "At: index [", JoinDims(index), "] outside ",
             shape_.ToString());
    linear += index[i] * strides[i];
  }
  return GetDouble(linear);
}

Array Array::Slice(const std::vector<int64_t>& start, const std::vector<int64_t>& sizes) const {
  CheckBox("Slice", dims(), start, sizes);
  Array out(Shape(dtype(), sizes));
  CopyBox(data(), dims(), start, out.data(), sizes, std::vector<int64_t>(sizes.size(), 0), sizes,
          DTypeSize(dtype()));
  return out;
}

void Array::UpdateSlice(const Array& src, const std::vector<int64_t>& start) {
  XS_CHECK(src.dtype() == dtype(), "UpdateSlice: ", src.shape().ToString(), " into ",
           shape_.ToString());
  CheckBox("UpdateSlice", dims(), start, src.dims());
  CopyBox(src.data(), src.dims(), std::vector<int64_t>(src.rank(), 0), data(), dims(), start,
          src.dims(), DTypeSize(dtype()));
}

Array Array::Reshape(std::vector<int64_t> dims) const {
  Array out = Uninitialized(Shape(dtype(), std::move(dims)));
  XS_CHECK(out.num_elements() == num_elements(), "Reshape: ", shape_.ToString(), " to ",
           out.shape().ToString(), " changes the element count");
  std::memcpy(out.data(), data(), byte_size());
  return out;
}

Array Array::Convert(DType to) const {
  Array out(Shape(to, dims()));
  const Codec& from_codec = CodecOf(dtype());
  const Codec& to_codec = CodecOf(to);
  const int64_t from_size = DTypeSize(dtype()), to_size = DTypeSize(to);
  for (int64_t i = 0; i < num_elements(); ++i) {
    to_codec.write(to, out.data() + i * to_size, from_codec.read(dtype(), data() + i * from_size));
  }
  return out;
}

bool operator==(const Array& a, const Array& b) {
  return a.shape_ == b.shape_ && std::memcmp(a.data(), b.data(), a.byte_size()) == 0;
}

}  // namespace xs
