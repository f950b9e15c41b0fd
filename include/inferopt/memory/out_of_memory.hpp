#pragma once
/// The exception memory resources throw when they cannot satisfy a request.

#include <new>
#include <string>

namespace inferopt::memory {

/// Thrown by `allocate` when a resource (or its limit) has no room. It derives from
/// `std::bad_alloc` rather than `inferopt::error` because allocation failure is what callers
/// of `std::pmr` and standard containers already catch, and pools back off on `bad_alloc`
/// from any upstream. The message is one line naming the resource and the sizes involved.
class out_of_memory : public std::bad_alloc {
 public:
  explicit out_of_memory(std::string message) : message_(std::move(message)) {}
  [[nodiscard]] const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

}  // namespace inferopt::memory
