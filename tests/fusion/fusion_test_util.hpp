#pragma once
// The numeric oracle every fusion test uses: the model before and after a pass, run by the
// executor on the same seeded random inputs, must agree to float rounding.

#include <cstdint>
#include <string>
#include <string_view>

#include <catch2/catch.hpp>

#include "inferopt/ir/model.hpp"
#include "inferopt/ir/serialize.hpp"
#include "inferopt/ir/verify.hpp"
#include "inferopt/runtime/compare.hpp"
#include "inferopt/runtime/inputs.hpp"
#include "inferopt/runtime/session.hpp"
#include "pass_test_util.hpp"
#include "support/builtin_pipeline.hpp"

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

/// A copy made through the serializer: what the model was before a pass edits it.
inline ir::model copy_of(const ir::model& m) { return ir::parse_model(bytes_of(m)); }

/// One pass (or pipeline text) run the way its tests check it: with verify_each and the
/// structural verifier afterwards.
class pass_checker {
 public:
  explicit pass_checker(std::string pipeline) : pipeline_(std::move(pipeline)) {}

  [[nodiscard]] pass_record run(ir::model& m) const {
    run_report r = run_builtin(m, pipeline_);
    CHECK(ir::find_problems(m.graph()).empty());
    REQUIRE(r.passes.size() == 1);
    return r.passes[0];
  }

  /// Requires a change, the same outputs as before, and that a second run changes nothing.
  pass_record run_and_compare(ir::model& m) const {
    const ir::model before = copy_of(m);
    pass_record r = run(m);
    CHECK(r.changed);
    require_same_outputs(before, m);
    const std::string once = bytes_of(m);
    CHECK_FALSE(run(m).changed);
    CHECK(bytes_of(m) == once);
    return r;
  }

  /// Requires that the pass declines: no rewrites and the model's bytes unchanged.
  pass_record require_declined(ir::model& m) const {
    const std::string before = bytes_of(m);
    pass_record r = run(m);
    CHECK_FALSE(r.changed);
    CHECK(r.rewrites == 0);
    CHECK(bytes_of(m) == before);
    return r;
  }

 private:
  std::string pipeline_;
};

/// Live nodes of `m`'s main graph with this op type, in any domain (the fused com.microsoft
/// ops too, which `count_ops` leaves out).
inline std::size_t count_op_type(const ir::model& m, std::string_view op) {
  std::size_t n = 0;
  for (const ir::node* node : m.graph().nodes()) n += node->op_type() == op ? 1 : 0;
  return n;
}

/// The one node a fused model is left with.
inline const ir::node& only_node(const ir::model& m) {
  REQUIRE(m.graph().node_count() == 1);
  return **m.graph().nodes().begin();
}

}  // namespace inferopt::test
