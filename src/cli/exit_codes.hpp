#pragma once
// The one mapping from what went wrong to the CLI's exit code. 0: done; 1: `compare` found
// outputs over tolerance; 2: the input or the request cannot be processed (a malformed,
// hostile or too large model, bad options, unreadable or unwritable files, a model that needs
// more memory than the process may have); 3: a bug of ours.

#include "inferopt/core/error.hpp"

namespace inferopt::cli {

inline constexpr int exit_bad_input = 2;
inline constexpr int exit_internal = 3;

constexpr int exit_code_for(errc code) noexcept {
  switch (code) {
    case errc::invalid_argument:
    case errc::invalid_model:
    case errc::unsupported:
    case errc::io:
    case errc::verification:
    case errc::out_of_memory: return exit_bad_input;
    case errc::internal: return exit_internal;
  }
  return exit_internal;
}

}  // namespace inferopt::cli
