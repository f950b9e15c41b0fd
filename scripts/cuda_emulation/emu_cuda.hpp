#pragma once
// A host emulation of the CUDA features the sparse module's kernels use, force-included before
// the kernels (after transform.py) so that they compile as plain C++ (see README.md).
//
// - A thread block is `blockDim.x` std::threads; __syncthreads is a std::barrier. Blocks run one
//   after another, so `static` stands in for __shared__.
// - cp.async copies land when waited for (the latest legal moment) and are checked for 16-byte
//   alignment; a group that is never waited for is an error.
// - wmma fragments hold the whole 16 x 16 tile; lane 0 of each warp does the work (the kernels
//   pass warp-uniform pointers). Loads and stores check wmma's alignment and ldm rules.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <barrier>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

struct emu_dim { unsigned x = 0, y = 0, z = 0; };
inline thread_local emu_dim threadIdx;
inline thread_local emu_dim blockIdx;
inline emu_dim gridDim;
inline emu_dim blockDim;
inline std::barrier<>* emu_barrier = nullptr;
inline void __syncthreads() { emu_barrier->arrive_and_wait(); }

#undef __global__
#undef __device__
#undef __forceinline__
#undef __launch_bounds__
#undef __shared__
#undef __align__
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(n) alignas(n)
#include <math.h>

inline void emu_check(bool ok, const char* what) {
  if (!ok) { std::fprintf(stderr, "EMU CHECK FAILED: %s\n", what); std::abort(); }
}
inline std::size_t __cvta_generic_to_shared(const void* p) { return reinterpret_cast<std::size_t>(p); }

struct emu_copy { void* dst; const void* src; int bytes; };
inline thread_local std::vector<std::vector<emu_copy>> emu_groups;
inline thread_local std::vector<emu_copy> emu_pending;
inline void emu_cp_async_16(void* dst, const void* src, int bytes) {
  emu_check(reinterpret_cast<std::uintptr_t>(dst) % 16 == 0, "cp.async dst alignment");
  emu_check(reinterpret_cast<std::uintptr_t>(src) % 16 == 0, "cp.async src alignment");
  emu_check(bytes >= 0 && bytes <= 16, "cp.async src bytes");
  emu_pending.push_back({dst, src, bytes});
}
inline void emu_commit() { emu_groups.push_back(emu_pending); emu_pending.clear(); }
inline void emu_wait(int pending) {
  // The most adversarial legal timing: a group lands only when waited for.
  while (static_cast<int>(emu_groups.size()) > pending) {
    for (const emu_copy& c : emu_groups.front()) {
      std::memcpy(c.dst, c.src, static_cast<std::size_t>(c.bytes));
      std::memset(static_cast<char*>(c.dst) + c.bytes, 0, static_cast<std::size_t>(16 - c.bytes));
    }
    emu_groups.erase(emu_groups.begin());
  }
}

namespace nvcuda::wmma {
struct row_major {};
struct col_major {};
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
enum layout_t { mem_row_major, mem_col_major };
template <class Use, int M, int N, int K, class T, class Layout = void>
struct fragment { float v[16][16]; };
inline bool lane0() { return threadIdx.x % 32 == 0; }
inline float to_float(__half h) { return __half2float(h); }
inline float to_float(__nv_bfloat16 h) { return __bfloat162float(h); }
template <class U, class T, class L>
void fill_fragment(fragment<U, 16, 16, 16, T, L>& f, float x) {
  if (!lane0()) return;
  for (auto& r : f.v) for (float& e : r) e = x;
}
template <class Use, class T>
void load_matrix_sync(fragment<Use, 16, 16, 16, T, row_major>& f, const T* p, unsigned ldm) {
  emu_check(reinterpret_cast<std::uintptr_t>(p) % 32 == 0, "wmma load alignment");
  emu_check(ldm % 8 == 0, "wmma load ldm");
  if (!lane0()) return;
  for (int r = 0; r < 16; ++r) for (int c = 0; c < 16; ++c) f.v[r][c] = to_float(p[r * ldm + c]);
}
template <class T>
void mma_sync(fragment<accumulator, 16, 16, 16, float>& d, const fragment<matrix_a, 16, 16, 16, T, row_major>& a,
              const fragment<matrix_b, 16, 16, 16, T, row_major>& b, const fragment<accumulator, 16, 16, 16, float>& c) {
  if (!lane0()) return;
  float t[16][16];
  for (int r = 0; r < 16; ++r)
    for (int n = 0; n < 16; ++n) {
      float s = c.v[r][n];
      for (int k = 0; k < 16; ++k) s += a.v[r][k] * b.v[k][n];
      t[r][n] = s;
    }
  std::memcpy(d.v, t, sizeof t);
}
inline void store_matrix_sync(float* p, const fragment<accumulator, 16, 16, 16, float>& f, unsigned ldm, layout_t l) {
  emu_check(reinterpret_cast<std::uintptr_t>(p) % 32 == 0, "wmma store alignment");
  emu_check(ldm % 4 == 0 && l == mem_row_major, "wmma store ldm");
  if (!lane0()) return;
  for (int r = 0; r < 16; ++r) for (int c = 0; c < 16; ++c) p[r * ldm + c] = f.v[r][c];
}
}  // namespace nvcuda::wmma

template <class F>
void emu_launch(unsigned grid, unsigned block, F&& body) {
  emu_check(grid > 0 && block > 0, "launch config");
  gridDim.x = grid;
  blockDim.x = block;
  for (unsigned b = 0; b < grid; ++b) {
    std::barrier<> bar(block);
    emu_barrier = &bar;
    std::vector<std::thread> threads;
    threads.reserve(block);
    for (unsigned t = 0; t < block; ++t) {
      threads.emplace_back([&body, b, t] {
        blockIdx.x = b;
        threadIdx.x = t;
        emu_groups.clear();
        emu_pending.clear();
        body();
        emu_check(emu_pending.empty(), "uncommitted copies at exit");
        for (auto& g : emu_groups) emu_check(g.empty(), "copies never waited for");
      });
    }
    for (auto& th : threads) th.join();
  }
}
