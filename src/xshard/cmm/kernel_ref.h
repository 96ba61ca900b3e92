// Ref and Semaphore: what a Pallas-style kernel body (cmm/kernel.h) works on. A Ref is a typed N-D
// view (dims and element strides) of one buffer of a kernel invocation: a block copy (Pallas's
// VMEM), a device's whole local array (memory space ANY, Pallas's HBM) or a scratch buffer. The
// same BufferId names the same buffer on every device, which is how a remote copy finds its
// destination in a peer (cmm/remote_copy.h).
#ifndef XSHARD_CMM_KERNEL_REF_H_
#define XSHARD_CMM_KERNEL_REF_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/core/array.h"
#include "xshard/core/dtype.h"

namespace xs::cmm {

namespace internal {
class Invocation;  // one device's run of one kernel (cmm/kernel_invocation.h)
}  // namespace internal

// Which buffer of an invocation a ref views.
struct BufferId {
  enum class Kind : uint8_t { kInput, kOutput, kScratch };
  Kind kind = Kind::kInput;
  int index = 0;
  // true: the block buffer of a blocked spec (Pallas's VMEM copy); false: the whole array.
  bool block = false;

  friend bool operator==(const BufferId&, const BufferId&) = default;
  // "in[0]", "out[1] block", "scratch[0]".
  std::string ToString() const;
};

// pl.ds(start, size): `size` elements from `start` along one dim; size -1 means to the end.
struct Ds {
  int64_t start = 0;
  int64_t size = -1;
};

// A view of `dims` elements with `strides` (in elements) starting `offset` elements into the
// buffer `id`. Copies are cheap and share the buffer.
class Ref {
 public:
  Ref() = default;
  // Made by PallasCall; `base` is the buffer's first byte.
  Ref(internal::Invocation* invocation, BufferId id, DType dtype, std::byte* base,
      std::vector<int64_t> dims);

  // False for a default-constructed ref (what a bad k.in(i) index gives).
  bool valid() const { return invocation_ != nullptr || base_ != nullptr; }
  BufferId id() const { return id_; }
  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& dims() const { return dims_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t offset() const { return offset_; }
  int64_t num_elements() const;
  int64_t byte_size() const { return num_elements() * DTypeSize(dtype_); }
  // Row-major with no gaps.
  bool contiguous() const;
  // False for a whole input array (BlockSpec::Any inputs are the caller's arrays, read-only).
  bool writable() const { return !(id_.kind == BufferId::Kind::kInput && !id_.block); }
  // The first element.
  std::byte* data() const { return base_ + offset_ * DTypeSize(dtype_); }
  internal::Invocation* invocation() const { return invocation_; }

  // Typed access to a contiguous ref (XS_CHECK: contiguous and dtype T).
  template <typename T>
  std::span<T> values() const {
    XS_CHECK(contiguous() && DTypeOfT<T>::value == dtype_, "values<T>() of ", ToString());
    return {reinterpret_cast<T*>(data()), static_cast<size_t>(num_elements())};
  }

  // ref.at[pl.ds(...), ...]: slices of the leading dims (dims not named stay whole). Error when a
  // slice leaves the dim, naming the dim, its size and the slice.
  StatusOr<Ref> At(const std::vector<Ds>& slices) const;
  // ref[...]: a row-major copy of the viewed elements (an empty array for an invalid ref).
  Array Load() const;
  // ref[...] = value: value's dtype and dims must be the ref's, and the ref writable.
  Status Store(const Array& value) const;

  // "out[0] f32[4,8] at element 32".
  std::string ToString() const;

 private:
  internal::Invocation* invocation_ = nullptr;
  BufferId id_;
  DType dtype_ = DType::kF32;
  std::byte* base_ = nullptr;
  std::vector<int64_t> dims_;
  std::vector<int64_t> strides_;
  int64_t offset_ = 0;
};

// Copies the elements of one N-D strided view into another of the same dims (innermost runs of
// stride 1 with memcpy). Strides and dims in elements of `element_size` bytes.
void CopyStrided(std::byte* dst, std::span<const int64_t> dst_strides, const std::byte* src,
                 std::span<const int64_t> src_strides, std::span<const int64_t> dims,
                 int64_t element_size);

// Pallas's semaphore types: kRegular (SemaphoreSignal / SemaphoreWait, counts signals) and kDma
// (the completion semaphores of copies, counting bytes).
enum class SemaphoreType : uint8_t { kRegular, kDma };
std::string_view SemaphoreTypeName(SemaphoreType type);  // "REGULAR", "DMA"

// A handle to semaphore `index` of an invocation; the same index names the same semaphore on
// every device.
class Semaphore {
 public:
  Semaphore() = default;
  Semaphore(internal::Invocation* invocation, int index, SemaphoreType type)
      : invocation_(invocation), index_(index), type_(type) {}
  bool valid() const { return invocation_ != nullptr; }
  int index() const { return index_; }
  SemaphoreType type() const { return type_; }
  internal::Invocation* invocation() const { return invocation_; }
  // "semaphore 2 (DMA)".
  std::string ToString() const;

 private:
  internal::Invocation* invocation_ = nullptr;
  int index_ = 0;
  SemaphoreType type_ = SemaphoreType::kRegular;
};

}  // namespace xs::cmm

#endif  // XSHARD_CMM_KERNEL_REF_H_
