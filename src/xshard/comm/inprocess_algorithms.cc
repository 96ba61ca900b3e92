// Data movement of the in-process collectives, run once every participant has arrived and agreed
// (see inprocess_communicator.cc). Direct algorithms copy each byte once, straight from the peer
// that has it; ring and recursive-doubling ones move pieces in steps, waiting only for the one
// neighbour or partner they read from (its step counter), the way they would over a network.
#include <cstring>
#include <vector>

#include "xshard/comm/inprocess_internal.h"
#include "xshard/comm/reduction.h"

namespace xs::inprocess {
namespace {

int64_t Product(std::span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

bool IsPowerOfTwo(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

// ---- direct -------------------------------------------------------------------------------

Status DirectAllGather(Exchange& x) {
  const Desc& d = x.mine();
  const int64_t n = x.n();
  const Chunking ch = Chunking::AlongDim(d.out_dims, d.dim0, n, DTypeSize(d.dtype));
  // Start with the next member so that the ranks do not all read the same peer at once.
  for (int64_t t = 0; t < n; ++t) {
    const int64_t j = (x.me() + 1 + t) % n;
    CopyChunk(ch, j, {d.out, false}, {x.member(j).in, true});
  }
  return OkStatus();
}

Status DirectAllReduce(Exchange& x) {
  const Desc& d = x.mine();
  const int64_t n = x.n();
  const int64_t es = DTypeSize(d.dtype);
  const int64_t count = Product(d.in_dims);
  auto& ptrs = x.pointers();
  ptrs.resize(n);
  if (d.eager) {
    // Staged inputs: every rank reduces the whole (small) array itself, in group order.
    for (int64_t j = 0; j < n; ++j) ptrs[j] = x.member(j).in;
    ReduceMany(d.reduction, d.dtype, d.out, ptrs, count);
    return OkStatus();
  }
  // Each rank reduces its 1/n of the elements from every input and writes the result into every
  // member's output, a tile at a time so the tile is still in cache when it is copied out.
  const Chunking ch = Chunking::Flat(count, n, es);
  const int64_t start = ch.Start(x.me()), len = ch.Len(x.me());
  const int64_t tile = std::max<int64_t>(es, (64 * 1024) / es * es);
  // Outputs past the L2 size are not going to be in cache when their owners read them.
  const bool stream = count * es >= 1024 * 1024;
  for (int64_t off = 0; off < len; off += tile) {
    const int64_t bytes = std::min(tile, len - off);
    for (int64_t j = 0; j < n; ++j) ptrs[j] = x.member(j).in + start + off;
    std::byte* mine = d.out + start + off;
    ReduceMany(d.reduction, d.dtype, mine, ptrs, bytes / es);
    for (int64_t t = 1; t < n; ++t) {
      const int64_t j = (x.me() + t) % n;
      std::byte* dst = x.member(j).out + start + off;
      if (stream) {
        StreamCopy(dst, mine, bytes);
      } else {
        std::memcpy(dst, mine, static_cast<size_t>(bytes));
      }
    }
  }
  return OkStatus();
}

Status DirectReduceScatter(Exchange& x) {
  const Desc& d = x.mine();
  const int64_t n = x.n();
  const Chunking ch = Chunking::AlongDim(d.in_dims, d.dim0, n, DTypeSize(d.dtype));
  auto& refs = x.refs();
  refs.clear();
  for (int64_t j = 0; j < n; ++j) refs.push_back({x.member(j).in, false});
  ReduceChunk(ch, x.me(), d.reduction, d.dtype, {d.out, true}, refs, x.pointers());
  return OkStatus();
}

Status DirectAllToAll(Exchange& x) {
  const Desc& d = x.mine();
  const int64_t n = x.n();
  if (!d.tuple_in.empty()) {
    const int64_t bytes = InBytes(d);
    for (int64_t j = 0; j < n; ++j) {
      CopyBytes(d.tuple_out[j], x.member(j).tuple_in[x.me()], bytes);
    }
    return OkStatus();
  }
  const size_t rank = d.in_dims.size();
  std::vector<int64_t> box(d.in_dims), src_start(rank, 0), dst_start(rank, 0);
  box[d.dim0] /= n;
  src_start[d.dim0] = x.me() * box[d.dim0];
  for (int64_t j = 0; j < n; ++j) {
    dst_start[d.dim1] = j * box[d.dim1];
    CopyBox(x.member(j).in, d.in_dims, src_start, d.out, d.out_dims, dst_start, box,
            DTypeSize(d.dtype));
  }
  return OkStatus();
}

Status DirectPermute(Exchange& x) {
  const Desc& d = x.mine();
  const int64_t bytes = InBytes(d);
  if (d.source < 0) {
    std::memset(d.out, 0, static_cast<size_t>(bytes));
  } else {
    CopyBytes(d.out, x.DescOf(d.source).in, bytes);
  }
  return OkStatus();
}

Status DirectBroadcast(Exchange& x) {
  const Desc& d = x.mine();
  const int64_t bytes = InBytes(d);
  if (x.me() < 0) {
    std::memset(d.out, 0, static_cast<size_t>(bytes));
  } else {
    CopyBytes(d.out, x.member(0).in, bytes);
  }
  return OkStatus();
}

// ---- ring -----------------------------------------------------------------------------------

// Pieces travel rightwards: at step s member i copies piece (i-1-s) from its left neighbour's
// output, which that neighbour obtained one step earlier. Expects this member's own piece in its
// output and step `base` published.
Status RingGatherPhase(Exchange& x, const Chunking& ch, uint64_t base) {
  const Desc& d = x.mine();
  const int64_t n = x.n(), i = x.me(), left = (i + n - 1) % n;
  for (int64_t s = 0; s + 1 < n; ++s) {
    const int64_t c = (i + 2 * n - 1 - s) % n;
    XS_RETURN_IF_ERROR(x.WaitStep(left, base + s));
    CopyChunk(ch, c, {d.out, false}, {x.member(left).out, false});
    x.PublishStep(base + s + 1);
  }
  return OkStatus();
}

// Partial sums travel rightwards: at step s member i adds its own input to the left neighbour's
// partial of piece (i-2-s), so after n-1 steps it holds the full reduction of piece i, written to
// `final_dst`. Publishes steps base+1 .. base+n-1.
Status RingReducePhase(Exchange& x, const Chunking& ch, MutableChunkRef final_dst,
                       uint64_t base) {
  const Desc& d = x.mine();
  const int64_t n = x.n(), i = x.me(), left = (i + n - 1) % n;
  if (n == 1) {
    CopyChunk(ch, 0, final_dst, {d.in, false});
    return OkStatus();
  }
  for (int64_t s = 0; s + 1 < n; ++s) {
    const int64_t c = (i + 2 * n - 2 - s) % n;
    if (s > 0) XS_RETURN_IF_ERROR(x.WaitStep(left, base + s));
    const Desc& l = x.member(left);
    const ChunkRef from_left{s == 0 ? l.in : l.scratch, false};
    const MutableChunkRef dst = s + 2 == n ? final_dst : MutableChunkRef{d.scratch, false};
    CombineChunk(ch, c, d.reduction, d.dtype, dst, from_left, {d.in, false});
    x.PublishStep(base + s + 1);
  }
  return OkStatus();
}

// ---- recursive doubling / halving -------------------------------------------------------------

// At step t member i swaps with partner i ^ 2^t and copies the aligned block of 2^t pieces the
// partner holds. Expects this member's own piece in its output and step `base` published.
Status DoublingGatherPhase(Exchange& x, const Chunking& ch, uint64_t base) {
  const Desc& d = x.mine();
  const int64_t n = x.n(), i = x.me();
  uint64_t t = 0;
  for (int64_t span = 1; span < n; span *= 2, ++t) {
    const int64_t partner = i ^ span;
    XS_RETURN_IF_ERROR(x.WaitStep(partner, base + t));
    const int64_t block = partner / span * span;
    for (int64_t c = block; c < block + span; ++c) {
      CopyChunk(ch, c, {d.out, false}, {x.member(partner).out, false});
    }
    x.PublishStep(base + t + 1);
  }
  return OkStatus();
}

// Recursive halving: the live range of pieces halves each step; member i keeps the half holding
// piece i and adds the partner's partial of it. Publishes steps base+1 .. base+log2(n).
Status HalvingReducePhase(Exchange& x, const Chunking& ch, MutableChunkRef final_dst,
                          uint64_t base) {
  const Desc& d = x.mine();
  const int64_t n = x.n(), i = x.me();
  if (n == 1) {
    CopyChunk(ch, 0, final_dst, {d.in, false});
    return OkStatus();
  }
  int64_t lo = 0, len = n;
  uint64_t t = 0;
  for (; len > 1; ++t) {
    const int64_t half = len / 2;
    const int64_t partner = i ^ half;
    const int64_t keep = i < lo + half ? lo : lo + half;
    if (t > 0) XS_RETURN_IF_ERROR(x.WaitStep(partner, base + t));
    const Desc& p = x.member(partner);
    const ChunkRef mine{t == 0 ? d.in : d.scratch, false};
    const ChunkRef theirs{t == 0 ? p.in : p.scratch, false};
    const MutableChunkRef dst = half == 1 ? final_dst : MutableChunkRef{d.scratch, false};
    for (int64_t c = keep; c < keep + half; ++c) {
      CombineChunk(ch, c, d.reduction, d.dtype, dst, mine, theirs);
    }
    x.PublishStep(base + t + 1);
    lo = keep;
    len = half;
  }
  return OkStatus();
}

uint64_t Log2(int64_t n) {
  uint64_t t = 0;
  while ((int64_t{1} << t) < n) ++t;
  return t;
}

// ---- per-kind entry points for the stepped algorithms -------------------------------------------

Status SteppedAllGather(Exchange& x, bool doubling) {
  const Desc& d = x.mine();
  const Chunking ch = Chunking::AlongDim(d.out_dims, d.dim0, x.n(), DTypeSize(d.dtype));
  CopyChunk(ch, x.me(), {d.out, false}, {d.in, true});
  x.PublishStep(1);
  return doubling ? DoublingGatherPhase(x, ch, 1) : RingGatherPhase(x, ch, 1);
}

Status SteppedReduceScatter(Exchange& x, bool halving) {
  const Desc& d = x.mine();
  const Chunking ch = Chunking::AlongDim(d.in_dims, d.dim0, x.n(), DTypeSize(d.dtype));
  return halving ? HalvingReducePhase(x, ch, {d.out, true}, 0)
                 : RingReducePhase(x, ch, {d.out, true}, 0);
}

Status SteppedAllReduce(Exchange& x, bool doubling) {
  const Desc& d = x.mine();
  const int64_t n = x.n();
  const Chunking ch = Chunking::Flat(Product(d.in_dims), n, DTypeSize(d.dtype));
  if (doubling) {
    XS_RETURN_IF_ERROR(HalvingReducePhase(x, ch, {d.out, false}, 0));
    return DoublingGatherPhase(x, ch, Log2(n));
  }
  XS_RETURN_IF_ERROR(RingReducePhase(x, ch, {d.out, false}, 0));
  return RingGatherPhase(x, ch, static_cast<uint64_t>(n - 1));
}

}  // namespace

int64_t InBytes(const Desc& d) { return Product(d.in_dims) * DTypeSize(d.dtype); }

Status RunAlgorithm(Exchange& x) {
  const Desc& d = x.mine();
  const bool direct = d.algorithm == CollectiveAlgorithm::kDirect;
  // Recursive doubling needs a power-of-two group; other sizes run the ring (every member sees
  // the same size, so they all choose alike).
  const bool doubling =
      d.algorithm == CollectiveAlgorithm::kRecursiveDoubling && IsPowerOfTwo(x.n());
  switch (d.kind) {
    case CollectiveKind::kAllGather:
      return direct ? DirectAllGather(x) : SteppedAllGather(x, doubling);
    case CollectiveKind::kAllReduce:
      return direct ? DirectAllReduce(x) : SteppedAllReduce(x, doubling);
    case CollectiveKind::kReduceScatter:
      return direct ? DirectReduceScatter(x) : SteppedReduceScatter(x, doubling);
    case CollectiveKind::kAllToAll:
      return DirectAllToAll(x);
    case CollectiveKind::kCollectivePermute:
      return DirectPermute(x);
    case CollectiveKind::kCollectiveBroadcast:
      return DirectBroadcast(x);
    case CollectiveKind::kBarrier:
      return OkStatus();
  }
  return Internal("unknown collective kind");
}

}  // namespace xs::inprocess
