// The pass registry: registration, lookup, listing, suggestions and named pipelines.

#include "inferopt/pass/registry.hpp"

#include <algorithm>

#include <catch2/catch.hpp>

#include "inferopt/pass/cleanup/dead_node_elimination.hpp"
#include "inferopt/pass/cleanup/eliminate_dropout.hpp"
#include "inferopt/pass/cleanup/eliminate_identity.hpp"
#include "inferopt/pass/cleanup/remove_unused.hpp"
#include "pass/pass_test_util.hpp"

using namespace inferopt;

namespace {

std::vector<std::string> names_of(const pass_registry& r) {
  std::vector<std::string> out;
  for (const pass_registry::entry* e : r.passes()) out.push_back(e->name);
  return out;
}

pass_registry::factory make_always_changes() {
  return [] { return std::make_unique<test::always_changes>(); };
}

}  // namespace

TEST_CASE("a registry refuses a second pass under the same name", "[pass][registry]") {
  pass_registry r;
  r.add<dead_node_elimination>();
  SECTION("the same type again") {
    auto e = test::error_from([&] { r.add<dead_node_elimination>(); });
    REQUIRE(e.has_value());
    CHECK(e->code() == errc::invalid_argument);
    CHECK_THAT(e->what(), Catch::Contains("'dce'"));
  }
  SECTION("another factory under a taken name") {
    auto e = test::error_from([&] { r.add("dce", "something else", make_always_changes()); });
    REQUIRE(e.has_value());
    CHECK(e->code() == errc::invalid_argument);
  }
  CHECK(names_of(r) == std::vector<std::string>{"dce"});
  CHECK(r.passes().front()->description == "remove nodes whose outputs nothing reads");
}

TEST_CASE("a registry refuses a pass without a name or a factory", "[pass][registry]") {
  pass_registry r;
  CHECK_THROWS_AS(r.add("", "nameless", make_always_changes()), inferopt::error);
  CHECK_THROWS_AS(r.add("no-factory", "has no factory", nullptr), inferopt::error);
  CHECK(r.passes().empty());
}

TEST_CASE("create returns a fresh instance of the named pass each time", "[pass][registry]") {
  const pass_registry r = test::cleanup_registry();
  std::unique_ptr<pass> a = r.create("dce");
  std::unique_ptr<pass> b = r.create("dce");
  REQUIRE(a != nullptr);
  REQUIRE(b != nullptr);
  CHECK(a.get() != b.get());
  CHECK(a->name() == "dce");
  CHECK(dynamic_cast<dead_node_elimination*>(a.get()) != nullptr);
}

TEST_CASE("create throws inferopt::error for an unknown name", "[pass][registry]") {
  const pass_registry r = test::cleanup_registry();
  REQUIRE_THROWS_AS(r.create("fold-everything"), inferopt::error);
  SECTION("with the nearest names when some are close") {
    auto e = test::error_from([&] { (void)r.create("dec"); });
    REQUIRE(e.has_value());
    CHECK(e->code() == errc::invalid_argument);
    CHECK(std::string(e->what()).rfind("unknown pass 'dec'; did you mean 'dce'", 0) == 0);
  }
  SECTION("without suggestions when nothing is close") {
    auto e = test::error_from([&] { (void)r.create("zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"); });
    REQUIRE(e.has_value());
    CHECK(std::string(e->what()) == "unknown pass 'zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz'");
  }
  SECTION("in an empty registry") {
    auto e = test::error_from([] { (void)pass_registry{}.create("dce"); });
    REQUIRE(e.has_value());
    CHECK(std::string(e->what()) == "unknown pass 'dce'");
  }
}

TEST_CASE("passes() lists every pass sorted by name", "[pass][registry]") {
  pass_registry r;
  r.add<remove_unused>();
  r.add<eliminate_identity>();
  r.add<dead_node_elimination>();
  r.add<eliminate_dropout>();
  CHECK(names_of(r) == std::vector<std::string>{"dce", "eliminate-dropout", "eliminate-identity", "remove-unused"});

  r.add("zz-last", "added first", make_always_changes());
  r.add("aa-first", "added last", make_always_changes());
  r.add<test::option_pass>();
  const std::vector<std::string> names = names_of(r);
  CHECK(names.size() == 7);
  CHECK(std::is_sorted(names.begin(), names.end()));
  CHECK(names.front() == "aa-first");
  CHECK(names.back() == "zz-last");
}

TEST_CASE("the cleanup registry lists its passes sorted by name", "[pass][registry]") {
  const std::vector<std::string> names = names_of(test::cleanup_registry());
  CHECK(std::is_sorted(names.begin(), names.end()));
  CHECK(std::adjacent_find(names.begin(), names.end()) == names.end());
}

TEST_CASE("every listed entry carries a description and a factory for its own name", "[pass][registry]") {
  const pass_registry r = test::cleanup_registry();
  for (const pass_registry::entry* e : r.passes()) {
    CAPTURE(e->name);
    CHECK_FALSE(e->description.empty());
    std::unique_ptr<pass> p = e->make();
    REQUIRE(p != nullptr);
    CHECK(p->name() == e->name);
    CHECK(p->description() == e->description);
  }
}

TEST_CASE("contains tells registered names from others", "[pass][registry]") {
  const pass_registry r = test::cleanup_registry();
  CHECK(r.contains("dce"));
  CHECK(r.contains("eliminate-identity"));
  CHECK_FALSE(r.contains("dec"));
  CHECK_FALSE(r.contains(""));
  CHECK_FALSE(r.contains("O1"));  // a pipeline, not a pass
}

TEST_CASE("nearest ranks registered names by edit distance", "[pass][registry]") {
  const pass_registry r = test::cleanup_registry();
  auto [query, best] = GENERATE(table<std::string, std::string>({
      {"dec", "dce"},
      {"DCE", "dce"},
      {"eliminate-identiy", "eliminate-identity"},
      {"eliminate-droput", "eliminate-dropout"},
      {"remove-unsued", "remove-unused"},
      {"dropout", "eliminate-dropout"},  // a substring counts as close
  }));
  CAPTURE(query);
  std::vector<std::string> close = r.nearest(query);
  REQUIRE_FALSE(close.empty());
  CHECK(close.front() == best);
}

TEST_CASE("nearest returns at most count names and none when nothing is close", "[pass][registry]") {
  const pass_registry r = test::cleanup_registry();
  CHECK(r.nearest("eliminate", 1).size() == 1);
  CHECK(r.nearest("e", 2).size() == 2);
  CHECK(r.nearest("e").size() == 3);
  CHECK(r.nearest("qqqqqqqqqqqqqqqqqqqqqqqqqqqq").empty());
  CHECK(pass_registry{}.nearest("dce").empty());
}

TEST_CASE("named pipelines are found by name and listed sorted", "[pass][registry]") {
  pass_registry r;
  r.add_pipeline("fast", "dce", "just dce");
  r.add_pipeline("all", "eliminate-identity,dce", "everything");
  const pass_registry::named_pipeline* fast = r.find_pipeline("fast");
  REQUIRE(fast != nullptr);
  CHECK(fast->name == "fast");
  CHECK(fast->text == "dce");
  CHECK(fast->description == "just dce");
  CHECK(r.find_pipeline("slow") == nullptr);

  std::vector<std::string> names;
  for (const auto* p : r.pipelines()) names.push_back(p->name);
  CHECK(names == std::vector<std::string>{"all", "fast"});

  SECTION("registering a name again replaces the pipeline") {
    r.add_pipeline("fast", "remove-unused", "replaced");
    CHECK(r.find_pipeline("fast")->text == "remove-unused");
    CHECK(r.pipelines().size() == 2);
  }
}
