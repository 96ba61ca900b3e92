// Mesh: validation, the CLI text form "a=4,b=2" and JAX-style printing.
#include "xshard/sharding/mesh.h"

#include <algorithm>
#include <limits>

#include "xshard/core/shape.h"
#include "xshard/sharding/tile_assignment.h"

namespace xs {
namespace {

// "'a': 4, 'b': 2" for messages and ToString.
std::string AxesText(const std::vector<std::string>& names, const std::vector<int64_t>& sizes) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < sizes.size(); ++i) {
    if (i > 0) out += ", ";
    StrAppend(&out, "'", names[i], "': ", sizes[i]);
  }
  return out;
}

std::string_view Unquote(std::string_view s) {
  if (s.size() >= 2 && (s.front() == '\'' || s.front() == '"') && s.back() == s.front()) {
    return s.substr(1, s.size() - 2);
  }
  return s;
}

}  // namespace

StatusOr<Mesh> Mesh::Create(std::vector<std::string> axis_names, std::vector<int64_t> axis_sizes,
                            std::vector<int64_t> device_ids) {
  if (axis_names.size() != axis_sizes.size()) {
    return InvalidArgument("mesh has ", axis_names.size(), " axis names but ", axis_sizes.size(),
                           " axis sizes; give one size per name, e.g. a=4,b=2");
  }
  int64_t count = 1;
  for (size_t i = 0; i < axis_names.size(); ++i) {
    const std::string& name = axis_names[i];
    if (name.empty()) {
      return InvalidArgument("mesh axis ", i, " has an empty name; name every axis, e.g. 'x'");
    }
    for (size_t j = 0; j < i; ++j) {
      if (axis_names[j] == name) {
        return InvalidArgument("mesh axis name '", name, "' is used twice (axes ", j, " and ", i,
                               "); axis names must be unique");
      }
    }
    if (axis_sizes[i] < 1) {
      return InvalidArgument("mesh axis '", name, "' has size ", axis_sizes[i],
                             "; axis sizes must be >= 1");
    }
    if (count > kMaxDevices / axis_sizes[i]) {
      return InvalidArgument("mesh (", AxesText(axis_names, axis_sizes), ") has more than ", kMaxDevices,
                             " devices; xshard supports at most that");
    }
    count *= axis_sizes[i];
  }
  Mesh mesh;
  if (device_ids.empty()) {
    device_ids.resize(count);
    for (int64_t d = 0; d < count; ++d) device_ids[d] = d;
  } else {
    if (static_cast<int64_t>(device_ids.size()) != count) {
      return InvalidArgument("mesh device_ids has ", device_ids.size(), " ids but the mesh (",
                             AxesText(axis_names, axis_sizes), ") has ", count,
                             " devices; list each of 0..", count - 1, " once");
    }
    std::vector<bool> seen(count, false);
    for (int64_t d : device_ids) {
      if (d < 0 || d >= count) {
        return InvalidArgument("mesh device id ", d, " is out of range; device_ids must be a "
                               "permutation of 0..", count - 1);
      }
      if (seen[d]) {
        return InvalidArgument("mesh device_ids lists device ", d, " twice; device_ids must be "
                               "a permutation of 0..", count - 1);
      }
      seen[d] = true;
    }
  }
  mesh.names_ = std::move(axis_names);
  mesh.sizes_ = std::move(axis_sizes);
  mesh.device_ids_ = std::move(device_ids);
  return mesh;
}

StatusOr<Mesh> Mesh::Parse(std::string_view axes, std::string_view device_order) {
  std::vector<std::string> names;
  std::vector<int64_t> sizes;
  std::string_view body = StripWhitespace(axes);
  if (!body.empty()) {
    for (std::string_view entry : StrSplit(body, ',')) {
      std::string_view e = StripWhitespace(entry);
      size_t eq = e.find('=');
      int64_t size = 0;
      if (eq == std::string_view::npos || !ParseInt64(StripWhitespace(e.substr(eq + 1)), &size)) {
        return InvalidArgument("mesh text \"", axes, "\": entry \"", e,
                               "\" must look like name=size, e.g. a=4,b=2");
      }
      names.emplace_back(Unquote(StripWhitespace(e.substr(0, eq))));
      sizes.push_back(size);
    }
  }
  std::vector<int64_t> ids;
  std::string_view order = StripWhitespace(device_order);
  if (order.size() >= 2 && (order.front() == '[' || order.front() == '(')) {
    order = StripWhitespace(order.substr(1, order.size() - 2));
  }
  if (!order.empty()) {
    for (std::string_view entry : StrSplit(order, ',')) {
      int64_t id = 0;
      if (!ParseInt64(StripWhitespace(entry), &id)) {
        return InvalidArgument("mesh device order \"", device_order, "\": \"",
                               StripWhitespace(entry),
                               "\" is not a device id; write ids like 0,2,4,6,1,3,5,7");
      }
      ids.push_back(id);
    }
  }
  return Create(std::move(names), std::move(sizes), std::move(ids));
}

StatusOr<int> Mesh::AxisIndex(std::string_view name) const {
  for (size_t i = 0; i < names_.size(); ++i) {
    if (names_[i] == name) return static_cast<int>(i);
  }
  return NotFound("mesh axis '", name, "' does not exist; the mesh has axes (",
                  AxesText(names_, sizes_), ")");
}

bool Mesh::HasAxis(std::string_view name) const {
  return std::find(names_.begin(), names_.end(), name) != names_.end();
}

int64_t Mesh::DeviceAt(const std::vector<int64_t>& coords) const {
  XS_CHECK(coords.size() == sizes_.size(), "mesh coords rank ", coords.size());
  int64_t linear = 0;
  for (size_t i = 0; i < sizes_.size(); ++i) {
    XS_CHECK(coords[i] >= 0 && coords[i] < sizes_[i], "mesh coord out of range");
    linear = linear * sizes_[i] + coords[i];
  }
  return device_ids_[linear];
}

std::vector<int64_t> Mesh::CoordsOf(int64_t device) const {
  auto it = std::find(device_ids_.begin(), device_ids_.end(), device);
  XS_CHECK(it != device_ids_.end(), "device ", device, " is not in the mesh");
  int64_t linear = it - device_ids_.begin();
  std::vector<int64_t> coords(sizes_.size());
  for (int i = static_cast<int>(sizes_.size()) - 1; i >= 0; --i) {
    coords[i] = linear % sizes_[i];
    linear /= sizes_[i];
  }
  return coords;
}

std::string Mesh::ToString() const {
  std::string out = StrCat("Mesh(", AxesText(names_, sizes_));
  bool iota = true;
  for (size_t i = 0; i < device_ids_.size(); ++i) iota = iota && device_ids_[i] == int64_t(i);
  if (!iota) StrAppend(&out, ", device_ids=[", StrJoin(device_ids_, ","), "]");
  return out + ")";
}

size_t Mesh::Hash() const {
  size_t h = HashCombine(0, names_.size());
  for (const std::string& name : names_) h = HashCombine(h, std::hash<std::string>()(name));
  for (int64_t size : sizes_) h = HashCombine(h, static_cast<size_t>(size));
  for (int64_t id : device_ids_) h = HashCombine(h, static_cast<size_t>(id));
  return h;
}

}  // namespace xs
