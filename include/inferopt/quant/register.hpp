#pragma once
/// Adding the quantization passes to a registry.

#include "inferopt/pass/registry.hpp"

namespace inferopt {

/// Registers the quantization passes (`to-fp16`, ...). Each is declared in its own header
/// under `inferopt/quant/`.
void register_quant_passes(pass_registry& registry);

}  // namespace inferopt
