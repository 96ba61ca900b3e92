// Bindings of the sharding model: Mesh, PartitionSpec, NamedSharding, HloSharding, the shard
// geometry (which box each device holds), device_put / gather and the sharding drawings.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "python/src/convert.h"
#include "xshard/jit/annotations.h"
#include "xshard/sharding/geometry.h"
#include "xshard/sharding/hlo_sharding.h"
#include "xshard/sharding/mesh.h"
#include "xshard/sharding/named_sharding.h"
#include "xshard/sharding/partition_spec.h"
#include "xshard/sharding/visualize.h"

namespace xs::python {
namespace {

using namespace nb::literals;

// A PartitionSpec entry from Python: None, an axis name, or a tuple / list of axis names.
PartitionSpec::Entry EntryOf(nb::handle h) {
  if (h.is_none()) return {};
  if (nb::isinstance<nb::str>(h)) return {nb::cast<std::string>(h)};
  if (nb::isinstance<nb::tuple>(h) || nb::isinstance<nb::list>(h)) {
    PartitionSpec::Entry axes;
    for (nb::handle a : h) {
      if (!nb::isinstance<nb::str>(a)) {
        Raise(InvalidArgument("PartitionSpec entry ", nb::cast<std::string>(nb::repr(h)),
                              ": every axis in a tuple must be a mesh axis name (str)"));
      }
      axes.push_back(nb::cast<std::string>(a));
    }
    return axes;
  }
  Raise(InvalidArgument("PartitionSpec entry ", nb::cast<std::string>(nb::repr(h)),
                        " is not None, an axis name or a tuple of axis names, e.g. "
                        "P('x', None) or P(('x', 'y'))"));
}

nb::object EntryToPython(const PartitionSpec::Entry& e) {
  if (e.empty()) return nb::none();
  if (e.size() == 1) return nb::str(e[0].c_str());
  nb::list axes;
  for (const std::string& a : e) axes.append(nb::str(a.c_str()));
  return nb::tuple(axes);
}

// The mesh's device ids as a nested list of the mesh's shape.
nb::object NestedIds(const std::vector<int64_t>& ids, const std::vector<int64_t>& sizes,
                     size_t axis, int64_t& next) {
  if (axis == sizes.size()) return nb::int_(ids[next++]);
  nb::list out;
  for (int64_t i = 0; i < sizes[axis]; ++i) out.append(NestedIds(ids, sizes, axis + 1, next));
  return out;
}

// What ShardGeometry says for each device: (device, holds_data, start, limit, replica_group).
using ShardRow = std::tuple<int64_t, bool, std::vector<int64_t>, std::vector<int64_t>,
                            std::vector<int64_t>>;
std::vector<ShardRow> Rows(const ShardGeometry& g) {
  std::vector<ShardRow> rows;
  for (const DeviceShard& d : g.shards()) {
    rows.emplace_back(d.device, d.holds_data, d.box.start, d.box.limit, d.replica_group);
  }
  return rows;
}

// A tiled sharding's text in one tile-assignment form: "stored", "v1" (explicit device list)
// or "iota" (ValueError when the devices have no iota form).
std::string ShardingText(const HloSharding& s, const std::string& form) {
  if (form == "stored" || form.empty()) return s.ToString();
  if (form == "v1") return Retile(s, false).ToString();
  if (form == "iota") {
    HloSharding iota = Retile(s, true);
    const bool has_iota = !s.IsTiled() || iota.tile_assignment().FindIota().has_value();
    if (!has_iota) {
      Raise(InvalidArgument("sharding ", s.ToString(), " has no iota form (its device order is "
                            "not a transposed iota); use form='v1'"));
    }
    return iota.ToString();
  }
  Raise(InvalidArgument("form='", form, "': expected 'stored', 'v1' or 'iota'"));
}

// One past the largest device id a sharding names (tiled, maximal; tuples: the largest), else
// `fallback` (the CLI's rule for `xshard sharding --parse`).
int64_t ImpliedDevices(const HloSharding& s, int64_t fallback) {
  int64_t n = 0;
  if (s.IsTuple()) {
    for (const HloSharding& e : s.tuple_elements()) n = std::max(n, ImpliedDevices(e, 0));
  } else if (s.IsTiled()) {
    for (int64_t d : s.tile_assignment().devices()) n = std::max(n, d + 1);
  } else if (s.IsMaximal()) {
    n = s.device() + 1;
  }
  return n > 0 ? n : fallback;
}

VisualizeOptions VisualizeOptionsOf(int max_width, int min_width, double scale, bool use_color,
                                    const std::string& device_kind) {
  VisualizeOptions o;
  o.max_width = max_width;
  o.min_width = min_width;
  o.scale = scale;
  o.use_color = use_color;
  o.device_kind = device_kind;
  return o;
}

}  // namespace

void BindSharding(nb::module_& m) {
  nb::class_<Mesh>(m, "Mesh",
                   "An N-D grid of devices with named axes, like jax.sharding.Mesh: "
                   "Mesh(numpy.arange(8).reshape(4, 2), ('a', 'b')).")
      .def("__init__",
           [](Mesh* self, nb::object devices, std::vector<std::string> axis_names) {
             nb::object arr = nb::module_::import_("numpy").attr("asarray")(devices);
             auto shape = nb::cast<std::vector<int64_t>>(arr.attr("shape"));
             auto ids = nb::cast<std::vector<int64_t>>(arr.attr("ravel")().attr("tolist")());
             if (shape.size() != axis_names.size()) {
               Raise(InvalidArgument("Mesh: devices have ", shape.size(), " dims but ",
                                     axis_names.size(), " axis names were given; give one name "
                                     "per dim, e.g. Mesh(numpy.arange(8).reshape(4, 2), ('a', 'b'))"));
             }
             new (self) Mesh(Unwrap(Mesh::Create(std::move(axis_names), std::move(shape),
                                                 std::move(ids))));
           },
           "devices"_a, "axis_names"_a)
      .def_static("parse", [](const std::string& axes, const std::string& device_order) {
             return Unwrap(Mesh::Parse(axes, device_order));
           }, "axes"_a, "device_order"_a = "",
           "The CLI's syntax: Mesh.parse('a=4,b=2', '0,2,4,6,1,3,5,7').")
      .def_prop_ro("axis_names", [](const Mesh& mesh) {
             nb::list names;
             for (const std::string& n : mesh.axis_names()) names.append(nb::str(n.c_str()));
             return nb::tuple(names);
           })
      .def_prop_ro("axis_sizes", [](const Mesh& mesh) { return mesh.axis_sizes(); })
      .def_prop_ro("shape", [](const Mesh& mesh) {
             nb::dict shape;
             for (int i = 0; i < mesh.num_axes(); ++i) {
               shape[nb::str(mesh.axis_names()[i].c_str())] = mesh.axis_sizes()[i];
             }
             return shape;
           }, "{axis name: size} in axis order, as JAX's Mesh.shape.")
      .def_prop_ro("size", &Mesh::num_devices)
      .def_prop_ro("device_ids", [](const Mesh& mesh) {
             int64_t next = 0;
             return nb::module_::import_("numpy").attr("array")(
                 NestedIds(mesh.device_ids(), mesh.axis_sizes(), 0, next));
           }, "The device ids as an int array of the mesh's shape.")
      .def("__repr__", &Mesh::ToString)
      .def("__eq__", [](const Mesh& a, const Mesh& b) { return a == b; })
      .def("__hash__", &Mesh::Hash);

  nb::class_<PartitionSpec>(m, "PartitionSpec",
                            "How each array dim maps onto mesh axes, as in JAX: P('x', None), "
                            "P(('x', 'y')), P().")
      .def("__init__",
           [](PartitionSpec* self, nb::args entries) {
             std::vector<PartitionSpec::Entry> out;
             for (nb::handle e : entries) out.push_back(EntryOf(e));
             new (self) PartitionSpec(std::move(out));
           })
      .def_static("parse", [](const std::string& text) { return Unwrap(PartitionSpec::Parse(text)); },
                  "text"_a, "JAX's syntax: PartitionSpec.parse(\"P('x', None)\").")
      .def("__len__", &PartitionSpec::size)
      .def("__getitem__", [](const PartitionSpec& p, int i) {
             if (i < 0) i += p.size();
             if (i < 0 || i >= p.size()) throw nb::index_error("PartitionSpec index out of range");
             return EntryToPython(p.entries()[i]);
           })
      .def("__repr__", &PartitionSpec::ToString)
      .def("__eq__", [](const PartitionSpec& a, const PartitionSpec& b) { return a == b; })
      .def("__hash__", [](const PartitionSpec& p) { return std::hash<std::string>()(p.ToString()); });

  nb::class_<HloSharding>(m, "HloSharding",
                          "XLA's sharding: HloSharding.parse('{devices=[2,4]<=[4,2]T(1,0)}').")
      .def_static("parse", [](const std::string& text) { return Unwrap(HloSharding::Parse(text)); },
                  "text"_a)
      .def_static("replicate", &HloSharding::Replicate)
      .def_static("manual", &HloSharding::Manual)
      .def_static("maximal", &HloSharding::AssignDevice, "device"_a)
      .def("to_string", &ShardingText, "form"_a = "stored",
           "XLA's text with tile assignments as stored ('stored'), as explicit device lists "
           "('v1') or in iota form ('iota').")
      .def("to_tiled", [](const HloSharding& s) { return Unwrap(s.ToTiled()); },
           "A mesh-axes sharding as the equivalent tiled one (others unchanged).")
      .def_prop_ro("is_replicated", &HloSharding::IsReplicated)
      .def_prop_ro("is_tiled", &HloSharding::IsTiled)
      .def_prop_ro("is_maximal", &HloSharding::IsMaximal)
      .def_prop_ro("is_manual", &HloSharding::IsManual)
      .def_prop_ro("is_tuple", &HloSharding::IsTuple)
      .def_prop_ro("tile_counts", &HloSharding::TileCounts,
                   "Tiles along each data dim ([] for kinds without tiling).")
      .def_prop_ro("replication_factor", &HloSharding::ReplicationFactor)
      .def_prop_ro("tuple_elements", &HloSharding::tuple_elements)
      .def("__str__", [](const HloSharding& s) { return s.ToString(); })
      .def("__repr__", [](const HloSharding& s) { return "HloSharding('" + s.ToString() + "')"; })
      .def("__eq__", [](const HloSharding& a, const HloSharding& b) { return a == b; })
      .def("__hash__", &HloSharding::Hash);

  nb::class_<NamedSharding>(m, "NamedSharding", "NamedSharding(mesh, spec), as in JAX.")
      .def("__init__",
           [](NamedSharding* self, const Mesh& mesh, const PartitionSpec& spec) {
             new (self) NamedSharding(Unwrap(NamedSharding::Create(mesh, spec)));
           },
           "mesh"_a, "spec"_a)
      .def_static("from_hlo_sharding", [](const Mesh& mesh, const HloSharding& s) {
             return Unwrap(NamedSharding::FromHloSharding(mesh, s));
           }, "mesh"_a, "sharding"_a)
      .def_prop_ro("mesh", &NamedSharding::mesh)
      .def_prop_ro("spec", &NamedSharding::spec)
      .def_prop_ro("num_devices", [](const NamedSharding& s) { return s.mesh().num_devices(); })
      .def("to_hlo_sharding", [](const NamedSharding& s, int rank) {
             return Unwrap(s.ToHloSharding(rank));
           }, "rank"_a, "The XLA sharding for an array of `rank` dims.")
      .def("__repr__", &NamedSharding::ToString)
      .def("__eq__", [](const NamedSharding& a, const NamedSharding& b) { return a == b; })
      .def("__hash__", [](const NamedSharding& s) { return std::hash<std::string>()(s.ToString()); });

  m.def("_implied_devices", [](const HloSharding& s, int64_t fallback) {
         return ImpliedDevices(s, fallback);
       }, "sharding"_a, "fallback"_a,
       "One past the largest device id `sharding` names (tiled, maximal), else `fallback`.");
  m.def("_geometry", [](const HloSharding& s, std::vector<int64_t> dims, int64_t devices) {
         ShardGeometry g = Unwrap(ShardGeometry::Create(s, std::move(dims), devices));
         return std::make_tuple(Rows(g), g.PaddedShardShape(), g.HasPerDeviceValues());
       }, "sharding"_a, "dims"_a, "num_devices"_a,
       "Per device: (device, holds_data, start, limit, replica_group); the padded shard shape; "
       "whether devices hold per-device values.");
  m.def("_device_put", [](InArray array, const HloSharding& s, int64_t devices) {
         Array a = ToArray(array);
         std::vector<Array> pieces = Unwrap(DevicePut(a, s, devices));
         nb::list out;
         for (Array& p : pieces) out.append(ToNumpy(std::move(p)));
         return out;
       }, "array"_a, "sharding"_a, "num_devices"_a);
  m.def("_gather", [](std::vector<InArray> shards, const HloSharding& s, std::vector<int64_t> dims) {
         std::vector<Array> pieces;
         for (const InArray& a : shards) pieces.push_back(ToArray(a));
         return ToNumpy(Unwrap(Gather(pieces, s, dims)));
       }, "shards"_a, "sharding"_a, "dims"_a);
  m.def("_visualize", [](std::vector<int64_t> dims, const HloSharding& s, int64_t devices,
                         int max_width, int min_width, double scale, bool use_color,
                         const std::string& device_kind) {
         return Unwrap(VisualizeSharding(dims, s, devices,
                                         VisualizeOptionsOf(max_width, min_width, scale,
                                                            use_color, device_kind)));
       }, "dims"_a, "sharding"_a, "num_devices"_a, "max_width"_a = 80, "min_width"_a = 9,
       "scale"_a = 1.0, "use_color"_a = false, "device_kind"_a = "CPU");
}

}  // namespace xs::python
