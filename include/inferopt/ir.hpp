#pragma once
/// The IR module: models, graphs, nodes, values, loading/saving, verification, building, and
/// the graph queries and edits every module shares (constants, shapes, matrix operands,
/// bypassing a node, editing a shared constant for one reader, fresh names), and opset
/// conversion.

#include "inferopt/ir/attribute.hpp"
#include "inferopt/ir/constants.hpp"
#include "inferopt/ir/convert_opset.hpp"
#include "inferopt/ir/data_type.hpp"
#include "inferopt/ir/graph.hpp"
#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/ir/matrix_operands.hpp"
#include "inferopt/ir/model.hpp"
#include "inferopt/ir/name_allocator.hpp"
#include "inferopt/ir/node.hpp"
#include "inferopt/ir/printer.hpp"
#include "inferopt/ir/rewriting.hpp"
#include "inferopt/ir/sample_models.hpp"
#include "inferopt/ir/serialize.hpp"
#include "inferopt/ir/shape_inference.hpp"
#include "inferopt/ir/shape_rules.hpp"
#include "inferopt/ir/shapes.hpp"
#include "inferopt/ir/statistics.hpp"
#include "inferopt/ir/symbolic_dim.hpp"
#include "inferopt/ir/tensor.hpp"
#include "inferopt/ir/value.hpp"
#include "inferopt/ir/value_type.hpp"
#include "inferopt/ir/verify.hpp"
