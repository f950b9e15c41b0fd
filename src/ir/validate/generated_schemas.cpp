// The generated table of definitions the library lacks, built once into library schemas.

#include "generated_schemas.hpp"

#include <initializer_list>
#include <memory>
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

/// Per domain and op, the definitions oldest first.
using definition_table = std::map<std::pair<std::string, std::string>, std::vector<std::unique_ptr<generated_definition>>,
                                  std::less<>>;

const definition_table& table() {
  static const definition_table built = [] {
    definition_table t;
    const auto add = [&t](builder&& one) {
      auto def = std::move(one).finish();
      t[{def->schema.domain(), def->schema.Name()}].push_back(std::move(def));
    };
#include "generated_schemas.inc"
    return t;
  }();
  return built;
}

}  // namespace

const generated_definition* find_generated_definition(std::string_view domain, std::string_view op,
                                                      std::int64_t opset) {
  auto it = table().find(std::pair<std::string, std::string>(domain, op));
  if (it == table().end()) return nullptr;
  const generated_definition* found = nullptr;
  for (const auto& def : it->second) {
    if (def->schema.SinceVersion() <= opset) found = def.get();
  }
  return found;
}

bool has_generated_domain(std::string_view domain) {
  auto it = table().lower_bound(std::pair<std::string, std::string>(domain, ""));
  return it != table().end() && it->first.first == domain;
}

}  // namespace inferopt::ir::validation
