// The shape formulas the executor and shape inference share: numbers in, numbers out (and a
// throw on a contradiction); symbols in, symbols out.

#include <catch2/catch.hpp>

#include "inferopt/ir/shape_rules.hpp"

using namespace inferopt;
using namespace inferopt::ir;
using namespace inferopt::ir::shape_rules;

namespace {
using dims = std::vector<std::int64_t>;
const sym_dim batch = sym_dim::named("batch");
const sym_dim sequence = sym_dim::named("sequence");
}  // namespace

TEST_CASE("broadcast follows numpy and refuses sizes that differ", "[ir][shape-rules]") {
  CHECK(broadcast<std::int64_t>(dims{8, 1, 6, 1}, dims{7, 1, 5}) == dims{8, 7, 6, 5});
  CHECK(broadcast<std::int64_t>(dims{}, dims{3}) == dims{3});
  CHECK_THROWS_AS(broadcast<std::int64_t>(dims{3}, dims{4}), error);
  const sym_shape out = broadcast<sym_dim>(sym_shape{batch, 1, 1, sequence}, sym_shape{batch, 12, sequence, sequence});
  CHECK(to_string(out) == "batchx12xsequencexsequence");
  // A symbol against a number other than 1 must be that number in any model that runs.
  CHECK(to_string(broadcast<sym_dim>(sym_shape{sequence}, sym_shape{768})) == "768");
  CHECK_FALSE(broadcast<sym_dim>(sym_shape{batch}, sym_shape{sequence})[0].known());
}

TEST_CASE("window_output_dim gives conv and pool sizes and refuses a zero stride", "[ir][shape-rules]") {
  CHECK(window_output_dim<std::int64_t>(224, 7, 2, 1, 3, 3) == 112);
  CHECK(window_output_dim<std::int64_t>(112, 3, 2, 1, 1, 1) == 56);
  CHECK(window_output_dim<std::int64_t>(6, 3, 2, 1, 0, 0, /*ceil_mode=*/true) == 3);
  CHECK(window_output_dim<std::int64_t>(5, 3, 1, 2, 0, 0) == 1);
  CHECK_THROWS_AS(window_output_dim<std::int64_t>(8, 3, 0, 1, 0, 0), error);
  CHECK_THROWS_AS(window_output_dim<std::int64_t>(2, 5, 1, 1, 0, 0), error);
  const sym_dim h = sym_dim::named("H");
  CHECK(window_output_dim<sym_dim>(h, 3, 2, 1, 1, 1).str() == "(H-1)/2+1");
  CHECK(window_output_dim<sym_dim>(h, 3, 1, 1, 1, 1) == h);
  CHECK(same_padded_dim<std::int64_t>(7, 2) == 4);
  CHECK(transposed_window_output_dim<std::int64_t>(4, 3, 2, 1, 1, 1, 1) == 8);
}

TEST_CASE("matmul_shape broadcasts batch dims and checks the inner ones", "[ir][shape-rules]") {
  CHECK(matmul_shape<std::int64_t>(dims{2, 1, 4, 5}, dims{3, 5, 6}) == dims{2, 3, 4, 6});
  CHECK(matmul_shape<std::int64_t>(dims{5}, dims{5, 6}) == dims{6});
  CHECK(matmul_shape<std::int64_t>(dims{4, 5}, dims{5}) == dims{4});
  CHECK_THROWS_AS(matmul_shape<std::int64_t>(dims{4, 5}, dims{6, 7}), error);
  CHECK(to_string(matmul_shape<sym_dim>(sym_shape{batch, sequence, 768}, sym_shape{768, 3072})) == "batchxsequencex3072");
  CHECK(gemm_shape<std::int64_t>(dims{5, 4}, dims{6, 5}, true, true) == dims{4, 6});
}

TEST_CASE("reshape_shape copies 0, infers -1 and refuses a size that does not match", "[ir][shape-rules]") {
  CHECK(reshape_shape<std::int64_t>(dims{2, 3, 4}, dims{0, -1}, false) == dims{2, 12});
  CHECK(reshape_shape<std::int64_t>(dims{3, 0}, dims{0, 4}, true) == dims{0, 4});
  CHECK_THROWS_AS(reshape_shape<std::int64_t>(dims{3, 0}, dims{0, 4}, false), error);
  CHECK_THROWS_AS(reshape_shape<std::int64_t>(dims{2, 3, 4}, dims{5, -1}, false), error);
  CHECK_THROWS_AS(reshape_shape<std::int64_t>(dims{2, 3}, dims{-1, -1}, false), error);
  const sym_shape heads = reshape_shape<sym_dim>(sym_shape{batch, sequence, 768}, sym_shape{batch, sequence, 12, 64}, false);
  CHECK(to_string(heads) == "batchxsequencex12x64");
  CHECK(to_string(reshape_shape<sym_dim>(sym_shape{batch, sequence, 768}, sym_shape{-1, 768}, false)) == "batch*sequencex768");
}

TEST_CASE("the layout rules move dims as their ops define", "[ir][shape-rules]") {
  CHECK(transpose_shape<std::int64_t>(dims{2, 3, 4}, std::vector<std::int64_t>{0, 2, 1}) == dims{2, 4, 3});
  CHECK(transpose_shape<std::int64_t>(dims{2, 3, 4}, std::vector<std::int64_t>{}) == dims{4, 3, 2});
  CHECK_THROWS_AS(transpose_shape<std::int64_t>(dims{2, 3}, std::vector<std::int64_t>{0, 0}), error);
  CHECK(concat_shape<std::int64_t>(std::vector<dims>{{2, 3}, {2, 5}}, -1) == dims{2, 8});
  CHECK_THROWS_AS(concat_shape<std::int64_t>(std::vector<dims>{{2, 3}, {4, 5}}, 1), error);
  CHECK(squeeze_shape<std::int64_t>(dims{1, 3, 1}, std::vector<std::int64_t>{}) == dims{3});
  CHECK_THROWS_AS(squeeze_shape<std::int64_t>(dims{2, 3}, std::vector<std::int64_t>{0}), error);
  CHECK(unsqueeze_shape<std::int64_t>(dims{3, 4}, std::vector<std::int64_t>{0, -1}) == dims{1, 3, 4, 1});
  CHECK(flatten_shape<std::int64_t>(dims{2, 3, 4}, 1) == dims{2, 12});
  CHECK(gather_shape<std::int64_t>(dims{5, 6}, dims{2, 3}, 1) == dims{5, 2, 3});
  CHECK(reduce_shape<std::int64_t>(dims{2, 3, 4}, std::vector<std::int64_t>{-1}, true) == dims{2, 3, 1});
  CHECK(reduce_shape<std::int64_t>(dims{2, 3, 4}, std::vector<std::int64_t>{}, false) == dims{});
  CHECK(pad_shape<std::int64_t>(dims{1, 3, 4, 4}, std::vector<std::int64_t>{0, 0, 1, 1, 0, 0, 1, 1}) == dims{1, 3, 6, 6});
  CHECK(tile_shape<std::int64_t>(dims{2, 3}, dims{2, 1}) == dims{4, 3});
  CHECK(depth_to_space_shape<std::int64_t>(dims{1, 8, 2, 3}, 2, true) == dims{1, 2, 4, 6});
}

TEST_CASE("slice_dim clamps numbers and keeps symbolic bounds", "[ir][shape-rules]") {
  CHECK(slice_dim<std::int64_t>(10, 2, 100, 1) == 8);
  CHECK(slice_dim<std::int64_t>(10, -3, INT64_MAX, 1) == 3);
  CHECK(slice_dim<std::int64_t>(10, -1, INT64_MIN, -1) == 10);
  CHECK(slice_dim<std::int64_t>(10, 0, 10, 3) == 4);
  CHECK_THROWS_AS(slice_dim<std::int64_t>(10, 0, 10, 0), error);
  CHECK(slice_dim<sym_dim>(sym_dim(512), 0, sequence, 1) == sequence);
  CHECK(slice_dim<sym_dim>(sequence, 1, INT64_MAX, 1) == sequence - sym_dim(1));
  CHECK(slice_dim<sym_dim>(sequence, -1, INT64_MAX, 1).constant() == 1);
}
