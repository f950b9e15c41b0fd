#pragma once
/// Forward declarations of the IR, for headers that only pass handles around.

namespace inferopt::ir {
class attribute;
class graph;
class model;
class node;
class tensor;
class value;
struct value_type;
}  // namespace inferopt::ir
