#pragma once
// Fields of newer ONNX releases that the linked protobuf schema does not know (metadata_props
// on values, nodes, graphs and tensors since ONNX 1.16, ...). The parser keeps them as opaque
// bytes and we write them back verbatim, so a corrupt one would pass through into a model
// onnxruntime, which knows them, cannot parse. Private to src/ir.

#include <google/protobuf/message.h>

namespace inferopt::ir::detail {

/// Throws error(errc::invalid_model) naming the field when an unknown length-delimited field
/// anywhere in `m` is neither a well-formed message nor UTF-8 text (what every field ONNX
/// added since is: a message or a string). Linear in the size of `m`.
void check_unknown_fields(const google::protobuf::Message& m);

}  // namespace inferopt::ir::detail
