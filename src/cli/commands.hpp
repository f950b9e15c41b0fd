#pragma once
// The CLI's subcommands. Each `add_*` registers its options on the app and returns the
// function to run when the subcommand is chosen.

#include <filesystem>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "inferopt/ir/model.hpp"
#include "inferopt/ir/serialize.hpp"
#include "inferopt/ir/shape_inference.hpp"
#include "inferopt/ir/statistics.hpp"
#include "inferopt/runtime/compare.hpp"
#include "inferopt/runtime/session.hpp"
#include "tooling/checked_model.hpp"
#include "tooling/model_steps.hpp"
#include "tooling/result_json.hpp"

namespace inferopt::cli {

using tooling::load_checked;
using tooling::statistics_of;
using tooling::to_json;

/// A subcommand and what runs when it is chosen.
struct command {
  CLI::App* sub = nullptr;
  std::function<int()> run;
};

/// A subcommand whose options live in one `Options` value: `declare` binds them to the
/// subcommand and `run` runs with them. CLI11 writes into the value while parsing, after
/// this returns, so the run function shares it.
template <class Options>
command make_command(CLI::App& app, const std::string& name, const std::string& description,
                     void (*declare)(CLI::App&, Options&), int (*run)(const Options&)) {
  CLI::App* sub = app.add_subcommand(name, description);
  auto options = std::make_shared<Options>();
  declare(*sub, *options);
  return {sub, [options, run] { return run(*options); }};
}

/// The positional input model and the required `-o,--output` of a command that writes one.
void add_model_and_output(CLI::App& sub, std::string& input, std::string& output,
                          const std::string& input_help = "Input ONNX model",
                          const std::string& output_help = "Output ONNX model");

command add_inspect(CLI::App& app);
command add_optimize(CLI::App& app);
command add_passes(CLI::App& app);
command add_fp16(CLI::App& app);
command add_quantize(CLI::App& app);
command add_run(CLI::App& app);
command add_bench(CLI::App& app);
command add_compare(CLI::App& app);
command add_plan(CLI::App& app);
command add_sparsify(CLI::App& app);
command add_prune(CLI::App& app);
command add_convert(CLI::App& app);
command add_tokenize(CLI::App& app);
command add_serve(CLI::App& app);
command add_loadgen(CLI::App& app);

/// Calibration or validation batches from a folder: each subfolder in the ONNX test-data
/// layout (input_0.pb, ...) is one batch; without subfolders, each .pb file is one batch for
/// the model's first required input. Sorted by name.
std::vector<runtime::tensor_map> batches_from_dir(const runtime::session& s, const std::filesystem::path& dir);
/// Calibration batches of a text encoder: the sentences of `text` (one per line) tokenized by
/// the WordPiece `tokenizer` JSON, at `seq_len` where the sequence is symbolic (0: each batch
/// at its longest sentence).
std::vector<runtime::tensor_map> text_batches(const runtime::session& s, const std::string& text, const std::string& tokenizer,
                                              std::size_t seq_len);

/// Whether `output` is the existing file `input`, through whatever path.
bool is_same_file(const std::filesystem::path& input, const std::filesystem::path& output);
/// @throws error(errc::invalid_argument) `OUTPUT: output would overwrite the input` when
///         `is_same_file(input, output)`.
void refuse_overwrite(const std::filesystem::path& input, const std::filesystem::path& output);
/// Opens every non-empty path for writing and lets it go, so that a command fails on an
/// unwritable output before it spends time on the model. @throws error(errc::io).
void probe_writable(std::initializer_list<std::filesystem::path> paths);
/// Writes `report` as indented JSON (atomically) when `path` is not empty.
void write_report(const std::filesystem::path& path, const nlohmann::json& report);

/// Infers shapes afresh (complete value_info, unless `options` asks for the input's entries
/// only), saves the model atomically, as `ir::save_model` does, and prints `wrote PATH (SIZE)`.
void save_and_announce(ir::model& m, const std::filesystem::path& path, const ir::save_options& options = {});
/// `12.3 MB`, `4.0 KB`.
std::string human_bytes(std::int64_t bytes);
/// A progress bar on stderr when it is a terminal (nothing otherwise).
void print_progress(std::int64_t done, std::int64_t total);
/// Prints one row per output (max abs, max rel, verdict) and a summary line; returns
/// whether every output is within tolerance.
bool print_differences(const std::vector<runtime::output_difference>& diffs, double rtol, double atol);
/// `1.23 G`, `45.6 M`.
std::string human_count(std::int64_t n);

}  // namespace inferopt::cli
