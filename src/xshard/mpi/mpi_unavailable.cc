// The MPI layer of a build without MPI: every entry point reports that MPI support was not built,
// naming the CMake option and the Debian packages that enable it.
#include "xshard/mpi/mpi_communicator.h"
#include "xshard/mpi/mpi_process.h"

#include <cstdlib>

namespace xs {
namespace mpi {
namespace {

Status NotBuilt() {
  return Unimplemented("this xshard was built without MPI support; install libopenmpi-dev and "
                       "openmpi-bin (scripts/install-deps.sh) and reconfigure with CMake "
                       "(XSHARD_WITH_MPI=AUTO or ON)");
}

}  // namespace

bool BuiltWithMpi() { return false; }
bool LaunchedByMpirun() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    const char* e = std::getenv(v);
    if (e != nullptr && *e != '\0') return true;
  }
  return false;
}
Status Initialize() { return NotBuilt(); }
bool Initialized() { return false; }
int64_t ProcessRank() { return 0; }
int64_t ProcessCount() { return 1; }
void Finalize() {}
Status PollRemoteAbort() { return OkStatus(); }
Status BrokenReason() { return OkStatus(); }
void MarkBroken(const Status&) {}
Status BroadcastArrays(std::vector<Array>&, const Status&, int64_t, std::chrono::milliseconds) {
  return NotBuilt();
}
Status ScatterArrays(const std::vector<int64_t>&, std::vector<std::vector<Array>>&,
                     const Status&, int64_t, std::chrono::milliseconds) {
  return NotBuilt();
}
Status ShareArrays(const std::vector<int64_t>&, std::vector<std::vector<Array>>&,
                   std::chrono::milliseconds, std::optional<int64_t>) {
  return NotBuilt();
}
Status AgreeOnOutcome(const Status& local, std::chrono::milliseconds) { return local; }

}  // namespace mpi

struct mpi::CommState {};

StatusOr<std::unique_ptr<MpiCommunicator>> MpiCommunicator::Create(MpiCommunicatorOptions) {
  return mpi::Initialize();
}
MpiCommunicator::MpiCommunicator(MpiCommunicatorOptions) {}
MpiCommunicator::~MpiCommunicator() = default;
int64_t MpiCommunicator::num_ranks() const { return 0; }
const std::vector<int64_t>& MpiCommunicator::local_ranks() const {
  static const std::vector<int64_t> none;
  return none;
}
const std::vector<int64_t>& MpiCommunicator::process_of() const { return local_ranks(); }
Status MpiCommunicator::AllGather(const CollectiveCall&, const DeviceGroups&, ConstBufferView,
                                  BufferView, int) { return mpi::Initialize(); }
Status MpiCommunicator::AllReduce(const CollectiveCall&, const DeviceGroups&, ConstBufferView,
                                  BufferView, ReductionKind) { return mpi::Initialize(); }
Status MpiCommunicator::ReduceScatter(const CollectiveCall&, const DeviceGroups&, ConstBufferView,
                                      BufferView, int, ReductionKind) { return mpi::Initialize(); }
Status MpiCommunicator::AllToAll(const CollectiveCall&, const DeviceGroups&, ConstBufferView,
                                 BufferView, int, int) { return mpi::Initialize(); }
Status MpiCommunicator::AllToAllTuple(const CollectiveCall&, const DeviceGroups&,
                                      std::span<const ConstBufferView>,
                                      std::span<const BufferView>) { return mpi::Initialize(); }
Status MpiCommunicator::CollectivePermute(const CollectiveCall&, const PermutePairs&,
                                          ConstBufferView, BufferView) { return mpi::Initialize(); }
Status MpiCommunicator::CollectiveBroadcast(const CollectiveCall&, const DeviceGroups&,
                                            ConstBufferView, BufferView) { return mpi::Initialize(); }
Status MpiCommunicator::Barrier(const CollectiveCall&) { return mpi::Initialize(); }
void MpiCommunicator::Abort(const Status&) {}
Status MpiCommunicator::abort_reason() const { return mpi::Initialize(); }
void MpiCommunicator::Leave(int64_t) {}
void MpiCommunicator::Reset() {}

}  // namespace xs
