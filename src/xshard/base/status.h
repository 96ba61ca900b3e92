// Status / StatusOr, the macros that propagate them, and XS_CHECK for internal invariants.
// User mistakes return a Status whose message names the thing, the value, the rule and the fix;
// XS_CHECK is only for bugs in xshard itself. (Hand-written rather than absl's: see strings.h.)
#ifndef XSHARD_BASE_STATUS_H_
#define XSHARD_BASE_STATUS_H_

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "xshard/base/strings.h"

namespace xs {

enum class StatusCode {
  kOk,
  kInvalidArgument,   // the user's input is wrong (text, shapes, meshes, specs, flags)
  kNotFound,          // a named file, axis, computation or instruction does not exist
  kUnimplemented,     // valid input that xshard does not support yet
  kFailedPrecondition,
  kDeadlineExceeded,  // a collective whose participants did not all arrive in time
  kResourceExhausted, // memory
  kInternal,          // a bug in xshard reported without aborting
  kUnavailable,       // environment (MPI, files that vanished)
  kCancelled,         // a run stopped on request (Ctrl-C / SIGTERM); the CLI exits 130
};
std::string_view StatusCodeName(StatusCode code);

// A fact about an error beyond its code, for the callers that act on it (they test the field,
// never the message text).
enum class StatusDetail {
  kNone,
  kWhileIterationLimit,  // a while loop ran into a limit on its iterations (a run that may not end)
  kTextPosition,         // the message points at the position in a parsed text (file:line:col, caret)
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "INVALID_ARGUMENT: message", or "OK".
  std::string ToString() const;
  friend bool operator==(const Status&, const Status&) = default;

  // The instruction the error is attributed to, set by the layer that named it in the message (the
  // executor: "instruction 'fft.3' (fft): ..."); empty when none. Layers above test it instead of
  // looking for the name in the text, and do not name the instruction again.
  const std::string& instruction() const { return instruction_; }
  // That instruction's opcode name ("fft"), or empty.
  const std::string& opcode() const { return opcode_; }
  StatusDetail detail() const { return detail_; }

  // A copy attributed to `instruction` of `opcode` (the message is unchanged).
  Status AttributedTo(std::string instruction, std::string opcode) const;
  // A copy with `detail`.
  Status WithDetail(StatusDetail detail) const;
  // A copy with another message; the code, the attribution and the detail stay (for wrappers that
  // rewrite the text: "device 3 failed: ...").
  Status WithMessage(std::string message) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::string instruction_;
  std::string opcode_;
  StatusDetail detail_ = StatusDetail::kNone;
};

inline Status OkStatus() { return Status(); }

// Error builders: InvalidArgument("mesh axis '", name, "' is used twice") concatenates its
// arguments with StrCat.
#define XS_DEFINE_ERROR_BUILDER_(Name)                        \
  template <typename... Args>                                 \
  Status Name(const Args&... args) {                          \
    return Status(StatusCode::k##Name, StrCat(args...));      \
  }
XS_DEFINE_ERROR_BUILDER_(InvalidArgument)
XS_DEFINE_ERROR_BUILDER_(NotFound)
XS_DEFINE_ERROR_BUILDER_(Unimplemented)
XS_DEFINE_ERROR_BUILDER_(FailedPrecondition)
XS_DEFINE_ERROR_BUILDER_(DeadlineExceeded)
XS_DEFINE_ERROR_BUILDER_(ResourceExhausted)
XS_DEFINE_ERROR_BUILDER_(Internal)
XS_DEFINE_ERROR_BUILDER_(Unavailable)
XS_DEFINE_ERROR_BUILDER_(Cancelled)
#undef XS_DEFINE_ERROR_BUILDER_

// What every message of Unsupported() starts with. Callers decide by the code (kUnimplemented),
// never by looking for these words.
inline constexpr std::string_view kUnsupportedPrefix = "unsupported: ";
// Valid input outside what xshard supports: Unsupported("fft of ", t) is kUnimplemented with the
// message "unsupported: fft of c64" (the words are added here, not written at every site).
template <typename... Args>
Status Unsupported(const Args&... args) {
  return Status(StatusCode::kUnimplemented, StrCat(kUnsupportedPrefix, args...));
}
// What an unsupported `status` says is not supported: its message without the "unsupported: " that
// Unsupported() put in front (the whole message of an Unimplemented built otherwise). For layers
// that restate the error with its subject ("unsupported: instruction 'x' (op) ...; <what>").
std::string_view UnsupportedWhat(const Status& status);

// Returns `status` with `prefix` put in front of its message (same code, attribution and detail);
// OK stays OK.
Status Annotate(const Status& status, std::string_view prefix);

namespace internal {
[[noreturn]] void CheckFailed(const char* file, int line, const char* condition,
                              std::string_view message);
}  // namespace internal

// A value or the error that prevented it.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  // From an error; an OK status here is a bug (XS_CHECK).
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    if (status_.ok()) internal::CheckFailed(__FILE__, __LINE__, "!status.ok()",
                                            "StatusOr built from an OK status");
  }
  template <typename U = T>
    requires std::is_convertible_v<U&&, T>
  StatusOr(U&& value) : value_(std::forward<U>(value)) {}  // NOLINT: implicit by design

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }

  T& value() & { Check(); return *value_; }
  const T& value() const& { Check(); return *value_; }
  T&& value() && { Check(); return std::move(*value_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  void Check() const {
    if (!value_) internal::CheckFailed(__FILE__, __LINE__, "ok()", status_.ToString());
  }
  Status status_;
  std::optional<T> value_;
};

}  // namespace xs

#define XS_STATUS_CONCAT_INNER_(a, b) a##b
#define XS_STATUS_CONCAT_(a, b) XS_STATUS_CONCAT_INNER_(a, b)

// Returns from the enclosing function when `expr` (a Status) is not OK.
#define XS_RETURN_IF_ERROR(expr)               \
  do {                                         \
    ::xs::Status xs_status_ = (expr);          \
    if (!xs_status_.ok()) return xs_status_;   \
  } while (0)

// XS_ASSIGN_OR_RETURN(auto x, F()): evaluates F() (a StatusOr); returns its error or binds x.
#define XS_ASSIGN_OR_RETURN(lhs, rexpr) \
  XS_ASSIGN_OR_RETURN_IMPL_(XS_STATUS_CONCAT_(xs_statusor_, __LINE__), lhs, rexpr)
#define XS_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                              \
  if (!tmp.ok()) return tmp.status();              \
  lhs = std::move(tmp).value()

// Internal invariant: aborts with file, line and message when false. Never for user input.
#define XS_CHECK(cond, ...)                                                              \
  do {                                                                                   \
    if (!(cond))                                                                         \
      ::xs::internal::CheckFailed(__FILE__, __LINE__, #cond,                             \
                                  ::xs::StrCat("" __VA_OPT__(, ) __VA_ARGS__));          \
  } while (0)

#endif  // XSHARD_BASE_STATUS_H_
