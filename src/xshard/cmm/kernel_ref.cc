// Ref views (slicing, load, store, strided copies) and the names of buffers and semaphores.
#include "xshard/cmm/kernel_ref.h"

#include <cstring>

#include "xshard/base/strings.h"

namespace xs::cmm {

std::string BufferId::ToString() const {
  static constexpr const char* kNames[] = {"in", "out", "scratch"};
  return StrCat(kNames[static_cast<int>(kind)], "[", index, "]", block ? " block" : "");
}

Ref::Ref(internal::Invocation* invocation, BufferId id, DType dtype, std::byte* base,
         std::vector<int64_t> dims)
    : invocation_(invocation), id_(id), dtype_(dtype), base_(base), dims_(std::move(dims)) {
  strides_.assign(dims_.size(), 1);
  for (int d = rank() - 2; d >= 0; --d) strides_[d] = strides_[d + 1] * dims_[d + 1];
}

int64_t Ref::num_elements() const {
  int64_t n = 1;
  for (int64_t d : dims_) n *= d;
  return n;
}

bool Ref::contiguous() const {
  int64_t expect = 1;
  for (int d = rank() - 1; d >= 0; --d) {
    if (dims_[d] != 1 && strides_[d] != expect) return false;
    expect *= dims_[d];
  }
  return true;
}

StatusOr<Ref> Ref::At(const std::vector<Ds>& slices) const {
  if (!valid()) return InvalidArgument("At on an invalid ref");
  if (static_cast<int>(slices.size()) > rank()) {
    return InvalidArgument("At on ", ToString(), ": ", slices.size(), " slices for a rank-", rank(),
                           " ref; give at most one pl.ds per dim");
  }
  Ref r = *this;
  for (size_t d = 0; d < slices.size(); ++d) {
    const int64_t size = slices[d].size < 0 ? dims_[d] - slices[d].start : slices[d].size;
    if (slices[d].start < 0 || size < 0 || slices[d].start + size > dims_[d]) {
      return InvalidArgument("At on ", ToString(), ": slice ds(", slices[d].start, ", ",
                             slices[d].size, ") leaves dim ", d, " of size ", dims_[d],
                             "; start and start + size must lie in [0, ", dims_[d], "]");
    }
    r.offset_ += slices[d].start * strides_[d];
    r.dims_[d] = size;
  }
  return r;
}

Array Ref::Load() const {
  if (!valid()) return Array();
  Array out(dtype_, dims_);
  std::vector<int64_t> dense = Ref(nullptr, id_, dtype_, out.data(), dims_).strides();
  CopyStrided(out.data(), dense, data(), strides_, dims_, DTypeSize(dtype_));
  return out;
}

Status Ref::Store(const Array& value) const {
  if (!valid()) return InvalidArgument("Store into an invalid ref");
  if (!writable()) {
    return InvalidArgument("Store into ", ToString(),
                           ": inputs are read-only; copy into an output ", "or a scratch buffer");
  }
  if (value.dtype() != dtype_ || value.dims() != dims_) {
    return InvalidArgument("Store into ", ToString(), ": the value is ", value.shape().ToString(),
                           "; store a value of the ref's dtype and dims (Convert or slice it)");
  }
  std::vector<int64_t> dense = Ref(nullptr, id_, dtype_, nullptr, dims_).strides();
  CopyStrided(data(), strides_, value.data(), dense, dims_, DTypeSize(dtype_));
  return OkStatus();
}

std::string Ref::ToString() const {
  return StrCat(id_.ToString(), " ", DTypeName(dtype_), "[", StrJoin(dims_, ","), "] at element ",
                offset_);
}

void CopyStrided(std::byte* dst, std::span<const int64_t> dst_strides, const std::byte* src,
                 std::span<const int64_t> src_strides, std::span<const int64_t> dims,
                 int64_t element_size) {
  if (dims.empty()) {
    std::memcpy(dst, src, element_size);
    return;
  }
  for (int64_t d : dims) {
    if (d == 0) return;
  }
  if (dims.size() == 1) {
    if (dst_strides[0] == 1 && src_strides[0] == 1) {
      std::memcpy(dst, src, dims[0] * element_size);
      return;
    }
    for (int64_t i = 0; i < dims[0]; ++i) {
      std::memcpy(dst + i * dst_strides[0] * element_size, src + i * src_strides[0] * element_size,
                  element_size);
    }
    return;
  }
  for (int64_t i = 0; i < dims[0]; ++i) {
    CopyStrided(dst + i * dst_strides[0] * element_size, dst_strides.subspan(1),
                src + i * src_strides[0] * element_size, src_strides.subspan(1), dims.subspan(1),
                element_size);
  }
}

std::string_view SemaphoreTypeName(SemaphoreType type) {
  return type == SemaphoreType::kDma ? "DMA" : "REGULAR";
}

std::string Semaphore::ToString() const {
  return StrCat("semaphore ", index_, " (", SemaphoreTypeName(type_), ")");
}

}  // namespace xs::cmm
