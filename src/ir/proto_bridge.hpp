#pragma once
// Conversion between the IR and ONNX protobuf messages. Private to src/.

#include <filesystem>
#include <functional>
#include <string>

#include <onnx/onnx_pb.h>

#include "inferopt/ir/model.hpp"

namespace inferopt::ir::detail {

/// Where external tensor data may be read from; empty: external data is refused.
struct external_source {
  std::filesystem::path base_dir;
  bool load = true;
};

/// Takes tensor data out of `proto` (moving the raw bytes, never copying them).
tensor tensor_from_proto(onnx::TensorProto& proto, const external_source& ext);

/// Decides where a tensor's bytes go when saving: return true to keep them inline.
using tensor_sink = std::function<bool(const tensor&, onnx::TensorProto&)>;

void tensor_to_proto(const tensor& t, onnx::TensorProto& proto, const tensor_sink& sink);

/// Builds a model from a parsed message, consuming it.
model model_from_proto(onnx::ModelProto& proto, const external_source& ext);

/// Writes a model into a message; `sink` decides about external data. With
/// `only_loaded_value_info`, value_info lists only values the loaded file listed.
void model_to_proto(const model& m, onnx::ModelProto& proto, const tensor_sink& sink,
                    bool only_loaded_value_info = false);

value_type type_from_proto(const onnx::TypeProto& t);
void type_to_proto(const value_type& t, onnx::TypeProto& proto);

}  // namespace inferopt::ir::detail
