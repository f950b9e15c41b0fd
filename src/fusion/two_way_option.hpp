#pragma once
// A pass option with two values, such as `domain=ai.onnx|com.microsoft` or
// `batched=true|false`, as several fusions take one. Private to src/fusion.

#include <map>
#include <string>
#include <string_view>

#include "inferopt/core/error.hpp"

namespace inferopt::fusion::detail {

struct two_way_option {
  std::string_view key;
  std::string_view off;  ///< the default, printed as nothing
  std::string_view on;

  /// Stores in `flag` whether `value` is `on`.
  /// @throws error(errc::invalid_argument) for another key or a value that is neither.
  void set(std::string_view pass, std::string_view k, std::string_view value, bool& flag) const {
    if (k != key) throw error(errc::invalid_argument, "pass '" + std::string(pass) + "' has no option '" + std::string(k) + "'");
    if (value != off && value != on) {
      throw error(errc::invalid_argument, std::string(pass) + ": " + std::string(key) + " must be " + std::string(off) +
                                              " or " + std::string(on));
    }
    flag = value == on;
  }

  /// The option as a pipeline prints it: nothing at the default.
  [[nodiscard]] std::map<std::string, std::string> text(bool flag) const {
    if (!flag) return {};
    return {{std::string(key), std::string(on)}};
  }
};

}  // namespace inferopt::fusion::detail
