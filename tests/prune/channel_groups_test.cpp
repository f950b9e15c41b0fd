// Channel dependency analysis: one hand-built model per coupling rule. Each is pruned and
// checked against the same model with the removed channels' readers zeroed (see
// prune_test_util.hpp), so a rule that cuts the wrong positions fails numerically.

#include "inferopt/prune/channel_groups.hpp"

#include <catch2/catch.hpp>

#include "prune_test_util.hpp"

using namespace inferopt;
using test::build_model;
using test::prunable_groups;

namespace {

ir::value* conv_relu(ir::graph_builder& b, ir::value* x, std::int64_t channels, ir::conv_options o = {}) {
  return b.relu(b.conv(x, channels, o));
}

/// Adds a node with several outputs (the builder's `op` makes one).
std::vector<ir::value*> add_multi(ir::graph& g, std::string op, std::vector<ir::value*> inputs, std::size_t outputs,
                                  std::vector<ir::attribute> attrs = {}) {
  ir::node_spec spec;
  spec.op_type = std::move(op);
  spec.inputs = std::move(inputs);
  spec.outputs.assign(outputs, "");
  spec.attributes = std::move(attrs);
  spec.name = g.unique_name(spec.op_type);
  ir::node* n = g.add_node(std::move(spec));
  return {n->outputs().begin(), n->outputs().end()};
}

/// One attribute as the list the builder takes (attributes move, they do not copy).
std::vector<ir::attribute> with(ir::attribute a) {
  std::vector<ir::attribute> out;
  out.push_back(std::move(a));
  return out;
}

/// Gives a value made by the builder's generic `op` its type, so later layers can read it.
ir::value* typed(ir::value* v, ir::shape dims) {
  v->set_type(ir::value_type{true, ir::data_type::float32, std::move(dims)});
  return v;
}

std::size_t sources_in(const prune::channel_group& g) { return g.sources.size(); }

}  // namespace

TEST_CASE("a conv chain forms one prunable group per inner conv and cuts its readers", "[prune][groups]") {
  auto m = build_model({2, 3, 8, 8}, [](ir::graph_builder& b, ir::value* x) {
    ir::value* y = b.relu(b.batch_norm(b.conv(x, 8)));
    y = conv_relu(b, y, 6);
    return b.conv(y, 4);
  });
  const auto a = test::analyze_without_defaults(m);
  // Two inner convs prunable; the last one reaches the graph output.
  REQUIRE(prunable_groups(a).size() == 2);
  CHECK(prunable_groups(a)[0]->units.size() == 8);
  auto r = test::prune_and_check_equivalent(m);
  CHECK(r.plan.removed_units() == 4 + 3);
  CHECK(r.applied.cut_sites > 0);
}

TEST_CASE("a residual Add couples both branches into one group", "[prune][groups]") {
  auto m = build_model({2, 4, 6, 6}, [](ir::graph_builder& b, ir::value* x) {
    ir::value* a = conv_relu(b, x, 8);
    ir::value* c = b.batch_norm(b.conv(conv_relu(b, a, 5), 8));
    ir::value* s = b.relu(b.add(a, c));
    return b.conv(s, 3);
  });
  const auto a = test::analyze_without_defaults(m);
  const auto groups = prunable_groups(a);
  REQUIRE(groups.size() == 2);
  const auto* residual = groups[0]->units.size() == 8 ? groups[0] : groups[1];
  CHECK(sources_in(*residual) == 2);
  CHECK(residual->units.front().channels.size() == 2);  // one channel of each branch
  test::prune_and_check_equivalent(m);
}

TEST_CASE("Sum of three branches couples all of them", "[prune][groups]") {
  auto m = build_model({1, 4, 5, 5}, [](ir::graph_builder& b, ir::value* x) {
    ir::value* s = typed(b.op("Sum", {b.conv(x, 6), b.conv(x, 6), b.conv(x, 6)}), {1, 6, 5, 5});
    return b.conv(b.relu(s), 2);
  });
  const auto a = test::analyze_without_defaults(m);
  REQUIRE(prunable_groups(a).size() == 1);
  CHECK(sources_in(*prunable_groups(a)[0]) == 3);
  test::prune_and_check_equivalent(m);
}

TEST_CASE("Concat keeps its inputs' groups apart and cuts readers at their offsets", "[prune][groups]") {
  auto m = build_model({2, 3, 6, 6}, [](ir::graph_builder& b, ir::value* x) {
    ir::value* cat = b.concat({conv_relu(b, x, 4), conv_relu(b, x, 6), conv_relu(b, x, 2)}, 1);
    // A dense-block style reuse: the concatenation is concatenated again with a new branch.
    ir::value* cat2 = b.concat({cat, conv_relu(b, b.batch_norm(cat), 4)}, 1);
    return b.conv(b.batch_norm(cat2), 3);
  });
  const auto a = test::analyze_without_defaults(m);
  CHECK(prunable_groups(a).size() == 4);
  test::prune_and_check_equivalent(m);
}

TEST_CASE("Concat with an untracked tensor pins only that tensor's channels", "[prune][groups]") {
  auto m = build_model({2, 3, 4, 4}, [](ir::graph_builder& b, ir::value* x) {
    ir::value* cat = b.concat({conv_relu(b, x, 4), x}, 1);
    return b.conv(cat, 2);
  });
  const auto a = test::analyze_without_defaults(m);
  CHECK(prunable_groups(a).size() == 1);
  test::prune_and_check_equivalent(m);
}

TEST_CASE("Split along channels maps each output to its range and rewrites the sizes", "[prune][groups]") {
  auto m = build_model({2, 3, 5, 5}, [](ir::graph_builder& b, ir::value* x) {
    ir::value* y = conv_relu(b, x, 8);
    ir::value* sizes = b.constant_i64("split", {2}, {3, 5});
    auto parts = add_multi(b.target(), "Split", {y, sizes}, 2, with(ir::attribute::make_int("axis", 1)));
    return b.add(b.conv(typed(parts[0], {2, 3, 5, 5}), 4), b.conv(typed(parts[1], {2, 5, 5, 5}), 4));
  });
  auto r = test::prune_and_check_equivalent(m);
  bool split_cut = false;
  for (const auto& s : r.analysis.sites) split_cut = split_cut || s.kind == prune::cut_kind::split_sizes;
  CHECK(split_cut);
}

TEST_CASE("a depthwise conv shares its input's channels and its group count follows", "[prune][groups]") {
  auto m = build_model({2, 3, 6, 6}, [](ir::graph_builder& b, ir::value* x) {
    ir::value* y = conv_relu(b, x, 8);
    y = b.relu(b.batch_norm(b.conv(y, 8, {.group = 8})));
    return b.conv(y, 4, {.kernel = 1});
  });
  const auto a = test::analyze_without_defaults(m);
  REQUIRE(prunable_groups(a).size() == 1);
  auto r = test::prune_and_check_equivalent(m);
  for (const ir::node* n : r.pruned.graph().nodes()) {
    if (n->is("Conv") && n->attr_int("group", 1) > 1) CHECK(n->attr_int("group", 1) == 4);
  }
}

TEST_CASE("a grouped conv removes the same count from each of its groups", "[prune][groups]") {
  auto m = build_model({2, 4, 6, 6}, [](ir::graph_builder& b, ir::value* x) {
    ir::value* y = conv_relu(b, x, 8);
    y = b.relu(b.conv(y, 12, {.kernel = 1, .group = 2}));
    return b.conv(y, 4);
  });
  const auto a = test::analyze_without_defaults(m);
  const auto groups = prunable_groups(a);
  REQUIRE(groups.size() == 2);
  for (const auto* g : groups) CHECK(g->chunks == 2);
  auto r = test::prune_and_check_equivalent(m);
  CHECK(r.plan.removed_units() == 4 + 6);
}

TEST_CASE("grouped convs whose groups disagree pin their channels", "[prune][groups]") {
  auto m = build_model({1, 4, 4, 4}, [](ir::graph_builder& b, ir::value* x) {
    ir::value* y = conv_relu(b, x, 12);
    return b.add(b.conv(y, 6, {.kernel = 1, .group = 2}), b.conv(y, 6, {.kernel = 1, .group = 3}));
  });
  const auto a = test::analyze_without_defaults(m);
  for (const auto& g : a.groups) {
    if (g.units.size() == 12) CHECK_THAT(g.pinned_because, Catch::Contains("group"));
  }
}

TEST_CASE("Flatten into Gemm maps one channel to a block of features", "[prune][groups]") {
  auto m = build_model({2, 3, 4, 4}, [](ir::graph_builder& b, ir::value* x) {
    ir::value* y = conv_relu(b, x, 6);
    return b.gemm(b.relu(b.gemm(b.flatten(y), 10)), 3);
  });
  const auto a = test::analyze_without_defaults(m);
  CHECK(prunable_groups(a).size() == 2);  // the conv's channels and the hidden features
  test::prune_and_check_equivalent(m);
}

TEST_CASE("a flattening Reshape has its explicit target rewritten", "[prune][groups]") {
  auto m = build_model({2, 3, 4, 4}, [](ir::graph_builder& b, ir::value* x) {
    ir::value* y = conv_relu(b, x, 6);
    return b.gemm(b.reshape(y, {2, 96}), 3);
  });
  auto r = test::prune_and_check_equivalent(m);
  bool rewritten = false;
  for (const auto& s : r.analysis.sites) rewritten = rewritten || s.kind == prune::cut_kind::reshape_target;
  CHECK(rewritten);
}

TEST_CASE("a channel-shuffle Reshape pins the channels that reach it", "[prune][groups]") {
  auto m = build_model({1, 3, 4, 4}, [](ir::graph_builder& b, ir::value* x) {
    ir::value* y = conv_relu(b, x, 8);
    ir::value* shuffled = b.reshape(y, {1, 2, 4, 4, 4});
    shuffled = b.op("Transpose", {shuffled}, with(ir::attribute::make_ints("perm", {0, 2, 1, 3, 4})));
    return b.conv(b.reshape(shuffled, {1, 8, 4, 4}), 2);
  });
  const auto a = test::analyze_without_defaults(m);
  CHECK(prunable_groups(a).empty());
  CHECK_THAT(prune::explain(a), Catch::Contains("Reshape"));
}

TEST_CASE("GlobalAveragePool, Squeeze and Transpose carry channels to a MatMul", "[prune][groups]") {
  auto m = build_model({2, 3, 4, 4}, [](ir::graph_builder& b, ir::value* x) {
    ir::value* y = b.global_average_pool(conv_relu(b, x, 6));
    y = typed(b.op("Squeeze", {y, b.constant_i64("axes", {2}, {2, 3})}), {2, 6});
    y = b.relu(b.dense(y, 5));  // MatMul + Add with a per-feature bias
    y = typed(b.op("Transpose", {b.op("Transpose", {y})}), {2, 5});
    return b.dense(y, 2);
  });
  const auto a = test::analyze_without_defaults(m);
  CHECK(prunable_groups(a).size() == 2);
  test::prune_and_check_equivalent(m);
}

TEST_CASE("per-channel Mul and Add constants are cut along with the channels", "[prune][groups]") {
  auto m = build_model({2, 3, 4, 4}, [](ir::graph_builder& b, ir::value* x) {
    ir::value* y = b.conv(x, 6);
    y = b.mul(y, b.random_constant("scale", {1, 6, 1, 1}, 1.0f));
    y = b.add(y, b.random_constant("shift", {6, 1, 1}, 1.0f));
    y = b.add(y, b.random_constant("scalar", {1}, 1.0f));
    return b.conv(b.relu(y), 2);
  });
  REQUIRE(prunable_groups(test::analyze_without_defaults(m)).size() == 1);
  test::prune_and_check_equivalent(m);
}

TEST_CASE("ConvTranspose cuts its input rows and owns its output columns", "[prune][groups]") {
  auto m = build_model({1, 3, 4, 4}, [](ir::graph_builder& b, ir::value* x) {
    ir::value* y = conv_relu(b, x, 6);
    ir::value* w = b.random_constant("deconv_w", {6, 5, 2, 2}, 0.3f);
    y = b.relu(b.op("ConvTranspose", {y, w, b.random_constant("deconv_b", {5}, 0.1f)},
                    with(ir::attribute::make_ints("strides", {2, 2}))));
    typed(y, {1, 5, 8, 8});
    return b.conv(y, 2);
  });
  REQUIRE(prunable_groups(test::analyze_without_defaults(m)).size() == 2);
  test::prune_and_check_equivalent(m);
}

TEST_CASE("an op the analysis does not model pins what reaches it", "[prune][groups]") {
  auto m = build_model({1, 3, 4, 4}, [](ir::graph_builder& b, ir::value* x) {
    ir::value* y = typed(b.op("SpaceToDepth", {conv_relu(b, x, 8)}, with(ir::attribute::make_int("blocksize", 2))), {1, 32, 2, 2});
    return b.conv(y, 2);
  });
  const auto a = test::analyze_without_defaults(m);
  CHECK(prunable_groups(a).empty());
  CHECK_THAT(prune::explain(a), Catch::Contains("SpaceToDepth"));
}

TEST_CASE("channels that reach a graph output are pinned", "[prune][groups]") {
  auto m = build_model({1, 3, 4, 4}, [](ir::graph_builder& b, ir::value* x) { return b.relu(b.conv(x, 8)); });
  const auto a = test::analyze_without_defaults(m);
  CHECK(prunable_groups(a).empty());
  CHECK_THAT(prune::explain(a), Catch::Contains("graph output"));
}

TEST_CASE("a weight shared by two convs is cut in a copy for each of them", "[prune][groups]") {
  auto m = build_model({1, 4, 4, 4}, [](ir::graph_builder& b, ir::value* x) {
    ir::value* y = conv_relu(b, x, 4);
    ir::value* w = b.random_constant("shared_w", {4, 4, 1, 1}, 0.5f);
    ir::value* p = b.op("Conv", {y, w});
    ir::value* q = typed(b.op("Conv", {b.relu(p), w}), {1, 4, 4, 4});
    return b.conv(q, 2);
  });
  const auto a = test::analyze_without_defaults(m);
  CHECK(prunable_groups(a).size() == 3);  // the first conv and both sharing ones
  auto r = test::prune_and_check_equivalent(m);
  CHECK(r.plan.removed_units() == 3 * 2);
  const std::vector<ir::node*> convs = r.pruned.graph().node_list();
  const ir::node* p = convs[2];
  const ir::node* q = convs[4];
  REQUIRE((p->is("Conv") && q->is("Conv")));
  CHECK(p->input(1) != q->input(1));
  CHECK(ir::constant_tensor(p->input(1), r.pruned.ir_version)->dims == std::vector<std::int64_t>{2, 2, 1, 1});
  CHECK(ir::constant_tensor(q->input(1), r.pruned.ir_version)->dims == std::vector<std::int64_t>{2, 2, 1, 1});
}

TEST_CASE("a bias shared by several convs is cut in a copy, and a pinned conv keeps it whole", "[prune][groups]") {
  // TorchScript exports share equal biases between layers (the zero biases left by folding
  // BatchNorms of untrained weights); the last conv reaches the output and is pinned.
  auto m = build_model({1, 3, 6, 6}, [](ir::graph_builder& b, ir::value* x) {
    ir::value* bias = b.random_constant("shared_b", {6}, 0.5f);
    const auto conv = [&](ir::value* in, std::int64_t in_channels) {
      ir::value* w = b.random_constant("w", {6, in_channels, 1, 1}, 0.5f);
      return typed(b.op("Conv", {in, w, bias}), {1, 6, 6, 6});
    };
    return conv(b.relu(conv(b.relu(conv(x, 3)), 6)), 6);
  });
  const auto a = test::analyze_without_defaults(m);
  CHECK(prunable_groups(a).size() == 2);
  auto r = test::prune_and_check_equivalent(m);
  CHECK(r.plan.removed_units() == 2 * 3);
  std::vector<std::int64_t> bias_sizes;
  for (const ir::node* n : r.pruned.graph().nodes()) {
    if (n->is("Conv")) bias_sizes.push_back(ir::constant_tensor(n->input(2), r.pruned.ir_version)->dims[0]);
  }
  CHECK(bias_sizes == std::vector<std::int64_t>{3, 3, 6});
}

TEST_CASE("by default the first conv and the last layer are ignored", "[prune][groups]") {
  auto m = build_model({1, 3, 4, 4}, [](ir::graph_builder& b, ir::value* x) {
    ir::value* y = conv_relu(b, conv_relu(b, x, 8), 8);
    return b.gemm(b.relu(b.gemm(b.flatten(b.global_average_pool(y)), 16)), 4);
  });
  prune::channel_analysis_options o;
  const auto with_defaults = prune::analyze_channels(m, o);
  CHECK(prunable_groups(with_defaults).size() == 2);  // second conv, hidden Gemm
  CHECK_THAT(prune::explain(with_defaults), Catch::Contains("ignored layer"));
  o.ignore_defaults = false;
  CHECK(prunable_groups(prune::analyze_channels(m, o)).size() == 3);
  o.ignored_nodes.push_back(m.graph().node_list()[2]->name());  // the second conv
  CHECK(prunable_groups(prune::analyze_channels(m, o)).size() == 2);
}

TEST_CASE("explain lists sources, cut sites and a summary line", "[prune][groups]") {
  auto m = build_model({1, 3, 4, 4}, [](ir::graph_builder& b, ir::value* x) {
    return b.conv(b.batch_norm(b.conv(x, 4)), 2);
  });
  const std::string text = prune::explain(test::analyze_without_defaults(m));
  CHECK_THAT(text, Catch::Contains("4 channel(s), prunable"));
  CHECK_THAT(text, Catch::Contains("source"));
  CHECK_THAT(text, Catch::Contains("BatchNormalization"));
  CHECK_THAT(text, Catch::Contains("1 prunable group(s) of 2"));
}
