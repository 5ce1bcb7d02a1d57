// Winograd F(4x4, 3x3) convolution for float32 (Note [Winograd convolution]): 3x3, stride 1,
// undilated, ungrouped 2-D convolutions on contiguous (N, C, H, W) tensors, and through a
// flipped, transposed weight the input gradient of such a convolution. nn_conv.cpp decides
// when it runs (Note [Convolution algorithms]).
//
// Note [Winograd convolution]
// Each 4x4 block of output pixels (a tile) of one output channel k is
//     Y = A^T [ sum_c (G g_kc G^T) * (B^T d_c B) ] A
// where d_c is the 6x6 input patch of channel c under the tile (zeros where it is padding),
// g_kc the 3x3 kernel, * the elementwise product, and B^T (6x6), G (6x3), A^T (4x6) Lavin's
// matrices for the interpolation points 0, 1, -1, 2, -2, infinity. The 36 products per tile
// and channel replace 144 multiply-adds of the direct sum (4x fewer), at the price of the
// transforms and of rounding: entries of B^T d B are up to 100x those of d, and the worst
// error relative to the output's largest magnitude measured against PyTorch is a few 1e-6
// (benchmarks/bench_conv.py prints it per shape).
//
// The work is done per block of TB tiles (consecutive in (sample, tile row, tile column)
// order; the last block is padded with empty tiles):
//   1. input transform: for each channel, the patches of the block's tiles are gathered into
//      P[36][TB] (tiles along the vector lanes), then V[xi][c][t] = (B^T d B)[xi] a vector of
//      tiles at a time;
//   2. 36 products M[xi] = U[xi] V[xi] (U: the weights transformed once per call, in blocks
//      of MR output channels) by a register-tiled micro-kernel: MR output channels x NB tiles
//      of accumulators, the input channels as the inner loop;
//   3. output transform: A^T M A for each output channel and vector of tiles, plus the bias,
//      scattered into the output's 4x4 blocks (cropped at the bottom and right edges).
// Blocks are spread over the threads; with fewer blocks than threads the output channels of a
// block are split instead (each part transforms the block's input itself).
#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "core/parallel.h"
#include "kernels/cpu/conv/float_vec.h"
#include "kernels/cpu_stubs.h"
#include "ops/nn_conv.h"

namespace tp::cpu::TP_CPU_NS {

namespace {

#if TP_CPU_CAPABILITY >= 2
constexpr int VW = 16;  // floats per vector: 512-bit registers
constexpr int MR = 8;   // output channels per micro-kernel: 16 accumulators of 32
#else
constexpr int VW = 8;
constexpr int MR = 6;  // 12 accumulators of 16 ymm registers
#endif
constexpr int NV = 2;         // vectors of tiles per micro-kernel
constexpr int NB = NV * VW;   // tiles per micro-kernel
typedef FloatVec<VW>::type vf;

/// The six rows of B^T d for one column of d (d0..d5 the column's entries).
template <class V>
inline void input_rows(const V* d, V* r) {
  const V t1 = d[4] - 4 * d[2], t2 = d[3] - 4 * d[1];
  const V t3 = d[4] - d[2], t4 = 2 * (d[3] - d[1]);
  r[0] = 4 * d[0] - 5 * d[2] + d[4];
  r[1] = t1 + t2;
  r[2] = t1 - t2;
  r[3] = t3 + t4;
  r[4] = t3 - t4;
  r[5] = 4 * d[1] - 5 * d[3] + d[5];
}

/// The four rows of A^T m for one column of m (m0..m5).
template <class V>
inline void output_rows(const V* m, V* r) {
  const V a = m[1] + m[2], b = m[1] - m[2], c = m[3] + m[4], e = m[3] - m[4];
  r[0] = m[0] + a + c;
  r[1] = b + 2 * e;
  r[2] = a + 4 * c;
  r[3] = b + 8 * e + m[5];
}

/// The six rows of A m for one column of a 4x4 output-gradient block (m0..m3): A is the
/// transpose of output_rows' A^T (the weight gradient's transform, Note [Winograd weight
/// gradient]).
template <class V>
inline void gradient_rows(const V* m, V* r) {
  const V a = m[0] + m[2], b = m[1] + m[3], c = m[0] + 4 * m[2], e = 2 * m[1] + 8 * m[3];
  r[0] = m[0];
  r[1] = a + b;
  r[2] = a - b;
  r[3] = c + e;
  r[4] = c - e;
  r[5] = m[3];
}

/// U[xi][k / MR][c][k % MR] = (G g G^T)[xi] for output channel k and input channel c (zero for
/// the padding channels past K). g is w[k][c] (w: K x C x 3 x 3), or with `flipped` w[c][k]
/// rotated by 180 degrees (w: C x K x 3 x 3, the input gradient's kernels). The MR output
/// channels of a block are the lanes of one vector.
void transform_weights(const float* w, int64_t K, int64_t C, bool flipped, float* U) {
  typedef float v8 __attribute__((vector_size(32)));
  static_assert(MR <= 8);
  const int64_t KB = (K + MR - 1) / MR;
  parallel_for(0, KB * C, 16, [&](int64_t b, int64_t e) {
    for (int64_t u = b; u < e; ++u) {
      const int64_t kb = u / C, c = u % C;
      float gs[9][8] = {};
      for (int r = 0; r < MR && kb * MR + r < K; ++r) {
        const int64_t k = kb * MR + r;
        for (int ij = 0; ij < 9; ++ij) gs[ij][r] = flipped ? w[(c * K + k) * 9 + 8 - ij] : w[(k * C + c) * 9 + ij];
      }
      v8 g[9], t[6][3];
      for (int ij = 0; ij < 9; ++ij) std::memcpy(&g[ij], gs[ij], sizeof(v8));
      for (int j = 0; j < 3; ++j) {  // G g: rows 0..5 of column j
        const v8 g0 = g[j], g1 = g[3 + j], g2 = g[6 + j];
        t[0][j] = g0 * 0.25f;
        t[1][j] = (g0 + g1 + g2) * (-1.0f / 6);
        t[2][j] = (g0 - g1 + g2) * (-1.0f / 6);
        t[3][j] = g0 * (1.0f / 24) + g1 * (1.0f / 12) + g2 * (1.0f / 6);
        t[4][j] = g0 * (1.0f / 24) - g1 * (1.0f / 12) + g2 * (1.0f / 6);
        t[5][j] = g2;
      }
      for (int i = 0; i < 6; ++i) {  // (G g) G^T: columns 0..5 of row i
        const v8 a = t[i][0], b1 = t[i][1], c2 = t[i][2];
        const v8 row[6] = {a * 0.25f, (a + b1 + c2) * (-1.0f / 6), (a - b1 + c2) * (-1.0f / 6),
                           a * (1.0f / 24) + b1 * (1.0f / 12) + c2 * (1.0f / 6),
                           a * (1.0f / 24) - b1 * (1.0f / 12) + c2 * (1.0f / 6), c2};
        for (int j = 0; j < 6; ++j)
          std::memcpy(U + ((i * 6 + j) * KB + kb) * C * MR + c * MR, &row[j], MR * sizeof(float));
      }
    }
  });
}

/// m[r][v] = sum_c u[c][r] * v[c][t0 + v]: R output channels (R <= MR) x NB tiles.
template <int R>
inline void micro_kernel(const float* __restrict u, const float* __restrict v, int64_t C, int64_t tb,
                         float* __restrict m, int64_t ms) {
  vf a[R][NV];
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < NV; ++j) a[r][j] = vf{};
  for (int64_t c = 0; c < C; ++c) {
    vf x[NV];
    for (int j = 0; j < NV; ++j) x[j] = vload<vf>(v + c * tb + j * VW);
    for (int r = 0; r < R; ++r) {
      const vf b = vsplat<vf>(u[c * MR + r]);
      for (int j = 0; j < NV; ++j) a[r][j] += b * x[j];
    }
  }
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < NV; ++j) vstore(m + r * ms + j * VW, a[r][j]);
}

/// n floats of this thread's scratch buffer `which` (0-3), kept between calls: fresh pages for
/// every call cost more than the transforms of a small convolution.
float* scratch(int which, size_t n) {
  thread_local std::vector<float> bufs[4];
  if (bufs[which].size() < n) bufs[which].resize(n);
  return bufs[which].data();
}

struct Geom {
  int64_t n, c, k, h, w, oh, ow, pt, pl;  // input N x C x H x W, output N x K x OH x OW, padding top/left
  int64_t th, tw;                         // tiles per column / row
};

struct Tile {
  int64_t in, out;  // offsets of the patch's (0, 0) in channel 0 of x / of the tile's first output in y
  int64_t n;        // the sample
  int32_t ih, iw, oh, ow;
  bool inside;  // the whole 6x6 patch inside the input
};

/// Tiles [t0, t0 + nt) of the output grid, in (sample, tile row, tile column) order.
void fill_tiles(const Geom& G, int64_t t0, int64_t nt, Tile* tiles) {
  for (int64_t i = 0; i < nt; ++i) {
    const int64_t t = t0 + i, n = t / (G.th * G.tw), th = t / G.tw % G.th, tw = t % G.tw;
    Tile& tl = tiles[i];
    tl.oh = int32_t(th * 4);
    tl.ow = int32_t(tw * 4);
    tl.ih = int32_t(th * 4 - G.pt);
    tl.iw = int32_t(tw * 4 - G.pl);
    tl.inside = tl.ih >= 0 && tl.ih + 6 <= G.h && tl.iw >= 0 && tl.iw + 6 <= G.w;
    tl.n = n;
    tl.in = n * G.c * G.h * G.w + int64_t(tl.ih) * G.w + tl.iw;
    tl.out = n * G.k * G.oh * G.ow + int64_t(tl.oh) * G.ow + tl.ow;
  }
}

/// Planes whose padded copy (the tile grid's reach, PH x PW) holds at most this many floats
/// gather their border tiles from that copy (Note [Winograd gathers]).
constexpr int64_t kPaddedPlaneMax = 4096;

// Note [Winograd gathers]
// The transforms take the tiles a vector at a time (tiles along the lanes), so each tile's
// patch is first gathered into a buffer of 36 rows (16 for the output gradient's 4x4 blocks)
// of VW lanes. That buffer was once P[36][TB] for the whole block of TB tiles (36 KiB at TB =
// 256, past L1, its stores a cache line each; and the weight gradient zeroed it for every
// channel), and border tiles (whose patch crosses the padding) were gathered element by
// element with a bounds test each. On small planes every tile is a border tile (an 8x8 plane
// with padding 1 has four), and the gathers cost more than the products: the 64x32x8x8 -> 64
// 3x3 weight gradient took 1.8 ms, about 1.0 of it gathering. Now the buffer holds one vector
// of tiles (2.3 KiB at VW = 16), zeroed only where the block's last vector has fewer tiles, and
// planes up to kPaddedPlaneMax floats are copied once per (sample, channel) into a zero-padded
// PH x PW buffer that all their tiles lie inside. Larger planes keep the bounds tests at the
// border (their border tiles are few).

/// The zero-padded copy of planes for border tiles (Note [Winograd gathers]).
struct PaddedPlane {
  int64_t ph = 0, pw = 0, sample = -1;
  bool on = false;
  alignas(64) float q[kPaddedPlaneMax];

  explicit PaddedPlane(const Geom& G) : ph(G.th * 4 + 2), pw(G.tw * 4 + 2) {
    on = ph * pw <= kPaddedPlaneMax && G.pt >= 0 && G.pl >= 0;
  }
  /// Tile tl's patch (0, 0) in the copy of channel c's plane of x, copying it first if needed.
  const float* patch(const Geom& G, const float* x, int64_t c, const Tile& tl) {
    if (tl.n != sample) {
      std::fill_n(q, ph * pw, 0.0f);
      const float* plane = x + (tl.n * G.c + c) * G.h * G.w;
      const int64_t rows = std::min(G.h, ph - G.pt), cols = std::min(G.w, pw - G.pl);
      for (int64_t r = 0; r < rows; ++r) std::copy_n(plane + r * G.w, cols, q + (r + G.pt) * pw + G.pl);
      sample = tl.n;
    }
    return q + (tl.ih + G.pt) * pw + (tl.iw + G.pl);
  }
};

/// Channel c's input transform of the tiles: V[xi][c][t] = (B^T d B)[xi] for their 6x6 patches
/// d of x (zeros where padding; lanes past nt zero), a vector of tiles at a time.
void input_transform(const Geom& G, const float* x, const Tile* tiles, int64_t nt, int64_t c, int64_t TB,
                     float* V) {
  const int64_t C = G.c;
  PaddedPlane pad(G);
  alignas(64) float P[36 * VW];
  for (int64_t v0 = 0; v0 < TB; v0 += VW) {
    const int64_t lanes = std::clamp<int64_t>(nt - v0, 0, VW);
    if (lanes < VW) std::fill_n(P, 36 * VW, 0.0f);
    for (int64_t l = 0; l < lanes; ++l) {
      const Tile& tl = tiles[v0 + l];
      float* p = P + l;
      if (tl.inside || pad.on) {
        const float* src = tl.inside ? x + tl.in + c * G.h * G.w : pad.patch(G, x, c, tl);
        const int64_t rs = tl.inside ? G.w : pad.pw;
        for (int r = 0; r < 6; ++r)
          for (int q = 0; q < 6; ++q) p[(r * 6 + q) * VW] = src[r * rs + q];
      } else {
        const float* src = x + tl.in + c * G.h * G.w;
        for (int r = 0; r < 6; ++r) {
          const bool row_in = tl.ih + r >= 0 && tl.ih + r < G.h;
          for (int q = 0; q < 6; ++q)
            p[(r * 6 + q) * VW] = row_in && tl.iw + q >= 0 && tl.iw + q < G.w ? src[r * G.w + q] : 0.0f;
        }
      }
    }
    vf d[36], tmp[36];
    for (int q = 0; q < 36; ++q) d[q] = vload<vf>(P + q * VW);
    for (int j = 0; j < 6; ++j) {  // columns: B^T d
      vf col[6], r[6];
      for (int i = 0; i < 6; ++i) col[i] = d[i * 6 + j];
      input_rows(col, r);
      for (int i = 0; i < 6; ++i) tmp[i * 6 + j] = r[i];
    }
    for (int i = 0; i < 6; ++i) {  // rows: (B^T d) B
      vf r[6];
      input_rows(tmp + i * 6, r);
      for (int j = 0; j < 6; ++j) vstore(V + ((i * 6 + j) * C + c) * TB + v0, r[j]);
    }
  }
}

void winograd(const Geom& G, const float* x, const float* w, const float* bias, float* y, bool flipped) {
  const int64_t T = G.n * G.th * G.tw, C = G.c, K = G.k, KB = (K + MR - 1) / MR;
  const int threads = get_num_threads();
  // TB: V (36 x C x TB floats) within about 1 MiB, 1-4 micro-kernel widths, no wider than T
  int64_t TB = std::clamp<int64_t>((1 << 20) / (36 * 4 * C) / NB * NB, NB, 4 * NB);
  TB = std::min(TB, (T + NB - 1) / NB * NB);
  const int64_t blocks = (T + TB - 1) / TB;
  // with fewer blocks than threads, each block's output channels are split into parts
  const int64_t parts = std::min<int64_t>(KB, blocks >= threads ? 1 : (threads + blocks - 1) / blocks);
  const int64_t part_kb = (KB + parts - 1) / parts;
  float* U = scratch(0, size_t(36 * KB * C * MR));
  transform_weights(w, K, C, flipped, U);
  const int64_t out_plane = G.oh * G.ow;

  parallel_for(0, blocks * parts, 1, [&](int64_t ub, int64_t ue) {
    float* V = scratch(2, size_t(36 * C * TB));
    float* M = scratch(3, size_t(part_kb * MR * 36 * TB));
    std::vector<Tile> tiles(static_cast<size_t>(TB));
    float out_buf[16 * VW];
    for (int64_t u = ub; u < ue; ++u) {
      const int64_t blk = u / parts, part = u % parts;
      const int64_t kb0 = part * part_kb, kb1 = std::min(KB, kb0 + part_kb);
      if (kb0 >= kb1) continue;
      const int64_t t0 = blk * TB, nt = std::min(TB, T - t0);
      fill_tiles(G, t0, nt, tiles.data());
      // 1. input transform
      for (int64_t c = 0; c < C; ++c) input_transform(G, x, tiles.data(), nt, c, TB, V);
      // 2. the 36 products, M[k - kb0 * MR][xi][t]
      const int64_t ms = 36 * TB;
      for (int xi = 0; xi < 36; ++xi) {
        const float* vx = V + xi * C * TB;
        for (int64_t kb = kb0; kb < kb1; ++kb) {
          const float* ux = U + (xi * KB + kb) * C * MR;
          float* mx = M + ((kb - kb0) * MR * 36 + xi) * TB;
          const int64_t rows = std::min<int64_t>(MR, K - kb * MR);
          for (int64_t tt = 0; tt < TB; tt += NB) {
            if (rows == MR) micro_kernel<MR>(ux, vx + tt, C, TB, mx + tt, ms);
            else if (rows > MR / 2) micro_kernel<MR>(ux, vx + tt, C, TB, mx + tt, ms);  // zero weights past K
            else micro_kernel<MR / 2>(ux, vx + tt, C, TB, mx + tt, ms);
          }
        }
      }
      // 3. output transform
      for (int64_t k = kb0 * MR; k < std::min(K, kb1 * MR); ++k) {
        const float* mk = M + (k - kb0 * MR) * ms;
        const vf b = vsplat<vf>(bias ? bias[k] : 0.0f);
        for (int64_t v0 = 0; v0 < nt; v0 += VW) {
          vf tmp[24];
          for (int j = 0; j < 6; ++j) {  // columns: A^T m
            vf col[6], r[4];
            for (int i = 0; i < 6; ++i) col[i] = vload<vf>(mk + (i * 6 + j) * TB + v0);
            output_rows(col, r);
            for (int i = 0; i < 4; ++i) tmp[i * 6 + j] = r[i];
          }
          for (int i = 0; i < 4; ++i) {  // rows: (A^T m) A
            vf r[4];
            output_rows(tmp + i * 6, r);
            for (int j = 0; j < 4; ++j) vstore(out_buf + (i * 4 + j) * VW, r[j] + b);
          }
          for (int64_t l = 0; l < VW && v0 + l < nt; ++l) {
            const Tile& tl = tiles[size_t(v0 + l)];
            float* dst = y + tl.out + k * out_plane;
            const int rh = int(std::min<int64_t>(4, G.oh - tl.oh)), rw = int(std::min<int64_t>(4, G.ow - tl.ow));
            if (rh == 4 && rw == 4) {
              for (int i = 0; i < 4; ++i)
                for (int j = 0; j < 4; ++j) dst[i * G.ow + j] = out_buf[(i * 4 + j) * VW + l];
            } else {
              for (int i = 0; i < rh; ++i)
                for (int j = 0; j < rw; ++j) dst[i * G.ow + j] = out_buf[(i * 4 + j) * VW + l];
            }
          }
        }
      }
    }
  });
}

/// The geometry of the convolution g computes (transposed: its input gradient, a plain
/// convolution of gy padded by 2 - p).
Geom forward_geom(const conv::ConvShape& g, bool transposed = false) {
  Geom G;
  G.n = g.n;
  if (!transposed) {
    G.c = g.cin, G.k = g.cout, G.h = g.in[1], G.w = g.in[2], G.oh = g.out[1], G.ow = g.out[2];
    G.pt = g.p[1], G.pl = g.p[2];
  } else {
    G.c = g.cout, G.k = g.cin, G.h = g.out[1], G.w = g.out[2], G.oh = g.in[1], G.ow = g.in[2];
    G.pt = 2 - g.p[1], G.pl = 2 - g.p[2];
  }
  G.th = (G.oh + 3) / 4;
  G.tw = (G.ow + 3) / 4;
  return G;
}

void winograd_kernel(const conv::ConvShape& g, bool transposed, const float* in, const float* w, const float* bias,
                     float* out) {
  winograd(forward_geom(g, transposed), in, w, bias, out, transposed);
}

/// The weight gradient's transforms of output tiles [t0, t0 + nt) (Note [Winograd weight
/// gradient]): V[xi][c][t] = (B^T d_c B)[xi] of each tile's 6x6 input patch and Y[xi][k][t] =
/// (A dy_k A^T)[xi] of its 4x4 block of the output gradient (zeros past the output's edges),
/// TB tiles per row (a multiple of VW; lanes past nt are zero).
void winograd_weight_transforms(const conv::ConvShape& g, const float* x, const float* gy, int64_t t0,
                                int64_t nt, int64_t TB, float* V, float* Y) {
  const Geom G = forward_geom(g);
  const int64_t C = G.c, K = G.k, OH = G.oh, OW = G.ow;
  std::vector<Tile> tiles(static_cast<size_t>(nt));
  fill_tiles(G, t0, nt, tiles.data());
  // channels of the input (c < C), then of the output gradient (C + k)
  parallel_for(0, C + K, 1, [&](int64_t cb, int64_t ce) {
    alignas(64) float P[16 * VW];
    for (int64_t u = cb; u < ce; ++u) {
      if (u < C) {
        input_transform(G, x, tiles.data(), nt, u, TB, V);
        continue;
      }
      const int64_t k = u - C;
      for (int64_t v0 = 0; v0 < TB; v0 += VW) {
        // the 4x4 output-gradient blocks of a vector of tiles (zeros past the plane and past nt)
        const int64_t lanes = std::clamp<int64_t>(nt - v0, 0, VW);
        bool partial = lanes < VW;
        for (int64_t l = 0; l < lanes && !partial; ++l)
          partial = tiles[size_t(v0 + l)].oh + 4 > OH || tiles[size_t(v0 + l)].ow + 4 > OW;
        if (partial) std::fill_n(P, 16 * VW, 0.0f);
        for (int64_t l = 0; l < lanes; ++l) {
          const Tile& tl = tiles[size_t(v0 + l)];
          const float* src = gy + tl.out + k * OH * OW;
          const int rh = int(std::min<int64_t>(4, OH - tl.oh)), rw = int(std::min<int64_t>(4, OW - tl.ow));
          for (int r = 0; r < rh; ++r)
            for (int q = 0; q < rw; ++q) P[(r * 4 + q) * VW + l] = src[r * OW + q];
        }
        vf d[16], tmp[24];
        for (int q = 0; q < 16; ++q) d[q] = vload<vf>(P + q * VW);
        for (int j = 0; j < 4; ++j) {  // columns: A dy
          vf col[4], r[6];
          for (int i = 0; i < 4; ++i) col[i] = d[i * 4 + j];
          gradient_rows(col, r);
          for (int i = 0; i < 6; ++i) tmp[i * 4 + j] = r[i];
        }
        for (int i = 0; i < 6; ++i) {  // rows: (A dy) A^T
          vf r[6];
          gradient_rows(tmp + i * 4, r);
          for (int j = 0; j < 6; ++j) vstore(Y + ((i * 6 + j) * K + k) * TB + v0, r[j]);
        }
      }
    }
  });
}

}  // namespace

TP_REGISTER_CPU_KERNEL(conv_winograd_stub, &winograd_kernel);
TP_REGISTER_CPU_KERNEL(conv_winograd_weight_transforms_stub, &winograd_weight_transforms);

}  // namespace tp::cpu::TP_CPU_NS
