#pragma once
// Malformed model files for the CLI's bad-input tests. Our IR refuses to build most of them
// (cycles, undefined inputs), so they are written as raw ONNX protobuf.

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "support/onnx_protos.hpp"

namespace inferopt::test {

namespace detail {

/// Opset 17, graph `g`, float input `x` [1,4] and output `y` [1,4]; the caller adds nodes.
inline onnx::ModelProto empty_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("inferopt-cli-tests");
  auto* opset = m.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  onnx::GraphProto& g = *m.mutable_graph();
  g.set_name("g");
  set_float_info(*g.add_input(), "x", {1, 4});
  set_float_info(*g.add_output(), "y", {1, 4});
  return m;
}

inline std::string bytes_of(const onnx::ModelProto& m) {
  std::string out;
  m.SerializeToString(&out);
  return out;
}

}  // namespace detail

/// `a = Add(x, b); b = Relu(a); y = Relu(a)`: nodes `add` and `relu_b` feed each other.
inline std::string cycle_model_bytes() {
  onnx::ModelProto m = detail::empty_model();
  onnx::GraphProto& g = *m.mutable_graph();
  add_node(g, "Add", {"x", "b"}, {"a"}, "add");
  add_node(g, "Relu", {"a"}, {"b"}, "relu_b");
  add_node(g, "Relu", {"a"}, {"y"}, "relu_y");
  return detail::bytes_of(m);
}

/// `y = Add(x, missing)` where nothing defines `missing`.
inline std::string missing_input_model_bytes() {
  onnx::ModelProto m = detail::empty_model();
  add_node(*m.mutable_graph(), "Add", {"x", "missing"}, {"y"}, "add");
  return detail::bytes_of(m);
}

/// `y = Add(x, w)` where initializer `w` claims its 16 bytes live in `location`.
inline std::string external_data_model_bytes(const std::string& location) {
  onnx::ModelProto m = detail::empty_model();
  onnx::GraphProto& g = *m.mutable_graph();
  onnx::TensorProto& w = *g.add_initializer();
  w.set_name("w");
  w.set_data_type(onnx::TensorProto::FLOAT);
  w.add_dims(1);
  w.add_dims(4);
  w.set_data_location(onnx::TensorProto::EXTERNAL);
  for (const auto& [key, value] : {std::pair<std::string, std::string>{"location", location},
                                   {"offset", "0"},
                                   {"length", "16"}}) {
    auto* kv = w.add_external_data();
    kv->set_key(key);
    kv->set_value(value);
  }
  add_node(g, "Add", {"x", "w"}, {"y"}, "add");
  return detail::bytes_of(m);
}

/// `a = Relu(x); y = Relu(a)` with `a` declared [1,5] in value_info, though Relu of a [1,4]
/// input computes [1,4].
inline std::string contradicting_shape_model_bytes() {
  onnx::ModelProto m = detail::empty_model();
  onnx::GraphProto& g = *m.mutable_graph();
  add_node(g, "Relu", {"x"}, {"a"}, "relu_a");
  add_node(g, "Relu", {"a"}, {"y"}, "relu_y");
  set_float_info(*g.add_value_info(), "a", {1, 5});
  return detail::bytes_of(m);
}

/// `y = MaxPool(x)` over a [1,1,4,4] input with strides [0, 0]: a division by zero for any
/// shape formula that does not check.
inline std::string zero_stride_model_bytes() {
  onnx::ModelProto m = detail::empty_model();
  onnx::GraphProto& g = *m.mutable_graph();
  g.clear_input();
  g.clear_output();
  set_float_info(*g.add_input(), "x", {1, 1, 4, 4});
  set_float_info(*g.add_output(), "y", {1, 1, 2, 2});
  onnx::NodeProto& pool = add_node(g, "MaxPool", {"x"}, {"y"}, "pool");
  for (const char* name : {"kernel_shape", "strides"}) {
    onnx::AttributeProto& a = *pool.add_attribute();
    a.set_name(name);
    a.set_type(onnx::AttributeProto::INTS);
    a.add_ints(name == std::string("strides") ? 0 : 2);
    a.add_ints(name == std::string("strides") ? 0 : 2);
  }
  return detail::bytes_of(m);
}

/// `count` bytes from a fixed-seed Mersenne Twister (its output sequence is specified by the
/// standard, so every platform writes the same file).
inline std::string random_bytes(std::size_t count, std::uint32_t seed = 20240601) {
  std::mt19937 gen(seed);
  std::string out(count, '\0');
  for (char& c : out) c = static_cast<char>(gen() & 0xff);
  return out;
}

/// `y = Add(x, ConstantOfShape([elements]))`: valid, and small on disk, but running it needs
/// `elements` floats at once.
inline std::string memory_hungry_model_bytes(std::int64_t elements) {
  onnx::ModelProto m = detail::empty_model();
  onnx::GraphProto& g = *m.mutable_graph();
  g.mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)->set_dim_value(1);
  auto* out_shape = g.mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  out_shape->mutable_dim(0)->set_dim_value(1);
  out_shape->mutable_dim(1)->set_dim_value(elements);
  onnx::TensorProto& shape = *g.add_initializer();
  shape.set_name("shape");
  shape.set_data_type(onnx::TensorProto::INT64);
  shape.add_dims(2);
  shape.add_int64_data(1);
  shape.add_int64_data(elements);
  add_node(g, "ConstantOfShape", {"shape"}, {"filled"}, "fill");
  add_node(g, "Add", {"x", "filled"}, {"y"}, "add");
  return detail::bytes_of(m);
}

}  // namespace inferopt::test
