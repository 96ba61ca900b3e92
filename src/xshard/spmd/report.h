// What the partitioner did, for `xshard partition --report`: every collective it inserted (kind,
// per-device shape, bytes, replica groups, the instruction that caused it and why) and the
// program's own collectives it copied (marked as written in the program), warnings
// (fallbacks to full replication), and per-device memory before and after partitioning.
#ifndef XSHARD_SPMD_REPORT_H_
#define XSHARD_SPMD_REPORT_H_

#include <cstdint>
#include <optional>
#include <ostream>
#include <string_view>
#include <string>
#include <vector>

#include "xshard/core/shape.h"
#include "xshard/ir/computation.h"
#include "xshard/ir/module.h"
#include "xshard/spmd/cost_model.h"

namespace xs::spmd {

// A collective's replica groups as explicit lists, "{{0,2,4,6},{1,3,5,7}}" (the pairs text for
// permutes), built when read: the text is O(N) long, so only the groups are kept (an iota form
// without its lists). Compares equal to the text.
class ExplicitGroups {
 public:
  ExplicitGroups() = default;
  explicit ExplicitGroups(std::string text) : text_(std::move(text)) {}
  explicit ExplicitGroups(const ReplicaGroups& groups);
  std::string ToString() const;
  friend bool operator==(const ExplicitGroups& a, std::string_view b) { return a.ToString() == b; }
  friend std::ostream& operator<<(std::ostream& os, const ExplicitGroups& g);

 private:
  std::string text_;
  std::optional<ReplicaGroups> groups_;
};

// One collective of the SPMD program: inserted by the partitioner or the program's own.
struct CollectiveRecord {
  std::string kind;       // "all-gather", "all-reduce", "reduce-scatter", "all-to-all",
                          // "collective-permute"
  std::string name;       // its name in the SPMD module
  std::string computation;  // the SPMD computation holding it (names repeat across computations)
  Shape shape;            // per-device result shape
  int64_t bytes = 0;      // bytes each device receives (ring model: all-gather (g-1)/g of the
                          // result, all-reduce 2(g-1)/g, reduce-scatter / all-to-all (g-1)/g of
                          // the operand, collective-permute the whole operand)
  std::string groups;     // replica groups as printed ("[2,4]<=[4,2]T(1,0)" or "{{0,2},{1,3}}"),
                          // or permute pairs "{{0,1},{1,0}}"
  ExplicitGroups explicit_groups;  // the same groups as explicit lists (pairs for permutes)
  int64_t dimension = -1;       // gathered / scattered / all-to-all dim (-1: none)
  std::string cause;      // the global instruction being partitioned ("dot.3")
  std::string reason;     // why ("operand 1: contracting dim sharded on the other operand")
  // The program's own collective (written in the input, e.g. a shard_map psum in a manual
  // region), copied as is rather than inserted by the partitioner.
  bool written = false;
};

// Memory a computation needs on one device: the peak of the bytes alive at once when the entry
// runs in instruction order (parameters stay alive; a value dies after its last use; tuples and
// get-tuple-element alias and cost nothing), plus the largest values, as XLA's "SPMD memory usage
// before/after partition" log lists them.
struct MemoryEstimate {
  int64_t peak_bytes = 0;
  int64_t parameter_bytes = 0;
  std::vector<std::pair<int64_t, std::string>> largest;  // (bytes, instruction text), largest first
};
MemoryEstimate EstimateMemory(const Computation& computation, int top = 5);

struct PartitionReport {
  int64_t num_partitions = 1;
  std::vector<CollectiveRecord> collectives;
  std::vector<std::string> warnings;
  std::vector<std::string> notes;
  MemoryEstimate before;  // global module on one device
  MemoryEstimate after;   // SPMD module, per device
  // FLOPs per device of the dots and convolutions of the SPMD module (each instruction once; a
  // loop body is not multiplied by its trip count), and the machine the time estimate is for.
  double flops = 0;
  MachineModel machine;
  int64_t TotalCollectiveBytes() const;
  // How many of `collectives` are the program's own (CollectiveRecord::written).
  int64_t WrittenCollectives() const;
  // The fixed costs of `collectives` (MachineModel::LatencyUs of each kind), in us.
  double CollectiveLatencyUs() const;
  // MachineModel::Estimate of the collectives' bytes and fixed costs and of `flops`.
  double EstimatedSeconds() const;
};

// Makes the report describe `spmd` as it stands (after cleanup passes): drops the records of
// collectives that are no longer in it (deleted as dead or merged into an identical one), and
// recounts `flops` and the memory estimate `after`.
void DescribeFinalProgram(PartitionReport& report, const Module& spmd);
// 2 x result elements x contracted elements for a dot, 2 x result elements x kernel elements
// per output feature for a convolution, 0 for anything else.
double InstructionFlops(const Instruction& inst);

// Human-readable report:
//   SPMD partitioning: 8 partitions, 1 collective, 48B received per device
//   estimated time per device: 20.0 us (communication 20.0 us, compute 28.4 ns: 256 FLOP) ...
//   collectives:
//     %all-reduce: all-reduce f16[4,4], 48B received, groups=... caused by %dot.1: ...
//   memory per device (peak of live values): before 320 B, after 96 B
//   ...
std::string FormatReport(const PartitionReport& report);
// 1536 -> "1.50KiB", 12 -> "12B" (as XLA's memory log prints sizes).
std::string FormatBytes(int64_t bytes);

}  // namespace xs::spmd

#endif  // XSHARD_SPMD_REPORT_H_
