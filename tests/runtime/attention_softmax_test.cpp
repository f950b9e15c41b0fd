// The attention kernels' row softmax (vector_math's softmax_rows, one build per instruction
// set) through com.microsoft MultiHeadAttention, against attention computed in double: key
// lengths that are not a multiple of the 16-value vector pieces (so rows start at every
// alignment and end in a padded tail), one that is, and a padding mask whose keys must get a
// weight of exactly 0. Tagged [fused] so that the instruction-set variants run it too.
//
// Tolerance: softmax weights within a few ulps of exp, products of at most 48 terms of
// magnitude <= 1: 1e-5 * (1 + |expected|) is far above both. The padded keys' values are
// 1e36, so a weight that is only tiny (exp(-87) ~ 1.6e-38 instead of 0) shows as 0.016.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/runtime/session.hpp"
#include "support/random_values.hpp"

using namespace inferopt;
using runtime::tensor;

namespace {

using test::random_values;

constexpr std::int64_t heads = 3, head_dim = 8, hidden = heads * head_dim, queries = 5;

ir::model attention_model(std::int64_t keys, bool masked) {
  ir::model m = ir::make_model("attention_softmax", 17);
  m.opsets.push_back({"com.microsoft", 1});
  ir::graph_builder gb(m.graph());
  auto input = [&](const char* name, std::int64_t len, ir::data_type t = ir::data_type::float32) {
    return gb.input(name, t, ir::shape{ir::dim{1}, ir::dim{len}, ir::dim{hidden}});
  };
  std::vector<ir::value*> inputs{input("q", queries), input("k", keys), input("v", keys)};
  if (masked) {
    inputs.push_back(nullptr);  // no projection bias
    inputs.push_back(gb.input("mask", ir::data_type::int32, ir::shape{ir::dim{1}, ir::dim{keys}}));
  }
  std::vector<ir::attribute> attrs;
  attrs.push_back(ir::attribute::make_int("num_heads", heads));
  ir::node* n = m.graph().add_node(ir::node_spec{"MultiHeadAttention", inputs, {"out"}, std::move(attrs), "mha", "com.microsoft"});
  gb.output(n->output(0));
  return m;
}

/// Per head: softmax(Q K^T / sqrt(head_dim) + padding) V in double; padded keys (mask 0) get
/// -10000, as the op's default mask_filter_value.
std::vector<double> reference(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                              const std::vector<std::int32_t>& mask, std::int64_t keys) {
  std::vector<double> out(static_cast<std::size_t>(queries * hidden));
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  for (std::int64_t h = 0; h < heads; ++h) {
    for (std::int64_t i = 0; i < queries; ++i) {
      std::vector<double> s(static_cast<std::size_t>(keys));
      for (std::int64_t j = 0; j < keys; ++j) {
        double dot = 0;
        for (std::int64_t d = 0; d < head_dim; ++d) dot += double(q[i * hidden + h * head_dim + d]) * k[j * hidden + h * head_dim + d];
        s[j] = dot * scale + (mask.empty() || mask[j] != 0 ? 0.0 : -10000.0);
      }
      const double top = *std::max_element(s.begin(), s.end());
      double sum = 0;
      for (double& x : s) sum += (x = std::exp(x - top));
      for (std::int64_t d = 0; d < head_dim; ++d) {
        double o = 0;
        for (std::int64_t j = 0; j < keys; ++j) o += s[j] / sum * v[j * hidden + h * head_dim + d];
        out[i * hidden + h * head_dim + d] = o;
      }
    }
  }
  return out;
}

void check_attention(std::int64_t keys, bool masked) {
  const std::vector<float> q = random_values(queries * hidden, 1), k = random_values(keys * hidden, 2);
  std::vector<float> v = random_values(keys * hidden, 3);
  std::vector<std::int32_t> mask;
  if (masked) {
    mask.assign(static_cast<std::size_t>(keys), 1);
    for (std::int64_t j = 1; j < keys; j += 3) {
      mask[j] = 0;
      std::fill(v.begin() + j * hidden, v.begin() + (j + 1) * hidden, 1e36f);
    }
  }
  const std::vector<double> want = reference(q, k, v, mask, keys);
  runtime::tensor_map feeds{{"q", tensor::from_values<float>({1, queries, hidden}, q)},
                            {"k", tensor::from_values<float>({1, keys, hidden}, k)},
                            {"v", tensor::from_values<float>({1, keys, hidden}, v)}};
  if (masked) feeds.emplace("mask", tensor::from_values<std::int32_t>({1, keys}, mask));
  for (int threads : {1, 2}) {
    runtime::session s(attention_model(keys, masked), runtime::session_options{.threads = threads});
    const tensor got = s.run(feeds).at("out");
    REQUIRE(got.element_count() == static_cast<std::int64_t>(want.size()));
    for (std::size_t i = 0; i < want.size(); ++i) {
      INFO("keys " << keys << ", masked " << masked << ", threads " << threads << ", output " << i);
      REQUIRE(std::abs(got.data<float>()[i] - want[i]) <= 1e-5 * (1.0 + std::abs(want[i])));
    }
  }
}

}  // namespace

TEST_CASE("attention's softmax matches double at every row length and alignment", "[runtime][fused]") {
  for (std::int64_t keys : {1, 7, 16, 37, 48}) check_attention(keys, false);
}

TEST_CASE("attention gives masked keys a weight of exactly zero at every row length", "[runtime][fused]") {
  for (std::int64_t keys : {7, 16, 37, 48}) check_attention(keys, true);
}
