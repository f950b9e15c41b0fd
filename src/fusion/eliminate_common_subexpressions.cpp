#include "inferopt/fusion/eliminate_common_subexpressions.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/rewriting.hpp"

namespace inferopt {
namespace {

constexpr std::size_t max_merged_initializer_bytes = 4096;

/// Appends a length-prefixed field, so that distinct field sequences never encode alike.
void put(std::string& key, std::string_view field) {
  const std::uint64_t size = field.size();
  key.append(reinterpret_cast<const char*>(&size), sizeof size);
  key.append(field);
}

template <class T>
void put_raw(std::string& key, const T& v) {
  key.append(reinterpret_cast<const char*>(&v), sizeof v);
}

template <class T>
void put_all(std::string& key, const std::vector<T>& vs) {
  put_raw(key, static_cast<std::uint64_t>(vs.size()));
  for (const T& v : vs) put_raw(key, v);
}

void put_tensor(std::string& key, const ir::tensor& t) {
  put_raw(key, t.dtype);
  put_all(key, t.dims);
  put(key, t.bytes ? std::string_view(*t.bytes) : std::string_view());
  put(key, t.residual);
}

/// Every attribute, sorted by name, encoded exactly (floats by their bits). Graph attributes
/// are never encoded: nodes holding them are not merged.
void put_attributes(std::string& key, const ir::node& n) {
  std::vector<const ir::attribute*> sorted;
  for (const ir::attribute& a : n.attributes()) sorted.push_back(&a);
  std::sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) { return a->name < b->name; });
  put_raw(key, static_cast<std::uint64_t>(sorted.size()));
  for (const ir::attribute* a : sorted) {
    put(key, a->name);
    put_raw(key, a->kind);
    put_raw(key, std::bit_cast<std::uint32_t>(a->f));
    put_raw(key, a->i);
    put(key, a->s);
    std::vector<std::uint32_t> float_bits;
    for (float f : a->floats) float_bits.push_back(std::bit_cast<std::uint32_t>(f));
    put_all(key, float_bits);
    put_all(key, a->ints);
    put_raw(key, static_cast<std::uint64_t>(a->strings.size()));
    for (const std::string& s : a->strings) put(key, s);
    put_raw(key, static_cast<std::uint64_t>(a->tensors.size()));
    for (const ir::tensor& t : a->tensors) put_tensor(key, t);
    put(key, a->residual);
  }
}

bool is_false_constant(const pass_context& ctx, const ir::value* v) {
  const ir::tensor* t = ir::constant_tensor(v, ctx.ir_version());
  return t && t->dtype == ir::data_type::boolean && t->byte_size() == 1 && (*t->bytes)[0] == '\0';
}

bool is_deterministic(const pass_context& ctx, const ir::node& n) {
  const std::string& op = n.op_type();
  if (n.is_onnx_domain()) {
    static constexpr std::array<std::string_view, 6> random_ops{
        "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli"};
    if (std::find(random_ops.begin(), random_ops.end(), op) != random_ops.end()) return false;
    if (op != "Dropout") return true;
    const std::int64_t opset = ctx.onnx_opset();
    if (opset < 7) return n.attr_int("is_test", 0) != 0;
    return opset < 12 || !n.input(2) || is_false_constant(ctx, n.input(2));
  }
  return n.domain() == "com.microsoft" && op.find("Dropout") == std::string::npos &&
         op.find("Random") == std::string::npos;
}

/// The identity of what `n` computes, or empty when it must not be merged.
std::string key_of(const pass_context& ctx, const ir::node& n) {
  if (n.outputs().empty() || !n.subgraphs().empty() || !is_deterministic(ctx, n)) return {};
  for (const ir::attribute& a : n.attributes()) {
    if (!a.graphs.empty()) return {};
  }
  std::string key;
  put(key, n.is_onnx_domain() ? std::string_view() : std::string_view(n.domain()));
  put(key, n.op_type());
  put_raw(key, static_cast<std::uint64_t>(n.inputs().size()));
  for (const ir::value* v : n.inputs()) put_raw(key, v);
  put_raw(key, static_cast<std::uint64_t>(n.outputs().size()));
  for (const ir::value* v : n.outputs()) put_raw(key, v != nullptr);
  put_attributes(key, n);
  return key;
}

/// Points readers of copies of one small constant at the first copy and drops the copies.
std::int64_t merge_initializers(ir::graph& g, const pass_context& ctx) {
  std::unordered_map<std::string, ir::value*> first_of;
  std::int64_t merged = 0;
  for (ir::value* v : g.initializers()) {
    const ir::tensor* t = ir::constant_tensor(v, ctx.ir_version());
    if (!t || !v->is_constant() || v->is_graph_output() || t->byte_size() > max_merged_initializer_bytes ||
        !t->residual.empty() || t->storage == ir::tensor_storage::external) {
      continue;
    }
    std::string key;
    put_tensor(key, *t);
    auto [it, inserted] = first_of.emplace(std::move(key), v);
    if (inserted) continue;
    g.replace_all_uses(v, it->second);
    g.erase_value(v);
    ++merged;
  }
  return merged;
}

/// Whether every graph output among `dup`'s outputs can be handed to `keep`'s output.
bool can_take_output_names(const ir::graph& g, const ir::node& keep, const ir::node& dup) {
  for (std::size_t k = 0; k < dup.outputs().size(); ++k) {
    const ir::value* out = dup.output(k);
    if (out && out->is_graph_output() &&
        (keep.output(k)->is_graph_output() || !ir::can_take_output_name(g, keep.output(k), out))) {
      return false;
    }
  }
  return true;
}

void fold_into(ir::graph& g, ir::node* keep, ir::node* dup) {
  std::vector<std::pair<ir::value*, std::string>> renames;
  for (std::size_t k = 0; k < dup->outputs().size(); ++k) {
    ir::value* out = dup->output(k);
    if (!out) continue;
    ir::value* kept = keep->output(k);
    if (out->is_graph_output()) {
      if (!kept->type() && out->type()) kept->set_type(out->type());
      renames.emplace_back(kept, out->name());
    }
    g.replace_all_uses(out, kept);
  }
  g.erase(dup);
  for (auto& [kept, name] : renames) {
    g.clear_value_info(kept);  // a graph output now, described by the output list
    g.rename(kept, std::move(name));
  }
}

}  // namespace

bool eliminate_common_subexpressions::run(ir::graph& g, pass_context& ctx) {
  const std::int64_t merged_constants = merge_initializers(g, ctx);
  std::unordered_map<std::string, ir::node*> first_of;
  std::int64_t folded = 0;
  std::int64_t redirected = 0;
  for (ir::node* n : g.node_list()) {
    std::string key = key_of(ctx, *n);
    if (key.empty()) continue;
    auto [it, inserted] = first_of.emplace(std::move(key), n);
    if (inserted) continue;
    ir::node* keep = it->second;
    if (can_take_output_names(g, *keep, *n)) {
      fold_into(g, keep, n);
      ++folded;
      continue;
    }
    std::size_t moved = 0;
    for (std::size_t k = 0; k < n->outputs().size(); ++k) {
      if (n->output(k)) moved += g.replace_uses_except_outputs(n->output(k), keep->output(k));
    }
    if (moved > 0) ++redirected;
    ctx.count("kept-for-output-name");
  }
  ctx.count("initializers-merged", merged_constants);
  ctx.count("nodes-merged", folded);
  ctx.rewrote(merged_constants + folded + redirected);
  return merged_constants + folded + redirected > 0;
}

}  // namespace inferopt
