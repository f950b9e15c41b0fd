#pragma once
/// A model: the main graph plus the metadata around it.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "inferopt/ir/graph.hpp"

namespace inferopt::ir {

/// The name a node calls a model-local function by.
struct function_id {
  std::string domain;
  std::string name;
  friend bool operator==(const function_id&, const function_id&) = default;
};

struct opset_import {
  std::string domain;  ///< "" is the default ONNX domain
  std::int64_t version = 0;
  friend bool operator==(const opset_import&, const opset_import&) = default;
};

/// A model owns its main graph. What we do not model (model-local functions, training info,
/// fields newer than our protobuf schema) is kept verbatim and written back on save.
class model {
 public:
  model() : graph_(std::make_unique<ir::graph>()) {}
  model(model&&) noexcept = default;
  model& operator=(model&&) noexcept = default;

  std::int64_t ir_version = 8;
  std::vector<opset_import> opsets;
  std::string producer_name;
  std::string producer_version;
  std::string domain;
  std::int64_t model_version = 0;
  std::string doc_string;
  std::vector<std::pair<std::string, std::string>> metadata;

  /// A deep copy: the graph (subgraphs included), the metadata and everything kept verbatim
  /// (model-local functions, unmodelled fields). Tensors share their immutable bytes with
  /// this model, so the copy is cheap and editing either model leaves the other as it was.
  /// Serializing the copy gives the same bytes as serializing this model.
  [[nodiscard]] model clone() const {
    model copy;
    copy.ir_version = ir_version;
    copy.opsets = opsets;
    copy.producer_name = producer_name;
    copy.producer_version = producer_version;
    copy.domain = domain;
    copy.model_version = model_version;
    copy.doc_string = doc_string;
    copy.metadata = metadata;
    copy.graph_ = graph_->clone();
    copy.local_functions_ = local_functions_;
    copy.residual_ = residual_;
    return copy;
  }

  [[nodiscard]] ir::graph& graph() noexcept { return *graph_; }
  [[nodiscard]] const ir::graph& graph() const noexcept { return *graph_; }
  /// Swaps in another main graph (used to roll back a failed pass).
  void replace_graph(std::unique_ptr<ir::graph> g) { graph_ = std::move(g); }
  [[nodiscard]] std::unique_ptr<ir::graph> release_graph() { return std::exchange(graph_, std::make_unique<ir::graph>()); }

  /// The opset version imported for a domain ("" and "ai.onnx" are the same), if any.
  [[nodiscard]] std::optional<std::int64_t> opset(std::string_view domain_name) const {
    auto is_default = [](std::string_view d) { return d.empty() || d == "ai.onnx"; };
    for (const opset_import& o : opsets) {
      if (o.domain == domain_name || (is_default(o.domain) && is_default(domain_name))) return o.version;
    }
    return std::nullopt;
  }
  /// Model-local functions, kept opaque: their bodies stay in the residual, their names are
  /// here so that a node calling one is known for what it is.
  [[nodiscard]] std::size_t function_count() const noexcept { return local_functions_.size(); }
  [[nodiscard]] bool has_local_function(std::string_view domain_name, std::string_view name) const {
    for (const function_id& f : local_functions_) {
      if (f.domain == domain_name && f.name == name) return true;
    }
    return false;
  }

 private:
  friend struct graph_access;
  std::unique_ptr<ir::graph> graph_;
  std::vector<function_id> local_functions_;
  std::string residual_;  // serialized ModelProto minus the graph and the modelled fields
};

}  // namespace inferopt::ir
