// The nanobind side of the binding comparison: add(a, b), noop() and a list round trip.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
namespace nb = nanobind;
int add(int a, int b) { return a + b; }
NB_MODULE(nbmod, m) { m.def("add", &add); m.def("noop", [] {}); m.def("dims", [](const std::vector<long>& v) { return v; }); }
