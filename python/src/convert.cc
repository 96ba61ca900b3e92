// Status -> Python exception and numpy <-> Array conversions for the bindings.
#include "python/src/convert.h"

#include <Python.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace xs::python {

void Raise(const Status& status) {
  PyObject* type = PyExc_RuntimeError;
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
      type = PyExc_ValueError;
      break;
    case StatusCode::kUnimplemented:
      type = PyExc_NotImplementedError;
      break;
    case StatusCode::kResourceExhausted:
      type = PyExc_MemoryError;
      break;
    case StatusCode::kDeadlineExceeded:
      type = PyExc_TimeoutError;
      break;
    default:
      break;
  }
  PyErr_SetString(type, status.message().c_str());
  throw nb::python_error();
}

DType DTypeOfNumpy(const InArray& array) {
  const nb::dlpack::dtype t = array.dtype();
  using Code = nb::dlpack::dtype_code;
  const auto code = static_cast<Code>(t.code);
  if (t.lanes == 1) {
    switch (code) {
      case Code::Bool:
        if (t.bits == 8) return DType::kPred;
        break;
      case Code::Int:
        switch (t.bits) {
          case 8: return DType::kS8;
          case 16: return DType::kS16;
          case 32: return DType::kS32;
          case 64: return DType::kS64;
        }
        break;
      case Code::UInt:
        switch (t.bits) {
          case 8: return DType::kU8;
          case 16: return DType::kU16;
          case 32: return DType::kU32;
          case 64: return DType::kU64;
        }
        break;
      case Code::Float:
        switch (t.bits) {
          case 16: return DType::kF16;
          case 32: return DType::kF32;
          case 64: return DType::kF64;
        }
        break;
      case Code::Bfloat:
        if (t.bits == 16) return DType::kBF16;
        break;
      case Code::Complex:
        if (t.bits == 64) return DType::kC64;
        if (t.bits == 128) return DType::kC128;
        break;
      default:
        break;
    }
  }
  Raise(InvalidArgument("numpy arrays of this dtype (dlpack code ", static_cast<int>(t.code),
                        ", ", static_cast<int>(t.bits),
                        " bits) have no xshard element type; use bool, (u)int8..64, float16/32/64 "
                        "or complex64/128"));
}

Array ToArray(const InArray& array, std::optional<DType> as) {
  DType dtype = DTypeOfNumpy(array);
  if (as) {
    if (DTypeSize(*as) != DTypeSize(dtype)) {
      Raise(InvalidArgument("an array of ", DTypeName(dtype), " elements cannot hold ", DTypeName(*as), " values (",
                            DTypeSize(dtype), " against ", DTypeSize(*as), " bytes each)"));
    }
    dtype = *as;
  }
  std::vector<int64_t> dims(array.ndim());
  for (size_t i = 0; i < array.ndim(); ++i) dims[i] = static_cast<int64_t>(array.shape(i));
  Shape shape(dtype, std::move(dims));
  const auto* data = static_cast<const std::byte*>(array.data());
  if (reinterpret_cast<uintptr_t>(data) % 64 == 0 && shape.byte_size() > 0) {
    // The runtime only reads arguments: the view's constness is kept by the callers.
    return Array::View(std::move(shape), const_cast<std::byte*>(data));
  }
  Array out = Array::Uninitialized(shape);
  if (shape.byte_size() > 0) std::memcpy(out.data(), data, static_cast<size_t>(shape.byte_size()));
  return out;
}

namespace {

nb::dlpack::dtype DlpackOf(DType t) {
  using Code = nb::dlpack::dtype_code;
  auto make = [](Code code, int bits) {
    return nb::dlpack::dtype{static_cast<uint8_t>(code), static_cast<uint8_t>(bits), 1};
  };
  switch (t) {
    case DType::kPred: return make(Code::Bool, 8);
    case DType::kS8: return make(Code::Int, 8);
    case DType::kS16: return make(Code::Int, 16);
    case DType::kS32: return make(Code::Int, 32);
    case DType::kS64: return make(Code::Int, 64);
    case DType::kU8: return make(Code::UInt, 8);
    case DType::kU16: return make(Code::UInt, 16);
    case DType::kU32: return make(Code::UInt, 32);
    case DType::kU64: return make(Code::UInt, 64);
    case DType::kF16: return make(Code::Float, 16);
    case DType::kF32: return make(Code::Float, 32);
    case DType::kF64: return make(Code::Float, 64);
    case DType::kC64: return make(Code::Complex, 64);
    case DType::kC128: return make(Code::Complex, 128);
    // numpy has no bfloat16: its bits come back as uint16 (the Python layer views them as
    // ml_dtypes.bfloat16 when that package is installed).
    case DType::kBF16: return make(Code::UInt, 16);
    default:
      Raise(Unimplemented("results of element type ", DTypeName(t),
                          " cannot be returned as numpy arrays"));
  }
}

}  // namespace

nb::object ToNumpy(Array array) {
  if (!array.owns_data()) array = Array(array);  // a copy owns its data
  const nb::dlpack::dtype dtype = DlpackOf(array.dtype());
  std::vector<size_t> shape(array.dims().begin(), array.dims().end());
  auto* owned = new Array(std::move(array));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<Array*>(p); });
  nb::ndarray<nb::numpy> out(owned->data(), shape.size(), shape.data(), owner, nullptr, dtype);
  return out.cast();
}

}  // namespace xs::python
