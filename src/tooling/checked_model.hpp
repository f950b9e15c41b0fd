#pragma once
// Loading a model from outside and preparing one to be written: what every CLI command and the
// Python package do the same way.

#include <filesystem>
#include <string_view>

#include "inferopt/ir/model.hpp"
#include "inferopt/ir/shape_inference.hpp"
#include "inferopt/ir/statistics.hpp"

namespace inferopt::tooling {

/// Loads a model and runs `ir::validate` on it; errors name the file.
ir::model load_checked(const std::filesystem::path& path);
/// Parses serialized model bytes and runs `ir::validate`; validation errors start with `what`
/// (parse errors already say the bytes are not a model).
/// External data, when the model names any, is read relative to `base_dir`.
ir::model parse_checked(std::string_view bytes, std::string_view what, const std::filesystem::path& base_dir = {});
/// Statistics after shape inference on a copy (the model itself is not touched), with the
/// inputs' symbolic dims taken as 1; `shapes`, when given, receives what inference found.
ir::model_statistics statistics_of(const ir::model& m, ir::shape_inference_report* shapes = nullptr);
/// What every model we write gets first: complete value_info inferred afresh after our edits,
/// and omitted optional inputs trimmed.
void prepare_for_writing(ir::model& m);

}  // namespace inferopt::tooling
