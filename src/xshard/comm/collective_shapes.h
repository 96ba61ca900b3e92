// Shape rules of the collectives (XLA's): the output dims each one produces from its input dims
// and group size, with errors that name the op, the dims, the rule and the fix. Shared by the
// communicators (which check the buffers they are handed) and the array-level collectives (which
// allocate outputs).
#ifndef XSHARD_COMM_COLLECTIVE_SHAPES_H_
#define XSHARD_COMM_COLLECTIVE_SHAPES_H_

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/comm/communicator.h"

namespace xs {

// all-gather: dims with dims[dim] * group_size. f32[2,3] gathered along 1 by 4 -> [2,12].
StatusOr<std::vector<int64_t>> AllGatherDims(std::string_view op, std::span<const int64_t> dims,
                                             int dim, int64_t group_size);
// reduce-scatter: dims with dims[dim] / group_size; dims[dim] must divide evenly.
StatusOr<std::vector<int64_t>> ReduceScatterDims(std::string_view op,
                                                 std::span<const int64_t> dims, int dim,
                                                 int64_t group_size);
// all-to-all: dims[split_dim] / group_size (must divide evenly), then dims[concat_dim] * size.
StatusOr<std::vector<int64_t>> AllToAllDims(std::string_view op, std::span<const int64_t> dims,
                                            int split_dim, int concat_dim, int64_t group_size);

// OK when `out` has `in`'s dtype and dims `expected`, and the two buffers do not overlap.
Status CheckOutput(std::string_view op, ConstBufferView in, BufferView out,
                   std::span<const int64_t> expected);

}  // namespace xs

#endif  // XSHARD_COMM_COLLECTIVE_SHAPES_H_
