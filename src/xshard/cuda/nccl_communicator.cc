// NcclCommunicator's setup: the NCCL id and communicators (non-blocking, bounded by the timeout),
// the watchdog, type and reducer mapping, and the calls that are not data movement.
#include <algorithm>

#include "xshard/base/strings.h"
#include "xshard/comm/reduction.h"
#include "xshard/cuda/cuda_status.h"
#include "xshard/cuda/nccl_communicator_internal.h"

namespace xs::cuda {

std::optional<ncclDataType_t> NcclType(DType dtype) {
  switch (dtype) {
    case DType::kPred: case DType::kU8: return ncclUint8;
    case DType::kS8: return ncclInt8;
    case DType::kS32: return ncclInt32;
    case DType::kU32: return ncclUint32;
    case DType::kS64: return ncclInt64;
    case DType::kU64: return ncclUint64;
    case DType::kF16: return ncclFloat16;
    case DType::kBF16: return ncclBfloat16;
    case DType::kF32: return ncclFloat32;
    case DType::kF64: return ncclFloat64;
    case DType::kF8E4M3FN: return ncclFloat8e4m3;
    case DType::kF8E5M2: return ncclFloat8e5m2;
    default: return std::nullopt;
  }
}

StatusOr<ncclRedOp_t> NcclReduction(ReductionKind reduction, DType dtype, std::string_view op) {
  XS_RETURN_IF_ERROR(CheckReduction(reduction, dtype, op));
  if (!NcclType(dtype).has_value()) {
    return Unimplemented(op, ": NCCL has no element type for ", DTypeName(dtype),
                         "; convert to a wider type first");
  }
  if (dtype == DType::kPred) {  // 0 / 1 values: and = min, or = max, sum = or, product = and
    const bool is_or = reduction == ReductionKind::kSum || reduction == ReductionKind::kMax ||
                       reduction == ReductionKind::kOr;
    return is_or ? ncclMax : ncclMin;
  }
  switch (reduction) {
    case ReductionKind::kSum: return ncclSum;
    case ReductionKind::kProduct: return ncclProd;
    case ReductionKind::kMin: return ncclMin;
    case ReductionKind::kMax: return ncclMax;
    default:
      return Unimplemented(op, ": NCCL has no bitwise ", ReductionKindName(reduction), " for ",
                           DTypeName(dtype), " (only pred's and / or map onto min / max)");
  }
}

void NcclCommunicator::Shared::AbortAll(const Status& reason) {
  std::vector<ncclComm_t> to_abort;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (aborted.load()) return;
    abort_status = reason.ok() ? Internal("NCCL communicator aborted without a reason") : reason;
    aborted.store(true);
    to_abort.swap(comms);
  }
  for (ncclComm_t c : to_abort) api->CommAbort(c);
}

Status NcclCommunicator::Shared::AbortStatus() {
  std::lock_guard<std::mutex> lock(mu);
  return abort_status;
}

Status NcclCommunicator::Shared::Settle(ncclComm_t comm, NcclClock::time_point deadline,
                                        const std::string& what) {
  for (;;) {
    ncclResult_t r = ncclSuccess;
    const ncclResult_t q = api->CommGetAsyncError(comm, &r);
    if (q != ncclSuccess) return NcclStatus(*api, q, what + ": ncclCommGetAsyncError");
    if (r == ncclSuccess) return OkStatus();
    if (r != ncclInProgress) {
      Status e = NcclStatus(*api, r, what);
      AbortAll(e);
      return e;
    }
    if (aborted.load()) return AbortStatus();
    if (NcclClock::now() > deadline) {
      Status e = DeadlineExceeded(what, ": not done after ", timeout.count(),
                                  " ms (a peer never joined); every NCCL communicator was aborted");
      AbortAll(e);
      return AbortStatus();
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

void NcclCommunicator::Shared::Watch() {
  std::unique_lock<std::mutex> lock(mu);
  while (!stop) {
    cv.wait_for(lock, std::chrono::milliseconds(10));
    const auto now = NcclClock::now();
    std::optional<Status> failure;
    for (auto it = pending.begin(); it != pending.end();) {
      const cudaError_t q = cudaEventQuery(it->event);
      if (q == cudaErrorNotReady && now <= it->deadline) {
        ++it;
        continue;
      }
      if (q == cudaErrorNotReady && !failure.has_value()) {
        failure = DeadlineExceeded(it->what, ": not complete after ", timeout.count(),
                                   " ms (a device never joined, or called other collectives); "
                                   "every NCCL communicator was aborted");
      } else if (q != cudaSuccess && q != cudaErrorNotReady && !failure.has_value()) {
        failure = Annotate(CudaStatus(q, "cudaEventQuery"), it->what + ": ");
      }
      if (q == cudaErrorNotReady) {
        ++it;
        continue;
      }
      cudaEventDestroy(it->event);
      it = pending.erase(it);
    }
    if (failure.has_value()) {
      lock.unlock();
      AbortAll(*failure);
      lock.lock();
      for (auto& p : pending) cudaEventDestroy(p.event);  // aborted kernels no longer complete them
      pending.clear();
    }
  }
}

StatusOr<std::byte*> NcclCommunicator::Rank::Scratch(int i, int64_t bytes) {
  if (scratch_bytes[i] < bytes) {
    if (scratch[i] != nullptr) XS_CUDA_RETURN_IF_ERROR(cudaFree(scratch[i]));
    scratch[i] = nullptr;
    scratch_bytes[i] = 0;
    XS_CUDA_RETURN_IF_ERROR(cudaMalloc(&scratch[i], bytes));
    scratch_bytes[i] = bytes;
  }
  return static_cast<std::byte*>(scratch[i]);
}

NcclCommunicator::Rank::~Rank() {
  for (void* p : scratch) {
    if (p != nullptr) cudaFree(p);
  }
  for (cudaEvent_t e : finished) {
    if (e != nullptr) cudaEventDestroy(e);
  }
  if (in_ready != nullptr) cudaEventDestroy(in_ready);
  if (comm != nullptr) cudaStreamDestroy(comm);
}

StatusOr<std::unique_ptr<NcclCommunicator>> NcclCommunicator::Create(NcclOptions options) {
  const int64_t local = static_cast<int64_t>(options.gpus.size());
  if (options.num_ranks == 0) options.num_ranks = local;
  if (local < 1 || static_cast<int64_t>(options.streams.size()) != local) {
    return InvalidArgument("an NCCL communicator needs one GPU and one compute stream per local "
                           "rank; got ", local, " GPUs and ", options.streams.size(), " streams");
  }
  if (options.first_rank < 0 || options.first_rank + local > options.num_ranks) {
    return InvalidArgument("NCCL ranks ", options.first_rank, "..", options.first_rank + local - 1,
                           " do not fit a communicator of ", options.num_ranks, " ranks");
  }
  if (options.num_ranks > local && !options.share_id) {
    return InvalidArgument("an NCCL communicator over several processes (", options.num_ranks,
                           " ranks, ", local, " here) needs share_id to pass the NCCL id around");
  }
  if (!options.device_ids.empty() && static_cast<int64_t>(options.device_ids.size()) != options.num_ranks) {
    return InvalidArgument("the NCCL communicator has ", options.num_ranks, " ranks but ",
                           options.device_ids.size(), " device ids; give one per rank");
  }
  if (options.timeout.count() <= 0) {
    return InvalidArgument("the collective timeout must be positive, got ", options.timeout.count(), " ms");
  }
  std::unique_ptr<NcclCommunicator> c(new NcclCommunicator());
  c->options_ = std::move(options);
  c->shared_ = std::make_unique<Shared>();
  Shared& sh = *c->shared_;
  XS_ASSIGN_OR_RETURN(sh.api, Nccl());
  sh.timeout = c->options_.timeout;
  ncclUniqueId id{};
  if (c->options_.first_rank == 0) XS_NCCL_RETURN_IF_ERROR(*sh.api, sh.api->GetUniqueId(&id));
  if (c->options_.share_id) XS_RETURN_IF_ERROR(c->options_.share_id(&id));
  for (int64_t i = 0; i < local; ++i) {
    auto r = std::make_unique<Rank>();
    r->rank = c->options_.first_rank + i;
    r->gpu = c->options_.gpus[i];
    r->compute = c->options_.streams[i];
    XS_CUDA_RETURN_IF_ERROR(cudaSetDevice(r->gpu));
    XS_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&r->comm, cudaStreamNonBlocking));
    XS_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&r->in_ready, cudaEventDisableTiming));
    for (cudaEvent_t& e : r->finished) {
      XS_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    }
    c->ranks_.push_back(std::move(r));
  }
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  XS_NCCL_RETURN_IF_ERROR(*sh.api, sh.api->GroupStart());
  for (auto& r : c->ranks_) {
    XS_CUDA_RETURN_IF_ERROR(cudaSetDevice(r->gpu));
    XS_NCCL_RETURN_IF_ERROR(*sh.api, sh.api->CommInitRankConfig(&r->world, static_cast<int>(c->options_.num_ranks),
                                                                id, static_cast<int>(r->rank), &config));
  }
  XS_NCCL_RETURN_IF_ERROR(*sh.api, sh.api->GroupEnd());
  const auto deadline = NcclClock::now() + c->options_.timeout;
  for (auto& r : c->ranks_) {
    sh.comms.push_back(r->world);
    XS_RETURN_IF_ERROR(sh.Settle(r->world, deadline,
                                 StrCat("creating the NCCL communicator of ", c->options_.num_ranks,
                                        " ranks (rank ", r->rank, " on GPU ", r->gpu, ")")));
  }
  sh.watchdog = std::thread([&sh] { sh.Watch(); });
  return c;
}

NcclCommunicator::~NcclCommunicator() {
  if (shared_ == nullptr) return;
  Shared& sh = *shared_;
  {
    std::lock_guard<std::mutex> lock(sh.mu);
    sh.stop = true;
  }
  sh.cv.notify_all();
  if (sh.watchdog.joinable()) sh.watchdog.join();
  for (auto& r : ranks_) {
    if (r->comm != nullptr) cudaStreamSynchronize(r->comm);
    if (r->compute != nullptr) cudaStreamSynchronize(r->compute);
  }
  for (auto& p : sh.pending) cudaEventDestroy(p.event);
  // Aborted communicators are gone already; the rest are destroyed (each once).
  for (ncclComm_t comm : sh.comms) {
    if (sh.api != nullptr && !sh.aborted.load()) sh.api->CommDestroy(comm);
  }
}

int64_t NcclCommunicator::num_ranks() const { return options_.num_ranks; }

void NcclCommunicator::Abort(const Status& reason) { shared_->AbortAll(reason); }

void NcclCommunicator::Leave(int64_t rank) {
  for (auto& r : ranks_) {
    if (r->rank == rank) r->left = true;
  }
}

// An aborted NCCL communicator cannot be revived: Reset clears call counters, and after an abort
// every call keeps failing with its reason (create a new communicator).
void NcclCommunicator::Reset() {
  for (auto& r : ranks_) {
    r->calls = 0;
    r->started.clear();
    r->left = false;
  }
}

Status NcclCommunicator::Finish(int64_t rank, uint64_t handle) {
  if (handle == 0) return OkStatus();
  const int64_t i = rank - options_.first_rank;
  if (i < 0 || i >= static_cast<int64_t>(ranks_.size())) {
    return InvalidArgument("finishing a collective: rank ", rank, " is not one of this process's ranks ",
                           options_.first_rank, "..", options_.first_rank + ranks_.size() - 1);
  }
  Rank& me = *ranks_[i];
  if (me.started.erase(handle) == 0) {
    return FailedPrecondition("device ", rank, " finishes collective #", handle,
                              ", which it did not start or already finished");
  }
  if (shared_->aborted.load()) return shared_->AbortStatus();
  XS_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(me.compute, me.finished[handle % 16], 0));
  return OkStatus();
}

Status NcclCommunicator::Barrier(const CollectiveCall& call) {
  const int64_t i = call.rank - options_.first_rank;
  if (i < 0 || i >= static_cast<int64_t>(ranks_.size())) {
    return InvalidArgument("barrier: rank ", call.rank, " is not one of this process's ranks");
  }
  Rank& me = *ranks_[i];
  XS_ASSIGN_OR_RETURN(std::byte* one, me.Scratch(1, 16));
  const int64_t dims[] = {1};
  Op op{CollectiveKind::kAllReduce, nullptr, nullptr, ReductionKind::kMax, 0, 0,
        {one, DType::kU8, dims}, {one + 8, DType::kU8, dims}, {}, {}};
  const DeviceGroups all = DeviceGroups::All(options_.num_ranks);
  op.groups = &all;
  XS_RETURN_IF_ERROR(Run(call, op));
  // Wait on the host, bounded: a rank that never arrives ends the wait through the watchdog.
  const auto deadline = NcclClock::now() + options_.timeout + std::chrono::seconds(1);
  for (;;) {
    const cudaError_t q = cudaStreamQuery(me.compute);
    if (q == cudaSuccess) return OkStatus();
    if (q != cudaErrorNotReady) return CudaStatus(q, "barrier: cudaStreamQuery");
    if (shared_->aborted.load()) return shared_->AbortStatus();
    if (NcclClock::now() > deadline) {
      return DeadlineExceeded("barrier on device ", call.rank, ": not done after ",
                              options_.timeout.count(), " ms");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

}  // namespace xs::cuda
