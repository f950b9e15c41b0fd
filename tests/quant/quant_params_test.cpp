// Scale and zero point from a calibrated range. Exact comparisons: the contract is "computed
// in double, rounded once to float".

#include "inferopt/quant/quant_params.hpp"

#include <cmath>

#include <catch2/catch.hpp>

#include "pass_test_util.hpp"

using namespace inferopt;
using quant::activation_scheme;

TEST_CASE("activation params are symmetric int8 with scale amax / 127", "[quant][quant-params]") {
  const quant::quant_params p = quant::activation_params({-0.5, 2.0}, activation_scheme::int8_symmetric);
  CHECK(p.scale == static_cast<float>(2.0 / 127.0));
  CHECK(p.zero_point == 0);
  CHECK(p.dtype == ir::data_type::int8);
  CHECK(quant::symmetric_int8_scale({-3.0, 1.0}) == static_cast<float>(3.0 / 127.0));
}

TEST_CASE("activation params are uint8 asymmetric over the range widened to zero", "[quant][quant-params]") {
  SECTION("a range around zero") {
    const quant::quant_params p = quant::activation_params({-1.0, 3.0}, activation_scheme::uint8_asymmetric);
    CHECK(p.scale == static_cast<float>(4.0 / 255.0));
    CHECK(p.zero_point == static_cast<std::int32_t>(std::nearbyint(1.0 / double(p.scale))));
    CHECK(p.dtype == ir::data_type::uint8);
  }
  SECTION("a positive range starts at zero") {
    const quant::quant_params p = quant::activation_params({1.0, 6.0}, activation_scheme::uint8_asymmetric);
    CHECK(p.scale == static_cast<float>(6.0 / 255.0));
    CHECK(p.zero_point == 0);
  }
  SECTION("a negative range ends at zero") {
    const quant::quant_params p = quant::activation_params({-6.0, -1.0}, activation_scheme::uint8_asymmetric);
    CHECK(p.zero_point == 255);
  }
}

TEST_CASE("activation params give scale 1 to an all-zero range", "[quant][quant-params]") {
  for (const activation_scheme s : {activation_scheme::int8_symmetric, activation_scheme::uint8_asymmetric}) {
    const quant::quant_params p = quant::activation_params({0.0, 0.0}, s);
    CHECK(p.scale == 1.0f);
    CHECK(p.zero_point == 0);
  }
}

TEST_CASE("activation params refuse ranges that are not finite intervals", "[quant][quant-params]") {
  for (const quant::tensor_range r : {quant::tensor_range{1.0, 0.0}, quant::tensor_range{NAN, 1.0},
                                      quant::tensor_range{-INFINITY, 1.0}}) {
    const auto e = test::error_from([&] { (void)quant::activation_params(r, activation_scheme::int8_symmetric); });
    REQUIRE(e);
    CHECK(e->code() == errc::invalid_argument);
  }
}
