// sparsify-blocks: MatMul and Gemm with constant weights become inferopt.BlockSparseMatMul.
//
// Numbers: the pass prunes, so the oracle is not the original model but the pruned dense one
// (sparse_graph_test_util.hpp: the same weights pruned the same way, run by the executor's
// dense MatMul/Gemm). Both run on the same seeded random inputs and must agree within rtol
// 1e-4, atol 1e-4: the two sides sum the same float32 products (the pruned ones are zeros on
// the dense side) in different orders, which for K <= 600 and inputs in [-1, 1) moves
// outputs by float32 rounding, orders of magnitude below that. Each positive case also checks
// that the original's outputs do differ, so the oracle is not vacuous.

#include "inferopt/sparse/sparsify_blocks.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/ir/verify.hpp"
#include "inferopt/runtime/compare.hpp"
#include "inferopt/runtime/inputs.hpp"
#include "inferopt/runtime/session.hpp"
#include "inferopt/sparse/block_sparse_matmul_op.hpp"
#include "pass/pass_test_util.hpp"
#include "sparse/graph/sparse_graph_test_util.hpp"
#include "support/builtin_pipeline.hpp"
#include "support/random_graph.hpp"

using namespace inferopt;

namespace {

using body = std::function<ir::value*(ir::graph_builder&, ir::value* x)>;

/// A model `x -> body -> y`; the same seed gives the same weights.
ir::model make(std::vector<std::int64_t> x_dims, const body& f, std::int64_t opset = 17) {
  ir::model m = ir::make_model("sparsify", opset);
  ir::graph_builder gb(m.graph(), 5);
  ir::shape shape;
  for (std::int64_t d : x_dims) shape.push_back(ir::dim{d});
  ir::value* x = gb.input("x", ir::data_type::float32, shape);
  ir::value* y = f(gb, x);
  gb.output(y);
  m.graph().rename(y, "y");
  return m;
}

std::string pipeline_of(const std::string& options) {
  return options.empty() ? "sparsify-blocks" : "sparsify-blocks{" + options + "}";
}

sparse::sparsify_options settings_of(const std::string& options) {
  const pass_registry registry = builtin_registry();
  pipeline p = parse_pipeline(pipeline_of(options), registry);
  return dynamic_cast<const sparse::sparsify_blocks&>(*p.steps.at(0).single).settings();
}

pass_record run(ir::model& m, const std::string& options) {
  run_report r = test::run_builtin(m, pipeline_of(options));
  CHECK(ir::find_problems(m.graph()).empty());
  CHECK_NOTHROW(ir::verify(m.graph()));
  REQUIRE(r.passes.size() == 1);
  return r.passes[0];
}

/// Whether every output of the two models agrees within rtol, atol on seeded random inputs.
bool same_outputs(const ir::model& a, const ir::model& b, double rtol = 1e-4, double atol = 1e-4) {
  runtime::session sa(a, runtime::session_options{.threads = 1});
  runtime::session sb(b, runtime::session_options{.threads = 1});
  const runtime::tensor_map inputs = runtime::random_inputs(sa, 7);
  bool all = true;
  for (const runtime::output_difference& d : runtime::compare_outputs(sa, sa.run(inputs), sb, sb.run(inputs), rtol, atol)) {
    INFO(d.name << ": max abs " << d.max_abs << ", max rel " << d.max_rel << " " << d.problem);
    all = all && d.within;
  }
  return all;
}

/// Runs the pass and requires: a rewrite, the pruned reference's outputs, different outputs
/// from the unpruned original, the same graph after a second run.
pass_record run_and_compare(ir::model& m, const std::string& options) {
  const ir::model original = ir::parse_model(test::bytes_of(m));
  const ir::model reference = test::pruned_reference(original, settings_of(options));
  const pass_record r = run(m, options);
  CHECK(r.changed);
  CHECK(test::output_names(m.graph()) == test::output_names(original.graph()));
  CHECK(m.opset("inferopt") == std::optional<std::int64_t>(1));
  CHECK(same_outputs(reference, m));
  CHECK_FALSE(same_outputs(original, m));
  const std::string once = test::bytes_of(m);
  CHECK_FALSE(run(m, options).changed);
  CHECK(test::bytes_of(m) == once);
  return r;
}

void require_declined(ir::model m, const std::string& options, const std::string& statistic) {
  const std::string before = test::bytes_of(m);
  const pass_record r = run(m, options);
  CHECK_FALSE(r.changed);
  CHECK(r.rewrites == 0);
  CHECK(test::bytes_of(m) == before);
  CAPTURE(r.counters);
  CHECK(r.counters.count(statistic) == 1);
}

std::vector<ir::node*> sparse_nodes(const ir::graph& g) {
  std::vector<ir::node*> out;
  for (ir::node* n : g.nodes()) {
    if (n->domain() == "inferopt" && n->op_type() == "BlockSparseMatMul") out.push_back(n);
  }
  return out;
}

ir::value* matmul_with_weight(ir::graph_builder& gb, ir::value* x, std::int64_t k, std::int64_t n) {
  return gb.matmul(x, gb.random_constant("w", {k, n}, 0.5f));
}

ir::value* gemm_node(ir::graph_builder& gb, std::vector<ir::value*> inputs, std::vector<ir::attribute> attrs) {
  return gb.op("Gemm", std::move(inputs), std::move(attrs));
}

std::vector<ir::attribute> attrs(std::initializer_list<std::pair<const char*, float>> floats,
                                 std::initializer_list<std::pair<const char*, std::int64_t>> ints = {}) {
  std::vector<ir::attribute> out;
  for (const auto& [k, v] : floats) out.push_back(ir::attribute::make_float(k, v));
  for (const auto& [k, v] : ints) out.push_back(ir::attribute::make_int(k, v));
  return out;
}

const std::string small = "block=16x16,sparsity=0.5,min-size=0";

}  // namespace

TEST_CASE("sparsify-blocks turns a batched MatMul into BlockSparseMatMul of the pruned weight",
          "[sparse][sparsify-blocks]") {
  ir::model m = make({2, 3, 64}, [](ir::graph_builder& gb, ir::value* x) { return matmul_with_weight(gb, x, 64, 96); });
  const std::string weight = (*m.graph().nodes().begin())->input(1)->name();
  const pass_record r = run_and_compare(m, small);
  CHECK(r.rewrites == 1);
  CHECK(r.counters.at("weights-sparsified") == 1);
  const std::vector<ir::node*> nodes = sparse_nodes(m.graph());
  REQUIRE(nodes.size() == 1);
  const ir::node& n = *nodes[0];
  CHECK(n.attr_int("rows", 0) == 64);
  CHECK(n.attr_int("cols", 0) == 96);
  CHECK(n.attr_int("block_rows", 0) == 16);
  CHECK(n.attr_int("block_cols", 0) == 16);
  CHECK(n.attr_int("transposed", -1) == 0);
  CHECK(n.attr_string("activation", "") == "");
  CHECK(n.inputs().size() == 4);
  // 4 x 6 blocks, half of them kept.
  CHECK(n.input(2)->initializer()->dims == std::vector<std::int64_t>{12});
  CHECK(n.input(3)->initializer()->dims == std::vector<std::int64_t>{12, 16, 16});
  CHECK(r.counters.at("blocks-kept") == 12);
  CHECK(m.graph().find_value(weight) == nullptr);  // the dense weight is gone
}

TEST_CASE("sparsify-blocks keeps Gemm's transposed weight as stored and folds its bias and Relu",
          "[sparse][sparsify-blocks]") {
  ir::model m = make({8, 64}, [](ir::graph_builder& gb, ir::value* x) { return gb.relu(gb.gemm(x, 80)); });
  const ir::node* gemm = *m.graph().nodes().begin();
  REQUIRE(gemm->attr_int("transB", 0) == 1);
  const std::string bias = gemm->input(2)->name();
  const pass_record r = run_and_compare(m, small);
  CHECK(r.counters.at("relus-fused") == 1);
  REQUIRE(m.graph().node_count() == 1);
  const std::vector<ir::node*> nodes = sparse_nodes(m.graph());
  REQUIRE(nodes.size() == 1);
  const ir::node& n = *nodes[0];
  CHECK(n.attr_int("transposed", 0) == 1);
  CHECK(n.attr_int("rows", 0) == 64);
  CHECK(n.attr_int("cols", 0) == 80);
  CHECK(n.attr_string("activation", "") == "Relu");
  REQUIRE(n.inputs().size() == 5);
  CHECK(n.input(4)->name() == bias);  // already [N]: read as it is
  CHECK(n.output(0)->name() == "y");
}

TEST_CASE("sparsify-blocks flattens a constant [1, N] bias of a Gemm with transB = 0", "[sparse][sparsify-blocks]") {
  ir::model m = make({6, 64}, [](ir::graph_builder& gb, ir::value* x) {
    ir::value* w = gb.random_constant("w", {64, 40}, 0.5f);
    ir::value* c = gb.random_constant("c", {1, 40}, 0.5f);
    return gemm_node(gb, {x, w, c}, attrs({{"alpha", 1.0f}, {"beta", 1.0f}}, {{"transB", 0}}));
  });
  const std::string c_name = (*m.graph().nodes().begin())->input(2)->name();
  run_and_compare(m, small);
  const std::vector<ir::node*> nodes = sparse_nodes(m.graph());
  REQUIRE(nodes.size() == 1);
  REQUIRE(nodes[0]->inputs().size() == 5);
  CHECK(nodes[0]->input(4)->initializer()->dims == std::vector<std::int64_t>{40});
  CHECK(nodes[0]->attr_int("transposed", 1) == 0);
  CHECK(m.graph().find_value(c_name) == nullptr);
}

TEST_CASE("sparsify-blocks applies non-square blocks to the weight as used, in either storage",
          "[sparse][sparsify-blocks]") {
  // Ragged in both directions: 50 x 70 with 8 x 16 blocks is 7 x 5 blocks.
  const bool transposed = GENERATE(false, true);
  const std::string norm = GENERATE(as<std::string>{}, "l1", "l2");
  CAPTURE(transposed, norm);
  ir::model m = make({5, 50}, [&](ir::graph_builder& gb, ir::value* x) -> ir::value* {
    if (!transposed) return matmul_with_weight(gb, x, 50, 70);
    ir::value* w = gb.random_constant("w", {70, 50}, 0.5f);
    return gemm_node(gb, {x, w}, attrs({}, {{"transB", 1}}));
  });
  run_and_compare(m, "block=8x16,sparsity=0.6,min-size=0,norm=" + norm);
  const std::vector<ir::node*> nodes = sparse_nodes(m.graph());
  REQUIRE(nodes.size() == 1);
  const ir::node& n = *nodes[0];
  CHECK(n.attr_int("block_rows", 0) == 8);
  CHECK(n.attr_int("block_cols", 0) == 16);
  const std::int64_t kept = 35 - std::llround(0.6 * 35);
  // The stored matrix is W (7 block rows of 8 x 16) or W^T (5 block rows of 16 x 8).
  CHECK(n.input(1)->initializer()->dims == std::vector<std::int64_t>{transposed ? 6 : 8});
  CHECK(n.input(3)->initializer()->dims ==
        (transposed ? std::vector<std::int64_t>{kept, 16, 8} : std::vector<std::int64_t>{kept, 8, 16}));
}

TEST_CASE("sparsify-blocks keeps every block at sparsity 0 and none at sparsity 1", "[sparse][sparsify-blocks]") {
  const double s = GENERATE(0.0, 1.0);
  CAPTURE(s);
  ir::model m = make({4, 32}, [](ir::graph_builder& gb, ir::value* x) { return gb.gemm(x, 32); });
  const ir::model original = ir::parse_model(test::bytes_of(m));
  const std::string options = "block=8x8,min-size=0,sparsity=" + std::string(s == 0.0 ? "0" : "1");
  const ir::model reference = test::pruned_reference(original, settings_of(options));
  const pass_record r = run(m, options);
  CHECK(r.changed);
  CHECK(r.counters.at("blocks-kept") == (s == 0.0 ? 16 : 0));
  CHECK(same_outputs(reference, m));
  CHECK(same_outputs(original, m) == (s == 0.0));
}

TEST_CASE("sparsify-blocks folds a Relu only when it is the product's only reader", "[sparse][sparsify-blocks]") {
  SECTION("a Relu that is a graph output passes its name to the op") {
    ir::model m = make({4, 32}, [](ir::graph_builder& gb, ir::value* x) { return gb.relu(gb.gemm(x, 32)); });
    run_and_compare(m, small);
    CHECK(test::count_ops(m.graph(), "Relu") == 0);
    CHECK(sparse_nodes(m.graph()).at(0)->output(0)->name() == "y");
  }
  SECTION("a product read by a Relu and an Add keeps the Relu") {
    ir::model m = make({4, 32}, [](ir::graph_builder& gb, ir::value* x) {
      ir::value* p = gb.gemm(x, 32);
      return gb.add(gb.relu(p), p);
    });
    const pass_record r = run_and_compare(m, small);
    CHECK(r.counters.count("relus-fused") == 0);
    CHECK(test::count_ops(m.graph(), "Relu") == 1);
    CHECK(sparse_nodes(m.graph()).at(0)->attr_string("activation", "") == "");
  }
  SECTION("a product that is also a graph output keeps the Relu") {
    ir::model m = make({4, 32}, [](ir::graph_builder& gb, ir::value* x) {
      ir::value* p = gb.gemm(x, 32);
      gb.output(p);
      return gb.relu(p);
    });
    run_and_compare(m, small);
    CHECK(test::count_ops(m.graph(), "Relu") == 1);
  }
}

TEST_CASE("sparsify-blocks keeps a dense weight that something else still reads", "[sparse][sparsify-blocks]") {
  SECTION("two products of one weight: both rewritten, the weight erased") {
    std::string weight;
    ir::model m = make({4, 32}, [&](ir::graph_builder& gb, ir::value* x) {
      ir::value* w = gb.random_constant("w", {32, 32}, 0.5f);
      weight = w->name();
      return gb.add(gb.matmul(x, w), gb.matmul(gb.relu(x), w));
    });
    const pass_record r = run_and_compare(m, small);
    CHECK(r.rewrites == 2);
    CHECK(m.graph().find_value(weight) == nullptr);
  }
  SECTION("a weight read by a Transpose too") {
    std::string weight;
    ir::model m = make({4, 32}, [&](ir::graph_builder& gb, ir::value* x) {
      ir::value* w = gb.random_constant("w", {32, 32}, 0.5f);
      weight = w->name();
      return gb.add(gb.matmul(x, w), gb.matmul(x, gb.op("Transpose", {w})));
    });
    const pass_record r = run_and_compare(m, small);
    CHECK(r.rewrites == 1);  // the other MatMul's weight is computed
    CHECK(m.graph().find_value(weight) != nullptr);
  }
}

TEST_CASE("sparsify-blocks declines what it cannot rewrite and leaves the graph as it was",
          "[sparse][sparsify-blocks]") {
  SECTION("a weight that is not a constant") {
    ir::model m = make({4, 32}, [](ir::graph_builder& gb, ir::value* x) {
      return gb.matmul(x, gb.input("w", ir::data_type::float32, {32, 32}));
    });
    require_declined(std::move(m), small, "declined-not-constant");
  }
  SECTION("an initializer a caller can override (listed as a graph input)") {
    ir::model m = make({4, 32}, [](ir::graph_builder& gb, ir::value* x) {
      ir::value* w = gb.input("w", ir::data_type::float32, {32, 32});
      gb.target().set_initializer(w, ir::tensor::from_values<float>("w", {32, 32}, std::vector<float>(1024, 0.5f)));
      return gb.matmul(x, w);
    });
    require_declined(std::move(m), small, "declined-not-constant");
  }
  SECTION("a weight below min-size") {
    ir::model m = make({4, 64}, [](ir::graph_builder& gb, ir::value* x) { return matmul_with_weight(gb, x, 64, 96); });
    require_declined(std::move(m), "block=16x16", "declined-small");  // 6144 < the default 65536
  }
  SECTION("a batched weight") {
    ir::model m = make({2, 4, 32}, [](ir::graph_builder& gb, ir::value* x) {
      return gb.matmul(x, gb.random_constant("w", {2, 32, 16}, 0.5f));
    });
    require_declined(std::move(m), small, "declined-rank");
  }
  SECTION("a Gemm whose A is known not to be a matrix") {
    ir::model m = make({2, 4, 32}, [](ir::graph_builder& gb, ir::value* x) {
      return gemm_node(gb, {x, gb.random_constant("w", {32, 16}, 0.5f)}, {});
    });
    require_declined(std::move(m), small, "declined-rank");
  }
  SECTION("an A whose last dim is known and is not K") {
    ir::model m = make({4, 31}, [](ir::graph_builder& gb, ir::value* x) { return matmul_with_weight(gb, x, 32, 32); });
    require_declined(std::move(m), small, "declined-shape");
  }
  SECTION("a float64 weight") {
    ir::model m = ir::make_model("f64");
    ir::graph_builder gb(m.graph(), 1);
    ir::value* x = gb.input("x", ir::data_type::float64, {4, 8});
    std::vector<double> w(64, 0.5);
    ir::value* wv = m.graph().add_initializer("w", ir::tensor::from_values<double>("w", {8, 8}, w));
    gb.output(gb.matmul(x, wv));
    require_declined(std::move(m), small, "declined-type");
  }
  SECTION("a weight holding NaN") {
    ir::model m = make({4, 32}, [](ir::graph_builder& gb, ir::value* x) {
      std::vector<float> w(32 * 32, 0.25f);
      w[100] = std::numeric_limits<float>::quiet_NaN();
      return gb.matmul(x, gb.constant("w", {32, 32}, w));
    });
    require_declined(std::move(m), small, "declined-not-finite");
  }
  SECTION("Gemm with transA") {
    ir::model m = make({32, 4}, [](ir::graph_builder& gb, ir::value* x) {
      return gemm_node(gb, {x, gb.random_constant("w", {32, 16}, 0.5f)}, attrs({}, {{"transA", 1}}));
    });
    require_declined(std::move(m), small, "declined-attributes");
  }
  SECTION("Gemm with alpha other than 1") {
    ir::model m = make({4, 32}, [](ir::graph_builder& gb, ir::value* x) {
      return gemm_node(gb, {x, gb.random_constant("w", {32, 16}, 0.5f)}, attrs({{"alpha", 2.0f}}));
    });
    require_declined(std::move(m), small, "declined-attributes");
  }
  SECTION("Gemm with beta other than 1 and a C") {
    ir::model m = make({4, 32}, [](ir::graph_builder& gb, ir::value* x) {
      return gemm_node(gb, {x, gb.random_constant("w", {32, 16}, 0.5f), gb.random_constant("c", {16}, 0.5f)},
                       attrs({{"beta", 0.5f}}));
    });
    require_declined(std::move(m), small, "declined-attributes");
  }
  SECTION("Gemm whose C is not a per-column bias") {
    ir::model m = make({4, 32}, [](ir::graph_builder& gb, ir::value* x) {
      return gemm_node(gb, {x, gb.random_constant("w", {32, 16}, 0.5f), gb.random_constant("c", {4, 16}, 0.5f)}, {});
    });
    require_declined(std::move(m), small, "declined-bias");
  }
  SECTION("a model importing another version of the inferopt domain") {
    ir::model m = make({4, 32}, [](ir::graph_builder& gb, ir::value* x) { return matmul_with_weight(gb, x, 32, 32); });
    m.opsets.push_back({"inferopt", 2});
    require_declined(std::move(m), small, "declined-opset");
  }
}

TEST_CASE("sparsify-blocks in a dry run counts what it would rewrite and edits nothing", "[sparse][sparsify-blocks]") {
  ir::model m = make({4, 32}, [](ir::graph_builder& gb, ir::value* x) {
    return gb.relu(gb.gemm(matmul_with_weight(gb, x, 32, 32), 16));
  });
  const std::string before = test::bytes_of(m);
  const pass_record r = run(m, small + ",dry-run=1");
  CHECK_FALSE(r.changed);
  CHECK(r.rewrites == 0);
  CHECK(r.counters.at("would-sparsify") == 2);
  CHECK(test::bytes_of(m) == before);
}

TEST_CASE("plan_sparsify reports every product, its blocks and why it was declined", "[sparse][sparsify-blocks]") {
  ir::model m = make({4, 64}, [](ir::graph_builder& gb, ir::value* x) {
    ir::value* h = gb.relu(gb.gemm(x, 128, "up"));
    return gb.matmul(h, gb.input("w", ir::data_type::float32, {128, 8}));
  });
  const std::string before = test::bytes_of(m);
  const auto plan = sparse::plan_sparsify(m, settings_of("block=16x16,sparsity=0.75,min-size=1000"),
                                          sparse::dense_baseline::avx2);
  CHECK(test::bytes_of(m) == before);
  REQUIRE(plan.size() == 2);
  CHECK(plan[0].op_type == "Gemm");
  CHECK(plan[0].declined.empty());
  CHECK(plan[0].k == 64);
  CHECK(plan[0].n == 128);
  CHECK(plan[0].transposed);
  CHECK(plan[0].blocks_total == 32);
  CHECK(plan[0].blocks_kept == 8);
  CHECK(plan[0].block_sparsity == Approx(0.75));
  CHECK(plan[0].fuses_relu);
  CHECK(plan[0].predicted_speedup == Approx(sparse::predicted_speedup(0.75, sparse::dense_baseline::avx2)));
  CHECK(plan[1].op_type == "MatMul");
  CHECK(plan[1].declined == "declined-not-constant");
  // What the plan keeps is what the pass stores.
  const pass_record r = run(m, "block=16x16,sparsity=0.75,min-size=1000");
  CHECK(r.rewrites == 1);
  CHECK(r.counters.at("blocks-kept") == plan[0].blocks_kept);
}

TEST_CASE("sparsify-blocks options parse, print back and refuse bad values in one line", "[sparse][sparsify-blocks]") {
  const pass_registry registry = builtin_registry();
  SECTION("defaults print as no options") {
    const sparse::sparsify_options o = settings_of("");
    CHECK(o.block == sparse::block_shape{16, 16});
    CHECK(o.sparsity == 0.75);
    CHECK(o.min_size == 65536);
    CHECK(o.norm == sparse::block_norm::l2);
    CHECK_FALSE(o.dry_run);
    CHECK(parse_pipeline("sparsify-blocks", registry).to_string() == "sparsify-blocks");
  }
  SECTION("every option round-trips through pipeline text") {
    const std::string text = "sparsify-blocks{block=4x32,dry-run=1,min-size=10,norm=l1,sparsity=0.9}";
    CHECK(parse_pipeline(text, registry).to_string() == text);
    const sparse::sparsify_options o = settings_of("block=4x32,dry-run=1,min-size=10,norm=l1,sparsity=0.9");
    CHECK(o.block == sparse::block_shape{4, 32});
    CHECK(o.sparsity == 0.9);
    CHECK(o.min_size == 10);
    CHECK(o.norm == sparse::block_norm::l1);
    CHECK(o.dry_run);
  }
  SECTION("a square block, and rows and columns apart") {
    CHECK(settings_of("block=8").block == sparse::block_shape{8, 8});
    CHECK(settings_of("block-rows=2,block-cols=64").block == sparse::block_shape{2, 64});
  }
  SECTION("bad values") {
    auto [text, expected] = GENERATE(table<std::string, std::string>({
        {"block=0x16", "block must be an integer in 1..64, got '0'"},
        {"block=16x65", "block must be an integer in 1..64, got '65'"},
        {"block=axb", "block must be an integer in 1..64"},
        {"sparsity=1.5", "sparsity must be a number in [0, 1], got '1.5'"},
        {"sparsity=half", "sparsity must be a number in [0, 1]"},
        {"min-size=-1", "min-size must be a non-negative integer, got '-1'"},
        {"norm=l3", "norm must be l1 or l2, got 'l3'"},
        {"dry-run=yes", "dry-run must be 0, 1, true or false, got 'yes'"},
        {"ratio=0.5", "pass 'sparsify-blocks' has no option 'ratio'"},
    }));
    CAPTURE(text);
    const auto e = test::error_from([&] { (void)parse_pipeline(pipeline_of(text), registry); });
    REQUIRE(e.has_value());
    CHECK(e->code() == errc::invalid_argument);
    CHECK_THAT(std::string(e->what()), Catch::Contains(expected));
    CHECK(std::string(e->what()).find('\n') == std::string::npos);
  }
}

TEST_CASE("sparsify-blocks is registered but in no -O level", "[sparse][sparsify-blocks]") {
  const pass_registry registry = builtin_registry();
  CHECK(registry.contains("sparsify-blocks"));
  for (const auto* p : registry.pipelines()) {
    CAPTURE(p->name);
    CHECK(p->text.find("sparsify") == std::string::npos);
  }
}

TEST_CASE("random graphs through sparsify-blocks match their pruned dense versions", "[sparse][sparsify-blocks]") {
  // -O2 first on odd seeds: it turns MatMul + Add into Gemm with C and folds transposed
  // weights, so the pass meets both forms.
  const pass_registry registry = builtin_registry();
  const std::string options = "block=4x4,sparsity=0.5,min-size=0";
  int rewritten_graphs = 0;
  for (std::uint64_t seed = 0; seed < 120; ++seed) {
    CAPTURE(seed);
    ir::model m = test::random_graph_generator(seed).make();
    if (seed % 2 == 1) {
      pipeline o2 = level_pipeline(2, registry);
      (void)pass_manager().run(o2, m);
    }
    const ir::model reference = test::pruned_reference(m, settings_of(options));
    const pass_record r = run(m, options);
    if (!r.changed) continue;
    ++rewritten_graphs;
    CHECK(same_outputs(reference, m));
  }
  CHECK(rewritten_graphs > 30);
}
