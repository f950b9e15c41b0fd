#pragma once
// The kernel configs of the CPU block-sparse GEMM: the one place that chooses its instruction
// set. As XNNPACK's src/configs/*-config.c do for their microkernels, every build's config
// (entry points, tile sizes, name) is filled once, from the one CPU probe
// (inferopt/core/cpu_features.hpp), and everything else only reads it.

#include <cstdint>

#include "inferopt/core/cpu_features.hpp"
#include "inferopt/sparse/bsr_gemm.hpp"
#include "inferopt/sparse/detail/bsr_gemm_avx2.hpp"
#include "inferopt/sparse/detail/bsr_gemm_avx512.hpp"
#include "inferopt/sparse/detail/bsr_gemm_isa.hpp"
#include "inferopt/sparse/detail/bsr_gemm_portable.hpp"

namespace inferopt::sparse::detail {

// One instruction-set build and whether it runs here.
struct bsr_gemm_config {
  cpu_isa isa = cpu_isa::portable;  // never automatic
  const char* name = "portable";    // to_string(isa)
  const char* needs = "";           // the extensions the CPU must have, for can_implement's reason
  bool built = false;               // compiled into this program (the AVX ones: GCC or Clang, x86-64)
  bool runs = false;                // built, and this CPU has `needs`
  std::int64_t panel_rows = 0;      // rows of X per packed panel: the workspace depends on it
  int tile_outputs = 0;             // outputs per register tile
  bsr_pack_fn pack = nullptr;       // null unless built
  bsr_compute_fn compute = nullptr;
};

// Every build for one machine.
struct bsr_gemm_configs {
  bsr_gemm_config portable;
  bsr_gemm_config avx2;
  bsr_gemm_config avx512;
  cpu_isa widest = cpu_isa::portable;  // what `automatic` runs: the widest build that runs

  // The build `isa` names, whether it runs or not (`automatic`: the widest).
  [[nodiscard]] const bsr_gemm_config& of(cpu_isa isa) const noexcept {
    switch (isa) {
      case cpu_isa::automatic: return of(widest);
      case cpu_isa::avx2: return avx2;
      case cpu_isa::avx512: return avx512;
      case cpu_isa::portable: break;
    }
    return portable;
  }
};

// The configs for a CPU with `cpu`'s features (a parameter, so that tests could ask for another
// CPU; everyone else reads bsr_gemm_configs_of_this_machine).
[[nodiscard]] inline bsr_gemm_configs make_bsr_gemm_configs(const cpu_features& cpu) noexcept {
  bsr_gemm_configs c;
  c.portable = {.isa = cpu_isa::portable, .name = "portable", .built = true, .runs = true,
                .panel_rows = bsr_portable::panel_rows, .tile_outputs = bsr_portable::tile_outputs,
                .pack = bsr_portable::pack, .compute = bsr_portable::compute};
  c.avx2 = {.isa = cpu_isa::avx2, .name = "avx2", .needs = "avx2 or fma",
            .panel_rows = bsr_avx2::panel_rows, .tile_outputs = bsr_avx2::tile_outputs};
  c.avx512 = {.isa = cpu_isa::avx512, .name = "avx512", .needs = "avx512f, dq, bw, vl or fma",
              .panel_rows = bsr_avx512::panel_rows, .tile_outputs = bsr_avx512::tile_outputs};
#if INFEROPT_SPARSE_X86_BUILDS
  c.avx2.built = true;
  c.avx2.runs = cpu.has_avx2_fma();
  c.avx2.pack = bsr_avx2::pack;
  c.avx2.compute = bsr_avx2::compute;
  c.avx512.built = true;
  c.avx512.runs = cpu.has_avx512_skx();
  c.avx512.pack = bsr_avx512::pack;
  c.avx512.compute = bsr_avx512::compute;
#else
  (void)cpu;
#endif
  c.widest = c.avx512.runs ? cpu_isa::avx512 : c.avx2.runs ? cpu_isa::avx2 : cpu_isa::portable;
  return c;
}

// This machine's configs, filled on the first call (a function-local static: thread-safe, one
// object for the whole program).
[[nodiscard]] inline const bsr_gemm_configs& bsr_gemm_configs_of_this_machine() noexcept {
  static const bsr_gemm_configs configs = make_bsr_gemm_configs(cpu_features_of_this_machine());
  return configs;
}

// The build a CPU run with `isa` uses: `automatic` the widest, a pinned build itself when it
// runs here, and otherwise the portable one, the one fallback (can_implement refuses a pinned
// build that does not run, so only workspace_bytes ever sees the fallback for it).
[[nodiscard]] inline const bsr_gemm_config& bsr_gemm_config_for(cpu_isa isa) noexcept {
  const bsr_gemm_configs& all = bsr_gemm_configs_of_this_machine();
  const bsr_gemm_config& c = all.of(isa);
  return c.runs ? c : all.portable;
}

}  // namespace inferopt::sparse::detail
