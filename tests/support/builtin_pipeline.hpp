#pragma once
// Running pipeline text over every built-in pass, with verify_each, as the CLI does: for the
// tests of modules with passes (fusion, quant, sparse), which link inferopt::builtin.

#include <string_view>

#include "inferopt/builtin.hpp"
#include "pass/pass_test_util.hpp"

namespace inferopt::test {

/// Runs one built-in pass (or pipeline text over built-in passes) with verify_each.
inline run_report run_builtin(ir::model& m, std::string_view text) {
  static const pass_registry registry = builtin_registry();
  return run_pipeline(m, text, registry);
}

}  // namespace inferopt::test
