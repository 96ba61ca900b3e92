// Platform names, $XSHARD_PLATFORM, and the client options each platform sets.
#include "xshard/platform/platform.h"

#include <algorithm>
#include <cstdlib>

#include "xshard/cuda/platform.h"

namespace xs {

const std::vector<std::string>& PlatformNames() {
  static const std::vector<std::string> names = {"cpu", "cuda"};
  return names;
}

StatusOr<std::string> ResolvePlatformName(std::string_view name) {
  std::string from = "platform";
  std::string chosen(name);
  if (chosen.empty()) {
    const char* env = std::getenv("XSHARD_PLATFORM");
    if (env == nullptr || *env == '\0') return std::string("cpu");
    chosen = env;
    from = "XSHARD_PLATFORM";
  }
  const std::vector<std::string>& names = PlatformNames();
  if (std::find(names.begin(), names.end(), chosen) == names.end()) {
    return InvalidArgument("unknown ", from, " '", chosen, "'; the platforms are ",
                           StrJoin(names, ", "));
  }
  return chosen;
}

Status CheckPlatform(std::string_view name) {
  XS_ASSIGN_OR_RETURN(const std::string platform, ResolvePlatformName(name));
  if (platform == "cuda") return cuda::DeviceCount().status();
  return OkStatus();
}

Status ConfigureClient(std::string_view name, bool distributed, ClientOptions& options) {
  XS_ASSIGN_OR_RETURN(const std::string platform, ResolvePlatformName(name));
  if (platform == "cuda") return ConfigureCudaClient(distributed, options);
  options.device_kind = CpuDeviceKind();
  options.communicators = distributed ? MpiCommunicators() : InProcessCommunicators();
  return OkStatus();
}

StatusOr<std::unique_ptr<Client>> CreateClient(std::string_view name, ClientOptions options,
                                               bool distributed) {
  XS_RETURN_IF_ERROR(ConfigureClient(name, distributed, options));
  return Client::Create(std::move(options));
}

StatusOr<std::unique_ptr<Client>> CreateMpiClient(ClientOptions options, int64_t eager_bytes) {
  options.device_kind = CpuDeviceKind();
  options.communicators = MpiCommunicators(eager_bytes);
  return Client::Create(std::move(options));
}

}  // namespace xs
