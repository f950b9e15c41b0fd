#pragma once
/// The one hardware probe: which instruction-set extensions this CPU runs. Every kernel family
/// fills its dispatch config from it, once, instead of asking the CPU on its own (XNNPACK's
/// hardware config does the same for its microkernel configs).

namespace inferopt {

/// Extensions our kernels have builds for. A flag is set only when the operating system also
/// saves the registers the extension needs: libgcc's `__builtin_cpu_supports` checks XGETBV for
/// the ymm and zmm state. All false on other architectures and compilers, where the kernels run
/// their portable builds.
struct cpu_features {
  bool avx2 = false;
  bool fma = false;
  bool avx512f = false;
  bool avx512dq = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512vnni = false;  ///< u8 x s8 dot products into int32 (vpdpbusd), 512-bit
  bool avxvnni = false;     ///< the same, VEX-encoded (Alder Lake, Zen 5)

  /// What our AVX2 builds are compiled for: AVX2 and FMA.
  [[nodiscard]] constexpr bool has_avx2_fma() const noexcept { return avx2 && fma; }
  /// What our AVX-512 builds are compiled for: F, DQ, BW and VL (Skylake-SP and later), and FMA.
  [[nodiscard]] constexpr bool has_avx512_skx() const noexcept {
    return avx512f && avx512dq && avx512bw && avx512vl && fma;
  }
  /// Whether u8 x s8 products sum into int32 directly (either VNNI encoding).
  [[nodiscard]] constexpr bool has_vnni() const noexcept { return avx512vnni || avxvnni; }
};

/// Asks the CPU now. Prefer `cpu_features_of_this_machine`, which asks once.
[[nodiscard]] inline cpu_features probe_cpu_features() noexcept {
  cpu_features f;
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
  // Needed when the probe runs before libgcc's own constructor has (a static initializer).
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512dq = __builtin_cpu_supports("avx512dq");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  f.avx512vnni = __builtin_cpu_supports("avx512vnni");
  f.avxvnni = __builtin_cpu_supports("avxvnni");
#endif
  return f;
}

/// The features of the CPU this process runs on, probed on the first call. A function-local
/// static: thread-safe, and one object for every translation unit that includes this header.
[[nodiscard]] inline const cpu_features& cpu_features_of_this_machine() noexcept {
  static const cpu_features features = probe_cpu_features();
  return features;
}

}  // namespace inferopt
