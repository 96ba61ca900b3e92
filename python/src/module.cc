// The extension module xshard._xshard: the sharding model and compiled programs over the C++
// libraries. The public Python API (xshard/__init__.py) wraps these.
#include "python/src/convert.h"
#include "xshard/base/limits.h"

namespace xs::python {
void BindSharding(nb::module_& m);
void BindProgram(nb::module_& m);
void BindShardMap(nb::module_& m);
void BindNumerics(nb::module_& m);
void BindCmm(nb::module_& m);
void BindAutoshard(nb::module_& m);
}  // namespace xs::python

NB_MODULE(_xshard, m) {
  m.doc() = "xshard's C++ sharding compiler and runtime (use the xshard package, not this module)";
  xs::python::BindSharding(m);
  xs::python::BindProgram(m);
  xs::python::BindShardMap(m);
  xs::python::BindNumerics(m);
  xs::python::BindCmm(m);
  xs::python::BindAutoshard(m);
  // The one device-count limit (base/limits.h), which xshard.compile checks devices= against.
  m.attr("MAX_DEVICES") = xs::kMaxDevices;
}
