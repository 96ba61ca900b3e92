// ShardedArray: device_put / device_get over the shard geometry.
#include "xshard/shard_map/sharded_array.h"

#include "xshard/sharding/geometry.h"

namespace xs {

StatusOr<ShardedArray> ShardedArray::Create(Client& client, const Array& array,
                                            NamedSharding sharding) {
  const int64_t n = sharding.mesh().num_devices();
  if (n > client.num_devices()) {
    return InvalidArgument("the mesh ", sharding.mesh().ToString(), " has ", n,
                           " devices but the client has ", client.num_devices(),
                           "; run with --devices ", n, " or set XSHARD_DEVICES=", n);
  }
  XS_ASSIGN_OR_RETURN(std::vector<Array> pieces, DevicePut(array, sharding));
  std::vector<Buffer> shards;
  shards.reserve(pieces.size());
  for (int64_t d = 0; d < n; ++d) {
    XS_ASSIGN_OR_RETURN(Buffer b, client.device(d).Adopt(std::move(pieces[d])));
    shards.push_back(std::move(b));
  }
  return ShardedArray(array.shape().WithoutLayout(), std::move(sharding), std::move(shards));
}

StatusOr<ShardedArray> ShardedArray::FromShards(DType dtype, std::vector<int64_t> dims,
                                                NamedSharding sharding,
                                                std::vector<Buffer> shards) {
  const int64_t n = sharding.mesh().num_devices();
  if (static_cast<int64_t>(shards.size()) != n) {
    return InvalidArgument("a sharded array over ", sharding.mesh().ToString(), " needs ", n,
                           " shards, got ", shards.size());
  }
  XS_ASSIGN_OR_RETURN(ShardGeometry geometry, ShardGeometry::Create(sharding, dims));
  for (int64_t d = 0; d < n; ++d) {
    const std::vector<int64_t> want = geometry.ShardShape(d);
    if (shards[d].shape().dtype() != dtype || shards[d].shape().dims() != want) {
      return InvalidArgument("shard of device ", d, " is ", shards[d].shape().ToString(false),
                             " but ", sharding.spec().ToString(), " of ", DTypeName(dtype), "[",
                             JoinDims(dims), "] gives it ", DTypeName(dtype), "[",
                             JoinDims(want), "]");
    }
  }
  return ShardedArray(Shape(dtype, std::move(dims)), std::move(sharding), std::move(shards));
}

StatusOr<Array> ShardedArray::ToArray() const {
  std::vector<Array> pieces;
  pieces.reserve(shards_.size());
  for (const Buffer& b : shards_) pieces.push_back(b.array());
  return Gather(pieces, sharding_, shape_.dims());
}

std::string ShardedArray::ToString() const {
  return StrCat(shape_.ToString(false), " sharded as ", sharding_.ToString());
}

}  // namespace xs
