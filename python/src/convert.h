// Shared helpers of the Python bindings: xshard Status -> Python exceptions, and numpy arrays <->
// xs::Array (zero-copy where the memory allows).
#ifndef XSHARD_PYTHON_CONVERT_H_
#define XSHARD_PYTHON_CONVERT_H_

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <optional>
#include <utility>

#include "xshard/base/status.h"
#include "xshard/core/array.h"

namespace xs::python {

namespace nb = nanobind;

// The numpy arrays the bindings accept: any dtype and shape, C-contiguous, on the CPU (nanobind
// converts other numpy arrays; the Python layer calls numpy.ascontiguousarray first).
using InArray = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;

// Raises the Python exception for a failed status, carrying xshard's message: ValueError for the
// user's mistakes (invalid argument, not found), NotImplementedError (unimplemented), MemoryError
// (resource exhausted), TimeoutError (deadline exceeded), RuntimeError otherwise.
[[noreturn]] void Raise(const Status& status);
inline void Check(const Status& status) {
  if (!status.ok()) Raise(status);
}
template <typename T>
T Unwrap(StatusOr<T> value) {
  if (!value.ok()) Raise(value.status());
  return std::move(*value);
}

// The xshard element type of a numpy array's dtype; ValueError names unsupported ones.
DType DTypeOfNumpy(const InArray& array);
// An Array over the numpy array's memory when it is 64-byte aligned (no copy: the numpy array
// must outlive the Array), else a copy. `as`, when given, is the element type its bytes hold
// instead of the dtype's (bf16 arrives as its uint16 bits: numpy has no bfloat16); ValueError
// when the element sizes differ.
Array ToArray(const InArray& array, std::optional<DType> as = std::nullopt);
// A numpy array that takes over `array`'s storage (no copy), or a copy of a view.
nb::object ToNumpy(Array array);

}  // namespace xs::python

#endif  // XSHARD_PYTHON_CONVERT_H_
