// The regression corpus (tests/fuzz/regressions): every model a command once crashed on,
// hung on, exited 3 on, or accepted though onnxruntime refuses it. Every command must now
// refuse each one with exit code 2 and one error line containing the phrase `expected.tsv`
// lists for it, print nothing on stdout, write nothing and leave the input untouched. A model
// listed with `*` is valid (it crashed a command once): every command finishes or refuses it.

#include <fstream>

#include <catch2/catch.hpp>

#include "cli/cli_support.hpp"
#include "cli/every_command.hpp"

namespace {

using namespace inferopt::test;

/// The phrase of a model some command may accept: it once crashed one, and must not again.
const std::string any_outcome = "*";

struct regression {
  std::string file;
  std::string phrase;
};

std::vector<regression> listed_regressions() {
  std::ifstream in(fs::path(INFEROPT_REGRESSIONS) / "expected.tsv");
  std::vector<regression> out;
  for (std::string line; std::getline(in, line);) {
    const auto tab = line.find('\t');
    if (line.empty() || line[0] == '#' || tab == std::string::npos) continue;
    out.push_back({line.substr(0, tab), line.substr(tab + 1)});
  }
  return out;
}

}  // namespace

TEST_CASE("the regression corpus lists every model it holds", "[cli][bad-input][regressions]") {
  std::vector<std::string> listed;
  for (const regression& r : listed_regressions()) listed.push_back(r.file);
  std::vector<std::string> present;
  for (const auto& entry : fs::directory_iterator(INFEROPT_REGRESSIONS)) {
    if (entry.path().extension() == ".onnx") present.push_back(entry.path().filename().string());
  }
  std::sort(listed.begin(), listed.end());
  std::sort(present.begin(), present.end());
  CHECK(listed == present);
  CHECK(listed.size() >= 20);
}

namespace {

/// Every command on the listed models whose index is `part` modulo `parts`: the corpus is
/// checked in parts so that ctest can run them side by side (a sanitized CLI start costs about
/// a quarter of a second, and this is 58 models times 15 commands).
void check_regressions(std::size_t part, std::size_t parts) {
  const std::vector<regression> listed = listed_regressions();
  REQUIRE(!listed.empty());
  for (std::size_t k = part; k < listed.size(); k += parts) {
    const regression& r = listed[k];
    CAPTURE(r.file);
    scratch root("regression");
    const fs::path in_dir = root.path() / "in";
    const fs::path out_dir = root.path() / "out";
    fs::create_directories(in_dir);
    fs::create_directories(out_dir);
    // External-data cases read their neighbour file; copy it along.
    for (const auto& entry : fs::directory_iterator(INFEROPT_REGRESSIONS)) {
      if (entry.path().extension() == ".bin") fs::copy_file(entry.path(), in_dir / entry.path().filename());
    }
    const fs::path model = in_dir / r.file;
    fs::copy_file(fs::path(INFEROPT_REGRESSIONS) / r.file, model);
    const std::string bytes = read_bytes(model);
    const auto in_entries = folder_entries(in_dir);
    for (const auto& args : every_command(model, out_dir)) {
      CAPTURE(args);
      const process_result result = run_cli(args);
      CAPTURE(result.err);
      if (r.phrase == any_outcome) {
        // A valid model that once crashed a command: done or refused, never worse.
        REQUIRE(result.exited());
        CHECK((result.exit_code == 0 || (result.exit_code == 2 && is_one_error_line(result.err))));
        CHECK(read_bytes(model) == bytes);
      } else {
        check_refused(result, model, bytes, out_dir, {r.file, r.phrase});
      }
      CHECK(folder_entries(in_dir) == in_entries);
      fs::remove_all(out_dir);
      fs::create_directories(out_dir);
    }
  }
}

}  // namespace

TEST_CASE("every command refuses every regression model with exit 2, one line and no side effects (first half)",
          "[cli][bad-input][regressions]") {
  check_regressions(0, 2);
}

TEST_CASE("every command refuses every regression model with exit 2, one line and no side effects (second half)",
          "[cli][bad-input][regressions]") {
  check_regressions(1, 2);
}
