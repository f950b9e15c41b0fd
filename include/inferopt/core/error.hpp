#pragma once
/// The one exception type of inferopt, and precondition checks.

#include <source_location>
#include <stdexcept>
#include <string>

namespace inferopt {

/// What kind of failure an `error` reports; the CLI maps it to an exit code.
enum class errc {
  invalid_argument,  ///< a caller passed something the API does not accept
  invalid_model,     ///< a model file or graph is malformed
  unsupported,       ///< well-formed, but not something we handle
  io,                ///< a file could not be read or written
  verification,      ///< a structural or numeric check failed
  internal,          ///< a broken invariant of ours
};

/// Thrown when a correct result cannot be produced. The message is one line, lower case,
/// no final period, naming the subject and what did not match.
class error : public std::runtime_error {
 public:
  error(errc code, const std::string& message) : std::runtime_error(message), code_(code) {}
  [[nodiscard]] errc code() const noexcept { return code_; }

 private:
  errc code_;
};

/// Checks a public precondition; throws `error(errc::invalid_argument)` naming the caller.
inline void expects(bool condition, const char* message,
                    std::source_location where = std::source_location::current()) {
  if (!condition) {
    throw error(errc::invalid_argument, std::string(where.function_name()) + ": " + message);
  }
}

}  // namespace inferopt
