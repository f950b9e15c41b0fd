#pragma once
// Helpers shared by the opset-conversion tests: small models at a given opset, converting a
// copy, running two models on the same seeded inputs in the executor, and node lookups.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "inferopt/core/error.hpp"
#include "inferopt/ir/convert_opset.hpp"
#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/ir/serialize.hpp"
#include "inferopt/ir/verify.hpp"
#include "inferopt/runtime/inputs.hpp"
#include "inferopt/runtime/session.hpp"

namespace inferopt::test {

/// A model at one opset, filled node by node; node k is named `op_k`, its outputs `op_k_i`.
class opset_model {
 public:
  explicit opset_model(std::int64_t opset) : m(ir::make_model("opset_test", opset)) {}

  ir::value* input(const std::string& name, std::vector<std::int64_t> dims, ir::data_type type = ir::data_type::float32) {
    return m.graph().add_input(name, ir::value_type{true, type, ir::shape(dims.begin(), dims.end())});
  }
  ir::value* ints(const std::string& name, const std::vector<std::int64_t>& values) {
    return m.graph().add_initializer(
        name, ir::tensor::from_values<std::int64_t>(name, {static_cast<std::int64_t>(values.size())}, values));
  }
  ir::value* floats(const std::string& name, std::vector<std::int64_t> dims, const std::vector<float>& values) {
    return m.graph().add_initializer(name, ir::tensor::from_values<float>(name, std::move(dims), values));
  }
  ir::node* node(const std::string& op, std::vector<ir::value*> inputs, std::vector<ir::attribute> attributes = {},
                 std::size_t outputs = 1) {
    const std::string name = op + "_" + std::to_string(count_++);
    ir::node_spec spec{op, std::move(inputs), {}, std::move(attributes), name, {}};
    for (std::size_t i = 0; i < outputs; ++i) spec.outputs.push_back(name + "_" + std::to_string(i));
    return m.graph().add_node(std::move(spec));
  }
  /// `node(...)->output(0)`, made a graph output.
  ir::value* output_of(ir::node* n) {
    m.graph().add_output(n->output(0));
    return n->output(0);
  }

  ir::model m;

 private:
  std::size_t count_ = 0;
};

/// A converted copy of `m`; `report` receives what the conversion did.
inline ir::model converted(const ir::model& m, std::int64_t opset, ir::opset_conversion_report* report = nullptr) {
  ir::model copy = m.clone();
  const ir::opset_conversion_report r = ir::convert_opset(copy, opset);
  if (report) *report = r;
  ir::verify(copy.graph());
  return copy;
}

/// The largest |a - b| over every output, both models run on the same seeded random inputs.
inline double max_difference(const ir::model& a, const ir::model& b, std::uint64_t seed = 7) {
  runtime::session sa(a, {.threads = 1});
  runtime::session sb(b, {.threads = 1});
  const runtime::tensor_map feeds = runtime::random_inputs(sa, seed);
  const runtime::tensor_map ya = sa.run(feeds);
  const runtime::tensor_map yb = sb.run(feeds);
  expects(ya.size() == yb.size(), "the models have different outputs");
  double worst = 0.0;
  for (const auto& [name, t] : ya) {
    const std::vector<float> x = t.to_float();
    const std::vector<float> y = yb.at(name).to_float();
    expects(x.size() == y.size(), "an output changed size");
    for (std::size_t k = 0; k < x.size(); ++k) worst = std::max(worst, std::fabs(static_cast<double>(x[k]) - y[k]));
  }
  return worst;
}

/// Live nodes of `g` with this default-domain op.
inline std::size_t count(const ir::graph& g, std::string_view op) {
  std::size_t n = 0;
  for (const ir::node* x : g.nodes()) n += x->is(op) ? 1 : 0;
  return n;
}

/// The first live node of `g` with this op (null when none).
inline ir::node* first(const ir::graph& g, std::string_view op) {
  for (ir::node* n : g.nodes()) {
    if (n->is(op)) return n;
  }
  return nullptr;
}

/// The message of the error converting a copy of `m` to `opset` throws; nullopt when none.
inline std::optional<std::string> conversion_error(const ir::model& m, std::int64_t opset) {
  ir::model copy = m.clone();
  try {
    (void)ir::convert_opset(copy, opset);
  } catch (const inferopt::error& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

/// Whether both models' graph outputs have the same names, in order.
inline bool output_names_equal(const ir::model& a, const ir::model& b) {
  if (a.graph().outputs().size() != b.graph().outputs().size()) return false;
  for (std::size_t i = 0; i < a.graph().outputs().size(); ++i) {
    if (a.graph().outputs()[i]->name() != b.graph().outputs()[i]->name()) return false;
  }
  return true;
}

/// The error `convert_opset(m, opset)` throws, or nullopt.
inline std::optional<inferopt::error> error_from_convert(ir::model& m, std::int64_t opset) {
  try {
    (void)ir::convert_opset(m, opset);
  } catch (const inferopt::error& e) {
    return e;
  }
  return std::nullopt;
}

/// The constant int64 values a node reads at input `index`.
inline std::vector<std::int64_t> ints_at(const ir::node* n, std::size_t index) {
  const ir::value* v = n->input(index);
  expects(v && v->initializer(), "the input is not an initializer");
  return v->initializer()->values<std::int64_t>();
}

}  // namespace inferopt::test
