// The pybind11 side of the binding comparison: add(a, b), noop() and a list round trip.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
namespace py = pybind11;
int add(int a, int b) { return a + b; }
PYBIND11_MODULE(pbmod, m) { m.def("add", &add); m.def("noop", [] {}); m.def("dims", [](const std::vector<long>& v) { return v; }); }
