#include "inferopt/pass/cleanup/remove_unused.hpp"

#include "inferopt/ir/serialize.hpp"

namespace inferopt {

bool remove_unused::run(ir::graph& g, pass_context& ctx) {
  std::int64_t initializers = 0;
  for (ir::value* v : g.initializers()) {
    if (v->has_uses() || v->is_graph_output()) continue;
    g.erase_value(v);
    ++initializers;
  }
  const auto stale_info = static_cast<std::int64_t>(ir::drop_stray_value_info(g));
  ctx.count("initializers-removed", initializers);
  ctx.count("value-info-removed", stale_info);
  ctx.rewrote(initializers + stale_info);
  return initializers + stale_info > 0;
}

}  // namespace inferopt
