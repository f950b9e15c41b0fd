#include "blocked_layout.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <numeric>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/graph.hpp"
#include "inferopt/ir/rewriting.hpp"
#include "inferopt/ir/shapes.hpp"
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

/// 16 or 8 on AVX-512: the block with the lower estimated conv time. A conv that oneDNN runs
/// with a JIT kernel costs its multiply-adds over the vector width (16 lanes twice as fast as
/// 8); one it does not stays plain, with a reorder on each side: measured 2-3x the time of an
/// 8-lane JIT kernel for a dense conv (8-channel 3x3s of small ResNets under blocks of 16),
/// about 8x for a grouped one (RegNetY-400MF's groups of 8 channels: 17.9 against 12.2 ms).
/// A count of convs instead chose 8 for ResNets with two 8-channel convs among twenty and
/// ran all the others at half width (0.15 against 0.11 ms).
int choose_block(const ir::graph& g, int widest) {
  if (widest != 16) return widest;
  double wide = 0.0, narrow = 0.0;  // in 8-lane multiply-add times
  for (const ir::node* n : g.nodes()) {
    const ir::tensor* w = is_conv(*n) ? constant_weights(*n) : nullptr;
    if (!w) continue;
    const std::int64_t group = n->attr_int("group", 1);
    const std::vector<std::int64_t> shape = probe_shape(*n->input(0), w->dims[1] * group);
    std::int64_t stride = 1;
    for (std::int64_t s : n->attr_ints("strides", {})) stride *= std::max<std::int64_t>(s, 1);
    const double macs = static_cast<double>(shape[0] * shape[2] * shape[3] / stride) * static_cast<double>(ir::tensor::element_count(w->dims));
    const double plain = macs * (group > 1 && group < shape[1] ? 8.0 : 3.0);
    wide += nn::nchwc_conv_runs(*n, shape, false, 16) ? macs / 2.0 : plain;
    narrow += nn::nchwc_conv_runs(*n, shape, false, 8) ? macs : plain;
  }
  return narrow < wide ? 8 : 16;
}

class blocked_layout_rewrite {
 public:
  blocked_layout_rewrite(ir::graph& g, int block, bool winograd) : g_(g), block_(block), winograd_(winograd) {}

  int run() {
    const std::vector<ir::node*> order(g_.nodes().begin(), g_.nodes().end());
    for (ir::node* n : order) {
      if (absorbed_.count(n)) continue;
      if (is_conv(*n)) {
        convert_conv(*n);
      } else if (is_blockable_unary(*n) || is_blockable_binary(*n)) {
        convert_elementwise(*n);
      } else if (const auto found = n->is_onnx_domain() ? converters().find(n->op_type()) : converters().end();
                 found != converters().end()) {
        (this->*found->second)(*n);
      }
    }
    if (!converted_.empty()) finish();
    return added_;
  }

 private:
  using converter = void (blocked_layout_rewrite::*)(ir::node&);

  /// The conversion of each other ai.onnx op that can take blocked inputs.
  static const std::unordered_map<std::string, converter>& converters() {
    static const std::unordered_map<std::string, converter> table{
        {"MaxPool", &blocked_layout_rewrite::convert_pool},
        {"AveragePool", &blocked_layout_rewrite::convert_pool},
        {"GlobalAveragePool", &blocked_layout_rewrite::convert_pool},
        {"BatchNormalization", &blocked_layout_rewrite::convert_batch_norm},
        {"Concat", &blocked_layout_rewrite::convert_concat},
        {"Slice", &blocked_layout_rewrite::convert_slice},
        {"Split", &blocked_layout_rewrite::convert_split},
        {"Reshape", &blocked_layout_rewrite::convert_channel_shuffle},  // the first view of a shuffle
        {"Transpose", &blocked_layout_rewrite::convert_transpose},
    };
    return table;
  }

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
    const bool winograd = winograd_ && winograd_fits(n, *w);
    std::vector<ir::attribute> attributes = std::move(n.attributes());  // n goes away
    attributes.push_back(ir::attribute::make_int("block", block_));
    if (swish.mul) attributes.push_back(ir::attribute::make_string("activation", "Swish"));
    if (winograd) attributes.push_back(ir::attribute::make_string("algorithm", "winograd"));
    add_twin(n, "Conv", nchwc_domain, std::move(inputs), std::move(attributes), out_channels, one_by_one);
    if (swish.mul) absorb({swish.sigmoid, swish.mul}, *n.output(0));
  }

  /// Whether oneDNN's Winograd kernel should run this conv: 3x3, stride 1, no dilation, one
  /// group, 16-lane blocks (AVX-512, where oneDNN has the kernel), and
  /// - an input of static shape: the kernel's weight layout depends on the batch, and oneDNN
  ///   cannot reorder out of it into another once the initializer is released;
  /// - at least 14 x 14 output pixels: the weights grow by 7/9 whatever the image size, the time
  ///   saved shrinks with it (ResNet-50's 512 channels at 7 x 7: +7 MiB for 0.6 ms per conv, its
  ///   256 at 14 x 14: +1.75 MiB for 0.9 ms; docs/BENCHMARKS.md).
  bool winograd_fits(const ir::node& n, const ir::tensor& w) const {
    if (block_ != 16 || n.attr_int("group", 1) != 1 || w.dims[2] != 3 || w.dims[3] != 3) return false;
    const std::vector<std::int64_t> ones(2, 1);
    if (n.attr_ints("strides", ones) != ones || n.attr_ints("dilations", ones) != ones) return false;
    const auto in = ir::static_dims(n.input(0));
    const auto out = ir::static_dims(n.output(0));
    constexpr std::int64_t min_side = 14;
    return in && in->size() == 4 && out && out->size() == 4 && (*out)[2] >= min_side && (*out)[3] >= min_side;
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

  /// Nodes after `y` that the node computing y's twin now computes as well: the output of
  /// the last of them has y's twin as its own.
  void absorb(std::initializer_list<ir::node*> nodes, const ir::value& y) {
    twin_[std::data(nodes)[nodes.size() - 1]->output(0)] = twin_.at(&y);
    for (ir::node* n : nodes) {
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
    const auto* source = reinterpret_cast<const float*>(v.initializer()->bytes->data());
    ir::value* blocked = blocked_constant(v.name(), std::vector<float>(source, source + channels));
    per_channel_[&v] = blocked;
    return blocked;
  }

  /// A new initializer [1, C/b, 1, 1, b] holding `values` (one per channel), padding zero.
  ir::value* blocked_constant(const std::string& base_name, std::vector<float> values) {
    const auto channels = static_cast<std::int64_t>(values.size());
    const std::int64_t blocks = (channels + block_ - 1) / block_;
    values.resize(static_cast<std::size_t>(blocks * block_), 0.0f);
    std::string name = g_.unique_name(base_name + ".nchwc");
    ir::tensor t = ir::tensor::from_values<float>(name, {1, blocks, 1, 1, block_}, values);
    return g_.add_initializer(std::move(name), std::move(t));
  }

  /// BatchNormalization at inference on a blocked input, with constant parameters: a
  /// ChannelScale by scale / sqrt(var + epsilon) plus B - mean * that, and the Relu after it
  /// when that is its only reader (DenseNet's pre-activation norm after each concatenation,
  /// which no conv before it can absorb).
  void convert_batch_norm(ir::node& n) {
    const auto found = twin_.find(n.input(0));
    if (found == twin_.end() || n.outputs().size() != 1 || n.inputs().size() != 5 || n.attr_int("training_mode", 0) != 0) return;
    const std::int64_t channels = found->second.channels;
    std::vector<std::vector<float>> params;  // scale, B, mean, var
    for (std::size_t k = 1; k < 5; ++k) {
      const ir::value* v = n.input(k);
      if (!v || !v->is_constant() || !v->initializer()->has_data() || v->initializer()->dtype != data_type::float32 ||
          ir::tensor::element_count(v->initializer()->dims) != channels) {
        return;
      }
      const auto* data = reinterpret_cast<const float*>(v->initializer()->bytes->data());
      params.emplace_back(data, data + channels);
    }
    const double epsilon = n.attr_float("epsilon", 1e-5f);
    std::vector<float> scale(static_cast<std::size_t>(channels)), shift(scale.size());
    for (std::size_t c = 0; c < scale.size(); ++c) {
      const double s = params[0][c] / std::sqrt(static_cast<double>(params[3][c]) + epsilon);
      scale[c] = static_cast<float>(s);
      shift[c] = static_cast<float>(params[1][c] - params[2][c] * s);
    }
    ir::node* relu = only_reader_if(*n.output(0), "Relu");
    std::vector<ir::value*> inputs{found->second.value, blocked_constant(n.input(1)->name(), std::move(scale)),
                                   blocked_constant(n.input(2)->name(), std::move(shift))};
    add_twin(n, "ChannelScale", nchwc_domain, std::move(inputs),
             relu ? only(ir::attribute::make_string("activation", "Relu")) : std::vector<ir::attribute>{}, channels,
             found->second.one_by_one);
    if (relu) absorb({relu}, *n.output(0));
  }

  /// The reader of `v` when it is its only one, of type `op`, and v no graph output; else null.
  static ir::node* only_reader_if(const ir::value& v, const char* op) {
    if (v.is_graph_output() || v.uses().size() != 1 || !v.uses().front().user->is(op)) return nullptr;
    return v.uses().front().user;
  }

  /// Where one channel of a blocked value comes from: a channel of a value that no
  /// GatherChannels of this rewrite made.
  struct channel_origin {
    ir::value* base;
    std::int64_t base_channels;  // the real channel count of base
    std::int64_t channel;
  };

  /// The origins of the channels of blocked value `t`: its gather's, or its own channels.
  std::vector<channel_origin> origins_of(const blocked_twin& t) const {
    if (const auto g = gathered_.find(t.value); g != gathered_.end()) return g->second;
    std::vector<channel_origin> own;
    for (std::int64_t c = 0; c < t.channels; ++c) own.push_back({t.value, t.channels, c});
    return own;
  }

  /// Output `output` of `n` (a Concat, Slice, Split or channel shuffle of blocked values) as
  /// a GatherChannels of `origins`, read straight from the values earlier gathers read, so a
  /// chain of them is one copy; the earlier gathers go away in `finish` if nothing else reads
  /// them. The caller lists `n` as converted.
  void add_gather(ir::node& n, std::size_t output, const std::vector<channel_origin>& origins, bool one_by_one) {
    std::vector<ir::value*> bases;
    std::vector<std::int64_t> channels, offsets, sources;
    for (const channel_origin& o : origins) {
      auto at = std::find(bases.begin(), bases.end(), o.base);
      if (at == bases.end()) {
        offsets.push_back(offsets.empty() ? 0 : offsets.back() + channels.back());
        channels.push_back(o.base_channels);
        at = bases.insert(bases.end(), o.base);
      }
      sources.push_back(offsets[static_cast<std::size_t>(at - bases.begin())] + o.channel);
    }
    const std::int64_t total = offsets.back() + channels.back();
    bool in_order = static_cast<std::int64_t>(sources.size()) == total;
    for (std::size_t k = 0; in_order && k < sources.size(); ++k) in_order = sources[k] == static_cast<std::int64_t>(k);
    std::vector<ir::attribute> attributes = only(ir::attribute::make_ints("channels", std::move(channels)));
    attributes.push_back(ir::attribute::make_int("block", block_));
    if (!in_order) attributes.push_back(ir::attribute::make_ints("sources", std::move(sources)));
    std::string label = output == 0 ? n.label() : std::string();
    if (output == 0) n.set_name("");
    ir::node* gather = g_.add_node({"GatherChannels", std::move(bases), {""}, std::move(attributes), std::move(label), nchwc_domain}, &n);
    ++added_;
    ir::value* y = gather->output(0);
    const auto count = static_cast<std::int64_t>(origins.size());
    twin_[n.output(output)] = {y, count, one_by_one};
    gathered_[y] = origins;
    gathers_.push_back(gather);
  }

  /// The blocked twins of all of `n`'s inputs, or an empty list when one has none.
  std::vector<blocked_twin> input_twins(const ir::node& n) const {
    std::vector<blocked_twin> twins;
    for (const ir::value* in : n.inputs()) {
      const auto found = in ? twin_.find(in) : twin_.end();
      if (found == twin_.end()) return {};
      twins.push_back(found->second);
    }
    return twins;
  }

  static bool channel_axis(std::int64_t axis) { return axis == 1 || axis == -3; }

  /// Concat along the channels of blocked values only (DenseNet's blocks; a plain input would
  /// cost a reorder of its own, as much as the concatenation saves).
  void convert_concat(ir::node& n) {
    const std::vector<blocked_twin> twins = input_twins(n);
    if (n.outputs().size() != 1 || twins.empty() || !channel_axis(n.attr_int("axis", 0))) return;
    std::vector<channel_origin> origins;
    bool one_by_one = true;
    for (const blocked_twin& t : twins) {
      const std::vector<channel_origin> part = origins_of(t);
      origins.insert(origins.end(), part.begin(), part.end());
      one_by_one = one_by_one && t.one_by_one;
    }
    add_gather(n, 0, origins, one_by_one);
    converted_.push_back(&n);
  }

  /// Slice of the channels (one axis, constant starts, ends and a positive step) of a blocked
  /// value: ShuffleNet's chunk as the TorchScript exporter writes it.
  void convert_slice(ir::node& n) {
    const auto found = twin_.find(n.input(0));
    if (found == twin_.end() || n.outputs().size() != 1 || n.inputs().size() < 3) return;
    const auto operand = [&](std::size_t k, std::int64_t fallback) -> std::optional<std::int64_t> {
      const ir::value* v = k < n.inputs().size() ? n.input(k) : nullptr;
      if (!v) return fallback;
      if (!v->is_constant() || !v->initializer()->has_data()) return std::nullopt;
      const auto values = ir::ints_of(*v->initializer());
      if (!values || values->size() != 1) return std::nullopt;
      return values->front();
    };
    const auto start = operand(1, 0), end = operand(2, 0), axis = operand(3, 0), step = operand(4, 1);
    if (!start || !end || !axis || !step || !channel_axis(*axis) || *step <= 0) return;
    const std::int64_t channels = found->second.channels;
    const auto clamp = [&](std::int64_t i) { return std::clamp(i < 0 ? i + channels : i, std::int64_t{0}, channels); };
    const std::vector<channel_origin> all = origins_of(found->second);
    std::vector<channel_origin> origins;
    for (std::int64_t c = clamp(*start); c < clamp(*end); c += *step) origins.push_back(all[static_cast<std::size_t>(c)]);
    if (origins.empty()) return;
    add_gather(n, 0, origins, found->second.one_by_one);
    converted_.push_back(&n);
  }

  /// Split of the channels of a blocked value into parts of constant sizes (or equal parts):
  /// ShuffleNet's chunk as the dynamo exporter writes it.
  void convert_split(ir::node& n) {
    const auto found = twin_.find(n.input(0));
    if (found == twin_.end() || !channel_axis(n.attr_int("axis", 0))) return;
    const std::int64_t channels = found->second.channels;
    const auto parts = static_cast<std::int64_t>(n.outputs().size());
    std::vector<std::int64_t> sizes = n.attr_ints("split", {});
    if (const ir::value* given = n.inputs().size() > 1 ? n.input(1) : nullptr) {
      if (!given->is_constant() || !given->initializer()->has_data()) return;
      sizes = ir::ints_of(*given->initializer()).value_or(std::vector<std::int64_t>{});
    }
    if (sizes.empty() && channels % parts == 0) sizes.assign(static_cast<std::size_t>(parts), channels / parts);
    if (static_cast<std::int64_t>(sizes.size()) != parts || std::accumulate(sizes.begin(), sizes.end(), std::int64_t{0}) != channels ||
        std::any_of(sizes.begin(), sizes.end(), [](std::int64_t size) { return size <= 0; })) {
      return;
    }
    const std::vector<channel_origin> all = origins_of(found->second);
    std::int64_t first = 0;
    for (std::size_t o = 0; o < sizes.size(); ++o) {
      const auto begin = all.begin() + first;
      add_gather(n, o, std::vector<channel_origin>(begin, begin + sizes[o]), found->second.one_by_one);
      first += sizes[o];
    }
    converted_.push_back(&n);
  }

  /// ShuffleNet's channel shuffle of a blocked value x [N, C, H, W]: Reshape to
  /// [N, g, C/g, H, W], Transpose [0, 2, 1, 3, 4], Reshape back, each the only reader of the
  /// one before, as one gather (channel k is x's channel (k % g) * C/g + k / g).
  void convert_channel_shuffle(ir::node& split_view) {
    const auto found = twin_.find(split_view.input(0));
    if (found == twin_.end()) return;
    ir::node* transpose = only_reader_if(*split_view.output(0), "Transpose");
    ir::node* merge_view = transpose ? only_reader_if(*transpose->output(0), "Reshape") : nullptr;
    if (!merge_view || transpose->attr_ints("perm", {}) != std::vector<std::int64_t>{0, 2, 1, 3, 4}) return;
    const auto dims_of = [](const ir::value* v) { return ir::static_dims(v).value_or(std::vector<std::int64_t>{}); };
    const std::vector<std::int64_t> x = dims_of(split_view.input(0)), grouped = dims_of(split_view.output(0)),
                                    y = dims_of(merge_view->output(0));
    const std::int64_t channels = found->second.channels;
    if (x.size() != 4 || x != y || x[1] != channels || grouped.size() != 5 || grouped[0] != x[0] ||
        grouped[1] * grouped[2] != channels || grouped[3] != x[2] || grouped[4] != x[3]) {
      return;
    }
    const std::int64_t groups = grouped[1], per_group = grouped[2];
    const std::vector<channel_origin> all = origins_of(found->second);
    std::vector<channel_origin> origins;
    for (std::int64_t k = 0; k < channels; ++k) origins.push_back(all[static_cast<std::size_t>((k % groups) * per_group + k / groups)]);
    for (ir::node* view : {&split_view, transpose}) {
      absorbed_.insert(view);
      converted_.push_back(view);
    }
    add_gather(*merge_view, 0, origins, found->second.one_by_one);
    absorbed_.insert(merge_view);
    converted_.push_back(merge_view);
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
      for (ir::value* y : n->outputs()) {
        const auto twin = y ? twin_.find(y) : twin_.end();
        if (twin == twin_.end()) continue;  // a view inside a channel shuffle: only the shuffle reads it
        const bool plain_reader = y->is_graph_output() || std::any_of(y->uses().begin(), y->uses().end(), [&](const ir::use& u) {
                                    return !gone.count(u.user);
                                  });
        if (!plain_reader) continue;
        const blocked_twin& t = twin->second;
        ir::node* reorder = g_.add_node({"ReorderOutput", {t.value}, {""}, only(ir::attribute::make_int("channels", t.channels)), "", nchwc_domain}, n);
        ir::value* plain = reorder->output(0);
        plain->set_type(y->type());
        g_.replace_all_uses(y, plain);
        renames.emplace_back(plain, y->name());
      }
    }
    for (auto it = converted_.rbegin(); it != converted_.rend(); ++it) g_.erase(*it);
    // Gathers that later ones composed past and nothing else reads (latest first: a gather
    // reads no gather, but a ReorderOutput may read one).
    for (auto it = gathers_.rbegin(); it != gathers_.rend(); ++it) {
      if ((*it)->output(0)->uses().empty() && !(*it)->output(0)->is_graph_output()) g_.erase(*it);
    }
    for (auto& [value, name] : renames) g_.rename(value, name);
    g_.compact();
  }

  ir::graph& g_;
  int block_;
  bool winograd_;
  std::unordered_map<const ir::value*, blocked_twin> twin_;
  std::vector<ir::node*> converted_;
  std::unordered_set<const ir::node*> absorbed_;  // folded into a converted node
  std::unordered_map<const ir::value*, ir::value*> per_channel_;  // constants made blocked
  std::unordered_map<const ir::value*, std::vector<channel_origin>> gathered_;  // GatherChannels outputs
  std::vector<ir::node*> gathers_;
  int added_ = 0;  // nodes added: the graph changed
};

}  // namespace

int use_blocked_layout(ir::graph& g, int block, bool winograd) {
  return blocked_layout_rewrite(g, choose_block(g, block), winograd).run();
}

}  // namespace inferopt::runtime::detail

namespace inferopt::runtime::nn {

std::optional<std::size_t> blocked_conv_in_place_input(const ir::node& n) {
  constexpr std::size_t residual = 3;
  if (n.domain() != nchwc_domain || n.op_type() != "Conv") return std::nullopt;
  if (n.inputs().size() <= residual || n.input(residual) == nullptr || n.input(residual) == n.input(0)) return std::nullopt;
  return residual;
}

}  // namespace inferopt::runtime::nn
