#include "inferopt/sparse/sparsify_blocks.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <optional>

#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/matrix_operands.hpp"
#include "inferopt/ir/rewriting.hpp"
#include "inferopt/ir/shapes.hpp"
#include "inferopt/sparse/block_sparse_matmul_op.hpp"

namespace inferopt::sparse {
namespace {

namespace op = block_sparse_matmul_op;

constexpr std::array<std::string_view, 4> gemm_attributes{"alpha", "beta", "transA", "transB"};

/// A MatMul or Gemm the pass rewrites: everything `rewrite` needs, found without editing.
struct sparsify_match {
  ir::node* product = nullptr;
  ir::value* weight = nullptr;
  const ir::tensor* weight_data = nullptr;
  std::int64_t k = 0;
  std::int64_t n = 0;
  bool transposed = false;    // B is W^T (Gemm transB = 1)
  ir::value* bias = nullptr;  // Gemm's C, or null
  bool bias_is_vector = false;  // C is already [N]: used as it is
  ir::node* relu = nullptr;   // folded into the op when set
};

struct match_result {
  sparsify_match found;
  const char* declined = nullptr;  // a statistic name; null with found.product set: a match
};

bool is_product(const ir::node* n) { return n->is("MatMul") || n->is("Gemm"); }

/// Condition 6: C as a per-column bias. Sets `bias` and `bias_is_vector`.
const char* check_bias(const pass_context& ctx, ir::value* c, sparsify_match& m) {
  if (const ir::tensor* t = ir::constant_tensor(c, ctx.ir_version())) {
    const std::vector<std::int64_t>& d = t->dims;
    const bool columns = d.size() <= 2 && std::all_of(d.begin(), d.empty() ? d.end() : d.end() - 1,
                                                      [](std::int64_t x) { return x == 1; });
    const std::int64_t last = d.empty() ? 1 : d.back();
    if (t->dtype != ir::data_type::float32 || !columns || (last != 1 && last != m.n) ||
        t->byte_size() != static_cast<std::size_t>(std::max<std::int64_t>(t->element_count(), 0)) * sizeof(float)) {
      return "declined-bias";
    }
    m.bias = c;
    m.bias_is_vector = d.size() == 1 && last == m.n;
    return nullptr;
  }
  const std::optional<std::vector<std::int64_t>> dims = ir::static_dims(c);
  const ir::data_type type = ir::element_type(c);
  if (!dims || *dims != std::vector<std::int64_t>{m.n} || type != ir::data_type::float32) return "declined-bias";
  m.bias = c;
  m.bias_is_vector = true;
  return nullptr;
}

/// Conditions 1 (attributes) for a Gemm; sets `transposed`.
const char* check_gemm_attributes(const ir::node* gemm, sparsify_match& m) {
  for (const ir::attribute& a : gemm->attributes()) {
    if (std::find(gemm_attributes.begin(), gemm_attributes.end(), a.name) == gemm_attributes.end()) {
      return "declined-attributes";
    }
  }
  const bool has_c = gemm->input(2) != nullptr;
  if (gemm->attr_int("transA", 0) != 0 || gemm->attr_float("alpha", 1.0f) != 1.0f ||
      (has_c && gemm->attr_float("beta", 1.0f) != 1.0f)) {
    return "declined-attributes";
  }
  m.transposed = gemm->attr_int("transB", 0) != 0;
  return nullptr;
}

/// Conditions 2 to 5 on the weight and the data input. Sets `weight`, `k`, `n`.
const char* check_operands(const pass_context& ctx, const ir::node* product, const sparsify_options& o,
                           sparsify_match& m) {
  ir::value* a = product->input(0);
  ir::value* b = product->input(1);
  const ir::tensor* w = ir::constant_tensor(b, ctx.ir_version());
  if (!w) return "declined-not-constant";
  const ir::data_type a_type = ir::element_type(a);
  if (w->dtype != ir::data_type::float32 || (a_type != ir::data_type::float32 && a_type != ir::data_type::undefined)) {
    return "declined-type";
  }
  if (w->dims.size() != 2) return "declined-rank";
  const std::int64_t elements = w->element_count();
  if (elements < 0 || w->byte_size() != static_cast<std::size_t>(elements) * sizeof(float)) {
    return "declined-not-constant";  // data that does not match its dims: nothing to prune
  }
  m.weight = b;
  m.weight_data = w;
  m.k = m.transposed ? w->dims[1] : w->dims[0];
  m.n = m.transposed ? w->dims[0] : w->dims[1];
  const std::optional<std::size_t> rank = ir::known_rank(a);
  const std::size_t min_rank = product->is("Gemm") ? 2 : 1;
  if (rank && (*rank < min_rank || (product->is("Gemm") && *rank != 2))) return "declined-rank";
  if (rank) {
    if (const std::optional<std::int64_t> k = ir::static_dim(a, *rank - 1); k && *k != m.k) {
      return "declined-shape";
    }
  }
  if (elements < o.min_size || elements == 0) return "declined-small";
  // Condition 5: the values, read once here so that pruning cannot fail after an edit.
  const float* values = reinterpret_cast<const float*>(w->bytes->data());
  for (std::int64_t i = 0; i < elements; ++i) {
    float x;
    std::memcpy(&x, values + i, sizeof x);
    if (std::isnan(x)) return "declined-not-finite";
  }
  return nullptr;
}

/// Whether `relu` can be folded into the op: a plain Relu whose output can keep its name.
bool foldable_relu(const ir::graph& g, const ir::value* out, const ir::node* relu) {
  return relu && relu->is("Relu") && relu->inputs().size() == 1 && relu->input(0) == out &&
         relu->outputs().size() == 1 && relu->output(0) &&
         ir::can_bypass(g, relu, 0, 0) == ir::bypass_result::removed;
}

match_result match(const ir::graph& g, const pass_context& ctx, const sparsify_options& o, ir::node* product) {
  match_result r;
  sparsify_match& m = r.found;
  // 1. the node's shape and, for Gemm, its attributes
  const bool gemm = product->is("Gemm");
  const std::size_t max_inputs = gemm ? 3 : 2;
  if (product->inputs().size() < 2 || product->inputs().size() > max_inputs || !product->input(0) ||
      !product->input(1) || product->outputs().size() != 1 || !product->output(0)) {
    r.declined = "declined-attributes";
    return r;
  }
  if (gemm) {
    if (const char* why = check_gemm_attributes(product, m)) {
      r.declined = why;
      return r;
    }
  }
  // 2 to 5. the weight and the data input
  if (const char* why = check_operands(ctx, product, o, m)) {
    r.declined = why;
    return r;
  }
  // 6. C as a bias
  if (gemm && product->input(2)) {
    if (const char* why = check_bias(ctx, product->input(2), m)) {
      r.declined = why;
      return r;
    }
  }
  // 7. the op's domain at version 1
  const std::optional<std::int64_t> version = ctx.model().opset(op::domain);
  if (version && *version != op::version) {
    r.declined = "declined-opset";
    return r;
  }
  // 8. a per-node sparsity that removes nothing: the dense product is faster
  if (const auto it = o.node_sparsity.find(product->label()); it != o.node_sparsity.end() && it->second == 0.0) {
    r.declined = "declined-dense";
    return r;
  }
  ir::value* out = product->output(0);
  if (ir::node* next = ir::sole_user(out); foldable_relu(g, out, next)) m.relu = next;
  m.product = product;
  return r;
}

/// The block grid of the stored matrix: `block` is on W as used, transposed with it.
block_shape stored_block(const sparsify_options& o, bool transposed) {
  return transposed ? block_shape{o.block.cols, o.block.rows} : o.block;
}

sparsify_candidate describe(const sparsify_match& m, const sparsify_options& o, dense_baseline baseline) {
  sparsify_candidate c;
  c.k = m.k;
  c.n = m.n;
  c.transposed = m.transposed;
  const std::int64_t block_rows = (m.k + o.block.rows - 1) / o.block.rows;
  const std::int64_t block_cols = (m.n + o.block.cols - 1) / o.block.cols;
  c.blocks_total = block_rows * block_cols;
  // prune_blocks' count, so that a dry run reports exactly what a real run keeps.
  c.blocks_kept = c.blocks_total - std::llround(o.sparsity_of(*m.product) * static_cast<double>(c.blocks_total));
  c.block_sparsity = c.blocks_total == 0 ? 0.0
                                         : 1.0 - static_cast<double>(c.blocks_kept) / static_cast<double>(c.blocks_total);
  c.predicted_speedup = predicted_speedup(c.block_sparsity, baseline);
  c.fuses_relu = m.relu != nullptr;
  return c;
}

ir::value* add_tensor(ir::graph& g, const std::string& base, ir::tensor t) {
  std::string name = g.unique_name(base);
  t.name = name;
  return g.add_initializer(std::move(name), std::move(t));
}

/// Erases a constant nothing reads any more.
void erase_if_unused(ir::graph& g, ir::value* v) {
  if (v && !v->is_dead() && v->owner() == &g && v->origin() == ir::value_origin::initializer && !v->has_uses() &&
      !v->is_graph_output()) {
    g.erase_value(v);
  }
}

void rewrite(ir::graph& g, pass_context& ctx, const sparsify_options& o, const sparsify_match& m) {
  const ir::tensor& w = *m.weight_data;
  const std::int64_t rows = w.dims[0];
  const std::int64_t cols = w.dims[1];
  prune_options prune;
  prune.block = stored_block(o, m.transposed);
  prune.norm = o.norm;
  prune.sparsity = o.sparsity_of(*m.product);
  std::vector<float> dense(static_cast<std::size_t>(rows * cols));
  if (!dense.empty()) std::memcpy(dense.data(), w.bytes->data(), dense.size() * sizeof(float));
  const bsr_op_arrays arrays = to_op_arrays(prune_blocks<float>(dense, rows, cols, prune));
  const auto nnz = static_cast<std::int64_t>(arrays.col_ind.size());

  ir::node* n = m.product;
  const std::string base = (n->name().empty() ? std::string("sparse_matmul") : n->name()) + "_bsr";
  ir::value* row_ptr = add_tensor(
      g, base + "_row_ptr",
      ir::tensor::from_values<std::int64_t>("", {static_cast<std::int64_t>(arrays.row_ptr.size())}, arrays.row_ptr));
  ir::value* col_ind = add_tensor(g, base + "_col_ind", ir::tensor::from_values<std::int64_t>("", {nnz}, arrays.col_ind));
  ir::value* values = add_tensor(
      g, base + "_values",
      ir::tensor::from_values<float>("", {nnz, prune.block.rows, prune.block.cols}, arrays.values));
  ir::value* bias = m.bias;
  ir::value* old_bias = nullptr;
  if (bias && !m.bias_is_vector) {  // a constant [1], [1, N], ...: the op wants [N]
    const std::vector<float> c = bias->initializer()->values<float>();
    std::vector<float> column(static_cast<std::size_t>(m.n), c.empty() ? 0.0f : c.front());
    if (static_cast<std::int64_t>(c.size()) == m.n) column = c;
    old_bias = bias;
    bias = add_tensor(g, base + "_bias", ir::tensor::from_values<float>("", {m.n}, column));
  }

  std::vector<ir::value*> inputs{n->input(0), row_ptr, col_ind, values};
  if (bias) inputs.push_back(bias);
  for (std::size_t i = 1; i < inputs.size(); ++i) {
    if (i < n->inputs().size()) g.set_input(n, i, inputs[i]);
    else g.add_node_input(n, inputs[i]);
  }
  n->set_op_type(std::string(op::op_type));
  n->set_domain(std::string(op::domain));
  n->attributes().clear();
  n->set_attribute(ir::attribute::make_int("rows", m.k));
  n->set_attribute(ir::attribute::make_int("cols", m.n));
  n->set_attribute(ir::attribute::make_int("block_rows", o.block.rows));
  n->set_attribute(ir::attribute::make_int("block_cols", o.block.cols));
  n->set_attribute(ir::attribute::make_int("transposed", m.transposed ? 1 : 0));
  if (m.relu) {
    ir::bypass(g, m.relu, 0, 0);  // checked in match: cannot decline
    n->set_attribute(ir::attribute::make_string("activation", "Relu"));
  }
  erase_if_unused(g, m.weight);
  erase_if_unused(g, old_bias);
  ctx.require_opset(std::string(op::domain), op::version);
  ctx.count("blocks-kept", nnz);
}


// ---- option parsing ----------------------------------------------------------------------

[[noreturn]] void bad_option(std::string_view key, std::string_view value, const std::string& want) {
  throw error(errc::invalid_argument,
              "sparsify-blocks: " + std::string(key) + " must be " + want + ", got '" + std::string(value) + "'");
}

std::int64_t parse_int(std::string_view key, std::string_view value, const std::string& want) {
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || end != value.data() + value.size()) bad_option(key, value, want);
  return v;
}

std::int32_t parse_extent(std::string_view key, std::string_view value) {
  const std::int64_t v = parse_int(key, value, "an integer in 1..64");
  if (v < 1 || v > block_shape::max_extent) bad_option(key, value, "an integer in 1..64");
  return static_cast<std::int32_t>(v);
}

std::string format_double(double v) {
  std::array<char, 32> buf{};
  auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  return ec == std::errc() ? std::string(buf.data(), end) : std::to_string(v);
}

}  // namespace

void check(const sparsify_options& o) {
  auto fail = [](const std::string& what) { throw error(errc::invalid_argument, "sparsify-blocks: " + what); };
  if (o.block.rows < 1 || o.block.rows > block_shape::max_extent || o.block.cols < 1 ||
      o.block.cols > block_shape::max_extent) {
    fail("block " + std::to_string(o.block.rows) + "x" + std::to_string(o.block.cols) + " is outside 1..64");
  }
  if (!(o.sparsity >= 0.0 && o.sparsity <= 1.0)) fail("sparsity " + format_double(o.sparsity) + " is outside [0, 1]");
  for (const auto& [node, s] : o.node_sparsity) {
    if (!(s >= 0.0 && s <= 1.0)) fail("sparsity " + format_double(s) + " of '" + node + "' is outside [0, 1]");
  }
  if (o.min_size < 0) fail("min-size " + std::to_string(o.min_size) + " is negative");
}

double sparsify_options::sparsity_of(const ir::node& node) const {
  const auto it = node_sparsity.find(node.label());
  return it == node_sparsity.end() ? sparsity : it->second;
}

std::vector<sparsify_candidate> plan_sparsify(const ir::model& m, const sparsify_options& options,
                                              dense_baseline baseline) {
  check(options);
  const pass_context ctx(m);
  std::vector<sparsify_candidate> out;
  for (ir::node* n : m.graph().nodes()) {
    if (!is_product(n)) continue;
    const match_result r = match(m.graph(), ctx, options, n);
    sparsify_candidate c = r.found.product ? describe(r.found, options, baseline) : sparsify_candidate{};
    if (!r.found.product) {
      c.k = r.found.k;
      c.n = r.found.n;
      c.transposed = r.found.transposed;
      c.declined = r.declined;
    }
    c.node = n->label();
    c.at = n;
    c.op_type = n->op_type();
    out.push_back(std::move(c));
  }
  return out;
}

bool sparsify_blocks::run(ir::graph& g, pass_context& ctx) {
  check(options_);
  std::int64_t rewritten = 0;
  for (ir::node* n : g.node_list()) {
    if (n->is_dead() || !is_product(n)) continue;
    const match_result r = match(g, ctx, options_, n);
    if (!r.found.product) {
      ctx.count(r.declined);
      continue;
    }
    if (options_.dry_run) {
      ctx.count("would-sparsify");
      continue;
    }
    if (r.found.relu) ctx.count("relus-fused");
    rewrite(g, ctx, options_, r.found);
    ++rewritten;
  }
  ctx.rewrote(rewritten);
  ctx.count("weights-sparsified", rewritten);
  return rewritten > 0;
}

void sparsify_blocks::set_option(std::string_view key, std::string_view value) {
  if (key == "block") {
    const std::size_t x = value.find('x');
    if (x == std::string_view::npos) {
      options_.block.rows = options_.block.cols = parse_extent(key, value);
    } else {
      options_.block.rows = parse_extent(key, value.substr(0, x));
      options_.block.cols = parse_extent(key, value.substr(x + 1));
    }
  } else if (key == "block-rows") {
    options_.block.rows = parse_extent(key, value);
  } else if (key == "block-cols") {
    options_.block.cols = parse_extent(key, value);
  } else if (key == "sparsity") {
    double v = 0.0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec != std::errc() || end != value.data() + value.size() || !(v >= 0.0 && v <= 1.0)) {
      bad_option(key, value, "a number in [0, 1]");
    }
    options_.sparsity = v;
  } else if (key == "min-size") {
    const std::int64_t v = parse_int(key, value, "a non-negative integer");
    if (v < 0) bad_option(key, value, "a non-negative integer");
    options_.min_size = v;
  } else if (key == "norm") {
    if (value == "l1") options_.norm = block_norm::l1;
    else if (value == "l2") options_.norm = block_norm::l2;
    else bad_option(key, value, "l1 or l2");
  } else if (key == "dry-run") {
    if (value == "1" || value == "true") options_.dry_run = true;
    else if (value == "0" || value == "false") options_.dry_run = false;
    else bad_option(key, value, "0, 1, true or false");
  } else {
    pass::set_option(key, value);
  }
}

std::map<std::string, std::string> sparsify_blocks::options() const {
  const sparsify_options defaults;
  std::map<std::string, std::string> out;
  if (options_.block != defaults.block) {
    out["block"] = std::to_string(options_.block.rows) + "x" + std::to_string(options_.block.cols);
  }
  if (options_.sparsity != defaults.sparsity) out["sparsity"] = format_double(options_.sparsity);
  if (options_.min_size != defaults.min_size) out["min-size"] = std::to_string(options_.min_size);
  if (options_.norm != defaults.norm) out["norm"] = options_.norm == block_norm::l1 ? "l1" : "l2";
  if (options_.dry_run) out["dry-run"] = "1";
  return out;
}

}  // namespace inferopt::sparse
