// Large collective-permutes without a rendezvous at the end: the data of each source -> target
// edge is copied once, by whichever of the two posts its call last (at its Post, i.e. at the
// -start of an asynchronous permute), or at Complete by either end if neither could yet. The
// edge is claimed in the target's CallSlot::delivery (none -> claimed -> delivered), and the
// copier rings both ends. A rank's Complete waits only for its own incoming edge and its outgoing
// one; it never waits for a device to reach its -done.
#include <cstring>
#include <utility>
#include <vector>

#include "xshard/comm/inprocess_internal.h"

namespace xs::inprocess {
namespace {

// Copies source s's input into target t's output for call k unless someone already claimed the
// edge or an end has not posted the same call yet. Returns whether the edge is (now) claimed.
bool TryDeliver(State& st, int64_t s, int64_t t, uint64_t k) {
  Slot& src = st.slots[s];
  Slot& dst = st.slots[t];
  if (src.arrived.load(std::memory_order_seq_cst) < k ||
      dst.arrived.load(std::memory_order_seq_cst) < k) {
    return false;
  }
  const Desc& from = src.Of(k).desc;
  const Desc& to = dst.Of(k).desc;
  // A disagreement is reported by Complete's checks; nothing is copied between unequal calls.
  if (!SameCall(from, to) || to.source != s) return false;
  uint64_t expected = DeliveryValue(k, Delivery::kNone);
  if (!dst.Of(k).delivery.compare_exchange_strong(expected, DeliveryValue(k, Delivery::kClaimed),
                                                  std::memory_order_seq_cst)) {
    return true;
  }
  CopyBytes(to.out, from.in, InBytes(to));
  dst.Of(k).delivery.store(DeliveryValue(k, Delivery::kDelivered), std::memory_order_seq_cst);
  src.bell.Ring();
  dst.bell.Ring();
  return true;
}

}  // namespace

bool UsesDelivery(const Desc& d) {
  return d.kind == CollectiveKind::kCollectivePermute && !d.eager;
}

// The edges of this rank: (source -> rank) and (rank -> target), once each.
std::vector<std::pair<int64_t, int64_t>> Edges(const Desc& d, int64_t rank) {
  std::vector<std::pair<int64_t, int64_t>> edges;
  if (d.source >= 0) edges.push_back({d.source, rank});
  if (d.target >= 0 && !(d.target == rank && d.source == rank)) edges.push_back({rank, d.target});
  return edges;
}

void PostPermute(State& st, int64_t rank, uint64_t k) {
  Slot& me = st.slots[rank];
  const Desc& d = me.Of(k).desc;
  if (d.source < 0) {
    // Nobody sends here: zeros, delivered at once.
    std::memset(d.out, 0, static_cast<size_t>(InBytes(d)));
    me.Of(k).delivery.store(DeliveryValue(k, Delivery::kDelivered), std::memory_order_seq_cst);
  }
  for (auto [s, t] : Edges(d, rank)) TryDeliver(st, s, t, k);
}

Status CompletePermute(State& st, int64_t rank, uint64_t k) {
  Slot& me = st.slots[rank];
  const Desc& d = me.Of(k).desc;
  for (auto [s, t] : Edges(d, rank)) {
    // Everyone has arrived and agreed (Complete checked): claim the edge unless already claimed.
    TryDeliver(st, s, t, k);
    int64_t culprit = t;
    const std::span<const int64_t> one(&t, 1);
    const WaitResult r = st.Wait(rank, one, Counter::kDelivery, k,
                                 DeliveryValue(k, Delivery::kDelivered), false, &culprit);
    if (r == WaitResult::kAborted) return st.AbortStatus();
    if (r != WaitResult::kReady) {
      Status e = DeadlineExceeded(Label(d), ": timed out after ", st.options.timeout.count(),
                                  " ms on device ", st.DeviceId(rank),
                                  " waiting for the copy from device ", st.DeviceId(s),
                                  " to device ", st.DeviceId(t));
      st.Abort(e);
      return st.AbortStatus();
    }
  }
  me.Of(k).done.store(k, std::memory_order_seq_cst);
  st.Ring(d.group);
  return OkStatus();
}

}  // namespace xs::inprocess
