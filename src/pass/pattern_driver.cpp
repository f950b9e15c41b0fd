#include "inferopt/pass/pattern_driver.hpp"

#include <algorithm>
#include <deque>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace inferopt {

bool pattern_root::accepts_node(const ir::node& n) const {
  const auto is_default = [](std::string_view d) { return d.empty() || d == "ai.onnx"; };
  const bool same_domain = n.domain() == domain || (is_default(n.domain()) && is_default(domain));
  return same_domain && std::find(op_types.begin(), op_types.end(), n.op_type()) != op_types.end();
}

bool pattern_root::accepts(const ir::node& n, std::int64_t opset) const {
  return opset >= min_opset && opset <= max_opset && accepts_node(n);
}

namespace {

/// The patterns that may start at a node, by op type, each list in the order to try them. A
/// pattern whose opset range leaves out the model's import is left out here, once: the
/// imports do not change while a pass runs (a pass asks for new ones, added after it).
class pattern_index {
 public:
  pattern_index(std::span<const rewrite_pattern* const> patterns, const ir::model& m) {
    std::vector<const rewrite_pattern*> ordered;
    for (const rewrite_pattern* p : patterns) {
      const std::int64_t opset = m.opset(p->root().domain).value_or(0);
      if (opset >= p->root().min_opset && opset <= p->root().max_opset) ordered.push_back(p);
    }
    std::stable_sort(ordered.begin(), ordered.end(),
                     [](const rewrite_pattern* a, const rewrite_pattern* b) { return a->benefit() > b->benefit(); });
    for (const rewrite_pattern* p : ordered) {
      for (const std::string& op : p->root().op_types) by_op_[op].push_back(p);
    }
  }
  [[nodiscard]] const std::vector<const rewrite_pattern*>* candidates(const ir::node& n) const {
    const auto it = by_op_.find(n.op_type());
    return it == by_op_.end() ? nullptr : &it->second;
  }

 private:
  std::unordered_map<std::string, std::vector<const rewrite_pattern*>> by_op_;
};

/// The worklist of one sweep: graph order, with roots pushed back to the front after a rewrite.
class worklist {
 public:
  explicit worklist(const std::vector<ir::node*>& nodes) : queue_(nodes.begin(), nodes.end()) {
    waiting_.insert(nodes.begin(), nodes.end());
  }
  [[nodiscard]] bool empty() const noexcept { return queue_.empty(); }
  ir::node* pop() {
    ir::node* n = queue_.front();
    queue_.pop_front();
    waiting_.erase(n);
    return n;
  }
  void push_front(ir::node* n) {
    if (waiting_.insert(n).second) queue_.push_front(n);
  }
  void push_back(ir::node* n) {
    if (waiting_.insert(n).second) queue_.push_back(n);
  }

 private:
  std::deque<ir::node*> queue_;
  std::unordered_set<ir::node*> waiting_;  // exactly the nodes in queue_
};

class driver {
 public:
  driver(pass_context& ctx, std::span<const rewrite_pattern* const> patterns, const greedy_rewrite_config& config,
         std::size_t nodes)
      : ctx_(ctx), index_(patterns, ctx.model()), config_(config) {
    cap_ = config.max_rewrites > 0 ? config.max_rewrites
                                   : std::max<std::int64_t>(1024, 16 * static_cast<std::int64_t>(nodes));
    for (const rewrite_pattern* p : patterns) {
      result_.patterns[p->name()];
      for (const std::string& s : p->statistics()) ctx_.count(s, 0);
    }
  }

  /// Subgraphs first, then `g` itself, sweep after sweep.
  void run(ir::graph& g, bool is_main) {
    for (ir::node* n : g.node_list()) {
      for (ir::graph* sub : n->subgraphs()) run(*sub, false);
    }
    for (int sweep = 1; sweep <= config_.max_iterations && !capped_; ++sweep) {
      if (is_main) result_.iterations = sweep;
      const bool rewrote = run_sweep(g);
      if (!rewrote) return;
    }
    // Here only when the last allowed sweep (or the cap) still rewrote something.
    result_.converged = false;
  }

  [[nodiscard]] driver_result take() { return std::move(result_); }

 private:
  bool run_sweep(ir::graph& g) {
    worklist work(g.node_list());
    bool rewrote = false;
    while (!work.empty() && !capped_) {
      ir::node* n = work.pop();
      if (n->is_dead()) continue;
      const std::vector<const rewrite_pattern*>* candidates = index_.candidates(*n);
      if (!candidates) continue;
      for (const rewrite_pattern* p : *candidates) {
        if (!p->root().accepts_node(*n)) continue;
        const pattern_outcome outcome = p->apply(g, *n, ctx_);
        if (outcome.what == pattern_outcome::kind::declined) record_decline(*p, *n, outcome.statistic);
        if (outcome.what != pattern_outcome::kind::rewritten) continue;
        record_rewrite(*p, outcome.rewrites);
        requeue(work, n);
        rewrote = true;
        break;
      }
    }
    return rewrote;
  }

  void record_decline(const rewrite_pattern& p, const ir::node& n, std::string_view statistic) {
    if (!declines_seen_.emplace(&p, &n, std::string(statistic)).second) return;
    ctx_.count(std::string(statistic));
    ++result_.patterns[p.name()].declined[std::string(statistic)];
  }

  void record_rewrite(const rewrite_pattern& p, std::int64_t rewrites) {
    ctx_.rewrote(rewrites);
    ++result_.patterns[p.name()].rewrites;
    result_.changed = true;
    if (++applied_ >= cap_) capped_ = true;
  }

  /// The root again first (the next step of a chain), then its readers that are not waiting.
  static void requeue(worklist& work, ir::node* root) {
    if (root->is_dead()) return;
    for (const ir::value* out : root->outputs()) {
      if (!out) continue;
      for (const ir::use& u : out->uses()) {
        if (!u.user->is_dead() && u.user->owner() == root->owner()) work.push_back(u.user);
      }
    }
    work.push_front(root);
  }

  pass_context& ctx_;
  pattern_index index_;
  greedy_rewrite_config config_;
  driver_result result_;
  std::int64_t cap_ = 0;
  std::int64_t applied_ = 0;
  bool capped_ = false;
  // A root tried again after a rewrite must not count the same decline twice.
  std::set<std::tuple<const rewrite_pattern*, const ir::node*, std::string>> declines_seen_;
};

}  // namespace

driver_result apply_patterns_greedily(ir::graph& g, pass_context& ctx,
                                      std::span<const rewrite_pattern* const> patterns,
                                      const greedy_rewrite_config& config) {
  expects(config.max_iterations >= 1, "apply_patterns_greedily: max_iterations must be at least 1");
  driver d(ctx, patterns, config, g.node_count_recursive());
  d.run(g, true);
  return d.take();
}

pattern_pass::pattern_pass(std::vector<std::unique_ptr<rewrite_pattern>> patterns, greedy_rewrite_config config)
    : patterns_(std::move(patterns)), config_(config) {
  for (const auto& p : patterns_) views_.push_back(p.get());
}

bool pattern_pass::run(ir::graph& g, pass_context& ctx) {
  return apply_patterns_greedily(g, ctx, views_, config_).changed;
}

}  // namespace inferopt
