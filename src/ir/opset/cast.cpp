// Cast's `to` is a type name (a string) in opset 1 and a TensorProto.DataType number from 6
// (saturate at 19 and round_mode at 24 are attribute_changes.hpp).

#include <array>
#include <utility>

#include "adapters.hpp"

namespace inferopt::ir::opset {
namespace {

constexpr std::array<std::pair<std::string_view, data_type>, 16> type_names{{
    {"FLOAT", data_type::float32},   {"UINT8", data_type::uint8},     {"INT8", data_type::int8},
    {"UINT16", data_type::uint16},   {"INT16", data_type::int16},     {"INT32", data_type::int32},
    {"INT64", data_type::int64},     {"STRING", data_type::string},   {"BOOL", data_type::boolean},
    {"FLOAT16", data_type::float16}, {"DOUBLE", data_type::float64},  {"UINT32", data_type::uint32},
    {"UINT64", data_type::uint64},   {"COMPLEX64", data_type::complex64}, {"COMPLEX128", data_type::complex128},
    {"BFLOAT16", data_type::bfloat16},
}};

class cast_to_number_adapter final : public adapter {
 public:
  cast_to_number_adapter() : adapter("cast-to-number") {}

  bool up(step_context& ctx) const override {
    const attribute* to = ctx.n->find_attribute("to");
    if (!to || to->kind != attribute_kind::s) return false;
    for (const auto& [text, type] : type_names) {
      if (to->s == text) {
        ctx.n->set_attribute(attribute::make_int("to", static_cast<std::int64_t>(type)));
        return true;
      }
    }
    ctx.refuse("'to' names no element type: '" + to->s + "'");
  }
};

}  // namespace

const adapter& cast_to_number() { return instance<cast_to_number_adapter>(); }

}  // namespace inferopt::ir::opset
