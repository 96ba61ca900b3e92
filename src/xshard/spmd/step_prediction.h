// Predicted time of one step of an SPMD module on a hardware profile: dots at the profile's GEMM
// rate, collectives at its collective rates (bytes by the ring model of spmd/report.h), every other
// array op at its memory bandwidth, loops times their trip count.
#ifndef XSHARD_SPMD_STEP_PREDICTION_H_
#define XSHARD_SPMD_STEP_PREDICTION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "xshard/ir/instruction.h"
#include "xshard/ir/module.h"
#include "xshard/spmd/hardware_profile.h"

namespace xs::spmd {

struct StepPrediction {
  double compute_s = 0, memory_s = 0, communication_s = 0, total_s = 0;
  // The profile's fixed costs: step_overhead_us once, op_overhead_us per instruction that works.
  double overhead_s = 0;
  // (seconds, "dot.3: f32[512,512] dot") the 5 costliest instructions, loop trips included.
  std::vector<std::pair<double, std::string>> largest;
  std::vector<std::string> notes;  // e.g. "while.4: trip count unknown, body counted once"
};

// Time of one step of an SPMD module (one device's program; what `xshard partition` produces) on
// `hw` with `num_devices` devices, instructions one after another (no overlap):
// - dot / convolution: HardwareProfile::DotSeconds of InstructionFlops, at the lhs element type;
// - collectives (and their -start): CollectiveSeconds of the bytes each device receives by the
//   ring model (all-gather (g-1)/g of the result, all-reduce 2(g-1)/g of the operand,
//   reduce-scatter / all-to-all (g-1)/g of the operand, collective-permute the operand);
// - fusible elementwise chains (elementwise, broadcast, convert, select, iota, reduce, compare,
//   constant producers) as one loop: MemorySeconds of the bytes its inputs and its materialized
//   results take; any other array op reads its operands and writes its result;
// - reshape / bitcast / tuple / get-tuple-element / parameter / constant: nothing;
// - while: condition + body times the trip count where it is known (backend_config
//   known_trip_count, or a counter compared with a constant and stepped by a constant), else once
//   with a note; call / fusion: the called computation; conditional: its costliest branch.
StepPrediction PredictStep(const Module& spmd, const HardwareProfile& hw, int64_t num_devices);

// A collective's profile kind ("all-gather", ...; collective-broadcast counts as all-gather), its
// group size (the first replica group's; permutes: the devices their pairs name; no groups: all
// `num_devices`) and the bytes one device receives by the ring model. nullopt for other ops;
// -start forms count as their collective, -done as nothing.
struct CollectiveCost {
  std::string_view kind;
  int64_t group = 1;
  double bytes = 0;
};
std::optional<CollectiveCost> CollectiveCostOf(const Instruction& inst, int64_t num_devices);

// The number of times `while_inst`'s body runs when it can be read from the program, else -1.
int64_t WhileTripCount(const Instruction& while_inst);

// "predicted step: 1.23 ms (compute 1.00 ms, memory 200 us, communication 30.0 us, overhead 0 s)"
// then the largest instructions and the notes, one per line.
std::string FormatPrediction(const StepPrediction& p);

}  // namespace xs::spmd

#endif  // XSHARD_SPMD_STEP_PREDICTION_H_
