// serve::kserve: requests decoded against the model (JSON, nested JSON, binary tensors, every
// datatype), what is malformed named in one error, responses encoded as JSON or binary, and
// the metadata.
#include "inferopt/serve/kserve.hpp"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

using namespace inferopt;
using json = nlohmann::json;
using runtime::tensor;

namespace {

serve::model_signature two_inputs() {
  serve::model_signature m;
  m.name = "m";
  m.inputs = {runtime::io_info{"x", ir::data_type::float32, {ir::dim{"batch"}, ir::dim{3}}, true, false},
              runtime::io_info{"ids", ir::data_type::int64, {ir::dim{"batch"}}, true, false}};
  m.outputs = {runtime::io_info{"y", ir::data_type::float32, {ir::dim{"batch"}, ir::dim{3}}, true, false},
               runtime::io_info{"n", ir::data_type::int64, {}, true, false}};
  return m;
}

json request_with(json x, json ids = {{"name", "ids"}, {"datatype", "INT64"}, {"shape", {2}}, {"data", {7, 8}}}) {
  return {{"inputs", {std::move(x), std::move(ids)}}};
}

json good_x() { return {{"name", "x"}, {"datatype", "FP32"}, {"shape", {2, 3}}, {"data", {1, 2, 3, 4, 5, 6}}}; }

serve::decoded_request decode(const json& j) { return serve::decode_infer_request(j.dump(), std::nullopt, two_inputs()); }

}  // namespace

TEST_CASE("kserve decodes JSON inputs, flat or nested, with their parameters", "[serve][kserve]") {
  json nested = good_x();
  nested["data"] = {{1, 2, 3}, {4, 5, 6}};
  for (const json& x : {good_x(), nested}) {
    json j = request_with(x);
    j["id"] = "abc";
    j["parameters"] = {{"priority", 2}, {"timeout", 5000}};
    const serve::decoded_request r = decode(j);
    CHECK(r.id == "abc");
    CHECK(r.priority == 2);
    CHECK(r.timeout == std::chrono::microseconds(5000));
    CHECK(r.inputs.at("x").to_float() == std::vector<float>{1, 2, 3, 4, 5, 6});
    CHECK(r.inputs.at("ids").to_int64() == std::vector<std::int64_t>{7, 8});
    CHECK(r.inputs.at("x").shape() == runtime::shape_t{2, 3});
  }
}

TEST_CASE("kserve decodes binary tensors after the JSON header", "[serve][kserve]") {
  const std::vector<float> x{1.5f, -2, 3, 4, 5, 6};
  const std::vector<std::int64_t> ids{9, 10};
  json header{{"inputs",
               {{{"name", "x"}, {"datatype", "FP32"}, {"shape", {2, 3}}, {"parameters", {{"binary_data_size", 24}}}},
                {{"name", "ids"}, {"datatype", "INT64"}, {"shape", {2}}, {"parameters", {{"binary_data_size", 16}}}}}},
              {"parameters", {{"binary_data_output", true}}}};
  std::string body = header.dump();
  const std::size_t length = body.size();
  body.append(reinterpret_cast<const char*>(x.data()), 24);
  body.append(reinterpret_cast<const char*>(ids.data()), 16);
  const serve::decoded_request r = serve::decode_infer_request(body, length, two_inputs());
  CHECK(r.inputs.at("x").to_float() == x);
  CHECK(r.inputs.at("ids").to_int64() == ids);
  CHECK(r.binary == std::vector<bool>{true, true});
  CHECK_THROWS_AS(serve::decode_infer_request(body.substr(0, body.size() - 1), length, two_inputs()), error);
  CHECK_THROWS_AS(serve::decode_infer_request(body + "x", length, two_inputs()), error);
  CHECK_THROWS_AS(serve::decode_infer_request(body, body.size() + 1, two_inputs()), error);
}

TEST_CASE("kserve refuses every malformed request with one error naming it", "[serve][kserve]") {
  const auto refused = [](const std::string& body, const std::string& says) {
    INFO(body);
    try {
      (void)serve::decode_infer_request(body, std::nullopt, two_inputs());
      FAIL("accepted");
    } catch (const error& e) {
      CHECK(e.code() == errc::invalid_argument);
      CHECK_THAT(e.what(), Catch::Contains(says));
    }
  };
  const auto with_x = [](const std::string& key, const json& value) {
    json x = good_x();
    x[key] = value;
    return request_with(x).dump();
  };
  refused("{\"inputs\": [", "not valid JSON");
  refused("[]", "not a JSON object");
  refused("{}", "no inputs array");
  refused(request_with({{"name", "z"}, {"datatype", "FP32"}, {"shape", {1}}, {"data", {1}}}).dump(), "no input 'z'");
  refused(json{{"inputs", {good_x()}}}.dump(), "input 'ids' is missing");
  refused(json{{"inputs", {good_x(), good_x()}}}.dump(), "given twice");
  refused(with_x("datatype", "INT32"), "the model expects FP32");
  refused(with_x("datatype", "BYTES"), "not supported");
  refused(with_x("shape", {2, 4}), "dim 1 = 4");
  refused(with_x("shape", {6}), "rank 1");
  refused(with_x("shape", {2, -3}), "non-negative");
  refused(with_x("shape", {1LL << 40, 3}), "more values than the request");
  refused(with_x("data", {1, 2, 3}), "3 values");
  refused(with_x("data", {1, 2, 3, 4, 5, "6"}), "numeric data holds string");
  refused(with_x("data", {{{1, 2, 3}}, {{4, 5, 6}}}), "nested deeper");
  refused(request_with(good_x(), {{"name", "ids"}, {"datatype", "INT64"}, {"shape", {2}}, {"data", {1.5, 2}}}).dump(), "integer data");
  json bad_output = request_with(good_x());
  bad_output["outputs"] = {{{"name", "nope"}}};
  refused(bad_output.dump(), "no output 'nope'");
  json bad_priority = request_with(good_x());
  bad_priority["parameters"] = {{"priority", "high"}};
  refused(bad_priority.dump(), "priority");
}

TEST_CASE("kserve encodes the requested outputs as JSON or binary", "[serve][kserve]") {
  const runtime::tensor_map outputs{{"y", tensor::from_values<float>({1, 3}, {0.5f, 1, 2})},
                                    {"n", tensor::from_values<std::int64_t>({}, {3})}};
  serve::decoded_request all = decode(request_with(good_x()));
  const serve::encoded_response plain = serve::encode_infer_response(two_inputs(), all, outputs);
  CHECK(!plain.header_length);
  const json j = json::parse(plain.body);
  CHECK(j["model_name"] == "m");
  CHECK(j["outputs"][0]["name"] == "y");
  CHECK(j["outputs"][0]["data"] == json{0.5, 1, 2});
  CHECK(j["outputs"][1]["shape"] == json::array());
  json one = request_with(good_x());
  one["outputs"] = {{{"name", "y"}, {"parameters", {{"binary_data", true}}}}};
  const serve::encoded_response binary = serve::encode_infer_response(two_inputs(), decode(one), outputs);
  REQUIRE(binary.header_length);
  const json header = json::parse(binary.body.substr(0, *binary.header_length));
  CHECK(header["outputs"].size() == 1);
  CHECK(header["outputs"][0]["parameters"]["binary_data_size"] == 12);
  std::vector<float> got(3);
  std::memcpy(got.data(), binary.body.data() + *binary.header_length, 12);
  CHECK(got == std::vector<float>{0.5f, 1, 2});
}

TEST_CASE("kserve metadata gives -1 for symbolic dims and errors stay valid JSON", "[serve][kserve]") {
  const json meta = json::parse(serve::model_metadata_json(two_inputs()));
  CHECK(meta["inputs"][0]["shape"] == json{-1, 3});
  CHECK(meta["inputs"][1]["datatype"] == "INT64");
  const json e = json::parse(serve::error_json("bad \xff name"));
  CHECK(e["error"].is_string());
}
