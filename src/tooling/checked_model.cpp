// Checked loading and preparing models for writing (checked_model.hpp).

#include "checked_model.hpp"

#include "inferopt/core/error.hpp"
#include "inferopt/ir/rewriting.hpp"
#include "inferopt/ir/serialize.hpp"
#include "inferopt/ir/validate.hpp"

namespace inferopt::tooling {
namespace {

ir::model validated(ir::model m, std::string_view what) {
  try {
    ir::validate(m);
  } catch (const error& e) {
    throw error(e.code(), std::string(what) + ": " + e.what());
  }
  return m;
}

}  // namespace

ir::model load_checked(const std::filesystem::path& path) {
  return validated(ir::load_model(path), path.filename().string());
}

ir::model parse_checked(std::string_view bytes, std::string_view what, const std::filesystem::path& base_dir) {
  return validated(ir::parse_model(bytes, base_dir), what);
}

ir::model_statistics statistics_of(const ir::model& m, ir::shape_inference_report* shapes) {
  ir::model copy = m.clone();
  // MACs need numbers: symbolic dims of the inputs count as 1 (one sample, one token).
  ir::shape_inference_options options;
  for (const std::string& name : ir::symbolic_input_dims(copy.graph())) options.dim_values.emplace(name, 1);
  const ir::shape_inference_report report = ir::infer_shapes(copy, options);
  if (shapes) *shapes = report;
  return ir::compute_statistics(copy);
}

void prepare_for_writing(ir::model& m) {
  ir::shape_inference_options refresh;
  refresh.declared = ir::shape_inference_options::declared_types::refresh;
  (void)ir::infer_shapes(m, refresh);
  ir::trim_omitted_inputs(m.graph());
}

}  // namespace inferopt::tooling
