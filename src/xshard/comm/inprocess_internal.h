// Private to the in-process communicator: the per-rank slots, what one call publishes, and the
// Exchange view that the data-movement algorithms (inprocess_algorithms.cc) work through.
#ifndef XSHARD_COMM_INPROCESS_INTERNAL_H_
#define XSHARD_COMM_INPROCESS_INTERNAL_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "xshard/comm/chunking.h"
#include "xshard/comm/communicator.h"
#include "xshard/comm/inprocess_communicator.h"
#include "xshard/comm/wait.h"

namespace xs::inprocess {

// What the calling rank asks for (built by the public methods, consumed by Run).
struct OpSpec {
  CollectiveKind kind = CollectiveKind::kBarrier;
  const DeviceGroups* groups = nullptr;  // group ops
  const PermutePairs* pairs = nullptr;    // collective-permute
  ReductionKind reduction = ReductionKind::kSum;
  int dim0 = 0, dim1 = 0;  // gather / scatter dim; all-to-all split and concat dims
  ConstBufferView in;
  BufferView out;
  std::span<const ConstBufferView> tuple_in;
  std::span<const BufferView> tuple_out;
};

// What one rank published for one call. Written only by its owner before it publishes the call
// (seq_cst store of Slot::arrived); read by peers after they observe it.
struct Desc {
  CollectiveKind kind = CollectiveKind::kBarrier;
  int64_t channel_id = 0;
  std::string op_name;
  uint64_t participants_fp = 0;
  std::vector<int64_t> group;  // the members this rank exchanges with, in group order
  int64_t source = -1;         // collective-permute: the rank this one receives from
  int64_t target = -1;         // collective-permute: the rank this one sends to
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kDirect;
  ReductionKind reduction = ReductionKind::kSum;
  int dim0 = 0, dim1 = 0;
  DType dtype = DType::kF32;
  std::vector<int64_t> in_dims, out_dims;
  const std::byte* in = nullptr;  // the caller's input, or the staged copy when eager
  std::byte* out = nullptr;
  std::byte* scratch = nullptr;   // ring / recursive-doubling partial sums
  std::vector<const std::byte*> tuple_in;
  std::vector<std::byte*> tuple_out;
  bool eager = false;
};

// Step counter values are (call number << 20) + step within the call.
constexpr int kStepBits = 20;
inline uint64_t StepValue(uint64_t call, uint64_t step) { return (call << kStepBits) + step; }

// Calls a rank keeps descriptors for: call k uses CallSlot k % kCallDepth. A rank that starts
// call k while call k - kCallDepth is still unfinished completes that one first (every device
// starts the same calls in the same order, so its peers have started it too).
constexpr uint64_t kCallDepth = 16;

// One call's state on one rank. Its counters hold values of that call (they only grow, since the
// calls sharing a CallSlot are kCallDepth apart).
struct CallSlot {
  std::atomic<uint64_t> step{0};  // progress inside the call (StepValue)
  std::atomic<uint64_t> done{0};  // the call number once this rank's reads of peer memory ended
  // Large collective-permutes: DeliveryValue(call, state) of this rank's incoming data.
  std::atomic<uint64_t> delivery{0};
  Desc desc;
  AlignedBytes staging;
};

struct alignas(64) Slot {
  std::atomic<uint64_t> arrived{0};  // calls entered (posted)
  std::atomic<uint32_t> left{0};     // no more calls until Reset()
  alignas(64) Doorbell bell;
  alignas(64) uint64_t calls = 0;    // owner-only copy of `arrived`
  CallSlot call[kCallDepth];
  AlignedBytes scratch;
  std::vector<const std::byte*> pointers;  // owner-only scratch lists for the algorithms
  std::vector<ChunkRef> refs;
  // Owner-only: asynchronous calls that a later Post completed to reuse their CallSlot (more than
  // kCallDepth - 1 in flight); their own Finish is then a no-op.
  std::vector<uint64_t> completed_early;

  CallSlot& Of(uint64_t k) { return call[k % kCallDepth]; }
  const CallSlot& Of(uint64_t k) const { return call[k % kCallDepth]; }
};

// Which counter a wait watches: Slot::arrived, or the step / done / delivery counter of one call.
enum class Counter { kArrived, kStep, kDone, kDelivery };

// CallSlot::delivery states: not yet copied, being copied (claimed), copied.
enum class Delivery : uint64_t { kNone = 0, kClaimed = 1, kDelivered = 2 };
inline uint64_t DeliveryValue(uint64_t call, Delivery d) {
  return (call << 2) | static_cast<uint64_t>(d);
}

enum class WaitResult { kReady, kAborted, kTimeout, kPeerLeft };

struct State {
  InProcessOptions options;
  WaitPolicy policy;
  std::unique_ptr<Slot[]> slots;
  std::vector<int64_t> all_ranks;  // 0..num_ranks-1
  std::atomic<bool> aborted{false};
  std::mutex mu;
  Status abort_status;  // guarded by mu

  int64_t DeviceId(int64_t rank) const;
  Status AbortStatus();
  void Abort(const Status& reason);
  void RingAll();
  void Ring(std::span<const int64_t> ranks);
  // Waits, as `waiter`, until `counter` (of call `call` for kStep / kDone) >= value for every rank
  // in `ranks`. Only those ranks are watched, and they ring the waiter when they publish (every
  // rank rings the group of the call it publishes for), so a wait never depends on a rank outside
  // the call's group. A rank that has left counts as ready when `left_is_ready`, else ends the
  // wait with kPeerLeft. `culprit` gets the rank that was not ready at a timeout or departure.
  WaitResult Wait(int64_t waiter, std::span<const int64_t> ranks, Counter counter, uint64_t call,
                  uint64_t value, bool left_is_ready, int64_t* culprit);
};

// One rank's view of one call: its group, everyone's descriptors, and step-wise waits.
class Exchange {
 public:
  Exchange(State& state, int64_t rank, uint64_t call)
      : state_(state), rank_(rank), call_(call) {}

  int64_t rank() const { return rank_; }
  uint64_t call() const { return call_; }
  const Desc& mine() const { return DescOf(rank_); }
  const Desc& DescOf(int64_t rank) const { return state_.slots[rank].Of(call_).desc; }
  // Group members by position (mine().group).
  int64_t n() const { return static_cast<int64_t>(mine().group.size()); }
  int64_t me() const { return me_; }
  void set_me(int64_t me) { me_ = me; }
  const Desc& member(int64_t j) const { return DescOf(mine().group[j]); }

  // Waits until group member j has published step >= `step` of this call.
  Status WaitStep(int64_t j, uint64_t step);
  // Publishes this rank's progress and rings the group.
  void PublishStep(uint64_t step);
  std::vector<const std::byte*>& pointers() { return state_.slots[rank_].pointers; }
  std::vector<ChunkRef>& refs() { return state_.slots[rank_].refs; }

 private:
  State& state_;
  int64_t rank_;
  uint64_t call_;
  int64_t me_ = 0;
};

// "psum (all-reduce, channel 3)" or "all-gather (channel 0)".
std::string Label(const Desc& d);
// "psum (all-reduce, channel 3) of f32[8] with sum over group {0,1,2,3}", for mismatch errors.
std::string Describe(const State& s, const Desc& d);
// Whether two ranks made the same call (op, channel, groups, dtype, dims, algorithm, staging).
bool SameCall(const Desc& a, const Desc& b);
// Checks the calling rank's own arguments (shapes, dtypes, reducer, groups' size) before it
// publishes anything; `group` is its group.
Status CheckLocal(const OpSpec& spec, std::string_view op, int64_t num_ranks, int64_t rank,
                  std::span<const int64_t> group);
// Fills `d` from the call, including the members this rank waits for and reads from.
void Fill(const CollectiveCall& call, const OpSpec& spec, CollectiveAlgorithm algorithm,
          int64_t num_ranks, Desc& d);

// Large (not staged) collective-permutes move their data as soon as both ends have posted, on the
// thread of whichever arrives last, so that an asynchronous permute progresses while the other
// device computes. PostPermute runs right after this rank published call k; CompletePermute
// replaces the algorithm and the final wait of Complete (after the agreement checks).
bool UsesDelivery(const Desc& d);
void PostPermute(State& s, int64_t rank, uint64_t k);
Status CompletePermute(State& s, int64_t rank, uint64_t k);

// Bytes of one input array of the call (of each operand for a tuple all-to-all).
int64_t InBytes(const Desc& d);

// The data movement of one call, once every participant has arrived and agreed.
Status RunAlgorithm(Exchange& x);

}  // namespace xs::inprocess

#endif  // XSHARD_COMM_INPROCESS_INTERNAL_H_
