#pragma once
// Building raw ONNX protobuf messages in tests that need files our own writer would never
// produce. Tests using this link onnx_proto.

#include <cstdint>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace inferopt::test {

/// Names `vi` and types it as a float tensor of static `dims`.
inline void set_float_info(onnx::ValueInfoProto& vi, const std::string& name, const std::vector<std::int64_t>& dims) {
  vi.set_name(name);
  auto* tt = vi.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (std::int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
}

/// Appends a node with the given inputs and outputs.
inline onnx::NodeProto& add_node(onnx::GraphProto& g, const std::string& op, const std::vector<std::string>& inputs,
                                 const std::vector<std::string>& outputs, const std::string& name) {
  onnx::NodeProto& n = *g.add_node();
  n.set_op_type(op);
  n.set_name(name);
  for (const std::string& in : inputs) n.add_input(in);
  for (const std::string& out : outputs) n.add_output(out);
  return n;
}

}  // namespace inferopt::test
