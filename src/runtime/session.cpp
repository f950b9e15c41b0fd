#include "inferopt/runtime/session.hpp"

#include <algorithm>
#include <chrono>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <fstream>
#include <sstream>
#include <thread>

#include "blocked_layout.hpp"
#include "int8_groups.hpp"
#include "buffer_pool.hpp"
#include "linear_gelu.hpp"
#include "inferopt/core/atomic_file.hpp"
#include "inferopt/core/cpu_count.hpp"
#include "inferopt/ir/graph.hpp"
#include "inferopt/ir/serialize.hpp"
#include "kernels/nchwc.hpp"
#include "kernels/nn_common.hpp"
#include "kernels/omp_team.hpp"
#include "output_placement.hpp"
#include "session_arena.hpp"

namespace inferopt::runtime {

namespace {
constexpr std::size_t no_slot = SIZE_MAX;

// Hands the traced run's freed buffers back to the system: glibc keeps freed heap memory
// mapped, and the arena would otherwise come on top of it. Not under a sanitizer: its
// allocator replaces glibc's, whose heap then holds nothing, and the first malloc_trim
// initializes that heap without a lock, so sessions tracing on two threads at once (parallel
// calibration) raced there and crashed under AddressSanitizer.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define INFEROPT_SANITIZED_ALLOCATOR 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define INFEROPT_SANITIZED_ALLOCATOR 1
#endif
#endif
void release_free_heap() {
#if defined(__GLIBC__) && !defined(INFEROPT_SANITIZED_ALLOCATOR)
  malloc_trim(0);
#endif
}
}

struct session::step {
  const ir::node* node = nullptr;
  std::unique_ptr<kernel> run;
  std::vector<std::size_t> inputs;
  std::vector<std::size_t> outputs;
  std::vector<std::size_t> release_after;  // slots read for the last time here
  std::string profile_key;
};

namespace {

io_info describe(const ir::value& v) {
  io_info info;
  info.name = v.name();
  info.type = v.elem_type();
  if (v.type() && v.type()->dims) {
    info.shape = *v.type()->dims;
    info.has_shape = true;
  }
  info.optional = v.is_initializer();
  return info;
}

std::string opset_label(const ir::node& n, std::int64_t opset) {
  return n.op_type() + " (domain '" + (n.domain().empty() ? "ai.onnx" : n.domain()) + "', opset " +
         std::to_string(opset) + ")";
}

}  // namespace

session::session(const ir::model& m, session_options options)
    : options_(std::move(options)), pool_(std::make_unique<detail::buffer_pool>()) {
  graph_ = m.graph().clone();
  for (const ir::opset_import& o : m.opsets) {
    domain_opsets_[o.domain == "ai.onnx" ? std::string() : o.domain] = o.version;
  }
  opset_ = m.opset("").value_or(0);
  // More threads than CPUs would only wait for each other at every parallel region.
  const int cpus = usable_cpu_count();
  threads_ = options_.threads > 0 ? std::min(options_.threads, cpus) : cpus;
  for (const ir::node* n : graph_->nodes()) {
    if (n->domain() == nn::nchwc_domain || n->domain() == nn::executor_fused_domain) {
      throw error(errc::unsupported, "node " + n->describe() + ": domain '" + n->domain() + "' is the executor's own");
    }
  }
  // An observer wants every value as its model has it, and another registry may not have the
  // kernels of the rewritten ops.
  if (options_.rewrite_graph && !options_.on_value && !options_.kernels) {
    if (detail::use_int8_kernels(*graph_, opset_) > 0) domain_opsets_[nn::executor_fused_domain] = 1;
    const int block = nn::nchwc_block();
    if (block > 0 && detail::use_blocked_layout(*graph_, block, options_.winograd) > 0) domain_opsets_[nn::nchwc_domain] = 1;
    if (detail::fuse_linear_gelu(*graph_) > 0) domain_opsets_[nn::executor_fused_domain] = 1;
  }
  prepare(*graph_, options_.kernels ? *options_.kernels : builtin_kernels());
}

session::~session() = default;

namespace {

/// Every unsupported op is reported at once, before anything is built.
void check_kernels(const ir::graph& g, const kernel_registry& kernels,
                   const std::map<std::string, std::int64_t>& domain_opsets) {
  std::vector<std::string> missing;
  for (ir::node* n : g.nodes()) {
    auto it = domain_opsets.find(n->is_onnx_domain() ? std::string() : n->domain());
    const std::int64_t opset = it == domain_opsets.end() ? 0 : it->second;
    if (!kernels.find(n->domain(), n->op_type(), opset)) {
      std::string label = opset_label(*n, opset);
      if (std::find(missing.begin(), missing.end(), label) == missing.end()) missing.push_back(label);
    }
  }
  if (!missing.empty()) {
    std::string message = "unsupported operator" + std::string(missing.size() > 1 ? "s: " : ": ");
    for (std::size_t k = 0; k < missing.size(); ++k) message += (k ? ", " : "") + missing[k];
    throw error(errc::unsupported, message);
  }
}

}  // namespace

void session::prepare(const ir::graph& g, const kernel_registry& kernels) {
  add_slots(g);
  check_kernels(g, kernels, domain_opsets_);
  std::vector<std::size_t> last_use = add_steps(g, kernels);
  std::vector<bool> keep(slots_.size(), false);
  for (std::size_t s : output_slots_) keep[s] = true;
  for (std::size_t s = 0; s < slots_.size(); ++s) {
    if (last_use[s] != no_slot && !keep[s] && !is_constant_slot_[s]) steps_[last_use[s]].release_after.push_back(s);
  }
  for (std::size_t s = 0; s < slots_.size(); ++s) keep[s] = keep[s] || is_constant_slot_[s];
  // Only the kernels written for it write in place: the blocked conv over its residual.
  std::vector<std::size_t> in_place_of(slots_.size(), no_slot);
  for (const step& s : steps_) {
    const std::optional<std::size_t> input = nn::blocked_conv_in_place_input(*s.node);
    if (input && !s.outputs.empty() && s.outputs[0] != no_slot) in_place_of[s.outputs[0]] = s.inputs[*input];
  }
  arena_ = std::make_unique<detail::session_arena>(std::move(last_use), std::move(keep), std::move(in_place_of));
  placement_ = std::make_unique<detail::output_placement>();
  find_releasable_constants();
}

void session::find_releasable_constants() {
  std::map<std::size_t, constant_readers> by_slot;
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    for (std::size_t k = 0; k < steps_[i].inputs.size(); ++k) {
      const std::size_t s = steps_[i].inputs[k];
      if (s != no_slot && is_constant_slot_[s]) by_slot[s].readers.emplace_back(i, k);
    }
  }
  for (ir::value* v : graph_->initializers()) {
    // A graph output is returned. A graph input's initializer (old models list every one) is a
    // default a feed may replace: released, the kernels read their copy when no feed comes.
    auto found = by_slot.find(slot_of_.at(v->name()));
    if (found == by_slot.end() || v->is_graph_output()) continue;
    found->second.slot = found->first;
    found->second.name = v->name();
    releasable_.push_back(std::move(found->second));
  }
}

void session::release_copied_constants() {
  // Kernels make their copies in their first run; asked once, after it.
  std::vector<constant_readers> candidates = std::move(releasable_);
  releasable_.clear();
  for (const constant_readers& c : candidates) {
    const bool copied = std::all_of(c.readers.begin(), c.readers.end(), [&](const auto& r) {
      return steps_[r.first].run->holds_own_copy(r.second);
    });
    if (!copied) continue;
    slots_[c.slot] = tensor();
    ir::value* v = graph_->find_value(c.name);
    ir::tensor data_less;
    data_less.dtype = v->initializer()->dtype;
    data_less.dims = v->initializer()->dims;
    graph_->set_initializer(v, std::move(data_less));
  }
}

void session::add_slots(const ir::graph& g) {
  // Slots for every value the main graph defines.
  for (ir::value* v : g.values()) {
    slot_of_[v->name()] = slots_.size();
    slots_.emplace_back();
    is_constant_slot_.push_back(false);
  }
  for (ir::value* v : g.initializers()) {
    const std::size_t s = slot_of_.at(v->name());
    if (v->initializer()->has_data() && ir::element_size(v->initializer()->dtype) > 0) {
      slots_[s] = tensor::from_ir(*v->initializer());
      is_constant_slot_[s] = true;
    }
  }
  for (ir::value* v : g.inputs()) inputs_.push_back(describe(*v));
  for (ir::value* v : g.outputs()) {
    outputs_.push_back(describe(*v));
    output_slots_.push_back(slot_of_.at(v->name()));
  }
}

std::vector<std::size_t> session::add_steps(const ir::graph& g, const kernel_registry& kernels) {
  std::vector<std::size_t> last_use(slots_.size(), no_slot);
  for (ir::node* n : g.nodes()) {
    auto it = domain_opsets_.find(n->is_onnx_domain() ? std::string() : n->domain());
    const std::int64_t opset = it->second;
    step s;
    s.node = n;
    s.run = (*kernels.find(n->domain(), n->op_type(), opset))(kernel_build_info{*n, opset});
    s.profile_key = n->is_onnx_domain() ? n->op_type() : n->domain() + "." + n->op_type();
    for (ir::value* in : n->inputs()) {
      if (!in) {
        s.inputs.push_back(no_slot);
        continue;
      }
      auto found = slot_of_.find(in->name());
      if (found == slot_of_.end()) {
        throw error(errc::unsupported, "node " + n->describe() + ": input '" + in->name() + "' comes from an outer graph");
      }
      s.inputs.push_back(found->second);
      last_use[found->second] = steps_.size();
    }
    for (ir::value* out : n->outputs()) s.outputs.push_back(out ? slot_of_.at(out->name()) : no_slot);
    steps_.push_back(std::move(s));
  }
  return last_use;
}

memory_plan_info session::memory_plan() const {
  const detail::arena_stats& s = arena_->stats();
  return {planned_last_run_, s.arena_bytes, s.lower_bound_bytes, s.naive_bytes, s.planned_tensors};
}

weight_memory_info session::weight_memory() const {
  weight_memory_info info;
  for (const ir::value* v : graph_->initializers()) info.initializer_bytes += v->initializer()->byte_size();
  for (const step& st : steps_) info.kernel_bytes += st.run->own_bytes();
  return info;
}

/// What one run keeps from step to step.
struct session::run_state {
  bool planned = false;  // outputs go to the arena at the plan's offsets
  bool tracing = false;  // this run is traced to make a plan
  std::vector<const tensor*> in_ptrs;  // the current step's inputs (reused by every step)
  std::vector<tensor> outs;            // the current step's outputs (reused by every step)
};

namespace {

/// `t` against what the graph declares for the input: type, rank and static dims.
void check_input(const io_info& declared, const tensor& t) {
  const std::string& name = declared.name;
  if (declared.type != data_type::undefined && t.dtype() != declared.type) {
    throw error(errc::invalid_argument, "input '" + name + "': expected " + std::string(ir::to_string(declared.type)) +
                                            ", got " + std::string(ir::to_string(t.dtype())));
  }
  if (!declared.has_shape) return;
  if (t.rank() != declared.shape.size()) {
    throw error(errc::invalid_argument, "input '" + name + "': expected rank " + std::to_string(declared.shape.size()) +
                                            ", got shape " + to_string(t.shape()));
  }
  for (std::size_t d = 0; d < t.rank(); ++d) {
    if (declared.shape[d].is_static() && declared.shape[d].value() != t.dim(d)) {
      throw error(errc::invalid_argument, "input '" + name + "': dim " + std::to_string(d) + " must be " +
                                              std::to_string(declared.shape[d].value()) + ", got " +
                                              std::to_string(t.dim(d)));
    }
  }
}

/// Runs one kernel; exceptions other than ours become ours, naming the node.
void compute_node(const ir::node& n, kernel& k, kernel_context& ctx) {
  try {
    k.compute(ctx);
  } catch (const error&) {
    throw;
  } catch (const std::exception& e) {
    const error failure = as_error(e);
    throw error(failure.code(), "node " + n.describe() + ": " + failure.what());
  }
}

}  // namespace

void session::check_inputs(const tensor_map& feeds) const {
  // Inputs: every name known, types and static dims as declared, required ones present.
  for (const auto& feed : feeds) {
    const std::string& name = feed.first;
    auto it = std::find_if(inputs_.begin(), inputs_.end(), [&](const io_info& i) { return i.name == name; });
    if (it == inputs_.end()) throw error(errc::invalid_argument, "input '" + name + "' is not an input of the graph");
    check_input(*it, feed.second);
  }
  for (const io_info& i : inputs_) {
    if (!i.optional && !feeds.count(i.name)) throw error(errc::invalid_argument, "input '" + i.name + "' is missing");
  }
}

void session::bind_inputs(const tensor_map& feeds) {
  for (const auto& [name, t] : feeds) slots_[slot_of_.at(name)] = t;
  // Inputs with a default and no feed use their initializer, or, once it was released to the
  // kernels' copies, are absent (the kernels then read their copy).
  for (const io_info& i : inputs_) {
    if (i.optional && !feeds.count(i.name)) {
      const ir::tensor& initializer = *graph_->find_value(i.name)->initializer();
      slots_[slot_of_.at(i.name)] = initializer.has_data() ? tensor::from_ir(initializer) : tensor();
    }
  }
}

session::run_state session::begin_run() {
  // A plan exists for these input shapes: use it; else trace this run to make one.
  std::vector<shape_t> input_shapes;
  for (const io_info& i : inputs_) input_shapes.push_back(slots_[slot_of_.at(i.name)].shape());
  run_state r;
  r.planned = options_.memory_plan && arena_->select(input_shapes);
  r.tracing = options_.memory_plan && !r.planned;
  if (r.tracing) arena_->begin_trace(std::move(input_shapes));
  detail::output_placement& placement = *placement_;
  placement.arena = r.planned ? arena_->base() : nullptr;
  placement.holder = r.planned ? arena_->holder() : nullptr;
  placement.offsets.clear();
  placement.capacities.clear();
  placement.overflowed = false;
  return r;
}

void session::run_step(std::size_t step_index, run_state& r) {
  step& s = steps_[step_index];
  r.in_ptrs.clear();
  for (std::size_t k : s.inputs) {
    const tensor* t = k == no_slot ? nullptr : &slots_[k];
    if (t && t->empty()) t = nullptr;  // an undefined optional value
    r.in_ptrs.push_back(t);
  }
  r.outs.resize(s.outputs.size());
  for (std::size_t k = 0; k < s.outputs.size(); ++k) {
    r.outs[k] = s.outputs[k] == no_slot ? tensor() : std::move(slots_[s.outputs[k]]);
  }
  detail::output_placement& placement = *placement_;
  placement.allocated.assign(s.outputs.size(), 0);
  placement.scratch_used = 0;
  if (r.planned) arena_->place(step_index, s.outputs, placement);
  kernel_context ctx(*s.node, r.in_ptrs, r.outs, threads_, pool_.get(), options_.memory_plan ? &placement : nullptr);
  const auto start = profiling_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  compute_node(*s.node, *s.run, ctx);
  if (r.tracing) {
    arena_->trace_step(step_index, s.inputs, r.in_ptrs, s.outputs, r.outs, placement.allocated, placement.scratch_used);
  }
  if (profiling_) {
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    profile_[s.profile_key] += ms;
    node_profile_[s.node->label()] += ms;
  }
  store_outputs(s, r.outs);
}

void session::store_outputs(const step& s, std::vector<tensor>& outs) {
  for (std::size_t k = 0; k < s.outputs.size(); ++k) {
    if (s.outputs[k] == no_slot) continue;
    if (outs[k].empty()) {
      // Validation checks output counts against ONNX's schemas; a newer op's extra output
      // name reaches here, and the model is what asks for more than the op gives.
      throw error(errc::invalid_model, "node " + s.node->describe() + ": the model names output " + std::to_string(k) +
                                           ", which " + s.node->op_type() + " does not produce");
    }
    slots_[s.outputs[k]] = std::move(outs[k]);
    if (options_.on_value) options_.on_value(s.node->outputs()[k]->name(), slots_[s.outputs[k]]);
  }
  for (std::size_t k : s.release_after) pool_->give(std::move(slots_[k]));
}

void session::finish_run(const run_state& r) {
  detail::output_placement& placement = *placement_;
  planned_last_run_ = r.planned;
  if (r.planned && placement.overflowed) arena_->invalidate();  // some output outgrew its place
  if (r.tracing) {
    arena_->finish_trace();
    pool_->clear();  // later runs take intermediates from the arena, not from these buffers
    release_free_heap();
  }
  placement.holder.reset();
}

tensor_map session::run(const tensor_map& feeds) {
  // The calling thread's OpenMP team size (its own ICV), which Eigen's products and the
  // kernels' parallel regions read: Eigen::setNbThreads writes one process-wide static, a data
  // race when sessions run on several threads at once (serve's model instances; TSan found it).
  const nn::omp_team_for_call team(threads_);
  check_inputs(feeds);
  bind_inputs(feeds);
  if (profiling_) {
    profile_.clear();
    node_profile_.clear();
  }
  run_state r = begin_run();
  for (std::size_t step_index = 0; step_index < steps_.size(); ++step_index) run_step(step_index, r);
  finish_run(r);
  if (!releasable_.empty()) release_copied_constants();

  tensor_map result;
  for (std::size_t k = 0; k < outputs_.size(); ++k) {
    const std::size_t slot = output_slots_[k];
    // Constants, and values the graph names as output twice, stay shared.
    const bool hand_over = options_.hand_over_outputs && !is_constant_slot_[slot] &&
                           std::find(output_slots_.begin() + static_cast<std::ptrdiff_t>(k) + 1, output_slots_.end(), slot) ==
                               output_slots_.end();
    result[outputs_[k].name] = hand_over ? std::move(slots_[slot]) : slots_[slot];
  }
  // Feeds are the caller's; drop our references so their buffers are not reused by us.
  for (const auto& [name, _] : feeds) slots_[slot_of_.at(name)] = tensor();
  return result;
}

tensor read_tensor_file(const std::string& path, std::string* name) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw error(errc::io, path + ": cannot open");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  ir::tensor t;
  try {
    t = ir::parse_tensor(bytes.str());
  } catch (const error& e) {
    throw error(e.code(), path + ": " + e.what());
  }
  if (name) *name = t.name;
  return tensor::from_ir(t);
}

void write_tensor_file(const std::string& path, const tensor& t, const std::string& name) {
  write_file_atomically(path, ir::serialize_tensor(t.to_ir(name)));
}

}  // namespace inferopt::runtime
