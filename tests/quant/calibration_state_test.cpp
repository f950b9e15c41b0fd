// calibration_state: per-tensor statistics keyed by name, merged across shards and saved in
// a binary format. Merging and the file must reproduce a single pass bit for bit.

#include "inferopt/quant/calibration_state.hpp"

#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "inferopt/core/error.hpp"

using namespace inferopt;
using quant::calibration_state;

namespace {

runtime::tensor random_tensor(float scale, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(256);
  for (float& x : v) x = normal(rng);
  return runtime::tensor::from_values<float>({16, 16}, v);
}

/// Batch b of tensors "a" and "b"; scales vary so shards start at different ranges.
void observe_batch(calibration_state& s, std::uint32_t b) {
  s.observe("a", random_tensor(0.01f * float(1u << (3 * (b % 3))), 100 + b));
  s.observe("b", random_tensor(float(9 - b), 200 + b));
}

}  // namespace

TEST_CASE("calibrating shards, merging and parsing back equals a single pass, bit for bit",
          "[quant][calibration-state]") {
  const std::uint32_t batches = 9;
  calibration_state single;
  for (std::uint32_t b = 0; b < batches; ++b) observe_batch(single, b);

  calibration_state merged;
  for (std::uint32_t shard = 0; shard < 3; ++shard) {
    calibration_state part;
    for (std::uint32_t b = 3 * shard; b < 3 * shard + 3; ++b) observe_batch(part, b);
    merged.merge(calibration_state::parse(part.serialize()));  // as if shards came from files
  }
  const calibration_state parsed = calibration_state::parse(merged.serialize());

  REQUIRE(parsed.tensors().size() == 2);
  for (const auto& [name, stats] : single.tensors()) {
    CAPTURE(name);
    const quant::tensor_statistics* other = parsed.find(name);
    REQUIRE(other != nullptr);
    CHECK(std::ranges::equal(other->abs_histogram(), stats.abs_histogram()));
    CHECK(std::ranges::equal(other->histogram(), stats.histogram()));
    CHECK(other->range_exponent() == stats.range_exponent());
    CHECK(other->min() == stats.min());
    CHECK(other->max() == stats.max());
    CHECK(other->count() == stats.count());
    CHECK(other->moving_min() == stats.moving_min());
    CHECK(other->moving_max() == stats.moving_max());
  }
  CHECK(merged.serialize() == single.serialize());
}

TEST_CASE("a calibration state survives serialization unchanged", "[quant][calibration-state]") {
  quant::statistics_options o;
  o.bins = 64;
  o.averaging_constant = 0.25;
  calibration_state s(o);
  for (std::uint32_t b = 0; b < 4; ++b) observe_batch(s, b);
  s.observe("nan", runtime::tensor::from_values<float>({2}, {std::numeric_limits<float>::quiet_NaN(), 0.0f}));
  const std::string bytes = s.serialize();
  const calibration_state back = calibration_state::parse(bytes);
  CHECK(back == s);
  CHECK(back.options() == o);
  CHECK(back.serialize() == bytes);
  CHECK(back.find("nan")->nan_count() == 1);
  CHECK(calibration_state::parse(calibration_state(o).serialize()).options() == o);
}

TEST_CASE("parsing refuses bytes that are not a whole calibration file", "[quant][calibration-state]") {
  calibration_state s;
  observe_batch(s, 0);
  const std::string bytes = s.serialize();
  CHECK_THROWS_AS(calibration_state::parse("not calibration"), error);
  CHECK_THROWS_AS(calibration_state::parse(bytes.substr(0, bytes.size() - 3)), error);
  CHECK_THROWS_AS(calibration_state::parse(bytes + "x"), error);
}

TEST_CASE("observing a float16 tensor converts it to float", "[quant][calibration-state]") {
  calibration_state s;
  // 0x3c00 = 1.0, 0xc000 = -2.0 in IEEE half precision.
  runtime::tensor half = runtime::tensor::from_values<std::uint16_t>({2}, {0x3c00, 0xc000});
  runtime::tensor as_half = runtime::tensor::view(ir::data_type::float16, {2}, half.raw(),
                                                  std::shared_ptr<const void>(std::make_shared<runtime::tensor>(half), half.raw()));
  s.observe("h", as_half);
  CHECK(s.find("h")->min() == -2.0);
  CHECK(s.find("h")->max() == 1.0);
  CHECK(quant::is_floating_tensor("h", ir::data_type::float16));
  CHECK_FALSE(quant::is_floating_tensor("i", ir::data_type::int64));
}

TEST_CASE("a first-format calibration file is refused with a reason", "[quant][calibration-state]") {
  CHECK_THROWS_WITH(quant::calibration_state::parse("IOCALIB1" + std::string(64, '\0')),
                    Catch::Contains("IOCALIB1") && Catch::Contains("calibrate again"));
}
