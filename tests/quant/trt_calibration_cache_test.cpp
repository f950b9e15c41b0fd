// TensorRT calibration cache: the text TensorRT's readCalibrationCache and ONNX Runtime's
// TensorRT provider accept. Scales are bit patterns, so the checks are exact.

#include "inferopt/quant/trt_calibration_cache.hpp"

#include <bit>
#include <cstdint>
#include <filesystem>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "inferopt/core/error.hpp"
#include "inferopt/quant/quant_params.hpp"
#include "pass_test_util.hpp"

using namespace inferopt;

TEST_CASE("trt calibration cache writes a header and one hex scale per tensor", "[quant][trt-cache]") {
  quant::range_table ranges;
  ranges["input"] = {-1.0, 127.0};        // amax 127: scale 1.0f = 0x3f800000
  ranges["conv1_relu"] = {0.0, 254.0};    // scale 2.0f = 0x40000000
  ranges["zero"] = {0.0, 0.0};            // all-zero range: scale 1, not a division by zero
  const std::string text = quant::format_trt_calibration_cache(ranges);
  CHECK(text ==
        "TRT-8601-EntropyCalibration2\n"
        "conv1_relu: 40000000\n"
        "input: 3f800000\n"
        "zero: 3f800000\n");
}

TEST_CASE("trt calibration cache scale is the float32 amax / 127 as big-endian hex", "[quant][trt-cache]") {
  const quant::range_table ranges{{"t", {-0.731, 0.25}}};
  const float scale = static_cast<float>(0.731 / 127.0);
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08x", static_cast<unsigned>(std::bit_cast<std::uint32_t>(scale)));
  CHECK(quant::format_trt_calibration_cache(ranges, "TRT-8510-EntropyCalibration2") ==
        "TRT-8510-EntropyCalibration2\nt: " + std::string(hex) + "\n");
}

TEST_CASE("trt calibration cache parses what it writes and TensorRT's own files", "[quant][trt-cache]") {
  SECTION("round trip") {
    quant::range_table ranges{{"a", {-3.5, 1.0}}, {"(Unnamed Layer* 64) [Shuffle]_output", {0.0, 0.01}}};
    const quant::trt_calibration_cache c =
        quant::parse_trt_calibration_cache(quant::format_trt_calibration_cache(ranges));
    CHECK(c.header == quant::default_trt_cache_header);
    REQUIRE(c.scales.size() == 2);
    for (const auto& [name, r] : ranges) CHECK(c.scales.at(name) == quant::symmetric_int8_scale(r));
  }
  SECTION("a file as TensorRT writes it: short zero, names with colons and spaces, CRLF") {
    const quant::trt_calibration_cache c = quant::parse_trt_calibration_cache(
        "TRT-7103-EntropyCalibration2\r\ndata_0: 4000889d\r\nlayer: one: 3c010204\r\nunused: 0\r\n\r\n");
    CHECK(c.header == "TRT-7103-EntropyCalibration2");
    CHECK(c.scales.at("data_0") == std::bit_cast<float>(std::uint32_t{0x4000889d}));
    CHECK(c.scales.at("layer: one") == std::bit_cast<float>(std::uint32_t{0x3c010204}));
    CHECK(c.scales.at("unused") == 0.0f);
  }
  SECTION("malformed lines are errors naming the line") {
    for (const char* bad : {"H\nname 3f800000\n", "H\nname: xyz\n", "H\nname: 123456789\n", "H\n: 3f800000\n"}) {
      CAPTURE(bad);
      const auto e = test::error_from([&] { (void)quant::parse_trt_calibration_cache(bad); });
      REQUIRE(e);
      CHECK(e->code() == errc::invalid_argument);
      CHECK(std::string(e->what()).find("line 2") != std::string::npos);
    }
  }
}

TEST_CASE("trt calibration cache goes to a file and back", "[quant][trt-cache]") {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("inferopt_trt_cache_" + std::to_string(::getpid()) + ".cache");
  const quant::range_table ranges{{"x", {-2.0, 2.0}}};
  quant::write_trt_calibration_cache(ranges, path);
  const quant::trt_calibration_cache c = quant::read_trt_calibration_cache(path);
  std::filesystem::remove(path);
  CHECK(c.scales.at("x") == static_cast<float>(2.0 / 127.0));
}

TEST_CASE("trt calibration cache refuses ranges that are not finite intervals", "[quant][trt-cache]") {
  for (const quant::tensor_range r : {quant::tensor_range{1.0, -1.0}, quant::tensor_range{0.0, INFINITY}}) {
    const auto e = test::error_from([&] { (void)quant::format_trt_calibration_cache({{"bad", r}}); });
    REQUIRE(e);
    CHECK(std::string(e->what()).find("'bad'") != std::string::npos);
  }
}
