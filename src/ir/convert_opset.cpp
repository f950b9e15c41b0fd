// The opset converter's walk: every default-domain node, in order, subgraphs after their
// node, crosses the definition changes between the model's opset and the target one at a
// time (src/ir/opset/op_history.cpp), on a copy of the model that replaces it at the end.

#include "inferopt/ir/convert_opset.hpp"

#include <algorithm>
#include <set>
#include <unordered_set>

#include "inferopt/core/error.hpp"
#include "inferopt/ir/rewriting.hpp"
#include "inferopt/ir/verify.hpp"
#include "opset/adapter.hpp"
#include "opset/op_history.hpp"

namespace inferopt::ir {
namespace {

using opset::definition;
using opset::op_history;
using opset::step_context;

/// The element types a node is known to read or make: its operands' and, for Cast and the
/// ops holding constant tensors, the type it is told to produce.
std::vector<data_type> known_types(const step_context& ctx) {
  std::vector<data_type> out;
  for (const value* v : ctx.n->inputs()) out.push_back(ctx.elem_type(v));
  for (const value* v : ctx.n->outputs()) out.push_back(ctx.elem_type(v));
  if (ctx.n->op_type() == "Cast") out.push_back(static_cast<data_type>(ctx.n->attr_int("to", 0)));
  for (const attribute& a : ctx.n->attributes()) {
    for (const tensor& t : a.tensors) out.push_back(t.dtype);
  }
  return out;
}

/// Refuses a node that uses an element type `d` added, when going below `d`.
void check_types(const step_context& ctx, const definition& d) {
  for (const data_type t : known_types(ctx)) {
    if (std::find(d.types_added.begin(), d.types_added.end(), t) != d.types_added.end()) {
      ctx.refuse("element type " + std::string(to_string(t)) + " has no form before opset " + std::to_string(d.since));
    }
  }
}

/// Constants the conversion leaves unread (an axes initializer whose node went back to an
/// attribute, a Constant node that fed it) are dropped; constants that were unread before
/// stay, as they are none of the conversion's business.
class unread_constants {
 public:
  explicit unread_constants(const graph& g) { remember(g); }

  void drop(graph& g) const {
    for (node* n : g.node_list()) {
      for (graph* sub : n->subgraphs()) drop(*sub);
      if (n->is("Constant") && n->output(0) && was_read_or_new(n->output(0))) (void)erase_if_unread(g, n);
    }
    for (value* v : g.initializers()) {
      if (!v->is_graph_input() && !v->is_graph_output() && !v->has_uses() && was_read_or_new(v)) g.erase_value(v);
    }
  }

 private:
  void remember(const graph& g) {
    for (const value* v : g.values()) {
      existing_.insert(v);
      if (v->has_uses()) read_.insert(v);
    }
    for (const node* n : g.nodes()) {
      for (const graph* sub : n->subgraphs()) remember(*sub);
    }
  }
  [[nodiscard]] bool was_read_or_new(const value* v) const { return read_.contains(v) || !existing_.contains(v); }

  std::unordered_set<const value*> existing_;
  std::unordered_set<const value*> read_;
};

class converter {
 public:
  converter(model& m, std::int64_t from, std::int64_t to, opset_conversion_report& report)
      : m_(m), facts_(m), from_(from), to_(to), report_(report) {}

  void convert(graph& g) {
    const std::vector<node*> order = g.node_list();
    for (std::size_t i = 0; i < order.size(); ++i) {
      node* n = order[i];
      if (n->is_onnx_domain()) n = convert(g, n, i + 1 < order.size() ? order[i + 1] : nullptr);
      for (graph* sub : n->subgraphs()) convert(*sub);
    }
  }

 private:
  node* convert(graph& g, node* n, node* next) {
    ++report_.nodes_visited;
    step_context ctx{g, n, next, 0, to_, m_.ir_version, facts_};
    std::set<std::string_view> applied;
    std::int64_t at = from_;  // the opset whose definition the node follows now
    // Each step moves `at` toward the target or replaces the op (Upsample by Resize, whose
    // history goes on from the same opset), so the walk ends.
    while (true) {
      const op_history& h = history(ctx);
      const definition* current = opset::definition_at(h, at);
      if (!current) {
        throw error(errc::invalid_model, "node " + ctx.n->describe() + ": " + std::string(h.op) + " has no definition at opset " +
                                             std::to_string(at));
      }
      const bool moved = to_ > at ? step_up(ctx, h, *current, at, applied) : step_down(ctx, h, *current, at, applied);
      if (!moved) break;
    }
    for (std::string_view name : applied) ++report_.changed_nodes[std::string(name)];
    if (!applied.empty()) ++report_.nodes_changed;
    return ctx.n;
  }

  /// Crosses the next change up, or replaces a deprecated op; false when there is none.
  bool step_up(step_context& ctx, const op_history& h, const definition& current, std::int64_t& at,
               std::set<std::string_view>& applied) {
    auto later = std::find_if(h.definitions.begin(), h.definitions.end(),
                              [&](const definition& d) { return d.since > at && d.since <= to_; });
    if (later == h.definitions.end()) {
      if (!current.deprecated) return false;
      const std::string op = ctx.n->op_type();
      ctx.version = current.since;
      apply(ctx, current, true, applied);
      if (ctx.n->op_type() == op) return false;
      at = current.since;  // the replacement has its form of that opset: its later changes follow
      return true;
    }
    ctx.version = later->since;
    apply(ctx, *later, true, applied);
    at = later->since;
    return true;
  }

  /// Crosses the current definition's change down; false when the target is reached.
  bool step_down(step_context& ctx, const op_history& h, const definition& current, std::int64_t& at,
                 std::set<std::string_view>& applied) {
    if (current.since <= to_) return false;
    const std::string op = ctx.n->op_type();
    ctx.version = current.since;
    apply(ctx, current, false, applied);
    if (&current == &h.definitions.front() && ctx.n->op_type() == op) {
      ctx.refuse(op + " has no definition before opset " + std::to_string(current.since));
    }
    if (ctx.n->op_type() == op) check_types(ctx, current);
    at = current.since - 1;
    return true;
  }

  static void apply(step_context& ctx, const definition& d, bool up, std::set<std::string_view>& applied) {
    for (const opset::adapter* a : d.changes) {
      if (up ? a->up(ctx) : a->down(ctx)) applied.insert(a->name());
    }
  }

  static const op_history& history(const step_context& ctx) {
    const op_history* h = opset::find_history(ctx.n->op_type());
    if (!h) ctx.refuse("no opset conversion rule for " + ctx.n->op_type());
    return *h;
  }

  model& m_;
  const opset::value_facts facts_;
  std::int64_t from_;
  std::int64_t to_;
  opset_conversion_report& report_;
};

/// The model's default-domain opset, checked against what the converter reads.
std::int64_t source_opset(const model& m) {
  const std::optional<std::int64_t> from = m.opset("");
  if (!from) throw error(errc::invalid_argument, "the model imports no ai.onnx opset");
  if (*from > newest_target_opset) {
    throw error(errc::invalid_argument, "the model's opset " + std::to_string(*from) + " is newer than opset " +
                                            std::to_string(newest_target_opset) + ", the newest this converter reads");
  }
  if (*from < 1) throw error(errc::invalid_model, "the model imports ai.onnx opset " + std::to_string(*from));
  return *from;
}

}  // namespace

opset_conversion_report convert_opset(model& m, std::int64_t target) {
  if (target < oldest_target_opset || target > newest_target_opset) {
    throw error(errc::invalid_argument, "opset " + std::to_string(target) + " is out of range: the converter writes opsets " +
                                            std::to_string(oldest_target_opset) + " to " +
                                            std::to_string(newest_target_opset));
  }
  opset_conversion_report report;
  report.from_opset = source_opset(m);
  report.to_opset = target;
  if (report.from_opset == target) return report;
  if (m.function_count() > 0) throw error(errc::unsupported, "model-local functions are not converted");

  model work = m.clone();
  try {
    const unread_constants unread(work.graph());
    converter(work, report.from_opset, target, report).convert(work.graph());
    unread.drop(work.graph());
  } catch (const error& e) {
    throw error(e.code(), "converting opset " + std::to_string(report.from_opset) + " to " + std::to_string(target) +
                              ": " + e.what());
  }
  for (opset_import& o : work.opsets) {
    if (o.domain.empty() || o.domain == "ai.onnx") o.version = target;
  }
  verify(work.graph());
  m = std::move(work);
  return report;
}

std::vector<op_versions> convertible_ops() {
  std::vector<op_versions> out;
  for (const op_history& h : opset::all_histories()) {
    op_versions o{std::string(h.op), {}};
    for (const definition& d : h.definitions) o.versions.push_back(d.since);
    out.push_back(std::move(o));
  }
  return out;
}

std::string describe(const opset_conversion_report& r) {
  return "converted opset " + std::to_string(r.from_opset) + " -> " + std::to_string(r.to_opset);
}

}  // namespace inferopt::ir
