#include "inferopt/prune/apply_pruning.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "cuttable_constant.hpp"
#include "gather_slices.hpp"
#include "inferopt/core/error.hpp"
#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/graph.hpp"
#include "inferopt/ir/rewriting.hpp"
#include "inferopt/ir/verify.hpp"

namespace inferopt::prune {
namespace {

/// Keeps, along `axis`, the slices `keep_slice(outer_index, slice)` accepts; every outer index
/// must keep `kept` slices.
template <class Keep>
ir::tensor gather(const ir::tensor& t, std::int64_t axis, std::int64_t kept, Keep keep_slice) {
  return gather_slices(t, axis, kept, [&](std::int64_t o) {
    std::vector<std::int64_t> sources;
    for (std::int64_t c = 0; c < t.dims[static_cast<std::size_t>(axis)]; ++c) {
      if (keep_slice(o, c)) sources.push_back(c);
    }
    return sources;
  });
}

class cutter {
 public:
  cutter(ir::model& m, const channel_analysis& a, const pruning_plan& plan) : model_(m), ir_version_(m.ir_version), a_(a) {
    removed_.assign(a.group_of_channel.size(), false);
    for (const group_selection& s : plan.groups) {
      for (std::size_t u : s.removed_units) {
        for (channel_id id : a.groups[s.group].units[u].channels) {
          removed_[id] = true;
          ++result_.removed_channels;
        }
      }
    }
  }

  apply_result run() {
    for (const cut_site& s : a_.sites) {
      std::vector<bool> keep(s.layout.size());
      std::int64_t kept = 0;
      for (std::size_t p = 0; p < s.layout.size(); ++p) kept += (keep[p] = !removed_[s.layout[p]]) ? 1 : 0;
      if (kept == static_cast<std::int64_t>(s.layout.size())) continue;
      if (kept == 0) throw error(errc::invalid_argument, "pruning would remove every channel at " + s.node->describe());
      cut(s, keep, kept);
      ++result_.cut_sites;
    }
    reinfer_shapes();
    return result_;
  }

 private:
  void cut(const cut_site& s, const std::vector<bool>& keep, std::int64_t kept) {
    ir::graph& g = *s.node->owner();
    switch (s.kind) {
      case cut_kind::constant_axis:
        return cut_constant(s, kept, [&](std::int64_t, std::int64_t c) { return keep[c]; });
      case cut_kind::grouped_input_axis: {
        // Axis 1 holds the inputs of one group; output row o belongs to group o / rows_per_group.
        const auto current = cuttable_constant(s.node->input(s.input_index), ir_version_);
        expects(current.has_value(), "a grouped Conv weight stays cuttable");
        const std::int64_t per_group = static_cast<std::int64_t>(s.layout.size()) / s.groups;
        const std::int64_t rows_per_group = current->dims[0] / s.groups;
        return cut_constant(s, kept / s.groups, [&](std::int64_t row, std::int64_t local) {
          return keep[static_cast<std::size_t>((row / rows_per_group) * per_group + local)];
        });
      }
      case cut_kind::group_attribute:
        s.node->set_attribute(ir::attribute::make_int("group", kept));
        return;
      case cut_kind::reshape_target: {
        auto shape = ir::constant_ints(s.node->input(s.input_index), ir_version_);
        expects(shape.has_value(), "a Reshape target stays constant");
        (*shape)[s.axis] = static_cast<std::int64_t>(std::count(keep.begin(), keep.end(), true));
        ir::set_constant_input(g, s.node, s.input_index,
                               ir::tensor::from_values<std::int64_t>("", {static_cast<std::int64_t>(shape->size())}, *shape),
                               s.node->input(s.input_index)->name() + "_pruned");
        return;
      }
      case cut_kind::split_sizes: {
        std::vector<std::int64_t> sizes;
        for (std::size_t i = 0; i < s.segment_starts.size(); ++i) {
          const auto end = i + 1 < s.segment_starts.size() ? s.segment_starts[i + 1] : static_cast<std::int64_t>(keep.size());
          sizes.push_back(std::count(keep.begin() + s.segment_starts[i], keep.begin() + end, true));
          if (sizes.back() == 0) throw error(errc::invalid_argument, "pruning would empty an output of " + s.node->describe());
        }
        if (s.node->input(1)) {
          ir::set_constant_input(g, s.node, 1,
                                 ir::tensor::from_values<std::int64_t>("", {static_cast<std::int64_t>(sizes.size())}, sizes),
                                 s.node->input(1)->name() + "_pruned");
        } else {
          s.node->set_attribute(ir::attribute::make_ints("split", sizes));
        }
        return;
      }
    }
  }

  /// Shrinks axis `s.axis` of the constant at `s.node`'s input to `kept`.
  template <class Keep>
  void cut_constant(const cut_site& s, std::int64_t kept, Keep keep_slice) {
    ir::value* v = s.node->input(s.input_index);
    const auto current = cuttable_constant(v, ir_version_);
    expects(current.has_value(), "a cut constant stays cuttable");
    ir::graph& g = *s.node->owner();
    if (current->constant_of_shape) {
      // Every element is the same value: only the target shape changes.
      std::vector<std::int64_t> dims = current->dims;
      dims[s.axis] = kept;
      ir::node* producer = const_cast<ir::node*>(current->constant_of_shape);
      ir::set_constant_input(g, producer, 0,
                             ir::tensor::from_values<std::int64_t>("", {static_cast<std::int64_t>(dims.size())}, dims),
                             v->name() + "_shape");
      return;
    }
    // A constant other nodes read too (exporters share equal biases) is cut in a copy; a
    // declared type (value_info, or the graph input of an IR < 4 model) follows the data.
    ir::replace_constant_input(g, s.node, s.input_index, gather(*current->data, s.axis, kept, keep_slice));
  }

  void reinfer_shapes() {
    ir::graph& g = model_.graph();
    for (ir::value* v : g.values()) {
      if (v->origin() == ir::value_origin::node_output && !v->is_graph_output()) g.clear_value_info(v);
    }
    ir::shape_inference_options options;
    options.declared = ir::shape_inference_options::declared_types::refresh;
    (void)ir::infer_shapes(model_, options);
  }

  ir::model& model_;
  const std::int64_t ir_version_;
  const channel_analysis& a_;
  std::vector<bool> removed_;
  apply_result result_;
};

}  // namespace

apply_result apply_pruning(ir::model& m, const channel_analysis& a, const pruning_plan& plan) {
  return cutter(m, a, plan).run();
}

}  // namespace inferopt::prune
