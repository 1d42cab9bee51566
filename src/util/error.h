// The one error type of shoal. Every subsystem throws shoal::Error for failures that end an
// operation; programmer errors are assertions, never Error.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace shoal {

/// What kind of failure an Error reports. The CLI maps every category to exit status 1; callers
/// use the category to decide whether a retry can help (kConflict, kTimeout, kUnavailable,
/// sometimes kIO).
enum class ErrorCode {
  kInvalid,      ///< invalid input or corrupt data: the bytes or arguments are wrong
  kNotFound,     ///< a file, table, column, version or key does not exist
  kUnsupported,  ///< valid input that uses a feature shoal does not implement
  kIO,           ///< the operating system failed a read, write, open, rename ...
  kConflict,     ///< a concurrent writer won, or a value contradicts one already stored
  kTimeout,      ///< a wait ran past its deadline
  kUnavailable,  ///< a server could not be reached, or answered that it cannot serve now (5xx, 429)
};

/// Lower-case name of a category, as printed in messages: "invalid", "not found", ...
std::string_view ErrorCodeName(ErrorCode code);

/// An error with a category and a message that names what was expected, what was found, and
/// where (file, column, page, row, rank). what() returns the message without the category.
class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, std::string message)
      : std::runtime_error(std::move(message)), code_(code) {}

  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

// Named factories, so call sites read as the failure they report.
[[nodiscard]] Error InvalidError(std::string message);
[[nodiscard]] Error NotFoundError(std::string message);
[[nodiscard]] Error UnsupportedError(std::string message);
[[nodiscard]] Error IOError(std::string message);
[[nodiscard]] Error ConflictError(std::string message);
[[nodiscard]] Error TimeoutError(std::string message);
[[nodiscard]] Error UnavailableError(std::string message);

/// An IOError for a failed system call: "<what> '<path>': <strerror(errnum)>".
[[nodiscard]] Error SystemError(std::string_view what, std::string_view path, int errnum);

/// Prefixes the message of an Error with context ("reading 'x.parquet': ...") keeping its code.
[[nodiscard]] Error WithContext(const Error& error, std::string_view context);

}  // namespace shoal
