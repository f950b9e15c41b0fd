#pragma once
/// The reference CPU executor: sessions, feeds, output comparison, static memory plans.

#include "inferopt/runtime/compare.hpp"
#include "inferopt/runtime/graph_memory_plan.hpp"
#include "inferopt/runtime/inputs.hpp"
#include "inferopt/runtime/session.hpp"
#include "inferopt/runtime/tensor.hpp"
