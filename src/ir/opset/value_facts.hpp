#pragma once
// What the converter knows of values it did not make: their recorded types, the dims of
// initializers, and the types shape inference finds on a copy of the model. The copy's
// types stay here; the converted model gets none of them written into it.

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "inferopt/ir/model.hpp"

namespace inferopt::ir::opset {

class value_facts {
 public:
  /// Runs shape inference on a copy of `m` and keeps what it finds for the values of `m`'s
  /// graphs. Inference that is skipped or fails leaves only the recorded types.
  explicit value_facts(const model& m);

  /// The best type known for `v`: its own when it has a rank, else the inferred one.
  [[nodiscard]] std::optional<value_type> type(const value* v) const;
  [[nodiscard]] std::optional<std::size_t> rank(const value* v) const;
  /// Every dim, when all are known numbers.
  [[nodiscard]] std::optional<std::vector<std::int64_t>> dims(const value* v) const;
  [[nodiscard]] data_type elem_type(const value* v) const;

 private:
  void take(const graph& ours, const graph& inferred);

  // Keyed by graph and value name rather than by value: an adapter that rebuilds a node
  // gives its outputs new value objects under the old names, and they keep their facts.
  std::unordered_map<const graph*, std::unordered_map<std::string, value_type>> inferred_;
};

}  // namespace inferopt::ir::opset
