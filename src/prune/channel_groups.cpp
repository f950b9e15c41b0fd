#include "inferopt/prune/channel_groups.hpp"

#include <algorithm>
#include <array>
#include <numeric>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "cuttable_constant.hpp"
#include "reshape_mapping.hpp"
#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/graph.hpp"
#include "inferopt/ir/matrix_operands.hpp"
#include "inferopt/ir/rewriting.hpp"
#include "inferopt/ir/shapes.hpp"

namespace inferopt::prune {
namespace {

using ir::constant_ints;

/// Which channel sits at each position of one axis of a tensor.
struct layout {
  std::int64_t axis = 0;
  std::vector<channel_id> ids;
};

/// Union-find over channel ids: coupled channels share a root.
class channel_sets {
 public:
  channel_id add(std::int64_t count) {
    const auto first = static_cast<channel_id>(parent_.size());
    for (std::int64_t i = 0; i < count; ++i) parent_.push_back(first + i);
    return first;
  }
  channel_id find(channel_id x) {
    while (parent_[x] != x) {
      parent_[x] = parent_[parent_[x]];
      x = parent_[x];
    }
    return x;
  }
  void join(channel_id a, channel_id b) {
    a = find(a);
    b = find(b);
    if (a != b) parent_[std::max(a, b)] = std::min(a, b);
  }
  [[nodiscard]] std::size_t size() const noexcept { return parent_.size(); }

 private:
  std::vector<channel_id> parent_;
};

/// A grouped Conv needs equal removals from each of its `groups` equal chunks of `ids`.
struct chunk_constraint {
  std::vector<channel_id> ids;
  std::int64_t groups = 1;
  const ir::node* conv = nullptr;
};

bool is_one_of(const ir::node& n, std::initializer_list<std::string_view> ops) {
  return n.is_onnx_domain() && std::find(ops.begin(), ops.end(), n.op_type()) != ops.end();
}

/// Ops that keep each channel where it is and mix nothing across channels (LRN mixes a
/// small window of neighbours: pruning keeps it valid but shifts which neighbours it sees).
bool keeps_channels(const ir::node& n) {
  return is_one_of(n, {"Relu",        "LeakyRelu", "PRelu",    "Sigmoid",       "Tanh",           "Elu",
                       "Selu",        "Celu",      "Softplus", "Softsign",      "HardSigmoid",    "HardSwish",
                       "Mish",        "Gelu",      "Clip",     "Abs",           "Neg",            "Exp",
                       "Log",         "Sqrt",      "Reciprocal", "Erf",         "Floor",          "Ceil",
                       "Round",       "Sign",      "ThresholdedRelu", "Identity", "Dropout",      "MaxPool",
                       "AveragePool", "LpPool",    "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool", "LRN",
                       "Cast",        "IsNaN"});
}

bool is_elementwise(const ir::node& n) {
  return is_one_of(n, {"Add", "Sub", "Mul", "Div", "Sum", "Max", "Min", "Mean", "Pow", "Where"});
}

class analyzer {
 public:
  analyzer(const ir::model& m, const channel_analysis_options& options)
      : model_(m), graph_(m.graph()), ir_version_(m.ir_version), options_(options) {}

  channel_analysis run() {
    for (ir::node* n : graph_.nodes()) visit(*n);
    pin_boundaries();
    pin_ignored();
    return build();
  }

 private:
  // ---- shapes: the fusion helpers, which also read a constant's own dims --------------------
  std::optional<std::int64_t> rank_of(const ir::value* v) const {
    const auto rank = ir::known_rank(v);
    return rank ? std::optional(static_cast<std::int64_t>(*rank)) : std::nullopt;
  }

  std::optional<std::int64_t> dim_of(const ir::value* v, std::int64_t axis) const {
    return axis < 0 ? std::nullopt : ir::static_dim(v, static_cast<std::size_t>(axis));
  }

  // ---- bookkeeping -------------------------------------------------------------------------
  channel_id new_source(const ir::node& producer, std::int64_t channels, std::size_t weight_input,
                        std::int64_t weight_axis) {
    const channel_id first = sets_.add(channels);
    pin_reason_.resize(sets_.size());
    source_of_.resize(sets_.size(), SIZE_MAX);
    for (std::int64_t i = 0; i < channels; ++i) source_of_[first + i] = out_.sources.size();
    out_.sources.push_back(channel_source{&producer, channels, first, weight_input, weight_axis});
    return first;
  }

  /// Channels no source owns (a constant concatenated with tracked channels): never pruned.
  layout fixed_channels(std::int64_t axis, std::int64_t count, const std::string& why) {
    const channel_id first = sets_.add(count);
    pin_reason_.resize(sets_.size());
    source_of_.resize(sets_.size(), SIZE_MAX);
    layout l{axis, {}};
    for (std::int64_t i = 0; i < count; ++i) {
      l.ids.push_back(first + i);
      pin_reason_[first + i] = why;
    }
    return l;
  }

  void pin(const layout& l, const std::string& why) {
    for (channel_id id : l.ids) {
      if (pin_reason_[id].empty()) pin_reason_[id] = why;
    }
  }

  void pin_inputs(const ir::node& n, const std::string& why) {
    for (const ir::value* v : n.inputs()) {
      if (const layout* l = layout_of(v)) pin(*l, why);
    }
  }

  const layout* layout_of(const ir::value* v) const {
    if (!v) return nullptr;
    auto it = layouts_.find(v);
    return it == layouts_.end() ? nullptr : &it->second;
  }

  void set_layout(const ir::value* v, layout l) {
    if (v) layouts_[v] = std::move(l);
  }

  void add_site(cut_kind kind, const ir::node& n, std::size_t input, std::int64_t axis, std::vector<channel_id> ids,
                std::int64_t groups = 1) {
    cut_site s;
    s.kind = kind;
    s.node = const_cast<ir::node*>(&n);  // the analysis reads; `apply_pruning` cuts through these handles
    s.input_index = input;
    s.axis = axis;
    s.groups = groups;
    s.layout = std::move(ids);
    out_.sites.push_back(std::move(s));
  }

  std::vector<channel_id> source_ids(channel_id first, std::int64_t count) const {
    std::vector<channel_id> ids(static_cast<std::size_t>(count));
    std::iota(ids.begin(), ids.end(), first);
    return ids;
  }

  static std::string consumed_by(const ir::node& n, std::string_view what) {
    return "reaches " + n.describe() + ": " + std::string(what);
  }

  // ---- rules -------------------------------------------------------------------------------
  void visit(const ir::node& n) {
    if (!n.subgraphs().empty()) return unknown(n, "a node with subgraphs");
    if (n.is("Conv") || (n.domain() == "com.microsoft" && n.op_type() == "FusedConv")) return conv(n);
    if (n.is("ConvTranspose")) return conv_transpose(n);
    if (n.is("Gemm")) return gemm(n);
    if (n.is("MatMul")) return matmul(n);
    if (n.is("BatchNormalization") || n.is("InstanceNormalization")) return normalization(n);
    if (keeps_channels(n)) return pass_through(n);
    if (is_elementwise(n)) return elementwise(n);
    if (n.is("Concat")) return concat(n);
    if (n.is("Split")) return split(n);
    if (n.is("Flatten")) return flatten(n);
    if (n.is("Reshape")) return reshape(n);
    if (n.is("Transpose")) return transpose(n);
    if (n.is("Squeeze") || n.is("Unsqueeze")) return squeeze(n);
    if (n.is("Softmax") || n.is("LogSoftmax")) return softmax(n);
    if (n.is("Shape") || n.is("Size")) return;  // reads sizes only; they follow the pruned model at run time
    if (n.is("Pad") || n.is("Resize") || n.is("Upsample")) return resize_or_pad(n);
    unknown(n, "an op pruning does not model");
  }

  void unknown(const ir::node& n, std::string_view why) { pin_inputs(n, consumed_by(n, why)); }

  /// Conv and FusedConv: inputs X, W[Cout, Cin/group, k...], optional B; FusedConv's Z is
  /// added to the output like a residual.
  void conv(const ir::node& n) {
    const ir::value* x = n.input(0);
    const auto weight = cuttable_constant(n.input(1), ir_version_);
    const layout* in = layout_of(x);
    if (!weight || weight->dims.size() < 3 || !bias_cuttable(n, 2)) {
      return unknown(n, "weights or bias that are not constants of this node alone");
    }
    const std::int64_t groups = n.attr_int("group", 1);
    const std::int64_t out_channels = weight->dims[0];
    const std::int64_t in_channels = weight->dims[1] * groups;
    if (in && (in->axis != 1 || static_cast<std::int64_t>(in->ids.size()) != in_channels)) {
      return unknown(n, "channels on an axis the Conv does not read as channels");
    }
    layout out{1, {}};
    if (groups == 1) {
      if (in) add_site(cut_kind::constant_axis, n, 1, 1, in->ids);
      out.ids = source_ids(new_source(n, out_channels, 1, 0), out_channels);
    } else if (groups == in_channels && out_channels == in_channels) {
      // Depthwise: output channel c is input channel c, so they share ids and go together.
      if (!in) return unknown(n, "a depthwise Conv on untracked channels");
      out.ids = in->ids;
      add_site(cut_kind::group_attribute, n, 1, 0, in->ids);
    } else if (groups == in_channels) {
      return unknown(n, "a depthwise Conv with a channel multiplier");
    } else {
      if (out_channels % groups != 0) return unknown(n, "a grouped Conv whose outputs do not split into its groups");
      if (in) {
        add_site(cut_kind::grouped_input_axis, n, 1, 1, in->ids, groups);
        chunks_.push_back(chunk_constraint{in->ids, groups, &n});
      }
      out.ids = source_ids(new_source(n, out_channels, 1, 0), out_channels);
      chunks_.push_back(chunk_constraint{out.ids, groups, &n});
    }
    // Weight rows and bias follow the output channels in every form.
    add_site(cut_kind::constant_axis, n, 1, 0, out.ids);
    if (n.input(2)) add_site(cut_kind::constant_axis, n, 2, 0, out.ids);
    if (const ir::value* z = n.input(3)) {
      if (const layout* residual = layout_of(z); residual && residual->axis == 1 && residual->ids.size() == out.ids.size()) {
        couple(out, *residual);
      } else {
        pin(out, consumed_by(n, "a residual input whose channels are not tracked"));
        if (residual) pin(*residual, consumed_by(n, "a residual input on another axis"));
      }
    }
    set_layout(n.output(0), std::move(out));
  }

  /// ConvTranspose: W[Cin, Cout/group, k...]; only group 1 is modelled.
  void conv_transpose(const ir::node& n) {
    const auto weight = cuttable_constant(n.input(1), ir_version_);
    const layout* in = layout_of(n.input(0));
    if (!weight || weight->dims.size() < 3 || !bias_cuttable(n, 2) || n.attr_int("group", 1) != 1) {
      return unknown(n, "a grouped ConvTranspose or one with shared weights");
    }
    if (in && (in->axis != 1 || static_cast<std::int64_t>(in->ids.size()) != weight->dims[0])) {
      return unknown(n, "channels on an axis the ConvTranspose does not read as channels");
    }
    if (in) add_site(cut_kind::constant_axis, n, 1, 0, in->ids);
    const std::int64_t out_channels = weight->dims[1];
    layout out{1, source_ids(new_source(n, out_channels, 1, 1), out_channels)};
    add_site(cut_kind::constant_axis, n, 1, 1, out.ids);
    if (n.input(2)) add_site(cut_kind::constant_axis, n, 2, 0, out.ids);
    set_layout(n.output(0), std::move(out));
  }

  bool bias_cuttable(const ir::node& n, std::size_t index) const {
    return !n.input(index) || cuttable_constant(n.input(index), ir_version_).has_value();
  }

  /// Gemm: Y = op(A) op(B) + C; tracked features of A are B's rows (columns when transB), and
  /// Y's features are new channels owned by B's columns and C.
  void gemm(const ir::node& n) {
    const layout* in = layout_of(n.input(0));
    const auto weight = cuttable_constant(n.input(1), ir_version_);
    const bool trans_a = n.attr_int("transA", 0) != 0;
    const bool trans_b = n.attr_int("transB", 0) != 0;
    if (!weight || weight->dims.size() != 2) return unknown(n, "a Gemm whose B is not a constant of its own");
    if (in && (trans_a || in->axis != 1 || static_cast<std::int64_t>(in->ids.size()) != weight->dims[trans_b ? 1 : 0])) {
      return unknown(n, "features the Gemm does not read as its inner dimension");
    }
    const std::int64_t features = weight->dims[trans_b ? 0 : 1];
    std::optional<std::int64_t> bias_axis;
    if (const ir::value* c = n.input(2)) {
      const auto bias = cuttable_constant(c, ir_version_);
      if (!bias) return unknown(n, "a Gemm whose C is not a constant of its own");
      if (!bias->dims.empty() && bias->dims.back() == features && features != 1) {
        bias_axis = static_cast<std::int64_t>(bias->dims.size()) - 1;
      }
    }
    if (in) add_site(cut_kind::constant_axis, n, 1, trans_b ? 1 : 0, in->ids);
    layout out{1, source_ids(new_source(n, features, 1, trans_b ? 0 : 1), features)};
    add_site(cut_kind::constant_axis, n, 1, trans_b ? 0 : 1, out.ids);
    if (bias_axis) add_site(cut_kind::constant_axis, n, 2, *bias_axis, out.ids);
    set_layout(n.output(0), std::move(out));
  }

  /// MatMul with a constant 2-D B[K, N]: A's last axis is K, Y's last axis is N.
  void matmul(const ir::node& n) {
    const layout* in = layout_of(n.input(0));
    const auto weight = cuttable_constant(n.input(1), ir_version_);
    const auto rank = rank_of(n.input(0));
    if (!weight && !ir::constant_tensor(n.input(1), ir_version_)) return batched_matmul(n);
    if (!weight || weight->dims.size() != 2 || !rank || *rank < 2) {
      return unknown(n, "a MatMul whose B is not a 2-D constant of its own");
    }
    if (in && (in->axis != *rank - 1 || static_cast<std::int64_t>(in->ids.size()) != weight->dims[0])) {
      return unknown(n, "features the MatMul does not read as its inner dimension");
    }
    if (in) add_site(cut_kind::constant_axis, n, 1, 0, in->ids);
    const std::int64_t features = weight->dims[1];
    layout out{*rank - 1, source_ids(new_source(n, features, 1, 1), features)};
    add_site(cut_kind::constant_axis, n, 1, 1, out.ids);
    set_layout(n.output(0), std::move(out));
  }

  /// MatMul of two computed tensors (attention's Q K^T and P V): channels on a batch axis stay
  /// there, and equal positions of the two inputs are coupled (head h of the queries meets head
  /// h of the keys). Channels the product multiplies or sums over pin.
  void batched_matmul(const ir::node& n) {
    const std::array<const layout*, 2> tracked{layout_of(n.input(0)), layout_of(n.input(1))};
    if (!tracked[0] && !tracked[1]) return;
    const std::array<std::optional<std::int64_t>, 2> ranks{rank_of(n.input(0)), rank_of(n.input(1))};
    const auto out_rank = rank_of(n.output(0));
    if (!ranks[0] || !ranks[1] || !out_rank || *ranks[0] < 2 || *ranks[1] < 2) return unknown(n, "a MatMul of unknown rank");
    std::optional<std::int64_t> out_axis;
    for (std::size_t i = 0; i < 2; ++i) {
      if (!tracked[i]) continue;
      if (tracked[i]->axis >= *ranks[i] - 2) return unknown(n, "channels a MatMul of two computed tensors multiplies over");
      const std::int64_t axis = tracked[i]->axis + (*out_rank - *ranks[i]);
      if (out_axis && (*out_axis != axis || tracked[0]->ids.size() != tracked[1]->ids.size())) {
        return unknown(n, "MatMul inputs whose channels do not line up");
      }
      out_axis = axis;
    }
    for (std::size_t i = 0; i < 2; ++i) {
      // An untracked input broadcasts over the channels or holds its own per-channel data.
      const std::int64_t axis = *out_axis - (*out_rank - *ranks[i]);
      if (!tracked[i] && axis >= 0 && dim_of(n.input(i), axis) != 1) {
        return unknown(n, "a MatMul operand with a value per channel that is not tracked");
      }
    }
    if (tracked[0] && tracked[1]) couple(*tracked[0], *tracked[1]);
    const layout& first = tracked[0] ? *tracked[0] : *tracked[1];
    set_layout(n.output(0), layout{*out_axis, first.ids});
  }

  /// Softmax normalizes along its axis (and, before opset 13, every axis after it): channels
  /// there would change every value.
  void softmax(const ir::node& n) {
    const layout* in = layout_of(n.input(0));
    if (!in) return;
    const auto rank = rank_of(n.input(0));
    const bool per_axis = model_.opset("").value_or(13) >= 13;
    std::int64_t axis = n.attr_int("axis", per_axis ? -1 : 1);
    if (!rank) return unknown(n, "a Softmax of unknown rank");
    if (axis < 0) axis += *rank;
    if (per_axis ? axis == in->axis : in->axis >= axis) return unknown(n, "a Softmax over the channels");
    pass_through(n);
  }

  void normalization(const ir::node& n) {
    const layout* in = layout_of(n.input(0));
    if (!in) return;
    const bool batch_norm = n.is("BatchNormalization");
    const std::size_t parameters = batch_norm ? 5 : 3;
    bool ok = in->axis == 1 && n.attr_int("training_mode", 0) == 0;
    for (std::size_t i = 1; i < n.outputs().size(); ++i) ok = ok && !(n.output(i) && n.output(i)->has_uses());
    for (std::size_t i = 1; i < parameters && ok; ++i) ok = cuttable_constant(n.input(i), ir_version_).has_value();
    if (!ok) return unknown(n, "a normalization in training mode or with shared parameters");
    for (std::size_t i = 1; i < parameters; ++i) add_site(cut_kind::constant_axis, n, i, 0, in->ids);
    set_layout(n.output(0), *in);
  }

  void pass_through(const ir::node& n) {
    const layout* in = layout_of(n.input(0));
    for (std::size_t i = 1; i < n.inputs().size(); ++i) {
      if (const layout* other = layout_of(n.input(i))) pin(*other, consumed_by(n, "channels in a parameter input"));
    }
    if (!in) return;
    if (n.is("PRelu")) return elementwise(n);
    for (std::size_t i = 1; i < n.outputs().size(); ++i) {
      if (n.output(i) && n.output(i)->has_uses()) return unknown(n, "a second output that is used");
    }
    set_layout(n.output(0), *in);
  }

  /// Pad and Resize keep channels when they leave the channel axis alone.
  void resize_or_pad(const ir::node& n) {
    const layout* in = layout_of(n.input(0));
    if (!in) return;
    const auto rank = rank_of(n.input(0));
    bool channel_axis_untouched = false;
    if (n.is("Pad")) {
      std::optional<std::vector<std::int64_t>> pads =
          n.input(1) ? ir::constant_ints(n.input(1), ir_version_) : n.attr_ints("pads", {});
      const bool all_axes = !n.input(3) && rank && pads && static_cast<std::int64_t>(pads->size()) == 2 * *rank;
      channel_axis_untouched = all_axes && (*pads)[in->axis] == 0 && (*pads)[in->axis + *rank] == 0;
    } else {
      // Resize's `sizes` would state the channel count; only scales of 1 on that axis keep it.
      const std::size_t scales_input = n.is("Upsample") ? 1 : 2;
      const auto scales = ir::constant_floats(n.input(scales_input), ir_version_);
      const bool sizes_given = n.is("Resize") && n.input(3);
      channel_axis_untouched = !sizes_given && scales && in->axis < static_cast<std::int64_t>(scales->size()) &&
                               (*scales)[in->axis] == 1.0;
    }
    if (!channel_axis_untouched) return unknown(n, "padding or resizing that touches the channel axis");
    set_layout(n.output(0), *in);
  }

  /// Joins equal positions of two layouts: their channels can only go together.
  void couple(const layout& a, const layout& b) {
    for (std::size_t i = 0; i < a.ids.size(); ++i) sets_.join(a.ids[i], b.ids[i]);
  }

  /// Add, Mul, Sum, ...: inputs broadcast against the output. Tracked inputs must carry the
  /// same channel axis at full size and are coupled; a constant with one value per channel
  /// is cut along; anything else with a full channel axis pins.
  void elementwise(const ir::node& n) {
    const auto out_rank = rank_of(n.output(0));
    const layout* first = nullptr;
    std::int64_t out_axis = 0;
    for (const ir::value* v : n.inputs()) {
      const layout* l = layout_of(v);
      if (!l) continue;
      const auto r = rank_of(v);
      if (!out_rank || !r) return unknown(n, "an elementwise op of unknown rank");
      const std::int64_t axis = l->axis + (*out_rank - *r);
      if (!first) {
        first = l;
        out_axis = axis;
      } else if (axis != out_axis || l->ids.size() != first->ids.size()) {
        return unknown(n, "inputs whose channels do not line up");
      }
    }
    if (!first) return;
    const auto channels = static_cast<std::int64_t>(first->ids.size());
    for (std::size_t i = 0; i < n.inputs().size(); ++i) {
      const ir::value* v = n.input(i);
      if (!v || layout_of(v)) continue;
      const auto r = rank_of(v);
      if (!r) return unknown(n, "an operand of unknown rank");
      const std::int64_t axis = out_axis - (*out_rank - *r);
      if (axis < 0) continue;  // broadcast over channels
      const auto size = dim_of(v, axis);
      if (size == 1) continue;
      if (size == channels && cuttable_constant(v, ir_version_)) {
        add_site(cut_kind::constant_axis, n, i, axis, first->ids);
        continue;
      }
      return unknown(n, "an operand with a value per channel that is not a constant of its own");
    }
    for (const ir::value* v : n.inputs()) {
      if (const layout* l = layout_of(v); l && l != first) couple(*first, *l);
    }
    set_layout(n.output(0), layout{out_axis, first->ids});
  }

  void concat(const ir::node& n) {
    const auto rank = rank_of(n.output(0));
    if (!rank) return unknown(n, "a Concat of unknown rank");
    std::int64_t axis = n.attr_int("axis", 0);
    if (axis < 0) axis += *rank;
    bool any = false;
    for (const ir::value* v : n.inputs()) {
      const layout* l = layout_of(v);
      if (!l) continue;
      any = true;
      if (l->axis != axis) return unknown(n, "a Concat along another axis than the channels");
    }
    if (!any) return;
    layout out{axis, {}};
    for (const ir::value* v : n.inputs()) {
      if (const layout* l = layout_of(v)) {
        out.ids.insert(out.ids.end(), l->ids.begin(), l->ids.end());
        continue;
      }
      const auto size = dim_of(v, axis);
      if (!size) return unknown(n, "a Concat operand of unknown size");
      const layout fixed = fixed_channels(axis, *size, consumed_by(n, "concatenated with untracked channels"));
      out.ids.insert(out.ids.end(), fixed.ids.begin(), fixed.ids.end());
    }
    set_layout(n.output(0), std::move(out));
  }

  void split(const ir::node& n) {
    const layout* in = layout_of(n.input(0));
    if (!in) return;
    const auto rank = rank_of(n.input(0));
    if (!rank) return unknown(n, "a Split of unknown rank");
    std::int64_t axis = n.attr_int("axis", 0);
    if (axis < 0) axis += *rank;
    if (axis != in->axis) {
      for (const ir::value* out : n.outputs()) set_layout(out, *in);
      return;
    }
    std::optional<std::vector<std::int64_t>> sizes;
    if (n.input(1)) {
      if (cuttable_constant(n.input(1), ir_version_)) sizes = ir::constant_ints(n.input(1), ir_version_);
    } else if (n.find_attribute("split")) {
      sizes = n.attr_ints("split", {});
    }
    if (!sizes || sizes->size() != n.outputs().size() ||
        std::accumulate(sizes->begin(), sizes->end(), std::int64_t{0}) != static_cast<std::int64_t>(in->ids.size())) {
      return unknown(n, "a Split along the channels without explicit sizes");
    }
    cut_site site;
    site.kind = cut_kind::split_sizes;
    site.node = const_cast<ir::node*>(&n);
    site.input_index = 1;
    site.layout = in->ids;
    std::int64_t start = 0;
    for (std::size_t i = 0; i < sizes->size(); ++i) {
      site.segment_starts.push_back(start);
      set_layout(n.output(i), layout{axis, {in->ids.begin() + start, in->ids.begin() + start + (*sizes)[i]}});
      start += (*sizes)[i];
    }
    out_.sites.push_back(std::move(site));
  }

  /// One channel becomes `block` consecutive features.
  static layout spread(const layout& in, std::int64_t axis, std::int64_t block) {
    layout out{axis, {}};
    out.ids.reserve(in.ids.size() * static_cast<std::size_t>(block));
    for (channel_id id : in.ids) out.ids.insert(out.ids.end(), static_cast<std::size_t>(block), id);
    return out;
  }

  /// Features per channel once the axes after the channel axis are folded into it.
  static std::optional<std::int64_t> block_after(const ir::value* v, std::int64_t axis) {
    if (!v || !v->type() || !v->type()->dims) return std::nullopt;
    const ir::shape& s = *v->type()->dims;
    std::int64_t block = 1;
    for (std::size_t i = static_cast<std::size_t>(axis) + 1; i < s.size(); ++i) {
      if (!s[i].is_static()) return std::nullopt;
      block *= s[i].value();
    }
    return block;
  }

  void flatten(const ir::node& n) {
    const layout* in = layout_of(n.input(0));
    if (!in) return;
    const auto rank = rank_of(n.input(0));
    std::int64_t axis = n.attr_int("axis", 1);
    if (rank && axis < 0) axis += *rank;
    const auto block = block_after(n.input(0), in->axis);
    // Flatten keeps axes before `axis` as one: only axis 1 on channels keeps the batch apart.
    if (!block || axis != in->axis || axis != 1) return unknown(n, "a Flatten that does not start at the channel axis");
    set_layout(n.output(0), spread(*in, 1, *block));
  }

  /// Reshape: the channel axis moves, folds with the axes after it (each channel spreading
  /// over a block of features, as Flatten does) or splits into [groups, width], where the
  /// `width` channels of a group couple into one unit: attention heads. The target entry that
  /// states the new size is cut, unless it is -1 or copies the axis.
  void reshape(const ir::node& n) {
    const layout* in = layout_of(n.input(0));
    if (!in) return;
    const ir::value* x = n.input(0);
    const ir::value* y = n.output(0);
    if (!x->type() || !x->type()->dims || !y || !y->type() || !y->type()->dims) return unknown(n, "a Reshape of unknown shapes");
    const auto mapping = map_reshape_axis(ir::to_sym_shape(*x->type()->dims), static_cast<std::size_t>(in->axis),
                                          static_cast<std::int64_t>(in->ids.size()), ir::to_sym_shape(*y->type()->dims));
    if (!mapping) return unknown(n, "a Reshape that mixes the channels with other axes");
    const auto axis = static_cast<std::int64_t>(mapping->axis);
    layout out{axis, {}};
    switch (mapping->kind) {
      case reshape_kind::move: out.ids = in->ids; break;
      case reshape_kind::fold: out = spread(*in, axis, mapping->block); break;
      case reshape_kind::split: out.ids = couple_groups(*in, mapping->width); break;
    }
    const bool copies_axis = mapping->kind == reshape_kind::move && axis == in->axis;
    const auto entry = reshape_target_entry(n, mapping->axis, copies_axis, ir_version_);
    if (!entry) return unknown(n, "a Reshape whose target size for the channels is computed");
    if (!entry->follows) add_site(cut_kind::reshape_target, *entry->owner, entry->input, entry->index, out.ids);
    set_layout(y, std::move(out));
  }

  /// Couples each run of `width` consecutive positions; returns one id per run.
  std::vector<channel_id> couple_groups(const layout& in, std::int64_t width) {
    std::vector<channel_id> heads;
    const auto w = static_cast<std::size_t>(width);
    for (std::size_t start = 0; start < in.ids.size(); start += w) {
      for (std::size_t i = 1; i < w; ++i) sets_.join(in.ids[start], in.ids[start + i]);
      heads.push_back(in.ids[start]);
    }
    return heads;
  }

  void transpose(const ir::node& n) {
    const layout* in = layout_of(n.input(0));
    if (!in) return;
    const auto rank = rank_of(n.input(0));
    if (!rank) return unknown(n, "a Transpose of unknown rank");
    std::vector<std::int64_t> perm = n.attr_ints("perm", {});
    if (perm.empty()) {
      for (std::int64_t i = *rank - 1; i >= 0; --i) perm.push_back(i);
    }
    const auto at = std::find(perm.begin(), perm.end(), in->axis);
    if (at == perm.end()) return unknown(n, "a Transpose with an invalid perm");
    set_layout(n.output(0), layout{at - perm.begin(), in->ids});
  }

  void squeeze(const ir::node& n) {
    const layout* in = layout_of(n.input(0));
    if (!in) return;
    const auto in_rank = rank_of(n.input(0));
    const auto out_rank = rank_of(n.output(0));
    std::optional<std::vector<std::int64_t>> axes =
        n.input(1) ? ir::constant_ints(n.input(1), ir_version_) : std::optional(n.attr_ints("axes", {}));
    if (!in_rank || !out_rank || !axes || axes->empty()) return unknown(n, "a Squeeze/Unsqueeze with unknown axes");
    const bool squeezing = n.is("Squeeze");
    const std::int64_t axes_rank = squeezing ? *in_rank : *out_rank;
    for (std::int64_t& a : *axes) a = a < 0 ? a + axes_rank : a;
    std::int64_t axis = in->axis;
    if (squeezing) {
      if (std::count(axes->begin(), axes->end(), in->axis)) return unknown(n, "a Squeeze of the channel axis");
      axis -= std::count_if(axes->begin(), axes->end(), [&](std::int64_t a) { return a < in->axis; });
    } else {
      // Walk the output axes: inserted ones are listed, the others take input axes in order.
      std::int64_t input_axis = 0;
      for (std::int64_t o = 0; o < *out_rank; ++o) {
        if (std::count(axes->begin(), axes->end(), o)) continue;
        if (input_axis++ == in->axis) {
          axis = o;
          break;
        }
      }
    }
    set_layout(n.output(0), layout{axis, in->ids});
  }

  // ---- after the walk ----------------------------------------------------------------------
  void pin_boundaries() {
    for (const ir::value* v : graph_.outputs()) {
      if (const layout* l = layout_of(v)) pin(*l, "reaches the graph output '" + v->name() + "'");
    }
    for (const auto& [v, l] : layouts_) {
      for (const ir::use& u : v->uses()) {
        if (u.user->owner() != &graph_) pin(l, "read inside a subgraph of " + u.user->describe());
      }
    }
  }

  void pin_ignored() {
    std::set<std::string> ignored(options_.ignored_nodes.begin(), options_.ignored_nodes.end());
    if (options_.ignore_defaults) {
      // The first Conv sees the raw input; the last producer before the outputs is the classifier.
      for (const channel_source& s : out_.sources) {
        if (s.producer->op_type() == "Conv" || s.producer->op_type() == "FusedConv") {
          ignored.insert(s.producer->label());
          break;
        }
      }
      if (!out_.sources.empty()) {
        const ir::node* last = out_.sources.back().producer;
        ignored.insert(last->label());
      }
    }
    for (const channel_source& s : out_.sources) {
      if (ignored.count(s.producer->label())) {
        pin(layout{0, source_ids(s.first, s.channels)}, "output channels of an ignored layer " + s.producer->describe());
      }
    }
  }

  channel_analysis build() {
    const std::size_t count = sets_.size();
    // Groups: coupled channels, plus every channel of one source, plus every channel a
    // grouped Conv constrains.
    channel_sets groups;
    groups.add(static_cast<std::int64_t>(count));
    for (std::size_t id = 0; id < count; ++id) groups.join(static_cast<channel_id>(id), sets_.find(static_cast<channel_id>(id)));
    for (const channel_source& s : out_.sources) {
      for (std::int64_t i = 1; i < s.channels; ++i) groups.join(s.first, s.first + i);
    }
    for (const chunk_constraint& c : chunks_) {
      for (channel_id id : c.ids) groups.join(c.ids.front(), id);
    }

    std::unordered_map<channel_id, std::size_t> group_index;
    std::unordered_map<channel_id, std::size_t> unit_index;
    out_.group_of_channel.assign(count, SIZE_MAX);
    out_.unit_of_channel.assign(count, SIZE_MAX);
    for (std::size_t id = 0; id < count; ++id) {
      const channel_id root = groups.find(static_cast<channel_id>(id));
      auto [g, new_group] = group_index.try_emplace(root, out_.groups.size());
      if (new_group) out_.groups.emplace_back();
      channel_group& group = out_.groups[g->second];
      const channel_id unit_root = sets_.find(static_cast<channel_id>(id));
      auto [u, new_unit] = unit_index.try_emplace(unit_root, group.units.size());
      if (new_unit) group.units.emplace_back();
      group.units[u->second].channels.push_back(static_cast<channel_id>(id));
      out_.group_of_channel[id] = g->second;
      out_.unit_of_channel[id] = u->second;
      if (source_of_[id] != SIZE_MAX && std::find(group.sources.begin(), group.sources.end(), source_of_[id]) == group.sources.end()) {
        group.sources.push_back(source_of_[id]);
      }
      if (group.pinned_because.empty() && !pin_reason_[id].empty()) group.pinned_because = pin_reason_[id];
    }
    apply_chunks();
    for (const auto& [v, l] : layouts_) out_.value_channels.emplace(v, l.ids);
    return std::move(out_);
  }

  /// Labels each unit with the chunk of every grouped Conv that sees it; labels must agree.
  void apply_chunks() {
    for (const chunk_constraint& c : chunks_) {
      channel_group& group = out_.groups[out_.group_of_channel[c.ids.front()]];
      const auto chunk_size = static_cast<std::int64_t>(c.ids.size()) / c.groups;
      if (group.chunk_of_unit.empty()) {
        group.chunk_of_unit.assign(group.units.size(), -1);
        group.chunks = c.groups;
      }
      if (group.chunks != c.groups) {
        group.pinned_because = "grouped Convs with different group counts share channels (" + c.conv->describe() + ")";
        continue;
      }
      for (std::size_t p = 0; p < c.ids.size(); ++p) {
        std::int64_t& label = group.chunk_of_unit[out_.unit_of_channel[c.ids[p]]];
        const std::int64_t chunk = static_cast<std::int64_t>(p) / chunk_size;
        if (label == -1) label = chunk;
        if (label != chunk && group.pinned_because.empty()) {
          group.pinned_because = "channels fall in different groups of grouped Convs (" + c.conv->describe() + ")";
        }
      }
    }
    for (channel_group& group : out_.groups) {
      if (group.chunk_of_unit.empty() || !group.pinned_because.empty()) continue;
      std::vector<std::int64_t> per_chunk(static_cast<std::size_t>(group.chunks), 0);
      for (std::int64_t label : group.chunk_of_unit) {
        if (label < 0) {
          group.pinned_because = "channels of a grouped Conv's group also reach layers outside it";
          break;
        }
        ++per_chunk[static_cast<std::size_t>(label)];
      }
      if (group.pinned_because.empty() && std::adjacent_find(per_chunk.begin(), per_chunk.end(), std::not_equal_to<>()) != per_chunk.end()) {
        group.pinned_because = "a grouped Conv's groups hold unequal channel counts";
      }
    }
  }

  const ir::model& model_;
  const ir::graph& graph_;
  const std::int64_t ir_version_;
  const channel_analysis_options& options_;
  channel_analysis out_;
  channel_sets sets_;
  std::vector<std::string> pin_reason_;
  std::vector<std::size_t> source_of_;
  std::unordered_map<const ir::value*, layout> layouts_;
  std::vector<chunk_constraint> chunks_;
};

const char* kind_name(cut_kind k) {
  switch (k) {
    case cut_kind::constant_axis: return "constant axis";
    case cut_kind::grouped_input_axis: return "grouped Conv inputs";
    case cut_kind::group_attribute: return "depthwise group count";
    case cut_kind::reshape_target: return "Reshape target";
    case cut_kind::split_sizes: return "Split sizes";
  }
  return "?";
}

}  // namespace

channel_analysis analyze_channels(const ir::model& m, const channel_analysis_options& options) {
  return analyzer(m, options).run();
}

std::string explain(const channel_analysis& a) {
  // Sites per group, by the group of the first channel each site cuts.
  std::vector<std::vector<const cut_site*>> sites(a.groups.size());
  for (const cut_site& s : a.sites) {
    std::set<std::size_t> touched;
    for (channel_id id : s.layout) touched.insert(a.group_of_channel[id]);
    for (std::size_t g : touched) sites[g].push_back(&s);
  }
  std::string out;
  std::size_t prunable = 0;
  for (std::size_t g = 0; g < a.groups.size(); ++g) {
    const channel_group& group = a.groups[g];
    if (group.sources.empty()) continue;  // channels no layer creates (concatenated constants)
    prunable += group.prunable() ? 1 : 0;
    out += "group " + std::to_string(g) + ": " + std::to_string(group.units.size()) + " channel(s)";
    if (group.chunks > 1) out += " in " + std::to_string(group.chunks) + " equal Conv groups";
    out += group.prunable() ? ", prunable\n" : ", pinned: " + group.pinned_because + "\n";
    for (std::size_t s : group.sources) {
      const channel_source& src = a.sources[s];
      out += "  source " + src.producer->describe() + ": " + std::to_string(src.channels) + " channel(s)\n";
    }
    for (const cut_site* s : sites[g]) {
      out += "  cut " + s->node->describe() + " " + kind_name(s->kind);
      if (s->kind == cut_kind::constant_axis || s->kind == cut_kind::grouped_input_axis) {
        out += " (input " + std::to_string(s->input_index) + ", axis " + std::to_string(s->axis) + ")";
      }
      out += "\n";
    }
  }
  out += std::to_string(prunable) + " prunable group(s) of " +
         std::to_string(std::count_if(a.groups.begin(), a.groups.end(), [](const channel_group& g) { return !g.sources.empty(); })) +
         "\n";
  return out;
}

}  // namespace inferopt::prune
