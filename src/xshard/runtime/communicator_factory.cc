// The in-process communicator factory and the one-process defaults of the interface.
#include "xshard/runtime/communicator_factory.h"

#include "xshard/comm/inprocess_communicator.h"

namespace xs {
namespace {

class InProcessFactory final : public CommunicatorFactory {
 public:
  std::string_view name() const override { return "in-process"; }
  bool honours_algorithm() const override { return true; }
  StatusOr<std::unique_ptr<Communicator>> Create(const CommunicatorSpec& spec) override {
    InProcessOptions o;
    o.num_ranks = static_cast<int64_t>(spec.device_ids.size());
    o.device_ids = spec.device_ids;
    o.timeout = spec.timeout;
    o.algorithm = spec.algorithm;
    o.wait_policy = spec.wait_policy;
    o.eager_bytes = spec.eager_bytes;
    o.compute_gate = spec.compute_gate;
    XS_ASSIGN_OR_RETURN(std::unique_ptr<InProcessCommunicator> comm,
                        InProcessCommunicator::Create(std::move(o)));
    return std::unique_ptr<Communicator>(std::move(comm));
  }
  Status AbortReason(const Communicator& comm) const override {
    return static_cast<const InProcessCommunicator&>(comm).abort_reason();
  }
};

}  // namespace

Status CommunicatorFactory::AgreeOnOutcome(const Status& local, std::chrono::milliseconds) {
  return local;
}

Status CommunicatorFactory::ShareArrays(std::span<const int64_t>,
                                        std::vector<std::vector<Array>>&,
                                        std::chrono::milliseconds, std::optional<int64_t>) {
  return OkStatus();
}

std::shared_ptr<CommunicatorFactory> InProcessCommunicators() {
  return std::make_shared<InProcessFactory>();
}

}  // namespace xs
