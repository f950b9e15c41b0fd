// The -O level pipelines of the built-in registry: what each level holds, and the levels
// refused.

#include <algorithm>

#include <catch2/catch.hpp>

#include "inferopt/builtin.hpp"
#include "pass/pass_test_util.hpp"

using namespace inferopt;

namespace {

std::vector<std::string> names_of(const std::vector<pipeline_step>& steps) {
  std::vector<std::string> out;
  for (const pipeline_step& s : steps) out.push_back(s.is_fixpoint() ? "fixpoint" : std::string(s.single->name()));
  return out;
}

}  // namespace

TEST_CASE("level_pipeline gives the pipelines registered for -O0 to -O3", "[builtin][levels]") {
  const pass_registry reg = builtin_registry();
  SECTION("-O0 does nothing") {
    pipeline p = level_pipeline(0, reg);
    CHECK(p.steps.empty());
  }
  SECTION("-O1 runs the cleanups to a fixpoint") {
    pipeline p = level_pipeline(1, reg);
    REQUIRE(p.steps.size() == 1);
    REQUIRE(p.steps[0].is_fixpoint());
    const std::vector<std::string> members = names_of(p.steps[0].group);
    for (const char* cleanup : {"eliminate-identity", "eliminate-dropout", "dce", "remove-unused"}) {
      CAPTURE(cleanup);
      CHECK(std::count(members.begin(), members.end(), cleanup) == 1);
    }
  }
  SECTION("every level prints as its registered text") {
    const int level = GENERATE(0, 1, 2, 3);
    CAPTURE(level);
    const auto* named = reg.find_pipeline("O" + std::to_string(level));
    REQUIRE(named != nullptr);
    CHECK(level_pipeline(level, reg).to_string() == named->text);
  }
  SECTION("disabled passes apply to levels too") {
    pipeline_parse_options options;
    options.disabled = {"dce", "remove-unused"};
    pipeline full = level_pipeline(1, reg);
    pipeline p = level_pipeline(1, reg, options);
    REQUIRE(p.steps.size() == 1);
    const std::vector<std::string> members = names_of(p.steps[0].group);
    CHECK(std::count(members.begin(), members.end(), "dce") == 0);
    CHECK(std::count(members.begin(), members.end(), "remove-unused") == 0);
    CHECK(p.pass_count() == full.pass_count() - 2);
  }
}

TEST_CASE("level_pipeline refuses levels outside 0..3", "[builtin][levels]") {
  const int level = GENERATE(-1, 4, 99);
  CAPTURE(level);
  auto e = test::error_from([&] { (void)level_pipeline(level, builtin_registry()); });
  REQUIRE(e.has_value());
  CHECK(e->code() == errc::invalid_argument);
  CHECK_THAT(e->what(), Catch::Contains("0..3") && Catch::Contains(std::to_string(level)));
}

