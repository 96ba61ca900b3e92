// Module: the unit of compilation. Owns its Computations (one is the entry) and the module
// config from the `HloModule name, k=v, ...` header line, e.g.
//   HloModule jit_f, is_scheduled=true, entry_computation_layout={(f32[8]{0})->f32[8]{0}},
//     num_partitions=8
#ifndef XSHARD_IR_MODULE_H_
#define XSHARD_IR_MODULE_H_

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "xshard/ir/computation.h"

namespace xs {

// Header attributes. Unset / default values are not printed.
struct ModuleConfig {
  int64_t num_partitions = 1;
  int64_t replica_count = 1;
  bool is_scheduled = false;
  // Text between the braces of entry_computation_layout={...}, e.g. "(f32[8]{0})->f32[8]{0}",
  // kept verbatim (xshard computes row-major and ignores it).
  std::optional<std::string> entry_computation_layout;
  // allow_spmd_sharding_propagation_to_parameters={true,false} / _to_output={true}.
  std::vector<bool> allow_spmd_sharding_propagation_to_parameters;
  std::vector<bool> allow_spmd_sharding_propagation_to_output;
  // Every other header attribute (input_output_alias, buffer_donor, frontend_attributes, ...),
  // (name, value text) verbatim, in order.
  std::vector<std::pair<std::string, std::string>> other;
  // The FileNames / FunctionNames / FileLocations / StackFrames sections that may follow the
  // header (stack frame index for metadata's stack_frame_id), verbatim.
  std::string stack_frame_sections;
  friend bool operator==(const ModuleConfig&, const ModuleConfig&) = default;
};

class Module {
 public:
  explicit Module(std::string name) : name_(std::move(name)) {}
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  const ModuleConfig& config() const { return config_; }
  ModuleConfig& mutable_config() { return config_; }

  // Takes ownership; a name already used by another computation gets ".N" appended. With
  // `is_entry` the computation becomes the entry.
  Computation* AddComputation(std::unique_ptr<Computation> computation, bool is_entry = false);
  // Removes a computation nothing calls (error names the caller otherwise).
  Status RemoveComputation(Computation* computation);
  Computation* entry() const { return entry_; }
  void set_entry(Computation* entry) { entry_ = entry; }

  // Computations in the order they were added (text order for parsed modules).
  std::vector<Computation*> computations() const;
  int computation_count() const { return static_cast<int>(computations_.size()); }
  // The computation with that name, or nullptr.
  Computation* GetComputation(std::string_view name) const;
  // Callees before callers; computations not reachable from the entry are included (before the
  // entry), the entry is last.
  std::vector<Computation*> MakeComputationPostOrder() const;

  // Deep copy: same names, attributes, shardings and structure; pointers remapped.
  std::unique_ptr<Module> Clone() const;

 private:
  std::string name_;
  ModuleConfig config_;
  std::vector<std::unique_ptr<Computation>> computations_;
  Computation* entry_ = nullptr;
  // Names in use (a computation's name is fixed once it is in a module) and, per base name, the
  // last ".N" suffix AddComputation gave: a partitioner adding a copy per call site stays linear.
  std::unordered_map<std::string, Computation*> by_name_;
  std::unordered_map<std::string, int64_t> last_suffix_;
};

}  // namespace xs

#endif  // XSHARD_IR_MODULE_H_
