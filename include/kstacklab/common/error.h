// Error handling for kstacklab (STYLE.md rule 6).
//
// Two classes of failure:
//  * a broken invariant (a bug) -> KSTACKLAB_CHECK -> message on stderr + abort();
//  * a recoverable failure (bad input, a file, a syscall, a permission) -> an Error value carried
//    by Expected<T>, turned into a one-line message and an exit code by the CLI.
// Nothing here throws; nothing here may be used inside a timed region.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

namespace kstacklab {

// Process exit codes (DESIGN.md "Exit codes").
enum ExitCode : int {
  kExitOk = 0,
  kExitRuntime = 1,  // the machine or a file failed us
  kExitUsage = 2,    // the user's input is wrong; the message names the fix
};

struct Error {
  int exit_code = kExitRuntime;
  std::string message;  // one line, no trailing newline; says what to do where possible
  // The errno of the system call that failed, where one did (a file written or read), else 0:
  // callers that must tell a host fault (ENOSPC, EIO) from bad input read it, never the message.
  int os_errno = 0;
};

inline Error UsageError(std::string message) { return Error{kExitUsage, std::move(message)}; }
inline Error RuntimeError(std::string message) { return Error{kExitRuntime, std::move(message)}; }
// A runtime failure of a system call that set `err` (errno).
inline Error SystemError(std::string message, int err) {
  return Error{kExitRuntime, std::move(message), err};
}

// A value or an Error. Accessing value() of an error (or error() of a value) is a bug and aborts.
template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Expected(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & {
    Require(ok());
    return std::get<0>(v_);
  }
  const T& value() const& {
    Require(ok());
    return std::get<0>(v_);
  }
  T&& value() && {
    Require(ok());
    return std::get<0>(std::move(v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const {
    Require(!ok());
    return std::get<1>(v_);
  }

 private:
  static void Require(bool cond) {
    if (!cond) {
      std::fputs("kstacklab: internal error: Expected accessed in the wrong state\n", stderr);
      std::abort();
    }
  }
  std::variant<T, Error> v_;
};

// Success or an Error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

inline Status OkStatus() { return Status(); }

[[noreturn]] inline void CheckFailed(const char* expr, const char* file, int line) {
  std::fprintf(stderr, "kstacklab: internal error: CHECK(%s) failed at %s:%d\n", expr, file, line);
  std::abort();
}

}  // namespace kstacklab

#define KSTACKLAB_CHECK(cond) \
  ((cond) ? static_cast<void>(0) : ::kstacklab::CheckFailed(#cond, __FILE__, __LINE__))

// Propagates an error from an Expected/Status expression.
#define KSTACKLAB_RETURN_IF_ERROR(expr)                            \
  do {                                                             \
    auto&& kstacklab_status_ = (expr);                             \
    if (!kstacklab_status_.ok()) return kstacklab_status_.error(); \
  } while (0)

// Assigns the value of an Expected expression to `lhs`, or returns its error.
#define KSTACKLAB_ASSIGN_OR_RETURN(lhs, expr)                    \
  do {                                                           \
    auto kstacklab_value_ = (expr);                              \
    if (!kstacklab_value_.ok()) return kstacklab_value_.error(); \
    (lhs) = std::move(*kstacklab_value_);                        \
  } while (0)
