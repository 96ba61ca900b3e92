// A Status as the text MPI messages carry between processes (abort and outcome messages). Built
// with and without MPI, so that it is tested in either build.
#include "xshard/mpi/status_encoding.h"

#include <algorithm>
#include <cstdlib>

namespace xs::mpi {

std::string EncodeStatus(const Status& s) {
  return StrCat(static_cast<int>(s.code()), ":", static_cast<int>(s.detail()), ":", s.message());
}
Status DecodeStatus(const std::string& text, std::string_view prefix) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos) return OkStatus();
  int code = std::atoi(text.substr(0, colon).c_str());
  if (code == 0) return OkStatus();
  // Codes and details past the last one known here (kCancelled, kTextPosition) come from another
  // build: an internal error, no detail.
  if (code < 0 || code > static_cast<int>(StatusCode::kCancelled)) code = static_cast<int>(StatusCode::kInternal);
  // "code:detail:message"; a message right after the code (no digits-only second field) is whole.
  const size_t second = text.find(':', colon + 1);
  const bool has_detail = second != std::string::npos && second > colon + 1 &&
                          std::all_of(text.begin() + colon + 1, text.begin() + second,
                                      [](char c) { return c >= '0' && c <= '9'; });
  int detail = has_detail ? std::atoi(text.substr(colon + 1, second - colon - 1).c_str()) : 0;
  if (detail > static_cast<int>(StatusDetail::kTextPosition)) detail = 0;
  const std::string_view rest = std::string_view(text).substr((has_detail ? second : colon) + 1);
  return Status(static_cast<StatusCode>(code), StrCat(prefix, rest)).WithDetail(static_cast<StatusDetail>(detail));
}

}  // namespace xs::mpi
