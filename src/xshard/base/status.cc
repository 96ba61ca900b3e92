// Status helpers and the internal-invariant failure path.
#include "xshard/base/status.h"

#include <cstdio>
#include <cstdlib>

namespace xs {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case StatusCode::kNotFound: return "NOT_FOUND";
    case StatusCode::kUnimplemented: return "UNIMPLEMENTED";
    case StatusCode::kFailedPrecondition: return "FAILED_PRECONDITION";
    case StatusCode::kDeadlineExceeded: return "DEADLINE_EXCEEDED";
    case StatusCode::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case StatusCode::kInternal: return "INTERNAL";
    case StatusCode::kUnavailable: return "UNAVAILABLE";
    case StatusCode::kCancelled: return "CANCELLED";
  }
  return "UNKNOWN";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return StrCat(StatusCodeName(code_), ": ", message_);
}

Status Status::AttributedTo(std::string instruction, std::string opcode) const {
  Status s = *this;
  s.instruction_ = std::move(instruction);
  s.opcode_ = std::move(opcode);
  return s;
}

Status Status::WithDetail(StatusDetail detail) const {
  Status s = *this;
  s.detail_ = detail;
  return s;
}

Status Status::WithMessage(std::string message) const {
  Status s = *this;
  s.message_ = std::move(message);
  return s;
}

std::string_view UnsupportedWhat(const Status& status) {
  std::string_view m = status.message();
  if (m.starts_with(kUnsupportedPrefix)) m.remove_prefix(kUnsupportedPrefix.size());
  return m;
}

Status Annotate(const Status& status, std::string_view prefix) {
  if (status.ok()) return status;
  return status.WithMessage(StrCat(prefix, status.message()));
}

namespace internal {
void CheckFailed(const char* file, int line, const char* condition, std::string_view message) {
  std::fprintf(stderr, "xshard internal error at %s:%d: check failed: %s %.*s\n", file, line,
               condition, static_cast<int>(message.size()), message.data());
  std::abort();
}
}  // namespace internal

}  // namespace xs
