// --platform cuda under mpirun: one NCCL rank per GPU across the job's processes, the NCCL id
// broadcast over MPI; start-up, the processes' agreement on a run and the sharing of results go
// through the MPI transport (mpi_transport.cc).
#include <algorithm>
#include <cstring>

#include "xshard/mpi/mpi_process.h"
#include "xshard/platform/cuda_devices.h"
#include "xshard/platform/platform.h"

#if defined(XSHARD_WITH_CUDA)
#include <cuda_runtime.h>

#include "xshard/cuda/nccl_communicator.h"
#endif

namespace xs {

StatusOr<std::vector<GpuSlot>> DistributedCudaSlots(ClientOptions& options, int gpus) {
  XS_RETURN_IF_ERROR(mpi::Initialize());
  const int64_t processes = mpi::ProcessCount();
  int64_t local = options.devices_per_process;
  if (local == 0) {
    local = options.num_devices == 0 ? 1 : std::max<int64_t>(1, options.num_devices / processes);
  }
  if (local < 1) {
    return InvalidArgument("--devices-per-process must be at least 1, got ", local);
  }
  if (local > gpus) {
    return Unimplemented("--platform cuda under mpirun: ", local, " device(s) per process but ",
                         gpus, " GPU(s) visible to each; across processes every device needs a "
                         "GPU of its own (NCCL), virtual devices of one GPU run only without "
                         "mpirun; use --devices-per-process ", gpus, " or fewer");
  }
  if (options.num_devices == 0) options.num_devices = processes * local;
  std::vector<GpuSlot> slots(options.num_devices);
  for (int64_t d = 0; d < options.num_devices; ++d) slots[d].gpu = d % local;
  return slots;
}

namespace {

class DistributedCuda final : public CommunicatorFactory {
 public:
  explicit DistributedCuda(std::shared_ptr<CudaDevices> devices)
      : devices_(std::move(devices)), mpi_(MpiCommunicators()) {}
  std::string_view name() const override { return "cuda (NCCL over mpirun)"; }
  bool distributed() const override { return true; }
  Status Start() override { return mpi_->Start(); }
  int64_t process_count() const override { return mpi_->process_count(); }
  int64_t process_rank() const override { return mpi_->process_rank(); }
  Status AbortReason(const Communicator&) const override { return OkStatus(); }
  Status AgreeOnOutcome(const Status& local, std::chrono::milliseconds timeout) override {
    return mpi_->AgreeOnOutcome(local, timeout);
  }
  Status ShareArrays(std::span<const int64_t> owner, std::vector<std::vector<Array>>& per_rank,
                     std::chrono::milliseconds timeout, std::optional<int64_t> only_to) override {
    return mpi_->ShareArrays(owner, per_rank, timeout, only_to);
  }

  StatusOr<std::unique_ptr<Communicator>> Create(const CommunicatorSpec& spec) override {
    const int64_t per = spec.devices_per_process, me = process_rank();
    std::vector<int64_t> count(process_count(), 0);
    int64_t first = -1, mine = 0;
    bool consecutive = true;
    for (size_t r = 0; r < spec.device_ids.size(); ++r) {
      const int64_t p = spec.device_ids[r] / per;
      ++count[p];
      if (p != me) continue;
      if (first < 0) first = static_cast<int64_t>(r);
      consecutive = consecutive && static_cast<int64_t>(r) == first + mine;
      ++mine;
    }
    for (int64_t p = 0; p < process_count(); ++p) {
      if (count[p] == 0 || !consecutive) {
        return Unimplemented("collectives between devices cuda:", StrJoin(spec.device_ids, ","),
                             " under mpirun: NCCL needs every process in the list, each with "
                             "consecutive ranks; run the program on all ", process_count() * per,
                             " devices in order");
      }
    }
#if defined(XSHARD_WITH_CUDA)
    cuda::NcclOptions o;
    for (size_t r = first; r < static_cast<size_t>(first + mine); ++r) {
      const int64_t d = spec.device_ids[r];
      o.gpus.push_back(devices_->GpuOf(d).ordinal);
      XS_ASSIGN_OR_RETURN(void* s, devices_->Stream(d));
      o.streams.push_back(static_cast<cudaStream_t>(s));
    }
    o.num_ranks = static_cast<int64_t>(spec.device_ids.size());
    o.first_rank = first;
    o.device_ids = spec.device_ids;
    o.timeout = spec.timeout;
    const int64_t root = spec.device_ids[0] / per;
    const std::chrono::milliseconds timeout = spec.timeout;
    o.share_id = [root, timeout](ncclUniqueId* id) -> Status {
      std::vector<Array> box;
      box.emplace_back(Shape(DType::kU8, {static_cast<int64_t>(sizeof(ncclUniqueId))}));
      std::memcpy(box[0].data(), id, sizeof(ncclUniqueId));
      XS_RETURN_IF_ERROR(mpi::BroadcastArrays(box, OkStatus(), root, timeout));
      std::memcpy(id, box[0].data(), sizeof(ncclUniqueId));
      return OkStatus();
    };
    XS_ASSIGN_OR_RETURN(std::unique_ptr<cuda::NcclCommunicator> comm,
                        cuda::NcclCommunicator::Create(std::move(o)));
    return RefuseHostBuffers(std::move(comm));
#else
    return cuda::DeviceCount().status();
#endif
  }

 private:
  std::shared_ptr<CudaDevices> devices_;
  std::shared_ptr<CommunicatorFactory> mpi_;
};

}  // namespace

std::shared_ptr<CommunicatorFactory> DistributedCudaTransport(
    std::shared_ptr<CudaDevices> devices) {
  return std::make_shared<DistributedCuda>(std::move(devices));
}

}  // namespace xs
