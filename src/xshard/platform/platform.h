// Platforms: the kinds of device a Client runs on, chosen by name (`--platform cpu|cuda` on the
// CLI, `platform=` in Python, $XSHARD_PLATFORM when neither is given). A platform supplies the
// client's DeviceKind and CommunicatorFactory (runtime/), which the runtime then uses without
// naming them:
//   cpu   host threads; collectives in process, or over MPI under mpirun
//   cuda  GPUs (gpu_mapping.h places the devices); virtual devices of one GPU and NCCL transports
//
//   XS_ASSIGN_OR_RETURN(auto client, CreateClient("cuda", options));
//   // no GPU: "no usable GPU: cudaGetDeviceCount failed: CUDA driver version is insufficient ..."
#ifndef XSHARD_PLATFORM_PLATFORM_H_
#define XSHARD_PLATFORM_PLATFORM_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "xshard/base/status.h"
#include "xshard/runtime/client.h"
#include "xshard/runtime/communicator_factory.h"
#include "xshard/runtime/device_kind.h"

namespace xs {

// The platform names, in the order messages list them: {"cpu", "cuda"}.
const std::vector<std::string>& PlatformNames();

// `name` when not empty, else $XSHARD_PLATFORM when set and not empty, else "cpu". A name that is
// not a platform is an error listing the valid ones (naming the variable when it came from it):
//   "unknown platform 'tpu'; the platforms are cpu, cuda"
StatusOr<std::string> ResolvePlatformName(std::string_view name);

// Whether platform `name` (resolved as above) can make a client here: always for cpu; for cuda an
// error of one line naming what CUDA said when no GPU is usable (no driver, no GPU visible, a build
// without CUDA).
Status CheckPlatform(std::string_view name);

// Sets options.device_kind and options.communicators for platform `name` (resolved as above).
// `distributed`: this process is one of an mpirun job (cpu: the MPI transport). cuda:
// CheckPlatform's errors, and MapDevicesToGpus's for options.num_devices (0: DefaultDeviceCount())
// on the visible GPUs.
Status ConfigureClient(std::string_view name, bool distributed, ClientOptions& options);

// ConfigureClient, then Client::Create.
StatusOr<std::unique_ptr<Client>> CreateClient(std::string_view name, ClientOptions options,
                                               bool distributed = false);

// CPU devices spread over the processes of an mpirun job (ClientOptions::devices_per_process):
// every process calls it with the same options. `eager_bytes` as MpiCommunicators'.
// Unimplemented when the build has no MPI.
StatusOr<std::unique_ptr<Client>> CreateMpiClient(ClientOptions options, int64_t eager_bytes = -1);

// The MPI transport (mpi/mpi_communicator.h): devices spread over the processes of an mpirun job.
// `eager_bytes`: MpiCommunicatorOptions::eager_bytes; -1 keeps its default (16 KiB).
std::shared_ptr<CommunicatorFactory> MpiCommunicators(int64_t eager_bytes = -1);

// The cuda platform's kind and transport for `num_devices` devices on the GPUs this process sees
// (cuda_platform.cc); errors as ConfigureClient's.
Status ConfigureCudaClient(bool distributed, ClientOptions& options);

}  // namespace xs

#endif  // XSHARD_PLATFORM_PLATFORM_H_
