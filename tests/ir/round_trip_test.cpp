// Load -> save -> reload keeps every model equal under canonical protobuf comparison.

#include <catch2/catch.hpp>

#include <fstream>
#include <iostream>
#include <sstream>

#include "inferopt/ir/serialize.hpp"
#include "inferopt/ir/verify.hpp"
#include "support/paths.hpp"

namespace fs = std::filesystem;
using namespace inferopt;

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Returns an empty string when the model round-trips, else what went wrong.
std::string round_trip_problem(const fs::path& path) {
  const std::string original = read_file(path);
  try {
    ir::model m = ir::load_model(path);
    const std::string saved = ir::serialize_model(m);
    if (ir::canonicalize_model_bytes(original) != ir::canonicalize_model_bytes(saved)) return "differs after save";
    ir::model again = ir::parse_model(saved, path.parent_path());
    if (ir::serialize_model(again) != saved) return "differs after a second round trip";
    return {};
  } catch (const std::exception& e) {
    return e.what();
  }
}

std::vector<fs::path> models_under(const fs::path& dir, const std::string& suffix) {
  std::vector<fs::path> out;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && name.size() >= suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      out.push_back(entry.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

void check_all(const std::vector<fs::path>& models, const std::string& what) {
  std::size_t failed = 0;
  for (const fs::path& p : models) {
    std::string problem = round_trip_problem(p);
    if (!problem.empty()) {
      ++failed;
      UNSCOPED_INFO(p.string() << ": " << problem);
    }
  }
  std::cout << what << ": round-tripped " << models.size() - failed << " of " << models.size()
            << " models, " << failed << " differences\n";
  CHECK(failed == 0);
}

}  // namespace

TEST_CASE("every libonnx test model round-trips unchanged", "[ir][round-trip]") {
  auto dir = test::onnx_testdata_dir();
  if (!dir) {
    WARN("libonnx-testdata is not installed; skipped");
    return;
  }
  auto models = models_under(*dir, "model.onnx");
  REQUIRE(models.size() > 1000);
  check_all(models, "libonnx-testdata");
}

TEST_CASE("the light CNN models round-trip unchanged", "[ir][round-trip]") {
  auto dir = test::light_models_dir();
  if (!dir) {
    WARN("../shared/models/onnx-light is absent; skipped");
    return;
  }
  auto models = models_under(*dir, ".onnx");
  REQUIRE(models.size() == 9);
  check_all(models, "onnx-light");
}
