// A Status as the text MPI messages carry between processes: "code:detail:message".
#ifndef XSHARD_MPI_STATUS_ENCODING_H_
#define XSHARD_MPI_STATUS_ENCODING_H_

#include <string>
#include <string_view>

#include "xshard/base/status.h"

namespace xs::mpi {

// Status <-> "code:detail:message", the form abort and outcome messages carry (the detail, e.g. a
// while loop's iteration limit, survives the trip; the attribution fields do not: the message
// names the instruction). DecodeStatus prefixes the message with `prefix` ("process 2: "); text
// without a non-zero code decodes to OK, an unknown detail to none.
std::string EncodeStatus(const Status& s);
Status DecodeStatus(const std::string& text, std::string_view prefix);

}  // namespace xs::mpi

#endif  // XSHARD_MPI_STATUS_ENCODING_H_
