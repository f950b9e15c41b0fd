#include "inferopt/fusion/fuse_consecutive_transposes.hpp"

#include <numeric>
#include <optional>
#include <vector>

#include "inferopt/ir/rewriting.hpp"
#include "inferopt/ir/shapes.hpp"

namespace inferopt {
namespace {

bool is_plain_transpose(const ir::node* n) {
  return n && !n->is_dead() && n->is("Transpose") && n->inputs().size() == 1 && n->outputs().size() == 1 &&
         n->input(0) && n->output(0);
}

/// The node's perm, with an omitted perm spelled out (it reverses the dims); nullopt when it
/// is not a permutation or its rank is unknown.
std::optional<std::vector<std::int64_t>> perm_of(const ir::node* n) {
  std::vector<std::int64_t> perm;
  if (const ir::attribute* a = n->find_attribute("perm")) {
    if (a->kind != ir::attribute_kind::ints) return std::nullopt;
    perm = a->ints;
  } else {
    const std::optional<std::size_t> rank = ir::known_rank(n->input(0));
    if (!rank) return std::nullopt;
    perm.resize(*rank);
    std::iota(perm.rbegin(), perm.rend(), std::int64_t{0});
  }
  std::vector<bool> seen(perm.size(), false);
  for (std::int64_t p : perm) {
    if (p < 0 || p >= static_cast<std::int64_t>(perm.size()) || seen[static_cast<std::size_t>(p)]) return std::nullopt;
    seen[static_cast<std::size_t>(p)] = true;
  }
  return perm;
}

struct transpose_pair {
  ir::node* first = nullptr;
  ir::node* second = nullptr;
  std::vector<std::int64_t> composed;
  bool cancels = false;
  bool forward = false;  // cancels, and the second's readers can read x instead
};

std::optional<transpose_pair> find_match(const ir::graph& g, ir::node* second) {
  if (!is_plain_transpose(second)) return std::nullopt;
  ir::node* first = second->input(0)->producer();
  if (!is_plain_transpose(first) || first->owner() != &g) return std::nullopt;
  const std::optional<std::vector<std::int64_t>> p1 = perm_of(first);
  const std::optional<std::vector<std::int64_t>> p2 = perm_of(second);
  if (!p1 || !p2 || p1->size() != p2->size()) return std::nullopt;
  transpose_pair m{first, second, std::vector<std::int64_t>(p1->size()), true};
  for (std::size_t i = 0; i < p2->size(); ++i) {
    m.composed[i] = (*p1)[static_cast<std::size_t>((*p2)[i])];
    m.cancels = m.cancels && m.composed[i] == static_cast<std::int64_t>(i);
  }
  return m;
}

class consecutive_transposes_pattern final : public pattern<transpose_pair> {
 public:
  consecutive_transposes_pattern() : pattern("fuse-consecutive-transposes", pattern_root{{"Transpose"}}) {}

  match_result<transpose_pair> match(const ir::graph& g, ir::node& second, const pass_context&) const override {
    std::optional<transpose_pair> m = find_match(g, &second);
    if (!m) return {};
    m->forward = m->cancels && ir::can_forward_past(g, m->second, m->first->input(0));
    return std::move(*m);
  }

  std::int64_t rewrite(ir::graph& g, const transpose_pair& m, pass_context& ctx) const override {
    ir::value* x = m.first->input(0);
    if (m.forward) {
      ir::forward_past(g, m.second, x);
      ctx.count("transposes-cancelled");
    } else {
      // A cancelling pair whose output must keep its name still merges, into an identity perm.
      if (m.cancels) ctx.count("declined-output-name");
      g.set_input(m.second, 0, x);
      m.second->set_attribute(ir::attribute::make_ints("perm", m.composed));
      ctx.count("transposes-merged");
    }
    ir::erase_if_unread(g, m.first);
    return 1;
  }
};

}  // namespace

fuse_consecutive_transposes::fuse_consecutive_transposes()
    : pattern_pass(make_patterns<consecutive_transposes_pattern>()) {}

}  // namespace inferopt
