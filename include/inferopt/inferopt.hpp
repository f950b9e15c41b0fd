#pragma once
/// Everything of inferopt that has landed.

#include "inferopt/core/error.hpp"
#include "inferopt/ir.hpp"
#include "inferopt/fusion.hpp"
#include "inferopt/pass.hpp"
#include "inferopt/runtime.hpp"
#include "inferopt/sparse.hpp"
