#pragma once
// Status and Result<T>: errors as values across library boundaries.
//
// Status is a canonical code plus a human-readable message. It is cheap on success (no allocation). Result<T>
// holds either a T or a non-OK Status. Both are [[nodiscard]]. Neither is thread-safe to mutate concurrently;
// copies are independent.
#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace xpool {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,
  kNotFound,
  kAlreadyExists,
  kFailedPrecondition,
  kResourceExhausted,
  kPermissionDenied,
  kUnauthenticated,
  kUnavailable,
  kAborted,
  kInternal,
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "INVALID_ARGUMENT: message" or "OK".
  std::string ToString() const;

  // Returns a copy with `context: ` put in front of the message (no-op on OK).
  Status WithContext(std::string_view context) const;

  friend bool operator==(const Status& a, const Status& b) { return a.code_ == b.code_ && a.message_ == b.message_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgumentError(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status NotFoundError(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status AlreadyExistsError(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }
inline Status FailedPreconditionError(std::string m) { return {StatusCode::kFailedPrecondition, std::move(m)}; }
inline Status ResourceExhaustedError(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
inline Status PermissionDeniedError(std::string m) { return {StatusCode::kPermissionDenied, std::move(m)}; }
inline Status UnauthenticatedError(std::string m) { return {StatusCode::kUnauthenticated, std::move(m)}; }
inline Status UnavailableError(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status AbortedError(std::string m) { return {StatusCode::kAborted, std::move(m)}; }
inline Status InternalError(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

// Either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::move(value)) {}        // NOLINT: implicit by design, like absl::StatusOr
  Result(Status status) : data_(std::move(status)) {  // NOLINT
    assert(!std::get<Status>(data_).ok() && "Result constructed from an OK status");
    if (std::get<Status>(data_).ok()) data_ = Status(StatusCode::kInternal, "Result from OK status");
  }

  bool ok() const { return std::holds_alternative<T>(data_); }
  // OK when a value is held.
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(data_); }

  // Precondition: ok(). Programmer error otherwise.
  T& value() & { return std::get<T>(data_); }
  const T& value() const& { return std::get<T>(data_); }
  T&& value() && { return std::get<T>(std::move(data_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  T value_or(T fallback) const& { return ok() ? value() : std::move(fallback); }

 private:
  std::variant<T, Status> data_;
};

namespace internal {
[[noreturn]] void CheckFailed(const Status& status, std::string_view why);
void ReportCheckFailure(const Status& status, std::string_view why);
}  // namespace internal

// For a call that fails only when an invariant of the caller is broken — undoing what the caller applied itself a
// moment ago, adding the valid nodes of a valid cluster — with `why` saying why it cannot fail. A failure is a
// bug: where assertions are on (tests, the sanitizer build) it aborts naming `why` and the error; elsewhere it is
// printed to stderr and the caller goes on.
inline void CheckOk(const Status& status, std::string_view why) {
  if (status.ok()) return;
#ifdef NDEBUG
  internal::ReportCheckFailure(status, why);
#else
  internal::CheckFailed(status, why);
#endif
}
template <typename T>
void CheckOk(const Result<T>& result, std::string_view why) {
  if (!result.ok()) CheckOk(result.status(), why);
}

// For a best-effort call whose failure leaves the caller nothing to do (the next round retries it, or its effect
// is optional), with `why` saying so. Only the reader's record: nothing happens at run time.
inline void IgnoreError(const Status& /*status*/, std::string_view /*why*/) {}
template <typename T>
void IgnoreError(const Result<T>& /*result*/, std::string_view /*why*/) {}

namespace internal {
inline Status AsStatus(const Status& s) { return s; }
template <typename T>
Status AsStatus(const Result<T>& r) {
  return r.status();
}
}  // namespace internal

}  // namespace xpool

#define XPOOL_CONCAT_INNER(a, b) a##b
#define XPOOL_CONCAT(a, b) XPOOL_CONCAT_INNER(a, b)

// Returns the Status of `expr` from the current function when it is not OK.
// The status variable is named per line, so that a RETURN_IF_ERROR inside the expression of another (a lambda
// given to a transaction) does not shadow it.
#define RETURN_IF_ERROR(expr) XPOOL_RETURN_IF_ERROR_IMPL(XPOOL_CONCAT(xpool_status_, __LINE__), expr)
#define XPOOL_RETURN_IF_ERROR_IMPL(status, expr)                  \
  do {                                                            \
    ::xpool::Status status = ::xpool::internal::AsStatus((expr)); \
    if (!status.ok()) return status;                              \
  } while (0)

// ASSIGN_OR_RETURN(auto x, MakeX()); — declares/assigns on success, returns the Status otherwise.
#define ASSIGN_OR_RETURN(lhs, expr) XPOOL_ASSIGN_OR_RETURN_IMPL(XPOOL_CONCAT(xpool_result_, __LINE__), lhs, expr)
#define XPOOL_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()
