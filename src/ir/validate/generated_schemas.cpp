// The generated table of operator definitions, each operator built on first use.

#include "generated_schemas.hpp"

#include <algorithm>
#include <array>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <memory>
#include <mutex>
#include <utility>

namespace inferopt::ir::validation {
namespace {

constexpr auto single = arity::single;
constexpr auto optional = arity::optional;
constexpr auto variadic = arity::variadic;

/// The fewest and most values `formals` take, as ONNX's OpSchema::Finalize counts them: every
/// single formal up to the last one is needed, and a variadic (always last) needs its
/// minimum and takes any number.
void count_arity(const std::vector<formal_parameter>& formals, int& least, int& most) {
  least = most = 0;
  for (const formal_parameter& f : formals) {
    switch (f.option) {
      case arity::single: least = ++most; break;
      case arity::optional: ++most; break;
      case arity::variadic:
        least = most + f.min_arity;
        most = std::numeric_limits<int>::max();
        break;
    }
  }
}

/// The builder the generated calls chain on: one definition, described as the `onnx` and
/// `onnxruntime` Python packages report it.
class builder {
 public:
  // The table's entry names the operator; a definition only needs its version.
  builder(const char* /*domain*/, const char* /*op*/, int since) : def_(std::make_unique<op_definition>()) {
    def_->since = since;
  }
  builder&& input(std::size_t i, const char* name, const char* type_variable, arity option, bool homogeneous,
                  int min_arity) && {
    formal(def_->inputs, i) = {name, type_variable, option, homogeneous, min_arity};
    return std::move(*this);
  }
  builder&& output(std::size_t i, const char* name, const char* type_variable, arity option, bool homogeneous,
                   int min_arity) && {
    formal(def_->outputs, i) = {name, type_variable, option, homogeneous, min_arity};
    return std::move(*this);
  }
  builder&& attr(const char* name, int kind, bool required) && {
    def_->attributes[name] = {static_cast<attribute_kind>(kind), required};
    return std::move(*this);
  }
  builder&& types(const char* type_variable, std::initializer_list<data_type> elements, bool takes_non_tensors) && {
    def_->type_constraints[type_variable] = {std::vector<data_type>(elements), takes_non_tensors};
    return std::move(*this);
  }
  builder&& deprecated() && {
    def_->deprecated = true;
    return std::move(*this);
  }
  std::unique_ptr<op_definition> finish() && {
    count_arity(def_->inputs, def_->min_inputs, def_->max_inputs);
    count_arity(def_->outputs, def_->min_outputs, def_->max_outputs);
    return std::move(def_);
  }

 private:
  static formal_parameter& formal(std::vector<formal_parameter>& formals, std::size_t i) {
    if (formals.size() <= i) formals.resize(i + 1);
    return formals[i];
  }

  std::unique_ptr<op_definition> def_;
};

builder b(const char* domain, const char* op, int since) { return builder(domain, op, since); }

/// One operator's definitions, oldest first, as its generated function adds them.
struct op_definitions {
  std::vector<std::unique_ptr<op_definition>> versions;
  void add(builder&& one) { versions.push_back(std::move(one).finish()); }
};

/// One operator of the table: its definitions are built the first time a node asks for it,
/// so a model pays for the operators it uses, not for all of them.
struct op_entry {
  std::string_view domain;
  std::string_view op;
  void (*define)(op_definitions&);
};

constexpr op_entry table[] = {
#include "generated_schemas.inc"
};
constexpr std::size_t table_size = std::size(table);

constexpr bool entry_before(const op_entry& e, std::pair<std::string_view, std::string_view> key) {
  return std::pair(e.domain, e.op) < key;
}

static_assert(std::is_sorted(std::begin(table), std::end(table),
                             [](const op_entry& a, const op_entry& b) { return entry_before(a, {b.domain, b.op}); }),
              "generated_schemas.inc must be sorted by domain and op");

/// The built definitions of the table's entry `index`.
const op_definitions& definitions_of(std::size_t index) {
  struct lazily_built {
    std::once_flag once;
    op_definitions definitions;
  };
  static std::array<lazily_built, table_size> built;
  lazily_built& slot = built[index];
  std::call_once(slot.once, [&] { table[index].define(slot.definitions); });
  return slot.definitions;
}

}  // namespace

bool allowed_types::allows(data_type t) const { return std::find(elements.begin(), elements.end(), t) != elements.end(); }

const op_definition* find_generated_definition(std::string_view domain, std::string_view op, std::int64_t opset) {
  const op_entry* it = std::lower_bound(std::begin(table), std::end(table), std::pair(domain, op), entry_before);
  if (it == std::end(table) || it->domain != domain || it->op != op) return nullptr;
  const op_definition* found = nullptr;
  for (const auto& def : definitions_of(static_cast<std::size_t>(it - std::begin(table))).versions) {
    if (def->since <= opset) found = def.get();
  }
  return found;
}

bool has_generated_domain(std::string_view domain) {
  const op_entry* it = std::lower_bound(std::begin(table), std::end(table), std::pair(domain, std::string_view()), entry_before);
  return it != std::end(table) && it->domain == domain;
}

}  // namespace inferopt::ir::validation
