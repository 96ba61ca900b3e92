// Internal helpers of TileAssignment (tile_assignment.cc) over iota forms; see IotaForm in
// tile_assignment.h for what an iota form means.
#ifndef XSHARD_SHARDING_IOTA_FORM_H_
#define XSHARD_SHARDING_IOTA_FORM_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "xshard/sharding/tile_assignment.h"

namespace xs::iota_internal {

// True when perm is a permutation of 0..n-1.
bool IsPermutation(const std::vector<int>& perm, size_t n);
// 0, 1, ..., n-1.
std::vector<int> IdentityPerm(size_t n);
// Devices of iota(product(reshape)).reshape(reshape).transpose(perm), flattened. O(N).
std::vector<int64_t> MaterializeIota(const IotaForm& iota);
// The canonical iota form of a flat device list, if it has one (e.g. 0,2,4,6,1,3,5,7 ->
// <=[4,2]T(1,0)). O(N).
std::optional<IotaForm> DetectIota(const std::vector<int64_t>& devices);
// The canonical iota form of an iota array viewed with tile `dims` and transposed by `perm`
// (result dim i = dim perm[i]), given the array's transposed reshape dims `t` (major to minor)
// and their device strides; nullopt when `dims` and `t` have no common refinement. O(rank).
std::optional<IotaForm> TransposedIota(const std::vector<int64_t>& t,
                                       const std::vector<int64_t>& t_dev_strides,
                                       const std::vector<int64_t>& dims, const std::vector<int>& perm);

}  // namespace xs::iota_internal

#endif  // XSHARD_SHARDING_IOTA_FORM_H_
