// A structure-aware mutator for libFuzzer: most mutations parse the input as an ONNX
// ModelProto, change one thing a hostile or broken exporter could change (an attribute value,
// a dim, an element type, an input list, an op type, node order, the opset) and serialize it
// again, so that mutants get past the protobuf parser and into validation, shape inference,
// the passes and the kernels. The rest are libFuzzer's own byte mutations.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

extern "C" std::size_t LLVMFuzzerMutate(std::uint8_t* data, std::size_t size, std::size_t max_size);

namespace {

using rng_t = std::minstd_rand;

template <class T>
const T& pick(const std::vector<T>& from, rng_t& rng) {
  return from[rng() % from.size()];
}

std::int64_t interesting_int(rng_t& rng) {
  static const std::vector<std::int64_t> values{0, 1, -1, 2, 3, -2, 7, 64, 255, 65536,
                                                std::int64_t{1} << 31, -(std::int64_t{1} << 31),
                                                std::int64_t{1} << 33, std::numeric_limits<std::int64_t>::max(),
                                                std::numeric_limits<std::int64_t>::min()};
  return rng() % 4 == 0 ? static_cast<std::int64_t>(rng() % 9) - 4 : pick(values, rng);
}

float interesting_float(rng_t& rng) {
  static const std::vector<float> values{0.0f, -1.0f, 1e-12f, 1e30f, std::numeric_limits<float>::infinity(),
                                         std::numeric_limits<float>::quiet_NaN(), 0.5f, 2.0f};
  return pick(values, rng);
}

const std::vector<std::string>& op_types() {
  static const std::vector<std::string> ops{
      "Add", "Sub", "Mul", "Div", "Relu", "Sigmoid", "Tanh", "Conv", "ConvTranspose", "MaxPool", "AveragePool",
      "GlobalAveragePool", "BatchNormalization", "Gemm", "MatMul", "Reshape", "Transpose", "Concat", "Split",
      "Slice", "Gather", "Squeeze", "Unsqueeze", "Flatten", "Softmax", "LayerNormalization", "Resize", "Pad",
      "Tile", "Expand", "Shape", "ConstantOfShape", "Cast", "ReduceMean", "ReduceSum", "Where", "Equal", "Erf",
      "Sqrt", "Pow", "Clip", "Identity", "Dropout", "QuantizeLinear", "DequantizeLinear", "DepthToSpace",
      "Range", "TopK", "Einsum", "If", "Loop", "Constant", "Neg", "Min", "Max", "Sum", "CumSum"};
  return ops;
}

const std::vector<std::string>& attribute_names() {
  static const std::vector<std::string> names{"axis", "axes", "perm", "strides", "pads", "kernel_shape", "dilations",
                                              "group", "to", "keepdims", "epsilon", "alpha", "beta", "transA",
                                              "transB", "mode", "blocksize", "split", "num_outputs", "value"};
  return names;
}

onnx::NodeProto* random_node(onnx::GraphProto& g, rng_t& rng) {
  return g.node_size() == 0 ? nullptr : g.mutable_node(static_cast<int>(rng() % g.node_size()));
}

/// A name some node, input or initializer of `g` defines, or a fresh one.
std::string random_value_name(const onnx::GraphProto& g, rng_t& rng) {
  std::vector<std::string> names;
  for (const auto& n : g.node()) names.insert(names.end(), n.output().begin(), n.output().end());
  for (const auto& i : g.input()) names.push_back(i.name());
  for (const auto& t : g.initializer()) names.push_back(t.name());
  if (names.empty() || rng() % 8 == 0) return "fuzz_" + std::to_string(rng() % 16);
  return pick(names, rng);
}

void mutate_attribute_value(onnx::AttributeProto& a, rng_t& rng) {
  if (a.ints_size() > 0) {
    if (rng() % 4 == 0) a.add_ints(interesting_int(rng));
    else a.set_ints(static_cast<int>(rng() % a.ints_size()), interesting_int(rng));
  } else if (a.floats_size() > 0) {
    a.set_floats(static_cast<int>(rng() % a.floats_size()), interesting_float(rng));
  } else if (a.type() == onnx::AttributeProto::FLOAT) {
    a.set_f(interesting_float(rng));
  } else if (a.type() == onnx::AttributeProto::STRING) {
    a.set_s(rng() % 2 ? "" : "fuzz");
  } else {
    a.set_i(interesting_int(rng));
  }
}

void mutate_attributes(onnx::NodeProto& n, rng_t& rng) {
  const unsigned choice = rng() % 4;
  if (choice == 0 || n.attribute_size() == 0) {
    onnx::AttributeProto& a = *n.add_attribute();
    a.set_name(pick(attribute_names(), rng));
    const bool list = rng() % 2;
    a.set_type(list ? onnx::AttributeProto::INTS : onnx::AttributeProto::INT);
    if (list) for (unsigned k = rng() % 5; k > 0; --k) a.add_ints(interesting_int(rng));
    else a.set_i(interesting_int(rng));
  } else if (choice == 1) {
    n.mutable_attribute()->DeleteSubrange(static_cast<int>(rng() % n.attribute_size()), 1);
  } else {
    mutate_attribute_value(*n.mutable_attribute(static_cast<int>(rng() % n.attribute_size())), rng);
  }
}

void mutate_inputs(onnx::NodeProto& n, const onnx::GraphProto& g, rng_t& rng) {
  const unsigned choice = rng() % 4;
  if (choice == 0 || n.input_size() == 0) {
    n.add_input(random_value_name(g, rng));
  } else if (choice == 1) {
    n.mutable_input()->DeleteSubrange(static_cast<int>(rng() % n.input_size()), 1);
  } else if (choice == 2) {
    n.set_input(static_cast<int>(rng() % n.input_size()), rng() % 4 ? random_value_name(g, rng) : std::string());
  } else {
    for (unsigned k = 1 + rng() % 64; k > 0; --k) n.add_input(n.input(0));  // wide fan-in
  }
}

void mutate_outputs(onnx::NodeProto& n, rng_t& rng) {
  if (rng() % 2 || n.output_size() == 0) n.add_output("fuzz_out_" + std::to_string(rng() % 4));
  else n.mutable_output()->DeleteSubrange(static_cast<int>(rng() % n.output_size()), 1);
}

void mutate_type(onnx::TypeProto& t, rng_t& rng) {
  if (!t.has_tensor_type() || rng() % 8 == 0) {
    const onnx::TypeProto element = t;  // a sequence where a tensor was
    *t.mutable_sequence_type()->mutable_elem_type() = element;
    return;
  }
  onnx::TypeProto_Tensor& tt = *t.mutable_tensor_type();
  if (rng() % 3 == 0) {
    tt.set_elem_type(static_cast<std::int32_t>(rng() % 23));
    return;
  }
  onnx::TensorShapeProto& s = *tt.mutable_shape();
  if (s.dim_size() == 0 || rng() % 4 == 0) {
    s.add_dim()->set_dim_value(interesting_int(rng));
  } else if (rng() % 3 == 0) {
    s.mutable_dim()->DeleteSubrange(static_cast<int>(rng() % s.dim_size()), 1);
  } else {
    auto& d = *s.mutable_dim(static_cast<int>(rng() % s.dim_size()));
    if (rng() % 4 == 0) d.set_dim_param("n");
    else d.set_dim_value(interesting_int(rng));
  }
}

void mutate_initializer(onnx::TensorProto& t, rng_t& rng) {
  switch (rng() % 4) {
    case 0:
      if (t.dims_size() > 0) t.set_dims(static_cast<int>(rng() % t.dims_size()), interesting_int(rng));
      else t.add_dims(interesting_int(rng));
      break;
    case 1: t.set_data_type(static_cast<std::int32_t>(rng() % 23)); break;
    case 2: t.mutable_raw_data()->resize(t.raw_data().size() / (1 + rng() % 3)); break;
    default: {
      std::string& raw = *t.mutable_raw_data();
      if (!raw.empty()) raw[rng() % raw.size()] = static_cast<char>(rng());
      else t.add_int64_data(interesting_int(rng));
    }
  }
}

void mutate_value_infos(onnx::GraphProto& g, rng_t& rng) {
  std::vector<onnx::ValueInfoProto*> infos;
  for (auto& v : *g.mutable_input()) infos.push_back(&v);
  for (auto& v : *g.mutable_output()) infos.push_back(&v);
  for (auto& v : *g.mutable_value_info()) infos.push_back(&v);
  if (!infos.empty()) mutate_type(*pick(infos, rng)->mutable_type(), rng);
}

void mutate_node_order(onnx::GraphProto& g, rng_t& rng) {
  if (g.node_size() < 2) return;
  const int a = static_cast<int>(rng() % g.node_size());
  const int b = static_cast<int>(rng() % g.node_size());
  if (rng() % 3 == 0) *g.add_node() = g.node(a);  // the same outputs defined twice
  else g.mutable_node()->SwapElements(a, b);
}

void mutate_graph(onnx::GraphProto& g, rng_t& rng) {
  onnx::NodeProto* n = random_node(g, rng);
  switch (rng() % 9) {
    case 0:
    case 1:
      if (n) mutate_attributes(*n, rng);
      break;
    case 2:
      if (n) mutate_inputs(*n, g, rng);
      break;
    case 3:
      if (n) mutate_outputs(*n, rng);
      break;
    case 4:
      if (n) n->set_op_type(pick(op_types(), rng));
      break;
    case 5: mutate_value_infos(g, rng); break;
    case 6:
      if (g.initializer_size() > 0) mutate_initializer(*g.mutable_initializer(static_cast<int>(rng() % g.initializer_size())), rng);
      break;
    case 7: mutate_node_order(g, rng); break;
    default:
      for (auto& node : *g.mutable_node()) {
        for (auto& a : *node.mutable_attribute()) {
          if (a.has_g() && rng() % 2) return mutate_graph(*a.mutable_g(), rng);  // into a subgraph
        }
      }
      if (n) mutate_attributes(*n, rng);
  }
}

void mutate_model(onnx::ModelProto& m, rng_t& rng) {
  if (rng() % 16 == 0 && m.opset_import_size() > 0) {
    static const std::vector<std::int64_t> opsets{1, 6, 7, 11, 13, 17, 18, 20, 21, 24, 99};
    m.mutable_opset_import(0)->set_version(pick(opsets, rng));
    return;
  }
  if (rng() % 32 == 0) {
    m.set_ir_version(static_cast<std::int64_t>(rng() % 12));
    return;
  }
  mutate_graph(*m.mutable_graph(), rng);
}

}  // namespace

extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size, std::size_t max_size,
                                               unsigned int seed) {
  rng_t rng(seed);
  onnx::ModelProto m;
  if (rng() % 5 == 0 || !m.ParseFromArray(data, static_cast<int>(size))) return LLVMFuzzerMutate(data, size, max_size);
  for (unsigned k = 1 + rng() % 2; k > 0; --k) mutate_model(m, rng);
  const std::string out = m.SerializeAsString();
  if (out.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}
