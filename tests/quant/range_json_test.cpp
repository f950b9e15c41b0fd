// Range JSON: the range table with the scale, zero point and type each range gives.

#include "inferopt/quant/range_json.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "pass_test_util.hpp"

using namespace inferopt;

TEST_CASE("range json lists min, max, scale, zero point and dtype per tensor", "[quant][range-json]") {
  const quant::range_table ranges{{"relu", {0.0, 6.0}}, {"x", {-1.5, 0.5}}};
  SECTION("int8 symmetric") {
    const auto j = nlohmann::json::parse(quant::format_range_json(ranges, quant::activation_scheme::int8_symmetric));
    REQUIRE(j.size() == 2);
    CHECK(j["x"]["min"] == -1.5);
    CHECK(j["x"]["max"] == 0.5);
    CHECK(j["x"]["scale"].get<float>() == static_cast<float>(1.5 / 127.0));
    CHECK(j["x"]["zero_point"] == 0);
    CHECK(j["x"]["dtype"] == "int8");
    CHECK(j["relu"]["scale"].get<float>() == static_cast<float>(6.0 / 127.0));
  }
  SECTION("uint8 asymmetric") {
    const auto j = nlohmann::json::parse(quant::format_range_json(ranges, quant::activation_scheme::uint8_asymmetric));
    const float sx = static_cast<float>(2.0 / 255.0);
    CHECK(j["x"]["scale"].get<float>() == sx);
    CHECK(j["x"]["zero_point"] == static_cast<int>(std::nearbyint(1.5 / sx)));
    CHECK(j["x"]["dtype"] == "uint8");
    CHECK(j["relu"]["zero_point"] == 0);  // a range starting at 0 maps 0 to 0
  }
}

TEST_CASE("range json widens an asymmetric range to include zero", "[quant][range-json]") {
  const auto j = nlohmann::json::parse(
      quant::format_range_json({{"t", {2.0, 4.0}}}, quant::activation_scheme::uint8_asymmetric));
  CHECK(j["t"]["min"] == 2.0);  // the calibrated range is reported as given
  CHECK(j["t"]["scale"].get<float>() == static_cast<float>(4.0 / 255.0));
  CHECK(j["t"]["zero_point"] == 0);
}

TEST_CASE("range json goes to a file", "[quant][range-json]") {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("inferopt_ranges_" + std::to_string(::getpid()) + ".json");
  quant::write_range_json({{"x", {-1.0, 1.0}}}, quant::activation_scheme::int8_symmetric, path);
  std::ifstream in(path);
  const auto j = nlohmann::json::parse(in);
  std::filesystem::remove(path);
  CHECK(j["x"]["dtype"] == "int8");
}

TEST_CASE("range json refuses a range that is not a finite interval", "[quant][range-json]") {
  const auto e = test::error_from(
      [&] { (void)quant::format_range_json({{"bad", {NAN, 1.0}}}, quant::activation_scheme::int8_symmetric); });
  REQUIRE(e);
  CHECK(e->code() == errc::invalid_argument);
  CHECK(std::string(e->what()).find("'bad'") != std::string::npos);
}
