// The MPI transport of a Client: mpi/'s communicator, start-up and the processes' agreement on a
// run, behind runtime's CommunicatorFactory.
#include "xshard/mpi/mpi_communicator.h"
#include "xshard/mpi/mpi_process.h"
#include "xshard/platform/platform.h"

namespace xs {
namespace {

class MpiFactory final : public CommunicatorFactory {
 public:
  explicit MpiFactory(int64_t eager_bytes) : eager_bytes_(eager_bytes) {}
  std::string_view name() const override { return "mpi"; }
  bool distributed() const override { return true; }
  Status Start() override { return mpi::Initialize(); }
  int64_t process_count() const override { return mpi::ProcessCount(); }
  int64_t process_rank() const override { return mpi::ProcessRank(); }
  StatusOr<std::unique_ptr<Communicator>> Create(const CommunicatorSpec& spec) override {
    MpiCommunicatorOptions o;
    o.device_ids = spec.device_ids;
    o.devices_per_process = spec.devices_per_process;
    o.timeout = spec.timeout;
    if (eager_bytes_ >= 0) o.eager_bytes = eager_bytes_;
    XS_ASSIGN_OR_RETURN(std::unique_ptr<MpiCommunicator> comm,
                        MpiCommunicator::Create(std::move(o)));
    return std::unique_ptr<Communicator>(std::move(comm));
  }
  Status AbortReason(const Communicator& comm) const override {
    return static_cast<const MpiCommunicator&>(comm).abort_reason();
  }
  Status AgreeOnOutcome(const Status& local, std::chrono::milliseconds timeout) override {
    return mpi::AgreeOnOutcome(local, timeout);
  }
  Status ShareArrays(std::span<const int64_t> owner, std::vector<std::vector<Array>>& per_rank,
                     std::chrono::milliseconds timeout, std::optional<int64_t> only_to) override {
    return mpi::ShareArrays(std::vector<int64_t>(owner.begin(), owner.end()), per_rank, timeout, only_to);
  }

 private:
  const int64_t eager_bytes_;
};

}  // namespace

std::shared_ptr<CommunicatorFactory> MpiCommunicators(int64_t eager_bytes) {
  return std::make_shared<MpiFactory>(eager_bytes);
}

}  // namespace xs
