#include "blocked_layout.hpp"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "inferopt/ir/graph.hpp"
#include "inferopt/ir/rewriting.hpp"
#include "graph_rewrite_util.hpp"
#include "kernels/nchwc.hpp"

namespace inferopt::runtime::detail {

namespace {

using nn::nchwc_domain;

/// Shape of a blocked region's tensor the rewrite tracks: its blocked value and real channels.
struct blocked_twin {
  ir::value* value = nullptr;
  std::int64_t channels = 0;
  bool one_by_one = false;  // spatially 1 x 1 by construction (GlobalAveragePool and what follows)
};

bool is_conv(const ir::node& n) {
  return n.is("Conv") || (n.domain() == "com.microsoft" && n.op_type() == "FusedConv");
}

bool is_blockable_unary(const ir::node& n) {
  static const std::unordered_set<std::string> ops{"Relu", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh",
                                                   "Clip"};
  return n.is_onnx_domain() && ops.count(n.op_type()) > 0;
}

bool is_blockable_binary(const ir::node& n) { return n.is("Add") || n.is("Sub") || n.is("Mul"); }

bool is_scalar_constant(const ir::value* v) {
  return v && v->is_constant() && v->initializer()->has_data() && ir::tensor::element_count(v->initializer()->dims) == 1;
}

/// The weights of conv `n` when they are an initializer (a graph input may override it at run
/// time), float32 4-D, and it has one output; else null.
const ir::tensor* constant_weights(const ir::node& n) {
  const ir::value* w = n.input(1);
  if (!n.input(0) || !w || !w->is_initializer() || !w->initializer()->has_data() ||
      w->initializer()->dtype != data_type::float32 || w->initializer()->dims.size() != 4 || n.outputs().size() != 1) {
    return nullptr;
  }
  return w->initializer();
}

/// 16 or 8 on AVX-512: the block with which oneDNN runs more of the graph's convolutions with
/// a JIT kernel. Grouped convolutions of 8 channels per group (RegNet's) have one only for 8.
int choose_block(const ir::graph& g, int widest) {
  if (widest != 16) return widest;
  int wide = 0, narrow = 0;
  for (const ir::node* n : g.nodes()) {
    const ir::tensor* w = is_conv(*n) ? constant_weights(*n) : nullptr;
    if (!w) continue;
    const std::vector<std::int64_t> shape = probe_shape(*n->input(0), w->dims[1] * n->attr_int("group", 1));
    wide += nn::nchwc_conv_runs(*n, shape, false, 16) ? 1 : 0;
    narrow += nn::nchwc_conv_runs(*n, shape, false, 8) ? 1 : 0;
  }
  return narrow > wide ? 8 : 16;
}

class blocked_layout_rewrite {
 public:
  blocked_layout_rewrite(ir::graph& g, int block) : g_(g), block_(block) {}

  int run() {
    const std::vector<ir::node*> order(g_.nodes().begin(), g_.nodes().end());
    for (ir::node* n : order) {
      if (absorbed_.count(n)) continue;
      if (is_conv(*n)) {
        convert_conv(*n);
      } else if (n->is("MaxPool") || n->is("AveragePool") || n->is("GlobalAveragePool")) {
        convert_pool(*n);
      } else if (is_blockable_unary(*n) || is_blockable_binary(*n)) {
        convert_elementwise(*n);
      } else if (n->is("Transpose")) {
        convert_transpose(*n);
      }
    }
    if (!converted_.empty()) finish();
    return added_;
  }

 private:
  void convert_conv(ir::node& n) {
    const ir::tensor* w = constant_weights(n);
    if (!w) return;
    const std::int64_t group = n.attr_int("group", 1);
    const std::int64_t channels = w->dims[1] * group, out_channels = w->dims[0];
    const auto found = twin_.find(n.input(0));
    // A plain input must be known to be a 4-D float tensor to be reordered.
    if (found == twin_.end() && (n.input(0)->elem_type() != data_type::float32 || representative_shape(*n.input(0), channels).empty())) {
      return;
    }
    if (found != twin_.end() && found->second.channels != channels) return;
    const std::vector<std::int64_t> probe = probe_shape(*n.input(0), channels);
    // A stem (few input channels, one group) reads NCHW directly; other plain inputs are reordered.
    const bool plain_input = found == twin_.end() && channels < block_ && group == 1 &&
                             nn::nchwc_conv_runs(n, probe, true, block_);
    if (!plain_input && !nn::nchwc_conv_runs(n, probe, false, block_)) return;
    const bool has_residual = n.inputs().size() > 3 && n.input(3);
    if (has_residual && !can_block(*n.input(3), out_channels)) return;
    if (!plain_input && !can_block(*n.input(0), channels)) return;
    ir::value* residual = has_residual ? blocked(*n.input(3), out_channels, n) : nullptr;
    ir::value* input = plain_input ? n.input(0) : blocked(*n.input(0), channels, n);
    std::vector<ir::value*> inputs{input, n.input(1), n.inputs().size() > 2 ? n.input(2) : nullptr};
    if (residual) inputs.push_back(residual);
    const swish_nodes swish = swish_after(n);
    const bool one_by_one = found != twin_.end() && found->second.one_by_one && w->dims[2] == 1 && w->dims[3] == 1 &&
                            unpadded(n);
    std::vector<ir::attribute> attributes = std::move(n.attributes());  // n goes away
    attributes.push_back(ir::attribute::make_int("block", block_));
    if (swish.mul) attributes.push_back(ir::attribute::make_string("activation", "Swish"));
    add_twin(n, "Conv", nchwc_domain, std::move(inputs), std::move(attributes), out_channels, one_by_one);
    if (swish.mul) absorb(swish, *n.output(0));
  }

  /// Whether a conv adds no padding (explicitly or by auto_pad).
  static bool unpadded(const ir::node& n) {
    const std::vector<std::int64_t> pads = n.attr_ints("pads", {});
    const std::string mode = n.attr_string("auto_pad", "NOTSET");
    return (mode == "NOTSET" || mode == "VALID") && std::all_of(pads.begin(), pads.end(), [](std::int64_t p) { return p == 0; });
  }

  struct swish_nodes {
    ir::node* sigmoid = nullptr;
    ir::node* mul = nullptr;
  };

  /// The Sigmoid and Mul of y * Sigmoid(y) (SiLU, EfficientNet's activation) when they are all
  /// that reads the output y of `conv` and the conv has no activation of its own; else nulls.
  static swish_nodes swish_after(const ir::node& conv) {
    const ir::value* y = conv.output(0);
    if (conv.find_attribute("activation") || y->is_graph_output() || y->uses().size() != 2) return {};
    swish_nodes found;
    for (const ir::use& u : y->uses()) {
      if (u.user->is("Sigmoid")) found.sigmoid = u.user;
      if (u.user->is("Mul") && u.user->inputs().size() == 2) found.mul = u.user;
    }
    if (!found.sigmoid || !found.mul) return {};
    const ir::value* s = found.sigmoid->output(0);
    if (s->is_graph_output() || s->uses().size() != 1 || s->uses().front().user != found.mul) return {};
    return found;
  }

  /// The swish that conv output `y`'s twin now computes: the Mul's output is that twin.
  void absorb(const swish_nodes& swish, const ir::value& y) {
    twin_[swish.mul->output(0)] = twin_.at(&y);
    for (ir::node* n : {swish.sigmoid, swish.mul}) {
      absorbed_.insert(n);
      converted_.push_back(n);
    }
  }

  void convert_pool(ir::node& n) {
    const auto found = twin_.find(n.input(0));
    if (found == twin_.end() || n.outputs().size() != 1) return;
    if (!n.is("GlobalAveragePool")) {
      const std::vector<std::int64_t> kernel = n.attr_ints("kernel_shape", {});
      const std::vector<std::int64_t> dilations = n.attr_ints("dilations", {});
      if (kernel.size() != 2 || std::any_of(dilations.begin(), dilations.end(), [](std::int64_t d) { return d != 1; })) return;
      if (n.attr_int("storage_order", 0) != 0) return;
      if (n.is("AveragePool") && n.attr_int("count_include_pad", 0) != 0 && n.attr_int("ceil_mode", 0) != 0) return;
    }
    add_twin(n, n.op_type(), nchwc_domain, {found->second.value}, std::move(n.attributes()), found->second.channels,
             n.is("GlobalAveragePool"));
  }

  void convert_elementwise(ir::node& n) {
    if (n.outputs().size() != 1) return;
    std::int64_t channels = 0;
    int one_by_one = 0, blocked_inputs = 0;
    for (ir::value* in : n.inputs()) {
      const auto found = in ? twin_.find(in) : twin_.end();
      if (found == twin_.end()) continue;
      if (channels != 0 && found->second.channels != channels) return;
      channels = found->second.channels;
      one_by_one += found->second.one_by_one ? 1 : 0;
      ++blocked_inputs;
    }
    if (channels == 0) return;
    std::vector<ir::value*> inputs;
    for (ir::value* in : n.inputs()) {
      if (const auto found = in ? twin_.find(in) : twin_.end(); found != twin_.end()) {
        inputs.push_back(found->second.value);
      } else if (!in || is_scalar_constant(in)) {
        inputs.push_back(in);
      } else if (ir::value* scales = is_blockable_binary(n) ? blocked_per_channel(*in, channels) : nullptr) {
        inputs.push_back(scales);  // a layer scale or bias: one value per channel
      } else {
        return;
      }
    }
    if (n.is("Mul") && blocked_inputs == 2 && one_by_one == 1) {
      // Squeeze-excitation's per-channel scale: a loop over blocks, not a 16-wide broadcast.
      if (twin_.at(n.input(0)).one_by_one) std::swap(inputs[0], inputs[1]);
      add_twin(n, "ChannelScale", nchwc_domain, std::move(inputs), {}, channels);
      return;
    }
    add_twin(n, n.op_type(), n.domain(), std::move(inputs), std::move(n.attributes()), channels,
             one_by_one == blocked_inputs);
  }

  /// A constant of one value per channel ([C, 1, 1] or [1, C, 1, 1] float32) as a blocked
  /// constant [1, C/b, 1, 1, b] (padding zero), made once per constant; else null.
  ir::value* blocked_per_channel(const ir::value& v, std::int64_t channels) {
    if (!v.is_constant() || !v.initializer()->has_data() || v.initializer()->dtype != data_type::float32) return nullptr;
    std::vector<std::int64_t> dims = v.initializer()->dims;
    if (dims.size() == 4 && dims[0] == 1) dims.erase(dims.begin());
    if (dims != std::vector<std::int64_t>{channels, 1, 1}) return nullptr;
    if (auto found = per_channel_.find(&v); found != per_channel_.end()) return found->second;
    const std::int64_t blocks = (channels + block_ - 1) / block_;
    std::vector<float> values(static_cast<std::size_t>(blocks * block_), 0.0f);
    const auto* source = reinterpret_cast<const float*>(v.initializer()->bytes->data());
    std::copy(source, source + channels, values.begin());
    std::string name = g_.unique_name(v.name() + ".nchwc");
    ir::tensor t = ir::tensor::from_values<float>(name, {1, blocks, 1, 1, block_}, values);
    ir::value* blocked = g_.add_initializer(std::move(name), std::move(t));
    per_channel_[&v] = blocked;
    return blocked;
  }

  /// Transpose between NCHW and NHWC at a blocked region's edge: [0, 2, 3, 1] of a blocked
  /// tensor becomes a ReorderOutput to NHWC, [0, 3, 1, 2] read by ops that stay blocked a
  /// ReorderInput from NHWC (channels-last blocks: ConvNeXt's LayerNorm and MLP).
  void convert_transpose(ir::node& n) {
    const std::vector<std::int64_t> perm = n.attr_ints("perm", {});
    ir::value* x = n.input(0);
    if (!x || n.outputs().size() != 1) return;
    if (perm == std::vector<std::int64_t>{0, 2, 3, 1}) {
      const auto found = twin_.find(x);
      if (found == twin_.end()) return;
      std::vector<ir::attribute> attributes = only(ir::attribute::make_int("channels", found->second.channels));
      attributes.push_back(ir::attribute::make_string("layout", "NHWC"));
      replace_by(n, {"ReorderOutput", {found->second.value}, {""}, std::move(attributes), n.label(), nchwc_domain});
      return;
    }
    if (perm != std::vector<std::int64_t>{0, 3, 1, 2} || !feeds_blocked_op(*n.output(0))) return;
    const std::vector<std::int64_t> shape = representative_shape(*x, 0);
    if (x->elem_type() != data_type::float32 || shape.empty() || !x->type()->dims->at(3).is_static()) return;
    std::vector<ir::attribute> attributes = only(ir::attribute::make_int("block", block_));
    attributes.push_back(ir::attribute::make_string("layout", "NHWC"));
    add_twin(n, "ReorderInput", nchwc_domain, {x}, std::move(attributes), x->type()->dims->at(3).value());
  }

  /// Whether an op that stays blocked on a blocked input reads `v`.
  static bool feeds_blocked_op(const ir::value& v) {
    return std::any_of(v.uses().begin(), v.uses().end(), [](const ir::use& u) {
      return is_conv(*u.user) || is_blockable_unary(*u.user) || is_blockable_binary(*u.user);
    });
  }

  /// Replaces `n` by the node `spec` describes, whose one output its readers read instead.
  void replace_by(ir::node& n, ir::node_spec spec) {
    n.set_name("");
    ir::node* replacement = g_.add_node(std::move(spec), &n);
    ++added_;
    replacement->output(0)->set_type(n.output(0)->type());
    ir::forward_past(g_, &n, replacement->output(0));
  }

  /// Whether `v` has a blocked form of `channels` channels: its twin, or a float plain value.
  bool can_block(const ir::value& v, std::int64_t channels) const {
    const auto found = twin_.find(&v);
    return found != twin_.end() ? found->second.channels == channels : v.elem_type() == data_type::float32;
  }

  /// The blocked form of `v` (can_block must hold): its twin, or a ReorderInput placed before
  /// `before`.
  ir::value* blocked(ir::value& v, std::int64_t channels, ir::node& before) {
    if (auto found = twin_.find(&v); found != twin_.end()) return found->second.value;
    ir::node* reorder = g_.add_node({"ReorderInput", {&v}, {""}, only(ir::attribute::make_int("block", block_)), "", nchwc_domain}, &before);
    ++added_;
    twin_[&v] = {reorder->output(0), channels, false};
    return reorder->output(0);
  }

  /// Adds the blocked twin of `n` before it; `n` goes away in `finish`.
  void add_twin(ir::node& n, std::string op, std::string domain, std::vector<ir::value*> inputs,
                std::vector<ir::attribute> attributes, std::int64_t channels, bool one_by_one = false) {
    std::string label = n.label();
    n.set_name("");
    ir::node* twin = g_.add_node({std::move(op), std::move(inputs), {""}, std::move(attributes), std::move(label), std::move(domain)}, &n);
    ++added_;
    twin_[n.output(0)] = {twin->output(0), channels, one_by_one};
    converted_.push_back(&n);
  }

  /// Gives every plain reader of a converted node's output (and the graph's outputs) a
  /// ReorderOutput under the original name, then removes the converted nodes.
  void finish() {
    const std::unordered_set<const ir::node*> gone(converted_.begin(), converted_.end());
    std::vector<std::pair<ir::value*, std::string>> renames;
    for (ir::node* n : converted_) {
      ir::value* y = n->output(0);
      const bool plain_reader = y->is_graph_output() || std::any_of(y->uses().begin(), y->uses().end(), [&](const ir::use& u) {
                                  return !gone.count(u.user);
                                });
      if (!plain_reader) continue;
      const blocked_twin& t = twin_.at(y);
      ir::node* reorder = g_.add_node({"ReorderOutput", {t.value}, {""}, only(ir::attribute::make_int("channels", t.channels)), "", nchwc_domain}, n);
      ir::value* plain = reorder->output(0);
      plain->set_type(y->type());
      g_.replace_all_uses(y, plain);
      renames.emplace_back(plain, y->name());
    }
    for (auto it = converted_.rbegin(); it != converted_.rend(); ++it) g_.erase(*it);
    for (auto& [value, name] : renames) g_.rename(value, name);
    g_.compact();
  }

  ir::graph& g_;
  int block_;
  std::unordered_map<const ir::value*, blocked_twin> twin_;
  std::vector<ir::node*> converted_;
  std::unordered_set<const ir::node*> absorbed_;  // folded into a converted conv
  std::unordered_map<const ir::value*, ir::value*> per_channel_;  // constants made blocked
  int added_ = 0;  // nodes added: the graph changed
};

}  // namespace

int use_blocked_layout(ir::graph& g, int block) { return blocked_layout_rewrite(g, choose_block(g, block)).run(); }

}  // namespace inferopt::runtime::detail
