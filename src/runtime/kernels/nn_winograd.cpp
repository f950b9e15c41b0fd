// Winograd F(2x2, 3x3): see nn_winograd.hpp. With
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]
//   G   = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]
//   A^T = [1 1 1 0; 0 1 -1 -1]
// an output tile is A^T [(G g G^T) .* (B^T d B)] A. The input transform walks one row of tiles
// at a time from a zero-padded copy of the 4 input rows it needs, so every load is in bounds
// and the loop over tiles vectorizes; the output transform likewise writes two output rows.

#include "nn_winograd.hpp"

#include <algorithm>
#include <vector>

#include "nn_gemm.hpp"

namespace inferopt::runtime::nn {

namespace {

constexpr int tile_positions = 16;  // 4x4

// A ResNet 14x14 map (49 tiles) still gains; a 7x7 map (16 tiles) leaves the GEMMs too small.
constexpr std::int64_t min_output_positions = 196;

struct tiling {
  std::int64_t h, w, oh, ow, pad_top, pad_left, tiles_h, tiles_w;
  [[nodiscard]] std::int64_t tiles() const { return tiles_h * tiles_w; }
};

tiling tiling_of(const window_geometry& g) {
  tiling t{g.in[0], g.in[1], g.out[0], g.out[1], g.pad_begin[0], g.pad_begin[1], (g.out[0] + 1) / 2, (g.out[1] + 1) / 2};
  return t;
}

// One loop per row of tiles. Every stream is a separate restrict parameter: with the 16
// streams behind one pointer the compiler cannot rule out overlap and does not vectorize.

/// V = B^T d B for the n tiles of a row: the even and odd padded columns of the 4 input rows
/// in, the 16 tile positions out.
void tile_row_input(const float* __restrict e0, const float* __restrict o0, const float* __restrict e1,
                    const float* __restrict o1, const float* __restrict e2, const float* __restrict o2,
                    const float* __restrict e3, const float* __restrict o3, float* __restrict v0,
                    float* __restrict v1, float* __restrict v2, float* __restrict v3, float* __restrict v4,
                    float* __restrict v5, float* __restrict v6, float* __restrict v7, float* __restrict v8,
                    float* __restrict v9, float* __restrict v10, float* __restrict v11, float* __restrict v12,
                    float* __restrict v13, float* __restrict v14, float* __restrict v15, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    // d B, input row by input row (d[r] = e_r[i], o_r[i], e_r[i+1], o_r[i+1]).
    const float a0 = e0[i] - e0[i + 1], a1 = o0[i] + e0[i + 1], a2 = e0[i + 1] - o0[i], a3 = o0[i] - o0[i + 1];
    const float b0 = e1[i] - e1[i + 1], b1 = o1[i] + e1[i + 1], b2 = e1[i + 1] - o1[i], b3 = o1[i] - o1[i + 1];
    const float c0 = e2[i] - e2[i + 1], c1 = o2[i] + e2[i + 1], c2 = e2[i + 1] - o2[i], c3 = o2[i] - o2[i + 1];
    const float d0 = e3[i] - e3[i + 1], d1 = o3[i] + e3[i + 1], d2 = e3[i + 1] - o3[i], d3 = o3[i] - o3[i + 1];
    // Then B^T (d B): rows r0 - r2, r1 + r2, r2 - r1, r1 - r3.
    v0[i] = a0 - c0;
    v1[i] = a1 - c1;
    v2[i] = a2 - c2;
    v3[i] = a3 - c3;
    v4[i] = b0 + c0;
    v5[i] = b1 + c1;
    v6[i] = b2 + c2;
    v7[i] = b3 + c3;
    v8[i] = c0 - b0;
    v9[i] = c1 - b1;
    v10[i] = c2 - b2;
    v11[i] = c3 - b3;
    v12[i] = b0 - d0;
    v13[i] = b1 - d1;
    v14[i] = b2 - d2;
    v15[i] = b3 - d3;
  }
}

/// y = bias + A^T M A for the n tiles of a row: the 16 tile positions in, the even and odd
/// columns of the two output rows out.
void tile_row_output(const float* __restrict p0, const float* __restrict p1, const float* __restrict p2,
                     const float* __restrict p3, const float* __restrict p4, const float* __restrict p5,
                     const float* __restrict p6, const float* __restrict p7, const float* __restrict p8,
                     const float* __restrict p9, const float* __restrict p10, const float* __restrict p11,
                     const float* __restrict p12, const float* __restrict p13, const float* __restrict p14,
                     const float* __restrict p15, float bias, float* __restrict top_even, float* __restrict top_odd,
                     float* __restrict bottom_even, float* __restrict bottom_odd, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    // A^T M: rows M0 + M1 + M2 and M1 - M2 - M3; then (A^T M) A the same way on columns.
    const float s00 = p0[i] + p4[i] + p8[i], s01 = p1[i] + p5[i] + p9[i], s02 = p2[i] + p6[i] + p10[i];
    const float s03 = p3[i] + p7[i] + p11[i];
    const float s10 = p4[i] - p8[i] - p12[i], s11 = p5[i] - p9[i] - p13[i], s12 = p6[i] - p10[i] - p14[i];
    const float s13 = p7[i] - p11[i] - p15[i];
    top_even[i] = bias + s00 + s01 + s02;
    top_odd[i] = bias + s01 - s02 - s03;
    bottom_even[i] = bias + s10 + s11 + s12;
    bottom_odd[i] = bias + s11 - s12 - s13;
  }
}

/// dst[k] = padded[2k + parity] for k < n, where padded is `src` (w values) shifted right by
/// `pad` zeros.
void deinterleave(const float* src, std::int64_t w, std::int64_t pad, std::int64_t parity, float* dst, std::int64_t n) {
  // Valid k: 0 <= 2k + parity - pad < w.
  const std::int64_t first = parity - pad;  // source index for k = 0
  const std::int64_t lo = std::min(n, first >= 0 ? 0 : (-first + 1) / 2);
  const std::int64_t hi = std::clamp<std::int64_t>(w - first <= 0 ? 0 : (w - first + 1) / 2, lo, n);
  std::fill(dst, dst + lo, 0.0f);
  const float* s = src + first + 2 * lo;
  for (std::int64_t k = 0; k < hi - lo; ++k) dst[lo + k] = s[2 * k];
  std::fill(dst + hi, dst + n, 0.0f);
}

/// V[c][p][tile] = (B^T d B)[p] for the 4x4 input tile d of every tile and channel c (one
/// channel's 16 rows together: the writes stay close).
void input_transform(const float* x, std::int64_t channels, const tiling& t, float* v, int threads) {
  // Tile tx reads padded columns 2tx..2tx+3 of padded rows 2ty..2ty+3: each padded row is
  // split once into its even and odd columns, so that every tile loop is unit-stride.
  const std::int64_t half = t.tiles_w + 1, n = t.tiles_w, tiles = t.tiles(), stride = tiles;
  const std::int64_t padded_rows = 2 * t.tiles_h + 2;
  detail::parallel_for(threads, channels, 1, [&](std::int64_t begin, std::int64_t end) {
    std::vector<float> split(static_cast<std::size_t>(padded_rows * 2 * half));
    for (std::int64_t c = begin; c < end; ++c) {
      const float* xc = x + c * t.h * t.w;
      for (std::int64_t r = 0; r < padded_rows; ++r) {
        float* even = split.data() + r * 2 * half;
        const std::int64_t ih = r - t.pad_top;
        if (ih < 0 || ih >= t.h) {
          std::fill(even, even + 2 * half, 0.0f);
          continue;
        }
        deinterleave(xc + ih * t.w, t.w, t.pad_left, 0, even, half);
        deinterleave(xc + ih * t.w, t.w, t.pad_left, 1, even + half, half);
      }
      for (std::int64_t ty = 0; ty < t.tiles_h; ++ty) {
        const float* r = split.data() + 2 * ty * 2 * half;  // padded rows 2ty..2ty+3, even then odd
        float* out = v + c * tile_positions * tiles + ty * t.tiles_w;
        tile_row_input(r, r + half, r + 2 * half, r + 3 * half, r + 4 * half, r + 5 * half, r + 6 * half, r + 7 * half,
                       out, out + stride, out + 2 * stride, out + 3 * stride, out + 4 * stride, out + 5 * stride,
                       out + 6 * stride, out + 7 * stride, out + 8 * stride, out + 9 * stride, out + 10 * stride,
                       out + 11 * stride, out + 12 * stride, out + 13 * stride, out + 14 * stride, out + 15 * stride, n);
      }
    }
  });
}

/// y[m] = act(bias[m] + residual[m] + A^T M A) for every tile, from M[m][p][tile].
void output_transform(const float* mt, std::int64_t out_channels, const tiling& t, const float* bias,
                      const epilogue<float>* ep, float* y, int threads) {
  const bool activates = ep && ep->act.kind != activation::identity;
  const std::int64_t n = t.tiles_w, tiles = t.tiles(), stride = tiles;
  detail::parallel_for(threads, out_channels, 1, [&](std::int64_t begin, std::int64_t end) {
    std::vector<float> halves(static_cast<std::size_t>(4 * n));  // even/odd columns of 2 rows
    for (std::int64_t m = begin; m < end; ++m) {
      const float b = bias ? bias[m] : 0.0f;
      float* ym = y + m * t.oh * t.ow;
      for (std::int64_t ty = 0; ty < t.tiles_h; ++ty) {
        const float* in = mt + m * tile_positions * tiles + ty * t.tiles_w;
        float* h = halves.data();
        tile_row_output(in, in + stride, in + 2 * stride, in + 3 * stride, in + 4 * stride, in + 5 * stride,
                        in + 6 * stride, in + 7 * stride, in + 8 * stride, in + 9 * stride, in + 10 * stride,
                        in + 11 * stride, in + 12 * stride, in + 13 * stride, in + 14 * stride, in + 15 * stride, b, h,
                        h + n, h + 2 * n, h + 3 * n, n);
        for (std::int64_t r = 0; r < 2 && 2 * ty + r < t.oh; ++r) {
          const float* even = h + 2 * r * n;
          const float* odd = even + n;
          float* dst = ym + (2 * ty + r) * t.ow;
          for (std::int64_t k = 0; 2 * k < t.ow; ++k) {
            dst[2 * k] = even[k];
            if (2 * k + 1 < t.ow) dst[2 * k + 1] = odd[k];
          }
          // The row was just written: finish it while it is in L1.
          if (ep && ep->residual) {
            const float* z = ep->residual + m * ep->ldr + (2 * ty + r) * t.ow;
            for (std::int64_t k = 0; k < t.ow; ++k) dst[k] += z[k];
          }
          if (activates) activate(ep->act, dst, t.ow);
        }
      }
    }
  });
}

}  // namespace

bool winograd_applies(const window_geometry& g) {
  if (g.rank() != 2) return false;
  for (std::size_t d = 0; d < 2; ++d) {
    if (g.kernel[d] != 3 || g.stride[d] != 1 || g.dilation[d] != 1) return false;
  }
  return g.out[0] * g.out[1] >= min_output_positions;
}

std::size_t winograd_packed_size(std::int64_t out_channels, std::int64_t in_channels) {
  return tile_positions * packed_size(out_channels, in_channels);
}

void winograd_pack(const float* w, std::int64_t out_channels, std::int64_t in_channels, float* out) {
  const std::int64_t count = out_channels * in_channels;
  float* transformed = scratch<float>(static_cast<std::size_t>(tile_positions * count), 0);
  for (std::int64_t k = 0; k < count; ++k) {
    const float* g = w + k * 9;
    // G g (4x3), in double, then (G g) G^T (4x4).
    double gg[4][3];
    for (int j = 0; j < 3; ++j) {
      gg[0][j] = g[j];
      gg[1][j] = 0.5 * (static_cast<double>(g[j]) + g[3 + j] + g[6 + j]);
      gg[2][j] = 0.5 * (static_cast<double>(g[j]) - g[3 + j] + g[6 + j]);
      gg[3][j] = g[6 + j];
    }
    for (int i = 0; i < 4; ++i) {
      const double v[4] = {gg[i][0], 0.5 * (gg[i][0] + gg[i][1] + gg[i][2]), 0.5 * (gg[i][0] - gg[i][1] + gg[i][2]), gg[i][2]};
      for (int j = 0; j < 4; ++j) transformed[(i * 4 + j) * count + k] = static_cast<float>(v[j]);
    }
  }
  const std::size_t matrix = packed_size(out_channels, in_channels);
  for (int p = 0; p < tile_positions; ++p) pack_weights(transformed + p * count, out_channels, in_channels, out + p * matrix);
}

void winograd_conv(const float* packed, std::int64_t out_channels, std::int64_t in_channels, const float* x,
                   const window_geometry& g, const float* bias, const epilogue<float>* ep, float* y, int threads) {
  const tiling t = tiling_of(g);
  const std::int64_t tiles = t.tiles(), m = out_channels, c = in_channels;
  const std::size_t matrix = packed_size(m, c);
  float* v = scratch<float>(static_cast<std::size_t>(tile_positions * c * tiles), 0);
  float* products = scratch<float>(static_cast<std::size_t>(tile_positions * m * tiles), 1);
  input_transform(x, c, t, v, threads);
  // The 16 products are independent: one per thread at a time.
  detail::parallel_for(threads, tile_positions, 1, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t p = begin; p < end; ++p) {
      gemm_packed(packed + p * matrix, m, c, tiles, v + p * tiles, tile_positions * tiles, nullptr, nullptr, nullptr, nullptr,
                  products + p * tiles, tile_positions * tiles, 1);
    }
  });
  output_transform(products, m, t, bias, ep, y, threads);
}

}  // namespace inferopt::runtime::nn
