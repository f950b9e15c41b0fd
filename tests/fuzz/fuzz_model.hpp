#pragma once
// What every fuzz target does first: the bytes as a model, through the same validation
// every command runs, with limits small enough that a sanitized process under libFuzzer's
// memory cap never meets a model it may legitimately refuse only for its size.
//
// A target's contract is the CLI's: our `error` (any code but internal) is a correct refusal;
// anything else that escapes, and every sanitizer report, is a finding.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string_view>

#include "inferopt/core/error.hpp"
#include "inferopt/ir/serialize.hpp"
#include "inferopt/ir/validate.hpp"

namespace inferopt::fuzz {

inline ir::model_limits fuzzing_limits() {
  ir::model_limits limits;
  limits.max_node_inputs = 1024;
  limits.max_node_outputs = 1024;
  // Small enough that even a large pooling window over the biggest tensor finishes within
  // libFuzzer's timeout under the sanitizers.
  limits.max_tensor_elements = std::int64_t{1} << 18;
  return limits;
}

/// The model the bytes hold when it passes validation; nullopt when it is refused.
inline std::optional<ir::model> validated_model(const std::uint8_t* data, std::size_t size) {
  try {
    ir::model m = ir::parse_model(std::string_view(reinterpret_cast<const char*>(data), size));
    ir::validate(m, fuzzing_limits());
    return m;
  } catch (const error& e) {
    if (e.code() == errc::internal) throw;
    return std::nullopt;
  }
}

/// Runs `work`; an `error` of ours that is not internal is a refusal, as the CLI reports it.
/// An internal error aborts, so libFuzzer keeps the input.
template <class Work>
void refusals_allowed(Work&& work) {
  try {
    work();
  } catch (const error& e) {
    if (e.code() != errc::internal) return;
    std::cerr << "internal error: " << e.what() << '\n';
    std::abort();
  }
}

}  // namespace inferopt::fuzz
