#pragma once
/// What a kernel's `can_implement` answers: yes, or no with the reason.

#include <string>

namespace inferopt::sparse {

/// The answer of `can_implement`. A refusal is an expected outcome (the caller tries another
/// kernel), so it is a value, not an exception.
struct kernel_status {
  std::string reason;  ///< empty when the kernel can run; otherwise one line, lower case

  [[nodiscard]] bool ok() const noexcept { return reason.empty(); }
  explicit operator bool() const noexcept { return ok(); }
};

}  // namespace inferopt::sparse
