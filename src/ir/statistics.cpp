#include "inferopt/ir/statistics.hpp"

#include <optional>
#include <vector>

namespace inferopt::ir {
namespace {

std::optional<std::vector<std::int64_t>> dims_of(const value* v) {
  if (!v || !v->type() || !v->type()->has_static_shape()) return std::nullopt;
  std::vector<std::int64_t> out;
  for (const dim& d : *v->type()->dims) out.push_back(d.value());
  return out;
}

std::int64_t product(const std::vector<std::int64_t>& xs, std::size_t from = 0, std::size_t to = SIZE_MAX) {
  std::int64_t p = 1;
  for (std::size_t k = from; k < xs.size() && k < to; ++k) p *= xs[k];
  return p;
}

/// The two products of attention, Q K^T and P V, over 3-D query [B,S,D], key [B,L,D] and
/// value [B,L,Dv]: B S L (D + Dv).
std::optional<std::int64_t> attention_macs(const node& n) {
  auto q = dims_of(n.input(0));
  auto k = dims_of(n.input(1));
  auto v = dims_of(n.input(2));
  if (!q || !k || !v || q->size() != 3 || k->size() != 3 || v->size() != 3) return std::nullopt;
  return (*q)[0] * (*q)[1] * (*k)[1] * ((*q)[2] + (*v)[2]);
}

/// com.microsoft Attention: the Q|K|V product of input [B,S,Din] with weights [Din, W], then
/// the two attention products with L = S.
std::optional<std::int64_t> packed_attention_macs(const node& n) {
  auto x = dims_of(n.input(0));
  auto w = n.inputs().size() > 1 ? dims_of(n.input(1)) : std::nullopt;
  if (!x || !w || x->size() != 3 || w->size() != 2) return std::nullopt;
  const std::vector<std::int64_t> sizes = n.attr_ints("qkv_hidden_sizes", {});
  const std::int64_t qk = sizes.size() == 3 ? sizes[0] : (*w)[1] / 3, v = sizes.size() == 3 ? sizes[2] : (*w)[1] / 3;
  const std::int64_t tokens = (*x)[0] * (*x)[1];
  return tokens * (*x)[2] * (*w)[1] + tokens * (*x)[1] * (qk + v);
}

}  // namespace

std::optional<std::int64_t> node_macs(const node& n) {
  // ONNX Runtime's fused forms do the same products as the ops they replace (elementwise
  // work, the softmax and the norms are not counted).
  const bool microsoft = n.domain() == "com.microsoft";
  const bool conv = n.is("Conv") || (microsoft && n.op_type() == "FusedConv");
  const bool gemm = n.is("Gemm") || (microsoft && n.op_type() == "FusedGemm");
  if (conv || n.is("ConvTranspose")) {
    auto w = dims_of(n.input(1));
    auto y = dims_of(n.output(0));
    auto x = dims_of(n.input(0));
    if (!w || !y || !x || w->size() < 3) return std::nullopt;
    // Conv: each output element takes (Cin/group * kernel) MACs. ConvTranspose: each input
    // element scatters into (Cout/group * kernel) outputs.
    if (conv) return product(*y) * product(*w, 1);
    return product(*x) * product(*w, 1);
  }
  if (gemm || n.is("MatMul")) {
    auto a = dims_of(n.input(0));
    auto y = dims_of(n.output(0));
    if (!a || !y || a->empty()) return std::nullopt;
    std::int64_t k = gemm && n.attr_int("transA", 0) ? a->front() : a->back();
    return product(*y) * k;
  }
  if ((microsoft && n.op_type() == "MultiHeadAttention") || (n.is("Attention") && n.inputs().size() >= 3)) {
    return attention_macs(n);
  }
  if (microsoft && n.op_type() == "Attention") return packed_attention_macs(n);
  return 0;
}

namespace {

void visit(const graph& g, model_statistics& s) {
  for (value* v : g.initializers()) {
    s.params += v->initializer()->element_count();
    s.param_bytes += static_cast<std::int64_t>(v->initializer()->byte_size());
  }
  for (node* n : g.nodes()) {
    ++s.nodes;
    ++s.ops[n->is_onnx_domain() ? n->op_type() : n->domain() + "." + n->op_type()];
    if (n->is("Constant")) {
      for (const attribute& a : n->attributes()) {
        for (const tensor& t : a.tensors) {
          s.params += t.element_count();
          s.param_bytes += static_cast<std::int64_t>(t.byte_size());
        }
      }
    }
    if (auto macs = node_macs(*n)) {
      s.macs += *macs;
    } else {
      ++s.macs_unknown_nodes;
    }
    for (graph* sub : n->subgraphs()) visit(*sub, s);
  }
}

}  // namespace

model_statistics compute_statistics(const model& m) {
  model_statistics s;
  visit(m.graph(), s);
  return s;
}

}  // namespace inferopt::ir
