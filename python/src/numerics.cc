// Bindings of the numerics report (core/numerics.h): xshard.numerics(got, want, ...) compares two
// numpy arrays the way `xshard numerics GOT.npy WANT.npy` does and returns the report object.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <string>
#include <vector>

#include "python/src/convert.h"
#include "xshard/core/numerics.h"

namespace xs::python {
namespace {

using namespace nb::literals;

NumericsReport Compare(const InArray& got, const InArray& want, double atol, double rtol,
                       bool equal_nan, std::optional<double> threshold,
                       std::vector<int64_t> blocks) {
  NumericsOptions options;
  options.atol = atol;
  options.rtol = rtol;
  options.equal_nan = equal_nan;
  options.threshold = threshold;
  options.blocks = std::move(blocks);
  Array g = ToArray(got), w = ToArray(want);
  nb::gil_scoped_release release;
  StatusOr<NumericsReport> report = CompareNumerics(g, w, options);
  nb::gil_scoped_acquire acquire;
  return Unwrap(std::move(report));
}

}  // namespace

void BindNumerics(nb::module_& m) {
  nb::class_<BlockNumerics>(m, "BlockNumerics")
      .def_ro("index", &BlockNumerics::index)
      .def_ro("start", &BlockNumerics::start)
      .def_ro("limit", &BlockNumerics::limit)
      .def_ro("elements", &BlockNumerics::elements)
      .def_ro("mean_abs_diff", &BlockNumerics::mean_abs_diff)
      .def_ro("max_abs_diff", &BlockNumerics::max_abs_diff)
      .def_ro("errors", &BlockNumerics::errors)
      .def("__repr__", [](const BlockNumerics& b) {
        std::string range;
        for (size_t i = 0; i < b.start.size(); ++i) {
          range += (i ? ", " : "") + std::to_string(b.start[i]) + ":" + std::to_string(b.limit[i]);
        }
        return "BlockNumerics([" + range + "], max_abs_diff=" + std::to_string(b.max_abs_diff) +
               ", errors=" + std::to_string(b.errors) + ")";
      });

  nb::class_<NumericsReport>(m, "NumericsReport")
      .def_prop_ro("got_shape", [](const NumericsReport& r) { return r.got_shape.ToString(false); })
      .def_prop_ro("want_shape", [](const NumericsReport& r) { return r.want_shape.ToString(false); })
      .def_ro("elements", &NumericsReport::elements)
      .def_ro("allclose", &NumericsReport::allclose)
      .def_ro("not_close", &NumericsReport::not_close)
      .def_ro("nan_mismatches", &NumericsReport::nan_mismatches)
      .def_ro("max_abs_diff", &NumericsReport::max_abs_diff)
      .def_ro("mean_abs_diff", &NumericsReport::mean_abs_diff)
      .def_ro("median_abs_diff", &NumericsReport::median_abs_diff)
      .def_ro("max_rel_diff", &NumericsReport::max_rel_diff)
      .def_ro("errors", &NumericsReport::errors)
      .def_prop_ro("error_percent", &NumericsReport::error_percent)
      .def_ro("error_rows", &NumericsReport::error_rows)
      .def_ro("error_columns", &NumericsReport::error_columns)
      .def_ro("worst_index", &NumericsReport::worst_index)
      .def_ro("worst_got", &NumericsReport::worst_got)
      .def_ro("worst_want", &NumericsReport::worst_want)
      .def_ro("blocks", &NumericsReport::blocks)
      .def("__bool__", [](const NumericsReport& r) { return r.allclose; })
      .def("__str__", [](const NumericsReport& r) { return FormatNumericsReport(r); })
      .def("__repr__", [](const NumericsReport& r) {
        return "NumericsReport(" + r.got_shape.ToString(false) + " vs " +
               r.want_shape.ToString(false) + ", allclose=" + (r.allclose ? "True" : "False") +
               ", max_abs_diff=" + std::to_string(r.max_abs_diff) + ", errors=" +
               std::to_string(r.errors) + ")";
      });

  m.def("_compare_numerics", &Compare, "got"_a, "want"_a, "atol"_a, "rtol"_a, "equal_nan"_a,
        "threshold"_a = nb::none(), "blocks"_a = std::vector<int64_t>{});
}

}  // namespace xs::python
