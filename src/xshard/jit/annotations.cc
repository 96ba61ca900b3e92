// Retile and AnnotatedDevices: sharding annotations read before compiling.
#include "xshard/jit/annotations.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "xshard/spmd/shardy_import.h"

namespace xs {
namespace {

int64_t DevicesOf(const HloSharding& s) {
  int64_t n = 1;
  if (s.IsTuple()) {
    for (const HloSharding& e : s.tuple_elements()) n = std::max(n, DevicesOf(e));
  } else if (s.IsTiled()) {
    n = s.tile_assignment().num_devices();
  } else if (s.IsMaximal()) {
    n = s.device() + 1;
  }
  return n;
}

}  // namespace

HloSharding Retile(const HloSharding& s, bool iota) {
  if (s.IsTuple()) {
    std::vector<HloSharding> elements;
    for (const HloSharding& e : s.tuple_elements()) elements.push_back(Retile(e, iota));
    return HloSharding::Tuple(std::move(elements)).WithMetadata(s.metadata());
  }
  if (!s.IsTiled()) return s;
  TileAssignment tiles = iota ? s.tile_assignment().ToIota() : s.tile_assignment().ToV1();
  HloSharding r = s.subgroup_types().empty()
                      ? HloSharding::Tile(std::move(tiles), s.ReplicateOnLastTileDim())
                      : HloSharding::Subgroup(std::move(tiles), s.subgroup_types());
  return r.WithMetadata(s.metadata());
}

int64_t AnnotatedDevices(const Module& m) {
  int64_t n = 1;
  for (const Computation* c : m.computations()) {
    for (const Instruction* inst : c->instructions()) {
      if (inst->sharding()) n = std::max(n, DevicesOf(*inst->sharding()));
    }
  }
  return std::max(n, ShardyMeshDevices(m));
}

}  // namespace xs
