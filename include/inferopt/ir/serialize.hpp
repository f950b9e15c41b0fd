#pragma once
/// Loading and saving ONNX files. Protobuf never appears in this header.

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "inferopt/ir/model.hpp"

namespace inferopt::ir {

struct load_options {
  /// Read tensors stored in external files (relative to the model's folder).
  bool load_external_data = true;
};

/// Reads an ONNX model file.
/// @throws error(errc::io) when the file cannot be read; error(errc::invalid_model) when it is
///         empty, not a protobuf ModelProto, truncated, has no graph, defines a value twice,
///         has a cycle, holds tensors whose data does not match their dims, or names
///         external data outside the model's folder.
/// Graphs stored out of topological order are sorted.
[[nodiscard]] model load_model(const std::filesystem::path& path, const load_options& options = {});

/// Parses a serialized ModelProto. External data, if any, is resolved against `base_dir`;
/// with an empty `base_dir` a model with external data is refused.
[[nodiscard]] model parse_model(std::string_view bytes, const std::filesystem::path& base_dir = {},
                                const load_options& options = {});

/// Which intermediate values the saved `GraphProto.value_info` types.
enum class value_info_policy {
  /// Every value whose type is known, inferred ones included (what tools that read shapes
  /// from the file want).
  every_known_type,
  /// Only the values the loaded file listed, with their types as they are now. Types
  /// inferred in between change what onnxruntime fuses: knowing the dims of a residual Add
  /// lets it fuse Add + LayerNormalization into SkipLayerNormalization, whose CPU kernel is
  /// slower (all-MiniLM-L6-v2 at 1 thread: 26.5 ms against 24.0, docs/BENCHMARKS.md).
  as_loaded,
};

struct save_options {
  /// Tensors of at least this many bytes go to an external data file. When unset, weights
  /// are written inline unless the model would pass protobuf's 2 GB limit, in which case
  /// tensors of 1 KiB and more are written externally.
  std::optional<std::size_t> external_data_threshold;
  /// File name (in the output's folder) for external data; default `<output name>.data`.
  std::string external_data_file;
  value_info_policy value_info = value_info_policy::every_known_type;
};

/// Writes the model. The file (and its external data file) is first written under a
/// temporary name in the same folder and renamed into place, so a failure never leaves a
/// partial output. @throws error(errc::io) when the folder is not writable.
void save_model(const model& m, const std::filesystem::path& path, const save_options& options = {});

/// Serializes to bytes with every tensor inline. @throws error when over protobuf's limit.
[[nodiscard]] std::string serialize_model(const model& m);

/// Re-serializes ModelProto bytes deterministically, so two files holding equal messages
/// compare equal byte for byte (the canonical comparison used by round-trip tests).
[[nodiscard]] std::string canonicalize_model_bytes(std::string_view bytes);

/// Parses a serialized TensorProto (the `.pb` files of ONNX test data). External data is
/// refused. @throws error(errc::invalid_model).
[[nodiscard]] tensor parse_tensor(std::string_view bytes);
/// Serializes a tensor as a TensorProto with raw data.
[[nodiscard]] std::string serialize_tensor(const tensor& t);

/// True when GraphProto.value_info had entries naming no value of the graph (kept verbatim).
[[nodiscard]] bool has_stray_value_info(const graph& g);
/// Drops those entries; returns how many went.
std::size_t drop_stray_value_info(graph& g);

}  // namespace inferopt::ir
