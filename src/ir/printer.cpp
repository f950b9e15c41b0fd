#include "inferopt/ir/printer.hpp"

#include <sstream>

namespace inferopt::ir {
namespace {

std::string describe_type(const value& v) {
  if (!v.type()) return "";
  if (!v.type()->is_tensor) return ": <non-tensor>";
  return ": " + std::string(to_string(v.type()->elem_type)) + "[" + to_string(v.type()->dims) + "]";
}

template <class T>
void list(std::ostream& os, const std::vector<T>& xs) {
  os << '[';
  for (std::size_t k = 0; k < xs.size(); ++k) os << (k ? "," : "") << xs[k];
  os << ']';
}

void print(std::ostream& os, const graph& g, const std::string& indent) {
  os << indent << "graph " << g.name() << " (";
  for (std::size_t k = 0; k < g.inputs().size(); ++k) {
    const value& v = *g.inputs()[k];
    os << (k ? ", " : "") << '%' << v.name() << describe_type(v);
  }
  os << ")\n";
  for (value* v : g.initializers()) {
    if (!v->is_graph_input()) os << indent << "  const %" << v->name() << describe_type(*v) << '\n';
  }
  for (node* n : g.nodes()) {
    os << indent << "  ";
    for (std::size_t k = 0; k < n->outputs().size(); ++k) {
      os << (k ? ", " : "") << (n->outputs()[k] ? "%" + n->outputs()[k]->name() : "_");
    }
    os << " = " << (n->domain().empty() ? "" : n->domain() + ".") << n->op_type() << '(';
    for (std::size_t k = 0; k < n->inputs().size(); ++k) {
      os << (k ? ", " : "") << (n->inputs()[k] ? "%" + n->inputs()[k]->name() : "_");
    }
    os << ')';
    if (!n->attributes().empty()) {
      os << " {";
      bool first = true;
      for (const attribute& a : n->attributes()) {
        os << (first ? "" : ", ") << a.name << '=';
        first = false;
        switch (a.kind) {
          case attribute_kind::f: os << a.f; break;
          case attribute_kind::i: os << a.i; break;
          case attribute_kind::s: os << '"' << a.s << '"'; break;
          case attribute_kind::floats: list(os, a.floats); break;
          case attribute_kind::ints: list(os, a.ints); break;
          case attribute_kind::strings: list(os, a.strings); break;
          case attribute_kind::t:
            os << "tensor<" << to_string(a.tensors.at(0).dtype) << '>';
            break;
          case attribute_kind::g: os << "graph"; break;
          default: os << "..."; break;
        }
      }
      os << '}';
    }
    os << '\n';
    for (graph* sub : n->subgraphs()) print(os, *sub, indent + "    ");
  }
  os << indent << "  return ";
  for (std::size_t k = 0; k < g.outputs().size(); ++k) os << (k ? ", " : "") << '%' << g.outputs()[k]->name();
  os << '\n';
}

}  // namespace

std::string to_text(const graph& g) {
  std::ostringstream os;
  print(os, g, "");
  return os.str();
}

}  // namespace inferopt::ir
