#pragma once
/// The pruning module: channel dependency groups, importance criteria, selection, the physical
/// cut and BatchNormalization recalibration, with `prune_model` composing them.

#include "inferopt/prune/apply_pruning.hpp"
#include "inferopt/prune/bn_recalibration.hpp"
#include "inferopt/prune/calibrated_block_sparsity.hpp"
#include "inferopt/prune/calibrated_pruning.hpp"
#include "inferopt/prune/channel_groups.hpp"
#include "inferopt/prune/group_sensitivity.hpp"
#include "inferopt/prune/importance.hpp"
#include "inferopt/prune/latency_model.hpp"
#include "inferopt/prune/latency_target.hpp"
#include "inferopt/prune/prune.hpp"
#include "inferopt/prune/pruning_plan.hpp"
