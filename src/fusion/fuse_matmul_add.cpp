#include "inferopt/fusion/fuse_matmul_add.hpp"

#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/matrix_operands.hpp"
#include "inferopt/ir/rewriting.hpp"
#include "inferopt/ir/shapes.hpp"
#include "two_way_option.hpp"

namespace inferopt {
namespace {

/// A MatMul and its Add, or the statistic naming why they were declined. Neither set: the
/// MatMul does not feed an Add.
struct matmul_add_match {
  ir::node* matmul = nullptr;
  ir::node* add = nullptr;
  std::size_t data_index = 0;  ///< the Add's input that reads the MatMul
  /// Set for a batched A ([..., K], all dims known): A is flattened to [M, K] for the Gemm and
  /// the result reshaped back; holds A's dims.
  std::optional<std::vector<std::int64_t>> batched_a;
  const char* declined = nullptr;
};

/// C as a per-column bias of a batched product: every dim 1 except the last (1 or N).
bool is_column_bias(const std::vector<std::int64_t>& c, std::int64_t n) {
  for (std::size_t k = 0; k + 1 < c.size(); ++k) {
    if (c[k] != 1) return false;
  }
  return c.empty() || c.back() == 1 || c.back() == n;
}

/// Conditions 3 and 5 for a batched A: A's dims all known, B a 2-D [K, N] with N known, C a
/// per-column bias of at most 2 dims or a constant (reshaped to [N]). Sets `batched_a`.
const char* check_batched(const pass_context& ctx, const ir::value* a, const ir::value* b, const ir::value* c,
                          matmul_add_match& m) {
  const std::optional<std::vector<std::int64_t>> a_dims = ir::static_dims(a);
  const std::optional<std::int64_t> n = ir::static_dim(b, 1);
  if (!a_dims || a_dims->size() < 3 || ir::known_rank(b) != std::size_t{2} || !n) return "declined-rank";
  if (ctx.onnx_opset() < 5) return "declined-opset";  // Reshape takes its shape as an input from 5
  const std::optional<std::vector<std::int64_t>> c_dims = ir::static_dims(c);
  if (!c_dims || !is_column_bias(*c_dims, *n) || (c_dims->size() > 2 && !ir::constant_tensor(c, ctx.ir_version()))) {
    return "declined-shape";
  }
  m.batched_a = a_dims;
  return nullptr;
}

matmul_add_match match_at(const pass_context& ctx, const matmul_add_fusion_options& options, ir::node* matmul) {
  matmul_add_match m;
  if (matmul->inputs().size() != 2 || matmul->outputs().size() != 1 || !matmul->input(0) || !matmul->input(1) ||
      !matmul->output(0)) {
    return m;
  }
  ir::value* y = matmul->output(0);
  ir::node* add = ir::sole_user(y);  // condition 2
  if (!add || !add->is("Add") || add->inputs().size() != 2 || add->outputs().size() != 1) return m;
  m.matmul = matmul;
  m.add = add;
  m.data_index = add->input(0) == y ? 0 : 1;
  const ir::value* a = matmul->input(0);
  const ir::value* b = matmul->input(1);
  const ir::value* c = add->input(1 - m.data_index);
  if (ctx.onnx_opset() < 7) {  // condition 1
    m.declined = "declined-opset";
  } else if (!c || !ir::same_floating_type({a, b, c})) {
    m.declined = "declined-type";  // condition 4
  } else if (ir::known_rank(a) != std::size_t{2} || ir::known_rank(b) != std::size_t{2}) {
    m.declined = options.batched ? check_batched(ctx, a, b, c, m) : "declined-rank";  // condition 3, batched form
  } else {
    const std::optional<std::vector<std::int64_t>> c_dims = ir::static_dims(c);  // condition 5
    if (!c_dims || !ir::broadcasts_to_matrix(*c_dims, ir::static_dim(a, 0), ir::static_dim(b, 1))) {
      m.declined = "declined-shape";
    }
  }
  return m;
}

/// The batched form: A -> Reshape[M, K] -> Gemm(B, C) -> the Add, turned into a Reshape back
/// to [..., N], so the Add's output value (and its name) stays.
void rewrite_batched(ir::graph& g, pass_context& ctx, const matmul_add_match& m) {
  const std::vector<std::int64_t>& a_dims = *m.batched_a;
  const std::int64_t k = a_dims.back();
  const std::int64_t n = *ir::static_dim(m.matmul->input(1), 1);
  std::int64_t rows = 1;
  for (std::size_t i = 0; i + 1 < a_dims.size(); ++i) rows *= a_dims[i];
  std::vector<std::int64_t> out_dims(a_dims.begin(), a_dims.end() - 1);
  out_dims.push_back(n);
  const ir::data_type t = ir::element_type(m.matmul->input(0));
  auto shape_constant = [&](const std::string& base, const std::vector<std::int64_t>& dims) {
    std::string name = g.unique_name(base);
    return g.add_initializer(name, ir::tensor::from_values<std::int64_t>(name, {static_cast<std::int64_t>(dims.size())}, dims));
  };

  ir::value* c = m.add->input(1 - m.data_index);
  if (ir::static_dims(c)->size() > 2) {  // a constant [1, ..., N]: Gemm wants [N]
    ir::tensor flat = *ir::constant_tensor(c, ctx.ir_version());
    flat.dims = {flat.element_count()};
    flat.name = g.unique_name(c->name() + "_flat");
    c = g.add_initializer(flat.name, flat);
  }
  const std::string base = m.matmul->name().empty() ? "matmul" : m.matmul->name();
  ir::node* flatten = g.add_node(
      ir::node_spec{"Reshape", {m.matmul->input(0), shape_constant(base + "_rows", {rows, k})}, {""}, {}, base + "_rows", {}},
      m.matmul);
  flatten->output(0)->set_type(ir::value_type{true, t, ir::shape{rows, k}});
  g.set_input(m.matmul, 0, flatten->output(0));
  m.matmul->set_op_type("Gemm");
  g.add_node_input(m.matmul, c);
  ir::value* product = m.matmul->output(0);
  product->set_type(ir::value_type{true, t, ir::shape{rows, n}});
  // The Add becomes the Reshape back: its output keeps its name, type and readers.
  ir::node* back = m.add;
  ir::value* shape_back = shape_constant(base + "_unflatten", out_dims);
  g.set_input(back, 0, product);
  g.set_input(back, 1, shape_back);
  back->set_op_type("Reshape");
}

/// Whether `v` is produced by a node of `g` that comes after `n`.
bool defined_after(const ir::graph& g, const ir::node* n, const ir::value* v) {
  const ir::node* producer = v->producer();
  if (!producer || producer->owner() != &g) return false;
  bool seen_n = false;
  for (const ir::node* x : g.nodes()) {
    if (x == n) seen_n = true;
    if (x == producer) return seen_n;
  }
  return false;
}

class matmul_add_pattern final : public pattern<matmul_add_match> {
 public:
  explicit matmul_add_pattern(std::shared_ptr<const matmul_add_fusion_options> options)
      : pattern("fuse-matmul-add", pattern_root{{"MatMul"}}, 1, {"matmul-adds-fused"}), options_(std::move(options)) {}

  match_result<matmul_add_match> match(const ir::graph& g, ir::node& matmul, const pass_context& ctx) const override {
    matmul_add_match m = match_at(ctx, *options_, &matmul);
    if (!m.add) return {};
    if (m.declined) return match_result<matmul_add_match>::declined(m.declined);
    // condition 6; the batched form keeps the Add (as the Reshape back), so its name stays
    if (!m.batched_a && ir::can_bypass(g, m.add, m.data_index) != ir::bypass_result::removed) {
      return match_result<matmul_add_match>::declined("declined-output-name");
    }
    return m;
  }

  std::int64_t rewrite(ir::graph& g, const matmul_add_match& m, pass_context& ctx) const override {
    ir::value* c = m.add->input(1 - m.data_index);
    const bool reorder = defined_after(g, m.matmul, c);
    if (m.batched_a) {
      rewrite_batched(g, ctx, m);
      ctx.count("batched-matmul-adds-fused");
    } else {
      ir::bypass(g, m.add, m.data_index);
      m.matmul->set_op_type("Gemm");
      g.set_input(m.matmul, 2, c);
    }
    if (reorder) g.sort_topologically();
    ctx.count("matmul-adds-fused");
    return 1;
  }

 private:
  std::shared_ptr<const matmul_add_fusion_options> options_;
};

}  // namespace

fuse_matmul_add::fuse_matmul_add() : fuse_matmul_add(std::make_shared<matmul_add_fusion_options>()) {}

fuse_matmul_add::fuse_matmul_add(std::shared_ptr<matmul_add_fusion_options> options)
    : pattern_pass([&] {
        std::vector<std::unique_ptr<rewrite_pattern>> patterns;
        patterns.push_back(std::make_unique<matmul_add_pattern>(options));
        return patterns;
      }()),
      options_(std::move(options)) {}

namespace {
constexpr fusion::detail::two_way_option unbatched_option{"batched", "true", "false"};
}  // namespace

void fuse_matmul_add::set_option(std::string_view key, std::string_view value) {
  bool unbatched = !options_->batched;
  unbatched_option.set(name(), key, value, unbatched);
  options_->batched = !unbatched;
}

std::map<std::string, std::string> fuse_matmul_add::options() const { return unbatched_option.text(!options_->batched); }

}  // namespace inferopt
