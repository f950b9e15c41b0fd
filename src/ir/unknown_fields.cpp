// Unknown fields must be well-formed: see unknown_fields.hpp.

#include "unknown_fields.hpp"

#include <string>
#include <vector>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/unknown_field_set.h>

#include "inferopt/core/error.hpp"
#include "inferopt/core/printable.hpp"

namespace inferopt::ir::detail {
namespace {

namespace pb = google::protobuf;

/// `number`: the field of `owner` the set lies in (0 at the top, where each field names itself).
void check_set(const pb::UnknownFieldSet& fields, const pb::Descriptor& owner, int number, int depth);

/// A length-delimited payload: text, or else a message (whose own fields are checked in turn).
/// Text first: a string that happens to parse as a message must not be judged as one.
void check_payload(const std::string& payload, int number, const pb::Descriptor& owner, int depth) {
  if (is_utf8(payload)) return;
  pb::UnknownFieldSet nested;
  if (depth < 32 && nested.ParseFromString(payload)) return check_set(nested, owner, number, depth + 1);
  throw error(errc::invalid_model, "field " + std::to_string(number) + " of " + owner.name() +
                                       " (unknown to this ONNX schema) is malformed: neither a message nor text");
}

void check_set(const pb::UnknownFieldSet& fields, const pb::Descriptor& owner, int number, int depth) {
  for (int i = 0; i < fields.field_count(); ++i) {
    const pb::UnknownField& f = fields.field(i);
    const int field = number != 0 ? number : f.number();
    if (f.type() == pb::UnknownField::TYPE_LENGTH_DELIMITED) check_payload(f.length_delimited(), field, owner, depth);
    if (f.type() == pb::UnknownField::TYPE_GROUP) check_set(f.group(), owner, field, depth + 1);
  }
}

}  // namespace

void check_unknown_fields(const pb::Message& m) {
  const pb::Reflection& r = *m.GetReflection();
  check_set(r.GetUnknownFields(m), *m.GetDescriptor(), 0, 0);
  std::vector<const pb::FieldDescriptor*> set;
  r.ListFields(m, &set);
  for (const pb::FieldDescriptor* f : set) {
    if (f->cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (!f->is_repeated()) {
      check_unknown_fields(r.GetMessage(m, f));
      continue;
    }
    for (int i = 0; i < r.FieldSize(m, f); ++i) check_unknown_fields(r.GetRepeatedMessage(m, f, i));
  }
}

}  // namespace inferopt::ir::detail
