// Mesh: an N-D grid of devices with named axes, e.g. Mesh(a=4, b=2) over devices 0..7 row-major:
//   a\b  0  1
//   0  [ 0, 1]
//   1  [ 2, 3]
//   2  [ 4, 5]
//   3  [ 6, 7]
#ifndef XSHARD_SHARDING_MESH_H_
#define XSHARD_SHARDING_MESH_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <span>
#include "xshard/base/status.h"

namespace xs {

class Mesh {
 public:
  // Validates: at least one axis (a 0-axis mesh of one device is allowed only with no names),
  // non-empty unique names, sizes >= 1, `device_ids` a permutation of 0..N-1 where N is the product
  // of sizes (empty `device_ids` means 0..N-1 row-major). Errors name the offending axis or id.
  static StatusOr<Mesh> Create(std::vector<std::string> axis_names, std::vector<int64_t> axis_sizes,
                               std::vector<int64_t> device_ids = {});
  // Parses the CLI syntax "a=4,b=2" with an optional device order "0,2,4,6,1,3,5,7".
  static StatusOr<Mesh> Parse(std::string_view axes, std::string_view device_order = "");

  const std::vector<std::string>& axis_names() const { return names_; }
  const std::vector<int64_t>& axis_sizes() const { return sizes_; }
  int num_axes() const { return static_cast<int>(names_.size()); }
  int64_t num_devices() const { return static_cast<int64_t>(device_ids_.size()); }
  // Device ids in row-major mesh order.
  const std::vector<int64_t>& device_ids() const { return device_ids_; }

  // Index of axis `name`; error lists the mesh's axes.
  StatusOr<int> AxisIndex(std::string_view name) const;
  bool HasAxis(std::string_view name) const;
  int64_t AxisSize(int axis) const { return sizes_[axis]; }
  // Device at mesh coordinates (one per axis).
  int64_t DeviceAt(const std::vector<int64_t>& coords) const;
  // Mesh coordinates of `device` (XS_CHECK that it is in the mesh).
  std::vector<int64_t> CoordsOf(int64_t device) const;

  // "Mesh('a': 4, 'b': 2)" as JAX prints it; device order appended when not 0..N-1:
  // "Mesh('a': 4, 'b': 2, device_ids=[0,2,4,6,1,3,5,7])".
  std::string ToString() const;
  friend bool operator==(const Mesh&, const Mesh&) = default;
  // Hash consistent with ==: equal meshes (names, sizes, device order) hash equal.
  size_t Hash() const;

 private:
  std::vector<std::string> names_;
  std::vector<int64_t> sizes_;
  std::vector<int64_t> device_ids_;
};

}  // namespace xs

template <>
struct std::hash<xs::Mesh> {
  size_t operator()(const xs::Mesh& m) const { return m.Hash(); }
};

#endif  // XSHARD_SHARDING_MESH_H_
