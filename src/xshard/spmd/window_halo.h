// Convolution and reduce-window along sharded windowed (spatial) dims: each partition computes
// its own tile of the result from its shard of the input plus the rows its windows reach into
// its neighbours' shards (halos, moved by collective-permutes; XLA's ExchangeHalo), instead of
// gathering the dim. The rule handler (handlers_rule.cc) asks here which windowed factors may
// stay sharded, what the halos cost, and for the windowed local inputs.
#ifndef XSHARD_SPMD_WINDOW_HALO_H_
#define XSHARD_SPMD_WINDOW_HALO_H_

#include <optional>

#include "xshard/spmd/halo.h"
#include "xshard/spmd/rule_plan.h"

namespace xs::spmd::internal {

// Floor and ceiling of a / b for b != 0, a of either sign (window positions before a tile's
// start are negative).
inline int64_t FloorDiv(int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }
inline int64_t CeilDiv(int64_t a, int64_t b) { return -FloorDiv(-a, b); }

// A 1-wide window that moves nothing: stride 1, no padding, dilation or reversal.
inline bool TrivialWindowDim(const WindowDim& w) {
  return w.size == 1 && w.stride == 1 && w.pad_low == 0 && w.pad_high == 0 && w.lhs_dilation == 1 &&
         w.rhs_dilation == 1 && !w.window_reversal;
}

// The window of dim `dim` of operand `operand` of a convolution (operand 0, its input) or
// reduce-window (its inputs) and the result dim it produces; nullopt for every other op, operand
// or dim, and for 1-wide windows (nothing to exchange).
struct WindowedDim {
  WindowDim window;
  int result_dim = 0;
  int index = 0;  // in the op's window
};
std::optional<WindowedDim> WindowedDimOf(const Instruction& inst, int operand, int dim);

// The input window each of `tiles` result tiles needs along an operand dim of `in_size` elements
// that makes a result dim of `out_size`: result tile k (ceil(out_size / tiles) positions) reads
// input elements [lo[k], lo[k] + size). nullopt when halos cannot do it: window reversal, or lhs
// dilation whose tiles start their first windows at distances before their first elements that
// differ by other than multiples of the stride (where they differ by multiples, DimWindow::shift
// lines them up and the result is cut afterwards: AddShifted). Windows reaching more than two tiles away are fetched by
// whole tiles (FarWindow) and costed so (AddHaloCost): the plan then weighs them against gathering.
std::optional<DimWindow> ResultTileWindows(const WindowDim& w, int dim, int64_t in_size,
                                           int64_t out_size, int64_t tiles);

// True when factor f of op may stay sharded over `tiles` tiles by halo exchange: every dim that
// holds it is a windowed dim of an input (or its result dim) holding that factor alone, and the
// windows fit (ResultTileWindows).
bool HaloFactorFits(const Op& op, int f, int64_t tiles);

// The halo exchange the plan implies, added to its bytes received per device, collectives and
// their fixed costs.
void AddHaloCost(const Op& op, const Plan& plan, ModuleState& state, int64_t* bytes, int64_t* collectives,
                 double* latency_us);

// The local input operand `operand` of `inst` (value `v`, already in the plan's sharding) with
// each sharded windowed dim replaced by its result tile's window; positions outside the input
// read `fill` (a local scalar; null: zero), the convolution's or reduce-window's padding value.
StatusOr<Instruction*> ExchangeHalos(const Instruction& inst, int operand, const PartitionedValue& v,
                                     Instruction* fill);

// True when no window of `w` (over a dim of `in_size` in shards of `len`) reaches more than
// `max_shift` tiles from its own.
bool WindowsReach(const DimWindow& w, int64_t in_size, int64_t len, int64_t max_shift);

// v's local buffer with dim w.dim replaced by each tile's window (HaloWindow; FarWindow for
// windows more than two tiles away; a static slice when every window lies in its own tile from
// its start), positions outside the dim reading `fill` (null: zero).
StatusOr<Instruction*> MaskedWindow(const PartitionedValue& v, const DimWindow& w, Instruction* fill,
                                    std::string_view why);

// A convolution whose kernel spatial dims are sharded like its input's (and nothing else is
// sharded; a weight gradient): each partition convolves its input window (a halo exchange) with
// its kernel shard into a partial result, summed by the result's reshard; taken only when that
// moves less than the rule handler's plan (RulePlanCost with `config`). conv_window_reduction.cc.
StatusOr<bool> TryWindowReductionConv(const Instruction& inst, Context& ctx, const RuleConfig& config);

// Localize's part for convolution and reduce-window: the window of each dim whose local input
// or result is smaller than the global one starts at the local input's first element (no low
// padding) and ends where the local result needs it (high padding, negative for inputs longer
// than that).
void LocalizeWindows(Instruction& local, const Instruction& global);

// The windowed dims of `inst` (operand 0 `input` in `sharding` over n devices) whose result tiles
// start their windows at different distances before their first input element (DimWindow::shift):
// the local result holds win.extra more elements along result_dim.
struct ShiftedResult {
  int window = 0;      // index in the op's window
  int result_dim = 0;  // the result dim it makes
  DimWindow win;
};
std::vector<ShiftedResult> ShiftedResults(const Instruction& inst, const Shape& input, const HloSharding& sharding,
                                          int64_t n);

// Adds `local` (localized, with `shifts`' extra result elements) and, for shifted dims, sets the
// window's low padding to the common local_pad_low (high padding to fit) and cuts each tile's own
// result out at its shift: the value in `result_sharding`. Without shifts: AddInstruction.
StatusOr<Instruction*> AddShifted(std::unique_ptr<Instruction> local, const std::vector<ShiftedResult>& shifts,
                                  const HloSharding& result_sharding, const Shape& global_result, Emitter& em);

}  // namespace xs::spmd::internal

#endif  // XSHARD_SPMD_WINDOW_HALO_H_
