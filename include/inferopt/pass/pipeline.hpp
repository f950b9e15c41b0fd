#pragma once
/// Pipelines: ordered passes and fixpoint groups, parsed from text such as
/// `dce,fuse-conv-bn{eps=1e-5},fixpoint{max-iterations=4}(eliminate-identity,dce)`.

#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "inferopt/pass/registry.hpp"

namespace inferopt {

/// One step: a pass, or a group repeated until no member changes the graph.
struct pipeline_step {
  std::unique_ptr<pass> single;        ///< set for a pass step
  std::vector<pipeline_step> group;    ///< members of a fixpoint group
  int max_iterations = 8;              ///< cap for a fixpoint group

  [[nodiscard]] bool is_fixpoint() const noexcept { return single == nullptr; }
};

class pipeline {
 public:
  std::vector<pipeline_step> steps;

  /// The pipeline as text that `parse_pipeline` reads back to the same pipeline.
  [[nodiscard]] std::string to_string() const;
  /// Number of pass steps, counting group members once.
  [[nodiscard]] std::size_t pass_count() const;
};

/// Steps as pipeline text.
[[nodiscard]] std::string to_string(const std::vector<pipeline_step>& steps);
/// One step as pipeline text (a fixpoint group with its options).
[[nodiscard]] std::string to_string(const pipeline_step& step);

struct pipeline_parse_options {
  /// Passes to leave out wherever they appear (`--disable-pass`).
  std::set<std::string, std::less<>> disabled;
};

/// Parses pipeline text. @throws error(errc::invalid_argument) for syntax errors (with the
/// column), unknown passes (with the nearest known names) and bad options.
[[nodiscard]] pipeline parse_pipeline(std::string_view text, const pass_registry& registry,
                                      const pipeline_parse_options& options = {});

/// The pipeline registered for an optimization level 0..3 (`O0`..`O3`).
[[nodiscard]] pipeline level_pipeline(int level, const pass_registry& registry,
                                      const pipeline_parse_options& options = {});

}  // namespace inferopt
