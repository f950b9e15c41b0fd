#pragma once
/// The pass interface: one named graph rewrite.

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "inferopt/core/error.hpp"
#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/model.hpp"

namespace inferopt {

/// What a pass sees besides its graph: the model (for opset versions) and the statistics it
/// declares. Statistics are counters by name; `rewrites` is the one every pass reports.
class pass_context {
 public:
  explicit pass_context(const ir::model& m) : model_(m) {}

  [[nodiscard]] const ir::model& model() const noexcept { return model_; }
  /// The default-domain opset the model imports (0 when none is imported).
  [[nodiscard]] std::int64_t onnx_opset() const { return model_.opset("").value_or(0); }

  /// The model's IR version, which decides which initializers are constants (ir/constants.hpp).
  [[nodiscard]] std::int64_t ir_version() const noexcept { return model_.ir_version; }
  /// Whether a value holds constant data a caller cannot replace (see ir::is_constant).
  [[nodiscard]] bool is_constant(const ir::value& v) const noexcept { return ir::is_constant(v, model_.ir_version); }

  /// Counts `n` rewrites (one per match applied).
  void rewrote(std::int64_t n = 1) { rewrites_ += n; }
  /// Adds to a named statistic such as `identities-removed`.
  void count(const std::string& statistic, std::int64_t n = 1) { counters_[statistic] += n; }

  /// Asks for an opset import the rewritten graph needs (`com.microsoft` for contrib ops). The
  /// model reaches a pass only as const, so the pass manager adds the import once the pass
  /// has succeeded, unless the model already imports the domain (a pass that needs a given
  /// version checks `model().opset(domain)` before it rewrites).
  void require_opset(std::string domain, std::int64_t version) {
    for (const ir::opset_import& o : required_opsets_) {
      if (o.domain == domain) return;
    }
    required_opsets_.push_back(ir::opset_import{std::move(domain), version});
  }
  [[nodiscard]] const std::vector<ir::opset_import>& required_opsets() const noexcept { return required_opsets_; }

  [[nodiscard]] std::int64_t rewrites() const noexcept { return rewrites_; }
  [[nodiscard]] const std::map<std::string, std::int64_t>& counters() const noexcept { return counters_; }

 private:
  const ir::model& model_;
  std::int64_t rewrites_ = 0;
  std::map<std::string, std::int64_t> counters_;
  std::vector<ir::opset_import> required_opsets_;  // one entry per domain
};

/// A pass rewrites one graph. The pass manager runs it on the main graph and, unless the
/// pass opts out, on every nested subgraph; it owns timing, verification, printing and
/// rollback, so passes never do those themselves.
///
/// A pass must leave the graph structurally valid (the verifier's rules) and must keep the
/// names of graph outputs. It may throw `inferopt::error`; the manager then restores the
/// graph as it was before the pass.
class pass {
 public:
  virtual ~pass() = default;
  pass(const pass&) = delete;
  pass& operator=(const pass&) = delete;

  /// Stable kebab-case name; also the pipeline and CLI spelling.
  [[nodiscard]] virtual std::string_view name() const noexcept = 0;
  /// One line for `inferopt passes`.
  [[nodiscard]] virtual std::string_view description() const noexcept = 0;
  /// Runs on one graph; returns whether it changed anything.
  virtual bool run(ir::graph& g, pass_context& ctx) = 0;
  /// Whether the manager also runs this pass on subgraphs (If/Loop/Scan bodies).
  [[nodiscard]] virtual bool runs_on_subgraphs() const noexcept { return true; }

  /// Sets an option from a pipeline such as `name{key=value}`. The default knows none.
  /// @throws error(errc::invalid_argument) naming the pass and the key.
  virtual void set_option(std::string_view key, std::string_view value) {
    (void)value;
    throw error(errc::invalid_argument,
                "pass '" + std::string(name()) + "' has no option '" + std::string(key) + "'");
  }
  /// Options as `key=value` pairs, to print a pipeline back as text.
  [[nodiscard]] virtual std::map<std::string, std::string> options() const { return {}; }

 protected:
  pass() = default;
};

}  // namespace inferopt
