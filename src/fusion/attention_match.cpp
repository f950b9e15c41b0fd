#include "attention_match.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <string_view>

#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/rewriting.hpp"

namespace inferopt::fusion::detail {

const ir::shape* dims_of(const ir::value* v) {
  return v && v->type() && v->type()->is_tensor && v->type()->dims ? &*v->type()->dims : nullptr;
}

bool same_dim(const ir::dim& a, const ir::dim& b) { return !std::holds_alternative<std::monostate>(a.size) && a == b; }

bool is_node(const ir::node* n, const char* op, std::size_t inputs) {
  return n && n->is(op) && n->inputs().size() == inputs && n->outputs().size() == 1 && n->output(0);
}

bool has_perm(const ir::node* n, const std::vector<std::int64_t>& perm) {
  return is_node(n, "Transpose", 1) && n->attr_ints("perm", {}) == perm;
}

namespace {

/// Whether every reader of `v` but `reader` is a Shape node (recorded in `m`), `reader` reads
/// it, and `v` is not a graph output.
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

bool is_static(const ir::dim& d) { return d.is_static(); }

/// Follows the value chains from the projections to the products and checks each head split.
class attention_reader {
 public:
  attention_reader(const pass_context& ctx, token_layout layout, attention_match& m)
      : ctx_(ctx), layout_(layout), m_(m) {}

  /// The heads [B,N,S,h] read by `reader`, back to the value they were split from.
  ir::value* heads(const ir::value* xh, const ir::node* reader) {
    return layout_ == token_layout::batch_first ? batch_first_heads(xh, reader, {0, 2, 1, 3})
                                                : seq_first_heads(xh, reader, false);
  }

  /// The transposed key heads [B,N,h,L] read by `reader`, back to K.
  ir::value* key_transposed(const ir::value* kt, const ir::node* reader) {
    if (layout_ == token_layout::seq_first) {
      if (ir::value* k = seq_first_heads(kt, reader, true)) return k;  // dynamo: one [BN,h,L] transpose
      ir::node* t = private_producer(kt, reader, m_);                  // ts: Transpose(K heads, 0,1,3,2)
      if (!has_perm(t, {0, 1, 3, 2})) return nullptr;
      ir::value* k = seq_first_heads(t->input(0), t, false);
      if (k) m_.replaced.push_back(t);
      return k;
    }
    if (ir::value* k = batch_first_heads(kt, reader, {0, 2, 3, 1})) return k;
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
    ir::value* k = batch_first_heads(flat->input(0), flat, {0, 2, 1, 3});
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

  [[nodiscard]] std::int64_t head_count() const { return heads_; }

 private:
  /// Transpose(Reshape(X [B,S,D] -> [B,S,N,h]), perm) read by `reader`: X.
  ir::value* batch_first_heads(const ir::value* xh, const ir::node* reader, std::vector<std::int64_t> perm) {
    ir::node* t = private_producer(xh, reader, m_);
    if (!has_perm(t, perm)) return nullptr;
    ir::node* r = private_producer(t->input(0), t, m_);
    if (!is_node(r, "Reshape", 2) || !is_batch_first_split(r->input(0), r->output(0))) return nullptr;
    m_.replaced.insert(m_.replaced.end(), {r, t});
    return r->input(0);
  }

  /// Reshape x [B,S,D] -> y [B,S,N,h], N and h static with N*h == D; the first split fixes N.
  bool is_batch_first_split(const ir::value* x, const ir::value* y) {
    const ir::shape* in = dims_of(x);
    const ir::shape* out = dims_of(y);
    if (!in || !out || in->size() != 3 || out->size() != 4 || !same_dim((*in)[0], (*out)[0]) ||
        !same_dim((*in)[1], (*out)[1]) || !is_static((*in)[2]) || !is_static((*out)[2]) || !is_static((*out)[3])) {
      return false;
    }
    return (*out)[2].value() * (*out)[3].value() == (*in)[2].value() && fix_heads((*out)[2].value());
  }

  /// nn.MultiheadAttention's split of X [S,B,D]: Reshape to [S, B*N, h], Transpose(1,0,2) to
  /// [B*N, S, h] (or, `transposed`, Transpose(1,2,0) to [B*N, h, S]), Reshape to [B,N,S,h]
  /// (or [B,N,h,S]); B, N and h static. Returns X.
  ir::value* seq_first_heads(const ir::value* xh, const ir::node* reader, bool transposed) {
    ir::node* unflat = private_producer(xh, reader, m_);
    if (!is_node(unflat, "Reshape", 2)) return nullptr;
    ir::node* t = private_producer(unflat->input(0), unflat, m_);
    if (!has_perm(t, transposed ? std::vector<std::int64_t>{1, 2, 0} : std::vector<std::int64_t>{1, 0, 2})) return nullptr;
    ir::node* split = private_producer(t->input(0), t, m_);
    if (!is_node(split, "Reshape", 2)) return nullptr;
    const ir::shape* x = dims_of(split->input(0));
    const ir::shape* s = dims_of(split->output(0));
    const ir::shape* out = dims_of(xh);
    if (!x || !s || !out || x->size() != 3 || s->size() != 3 || out->size() != 4) return nullptr;
    if (!is_static((*x)[1]) || !is_static((*x)[2]) || !is_static((*s)[1]) || !is_static((*s)[2]) ||
        !same_dim((*x)[0], (*s)[0]) || (*x)[1].value() <= 0 || (*s)[1].value() % (*x)[1].value() != 0) {
      return nullptr;
    }
    const std::int64_t batch = (*x)[1].value(), n = (*s)[1].value() / batch, h = (*s)[2].value();
    const ir::dim& seq = (*x)[0];
    const bool dims_ok = (*out)[0] == ir::dim{batch} && (*out)[1] == ir::dim{n} && n * h == (*x)[2].value() &&
                         (transposed ? (*out)[2] == ir::dim{h} && same_dim((*out)[3], seq)
                                     : same_dim((*out)[2], seq) && (*out)[3] == ir::dim{h});
    if (!dims_ok || !fix_heads(n)) return nullptr;
    m_.replaced.insert(m_.replaced.end(), {split, t, unflat});
    return split->input(0);
  }

  bool fix_heads(std::int64_t n) {
    if (heads_ != 0 && heads_ != n) return false;
    heads_ = n;
    return true;
  }

  const pass_context& ctx_;
  token_layout layout_;
  attention_match& m_;
  std::int64_t heads_ = 0;
};

/// Softmax input back to Q and K: the scale, the mask and the products.
decline read_scores(attention_reader& r, const pass_context& ctx, ir::node& softmax, attention_match& m) {
  ir::node* add = private_producer(softmax.input(0), &softmax, m);
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
  m.q = r.heads(qh, q_reader);
  m.k = m.q ? r.key_transposed(kt, k_reader) : nullptr;
  if (!m.q || !m.k) return "declined-head-split";
  m.replaced.push_back(matmul);
  m.scale = scale;
  return nullptr;
}

/// Softmax output forward to the V product: the guard and V's split.
decline read_weighted_values(attention_reader& r, const pass_context& ctx, ir::node& softmax, attention_match& m) {
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
  m.v = r.heads(pv->input(1), pv);
  if (!m.v) return "declined-head-split";
  m.replaced.push_back(pv);
  m.heads_out = pv->output(0);
  return nullptr;
}

}  // namespace

ir::node* private_producer(const ir::value* v, const ir::node* reader, attention_match& m) {
  return v && v->producer() && read_only_by(v, reader, m) ? v->producer() : nullptr;
}

ir::node* only_reader(const ir::value* v, attention_match& m) {
  ir::node* reader = nullptr;
  for (const ir::use& u : v->uses()) {
    if (u.user->is("Shape")) continue;
    if (reader && reader != u.user) return nullptr;
    reader = u.user;
  }
  return read_only_by(v, reader, m) ? reader : nullptr;
}

decline read_attention_core(const pass_context& ctx, ir::node& softmax, token_layout layout, attention_match& m) {
  attention_reader r(ctx, layout, m);
  if (decline why = read_scores(r, ctx, softmax, m)) return why;
  m.replaced.push_back(&softmax);
  if (decline why = read_weighted_values(r, ctx, softmax, m)) return why;
  m.heads = r.head_count();
  return nullptr;
}

decline check_operands(attention_match& m, token_layout layout) {
  for (const ir::value* v : {m.q, m.k, m.v}) {
    if (v->elem_type() != ir::data_type::float32) return "declined-type";
  }
  if (!m.mask) return nullptr;
  if (m.mask->elem_type() != ir::data_type::float32) return "declined-type";
  const ir::shape* mask = dims_of(m.mask);
  const ir::shape& q = *dims_of(m.q);
  const ir::shape& k = *dims_of(m.k);
  const std::size_t batch = layout == token_layout::batch_first ? 0 : 1, seq = 1 - batch;
  const auto is_one = [](const ir::dim& d) { return d.is_static() && d.value() == 1; };
  if (!mask || mask->size() != 4 || !(is_one((*mask)[0]) || same_dim((*mask)[0], q[batch])) ||
      !(is_one((*mask)[1]) || ((*mask)[1].is_static() && (*mask)[1].value() == m.heads)) || !same_dim((*mask)[3], k[seq])) {
    return "declined-mask-shape";
  }
  if (same_dim((*mask)[2], q[seq])) return nullptr;
  // Broadcast over the queries: expanded to [.., S, L] when the dims are numbers.
  if (!is_one((*mask)[2]) || !q[seq].is_static() || !k[seq].is_static() || !(*mask)[0].is_static()) {
    return "declined-mask-shape";
  }
  m.mask_expand = {(*mask)[0].value(), is_one((*mask)[1]) ? 1 : m.heads, q[seq].value(), k[seq].value()};
  return nullptr;
}

ir::value* microsoft_mask(ir::graph& g, const attention_match& m, ir::node* position) {
  if (!m.mask || m.mask_expand.empty()) return m.mask;
  const std::string name = g.unique_name(m.mask->name() + "_expanded_shape");
  const auto rank = static_cast<std::int64_t>(m.mask_expand.size());
  ir::value* shape = g.add_initializer(name, ir::tensor::from_values<std::int64_t>(name, {rank}, m.mask_expand));
  ir::node* expand = g.add_node(ir::node_spec{"Expand", {m.mask, shape}, {""}, {}, m.mask->name() + "_expanded", {}}, position);
  expand->output(0)->set_type(ir::value_type{true, ir::data_type::float32, ir::shape(m.mask_expand.begin(), m.mask_expand.end())});
  return expand->output(0);
}

bool absorb_shape_readers(attention_match& m, const ir::node* extra_sink) {
  static const std::set<std::string_view> shape_ops{"Shape", "Gather", "Unsqueeze", "Squeeze", "Concat", "Slice",
                                                    "Cast",  "Mul",    "Add",       "Sub",     "Div",    "Max", "Min"};
  std::set<const ir::node*> sinks(m.replaced.begin(), m.replaced.end());
  if (extra_sink) sinks.insert(extra_sink);
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

void erase_replaced(ir::graph& g, const std::vector<ir::node*>& replaced) {
  // Each node goes once nothing reads what it made; the list is not in graph order, so sweep
  // until a sweep erases nothing.
  std::vector<ir::node*> left = replaced;
  std::sort(left.begin(), left.end());
  left.erase(std::unique(left.begin(), left.end()), left.end());
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
}

}  // namespace inferopt::fusion::detail
