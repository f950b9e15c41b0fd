// Pipeline text: parsing, options, fixpoint groups, errors, disabled passes, printing back.
// The -O levels themselves are tested with the built-in registry (tests/builtin).

#include "inferopt/pass/pipeline.hpp"

#include <algorithm>

#include <catch2/catch.hpp>

#include "pass/pass_test_util.hpp"

using namespace inferopt;

namespace {

const pass_registry& registry() {
  static const pass_registry r = test::test_registry();
  return r;
}

std::vector<std::string> names_of(const std::vector<pipeline_step>& steps) {
  std::vector<std::string> out;
  for (const pipeline_step& s : steps) out.push_back(s.is_fixpoint() ? "fixpoint" : std::string(s.single->name()));
  return out;
}

test::option_pass& option_pass_of(const pipeline_step& s) {
  auto* p = dynamic_cast<test::option_pass*>(s.single.get());
  REQUIRE(p != nullptr);
  return *p;
}

/// The error parsing `text` throws (the test fails when it parses).
inferopt::error parse_error(std::string_view text, const pipeline_parse_options& options = {}) {
  auto e = test::error_from([&] { (void)parse_pipeline(text, registry(), options); });
  REQUIRE(e.has_value());
  CHECK(e->code() == errc::invalid_argument);
  return *e;
}

}  // namespace

TEST_CASE("a comma-separated list parses into pass steps in order", "[pass][pipeline]") {
  pipeline p = parse_pipeline("eliminate-identity,dce,remove-unused", registry());
  REQUIRE(names_of(p.steps) == std::vector<std::string>{"eliminate-identity", "dce", "remove-unused"});
  CHECK(p.pass_count() == 3);
  CHECK(p.to_string() == "eliminate-identity,dce,remove-unused");
}

TEST_CASE("an empty or blank pipeline has no steps", "[pass][pipeline]") {
  const std::string text = GENERATE(as<std::string>{}, "", "   ", " \t\n ");
  CAPTURE(text);
  pipeline p = parse_pipeline(text, registry());
  CHECK(p.steps.empty());
  CHECK(p.pass_count() == 0);
  CHECK(p.to_string().empty());
}

TEST_CASE("a pass listed twice gets two independent instances", "[pass][pipeline]") {
  pipeline p = parse_pipeline("dce,dce", registry());
  REQUIRE(p.steps.size() == 2);
  CHECK(p.steps[0].single.get() != p.steps[1].single.get());
}

TEST_CASE("options in braces reach the pass through set_option", "[pass][pipeline]") {
  SECTION("several options") {
    pipeline p = parse_pipeline("test-options{times=3,label=hello world}", registry());
    REQUIRE(p.steps.size() == 1);
    test::option_pass& o = option_pass_of(p.steps[0]);
    CHECK(o.times == 3);
    CHECK(o.label == "hello world");
  }
  SECTION("spaces around keys and values are trimmed") {
    pipeline p = parse_pipeline("test-options{ times = 4 , label = x }", registry());
    test::option_pass& o = option_pass_of(p.steps[0]);
    CHECK(o.times == 4);
    CHECK(o.label == "x");
  }
  SECTION("empty braces set nothing") {
    pipeline p = parse_pipeline("test-options{}", registry());
    test::option_pass& o = option_pass_of(p.steps[0]);
    CHECK_FALSE(o.times.has_value());
    CHECK_FALSE(o.label.has_value());
  }
  SECTION("each instance gets its own options") {
    pipeline p = parse_pipeline("test-options{times=1},test-options{times=2}", registry());
    CHECK(option_pass_of(p.steps[0]).times == 1);
    CHECK(option_pass_of(p.steps[1]).times == 2);
  }
}

TEST_CASE("an option the pass does not know is refused naming the pass and the key", "[pass][pipeline]") {
  inferopt::error e = parse_error("eliminate-identity,dce{ratio=0.5}");
  CHECK_THAT(e.what(), Catch::Contains("pass 'dce'") && Catch::Contains("'ratio'"));
}

TEST_CASE("a bad option value is refused with the pass's own message", "[pass][pipeline]") {
  inferopt::error e = parse_error("test-options{times=many}");
  CHECK_THAT(e.what(), Catch::Contains("test-options") && Catch::Contains("'many'"));
}

TEST_CASE("a fixpoint group takes its members and max-iterations", "[pass][pipeline]") {
  SECTION("explicit cap") {
    pipeline p = parse_pipeline("fixpoint{max-iterations=3}(eliminate-identity,dce)", registry());
    REQUIRE(p.steps.size() == 1);
    const pipeline_step& group = p.steps[0];
    REQUIRE(group.is_fixpoint());
    CHECK(group.max_iterations == 3);
    CHECK(names_of(group.group) == std::vector<std::string>{"eliminate-identity", "dce"});
    CHECK(p.pass_count() == 2);
  }
  SECTION("default cap") {
    pipeline p = parse_pipeline("dce,fixpoint(eliminate-identity)", registry());
    REQUIRE(p.steps.size() == 2);
    CHECK(p.steps[1].is_fixpoint());
    CHECK(p.steps[1].max_iterations == pipeline_step{}.max_iterations);
  }
}

TEST_CASE("fixpoint groups nest", "[pass][pipeline]") {
  pipeline p = parse_pipeline(
      "fixpoint{max-iterations=2}(dce,fixpoint{max-iterations=5}(eliminate-identity,eliminate-dropout),remove-unused)",
      registry());
  REQUIRE(p.steps.size() == 1);
  const pipeline_step& outer = p.steps[0];
  CHECK(outer.max_iterations == 2);
  REQUIRE(names_of(outer.group) == std::vector<std::string>{"dce", "fixpoint", "remove-unused"});
  const pipeline_step& inner = outer.group[1];
  CHECK(inner.max_iterations == 5);
  CHECK(names_of(inner.group) == std::vector<std::string>{"eliminate-identity", "eliminate-dropout"});
  CHECK(p.pass_count() == 4);
}

TEST_CASE("a bad max-iterations is refused at the fixpoint's column", "[pass][pipeline]") {
  const std::string value = GENERATE(as<std::string>{}, "0", "-1", "abc", "3x", "");
  CAPTURE(value);
  inferopt::error e = parse_error("dce,fixpoint{max-iterations=" + value + "}(dce)");
  CHECK_THAT(e.what(), Catch::StartsWith("pipeline column 5: ") && Catch::Contains("max-iterations"));
}

TEST_CASE("a fixpoint option other than max-iterations is refused", "[pass][pipeline]") {
  inferopt::error e = parse_error("fixpoint{depth=2}(dce)");
  CHECK_THAT(e.what(), Catch::StartsWith("pipeline column 1: ") && Catch::Contains("'depth'"));
}

TEST_CASE("whitespace around names, commas, braces and parentheses is ignored", "[pass][pipeline]") {
  pipeline p = parse_pipeline(
      "  dce ,\n\tfixpoint { max-iterations = 2 } ( eliminate-identity , dce ) ,  test-options { label = x }  ",
      registry());
  CHECK(p.to_string() == "dce,fixpoint{max-iterations=2}(eliminate-identity,dce),test-options{label=x}");
}

TEST_CASE("a syntax error names the column where parsing stopped", "[pass][pipeline]") {
  auto [text, column, what] = GENERATE(table<std::string, int, std::string>({
      {"dce,,eliminate-identity", 5, "expected a pass name"},
      {"dce,", 5, "expected a pass name"},
      {",dce", 1, "expected a pass name"},
      {"dce eliminate-identity", 5, "unexpected 'e'"},
      {"dce)", 4, "unexpected ')'"},
      {"dce;remove-unused", 4, "unexpected ';'"},
      {"fixpoint dce", 10, "expected '(' after fixpoint"},
      {"fixpoint(dce", 13, "expected ')' to close fixpoint"},
      {"fixpoint(dce remove-unused)", 14, "expected ')' to close fixpoint"},
      {"fixpoint()", 10, "expected a pass name"},
      {"test-options{=1}", 14, "expected an option name"},
      {"test-options{times}", 19, "expected '=' after option 'times'"},
      {"test-options{times=1", 21, "expected ',' or '}' in options"},
  }));
  CAPTURE(text);
  inferopt::error e = parse_error(text);
  CHECK(std::string(e.what()) == "pipeline column " + std::to_string(column) + ": " + what);
}

TEST_CASE("an unknown pass name is refused with the nearest known names", "[pass][pipeline]") {
  SECTION("a transposed name") {
    inferopt::error e = parse_error("eliminate-identity,dec");
    CHECK_THAT(e.what(), Catch::Contains("unknown pass 'dec'") && Catch::Contains("did you mean 'dce'"));
  }
  SECTION("a misspelled name") {
    inferopt::error e = parse_error("eliminate-identiy");
    CHECK_THAT(e.what(), Catch::Contains("unknown pass 'eliminate-identiy'") &&
                             Catch::Contains("did you mean 'eliminate-identity'"));
  }
  SECTION("inside a fixpoint") {
    inferopt::error e = parse_error("fixpoint(dce,remove-unsued)");
    CHECK_THAT(e.what(), Catch::Contains("'remove-unused'"));
  }
  SECTION("a name like nothing registered has no suggestion") {
    inferopt::error e = parse_error("zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz");
    CHECK_THAT(e.what(), Catch::Contains("unknown pass") && !Catch::Contains("did you mean"));
  }
}

TEST_CASE("disabled passes are dropped wherever they appear", "[pass][pipeline]") {
  pipeline_parse_options options;
  options.disabled = {"dce"};
  auto text = [&](std::string_view t) { return parse_pipeline(t, registry(), options).to_string(); };

  SECTION("top level and inside a group") {
    CHECK(text("eliminate-identity,dce,fixpoint{max-iterations=3}(dce,remove-unused)") ==
          "eliminate-identity,fixpoint{max-iterations=3}(remove-unused)");
  }
  SECTION("a fixpoint whose members are all disabled disappears") {
    pipeline p = parse_pipeline("fixpoint(dce),remove-unused", registry(), options);
    CHECK(p.to_string() == "remove-unused");
    CHECK(p.steps.size() == 1);
  }
  SECTION("so does an outer fixpoint left with only such groups") {
    pipeline p = parse_pipeline("fixpoint(fixpoint(dce,dce),dce)", registry(), options);
    CHECK(p.steps.empty());
    CHECK(p.pass_count() == 0);
  }
  SECTION("several disabled passes") {
    options.disabled.insert("remove-unused");
    CHECK(text("dce,eliminate-identity,remove-unused") == "eliminate-identity");
  }
}

TEST_CASE("a misspelled disabled pass is still reported with suggestions", "[pass][pipeline]") {
  pipeline_parse_options options;
  options.disabled = {"dec"};
  inferopt::error e = parse_error("eliminate-identity,dec", options);
  CHECK_THAT(e.what(), Catch::Contains("unknown pass 'dec'") && Catch::Contains("'dce'"));
}

TEST_CASE("to_string prints text that parses back to the same pipeline", "[pass][pipeline]") {
  const std::string text = GENERATE(as<std::string>{}, "dce", "eliminate-identity,dce,remove-unused",
                                    "fixpoint(eliminate-identity,dce)", "test-changes{times=4},remove-unused",
                                    "fixpoint{max-iterations=3}(dce,fixpoint{max-iterations=2}(eliminate-identity,"
                                    "test-options{label=a,times=2}),remove-unused)",
                                    "fixpoint(fixpoint(fixpoint(dce)))");
  CAPTURE(text);
  const std::string printed = parse_pipeline(text, registry()).to_string();
  CHECK(printed == text);  // these texts are already in canonical form
  CHECK(parse_pipeline(printed, registry()).to_string() == printed);
}

TEST_CASE("to_string prints canonical text for any accepted spelling", "[pass][pipeline]") {
  auto [text, canonical] = GENERATE(table<std::string, std::string>({
      {" dce , remove-unused ", "dce,remove-unused"},
      {"fixpoint{max-iterations=8}(dce)", "fixpoint(dce)"},  // 8 is the default cap
      {"test-options{times=2,label=b}", "test-options{label=b,times=2}"},  // options print sorted by key
      {"test-options{}", "test-options"},
  }));
  CAPTURE(text);
  pipeline p = parse_pipeline(text, registry());
  CHECK(p.to_string() == canonical);
  CHECK(parse_pipeline(p.to_string(), registry()).to_string() == canonical);
}

TEST_CASE("the free to_string prints a step list like pipeline::to_string", "[pass][pipeline]") {
  pipeline p = parse_pipeline("dce,fixpoint{max-iterations=2}(eliminate-identity,dce)", registry());
  CHECK(to_string(p.steps) == p.to_string());
  CHECK(to_string(p.steps[1].group) == "eliminate-identity,dce");
}

TEST_CASE("level_pipeline refuses a registry without the level's pipeline", "[pass][pipeline]") {
  pass_registry reg;
  register_cleanup_passes(reg);
  auto e = test::error_from([&] { (void)level_pipeline(1, reg); });
  REQUIRE(e.has_value());
  CHECK(e->code() == errc::invalid_argument);
  CHECK_THAT(e->what(), Catch::Contains("-O1"));
}
