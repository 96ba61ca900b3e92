// NCCL's entry points, bound with dlsym on first use.
#include "xshard/cuda/nccl_api.h"

#include <string>

#include "xshard/cuda/dynamic_library.h"

namespace xs::cuda {
namespace {

StatusOr<NcclApi> LoadNccl() {
  XS_ASSIGN_OR_RETURN(DynamicLibrary lib, DynamicLibrary::Open("NCCL", {"libnccl.so.2"}));
  NcclApi api{};
  XS_RETURN_IF_ERROR(Bind(lib, "ncclGetVersion", &api.GetVersion));
  XS_RETURN_IF_ERROR(Bind(lib, "ncclGetUniqueId", &api.GetUniqueId));
  XS_RETURN_IF_ERROR(Bind(lib, "ncclCommInitRankConfig", &api.CommInitRankConfig));
  XS_RETURN_IF_ERROR(Bind(lib, "ncclCommSplit", &api.CommSplit));
  XS_RETURN_IF_ERROR(Bind(lib, "ncclCommAbort", &api.CommAbort));
  XS_RETURN_IF_ERROR(Bind(lib, "ncclCommDestroy", &api.CommDestroy));
  XS_RETURN_IF_ERROR(Bind(lib, "ncclCommGetAsyncError", &api.CommGetAsyncError));
  XS_RETURN_IF_ERROR(Bind(lib, "ncclGetErrorString", &api.GetErrorString));
  XS_RETURN_IF_ERROR(Bind(lib, "ncclGetLastError", &api.GetLastError));
  XS_RETURN_IF_ERROR(Bind(lib, "ncclGroupStart", &api.GroupStart));
  XS_RETURN_IF_ERROR(Bind(lib, "ncclGroupEnd", &api.GroupEnd));
  XS_RETURN_IF_ERROR(Bind(lib, "ncclAllReduce", &api.AllReduce));
  XS_RETURN_IF_ERROR(Bind(lib, "ncclReduceScatter", &api.ReduceScatter));
  XS_RETURN_IF_ERROR(Bind(lib, "ncclAllGather", &api.AllGather));
  XS_RETURN_IF_ERROR(Bind(lib, "ncclBroadcast", &api.Broadcast));
  XS_RETURN_IF_ERROR(Bind(lib, "ncclSend", &api.Send));
  XS_RETURN_IF_ERROR(Bind(lib, "ncclRecv", &api.Recv));
  return api;
}

}  // namespace

StatusOr<const NcclApi*> Nccl() {
  static const StatusOr<NcclApi>* const loaded = new StatusOr<NcclApi>(LoadNccl());
  if (!loaded->ok()) return loaded->status();
  return &**loaded;
}

Status NcclStatus(const NcclApi& api, ncclResult_t result, std::string_view call) {
  if (result == ncclSuccess || result == ncclInProgress) return OkStatus();
  const std::string message = std::string(call) + " failed: " + api.GetErrorString(result);
  switch (result) {
    case ncclInvalidUsage:
    case ncclInvalidArgument:
      return InvalidArgument(message);
    case ncclSystemError:
    case ncclRemoteError:
      return Unavailable(message);
    default:
      return Internal(message);
  }
}

}  // namespace xs::cuda
