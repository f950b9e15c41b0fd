#include <catch2/catch.hpp>

#include <cmath>

#include "inferopt/core/float16.hpp"
#include "inferopt/runtime/tensor.hpp"

using namespace inferopt;
using runtime::tensor;

TEST_CASE("tensors allocate aligned writable storage of the right size", "[runtime][tensor]") {
  tensor t(ir::data_type::float32, {2, 3, 5});
  CHECK(t.element_count() == 30);
  CHECK(t.byte_size() == 120);
  CHECK(t.is_writable());
  CHECK(reinterpret_cast<std::uintptr_t>(t.raw()) % 64 == 0);
  tensor z = tensor::zeros(ir::data_type::int64, {4});
  CHECK(z.to_int64() == std::vector<std::int64_t>{0, 0, 0, 0});
}

TEST_CASE("tensors refuse negative, overflowing and absurdly large shapes", "[runtime][tensor]") {
  CHECK_THROWS_AS(tensor(ir::data_type::float32, {-1, 2}), error);
  CHECK_THROWS_AS(tensor(ir::data_type::float32, {INT64_MAX, 4}), error);
  CHECK_THROWS_AS(tensor(ir::data_type::float32, {1 << 20, 1 << 20, 1 << 10}), error);
}

TEST_CASE("a tensor made from IR data is a read-only view sharing the bytes", "[runtime][tensor]") {
  ir::tensor w = ir::tensor::from_values<float>("w", {2, 2}, {1.f, 2.f, 3.f, 4.f});
  tensor v = tensor::from_ir(w);
  CHECK(v.raw() == w.bytes->data());
  CHECK_FALSE(v.is_writable());
  CHECK_THROWS_AS(v.mutable_data<float>(), error);
  CHECK(v.to_float() == std::vector<float>{1, 2, 3, 4});
  ir::tensor back = v.to_ir("copy");
  CHECK(*back.bytes == *w.bytes);
  CHECK(back.bytes != w.bytes);
}

TEST_CASE("typed access checks the element type", "[runtime][tensor]") {
  tensor t = tensor::from_values<std::int32_t>({3}, {1, 2, 3});
  CHECK(t.values<std::int32_t>()[2] == 3);
  CHECK_THROWS_AS(t.data<float>(), error);
  tensor h(ir::data_type::float16, {1});
  CHECK_NOTHROW(h.mutable_data<std::uint16_t>());  // float16 is stored as its bits
}

TEST_CASE("reshaping shares storage and keeps the element count", "[runtime][tensor]") {
  tensor t = tensor::from_values<float>({2, 3}, {0, 1, 2, 3, 4, 5});
  tensor r = t.reshaped({3, 2});
  CHECK(r.raw() == t.raw());
  CHECK(r.shape() == runtime::shape_t{3, 2});
  CHECK_THROWS_AS(t.reshaped({4, 2}), error);
}

TEST_CASE("a buffer is reused only when it is large enough and not shared", "[runtime][tensor]") {
  tensor t(ir::data_type::float32, {16});
  const void* storage = t.raw();
  CHECK(t.try_reuse(ir::data_type::int32, {4, 4}));
  CHECK(t.raw() == storage);
  CHECK_FALSE(t.try_reuse(ir::data_type::float32, {17}));
  tensor other = t;  // shared now
  CHECK_FALSE(t.try_reuse(ir::data_type::float32, {2}));
}

TEST_CASE("float16 conversion round-trips every half value and rounds to nearest even", "[runtime][float16]") {
  using inferopt::float_to_half;
  using inferopt::half_to_float;
  for (std::uint32_t bits = 0; bits < 0x10000; ++bits) {
    const float f = half_to_float(static_cast<std::uint16_t>(bits));
    if (std::isnan(f)) {
      CHECK(std::isnan(half_to_float(float_to_half(f))));
      continue;
    }
    REQUIRE(float_to_half(f) == bits);
  }
  CHECK(half_to_float(float_to_half(65520.0f)) == INFINITY);  // rounds up past the largest half
  CHECK(half_to_float(float_to_half(65519.0f)) == 65504.0f);
  CHECK(half_to_float(float_to_half(1.0f + 1.0f / 2048)) == 1.0f);  // tie goes to even
  CHECK(half_to_float(float_to_half(5.96046448e-08f)) == 5.96046448e-08f);  // smallest subnormal
}
