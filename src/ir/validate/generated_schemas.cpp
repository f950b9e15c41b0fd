// The generated table of operator definitions, each operator built into library schemas on first use.

#include "generated_schemas.hpp"

#include <algorithm>
#include <array>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <mutex>
#include <utility>

namespace inferopt::ir::validation {
namespace {

constexpr auto single = onnx::OpSchema::Single;
constexpr auto optional = onnx::OpSchema::Optional;
constexpr auto variadic = onnx::OpSchema::Variadic;

/// The builder the generated calls chain on: one definition, described as the `onnx`
/// Python package reports it.
class builder {
 public:
  builder(const char* domain, const char* op, int since) : def_(std::make_unique<generated_definition>()) {
    def_->schema.SetName(op).SetDomain(domain).SinceVersion(since);
  }
  builder&& input(int i, const char* name, const char* type_str, onnx::OpSchema::FormalParameterOption option,
                  bool homogeneous, int min_arity) && {
    def_->schema.Input(i, name, "", type_str, option, homogeneous, min_arity);
    return std::move(*this);
  }
  builder&& output(int i, const char* name, const char* type_str, onnx::OpSchema::FormalParameterOption option,
                   bool homogeneous, int min_arity) && {
    def_->schema.Output(i, name, "", type_str, option, homogeneous, min_arity);
    return std::move(*this);
  }
  builder&& attr(const char* name, int type, bool required) && {
    def_->schema.Attr(name, "", static_cast<onnx::AttributeProto::AttributeType>(type), required);
    return std::move(*this);
  }
  builder&& types(const char* type_str, std::initializer_list<const char*> known,
                  std::initializer_list<data_type> newer) && {
    def_->schema.TypeConstraint(type_str, std::vector<std::string>(known.begin(), known.end()), "");
    if (newer.size() > 0) def_->newer_types.emplace(type_str, std::vector<data_type>(newer));
    return std::move(*this);
  }
  std::unique_ptr<generated_definition> finish() && {
    def_->schema.Finalize();
    return std::move(def_);
  }

 private:
  std::unique_ptr<generated_definition> def_;
};

builder b(const char* domain, const char* op, int since) { return builder(domain, op, since); }

/// One operator's definitions, oldest first, as its generated function adds them.
struct op_definitions {
  std::vector<std::unique_ptr<generated_definition>> versions;
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

const generated_definition* find_generated_definition(std::string_view domain, std::string_view op,
                                                      std::int64_t opset) {
  const op_entry* it = std::lower_bound(std::begin(table), std::end(table), std::pair(domain, op), entry_before);
  if (it == std::end(table) || it->domain != domain || it->op != op) return nullptr;
  const generated_definition* found = nullptr;
  for (const auto& def : definitions_of(static_cast<std::size_t>(it - std::begin(table))).versions) {
    if (def->schema.SinceVersion() <= opset) found = def.get();
  }
  return found;
}

bool has_generated_domain(std::string_view domain) {
  const op_entry* it = std::lower_bound(std::begin(table), std::end(table), std::pair(domain, std::string_view()), entry_before);
  return it != std::end(table) && it->domain == domain;
}

}  // namespace inferopt::ir::validation
