#pragma once
// The nine light CNN topologies of ../shared/models/onnx-light and the input their README
// defines: x = arange(prod(shape)).reshape(shape) / prod(shape), symbolic dims taken as 1.

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "inferopt/core/error.hpp"
#include "inferopt/runtime/session.hpp"

namespace inferopt::test {

inline constexpr std::array<const char*, 9> light_model_names = {
    "bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50",
    "shufflenet",   "squeezenet",  "vgg19",        "zfnet512"};

inline runtime::tensor readme_input(const runtime::io_info& in) {
  runtime::shape_t shape;
  for (const ir::dim& d : in.shape) shape.push_back(d.is_static() ? d.value() : 1);
  const std::int64_t n = ir::tensor::element_count(shape);
  std::vector<float> values(static_cast<std::size_t>(n));
  for (std::int64_t k = 0; k < n; ++k) values[k] = static_cast<float>(static_cast<double>(k) / static_cast<double>(n));
  return runtime::tensor::from_values(shape, values);
}

/// The README feed for a session: IR 3 models list their weights as graph inputs too (with
/// initializers), so the data input is the first one without a default.
inline runtime::tensor_map readme_feeds(const runtime::session& s) {
  auto data = std::find_if(s.inputs().begin(), s.inputs().end(), [](const runtime::io_info& i) { return !i.optional; });
  expects(data != s.inputs().end(), "the model has no input without a default");
  return {{data->name, readme_input(*data)}};
}

}  // namespace inferopt::test
