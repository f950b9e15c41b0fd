#pragma once
/// Passes and named pipelines by name. A plain value: build one, fill it with the
/// `register_*_passes` functions of the modules you use, and add your own.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "inferopt/pass/pass.hpp"

namespace inferopt {

class pass_registry {
 public:
  using factory = std::function<std::unique_ptr<pass>()>;

  struct entry {
    std::string name;
    std::string description;
    factory make;
  };

  struct named_pipeline {
    std::string name;
    std::string text;
    std::string description;
  };

  /// Registers a pass type by the name its instances report.
  /// @throws error(errc::invalid_argument) when the name is taken.
  template <class Pass>
  void add() {
    auto probe = std::make_unique<Pass>();
    add(std::string(probe->name()), std::string(probe->description()), [] { return std::make_unique<Pass>(); });
  }
  void add(std::string name, std::string description, factory make);

  [[nodiscard]] bool contains(std::string_view name) const;
  /// A fresh instance. @throws error(errc::invalid_argument) for an unknown name, listing the
  /// nearest known names.
  [[nodiscard]] std::unique_ptr<pass> create(std::string_view name) const;
  /// All passes, sorted by name.
  [[nodiscard]] std::vector<const entry*> passes() const;

  /// Registers a pipeline under a name (the -O levels are `O0`..`O3`).
  void add_pipeline(std::string name, std::string text, std::string description);
  [[nodiscard]] const named_pipeline* find_pipeline(std::string_view name) const;
  [[nodiscard]] std::vector<const named_pipeline*> pipelines() const;

  /// Up to `count` registered names closest to `name` by edit distance.
  [[nodiscard]] std::vector<std::string> nearest(std::string_view name, std::size_t count = 3) const;

 private:
  std::map<std::string, entry, std::less<>> passes_;
  std::map<std::string, named_pipeline, std::less<>> pipelines_;
};

}  // namespace inferopt
