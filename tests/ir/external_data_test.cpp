// Saving with external data, loading it back, refusing hostile or inconsistent locations,
// and writing through a temporary file.

#include <catch2/catch.hpp>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <sys/stat.h>

#include "inferopt/ir/sample_models.hpp"
#include "inferopt/ir/serialize.hpp"
#include "inferopt/ir/verify.hpp"
#include "support/paths.hpp"
#include "test_protos.hpp"
#include "test_util.hpp"

namespace fs = std::filesystem;
using namespace inferopt;
using Catch::Matchers::Contains;
using test::error_from;

namespace {

constexpr std::size_t threshold = 1024;

std::size_t total_initializer_bytes(const ir::graph& g) {
  std::size_t total = 0;
  for (ir::value* v : g.initializers()) total += v->initializer()->byte_size();
  return total;
}

/// Saves a narrow ResNet-50 as `model.onnx` + `model.onnx.data` in a fresh folder.
test::scratch_folder save_external(const std::string& name, const ir::model& m) {
  test::scratch_folder dir(name);
  ir::save_model(m, dir / "model.onnx", ir::save_options{threshold, {}});
  return dir;
}

/// The first initializer stored externally, and the value of one of its external_data keys.
onnx::TensorProto& first_external(onnx::ModelProto& mp) {
  for (onnx::TensorProto& t : *mp.mutable_graph()->mutable_initializer()) {
    if (t.data_location() == onnx::TensorProto::EXTERNAL) return t;
  }
  FAIL("no initializer is stored externally");
  throw std::logic_error("unreachable");
}

void set_external_entry(onnx::TensorProto& t, const std::string& key, const std::string& value) {
  for (auto& kv : *t.mutable_external_data()) {
    if (kv.key() == key) {
      kv.set_value(value);
      return;
    }
  }
  FAIL("external data has no '" << key << "' entry");
}

std::string external_entry(const onnx::TensorProto& t, const std::string& key) {
  for (const auto& kv : t.external_data()) {
    if (kv.key() == key) return kv.value();
  }
  return {};
}

/// Loads `path` expecting an invalid-model error; returns its message.
std::string load_error(const fs::path& path) {
  auto e = error_from([&] { (void)ir::load_model(path); });
  REQUIRE(e);
  CHECK(e->code() == errc::invalid_model);
  std::string message = e->what();
  CHECK(message.find('\n') == std::string::npos);
  return message;
}

}  // namespace

TEST_CASE("tensors over the threshold are saved externally and load back byte for byte", "[ir][external-data]") {
  const ir::model original = ir::make_resnet50(1, 8);
  const test::scratch_folder scratch = save_external("external_round_trip", original);
  const fs::path& dir = scratch.path();
  const fs::path model_path = dir / "model.onnx";
  const fs::path data_path = dir / "model.onnx.data";

  REQUIRE(fs::is_regular_file(model_path));
  REQUIRE(fs::is_regular_file(data_path));
  const std::size_t weights = total_initializer_bytes(original.graph());
  CHECK(fs::file_size(data_path) >= weights * 9 / 10);
  CHECK(fs::file_size(model_path) < weights / 20);

  SECTION("exactly the tensors of at least the threshold are external, at aligned offsets") {
    onnx::ModelProto mp = test::read_proto(model_path);
    std::size_t external = 0;
    for (const onnx::TensorProto& t : mp.graph().initializer()) {
      const ir::value* v = original.graph().find_value(t.name());
      REQUIRE(v);
      const bool is_external = t.data_location() == onnx::TensorProto::EXTERNAL;
      CAPTURE(t.name(), v->initializer()->byte_size());
      CHECK(is_external == (v->initializer()->byte_size() >= threshold));
      if (!is_external) continue;
      ++external;
      CHECK(external_entry(t, "location") == "model.onnx.data");
      CHECK(std::stoull(external_entry(t, "offset")) % 4096 == 0);
      CHECK(std::stoull(external_entry(t, "length")) == v->initializer()->byte_size());
      CHECK_FALSE(t.has_raw_data());
    }
    CHECK(external > 0);
  }

  SECTION("reloading gives every initializer its original bytes") {
    ir::model loaded = ir::load_model(model_path);
    REQUIRE(loaded.graph().initializers().size() == original.graph().initializers().size());
    for (ir::value* v : original.graph().initializers()) {
      const ir::value* w = loaded.graph().find_value(v->name());
      REQUIRE(w);
      REQUIRE(w->initializer());
      CAPTURE(v->name());
      CHECK(w->initializer()->dtype == v->initializer()->dtype);
      CHECK(w->initializer()->dims == v->initializer()->dims);
      REQUIRE(w->initializer()->has_data());
      CHECK(*w->initializer()->bytes == *v->initializer()->bytes);
    }
    CHECK(ir::find_problems(loaded.graph()).empty());
  }

  SECTION("a model loaded with its data can be saved inline again, equal to the original") {
    ir::model loaded = ir::load_model(model_path);
    CHECK(ir::serialize_model(loaded).size() > weights);
    ir::model reparsed = ir::parse_model(ir::serialize_model(loaded));
    for (ir::value* v : original.graph().initializers()) {
      CHECK(*reparsed.graph().find_value(v->name())->initializer()->bytes == *v->initializer()->bytes);
    }
  }
}

TEST_CASE("external data locations outside the model's folder are refused", "[ir][external-data]") {
  const test::scratch_folder scratch = save_external("external_escape", ir::make_resnet50(1, 8));
  const fs::path& dir = scratch.path();
  fs::create_directory_symlink("/etc", dir / "link_to_etc");

  auto [location, reason] = GENERATE(table<std::string, std::string>({
      {"../../etc/passwd", "escapes"},
      {"sub/../../model.onnx.data", "escapes"},
      {"/etc/passwd", "absolute"},
      {"link_to_etc/passwd", "escapes"},
  }));
  CAPTURE(location);

  onnx::ModelProto mp = test::read_proto(dir / "model.onnx");
  onnx::TensorProto& t = first_external(mp);
  const std::string tensor_name = t.name();
  set_external_entry(t, "location", location);
  test::write_proto(mp, dir / "hostile.onnx");

  const std::string message = load_error(dir / "hostile.onnx");
  CHECK_THAT(message, Contains(reason) && Contains(location) && Contains("'" + tensor_name + "'"));
  CHECK_THAT(message, Contains("hostile.onnx"));
}

TEST_CASE("external data that disagrees with its tensor is refused", "[ir][external-data]") {
  const test::scratch_folder scratch = save_external("external_mismatch", ir::make_resnet50(1, 8));
  const fs::path& dir = scratch.path();
  onnx::ModelProto mp = test::read_proto(dir / "model.onnx");
  onnx::TensorProto& t = first_external(mp);
  const std::uint64_t length = std::stoull(external_entry(t, "length"));

  SECTION("a length longer than the dims need") {
    set_external_entry(t, "length", std::to_string(length + 4));
    test::write_proto(mp, dir / "bad.onnx");
    CHECK_THAT(load_error(dir / "bad.onnx"), Contains("length " + std::to_string(length + 4)) &&
                                                 Contains("does not match"));
  }

  SECTION("a length shorter than the dims need") {
    set_external_entry(t, "length", std::to_string(length - 4));
    test::write_proto(mp, dir / "bad.onnx");
    CHECK_THAT(load_error(dir / "bad.onnx"), Contains("does not match"));
  }

  SECTION("a length that is not a number") {
    set_external_entry(t, "length", "12abc");
    test::write_proto(mp, dir / "bad.onnx");
    CHECK_THAT(load_error(dir / "bad.onnx"), Contains("not a non-negative decimal integer"));
  }

  SECTION("an offset that runs past the end of the file") {
    set_external_entry(t, "offset", std::to_string(fs::file_size(dir / "model.onnx.data")));
    test::write_proto(mp, dir / "bad.onnx");
    CHECK_THAT(load_error(dir / "bad.onnx"), Contains("runs past the end"));
  }

  SECTION("a data file that is missing") {
    set_external_entry(t, "location", "missing.data");
    test::write_proto(mp, dir / "bad.onnx");
    CHECK_THAT(load_error(dir / "bad.onnx"), Contains("'missing.data'"));
  }

  SECTION("a model read from memory, with no folder to resolve the location against") {
    auto e = error_from([&] { (void)ir::parse_model(test::bytes_of(mp)); });
    REQUIRE(e);
    CHECK(e->code() == errc::invalid_model);
    CHECK_THAT(e->what(), Contains("from memory"));
  }
}

TEST_CASE("save writes to a temporary file and renames it into place", "[ir][external-data][save]") {
  const test::scratch_folder scratch("atomic_save");
  const fs::path& dir = scratch.path();
  const ir::model m = ir::make_default_model();

  SECTION("a successful save leaves only the model and its data file") {
    ir::save_model(m, dir / "model.onnx", ir::save_options{threshold, {}});
    CHECK(test::folder_entries(dir) == std::vector<std::string>{"model.onnx", "model.onnx.data"});
    ir::save_model(m, dir / "inline.onnx");
    CHECK(test::folder_entries(dir) == std::vector<std::string>{"inline.onnx", "model.onnx", "model.onnx.data"});
    CHECK(test::read_bytes(dir / "inline.onnx") == ir::serialize_model(m));
  }

  SECTION("saving over a model replaces the file instead of rewriting it in place") {
    ir::save_model(m, dir / "model.onnx");
    const std::string old_bytes = test::read_bytes(dir / "model.onnx");
    fs::create_hard_link(dir / "model.onnx", dir / "old.onnx");

    const ir::model other = ir::make_default_model(2);
    ir::save_model(other, dir / "model.onnx");
    CHECK(test::read_bytes(dir / "old.onnx") == old_bytes);
    CHECK(test::read_bytes(dir / "model.onnx") == ir::serialize_model(other));
    CHECK_FALSE(fs::equivalent(dir / "old.onnx", dir / "model.onnx"));
    CHECK(test::folder_entries(dir) == std::vector<std::string>{"model.onnx", "old.onnx"});
  }

  SECTION("a saved file is readable by everyone, not left with a temporary file's mode") {
    ir::save_model(m, dir / "model.onnx", ir::save_options{threshold, {}});
    for (const char* name : {"model.onnx", "model.onnx.data"}) {
      struct stat st {};
      REQUIRE(::stat((dir / name).c_str(), &st) == 0);
      CHECK((st.st_mode & 0444) == 0444);
    }
  }

  SECTION("a failed save into a missing folder creates nothing") {
    auto with_external = GENERATE(false, true);
    CAPTURE(with_external);
    ir::save_options options;
    if (with_external) options.external_data_threshold = threshold;
    auto e = error_from([&] { ir::save_model(m, dir / "missing" / "model.onnx", options); });
    REQUIRE(e);
    CHECK(e->code() == errc::io);
    CHECK_THAT(e->what(), Contains("missing"));
    CHECK(std::string(e->what()).find('\n') == std::string::npos);
    CHECK_FALSE(fs::exists(dir / "missing"));
    CHECK(test::folder_entries(dir).empty());
  }
}
