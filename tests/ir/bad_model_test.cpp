// Malformed model files: each is refused with one `inferopt::error` line naming the file and
// what is wrong, never a crash or an abort.

#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <random>
#include <string>

#include "inferopt/ir/sample_models.hpp"
#include "inferopt/ir/serialize.hpp"
#include "inferopt/ir/verify.hpp"
#include "support/paths.hpp"
#include "test_protos.hpp"
#include "test_util.hpp"

namespace fs = std::filesystem;
using namespace inferopt;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using test::error_from;

namespace {

/// Loads `path`, expecting an error of `code` whose message is one line; returns the message.
std::string load_error(const fs::path& path, errc code) {
  auto e = error_from([&] { (void)ir::load_model(path); });
  REQUIRE(e);
  const std::string message = e->what();
  CAPTURE(message);
  CHECK(e->code() == code);
  CHECK(message.find('\n') == std::string::npos);
  CHECK_FALSE(message.empty());
  return message;
}

std::string random_bytes(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::string out(n, '\0');
  for (char& c : out) c = static_cast<char>(byte(rng));
  return out;
}

}  // namespace

TEST_CASE("load_model refuses files that are not ONNX models", "[ir][bad-model]") {
  const test::scratch_folder scratch("bad_files");
  const fs::path& dir = scratch.path();
  const fs::path path = dir / "model.onnx";

  SECTION("a missing file") {
    CHECK_THAT(load_error(dir / "absent.onnx", errc::io), Contains("absent.onnx") && Contains("no such file"));
  }

  SECTION("a folder") {
    fs::create_directory(path);
    CHECK_THAT(load_error(path, errc::io), Contains("directory"));
  }

  SECTION("an empty file") {
    test::write_bytes(path, "");
    CHECK_THAT(load_error(path, errc::invalid_model), StartsWith("model.onnx: ") && Contains("empty"));
  }

  SECTION("random bytes") {
    const std::uint32_t seed = GENERATE(1u, 2u, 3u, 4u, 5u);
    CAPTURE(seed);
    test::write_bytes(path, random_bytes(4096, seed));
    CHECK_THAT(load_error(path, errc::invalid_model), StartsWith("model.onnx: "));
  }

  SECTION("text") {
    test::write_bytes(path, "graph main (x) { y = Relu(x) }\n");
    CHECK_THAT(load_error(path, errc::invalid_model), StartsWith("model.onnx: "));
  }

  SECTION("the first half of a real model") {
    const std::string whole = ir::serialize_model(ir::make_default_model());
    test::write_bytes(path, whole.substr(0, whole.size() / 2));
    CHECK_THAT(load_error(path, errc::invalid_model), StartsWith("model.onnx: ") && Contains("truncated"));
  }

  SECTION("a model with no graph") {
    onnx::ModelProto mp = test::relu_model_proto();
    mp.clear_graph();
    test::write_proto(mp, path);
    CHECK_THAT(load_error(path, errc::invalid_model), Contains("no graph"));
  }

  SECTION("a message with no ir_version") {
    onnx::ModelProto mp = test::relu_model_proto();
    mp.clear_ir_version();
    test::write_proto(mp, path);
    CHECK_THAT(load_error(path, errc::invalid_model), Contains("ir_version"));
  }
}

TEST_CASE("load_model refuses tensors whose data does not match their dims", "[ir][bad-model]") {
  const test::scratch_folder scratch("bad_tensors");
  const fs::path& dir = scratch.path();
  const fs::path path = dir / "model.onnx";
  onnx::ModelProto mp = test::relu_model_proto();
  onnx::GraphProto& g = *mp.mutable_graph();
  std::string expected;

  SECTION("raw_data shorter than the dims need") {
    test::add_float_initializer(g, "w", {2, 3}, 5);
    expected = "raw_data has 20 bytes, its dims need 24";
  }

  SECTION("raw_data longer than the dims need") {
    test::add_float_initializer(g, "w", {2, 3}, 7);
    expected = "raw_data has 28 bytes";
  }

  SECTION("typed values fewer than the dims need") {
    onnx::TensorProto& t = *g.add_initializer();
    t.set_name("w");
    t.set_data_type(onnx::TensorProto::INT64);
    t.add_dims(3);
    t.add_int64_data(1);
    expected = "holds 1 values, its dims need 3";
  }

  SECTION("dims whose product overflows int64") {
    onnx::TensorProto& t = test::add_float_initializer(g, "w", {}, 1);
    t.add_dims(std::int64_t{1} << 32);
    t.add_dims(std::int64_t{1} << 32);
    expected = "overflow";
  }

  SECTION("dims whose byte size overflows") {
    onnx::TensorProto& t = test::add_float_initializer(g, "w", {}, 1);
    t.add_dims(std::int64_t{1} << 62);
    expected = "overflow";
  }

  SECTION("a negative dim") {
    test::add_float_initializer(g, "w", {-2, 3}, 6);
    expected = "negative";
  }

  SECTION("a bad tensor inside a Constant node's attribute") {
    onnx::NodeProto& n = test::add_node(g, "Constant", {}, {"c"}, "const");
    onnx::AttributeProto& a = *n.add_attribute();
    a.set_name("value");
    a.set_type(onnx::AttributeProto::TENSOR);
    a.mutable_t()->set_name("w");
    a.mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
    a.mutable_t()->add_dims(4);
    a.mutable_t()->set_raw_data(std::string(3, '\0'));
    expected = "raw_data has 3 bytes, its dims need 16";
  }

  test::write_proto(mp, path);
  CHECK_THAT(load_error(path, errc::invalid_model), StartsWith("model.onnx: ") && Contains("'w'") && Contains(expected));
}

TEST_CASE("load_model refuses a graph whose nodes form a cycle, naming a node on it", "[ir][bad-model]") {
  const test::scratch_folder scratch("bad_cycle");
  const fs::path& dir = scratch.path();
  const fs::path path = dir / "model.onnx";
  onnx::ModelProto mp = test::relu_model_proto();
  onnx::GraphProto& g = *mp.mutable_graph();
  g.clear_node();

  SECTION("two nodes consuming each other's outputs") {
    test::add_node(g, "Add", {"x", "b"}, {"a"}, "first");
    test::add_node(g, "Relu", {"a"}, {"b"}, "second");
    test::add_node(g, "Identity", {"a"}, {"y"}, "tail");
  }

  SECTION("a node consuming its own output") {
    test::add_node(g, "Identity", {"a"}, {"y"}, "tail");
    test::add_node(g, "Add", {"x", "a"}, {"a"}, "first");
  }

  test::write_proto(mp, path);
  const std::string message = load_error(path, errc::invalid_model);
  CHECK_THAT(message, StartsWith("model.onnx: ") && Contains("cycle"));
  CHECK_THAT(message, Contains("'first'") || Contains("'second'"));
}

TEST_CASE("load_model refuses a value defined twice", "[ir][bad-model]") {
  const test::scratch_folder scratch("bad_duplicate");
  const fs::path& dir = scratch.path();
  const fs::path path = dir / "model.onnx";
  onnx::ModelProto mp = test::relu_model_proto();
  onnx::GraphProto& g = *mp.mutable_graph();
  std::string twice;

  SECTION("two nodes with the same output") {
    test::add_node(g, "Neg", {"x"}, {"y"}, "again");
    twice = "'y'";
  }

  SECTION("a node output named like a graph input") {
    test::add_node(g, "Neg", {"y"}, {"x"}, "again");
    twice = "'x'";
  }

  SECTION("two initializers with the same name") {
    test::add_float_initializer(g, "w", {2}, 2);
    test::add_float_initializer(g, "w", {2}, 2);
    twice = "'w'";
  }

  SECTION("two graph inputs with the same name") {
    test::set_float_info(*g.add_input(), "x", {1, 4});
    twice = "'x'";
  }

  test::write_proto(mp, path);
  CHECK_THAT(load_error(path, errc::invalid_model), StartsWith("model.onnx: ") && Contains(twice) &&
                                                        Contains("defined twice"));
}

TEST_CASE("a node reading an undefined name loads, and verify names the node and the input", "[ir][bad-model]") {
  const test::scratch_folder scratch("bad_missing_input");
  const fs::path& dir = scratch.path();
  const fs::path path = dir / "model.onnx";
  onnx::ModelProto mp = test::relu_model_proto();
  onnx::GraphProto& g = *mp.mutable_graph();
  g.mutable_output(0)->set_name("z");
  test::add_node(g, "Add", {"y", "missing_bias"}, {"z"}, "add_bias");
  test::write_proto(mp, path);

  ir::model m = ir::load_model(path);
  REQUIRE(m.graph().node_count() == 2);
  const ir::value* missing = m.graph().find_value("missing_bias");
  REQUIRE(missing);
  CHECK(missing->origin() == ir::value_origin::undefined);

  auto e = error_from([&] { ir::verify(m.graph()); });
  REQUIRE(e);
  CHECK(e->code() == errc::verification);
  CHECK_THAT(e->what(), Contains("'add_bias'") && Contains("'missing_bias'"));
  CHECK(std::string(e->what()).find('\n') == std::string::npos);

  // Saving keeps the dangling name, so the file round-trips as it was.
  CHECK(ir::canonicalize_model_bytes(ir::serialize_model(m)) == ir::canonicalize_model_bytes(test::bytes_of(mp)));
}
