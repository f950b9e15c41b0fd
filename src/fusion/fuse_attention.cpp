#include "inferopt/fusion/fuse_attention.hpp"

#include <cmath>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "fused_activation.hpp"
#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/rewriting.hpp"

namespace inferopt {
namespace {

/// An attention core found at a Softmax: the inputs MultiHeadAttention takes, and the nodes
/// it replaces (`merge`, the head-merging Reshape, becomes the fused output).
struct attention_match {
  ir::value* q = nullptr;
  ir::value* k = nullptr;
  ir::value* v = nullptr;
  ir::value* mask = nullptr;        ///< additive, [B|1, N|1, S, L]; null when none
  ir::value* guard_zero = nullptr;  ///< the NaN guard's 0; null when there is no guard
  std::int64_t heads = 0;
  double scale = 1.0;
  std::vector<ir::node*> replaced;  ///< every node the fused one replaces
  /// Shape nodes reading values of the pattern: allowed when all they feed is the shape
  /// input of the pattern's own reshapes (the dynamic exports compute those shapes so).
  std::vector<ir::node*> shape_readers;
  ir::node* merge = nullptr;
};

using decline = const char*;

const ir::shape* dims_of(const ir::value* v) {
  return v && v->type() && v->type()->is_tensor && v->type()->dims ? &*v->type()->dims : nullptr;
}

/// Two dims known (a number or a name) and equal.
bool same_dim(const ir::dim& a, const ir::dim& b) { return !std::holds_alternative<std::monostate>(a.size) && a == b; }

bool is_node(const ir::node* n, const char* op, std::size_t inputs) {
  return n && n->is(op) && n->inputs().size() == inputs && n->outputs().size() == 1 && n->output(0);
}

bool has_perm(const ir::node* n, std::vector<std::int64_t> perm) {
  return is_node(n, "Transpose", 1) && n->attr_ints("perm", {}) == perm;
}

/// Whether every reader of `v` but `reader` is a Shape node (recorded in `m`), `reader` reads
/// it, and `v` is not a graph output (condition 4).
bool read_only_by(const ir::value* v, const ir::node* reader, attention_match& m) {
  if (!v || !reader || v->is_graph_output()) return false;
  bool found = false;
  std::vector<ir::node*> shapes;
  for (const ir::use& u : v->uses()) {
    if (u.user == reader) found = true;
    else if (u.user->is("Shape")) shapes.push_back(u.user);
    else return false;
  }
  if (found) m.shape_readers.insert(m.shape_readers.end(), shapes.begin(), shapes.end());
  return found;
}

/// The producer of `v` when `v` is read only by `reader` (and Shape nodes), else null.
ir::node* private_producer(const ir::value* v, const ir::node* reader, attention_match& m) {
  return v && v->producer() && read_only_by(v, reader, m) ? v->producer() : nullptr;
}

/// The one reader of `v` that is not a Shape node, when `v` is read only so; else null.
ir::node* only_reader(const ir::value* v, attention_match& m) {
  ir::node* reader = nullptr;
  for (const ir::use& u : v->uses()) {
    if (u.user->is("Shape")) continue;
    if (reader && reader != u.user) return nullptr;
    reader = u.user;
  }
  return read_only_by(v, reader, m) ? reader : nullptr;
}

class attention_reader {
 public:
  attention_reader(const pass_context& ctx, attention_match& m) : ctx_(ctx), m_(m) {}

  /// Qh = Transpose(Reshape(Q), 0,2,1,3) read by `reader`: Q, with the head split checked.
  ir::value* split_heads(const ir::value* qh, const ir::node* reader, std::vector<std::int64_t> perm) {
    ir::node* t = private_producer(qh, reader, m_);
    if (!has_perm(t, std::move(perm))) return nullptr;
    ir::node* r = private_producer(t->input(0), t, m_);
    if (!is_node(r, "Reshape", 2) || !is_head_split(r->input(0), r->output(0))) return nullptr;
    m_.replaced.push_back(r);
    m_.replaced.push_back(t);
    return r->input(0);
  }

  /// Kt as either export writes it: K, else null.
  ir::value* key_transposed(const ir::value* kt, const ir::node* reader) {
    if (ir::value* k = split_heads(kt, reader, {0, 2, 3, 1})) return k;
    // dynamo: Reshape(Transpose(Reshape(Kh, [B*N, L, h]), 0,2,1), [B,N,h,L])
    ir::node* back = private_producer(kt, reader, m_);
    if (!is_node(back, "Reshape", 2)) return nullptr;
    ir::node* t3 = private_producer(back->input(0), back, m_);
    if (!has_perm(t3, {0, 2, 1})) return nullptr;
    ir::node* flat = private_producer(t3->input(0), t3, m_);
    if (!is_node(flat, "Reshape", 2)) return nullptr;
    const ir::shape* kh = dims_of(flat->input(0));
    const ir::shape* out = dims_of(kt);
    if (!kh || !out || kh->size() != 4 || out->size() != 4 || !same_dim((*out)[0], (*kh)[0]) ||
        !same_dim((*out)[1], (*kh)[1]) || !same_dim((*out)[2], (*kh)[3]) || !same_dim((*out)[3], (*kh)[2])) {
      return nullptr;
    }
    ir::value* k = split_heads(flat->input(0), flat, {0, 2, 1, 3});
    if (!k) return nullptr;
    m_.replaced.insert(m_.replaced.end(), {flat, t3, back});
    return k;
  }

  /// `v` (read by `reader`) = x * c or c * x with c a one-element constant: x, multiplying
  /// `factor` by c, and moves `reader` to the Mul; `v` itself otherwise.
  ir::value* unscaled(ir::value* v, const ir::node*& reader, double& factor) {
    ir::node* mul = private_producer(v, reader, m_);
    if (!is_node(mul, "Mul", 2)) return v;
    for (std::size_t i = 0; i < 2; ++i) {
      const auto c = ir::constant_floats(mul->input(1 - i), ctx_.ir_version());
      if (c && c->size() == 1 && std::isfinite((*c)[0])) {
        factor *= (*c)[0];
        m_.replaced.push_back(mul);
        reader = mul;
        return mul->input(i);
      }
    }
    return v;
  }

  [[nodiscard]] std::int64_t heads() const { return heads_; }

 private:
  /// Reshape x [B,S,D] -> y [B,S,N,h], N and h static with N*h == D; the first split fixes N.
  bool is_head_split(const ir::value* x, const ir::value* y) {
    const ir::shape* in = dims_of(x);
    const ir::shape* out = dims_of(y);
    if (!in || !out || in->size() != 3 || out->size() != 4 || !same_dim((*in)[0], (*out)[0]) ||
        !same_dim((*in)[1], (*out)[1]) || !(*in)[2].is_static() || !(*out)[2].is_static() || !(*out)[3].is_static()) {
      return false;
    }
    if ((*out)[2].value() * (*out)[3].value() != (*in)[2].value()) return false;
    if (heads_ != 0 && heads_ != (*out)[2].value()) return false;
    heads_ = (*out)[2].value();
    return true;
  }

  const pass_context& ctx_;
  attention_match& m_;
  std::int64_t heads_ = 0;
};

/// Softmax input back to Q and K: the scale, the mask and the products (conditions 1 to 3).
decline read_scores(attention_reader& r, const pass_context& ctx, ir::node& softmax, attention_match& m) {
  ir::value* s = softmax.input(0);
  ir::node* add = private_producer(s, &softmax, m);
  ir::node* matmul = nullptr;
  if (is_node(add, "Add", 2)) {
    for (std::size_t i = 0; i < 2 && !matmul; ++i) {
      ir::node* p = private_producer(add->input(i), add, m);
      if (is_node(p, "MatMul", 2) || is_node(p, "Mul", 2) || is_node(p, "Div", 2)) {
        matmul = p;
        m.mask = add->input(1 - i);
      }
    }
    if (!matmul) return "declined-pattern";
    m.replaced.push_back(add);
    s = matmul->output(0);
  } else {
    matmul = add;
  }
  double scale = 1.0;
  if (is_node(matmul, "Mul", 2) || is_node(matmul, "Div", 2)) {  // the scale after the product
    const bool divide = matmul->is("Div");
    const auto c = ir::constant_floats(matmul->input(1), ctx.ir_version());
    if (!c || c->size() != 1 || (*c)[0] == 0) return "declined-scale";
    scale = divide ? 1 / (*c)[0] : (*c)[0];
    ir::node* product = private_producer(matmul->input(0), matmul, m);
    m.replaced.push_back(matmul);
    matmul = product;
  }
  if (!is_node(matmul, "MatMul", 2)) return "declined-pattern";
  const ir::node* q_reader = matmul;
  const ir::node* k_reader = matmul;
  ir::value* qh = r.unscaled(matmul->input(0), q_reader, scale);
  ir::value* kt = r.unscaled(matmul->input(1), k_reader, scale);
  m.q = r.split_heads(qh, q_reader, {0, 2, 1, 3});
  m.k = m.q ? r.key_transposed(kt, k_reader) : nullptr;
  if (!m.q || !m.k) return "declined-head-split";
  m.replaced.push_back(matmul);
  m.scale = scale;
  return nullptr;
}

/// Softmax output forward to the merged heads: the guard, the V product and the merge.
decline read_context(attention_reader& r, const pass_context& ctx, ir::node& softmax, attention_match& m) {
  ir::value* p = softmax.output(0);
  ir::node* pv = ir::sole_user(p);
  if (!pv && p->uses().size() == 2 && !p->is_graph_output()) {  // Where(IsNaN(p), 0, p)
    ir::node* isnan = nullptr;
    ir::node* where = nullptr;
    for (const ir::use& u : p->uses()) (u.user->is("IsNaN") ? isnan : where) = u.user;
    if (!is_node(isnan, "IsNaN", 1) || !is_node(where, "Where", 3) || where->input(0) != isnan->output(0) ||
        where->input(2) != p || ir::sole_user(isnan->output(0)) != where) {
      return "declined-pattern";
    }
    const auto zero = ir::constant_floats(where->input(1), ctx.ir_version());
    if (!zero || zero->size() != 1 || (*zero)[0] != 0) return "declined-pattern";
    m.guard_zero = where->input(1);
    m.replaced.insert(m.replaced.end(), {isnan, where});
    p = where->output(0);
    pv = only_reader(p, m);
  }
  if (!is_node(pv, "MatMul", 2) || pv->input(0) != p || pv->input(1) == p) return "declined-pattern";
  m.v = r.split_heads(pv->input(1), pv, {0, 2, 1, 3});
  if (!m.v) return "declined-head-split";
  m.replaced.push_back(pv);
  ir::value* ctx_heads = pv->output(0);
  ir::node* next = only_reader(ctx_heads, m);
  if (is_node(next, "Reshape", 2) && dims_of(ctx_heads) && dims_of(next->output(0)) &&
      *dims_of(ctx_heads) == *dims_of(next->output(0))) {  // ts: a Reshape that changes nothing
    m.replaced.push_back(next);
    ctx_heads = next->output(0);
    next = only_reader(ctx_heads, m);
  }
  if (!has_perm(next, {0, 2, 1, 3})) return "declined-pattern";
  m.replaced.push_back(next);
  ir::node* merge = ir::sole_user(next->output(0));
  const ir::shape* q = dims_of(m.q);
  const ir::shape* out = merge ? dims_of(merge->output(0)) : nullptr;
  if (!is_node(merge, "Reshape", 2) || !out || out->size() != 3 || !same_dim((*out)[0], (*q)[0]) ||
      !same_dim((*out)[1], (*q)[1]) || !(*out)[2].is_static() || !dims_of(m.v) || !((*dims_of(m.v))[2] == (*out)[2])) {
    return "declined-head-merge";
  }
  m.merge = merge;
  return nullptr;
}

/// The shape arithmetic the Shape readers feed, when all of it ends in the shape input of a
/// Reshape the match replaces (the dynamic exports build those shapes from Shape nodes):
/// added to `replaced`, since it dies with the pattern. False when it reaches anything else.
bool absorb_shape_readers(attention_match& m) {
  static const std::set<std::string_view> shape_ops{"Shape", "Gather", "Unsqueeze", "Squeeze", "Concat", "Slice",
                                                    "Cast",  "Mul",    "Add",       "Sub",     "Div",    "Max", "Min"};
  std::set<const ir::node*> sinks(m.replaced.begin(), m.replaced.end());
  sinks.insert(m.merge);
  std::set<ir::node*> seen;
  std::vector<ir::node*> todo = m.shape_readers;
  while (!todo.empty()) {
    ir::node* n = todo.back();
    todo.pop_back();
    if (!seen.insert(n).second) continue;
    if (seen.size() > 64 || !n->is_onnx_domain() || !shape_ops.count(n->op_type())) return false;
    for (const ir::value* out : n->outputs()) {
      if (!out) continue;
      if (out->is_graph_output()) return false;
      for (const ir::use& u : out->uses()) {
        const bool shape_input = sinks.count(u.user) && u.user->is("Reshape") && u.input_index == 1;
        if (!shape_input) todo.push_back(u.user);
      }
    }
  }
  m.replaced.insert(m.replaced.end(), seen.begin(), seen.end());
  return true;
}

/// Conditions 1 (types) and 3 (the mask's shape: [B or 1, N or 1, S, L]).
decline check_operands(const attention_match& m, std::int64_t heads) {
  for (const ir::value* v : {m.q, m.k, m.v}) {
    if (v->elem_type() != ir::data_type::float32) return "declined-type";
  }
  if (!m.mask) return nullptr;
  if (m.mask->elem_type() != ir::data_type::float32) return "declined-type";
  const ir::shape* mask = dims_of(m.mask);
  const ir::shape& q = *dims_of(m.q);
  const ir::shape& k = *dims_of(m.k);
  const auto is_one = [](const ir::dim& d) { return d.is_static() && d.value() == 1; };
  if (!mask || mask->size() != 4 || !(is_one((*mask)[0]) || same_dim((*mask)[0], q[0])) ||
      !(is_one((*mask)[1]) || ((*mask)[1].is_static() && (*mask)[1].value() == heads)) || !same_dim((*mask)[2], q[1]) ||
      !same_dim((*mask)[3], k[1])) {
    return "declined-mask-shape";
  }
  return nullptr;
}

match_result<attention_match> find_match(const pass_context& ctx, ir::node& softmax) {
  if (!is_node(&softmax, "Softmax", 1)) return {};
  const ir::shape* s = dims_of(softmax.input(0));
  if (!s || s->size() != 4) return {};
  const std::int64_t axis = softmax.attr_int("axis", ctx.onnx_opset() >= 13 ? -1 : 1);
  if (axis != -1 && axis != 3) return match_result<attention_match>::declined("declined-axis");
  attention_match m;
  attention_reader r(ctx, m);
  if (decline why = read_scores(r, ctx, softmax, m)) return match_result<attention_match>::declined(why);
  m.replaced.push_back(&softmax);
  if (decline why = read_context(r, ctx, softmax, m)) return match_result<attention_match>::declined(why);
  if (decline why = check_operands(m, r.heads())) return match_result<attention_match>::declined(why);
  if (!absorb_shape_readers(m)) return match_result<attention_match>::declined("declined-shape-reader");
  if (!fusion::detail::microsoft_opset_usable(ctx)) return match_result<attention_match>::declined("declined-opset");
  m.heads = r.heads();
  return m;
}

void apply_match(ir::graph& g, pass_context& ctx, const attention_match& m) {
  std::vector<ir::attribute> attrs;
  attrs.push_back(ir::attribute::make_int("num_heads", m.heads));
  attrs.push_back(ir::attribute::make_float("scale", static_cast<float>(m.scale)));
  std::vector<ir::value*> inputs{m.q, m.k, m.v};
  if (m.mask) inputs.insert(inputs.end(), {nullptr, nullptr, m.mask});
  ir::node* merge = m.merge;
  const std::optional<ir::value_type> type = merge->output(0)->type();
  if (m.guard_zero) {  // O = Where(IsNaN(attention), 0, attention)
    ir::node* mha = g.add_node(ir::node_spec{"MultiHeadAttention", inputs, {""}, std::move(attrs), merge->name() + "_attention",
                                             fusion::detail::microsoft_domain},
                               merge);
    mha->output(0)->set_type(type);
    ir::node* isnan = g.add_node(ir::node_spec{"IsNaN", {mha->output(0)}, {""}, {}, merge->name() + "_isnan", {}}, merge);
    g.set_input(merge, 0, isnan->output(0));
    g.set_input(merge, 1, m.guard_zero);
    g.add_node_input(merge, mha->output(0));
    merge->set_op_type("Where");
    merge->attributes().clear();
  } else {
    for (std::size_t i = 0; i < inputs.size(); ++i) g.set_input(merge, i, inputs[i]);
    merge->set_op_type("MultiHeadAttention");
    merge->set_domain(fusion::detail::microsoft_domain);
    merge->attributes() = std::move(attrs);
  }
  // Each node goes once nothing reads what it made; the list is not in graph order, so sweep
  // until a sweep erases nothing.
  std::vector<ir::node*> left = m.replaced;
  for (bool erased = true; erased && !left.empty();) {
    erased = false;
    for (auto it = left.begin(); it != left.end();) {
      if (ir::erase_if_unread(g, *it)) {
        it = left.erase(it);
        erased = true;
      } else {
        ++it;
      }
    }
  }
  ctx.require_opset(fusion::detail::microsoft_domain, fusion::detail::microsoft_opset);
}

class attention_pattern final : public pattern<attention_match> {
 public:
  attention_pattern() : pattern("fuse-attention", pattern_root{{"Softmax"}}, 1, {"attention-fused"}) {}

  match_result<attention_match> match(const ir::graph&, ir::node& root, const pass_context& ctx) const override {
    return find_match(ctx, root);
  }

  std::int64_t rewrite(ir::graph& g, const attention_match& m, pass_context& ctx) const override {
    apply_match(g, ctx, m);
    ctx.count("attention-fused");
    return 1;
  }
};

}  // namespace

fuse_attention::fuse_attention() : pattern_pass(make_patterns<attention_pattern>()) {}

}  // namespace inferopt
