// Sharding propagation: from the annotated values of a module (parameters, Sharding
// custom-calls, annotated intermediates, the outputs) to every instruction, forward and backward
// through the per-op factor rules (rules/), to a fixed point, with GSPMD's priorities (see
// policy.h). User annotations are never changed (except the unspecified dims of a Sharding
// custom-call); values nothing reaches become replicated; tuples get tuple shardings; a
// propagated sharding that would split an entry parameter or output unevenly becomes replicated
// there (as XLA). Every assigned sharding records where it came from. Example:
//   ENTRY e {
//     x = f32[8,4] parameter(0), sharding={devices=[4,1,2]<=[8] last_tile_dim_replicate}
//     ROOT n = f32[8,4] negate(x)
//   }
// gives n the same sharding, "forward from %x (level 0)" (unannotated outputs are open unless
// PropagationOptions::allow_to_output is false).
#ifndef XSHARD_PROPAGATION_PROPAGATION_H_
#define XSHARD_PROPAGATION_PROPAGATION_H_

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/ir/module.h"
#include "xshard/sharding/tile_mesh.h"

namespace xs {

struct PropagationOptions {
  // May unannotated entry parameters take a sharding? Unset: the module's
  // allow_spmd_sharding_propagation_to_parameters (default false, as in XLA).
  std::optional<bool> allow_to_parameters;
  // May unannotated entry outputs take a sharding? Unset: yes, as under JAX's jit, whatever the
  // module's allow_spmd_sharding_propagation_to_output says (JAX's HLO text leaves that flag out);
  // false closes them (replicated). An annotated output is never changed.
  std::optional<bool> allow_to_output;
  // Device count; 0: the module's num_partitions when > 1, else the annotations' device count.
  int64_t num_devices = 0;
  // Highest aggressiveness level to run (0..3, see policy.h).
  int max_aggressiveness = 3;
};

// Where a value's sharding came from.
struct ShardingOrigin {
  enum class Kind {
    kUser,      // annotated in the input (or by a Sharding custom-call user, `from` set)
    kForward,   // inferred from operand `from`
    kBackward,  // inferred from user `from`
    kCallEdge,  // shared with `from` across a call, while or conditional boundary
    kDefault,   // nothing reached it: replicated
    kClosed,    // unannotated entry parameter / output closed to propagation: replicated
    kUneven,    // propagated to an entry parameter / output that it splits unevenly: replicated
    kOutput,    // the concatenate / pad producing output `from` (its only use), built as it is
  };
  Kind kind = Kind::kDefault;
  const Instruction* from = nullptr;
  int level = 0;  // aggressiveness level at which it was set
  // "user annotation", "forward from %x (level 0)", "backward from %dot.3 (level 1)", ...
  std::string ToString() const;
};

// What propagation worked out for one visited instruction, handed on to partitioning (spmd/) so
// that it does not recompute it.
struct PropagatedValue {
  std::vector<ShardingOrigin> origins;  // one per leaf
  // Each leaf's sharding seen on PropagationResult::mesh (nullopt: fully manual, or not
  // expressible on the mesh); equal to mesh.ToAxes of the leaf of the instruction's sharding.
  std::vector<std::optional<AxesSharding>> axes;
};

struct PropagationResult {
  // Every instruction propagation visited (instructions of to_apply computations such as reduce
  // bodies are not visited and keep their text).
  std::unordered_map<const Instruction*, PropagatedValue> values;
  // The common tile mesh every propagated sharding is expressed on.
  TileMesh mesh;
  int64_t num_devices = 1;
  int iterations = 0;  // passes over the module, all levels together
  // Leaf counts: user-annotated, propagated (forward / backward / call edge), defaulted.
  int64_t user_leaves = 0, propagated_leaves = 0, default_leaves = 0;
  // Things the user may want to know (an annotation not expressible on the common mesh, ...).
  std::vector<std::string> notes;

  // The record of `inst`, or nullptr when propagation did not visit it.
  const PropagatedValue* ValueOf(const Instruction& inst) const {
    auto it = values.find(&inst);
    return it == values.end() ? nullptr : &it->second;
  }
  // Origin of leaf `leaf` of `inst`, or nullptr when propagation did not visit it.
  const ShardingOrigin* OriginOf(const Instruction& inst, int leaf = 0) const;
  // One line for --explain: the origin of an array; for tuples "{origin0; origin1; ...}".
  std::string Explain(const Instruction& inst) const;
};

// Propagates shardings through `module` in place. Errors (InvalidArgument) name the instruction
// for annotations that do not fit their value (tile rank vs. value rank, device ids outside the
// device count, a tuple sharding with the wrong element count); an opcode without a rule or a
// malformed op is reported as Unimplemented / InvalidArgument naming it. Deterministic.
StatusOr<PropagationResult> PropagateShardings(Module& module,
                                               const PropagationOptions& options = {});

// The module text as `printed` (PrintHloModule's output for `module`) with "  // <- origin"
// appended to every instruction line propagation visited.
std::string AnnotateWithOrigins(const std::string& printed, const Module& module,
                                const PropagationResult& result);

}  // namespace xs

#endif  // XSHARD_PROPAGATION_PROPAGATION_H_
