#include "inferopt/pass/fold_constants.hpp"

#include <charconv>
#include <set>

#include "inferopt/runtime/kernel.hpp"

namespace inferopt {
namespace {

bool is_nondeterministic(const ir::node& n) {
  static const std::set<std::string, std::less<>> random_ops = {
      "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli"};
  return n.is_onnx_domain() && random_ops.count(n.op_type()) > 0;
}

/// Shape and Size of a statically shaped value, without running anything.
std::optional<runtime::tensor> static_shape_result(const ir::node& n, std::int64_t opset) {
  const ir::value* in = n.input(0);
  if (!in || !in->type() || !in->type()->has_static_shape()) return std::nullopt;
  std::vector<std::int64_t> dims;
  for (const ir::dim& d : *in->type()->dims) dims.push_back(d.value());
  if (n.is("Size")) return runtime::tensor::from_values<std::int64_t>({}, {ir::tensor::element_count(dims)});
  const auto rank = static_cast<std::int64_t>(dims.size());
  std::int64_t start = opset >= 15 ? n.attr_int("start", 0) : 0;
  std::int64_t end = opset >= 15 ? n.attr_int("end", rank) : rank;
  auto clamp = [&](std::int64_t x) { return std::clamp(x < 0 ? x + rank : x, std::int64_t{0}, rank); };
  start = clamp(start);
  end = clamp(end);
  std::vector<std::int64_t> slice(dims.begin() + start, dims.begin() + std::max(start, end));
  return runtime::tensor::from_values<std::int64_t>({static_cast<std::int64_t>(slice.size())}, slice);
}

/// Evaluates the node on its constant inputs; nullopt when it cannot or should not be folded.
std::optional<std::vector<runtime::tensor>> evaluate(const ir::node& n, std::int64_t opset) {
  const runtime::kernel_factory* make = runtime::builtin_kernels().find(n.domain(), n.op_type(), opset);
  if (!make) return std::nullopt;
  std::vector<runtime::tensor> inputs;
  std::vector<const runtime::tensor*> pointers;
  inputs.reserve(n.inputs().size());
  for (const ir::value* in : n.inputs()) {
    if (!in) {
      pointers.push_back(nullptr);
      continue;
    }
    inputs.push_back(runtime::tensor::from_ir(*in->initializer()));
    pointers.push_back(&inputs.back());
  }
  std::vector<runtime::tensor> outputs(n.outputs().size());
  std::unique_ptr<runtime::kernel> k = (*make)(runtime::kernel_build_info{n, opset});
  runtime::kernel_context ctx(n, pointers, outputs, 1);
  k->compute(ctx);
  return outputs;
}

}  // namespace

void fold_constants::set_option(std::string_view key, std::string_view value) {
  if (key != "max-bytes") pass::set_option(key, value);
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || end != value.data() + value.size() || v < 0) {
    throw error(errc::invalid_argument, "fold-constants: max-bytes must be a non-negative integer");
  }
  max_bytes_ = v;
}

std::map<std::string, std::string> fold_constants::options() const {
  if (max_bytes_ == (64 << 20)) return {};
  return {{"max-bytes", std::to_string(max_bytes_)}};
}

/// Whether an output's known static shape already says it would exceed the folding limit:
/// such a node is not evaluated at all (a ConstantOfShape of 2^33 elements would need the
/// memory before the size check after evaluation could refuse it).
bool fold_constants::declared_too_large(const ir::node& n) const {
  for (const ir::value* out : n.outputs()) {
    if (!out || !out->type() || !out->type()->has_static_shape()) continue;
    const std::int64_t element_bytes = std::max<std::int64_t>(1, static_cast<std::int64_t>(ir::element_size(out->type()->elem_type)));
    std::int64_t elements = 1;
    for (const ir::dim& d : *out->type()->dims) {
      if (d.value() <= 0) return false;
      if (elements > max_bytes_ / element_bytes / d.value()) return true;
      elements *= d.value();
    }
  }
  return false;
}

bool fold_constants::run(ir::graph& g, pass_context& ctx) {
  std::int64_t folded = 0;
  for (ir::node* n : g.node_list()) {
    if (n->is_dead() || is_nondeterministic(*n) || !n->subgraphs().empty()) continue;
    // An Identity of a constant folds to the constant itself, which eliminate-identity does
    // without copying it once per Identity (TorchScript shares weights through Identities).
    if (n->is("Identity")) continue;
    // A DequantizeLinear of a quantized weight is what makes a QDQ model small and lets int8
    // kernels take its group; folded it would store float32 (4x the bytes). onnxruntime's
    // constant folding keeps it too.
    if (n->is("DequantizeLinear")) {
      ctx.count("declined-dequantize");
      continue;
    }
    const bool outputs_used = std::any_of(n->outputs().begin(), n->outputs().end(),
                                          [](const ir::value* v) { return v && (v->has_uses() || v->is_graph_output()); });
    if (!outputs_used) continue;  // dce's job
    const std::int64_t opset = ctx.model().opset(n->domain()).value_or(0);
    std::optional<std::vector<runtime::tensor>> results;
    const bool shape_query = n->is("Shape") || n->is("Size");
    if (shape_query) {
      if (auto r = static_shape_result(*n, opset)) results = std::vector<runtime::tensor>{std::move(*r)};
    }
    if (!results) {
      const bool all_constant = std::all_of(n->inputs().begin(), n->inputs().end(), [&](const ir::value* v) {
        return !v || (ctx.is_constant(*v) && v->initializer()->has_data());
      });
      if (!all_constant) continue;
      if (declared_too_large(*n)) {
        ctx.count("declined-too-large");
        continue;
      }
      try {
        results = evaluate(*n, opset);
      } catch (const error&) {
        ctx.count("declined-evaluation-failed");
        continue;
      }
      if (!results) {
        ctx.count("declined-no-kernel");
        continue;
      }
    }
    bool too_big = false;
    for (std::size_t k = 0; k < n->outputs().size(); ++k) {
      if (n->output(k) && static_cast<std::int64_t>((*results)[k].byte_size()) > max_bytes_) too_big = true;
    }
    if (too_big) {
      ctx.count("declined-too-large");
      continue;
    }
    // Every check passed: replace the outputs, keeping their names.
    std::vector<std::pair<ir::value*, std::string>> renames;
    for (std::size_t k = 0; k < n->outputs().size(); ++k) {
      ir::value* out = n->output(k);
      if (!out) continue;
      ir::value* c = g.add_initializer(g.unique_name(out->name() + "_folded"), (*results)[k].to_ir({}));
      g.replace_all_uses(out, c);
      renames.emplace_back(c, out->name());
    }
    g.erase(n);
    // (For IR < 4 models the writer also lists new initializers as graph inputs.)
    for (auto& [c, name] : renames) g.rename(c, name);
    ++folded;
  }
  ctx.rewrote(folded);
  ctx.count("nodes-folded", folded);
  return folded > 0;
}

}  // namespace inferopt
