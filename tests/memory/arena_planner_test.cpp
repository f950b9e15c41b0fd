#include "inferopt/memory/arena_planner.hpp"

#include "inferopt/core/error.hpp"

#include <catch2/catch.hpp>
#include <iostream>
#include <random>
#include <vector>

using namespace inferopt;
using memory::tensor_lifetime;

namespace {

// Pisarchyk & Lee (2020), the example network of the greedy-by-size figure.
std::vector<tensor_lifetime> paper_example() {
  const std::size_t rows[][3] = {{0, 1, 32}, {1, 4, 28}, {2, 5, 36}, {3, 5, 16},
                                 {4, 5, 8},  {5, 7, 64}, {6, 8, 10}, {7, 8, 40}};
  std::vector<tensor_lifetime> t;
  for (std::size_t i = 0; i < 8; ++i) t.push_back({i, rows[i][2], rows[i][0], rows[i][1], std::nullopt});
  return t;
}

}  // namespace

TEST_CASE("arena planner places the paper's example in 124 bytes", "[memory][arena_planner]") {
  const auto tensors = paper_example();
  const memory::arena_plan plan = memory::plan_arena(tensors, 1);
  std::cout << "paper example: arena " << plan.arena_bytes << ", lower bound " << plan.lower_bound_bytes
            << ", naive " << plan.naive_bytes << " bytes\n";
  CHECK(plan.arena_bytes == 124);
  CHECK(plan.lower_bound_bytes == 124);
  CHECK(plan.naive_bytes == 234);
  CHECK(memory::check_plan(tensors, plan, 1).empty());
}

TEST_CASE("arena planner aligns offsets and sizes", "[memory][arena_planner]") {
  const auto tensors = paper_example();
  const memory::arena_plan plan = memory::plan_arena(tensors, 64);
  for (std::size_t off : plan.offsets) CHECK(off % 64 == 0);
  CHECK(plan.naive_bytes == 8 * 64);
  CHECK(plan.arena_bytes >= plan.lower_bound_bytes);
  CHECK(memory::check_plan(tensors, plan, 64).empty());
}

TEST_CASE("arena planner passes its checker on random lifetimes and never beats the lower bound",
          "[memory][arena_planner]") {
  std::mt19937 rng(20240607);
  std::size_t worse = 0;
  for (int round = 0; round < 300; ++round) {
    const std::size_t steps = std::uniform_int_distribution<std::size_t>(1, 40)(rng);
    const std::size_t count = std::uniform_int_distribution<std::size_t>(1, 60)(rng);
    const std::size_t alignment = std::size_t{1} << std::uniform_int_distribution<int>(0, 7)(rng);
    std::vector<tensor_lifetime> tensors;
    for (std::size_t i = 0; i < count; ++i) {
      std::size_t a = std::uniform_int_distribution<std::size_t>(0, steps - 1)(rng);
      std::size_t b = std::uniform_int_distribution<std::size_t>(0, steps - 1)(rng);
      if (a > b) std::swap(a, b);
      tensors.push_back({i, std::uniform_int_distribution<std::size_t>(0, 5000)(rng), a, b, std::nullopt});
    }
    CAPTURE(round, count, steps, alignment);
    const memory::arena_plan plan = memory::plan_arena(tensors, alignment);
    const auto problems = memory::check_plan(tensors, plan, alignment);
    REQUIRE(problems.empty());
    REQUIRE(plan.arena_bytes >= plan.lower_bound_bytes);
    REQUIRE(plan.arena_bytes <= plan.naive_bytes);
    worse += plan.arena_bytes > plan.lower_bound_bytes;
  }
  std::cout << "random lifetimes: " << worse << " of 300 plans above the lower bound\n";
}

TEST_CASE("arena planner reuses an input's memory in place when the hint allows", "[memory][arena_planner]") {
  // x (0..1) feeds y in place at step 1; z is live beside them.
  std::vector<tensor_lifetime> tensors = {
      {10, 256, 0, 1, std::nullopt}, {11, 256, 1, 2, std::size_t{10}}, {12, 128, 0, 2, std::nullopt}};
  SECTION("the hint is honoured") {
    const memory::arena_plan plan = memory::plan_arena(tensors, 64);
    CHECK(plan.in_place[1]);
    CHECK(plan.in_place_count == 1);
    CHECK(plan.offsets[1] == plan.offsets[0]);
    CHECK(plan.arena_bytes == 384);
    CHECK(memory::check_plan(tensors, plan, 64).empty());
  }
  SECTION("an output larger than its input is placed normally") {
    tensors[1].size = 512;
    const memory::arena_plan plan = memory::plan_arena(tensors, 64);
    CHECK_FALSE(plan.in_place[1]);
    CHECK(memory::check_plan(tensors, plan, 64).empty());
  }
  SECTION("an input that lives on past the output's first step is not reused") {
    tensors[0].last_use = 2;
    const memory::arena_plan plan = memory::plan_arena(tensors, 64);
    CHECK_FALSE(plan.in_place[1]);
    CHECK(plan.arena_bytes == 640);
    CHECK(memory::check_plan(tensors, plan, 64).empty());
  }
}

TEST_CASE("arena plan checker finds overlapping, misaligned and out-of-arena tensors", "[memory][arena_planner]") {
  const std::vector<tensor_lifetime> tensors = {{0, 100, 0, 2, std::nullopt}, {1, 100, 1, 3, std::nullopt}};
  memory::arena_plan plan = memory::plan_arena(tensors, 64);
  REQUIRE(memory::check_plan(tensors, plan, 64).empty());
  SECTION("overlap") {
    plan.offsets[1] = plan.offsets[0];
    CHECK(memory::check_plan(tensors, plan, 64).size() == 1);
  }
  SECTION("misaligned") {
    plan.offsets[1] += 1;
    CHECK_FALSE(memory::check_plan(tensors, plan, 64).empty());
  }
  SECTION("past the end") {
    plan.arena_bytes = 150;
    CHECK_FALSE(memory::check_plan(tensors, plan, 64).empty());
  }
}

TEST_CASE("arena planner refuses bad alignments, reversed lifetimes and unknown hints", "[memory][arena_planner]") {
  std::vector<tensor_lifetime> tensors = {{0, 8, 0, 1, std::nullopt}};
  REQUIRE_THROWS_AS(memory::plan_arena(tensors, 3), inferopt::error);
  tensors[0].first_use = 2;
  REQUIRE_THROWS_AS(memory::plan_arena(tensors, 8), inferopt::error);
  tensors[0].first_use = 0;
  tensors[0].may_alias_input_of = 7;
  REQUIRE_THROWS_AS(memory::plan_arena(tensors, 8), inferopt::error);
  tensors.push_back({0, 8, 0, 1, std::nullopt});
  tensors[0].may_alias_input_of.reset();
  REQUIRE_THROWS_AS(memory::plan_arena(tensors, 8), inferopt::error);
}
