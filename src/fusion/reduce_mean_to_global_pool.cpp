#include "inferopt/fusion/reduce_mean_to_global_pool.hpp"

#include <numeric>
#include <optional>
#include <vector>

#include "inferopt/ir/shapes.hpp"

namespace inferopt {
namespace {

/// The GlobalAveragePool's output type: the input's with every spatial dim 1.
std::optional<ir::value_type> pooled_type(const ir::value* x) {
  std::optional<ir::value_type> t = x->type();
  if (!t || !t->dims) return t;
  for (std::size_t k = 2; k < t->dims->size(); ++k) (*t->dims)[k] = ir::dim(std::int64_t{1});
  return t;
}

class reduce_mean_pattern final : public pattern<ir::node*> {
 public:
  reduce_mean_pattern() : pattern("reduce-mean-to-global-pool", pattern_root{{"ReduceMean"}}) {}

  match_result<ir::node*> match(const ir::graph&, ir::node& mean, const pass_context& ctx) const override {
    if (mean.outputs().size() != 1 || !mean.output(0) || !mean.input(0)) return {};
    const ir::data_type type = ir::element_type(mean.input(0));
    if (type != ir::data_type::float32 && type != ir::data_type::float16 && type != ir::data_type::float64) return {};
    // Rank 4 and up only: on [batch, tokens, hidden] a mean over the last axis is a
    // transformer's LayerNorm statistic, which fuse-layer-norm must still see as ReduceMean.
    const std::optional<std::size_t> rank = ir::known_rank(mean.input(0));
    if (!rank || *rank < 4) return {};
    const bool from_attribute = ctx.onnx_opset() < 18;
    const std::optional<ir::int_list> axes = ir::int_list_operand(mean, "axes", 1, from_attribute, ctx.ir_version());
    if (!axes || !axes->present) return {};
    std::vector<std::int64_t> spatial(*rank - 2);
    std::iota(spatial.begin(), spatial.end(), 2);
    if (ir::normalized_axes(axes->values, static_cast<std::int64_t>(*rank)) != spatial) return {};
    return &mean;
  }

  std::int64_t rewrite(ir::graph& g, ir::node* const& mean, pass_context& ctx) const override {
    ir::value* x = mean->input(0);
    if (mean->attr_int("keepdims", 1) != 0) {
      become(g, mean, "GlobalAveragePool", x);
      ctx.count("to-global-pool");
      return 1;
    }
    // keepdims = 0: the pool keeps [N, C, 1, ...]; a Flatten at axis 1 drops the ones, and
    // the ReduceMean node becomes that Flatten so its output keeps its name and readers.
    ir::node* pool = g.add_node(ir::node_spec{"GlobalAveragePool", {x}, {""}, {}, mean->name() + "_pool", ""}, mean);
    pool->output(0)->set_type(pooled_type(x));
    become(g, mean, "Flatten", pool->output(0));
    mean->set_attribute(ir::attribute::make_int("axis", 1));
    ctx.count("to-global-pool-and-flatten");
    return 1;
  }

 private:
  /// Turns `n` into an `op` reading only `input`, without attributes; its output stays.
  static void become(ir::graph& g, ir::node* n, const char* op, ir::value* input) {
    n->set_op_type(op);
    n->attributes().clear();
    g.set_input(n, 0, input);
    for (std::size_t i = 1; i < n->inputs().size(); ++i) g.set_input(n, i, nullptr);
    g.trim_omitted_inputs(n);
  }
};

}  // namespace

reduce_mean_to_global_pool::reduce_mean_to_global_pool() : pattern_pass(make_patterns<reduce_mean_pattern>()) {}

}  // namespace inferopt
