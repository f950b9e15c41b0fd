#pragma once
// The adapters for changes that touch one attribute and nothing else, parameterized by the
// attribute: one added with a value that means what the older definition did, one removed,
// a value added to or removed from the values an attribute accepts, an axis attribute that
// started to accept negative values, and a change no adapter converts.

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "adapter.hpp"

namespace inferopt::ir::opset {

/// The value of an attribute that makes a newer definition behave as the older one did:
/// only absence (monostate), an int, a float, a string, or, with `every_element`, an ints
/// attribute whose elements all equal the int (dilations of 1). With `any`, every value does
/// (Cast's saturate, which only float8 targets read, and those the older opset refuses anyway).
struct neutral_value {
  std::variant<std::monostate, std::int64_t, double, std::string> value;
  bool every_element = false;
  bool any = false;
  [[nodiscard]] bool matches(const attribute& a) const;
  /// The attribute `name` holding this value (an int, float or string one).
  [[nodiscard]] attribute make(const std::string& name) const;
  /// The value as a message shows it: `1`, `'DCR'`.
  [[nodiscard]] std::string text() const;
};

/// A new attribute: up, nothing to do; down, dropped when absent or neutral, refused otherwise.
class attribute_added final : public adapter {
 public:
  attribute_added(std::string name, std::string attribute, neutral_value neutral)
      : adapter(std::move(name)), attribute_(std::move(attribute)), neutral_(std::move(neutral)) {}
  bool down(step_context& ctx) const override;

 private:
  std::string attribute_;
  neutral_value neutral_;
};

/// An attribute the newer definition dropped: up, removed when absent or holding `kept` (the
/// value whose meaning the newer definition keeps; monostate: any value), refused otherwise.
class attribute_removed final : public adapter {
 public:
  attribute_removed(std::string name, std::string attribute, neutral_value kept = {})
      : adapter(std::move(name)), attribute_(std::move(attribute)), kept_(std::move(kept)) {}
  bool up(step_context& ctx) const override;

 private:
  std::string attribute_;
  neutral_value kept_;
};

/// String values a definition started (`added`) or stopped accepting for an attribute: the
/// direction that does not know them refuses a node using one.
class attribute_values_changed final : public adapter {
 public:
  attribute_values_changed(std::string name, std::string attribute, std::vector<std::string> values, bool added)
      : adapter(std::move(name)), attribute_(std::move(attribute)), values_(std::move(values)), added_(added) {}
  bool up(step_context& ctx) const override;
  bool down(step_context& ctx) const override;

 private:
  bool check(step_context& ctx) const;
  std::string attribute_;
  std::vector<std::string> values_;
  bool added_;
};

/// An attribute whose default changed, or that became required (Concat's axis at 4): up, the
/// old default is written out when absent; down, the node must hold the old default, which is
/// then dropped.
class attribute_default_changed final : public adapter {
 public:
  attribute_default_changed(std::string name, std::string attribute, neutral_value old_default)
      : adapter(std::move(name)), attribute_(std::move(attribute)), old_default_(std::move(old_default)) {}
  bool up(step_context& ctx) const override;
  bool down(step_context& ctx) const override;

 private:
  std::string attribute_;
  neutral_value old_default_;
};

/// An `axis` (int) or `axes` (ints) attribute that accepts negative values from opset 11:
/// down, negative values are counted from the front with the rank of input 0 (plus the number
/// of axes for Unsqueeze, whose axes index the output).
class negative_axes final : public adapter {
 public:
  explicit negative_axes(std::string attribute) : adapter("negative-axes"), attribute_(std::move(attribute)) {}
  bool down(step_context& ctx) const override;

 private:
  std::string attribute_;
};

/// A change no adapter converts (Scan's batch axis at 9): both directions refuse.
class no_conversion final : public adapter {
 public:
  explicit no_conversion(std::string why) : adapter("no-conversion"), why_(std::move(why)) {}
  bool up(step_context& ctx) const override { ctx.refuse(why_); }
  bool down(step_context& ctx) const override { ctx.refuse(why_); }

 private:
  std::string why_;
};

}  // namespace inferopt::ir::opset
