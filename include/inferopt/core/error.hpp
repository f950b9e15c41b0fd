#pragma once
/// The one exception type of inferopt, and precondition checks.

#include <new>
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
  out_of_memory,     ///< the model needs more memory than the process may have
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

/// Any exception as an `error`: ours keep their code; running out of memory (`bad_alloc`, or a
/// container asked for more than it can hold) is `out_of_memory`, the size of the input's
/// fault; anything else is `internal`, a bug of ours.
inline error as_error(const std::exception& e) {
  if (const auto* ours = dynamic_cast<const error*>(&e)) return *ours;
  if (dynamic_cast<const std::bad_alloc*>(&e) || dynamic_cast<const std::length_error*>(&e)) {
    return {errc::out_of_memory, "out of memory"};
  }
  return {errc::internal, e.what()};
}

#if defined(__cpp_lib_source_location)
using call_site = std::source_location;
#else
/// The caller's function name where the standard library has no `source_location` (clang 14
/// with libstdc++ 12, which the fuzzing build uses); the same builtin the standard one uses.
struct call_site {
  const char* function = "";
  static constexpr call_site current(const char* function = __builtin_FUNCTION()) noexcept { return {function}; }
  [[nodiscard]] constexpr const char* function_name() const noexcept { return function; }
};
#endif

/// Checks a public precondition; throws `error(errc::invalid_argument)` naming the caller.
inline void expects(bool condition, const char* message, call_site where = call_site::current()) {
  if (!condition) {
    throw error(errc::invalid_argument, std::string(where.function_name()) + ": " + message);
  }
}

}  // namespace inferopt
