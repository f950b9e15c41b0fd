#pragma once
/// Why a well-formed request was not run: the server answers these with 503 (come back
/// later), where a malformed request (inferopt::error, errc::invalid_argument) gets a 400.

#include <stdexcept>
#include <string>

namespace inferopt::serve {

enum class rejection_reason {
  queue_full,     ///< max_queue requests were already waiting
  expected_wait,  ///< the request would have waited longer than max_queue_wait
  timed_out,      ///< the request waited past its queue timeout (timeout_action::reject)
  shutting_down,  ///< the batcher stopped accepting requests
};

class rejection : public std::runtime_error {
 public:
  rejection(rejection_reason reason, const std::string& message) : std::runtime_error(message), reason_(reason) {}
  [[nodiscard]] rejection_reason reason() const noexcept { return reason_; }

 private:
  rejection_reason reason_;
};

}  // namespace inferopt::serve
