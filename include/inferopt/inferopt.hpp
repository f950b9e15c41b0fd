#pragma once
/// Everything of inferopt that has landed.

#include "inferopt/core/error.hpp"
#include "inferopt/ir.hpp"
#include "inferopt/pass.hpp"
