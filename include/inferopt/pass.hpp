#pragma once
/// The pass module: the pass interface, registry, pipelines, manager, instrumentation and the
/// cleanup passes. It knows no other module's passes: the registry of every built-in pass and
/// the -O levels is inferopt/builtin.hpp, above all modules.

#include "inferopt/pass/cleanup/dead_node_elimination.hpp"
#include "inferopt/pass/cleanup/eliminate_dropout.hpp"
#include "inferopt/pass/cleanup/eliminate_identity.hpp"
#include "inferopt/pass/cleanup/remove_unused.hpp"
#include "inferopt/pass/fold_constants.hpp"
#include "inferopt/pass/infer_shapes.hpp"
#include "inferopt/pass/instrumentation.hpp"
#include "inferopt/pass/numeric_bisect.hpp"
#include "inferopt/pass/pass.hpp"
#include "inferopt/pass/pass_manager.hpp"
#include "inferopt/pass/pipeline.hpp"
#include "inferopt/pass/register.hpp"
#include "inferopt/pass/registry.hpp"
