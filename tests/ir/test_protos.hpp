#pragma once
// ONNX protobuf messages for tests that need files our own writer would never produce
// (undefined names, cycles, bad tensors, hostile external data locations).

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "support/onnx_protos.hpp"

#include "test_util.hpp"

namespace inferopt::test {

/// A float initializer with `raw_data`, one 4-byte value per element.
inline onnx::TensorProto& add_float_initializer(onnx::GraphProto& g, const std::string& name,
                                                const std::vector<std::int64_t>& dims, std::size_t element_count) {
  onnx::TensorProto& t = *g.add_initializer();
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (std::int64_t d : dims) t.add_dims(d);
  t.set_raw_data(std::string(element_count * 4, '\0'));
  return t;
}

/// A valid model: opset 17, graph `g` with input `x` [1,4], node `relu` (Relu) making `y`,
/// and output `y`. Tests break one thing in it at a time.
inline onnx::ModelProto relu_model_proto() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("inferopt-tests");
  auto* opset = m.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  onnx::GraphProto& g = *m.mutable_graph();
  g.set_name("g");
  set_float_info(*g.add_input(), "x", {1, 4});
  add_node(g, "Relu", {"x"}, {"y"}, "relu");
  set_float_info(*g.add_output(), "y", {1, 4});
  return m;
}

inline std::string bytes_of(const onnx::ModelProto& m) {
  std::string out;
  m.SerializeToString(&out);
  return out;
}

inline void write_proto(const onnx::ModelProto& m, const std::filesystem::path& p) { write_bytes(p, bytes_of(m)); }

inline onnx::ModelProto read_proto(const std::filesystem::path& p) {
  onnx::ModelProto m;
  m.ParseFromString(read_bytes(p));
  return m;
}

}  // namespace inferopt::test
