#pragma once
// Helpers shared by the pass tests: catching our error type, running a pipeline the way the
// CLI does (verify_each on), small graphs, and tiny test passes for the manager and parser.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "inferopt/core/error.hpp"
#include "inferopt/ir/graph.hpp"
#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/ir/model.hpp"
#include "inferopt/ir/serialize.hpp"
#include "inferopt/ir/verify.hpp"
#include "inferopt/pass/pass.hpp"
#include "inferopt/pass/pass_manager.hpp"
#include "inferopt/pass/pipeline.hpp"
#include "inferopt/pass/register.hpp"

namespace inferopt::test {

/// The pass module's own passes (the cleanups): what the pass tests may use, since they link
/// only inferopt::pass.
inline pass_registry cleanup_registry() {
  pass_registry r;
  register_cleanup_passes(r);
  return r;
}

/// The cleanups to a fixpoint, as -O1 runs them.
inline pipeline cleanup_fixpoint(const pass_registry& r) {
  return parse_pipeline("fixpoint(fold-constants,eliminate-identity,eliminate-dropout,dce,remove-unused)", r);
}

/// The `inferopt::error` that `f` throws, or nullopt when it returns normally. Any other
/// exception escapes, failing the test that called it.
template <class F>
std::optional<inferopt::error> error_from(F&& f) {
  try {
    f();
  } catch (const inferopt::error& e) {
    return e;
  }
  return std::nullopt;
}

/// The model as the bytes `save_model` would write: the "graph unchanged" oracle.
inline std::string bytes_of(const ir::model& m) { return ir::serialize_model(m); }

/// Parses `text` against `registry` and runs it with structural verification after every
/// pass, as `inferopt optimize --verify-each` does.
inline run_report run_pipeline(ir::model& m, std::string_view text, const pass_registry& registry) {
  pipeline p = parse_pipeline(text, registry);
  pass_manager manager;
  manager.add_instrumentation(std::make_unique<verify_each>());
  return manager.run(p, m);
}

/// Runs one cleanup pass (or pipeline text over the cleanups) with verify_each.
inline run_report run_cleanups(ir::model& m, std::string_view text) {
  static const pass_registry registry = cleanup_registry();
  return run_pipeline(m, text, registry);
}

/// Live nodes of `g` (not its subgraphs) with this default-domain op type.
inline std::size_t count_ops(const ir::graph& g, std::string_view op) {
  std::size_t n = 0;
  for (ir::node* x : g.nodes()) n += x->is(op) ? 1 : 0;
  return n;
}

/// Like `count_ops`, over `g` and every nested subgraph.
inline std::size_t count_ops_recursive(const ir::graph& g, std::string_view op) {
  std::size_t n = count_ops(g, op);
  for (ir::node* x : g.nodes()) {
    for (ir::graph* sub : x->subgraphs()) n += count_ops_recursive(*sub, op);
  }
  return n;
}

/// Names of the graph outputs, in order.
inline std::vector<std::string> output_names(const ir::graph& g) {
  std::vector<std::string> out;
  for (ir::value* v : g.outputs()) out.push_back(v->name());
  return out;
}

/// A float tensor type of the given static dims.
inline ir::value_type float_type(std::vector<std::int64_t> dims) {
  return ir::value_type{true, ir::data_type::float32, ir::shape(dims.begin(), dims.end())};
}

/// Adds `op(inputs)` named `name` with one output `name + "_out"` (or the given outputs).
inline ir::node* add_op(ir::graph& g, const std::string& op, std::vector<ir::value*> inputs, const std::string& name,
                        std::vector<std::string> outputs = {}, std::vector<ir::attribute> attributes = {},
                        std::string domain = {}) {
  if (outputs.empty()) outputs.push_back(name + "_out");
  return g.add_node(
      ir::node_spec{op, std::move(inputs), std::move(outputs), std::move(attributes), name, std::move(domain)});
}

/// A graph-valued attribute (If's then_branch / else_branch).
inline ir::attribute graph_attribute(std::string name, std::unique_ptr<ir::graph> g) {
  ir::attribute a;
  a.name = std::move(name);
  a.kind = ir::attribute_kind::g;
  a.graphs.push_back(std::move(g));
  return a;
}

/// A scalar boolean initializer.
inline ir::tensor bool_scalar(bool v) {
  ir::tensor t;
  t.dtype = ir::data_type::boolean;
  t.bytes = std::make_shared<const std::string>(1, v ? '\1' : '\0');
  return t;
}

/// Adds `name = If(cond)` whose branches both hold debris Identity nodes:
///   then: `name_then_id = Identity(outer)`, `name_then_out = Neg(name_then_id)`;
///   else: `name_else_neg = Neg(outer)`, `name_else_out = Identity(name_else_neg)`.
/// The branch graphs are filled after they are attached to the If node, so their parent
/// pointers are set while their nodes are added.
inline ir::node* add_if_with_identities(ir::graph& g, ir::value* cond, ir::value* outer, const std::string& name) {
  std::vector<ir::attribute> attrs;
  attrs.push_back(graph_attribute("then_branch", std::make_unique<ir::graph>(name + "_then")));
  attrs.push_back(graph_attribute("else_branch", std::make_unique<ir::graph>(name + "_else")));
  ir::node* n = g.add_node(ir::node_spec{"If", {cond}, {name + "_out"}, std::move(attrs), name, {}});
  std::vector<ir::graph*> branches = n->subgraphs();
  ir::graph& then_g = *branches.at(0);
  ir::node* then_id = add_op(then_g, "Identity", {outer}, name + "_then_identity", {name + "_then_id"});
  ir::node* then_neg = add_op(then_g, "Neg", {then_id->output(0)}, name + "_then_neg", {name + "_then_out"});
  then_g.add_output(then_neg->output(0));
  ir::graph& else_g = *branches.at(1);
  ir::node* else_neg = add_op(else_g, "Neg", {outer}, name + "_else_neg", {name + "_else_neg"});
  ir::node* else_id = add_op(else_g, "Identity", {else_neg->output(0)}, name + "_else_identity", {name + "_else_out"});
  else_g.add_output(else_id->output(0));
  return n;
}

// ---- test passes ------------------------------------------------------------------------

/// Changes nothing, but remembers options: `times` (an integer) and `label` (any text).
class option_pass final : public pass {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "test-options"; }
  [[nodiscard]] std::string_view description() const noexcept override { return "records its options"; }
  bool run(ir::graph&, pass_context&) override { return false; }
  void set_option(std::string_view key, std::string_view value) override {
    if (key == "times") {
      try {
        times = std::stoi(std::string(value));
      } catch (const std::exception&) {
        throw error(errc::invalid_argument, "pass 'test-options': times must be an integer, got '" + std::string(value) + "'");
      }
    } else if (key == "label") {
      label = std::string(value);
    } else {
      pass::set_option(key, value);
    }
  }
  [[nodiscard]] std::map<std::string, std::string> options() const override {
    std::map<std::string, std::string> out;
    if (times) out["times"] = std::to_string(*times);
    if (label) out["label"] = *label;
    return out;
  }

  std::optional<int> times;
  std::optional<std::string> label;
};

/// Reports a change on each of its first `times` runs (default 1), changing nothing; counts
/// one rewrite and one `runs` statistic per run.
class changes_n_times final : public pass {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "test-changes"; }
  [[nodiscard]] std::string_view description() const noexcept override { return "reports a change n times"; }
  bool run(ir::graph& g, pass_context& ctx) override {
    if (g.parent() != nullptr) return false;  // count main-graph runs only
    ctx.count("runs");
    if (seen_ >= times_) return false;
    ++seen_;
    ctx.rewrote();
    return true;
  }
  void set_option(std::string_view key, std::string_view value) override {
    if (key != "times") return pass::set_option(key, value);
    times_ = std::stoi(std::string(value));
  }
  [[nodiscard]] std::map<std::string, std::string> options() const override {
    return {{"times", std::to_string(times_)}};
  }

 private:
  int times_ = 1;
  int seen_ = 0;
};

/// Reports a change on every run: a fixpoint holding it only stops at its cap.
class always_changes final : public pass {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "test-always-changes"; }
  [[nodiscard]] std::string_view description() const noexcept override { return "always reports a change"; }
  bool run(ir::graph&, pass_context&) override { return true; }
};

/// Edits the graph half way (appends a node, renames every node and the first graph output),
/// then throws: the manager must restore the graph exactly.
class throwing_pass final : public pass {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "test-throws"; }
  [[nodiscard]] std::string_view description() const noexcept override { return "edits the graph, then throws"; }
  bool run(ir::graph& g, pass_context&) override {
    if (!g.inputs().empty()) add_op(g, "Neg", {g.inputs().front()}, "half_done");
    for (ir::node* n : g.node_list()) n->set_name("renamed_" + n->name());
    if (!g.outputs().empty() && g.outputs().front()->origin() == ir::value_origin::node_output) {
      g.rename(g.outputs().front(), "clobbered");
    }
    throw error(errc::unsupported, "gave up half way");
  }
};

/// Like throwing_pass, but throws a standard exception that is not an inferopt::error.
class std_throwing_pass final : public pass {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "test-throws-std"; }
  [[nodiscard]] std::string_view description() const noexcept override { return "throws std::out_of_range"; }
  bool run(ir::graph& g, pass_context&) override {
    for (ir::node* n : g.node_list()) n->set_name("renamed_" + n->name());
    throw std::out_of_range("index 7 out of range");
  }
};

/// Breaks topological order: moves the last node of the main graph before the first one,
/// so (in any graph with a chain) a node runs before the producer of its input.
class breaking_pass final : public pass {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "test-breaks-order"; }
  [[nodiscard]] std::string_view description() const noexcept override { return "moves a node before its producer"; }
  [[nodiscard]] bool runs_on_subgraphs() const noexcept override { return false; }
  bool run(ir::graph& g, pass_context&) override {
    std::vector<ir::node*> nodes = g.node_list();
    if (nodes.size() < 2) return false;
    g.move_before(nodes.back(), nodes.front());
    return true;
  }
};

/// Records the name of every graph it runs on, in order, into a list the test owns.
class graph_recorder final : public pass {
 public:
  explicit graph_recorder(std::vector<std::string>* seen = nullptr, bool subgraphs = true)
      : seen_(seen), subgraphs_(subgraphs) {}
  [[nodiscard]] std::string_view name() const noexcept override {
    return subgraphs_ ? "test-record-graphs" : "test-record-main-graph";
  }
  [[nodiscard]] std::string_view description() const noexcept override { return "records the graphs it sees"; }
  [[nodiscard]] bool runs_on_subgraphs() const noexcept override { return subgraphs_; }
  bool run(ir::graph& g, pass_context&) override {
    if (seen_) seen_->push_back(g.name());
    return false;
  }

 private:
  std::vector<std::string>* seen_;
  bool subgraphs_;
};

/// The pass module's own passes plus the test passes above (the recorders record nowhere).
inline pass_registry test_registry() {
  pass_registry r = cleanup_registry();
  r.add<option_pass>();
  r.add<changes_n_times>();
  r.add<always_changes>();
  r.add<throwing_pass>();
  r.add<std_throwing_pass>();
  r.add<breaking_pass>();
  return r;
}

}  // namespace inferopt::test
