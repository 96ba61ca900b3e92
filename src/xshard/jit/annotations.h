// What a module's sharding annotations say before it is compiled: the device count they name, and
// one sharding rewritten in the explicit-list (V1) or iota (V2) tile assignment form. Used by the
// CLI and the Python module alike.
#ifndef XSHARD_JIT_ANNOTATIONS_H_
#define XSHARD_JIT_ANNOTATIONS_H_

#include <cstdint>

#include "xshard/ir/module.h"
#include "xshard/sharding/hlo_sharding.h"

namespace xs {

// The same sharding with every tile assignment (tuple elements included) in explicit-list (V1,
// iota=false) or iota (V2, iota=true, where one exists) form; metadata is kept. Replicated,
// maximal and manual shardings come back unchanged.
HloSharding Retile(const HloSharding& sharding, bool iota);

// The device count a module's annotations name: the largest tile assignment, or the largest
// maximal device + 1, or the device count of a mesh in its xla.sdy.meshes attribute (Shardy
// form), whichever is largest; 1 without annotations.
int64_t AnnotatedDevices(const Module& module);

}  // namespace xs

#endif  // XSHARD_JIT_ANNOTATIONS_H_
