#include "util/error.h"

#include <cstring>

namespace shoal {

std::string_view ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalid: return "invalid";
    case ErrorCode::kNotFound: return "not found";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kIO: return "i/o";
    case ErrorCode::kConflict: return "conflict";
    case ErrorCode::kTimeout: return "timeout";
    case ErrorCode::kUnavailable: return "unavailable";
  }
  return "unknown";
}

Error InvalidError(std::string message) { return Error(ErrorCode::kInvalid, std::move(message)); }
Error NotFoundError(std::string message) { return Error(ErrorCode::kNotFound, std::move(message)); }
Error UnsupportedError(std::string message) {
  return Error(ErrorCode::kUnsupported, std::move(message));
}
Error IOError(std::string message) { return Error(ErrorCode::kIO, std::move(message)); }
Error ConflictError(std::string message) { return Error(ErrorCode::kConflict, std::move(message)); }
Error TimeoutError(std::string message) { return Error(ErrorCode::kTimeout, std::move(message)); }
Error UnavailableError(std::string message) { return Error(ErrorCode::kUnavailable, std::move(message)); }

Error SystemError(std::string_view what, std::string_view path, int errnum) {
  std::string message(what);
  message += " '";
  message += path;
  message += "': ";
  message += std::strerror(errnum);
  return Error(errnum == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIO, std::move(message));
}

Error WithContext(const Error& error, std::string_view context) {
  std::string message(context);
  message += ": ";
  message += error.what();
  return Error(error.code(), std::move(message));
}

}  // namespace shoal
