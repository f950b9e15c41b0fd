#include "inferopt/pass/detail/bypass.hpp"

namespace inferopt::detail {

bypass_result bypass(ir::graph& g, ir::node* n, std::size_t in_index, std::size_t out_index) {
  ir::value* in = n->input(in_index);
  ir::value* out = n->output(out_index);
  expects(in != nullptr && out != nullptr, "bypass: the node has no such input or output");
  if (!out->is_graph_output()) {
    g.replace_all_uses(out, in);
    g.erase(n);
    return bypass_result::removed;
  }
  const bool can_take_name = in->owner() == &g && in->origin() == ir::value_origin::node_output &&
                             !in->is_graph_output();
  if (!can_take_name) return bypass_result::output_name_conflict;
  const std::string name = out->name();
  if (!in->type() && out->type()) in->set_type(out->type());
  g.replace_all_uses(out, in);
  g.erase(n);
  g.clear_value_info(in);  // it is a graph output now, described by the output list
  g.rename(in, name);
  return bypass_result::removed;
}

}  // namespace inferopt::detail
