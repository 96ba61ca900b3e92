// All-reduce combining: independent small all-reduces of a computation become one variadic
// all-reduce, as XLA's AllReduceCombiner makes them, so that a program synchronizes its devices
// once for all of them instead of once each.
#ifndef XSHARD_PASSES_ALL_REDUCE_COMBINE_H_
#define XSHARD_PASSES_ALL_REDUCE_COMBINE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "xshard/ir/module.h"

namespace xs {

// The default cap on the bytes (per device) of one combined all-reduce: all-reduces this small
// cost a synchronization more than bandwidth, so one of them is cheaper than several.
inline constexpr int64_t kDefaultAllReduceCombineBytes = int64_t{1} << 20;

// One combined all-reduce: its name and computation, and the all-reduces it replaced in the order
// of its operands (its first keeps its name).
struct CombinedAllReduce {
  std::string computation;
  std::string name;
  std::vector<std::string> members;
};

// In every computation of `module`, combines synchronous one-operand all-reduces that agree on
// replica groups, use_global_device_ids, whether they have a channel_id, element type and
// reduction (a to_apply that is add, multiply, maximum, minimum, and or or of its two parameters),
// have no control edges, none of which depends on another, into one all-reduce of a tuple whose
// elements are read back with get-tuple-element. Greedy in post order: each all-reduce joins the
// first open group of its kind it does not depend on while the group stays within `max_bytes`
// (operand bytes per device; an all-reduce larger than that stays alone). Returns the groups made
// (empty: nothing changed). The result verifies.
StatusOr<std::vector<CombinedAllReduce>> CombineAllReduces(Module& module,
                                                           int64_t max_bytes = kDefaultAllReduceCombineBytes);

}  // namespace xs

#endif  // XSHARD_PASSES_ALL_REDUCE_COMBINE_H_
