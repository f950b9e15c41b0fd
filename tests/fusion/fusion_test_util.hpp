#pragma once
// The numeric oracle every fusion test uses: the model before and after a pass, run by the
// executor on the same seeded random inputs, must agree to float rounding.

#include <cstdint>
#include <string>

#include <catch2/catch.hpp>

#include "inferopt/ir/model.hpp"
#include "inferopt/runtime/compare.hpp"
#include "inferopt/runtime/inputs.hpp"
#include "inferopt/runtime/session.hpp"
#include "pass_test_util.hpp"

namespace inferopt::test {

/// Runs both models on the same random inputs (from `before`'s session) and requires every
/// output to match within `rtol`/`atol`.
inline void require_same_outputs(const ir::model& before, const ir::model& after, std::uint64_t seed = 7,
                                 double rtol = 1e-4, double atol = 1e-5) {
  runtime::session_options options;
  options.threads = 1;
  runtime::session a(before, options);
  runtime::session b(after, options);
  const runtime::tensor_map inputs = runtime::random_inputs(a, seed);
  const runtime::tensor_map out_a = a.run(inputs);
  const runtime::tensor_map out_b = b.run(inputs);
  for (const runtime::output_difference& d : runtime::compare_outputs(a, out_a, b, out_b, rtol, atol)) {
    INFO(d.name << ": max abs " << d.max_abs << ", max rel " << d.max_rel << " " << d.problem);
    CHECK(d.within);
  }
}

}  // namespace inferopt::test
