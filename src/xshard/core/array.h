// Array: an owning, row-major host tensor of any DType (64-byte aligned storage), with typed
// access, sub-box copies and JAX-style printing. Used for program inputs/outputs and shards.
#ifndef XSHARD_CORE_ARRAY_H_
#define XSHARD_CORE_ARRAY_H_

#include <complex>
#include <cstring>
#include <type_traits>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <span>
#include "xshard/core/dtype.h"
#include "xshard/core/shape.h"

namespace xs {

// Native C++ element type for each DType that has one, and back.
template <typename T> struct DTypeOfT;
template <> struct DTypeOfT<bool> { static constexpr DType value = DType::kPred; };
template <> struct DTypeOfT<int8_t> { static constexpr DType value = DType::kS8; };
template <> struct DTypeOfT<int16_t> { static constexpr DType value = DType::kS16; };
template <> struct DTypeOfT<int32_t> { static constexpr DType value = DType::kS32; };
template <> struct DTypeOfT<int64_t> { static constexpr DType value = DType::kS64; };
template <> struct DTypeOfT<uint8_t> { static constexpr DType value = DType::kU8; };
template <> struct DTypeOfT<uint16_t> { static constexpr DType value = DType::kU16; };
template <> struct DTypeOfT<uint32_t> { static constexpr DType value = DType::kU32; };
template <> struct DTypeOfT<uint64_t> { static constexpr DType value = DType::kU64; };
template <> struct DTypeOfT<Half> { static constexpr DType value = DType::kF16; };
template <> struct DTypeOfT<BFloat16> { static constexpr DType value = DType::kBF16; };
template <> struct DTypeOfT<float> { static constexpr DType value = DType::kF32; };
template <> struct DTypeOfT<double> { static constexpr DType value = DType::kF64; };
template <> struct DTypeOfT<std::complex<float>> { static constexpr DType value = DType::kC64; };
template <> struct DTypeOfT<std::complex<double>> { static constexpr DType value = DType::kC128; };
template <typename T> inline constexpr DType DTypeOf = DTypeOfT<T>::value;

class Array {
 public:
  // An f32 scalar holding 0.
  Array();
  // Zero-filled array of an array shape (layout dropped). XS_CHECK: shape.IsArray().
  explicit Array(Shape shape);
  Array(DType dtype, std::vector<int64_t> dims) : Array(Shape(dtype, std::move(dims))) {}
  Array(const Array& other);
  Array& operator=(const Array& other);
  Array(Array&&) noexcept = default;
  Array& operator=(Array&&) noexcept = default;

  // Array::FromVector<float>({2, 2}, {1, 2, 3, 4}); XS_CHECK: values.size() == product(dims).
  template <typename T>
  static Array FromVector(std::vector<int64_t> dims, const std::vector<T>& values) {
    Array a(Shape(DTypeOf<T>, std::move(dims)));
    XS_CHECK(static_cast<int64_t>(values.size()) == a.num_elements(), "FromVector: ",
             values.size(), " values for shape ", a.shape().ToString());
    if constexpr (std::is_same_v<T, bool>) {
      for (size_t i = 0; i < values.size(); ++i) a.data()[i] = std::byte{values[i] ? uint8_t{1} : uint8_t{0}};
    } else {
      std::memcpy(a.data(), values.data(), values.size() * sizeof(T));
    }
    return a;
  }
  template <typename T>
  static Array Scalar(T value) { return FromVector<T>({}, {value}); }
  // Values 0, 1, 2, ... converted to `dtype` (like jnp.arange(n).reshape(dims)).
  static Array Iota(DType dtype, std::vector<int64_t> dims);
  // Every element set to `value` converted to `dtype` (like jnp.full).
  static Array Full(DType dtype, std::vector<int64_t> dims, double value);
  // An array of an array shape whose contents are unspecified (no zero-fill): for results a
  // kernel overwrites completely. XS_CHECK: shape.IsArray().
  static Array Uninitialized(Shape shape);
  // An array over memory it does not own (no copy; nothing is freed): `data` must hold
  // shape.byte_size() bytes, 64-byte aligned, and outlive the array and every move of it. Copies
  // of a view own their data. The executor's arena buffers are views.
  static Array View(Shape shape, std::byte* data);
  // Same, holding `keep_alive` (the owner of `data`, e.g. a pooled buffer the view lies in) until
  // the view and every move of it are destroyed: `data` then needs to outlive only `keep_alive`.
  static Array View(Shape shape, std::byte* data, std::shared_ptr<const void> keep_alive);
  // Copies raw row-major bytes; error when the byte count does not match the shape.
  static StatusOr<Array> FromBytes(Shape shape, std::span<const std::byte> bytes);

  const Shape& shape() const { return shape_; }
  DType dtype() const { return shape_.dtype(); }
  const std::vector<int64_t>& dims() const { return shape_.dims(); }
  int rank() const { return shape_.rank(); }
  int64_t num_elements() const { return shape_.num_elements(); }
  int64_t byte_size() const { return shape_.byte_size(); }

  // False for a View.
  bool owns_data() const { return !data_.get_deleter().borrowed; }

  std::byte* data() { return data_.get(); }
  const std::byte* data() const { return data_.get(); }
  // Typed views; XS_CHECK that T matches dtype() (bool views pred as uint8_t storage: use
  // values<uint8_t>() or Get/Set for pred).
  template <typename T>
  std::span<T> values() {
    XS_CHECK(DTypeSize(dtype()) == sizeof(T), "values<T>: element size mismatch for ",
             DTypeName(dtype()));
    return std::span<T>(reinterpret_cast<T*>(data()), num_elements());
  }
  template <typename T>
  std::span<const T> values() const {
    XS_CHECK(DTypeSize(dtype()) == sizeof(T), "values<T>: element size mismatch for ",
             DTypeName(dtype()));
    return std::span<const T>(reinterpret_cast<const T*>(data()), num_elements());
  }

  // Element `linear` (row-major index) converted to / from double, for any real dtype
  // (pred: 0/1; complex: real part; s64/u64 beyond 2^53 round). SetDouble converts like Convert.
  // Slow path for tests, printing and reference code.
  double GetDouble(int64_t linear) const;
  void SetDouble(int64_t linear, double value);
  // Multi-index variants.
  double At(const std::vector<int64_t>& index) const;

  // Copy of the box [start, start + sizes). XS_CHECK that the box is in bounds.
  Array Slice(const std::vector<int64_t>& start, const std::vector<int64_t>& sizes) const;
  // Writes `src` into this array at `start` (box must fit; XS_CHECK).
  void UpdateSlice(const Array& src, const std::vector<int64_t>& start);
  // Same data, new dims with the same element count (XS_CHECK).
  Array Reshape(std::vector<int64_t> dims) const;
  // Converts every element to `dtype` (XLA convert): floating -> integer truncates toward zero and
  // saturates, NaN -> 0; integer -> integer wraps (two's complement); -> float rounds once to
  // nearest even; -> pred is x != 0; complex -> real keeps the real part; real -> complex is (x, 0).
  Array Convert(DType dtype) const;

  // Bitwise equality of shape and bytes.
  friend bool operator==(const Array& a, const Array& b);

  // Printed like numpy / JAX print arrays: "[[ 16.  32.]\n [ 32.  64.]]" for floats,
  // "[[0 1]\n [4 5]]" for ints, "[ True False]" for pred; a scalar prints as str() of its value
  // ("4.0", "1e+16", "True"); more than 1000 elements summarize with "...".
  std::string ToString() const;
  // repr as JAX shows it: "Array([[1., 2.],\n       [3., 4.]], dtype=float32)".
  std::string Repr() const;

 private:
  struct FreeDeleter {
    bool borrowed;      // a View's memory: not freed (value-initialized to false)
    size_t bytes;       // the allocation's padded size (large ones go back to the buffer cache)
    std::shared_ptr<const void> keep_alive;  // a View's owner (may be null)
    void operator()(std::byte* p) const;
  };
  struct NoInit {};
  Array(Shape shape, NoInit);
  Shape shape_;
  std::unique_ptr<std::byte[], FreeDeleter> data_;
};

}  // namespace xs

#endif  // XSHARD_CORE_ARRAY_H_
