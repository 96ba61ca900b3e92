// The pieces the sharding search is made of: how one tensor is split over mesh axes (DimAxes),
// the time functions it is priced with (CostFunctions), what turning one split into another costs
// (ReshardSeconds), and the strategies of one instruction enumerated from its factor rule.
#ifndef XSHARD_AUTOSHARD_STRATEGY_H_
#define XSHARD_AUTOSHARD_STRATEGY_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "xshard/core/shape.h"
#include "xshard/ir/instruction.h"
#include "xshard/rules/sharding_rule.h"
#include "xshard/sharding/mesh.h"

namespace xs::autoshard {

// The mesh axes each dim of a tensor is split over, major to minor (indices into the mesh's axes).
// A replicated tensor has an empty list on every dim.
using DimAxes = std::vector<std::vector<int>>;

// Devices a tensor split `axes` is divided into (product of the axes' sizes).
int64_t ShardCount(const DimAxes& axes, const Mesh& mesh);
// "P('x', None, ('x', 'y'))"-style text; "P()" for replicated.
std::string SpecText(const DimAxes& axes, const Mesh& mesh);
DimAxes Replicated(int rank);

// Seconds of the operations the search prices, on the target and for the mesh's device count.
struct CostFunctions {
  // A dot of `flops` FLOPs on one device.
  std::function<double(DType, double)> dot;
  // A convolution of `flops` FLOPs on one device (empty: priced as a dot).
  std::function<double(DType, double)> conv;
  // An op that streams `bytes` (read plus written) on one device.
  std::function<double(double)> memory;
  // A collective of `kind` ("all-gather", "all-reduce", "reduce-scatter", "all-to-all",
  // "collective-permute") over groups of `group` devices in which each device receives `bytes`.
  std::function<double(std::string_view, int64_t, double)> collective;
};

// Estimated seconds to turn `shape` split `from` into split `to` (each device ends with its tile of
// `to`): axes `to` adds are local slices (a copy of the tile), axes that move to another dim are all-to-alls,
// axes `to` drops are all-gathers (priced after the slices, on the smaller tiles). Also the bytes
// received per device and the collective count, when the pointers are given.
double ReshardSeconds(const Shape& shape, const DimAxes& from, const DimAxes& to, const Mesh& mesh,
                      const CostFunctions& cost, double* bytes = nullptr, int* collectives = nullptr);

// One way to run an instruction: mesh axes for each factor of its rule, and what that implies.
struct Strategy {
  std::vector<std::vector<int>> factor_axes;  // per factor of the rule
  DimAxes result;                             // the (array) result's split
  std::vector<DimAxes> operands;              // per operand; meaningful where operand_related
  std::vector<bool> operand_related;          // false: the operand takes any split (no reshard)
  double seconds = 0;       // compute plus the op's own collectives (partial sums), per device
  double comm_seconds = 0;  // the collectives part of `seconds`
  int64_t result_bytes = 0; // per device
};

// Options of the enumeration.
struct EnumerateOptions {
  int max_axes_per_factor = 2;  // a factor split over at most this many mesh axes
};

// Every valid strategy of `inst` (array result; operands' leaf 0 for array operands) under `rule`
// on `mesh`: each mesh axis (size > 1) goes to one pass-through or reduction factor or to none,
// axes on one factor in mesh order; a factor's size must divide evenly by its axes; within a dim
// made of several factors, a minor factor is split only when the major ones are split fully.
// Deduplicated by (result, operands); the replicated strategy is always first.
std::vector<Strategy> EnumerateStrategies(const Instruction& inst, const OpShardingRule& rule,
                                          const Mesh& mesh, const CostFunctions& cost,
                                          const EnumerateOptions& options = {});

// The strategy of `inst` whose every related array operand and result is split as `axes`
// (elementwise ops following their operand), or -1.
int FindUniformStrategy(const std::vector<Strategy>& strategies, const DimAxes& axes);

// Per-device compute seconds of `inst` when its work is divided `shards` ways; a dot with `batch`
// batch elements per device is priced as that many GEMMs of one element's size.
double ComputeSeconds(const Instruction& inst, int64_t shards, const CostFunctions& cost, double batch = 1);

}  // namespace xs::autoshard

#endif  // XSHARD_AUTOSHARD_STRATEGY_H_
