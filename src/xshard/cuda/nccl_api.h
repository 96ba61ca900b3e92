// NCCL opened on first use (dynamic_library.h): the function-pointer table NcclCommunicator calls,
// and ncclResult_t as Status (internal to the cuda layer: includes nccl.h).
#ifndef XSHARD_CUDA_NCCL_API_H_
#define XSHARD_CUDA_NCCL_API_H_

#include <nccl.h>

#include <string_view>

#include "xshard/base/status.h"

namespace xs::cuda {

struct NcclApi {
  decltype(&ncclGetVersion) GetVersion;
  decltype(&ncclGetUniqueId) GetUniqueId;
  decltype(&ncclCommInitRankConfig) CommInitRankConfig;
  decltype(&ncclCommSplit) CommSplit;
  decltype(&ncclCommAbort) CommAbort;
  decltype(&ncclCommDestroy) CommDestroy;
  decltype(&ncclCommGetAsyncError) CommGetAsyncError;
  decltype(&ncclGetErrorString) GetErrorString;
  decltype(&ncclGetLastError) GetLastError;
  decltype(&ncclGroupStart) GroupStart;
  decltype(&ncclGroupEnd) GroupEnd;
  decltype(&ncclAllReduce) AllReduce;
  decltype(&ncclReduceScatter) ReduceScatter;
  decltype(&ncclAllGather) AllGather;
  decltype(&ncclBroadcast) Broadcast;
  decltype(&ncclSend) Send;
  decltype(&ncclRecv) Recv;
};

// The table, loaded once per process from libnccl.so.2; the error names the library and the fix.
StatusOr<const NcclApi*> Nccl();

// OK for ncclSuccess (and ncclInProgress, which the caller settles); otherwise "<call> failed:
// <NCCL's text>" (InvalidArgument for ncclInvalidUsage / ncclInvalidArgument, Unavailable for
// system and remote errors, Internal otherwise).
Status NcclStatus(const NcclApi& api, ncclResult_t result, std::string_view call);

}  // namespace xs::cuda

// Returns from the enclosing function when the NCCL call `expr` fails; `api` is the table.
#define XS_NCCL_RETURN_IF_ERROR(api, expr)                                     \
  do {                                                                        \
    const ncclResult_t xs_nccl_result_ = (expr);                              \
    if (xs_nccl_result_ != ncclSuccess && xs_nccl_result_ != ncclInProgress)  \
      return ::xs::cuda::NcclStatus((api), xs_nccl_result_, #expr);           \
  } while (false)

#endif  // XSHARD_CUDA_NCCL_API_H_
