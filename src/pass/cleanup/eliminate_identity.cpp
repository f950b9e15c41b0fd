#include "inferopt/pass/cleanup/eliminate_identity.hpp"

#include "inferopt/ir/rewriting.hpp"

namespace inferopt {

bool eliminate_identity::run(ir::graph& g, pass_context& ctx) {
  std::int64_t removed = 0;
  for (ir::node* n : g.node_list()) {
    if (n->is_dead() || !n->is("Identity") || n->inputs().size() != 1 || n->outputs().size() != 1 ||
        !n->input(0) || !n->output(0)) {
      continue;
    }
    if (ir::is_identity_of_constant(*n, ctx.ir_version())) {
      ir::forward_constant(g, n);
      ++removed;
      ctx.count("constants-forwarded");
    } else if (ir::bypass(g, n) == ir::bypass_result::removed) {
      ++removed;
    } else {
      ctx.count("declined-output-name");
    }
  }
  ctx.rewrote(removed);
  ctx.count("identities-removed", removed);
  return removed > 0;
}

}  // namespace inferopt
