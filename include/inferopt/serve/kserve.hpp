#pragma once
/// The KServe v2 (Open Inference Protocol) messages, between bytes and tensors: model metadata,
/// inference requests and responses in JSON, and the binary tensor extension, where the JSON
/// header is followed by the tensors' raw bytes (`Inference-Header-Content-Length` gives the
/// header's length; an input's `parameters.binary_data_size` its bytes). Requests come from
/// strangers: every field is checked against the model, and what is wrong is named in one
/// line (error, errc::invalid_argument) for a 400.

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "inferopt/runtime/session.hpp"

namespace inferopt::serve {

/// A served model as the protocol describes it.
struct model_signature {
  std::string name;
  std::vector<runtime::io_info> inputs, outputs;
};

/// The protocol's datatype name of an element type ("FP32"), or empty for types it lacks.
[[nodiscard]] std::string_view kserve_datatype(ir::data_type type) noexcept;
/// The element type of a datatype name, or nothing for names it does not support (BYTES).
[[nodiscard]] std::optional<ir::data_type> kserve_element_type(std::string_view datatype) noexcept;

/// `GET /v2/models/NAME`: name, versions, platform, and the inputs' and outputs' datatypes and
/// shapes (-1 for a symbolic dim).
[[nodiscard]] std::string model_metadata_json(const model_signature& model);

struct decoded_request {
  std::string id;                           ///< echoed in the response
  runtime::tensor_map inputs;
  std::vector<std::string> outputs;         ///< requested, in order; empty: all of the model's
  std::vector<bool> binary;                 ///< per requested output (or per model output)
  int priority = 0;                         ///< parameters.priority
  std::chrono::microseconds timeout{0};     ///< parameters.timeout, in microseconds
};

/// Parses `POST /v2/models/NAME/infer`'s body. `header_length` is the
/// Inference-Header-Content-Length value when the request has one (binary tensors follow the
/// JSON). @throws error(errc::invalid_argument) naming what is malformed or does not fit the
/// model (unknown or missing input, datatype, rank, a static dim, element count, byte count).
[[nodiscard]] decoded_request decode_infer_request(std::string_view body, std::optional<std::size_t> header_length,
                                                   const model_signature& model);

struct encoded_response {
  std::string body;
  std::optional<std::size_t> header_length;  ///< set when binary tensors follow the JSON
};

/// The response to `request` with the model's `outputs`.
/// @throws error(errc::invalid_argument) for a requested output the model does not have.
[[nodiscard]] encoded_response encode_infer_response(const model_signature& model, const decoded_request& request,
                                                     const runtime::tensor_map& outputs);

/// `{"error": "..."}`, the body of every 4xx and 5xx.
[[nodiscard]] std::string error_json(std::string_view message);

}  // namespace inferopt::serve
