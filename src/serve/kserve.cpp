// KServe v2 messages (include/inferopt/serve/kserve.hpp).
#include "inferopt/serve/kserve.hpp"

#include <cmath>
#include <cstring>
#include <limits>

#include <nlohmann/json.hpp>

#include "inferopt/core/error.hpp"
#include "inferopt/core/float16.hpp"

namespace inferopt::serve {

namespace {

using json = nlohmann::json;
using ir::data_type;

[[noreturn]] void bad(const std::string& what) { throw error(errc::invalid_argument, what); }

// The protocol's datatype names, one table for both directions.
constexpr std::pair<std::string_view, data_type> kserve_types[] = {
    {"BOOL", data_type::boolean}, {"UINT8", data_type::uint8},   {"INT8", data_type::int8},
    {"UINT16", data_type::uint16}, {"INT16", data_type::int16},  {"UINT32", data_type::uint32},
    {"INT32", data_type::int32},   {"UINT64", data_type::uint64}, {"INT64", data_type::int64},
    {"FP16", data_type::float16},  {"FP32", data_type::float32},  {"FP64", data_type::float64}};

/// Calls fn(T{}) with the C++ type of a plain numeric element type; false for the others
/// (BOOL and FP16 have their own storage, and are handled by the callers).
template <class Fn>
bool with_numeric_type(data_type t, Fn&& fn) {
  switch (t) {
    case data_type::uint8: fn(std::uint8_t{}); return true;
    case data_type::int8: fn(std::int8_t{}); return true;
    case data_type::uint16: fn(std::uint16_t{}); return true;
    case data_type::int16: fn(std::int16_t{}); return true;
    case data_type::uint32: fn(std::uint32_t{}); return true;
    case data_type::int32: fn(std::int32_t{}); return true;
    case data_type::uint64: fn(std::uint64_t{}); return true;
    case data_type::int64: fn(std::int64_t{}); return true;
    case data_type::float32: fn(float{}); return true;
    case data_type::float64: fn(double{}); return true;
    default: return false;
  }
}

/// `data` (nested arrays allowed, at most `rank` deep) flattened into `out`.
void flatten(const json& data, std::size_t depth_left, std::vector<const json*>& out, const std::string& input) {
  if (!data.is_array()) {
    out.push_back(&data);
    return;
  }
  if (depth_left == 0) bad("input '" + input + "': data is nested deeper than its shape");
  for (const json& v : data) flatten(v, depth_left - 1, out, input);
}

template <class T>
void store_number(const json& v, void* at, const std::string& input) {
  T value{};
  if constexpr (std::is_same_v<T, bool>) {
    if (v.is_boolean()) {
      value = v.get<bool>();
    } else if (v.is_number_integer() && (v.get<std::int64_t>() == 0 || v.get<std::int64_t>() == 1)) {
      value = v.get<std::int64_t>() == 1;
    } else {
      bad("input '" + input + "': BOOL data must be true or false");
    }
  } else if constexpr (std::is_integral_v<T>) {
    if (!v.is_number_integer()) bad("input '" + input + "': integer data holds " + std::string(v.type_name()));
    if (v.is_number_unsigned()) {
      const auto u = v.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) bad("input '" + input + "': " + std::to_string(u) + " is out of range");
      value = static_cast<T>(u);
    } else {
      const auto s = v.get<std::int64_t>();
      if (s < static_cast<std::int64_t>(std::numeric_limits<T>::min()) ||
          (s > 0 && static_cast<std::uint64_t>(s) > static_cast<std::uint64_t>(std::numeric_limits<T>::max()))) {
        bad("input '" + input + "': " + std::to_string(s) + " is out of range");
      }
      value = static_cast<T>(s);
    }
  } else {
    if (!v.is_number()) bad("input '" + input + "': numeric data holds " + std::string(v.type_name()));
    value = static_cast<T>(v.get<double>());
  }
  std::memcpy(at, &value, sizeof value);
}

/// Writes JSON value `v` as one element of type `t` at `at`.
void store(data_type t, const json& v, void* at, const std::string& input) {
  if (t == data_type::boolean) return store_number<bool>(v, at, input);
  if (t == data_type::float16) {
    if (!v.is_number()) bad("input '" + input + "': numeric data holds " + std::string(v.type_name()));
    const std::uint16_t h = float_to_half(v.get<float>());
    std::memcpy(at, &h, sizeof h);
    return;
  }
  if (!with_numeric_type(t, [&](auto tag) { store_number<decltype(tag)>(v, at, input); })) bad("input '" + input + "': unsupported datatype");
}

/// The tensor's elements as JSON numbers (booleans for BOOL).
json elements_json(const runtime::tensor& t) {
  json data = json::array();
  const auto n = static_cast<std::size_t>(t.element_count());
  const auto each = [&](auto tag) {
    using T = decltype(tag);
    const auto* p = static_cast<const T*>(t.raw());
    for (std::size_t i = 0; i < n; ++i) data.push_back(p[i]);
  };
  if (t.dtype() == data_type::boolean) {
    const auto* p = static_cast<const std::uint8_t*>(t.raw());
    for (std::size_t i = 0; i < n; ++i) data.push_back(p[i] != 0);
  } else if (t.dtype() == data_type::float16) {
    const auto* p = static_cast<const std::uint16_t*>(t.raw());
    for (std::size_t i = 0; i < n; ++i) data.push_back(half_to_float(p[i]));
  } else if (!with_numeric_type(t.dtype(), each)) {
    throw error(errc::unsupported, "output of type " + std::string(ir::to_string(t.dtype())) + " has no KServe datatype");
  }
  return data;
}

json shape_json(const std::vector<ir::dim>& dims) {
  json shape = json::array();
  for (const ir::dim& d : dims) shape.push_back(d.is_static() ? d.value() : -1);
  return shape;
}

const runtime::io_info& model_input(const model_signature& model, const std::string& name) {
  for (const runtime::io_info& in : model.inputs) {
    if (in.name == name) return in;
  }
  bad("model '" + model.name + "' has no input '" + name + "'");
}

/// Checks the request's shape against the model's, and returns it.
runtime::shape_t checked_shape(const json& item, const runtime::io_info& in) {
  if (!item.contains("shape") || !item["shape"].is_array()) bad("input '" + in.name + "' has no shape");
  runtime::shape_t shape;
  for (const json& d : item["shape"]) {
    if (!d.is_number_integer() || d.get<std::int64_t>() < 0) bad("input '" + in.name + "': shape holds a dim that is not a non-negative integer");
    shape.push_back(d.get<std::int64_t>());
  }
  if (in.has_shape) {
    if (shape.size() != in.shape.size()) {
      bad("input '" + in.name + "' has rank " + std::to_string(shape.size()) + ", the model expects " + std::to_string(in.shape.size()));
    }
    for (std::size_t a = 0; a < shape.size(); ++a) {
      if (in.shape[a].is_static() && in.shape[a].value() != shape[a]) {
        bad("input '" + in.name + "' has dim " + std::to_string(a) + " = " + std::to_string(shape[a]) + ", the model expects " +
            std::to_string(in.shape[a].value()));
      }
    }
  }
  return shape;
}

/// One input of the request as a tensor: its data from JSON, or its bytes from the binary tail.
runtime::tensor decode_input(const json& item, const runtime::io_info& in, std::string_view& tail, std::size_t body_limit) {
  if (!item.contains("datatype") || !item["datatype"].is_string()) bad("input '" + in.name + "' has no datatype");
  const std::string datatype = item["datatype"].get<std::string>();
  const std::optional<data_type> type = kserve_element_type(datatype);
  if (!type) bad("input '" + in.name + "': datatype '" + datatype + "' is not supported");
  if (*type != in.type) bad("input '" + in.name + "' is " + datatype + ", the model expects " + std::string(kserve_datatype(in.type)));
  runtime::shape_t shape = checked_shape(item, in);
  // The count is checked against the bytes present (binary) or the values given (JSON)
  // before the tensor is allocated: a shape cannot make the server allocate more than the
  // body holds.
  const std::int64_t count = runtime::element_count_checked(shape);
  if (static_cast<std::uint64_t>(count) > body_limit) bad("input '" + in.name + "': its shape holds more values than the request");
  const std::size_t bytes = static_cast<std::size_t>(count) * ir::element_size(*type);
  const json* params = item.contains("parameters") && item["parameters"].is_object() ? &item["parameters"] : nullptr;
  if (params && params->contains("binary_data_size")) {
    const json& size = (*params)["binary_data_size"];
    if (!size.is_number_unsigned() || size.get<std::uint64_t>() != bytes) {
      bad("input '" + in.name + "': binary_data_size is not the " + std::to_string(bytes) + " bytes its shape and datatype need");
    }
    if (tail.size() < bytes) bad("input '" + in.name + "': the body ends before its binary data");
    runtime::tensor t(*type, std::move(shape));
    if (bytes > 0) std::memcpy(t.mutable_raw(), tail.data(), bytes);
    tail.remove_prefix(bytes);
    return t;
  }
  if (!item.contains("data")) bad("input '" + in.name + "' has neither data nor binary_data_size");
  std::vector<const json*> values;
  flatten(item["data"], shape.size(), values, in.name);
  if (values.size() != static_cast<std::size_t>(count)) {
    bad("input '" + in.name + "' has " + std::to_string(values.size()) + " values, its shape holds " + std::to_string(count));
  }
  runtime::tensor t(*type, std::move(shape));
  auto* at = static_cast<unsigned char*>(t.mutable_raw());
  const std::size_t size = ir::element_size(*type);
  for (std::size_t i = 0; i < values.size(); ++i) store(*type, *values[i], at + i * size, in.name);
  return t;
}

json parse_header(std::string_view body, std::optional<std::size_t> header_length) {
  const std::size_t length = header_length.value_or(body.size());
  if (length > body.size()) bad("Inference-Header-Content-Length is larger than the body");
  json header = json::parse(body.substr(0, length), nullptr, false);
  if (header.is_discarded()) bad("the request body is not valid JSON");
  if (!header.is_object()) bad("the request body is not a JSON object");
  return header;
}

void decode_parameters(const json& header, decoded_request& out, bool& binary_default) {
  if (!header.contains("parameters")) return;
  const json& p = header["parameters"];
  if (!p.is_object()) bad("parameters must be an object");
  if (p.contains("binary_data_output")) {
    if (!p["binary_data_output"].is_boolean()) bad("parameters.binary_data_output must be true or false");
    binary_default = p["binary_data_output"].get<bool>();
  }
  if (p.contains("priority")) {
    if (!p["priority"].is_number_integer()) bad("parameters.priority must be an integer");
    out.priority = p["priority"].get<int>();
  }
  if (p.contains("timeout")) {
    if (!p["timeout"].is_number_unsigned()) bad("parameters.timeout must be a non-negative integer (microseconds)");
    out.timeout = std::chrono::microseconds(p["timeout"].get<std::int64_t>());
  }
}

void decode_requested_outputs(const json& header, const model_signature& model, bool binary_default, decoded_request& out) {
  if (!header.contains("outputs")) {
    for (std::size_t k = 0; k < model.outputs.size(); ++k) out.binary.push_back(binary_default);
    return;
  }
  if (!header["outputs"].is_array()) bad("outputs must be an array");
  for (const json& o : header["outputs"]) {
    if (!o.is_object() || !o.contains("name") || !o["name"].is_string()) bad("every requested output needs a name");
    const std::string name = o["name"].get<std::string>();
    bool known = false;
    for (const runtime::io_info& info : model.outputs) known = known || info.name == name;
    if (!known) bad("model '" + model.name + "' has no output '" + name + "'");
    bool binary = binary_default;
    if (o.contains("parameters") && o["parameters"].is_object() && o["parameters"].contains("binary_data")) {
      if (!o["parameters"]["binary_data"].is_boolean()) bad("output '" + name + "': binary_data must be true or false");
      binary = o["parameters"]["binary_data"].get<bool>();
    }
    out.outputs.push_back(name);
    out.binary.push_back(binary);
  }
}

}  // namespace

std::string_view kserve_datatype(data_type type) noexcept {
  for (const auto& [n, t] : kserve_types) {
    if (t == type) return n;
  }
  return {};
}

std::optional<data_type> kserve_element_type(std::string_view datatype) noexcept {
  for (const auto& [n, t] : kserve_types) {
    if (n == datatype) return t;
  }
  return std::nullopt;
}

std::string model_metadata_json(const model_signature& model) {
  const auto describe = [](const std::vector<runtime::io_info>& list) {
    json out = json::array();
    for (const runtime::io_info& io : list) {
      out.push_back({{"name", io.name}, {"datatype", std::string(kserve_datatype(io.type))}, {"shape", shape_json(io.shape)}});
    }
    return out;
  };
  return json{{"name", model.name}, {"versions", {"1"}}, {"platform", "onnx"},
              {"inputs", describe(model.inputs)}, {"outputs", describe(model.outputs)}}
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

decoded_request decode_infer_request(std::string_view body, std::optional<std::size_t> header_length, const model_signature& model) {
  const json header = parse_header(body, header_length);
  std::string_view tail = header_length ? body.substr(*header_length) : std::string_view{};
  decoded_request out;
  if (header.contains("id")) {
    if (!header["id"].is_string()) bad("id must be a string");
    out.id = header["id"].get<std::string>();
  }
  bool binary_default = false;
  decode_parameters(header, out, binary_default);
  if (!header.contains("inputs") || !header["inputs"].is_array()) bad("the request has no inputs array");
  for (const json& item : header["inputs"]) {
    if (!item.is_object() || !item.contains("name") || !item["name"].is_string()) bad("every input needs a name");
    const std::string name = item["name"].get<std::string>();
    if (out.inputs.count(name) != 0) bad("input '" + name + "' is given twice");
    out.inputs.emplace(name, decode_input(item, model_input(model, name), tail, body.size()));
  }
  if (!tail.empty()) bad("the body has " + std::to_string(tail.size()) + " bytes after the last input's binary data");
  for (const runtime::io_info& in : model.inputs) {
    if (!in.optional && out.inputs.count(in.name) == 0) bad("input '" + in.name + "' is missing");
  }
  decode_requested_outputs(header, model, binary_default, out);
  return out;
}

encoded_response encode_infer_response(const model_signature& model, const decoded_request& request,
                                       const runtime::tensor_map& outputs) {
  std::vector<std::string> names = request.outputs;
  if (names.empty()) {
    for (const runtime::io_info& o : model.outputs) names.push_back(o.name);
  }
  json out_list = json::array();
  std::string binary;
  for (std::size_t k = 0; k < names.size(); ++k) {
    const auto found = outputs.find(names[k]);
    if (found == outputs.end()) bad("the model produced no output '" + names[k] + "'");
    const runtime::tensor& t = found->second;
    json item{{"name", names[k]}, {"datatype", std::string(kserve_datatype(t.dtype()))}, {"shape", t.shape()}};
    if (k < request.binary.size() && request.binary[k]) {
      item["parameters"] = {{"binary_data_size", t.byte_size()}};
      binary.append(static_cast<const char*>(t.raw()), t.byte_size());
    } else {
      item["data"] = elements_json(t);
    }
    out_list.push_back(std::move(item));
  }
  json response{{"model_name", model.name}, {"model_version", "1"}, {"outputs", std::move(out_list)}};
  if (!request.id.empty()) response["id"] = request.id;
  encoded_response encoded{response.dump(-1, ' ', false, json::error_handler_t::replace), std::nullopt};
  if (!binary.empty()) {
    encoded.header_length = encoded.body.size();
    encoded.body += binary;
  }
  return encoded;
}

// Invalid UTF-8 (a name from the request, say) is replaced, not thrown on.
std::string error_json(std::string_view message) {
  return json{{"error", std::string(message)}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace inferopt::serve
