#include "inferopt/fusion/fuse_matmul_add.hpp"

#include "inferopt/fusion/detail/constant_tensor.hpp"
#include "inferopt/fusion/detail/matrix_operands.hpp"
#include "inferopt/pass/detail/bypass.hpp"

namespace inferopt {
namespace {

/// A MatMul and its Add, or the statistic naming why they were declined. Neither set: the
/// MatMul does not feed an Add.
struct match {
  ir::node* matmul = nullptr;
  ir::node* add = nullptr;
  std::size_t data_index = 0;  ///< the Add's input that reads the MatMul
  const char* declined = nullptr;
};

match match_at(const pass_context& ctx, ir::node* matmul) {
  match m;
  if (matmul->inputs().size() != 2 || matmul->outputs().size() != 1 || !matmul->input(0) || !matmul->input(1) ||
      !matmul->output(0)) {
    return m;
  }
  ir::value* y = matmul->output(0);
  ir::node* add = detail::sole_user(y);  // condition 2
  if (!add || !add->is("Add") || add->inputs().size() != 2 || add->outputs().size() != 1) return m;
  m.matmul = matmul;
  m.add = add;
  m.data_index = add->input(0) == y ? 0 : 1;
  const ir::value* a = matmul->input(0);
  const ir::value* b = matmul->input(1);
  const ir::value* c = add->input(1 - m.data_index);
  if (ctx.onnx_opset() < 7) {  // condition 1
    m.declined = "declined-opset";
  } else if (detail::known_rank(ctx, a) != std::size_t{2} || detail::known_rank(ctx, b) != std::size_t{2}) {
    m.declined = "declined-rank";  // condition 3
  } else if (!c || !detail::same_floating_type(ctx, {a, b, c})) {
    m.declined = "declined-type";  // condition 4
  } else {
    const std::optional<std::vector<std::int64_t>> c_dims = detail::static_dims(ctx, c);  // condition 5
    if (!c_dims || !detail::broadcasts_to_matrix(*c_dims, detail::static_dim(ctx, a, 0), detail::static_dim(ctx, b, 1))) {
      m.declined = "declined-shape";
    }
  }
  return m;
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

}  // namespace

bool fuse_matmul_add::run(ir::graph& g, pass_context& ctx) {
  std::int64_t fused = 0;
  for (ir::node* n : g.node_list()) {
    if (n->is_dead() || !n->is("MatMul")) continue;
    const match m = match_at(ctx, n);
    if (!m.add) continue;
    if (m.declined) {
      ctx.count(m.declined);
      continue;
    }
    ir::value* c = m.add->input(1 - m.data_index);
    const bool reorder = defined_after(g, m.matmul, c);
    if (detail::bypass(g, m.add, m.data_index) != detail::bypass_result::removed) {  // condition 6
      ctx.count("declined-output-name");
      continue;
    }
    m.matmul->set_op_type("Gemm");
    g.set_input(m.matmul, 2, c);
    if (reorder) g.sort_topologically();
    ++fused;
  }
  ctx.rewrote(fused);
  ctx.count("matmul-adds-fused", fused);
  return fused > 0;
}

}  // namespace inferopt
