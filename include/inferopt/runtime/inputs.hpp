#pragma once
/// Feeds for a session: seeded random tensors, or TensorProto files from a folder.

#include <cstdint>
#include <string>
#include <vector>

#include "inferopt/runtime/session.hpp"

namespace inferopt::runtime {

/// One tensor per required input: float types uniform in [-1, 1), integers in [0, 8), bools
/// fair coins; symbolic dims are taken as 1. The same seed gives the same tensors.
[[nodiscard]] tensor_map random_inputs(const session& s, std::uint64_t seed);

/// The same for a list of inputs described without a session (a served model's metadata).
[[nodiscard]] tensor_map random_inputs(const std::vector<io_info>& inputs, std::uint64_t seed);

/// Reads `input_0.pb`, `input_1.pb`, ... (ONNX test-data layout) and maps them to the required
/// inputs in order; a file whose TensorProto name matches an input goes to that input.
/// @throws error(errc::io / invalid_model / invalid_argument).
[[nodiscard]] tensor_map inputs_from_dir(const session& s, const std::string& dir);

}  // namespace inferopt::runtime
