// weight_bits: the largest code of a bit width, and the width each kind of CPU needs.

#include "inferopt/quant/weight_bits.hpp"

#include <catch2/catch.hpp>

#include "inferopt/core/error.hpp"

using namespace inferopt;

TEST_CASE("largest_weight_code is 2^(bits-1) - 1 and refuses widths outside 2..8", "[quant][weight-bits]") {
  CHECK(quant::largest_weight_code(8) == 127);
  CHECK(quant::largest_weight_code(7) == 63);
  CHECK(quant::largest_weight_code(2) == 1);
  for (int bad : {0, 1, 9, 16, -8}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(quant::largest_weight_code(bad), error);
  }
}

TEST_CASE("weight_bits_for gives 7 on an x86 CPU without VNNI and 8 with either VNNI encoding", "[quant][weight-bits]") {
  const cpu_features avx2{.avx2 = true, .fma = true};
  cpu_features avx512 = avx2;
  avx512.avx512f = avx512.avx512dq = avx512.avx512bw = avx512.avx512vl = true;
  cpu_features avx512_vnni = avx512;
  avx512_vnni.avx512vnni = true;
  cpu_features avx_vnni = avx2;
  avx_vnni.avxvnni = true;
#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64)
  CHECK(quant::weight_bits_for(avx2) == 7);
  CHECK(quant::weight_bits_for(avx512) == 7);  // Skylake-SP: VPMADDUBSW saturates at 512 bits too
#else
  CHECK(quant::weight_bits_for(avx2) == 8);  // other architectures' dot products are exact
  CHECK(quant::weight_bits_for(avx512) == 8);
#endif
  CHECK(quant::weight_bits_for(avx512_vnni) == 8);
  CHECK(quant::weight_bits_for(avx_vnni) == 8);
}
