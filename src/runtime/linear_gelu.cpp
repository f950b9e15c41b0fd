#include "linear_gelu.hpp"

#include <string>
#include <vector>

#include "inferopt/ir/graph.hpp"
#include "inferopt/ir/rewriting.hpp"
#include "kernels/nn_common.hpp"

namespace inferopt::runtime::detail {

namespace {

bool is_constant_float(const ir::value* v, std::size_t rank) {
  return v && v->is_constant() && v->initializer()->has_data() && v->initializer()->dtype == ir::data_type::float32 &&
         v->initializer()->dims.size() == rank;
}

/// The GELU form of `n` ("none": erf, "tanh") when it is a GELU reading its input 0 and,
/// as bias, nothing or a constant vector of `width` floats; empty otherwise.
std::string gelu_form(const ir::node& n, std::int64_t width) {
  const bool microsoft = n.domain() == "com.microsoft";
  std::string form;
  if (microsoft && (n.op_type() == "Gelu" || n.op_type() == "BiasGelu")) form = "none";
  if (microsoft && n.op_type() == "FastGelu") form = "tanh";
  if (n.is("Gelu")) form = n.attr_string("approximate", "none");
  if (form != "none" && form != "tanh") return {};
  if (n.outputs().size() != 1 || n.inputs().size() > 2) return {};
  if (n.inputs().size() == 2 && n.input(1)) {
    const ir::value* bias = n.input(1);
    if (n.is("Gelu") || !is_constant_float(bias, 1) || bias->initializer()->dims[0] != width) return {};
  }
  return form;
}

/// Replaces MatMul `mm` and the GELU `act` that alone reads it by one MatMulGelu.
void fuse(ir::graph& g, ir::node& mm, ir::node& act, std::string form) {
  std::vector<ir::value*> inputs{mm.input(0), mm.input(1)};
  if (act.inputs().size() == 2 && act.input(1)) inputs.push_back(act.input(1));
  std::vector<ir::attribute> attributes;
  attributes.push_back(ir::attribute::make_string("approximate", std::move(form)));
  std::string label = mm.label();
  mm.set_name("");
  ir::node* fused = g.add_node({"MatMulGelu", std::move(inputs), {""}, std::move(attributes), std::move(label), nn::executor_fused_domain}, &mm);
  fused->output(0)->set_type(act.output(0)->type());
  ir::forward_past(g, &act, fused->output(0));
  ir::erase_if_unread(g, &mm);
}

}  // namespace

int fuse_linear_gelu(ir::graph& g) {
  int fused = 0;
  const std::vector<ir::node*> order(g.nodes().begin(), g.nodes().end());
  for (ir::node* mm : order) {
    if (mm->is_dead() || !mm->is("MatMul") || !is_constant_float(mm->input(1), 2)) continue;
    const ir::value* a = mm->input(0);
    ir::node* act = ir::sole_user(mm->output(0));
    if (!a || a->elem_type() != ir::data_type::float32 || !act || act->input(0) != mm->output(0)) continue;
    std::string form = gelu_form(*act, mm->input(1)->initializer()->dims[1]);
    if (form.empty()) continue;
    fuse(g, *mm, *act, std::move(form));
    ++fused;
  }
  if (fused > 0) g.compact();
  return fused;
}

}  // namespace inferopt::runtime::detail
