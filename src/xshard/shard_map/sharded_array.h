// ShardedArray: a global array split over the devices of a mesh (jax.Array): its global shape, its
// NamedSharding, and one device Buffer per mesh device holding that device's box.
#ifndef XSHARD_SHARD_MAP_SHARDED_ARRAY_H_
#define XSHARD_SHARD_MAP_SHARDED_ARRAY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/core/array.h"
#include "xshard/runtime/buffer.h"
#include "xshard/runtime/client.h"
#include "xshard/sharding/named_sharding.h"

namespace xs {

class ShardedArray {
 public:
  // Splits `array` like jax.device_put: the mesh's device d (a client device; the mesh may not
  // name more devices than the client has) gets a buffer with its box, ceil-division rule, short
  // or empty trailing shards. Errors name the spec, the shape and the mesh.
  static StatusOr<ShardedArray> Create(Client& client, const Array& array, NamedSharding sharding);
  // Adopts per-device shards (shards[d] for mesh device d) of a global array of `dims`; each must
  // have its box's dims and the array's dtype.
  static StatusOr<ShardedArray> FromShards(DType dtype, std::vector<int64_t> dims,
                                           NamedSharding sharding, std::vector<Buffer> shards);

  const Shape& shape() const { return shape_; }
  DType dtype() const { return shape_.dtype(); }
  const std::vector<int64_t>& dims() const { return shape_.dims(); }
  const NamedSharding& sharding() const { return sharding_; }
  int64_t num_shards() const { return static_cast<int64_t>(shards_.size()); }
  // The buffer of mesh device d (XS_CHECK in range).
  const Buffer& shard(int64_t device) const { return shards_[device]; }

  // The global array (jax.device_get). Replicated copies must agree bit for bit; an error names
  // the devices and the first differing element otherwise.
  StatusOr<Array> ToArray() const;

  // "f32[8,4] sharded as NamedSharding(mesh=Mesh('x': 4), spec=P('x'))".
  std::string ToString() const;

 private:
  ShardedArray(Shape shape, NamedSharding sharding, std::vector<Buffer> shards)
      : shape_(std::move(shape)), sharding_(std::move(sharding)), shards_(std::move(shards)) {}
  Shape shape_;
  NamedSharding sharding_;
  std::vector<Buffer> shards_;
};

}  // namespace xs

#endif  // XSHARD_SHARD_MAP_SHARDED_ARRAY_H_
