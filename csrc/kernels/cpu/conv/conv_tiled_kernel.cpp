// Register-tiled direct convolution for float32 (Note [Register-tiled convolution]): 1-D and
// 2-D convolutions of any stride, padding, dilation and groups on contiguous (N, C, H, W)
// tensors, and through a flipped, transposed weight the input gradient of stride-1 ones.
// nn_conv.cpp decides when it runs (Note [Convolution algorithms]).
//
// Note [Register-tiled convolution]
// A convolution is a matrix product y = W B per sample and group, W the (Cout, Cin * KH * KW)
// weights and B the im2col matrix, whose row for tap t = (ci, kh, kw) is the input plane ci
// shifted by the tap. Here B is never built: each sample's input is copied once into a
// buffer where every row of B is a contiguous run starting at its own offset off[t], so the
// micro-kernel reads B through off[] (an implicit GEMM):
//   - the planes are padded with zeros, and an output row is as long as a padded input row
//     (Wq): output (oh, ow) is flat column j = oh * Wq + ow, and tap (kh, kw) reads column
//     j + kh * dh * Wq + kw * dw. The Wq - OW columns past each output row are computed and
//     dropped: no row ends in a partial vector (3 of 58 columns for 3x3 on 56x56);
//   - with stride s the padded planes are split into s x s phase planes (rows and columns
//     r = s * r' + phase), so tap (kh, kw) reads phase ((kh * dh) % sh, (kw * dw) % sw) at
//     offset ((kh * dh) / sh) * Wq + (kw * dw) / sw: stride-2 outputs read consecutive
//     elements like stride-1 ones;
//   - a 1x1, stride-1, unpadded convolution reads the input itself (off[ci] = ci * H * W).
// The micro-kernel keeps MR output channels x NU vectors of output columns in registers
// (AVX-512: 8 x 3 x 16 floats; AVX2 and the baseline: 4 x 3 x 8 or 4), and per tap loads NU
// vectors of B and broadcasts MR weights (packed per block of MR output channels, tap-major):
// each loaded vector feeds MR multiply-adds, where the direct loops of conv_kernel.cpp feed
// one (an output channel at a time), and nothing is written but the outputs, where im2col +
// GEMM writes and reads the Cin * KH * KW x OH * OW columns first (7.2 MB per sample for
// 64 channels, 3x3 on 56x56). Threads take whole (sample, group) pairs; with fewer pairs
// than threads they split a pair's column blocks.
#include <algorithm>
#include <array>
#include <cstdint>
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
constexpr int MR = 8;   // output channels per micro-kernel: 24 accumulators of 32 registers
#elif TP_CPU_CAPABILITY == 1
constexpr int VW = 8;
constexpr int MR = 4;  // 12 accumulators of 16 ymm registers
#else
constexpr int VW = 4;
constexpr int MR = 4;  // 12 accumulators of 16 xmm registers
#endif
constexpr int NU = 3;        // vectors of output columns per micro-kernel
constexpr int NB = NU * VW;  // output columns per micro-kernel
typedef FloatVec<VW>::type vf;

/// c[r][0, NB) = bias[r] (or 0) + sum_t wp[t][r] * src[off[t] + (0, NB)] for r < R (R <= MR
/// output channels; wp holds MR weights per tap).
template <int R>
void micro_kernel(const float* __restrict src, const int64_t* __restrict off, int64_t taps,
                  const float* __restrict wp, const float* bias, float* __restrict c, int64_t ldc) {
  vf a[R][NU];
  for (int r = 0; r < R; ++r) {
    const vf b = bias ? vsplat<vf>(bias[r]) : vf{};
    for (int u = 0; u < NU; ++u) a[r][u] = b;
  }
  for (int64_t t = 0; t < taps; ++t) {
    const float* s = src + off[t];
    vf x[NU];
    for (int u = 0; u < NU; ++u) x[u] = vload<vf>(s + u * VW);
    const float* w = wp + t * MR;
    for (int r = 0; r < R; ++r) {
      const vf b = vsplat<vf>(w[r]);
      for (int u = 0; u < NU; ++u) a[r][u] += b * x[u];
    }
  }
  for (int r = 0; r < R; ++r)
    for (int u = 0; u < NU; ++u) vstore(c + r * ldc + u * VW, a[r][u]);
}

using MicroFn = void (*)(const float*, const int64_t*, int64_t, const float*, const float*, float*, int64_t);

template <int... R>
constexpr std::array<MicroFn, sizeof...(R)> micro_table(std::integer_sequence<int, R...>) {
  return {&micro_kernel<R + 1>...};
}
/// micro_kernels[R - 1]: the kernel of R output channels.
constexpr auto micro_kernels = micro_table(std::make_integer_sequence<int, MR>{});

/// The convolution this file computes: y (N, CO, OH, OW) = conv(x (N, CI, H, W), w) + bias,
/// w[co][ci % CIG][kh][kw] read through `weight` (the plain weight, or flipped and transposed).
struct Geom {
  int64_t n, ci, co, groups, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
  int64_t cig() const { return ci / groups; }
  int64_t cog() const { return co / groups; }
};

/// The geometry of convolution g (its 2-D slots), or with `transposed` of its input gradient
/// as a stride-1 convolution of gy, padded by the kernel's reach less the padding.
Geom geom_of(const conv::ConvShape& g, bool transposed) {
  Geom G;
  G.n = g.n;
  G.groups = g.groups;
  G.kh = g.k[1];
  G.kw = g.k[2];
  G.sh = g.s[1];
  G.sw = g.s[2];
  G.dh = g.d[1];
  G.dw = g.d[2];
  G.ci = transposed ? g.cout : g.cin;
  G.co = transposed ? g.cin : g.cout;
  const int64_t* in = transposed ? g.out : g.in;
  const int64_t* out = transposed ? g.in : g.out;
  G.h = in[1];
  G.w = in[2];
  G.oh = out[1];
  G.ow = out[2];
  G.ph = transposed ? g.d[1] * (g.k[1] - 1) - g.p[1] : g.p[1];
  G.pw = transposed ? g.d[2] * (g.k[2] - 1) - g.p[2] : g.p[2];
  return G;
}

/// Where the taps read one (sample, group): a copy of its CIG input planes, zero-padded and
/// split into sh x sw phase planes of Hq x Wq (Note [Register-tiled convolution]), or the
/// input itself (`view`).
struct Source {
  int64_t hq, wq, plane, per_channel, size;
  bool view;
  std::vector<int64_t> off;  // per tap (ci, kh, kw), ci-major
  std::vector<char> used;    // per phase plane (a * sw + b): whether a tap reads it
  int64_t cols;              // flat output columns: oh * wq
};

Source plan_source(const Geom& G) {
  Source s;
  s.view = G.kh == 1 && G.kw == 1 && G.sh == 1 && G.sw == 1 && G.ph == 0 && G.pw == 0;
  const int64_t hp = G.h + 2 * G.ph, wp = G.w + 2 * G.pw;
  s.hq = (hp + G.sh - 1) / G.sh;
  s.wq = (wp + G.sw - 1) / G.sw;
  s.plane = s.hq * s.wq;
  s.per_channel = s.plane * G.sh * G.sw;
  s.cols = G.oh * s.wq;
  s.off.resize(size_t(G.cig() * G.kh * G.kw));
  s.used.assign(size_t(G.sh * G.sw), 0);
  for (int64_t i = 0; i < G.kh; ++i)
    for (int64_t j = 0; j < G.kw; ++j) s.used[size_t((i * G.dh % G.sh) * G.sw + j * G.dw % G.sw)] = 1;
  int64_t most = 0;
  for (int64_t c = 0, t = 0; c < G.cig(); ++c)
    for (int64_t i = 0; i < G.kh; ++i)
      for (int64_t j = 0; j < G.kw; ++j, ++t) {
        const int64_t ri = i * G.dh, rj = j * G.dw;
        s.off[size_t(t)] = c * s.per_channel + ((ri % G.sh) * G.sw + rj % G.sw) * s.plane + (ri / G.sh) * s.wq + rj / G.sw;
        most = std::max(most, s.off[size_t(t)]);
      }
  // a copy also holds what the last column block reads past the planes (dropped columns)
  const int64_t blocks = (s.cols + NB - 1) / NB;
  s.size = std::max(G.cig() * s.per_channel, most + blocks * NB);
  return s;
}

/// row[q] = in[q * S + first] for q in [0, n): one phase of an input row (S = 0: stride s).
template <int S>
inline void gather_row(float* __restrict row, const float* __restrict in, int64_t first, int64_t n, int64_t s) {
  const float* src = in + first;
  if constexpr (S > 0)
    for (int64_t q = 0; q < n; ++q) row[q] = src[q * S];
  else
    for (int64_t q = 0; q < n; ++q) row[q] = src[q * s];
}

/// The copy of Source s of one (sample, group)'s input planes x (CIG x H x W).
void fill_source(const Geom& G, const Source& s, const float* x, float* buf) {
  std::fill(buf + G.cig() * s.per_channel, buf + s.size, 0.0f);
  // phase b's row: columns [lo[b], hi[b]) are the input's (iw = q * sw + b - pw), the rest zeros
  std::vector<int64_t> lo(size_t(G.sw)), hi(size_t(G.sw));
  for (int64_t b = 0; b < G.sw; ++b) {
    const int64_t last = G.w - 1 + G.pw - b;  // the last column's q times sw, if not negative
    lo[b] = std::min(s.wq, (G.pw - b + G.sw - 1) / G.sw);
    hi[b] = std::clamp<int64_t>(last < 0 ? 0 : last / G.sw + 1, lo[b], s.wq);
  }
  for (int64_t c = 0; c < G.cig(); ++c) {
    const float* plane = x + c * G.h * G.w;
    for (int64_t a = 0; a < G.sh; ++a)
      for (int64_t r = 0; r < s.hq; ++r) {
        const int64_t ih = r * G.sh + a - G.ph;
        for (int64_t b = 0; b < G.sw; ++b) {
          if (!s.used[size_t(a * G.sw + b)]) continue;  // (a 1x1 stride-2 convolution reads one phase of four)
          float* row = buf + c * s.per_channel + (a * G.sw + b) * s.plane + r * s.wq;
          if (ih < 0 || ih >= G.h) {
            std::fill_n(row, s.wq, 0.0f);
            continue;
          }
          const float* in = plane + ih * G.w;
          std::fill_n(row, lo[size_t(b)], 0.0f);
          const int64_t first = lo[b] * G.sw + b - G.pw, n = hi[b] - lo[b];  // iw of column lo[b]
          if (G.sw == 1) std::memcpy(row + lo[b], in + first, size_t(n) * sizeof(float));
          else if (G.sw == 2) gather_row<2>(row + lo[b], in, first, n, 2);
          else gather_row<0>(row + lo[b], in, first, n, G.sw);
          std::fill(row + hi[b], row + s.wq, 0.0f);
        }
      }
  }
}

/// wp[group][block][tap][MR]: the weights of each block of MR output channels, tap-major,
/// zero past the group's channels. `transposed`: w is the plain convolution's (CI x COG x
/// KH x KW) weight of the convolution whose input gradient G is (flipped and transposed).
std::vector<float> pack_weights(const Geom& G, const float* w, bool transposed) {
  const int64_t cog = G.cog(), cig = G.cig(), taps = cig * G.kh * G.kw, blocks = (cog + MR - 1) / MR;
  std::vector<float> wp(size_t(G.groups * blocks * taps * MR), 0.0f);
  for (int64_t g = 0; g < G.groups; ++g)
    for (int64_t o = 0; o < cog; ++o) {
      float* dst = wp.data() + ((g * blocks + o / MR) * taps) * MR + o % MR;
      const int64_t co = g * cog + o;
      for (int64_t c = 0, t = 0; c < cig; ++c)
        for (int64_t i = 0; i < G.kh; ++i)
          for (int64_t j = 0; j < G.kw; ++j, ++t) {
            // the transposed case: w[g * cig + c][o][KH - 1 - i][KW - 1 - j]
            const float v = transposed ? w[(((g * cig + c) * cog + o) * G.kh + G.kh - 1 - i) * G.kw + G.kw - 1 - j]
                                       : w[((co * cig + c) * G.kh + i) * G.kw + j];
            dst[t * MR] = v;
          }
    }
  return wp;
}

/// n floats of this thread's scratch buffer `which`, kept between calls, 64-byte aligned (a
/// vector load that straddles two cache lines costs two).
float* scratch(int which, size_t n) {
  thread_local std::vector<float> bufs[3];
  if (bufs[which].size() < n + 16) bufs[which].resize(n + 16);
  const uintptr_t p = reinterpret_cast<uintptr_t>(bufs[which].data());
  return bufs[which].data() + ((64 - p % 64) % 64) / sizeof(float);
}

/// Column blocks [b0, b1) of one (sample, group): src its Source's data, y its first output
/// channel's plane, bias its first output channel's (or null).
void run_blocks(const Geom& G, const Source& s, const float* src, const float* wp, const float* bias, float* y,
                int64_t b0, int64_t b1) {
  const int64_t cog = G.cog(), taps = int64_t(s.off.size()), mblocks = (cog + MR - 1) / MR;
  const int64_t oplane = G.oh * G.ow;
  float* tile = scratch(1, size_t(mblocks * MR * NB));
  // the view's last partial block reads a zero-padded copy of its columns
  std::vector<float> tail;
  std::vector<int64_t> tail_off;
  for (int64_t b = b0; b < b1; ++b) {
    const int64_t j0 = b * NB, n = std::min<int64_t>(NB, s.cols - j0);
    const float* bsrc = src + j0;
    const int64_t* off = s.off.data();
    if (s.view && n < NB) {
      tail.assign(size_t(taps * NB), 0.0f);
      tail_off.resize(size_t(taps));
      for (int64_t t = 0; t < taps; ++t) {
        std::memcpy(tail.data() + t * NB, src + s.off[size_t(t)] + j0, size_t(n) * sizeof(float));
        tail_off[size_t(t)] = t * NB;
      }
      bsrc = tail.data();
      off = tail_off.data();
    }
    const bool direct = s.wq == G.ow && n == NB;  // the block's columns are outputs, in order
    for (int64_t m = 0; m < mblocks; ++m) {
      const int64_t r = std::min<int64_t>(MR, cog - m * MR);
      float* c = direct ? y + m * MR * oplane + j0 : tile + m * MR * NB;
      micro_kernels[size_t(r - 1)](bsrc, off, taps, wp + m * taps * MR, bias ? bias + m * MR : nullptr, c,
                                   direct ? oplane : NB);
    }
    if (direct) continue;
    // flat columns [j0, j0 + n) to their pixels, dropping those past each output row
    for (int64_t j = j0; j < j0 + n;) {
      const int64_t oh = j / s.wq, ow = j - oh * s.wq, run = std::min(s.wq - ow, j0 + n - j);
      if (ow < G.ow) {
        const int64_t cnt = std::min(run, G.ow - ow);
        for (int64_t i = 0; i < cog; ++i)
          std::memcpy(y + i * oplane + oh * G.ow + ow, tile + i * NB + (j - j0), size_t(cnt) * sizeof(float));
      }
      j += run;
    }
  }
}

void tiled_conv(const Geom& G, const float* x, const float* w, bool transposed, const float* bias, float* y) {
  Source s = plan_source(G);
  // an input that is not 64-byte aligned (from_numpy's, a slice) is read through an aligned
  // copy: every vector load would straddle two cache lines (8x64x56x56 1x1: 2.0 vs 1.4 ms)
  if (reinterpret_cast<uintptr_t>(x) % 64 != 0) s.view = false;
  const std::vector<float> wp = pack_weights(G, w, transposed);
  const int64_t cog = G.cog(), taps = int64_t(s.off.size()), wblock = ((cog + MR - 1) / MR) * taps * MR;
  const int64_t blocks = (s.cols + NB - 1) / NB, pairs = G.n * G.groups;
  const int threads = get_num_threads();
  auto input_of = [&](int64_t p) { return x + p * G.cig() * G.h * G.w; };  // p = sample * groups + group
  auto output_of = [&](int64_t p) { return y + p * cog * G.oh * G.ow; };
  auto bias_of = [&](int64_t p) { return bias ? bias + (p % G.groups) * cog : nullptr; };
  auto weights_of = [&](int64_t p) { return wp.data() + (p % G.groups) * wblock; };
  if (pairs >= threads || blocks < 2) {
    parallel_for(0, pairs, 1, [&](int64_t pb, int64_t pe) {
      float* buf = s.view ? nullptr : scratch(0, size_t(s.size));
      for (int64_t p = pb; p < pe; ++p) {
        const float* src = input_of(p);
        if (!s.view) {
          fill_source(G, s, src, buf);
          src = buf;
        }
        run_blocks(G, s, src, weights_of(p), bias_of(p), output_of(p), 0, blocks);
      }
    });
    return;
  }
  float* buf = s.view ? nullptr : scratch(0, size_t(s.size));
  for (int64_t p = 0; p < pairs; ++p) {
    const float* src = input_of(p);
    if (!s.view) {
      fill_source(G, s, src, buf);
      src = buf;
    }
    parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
      run_blocks(G, s, src, weights_of(p), bias_of(p), output_of(p), b0, b1);
    });
  }
}

// ------------------------------------------------------------------ weight gradient
// (Note [Register-tiled convolution]) gw[co][t] = sum over samples and flat columns j of
// gy[co][j] * B[t][j], B read through the same Source as the forward, gy copied to the flat
// columns (zeros in the dropped ones). A micro-kernel holds RW output channels x UW taps of
// vector accumulators over a sample's columns; they are kept as vectors between samples (in
// V, per thread) and summed across their lanes once at the end: summing each sample's lanes
// cost as much as the products on 28x28 planes (3x3 stride 2: 10.9 ms vs 9.0 with im2col +
// GEMM, 1 thread).

#if TP_CPU_CAPABILITY >= 2
constexpr int RW = 4, UW = 6;  // 24 accumulators + 4 gy vectors + 1 of B: 29 of 32 registers
#else
constexpr int RW = 2, UW = 5;  // 10 + 2 + 1 of 16
#endif
constexpr int64_t kVBlock = int64_t(RW) * UW * VW;  // floats of V per (channel block, tap block)

/// v[r][u] (RW x UW vectors) += sum_j g[r * ldg + j] * src[off[u] + j] for r < R, u < U, j < cols
/// (a multiple of VW).
template <int R, int U>
void dot_kernel(const float* __restrict g, int64_t ldg, const float* __restrict src, const int64_t* __restrict off,
                int64_t cols, float* __restrict v) {
  vf a[R][U];
  for (int r = 0; r < R; ++r)
    for (int u = 0; u < U; ++u) a[r][u] = vload<vf>(v + (r * UW + u) * VW);
  const float* b[U];
  for (int u = 0; u < U; ++u) b[u] = src + off[u];
  for (int64_t j = 0; j < cols; j += VW) {
    vf gv[R];
    for (int r = 0; r < R; ++r) gv[r] = vload<vf>(g + r * ldg + j);
    for (int u = 0; u < U; ++u) {
      const vf x = vload<vf>(b[u] + j);
      for (int r = 0; r < R; ++r) a[r][u] += gv[r] * x;
    }
  }
  for (int r = 0; r < R; ++r)
    for (int u = 0; u < U; ++u) vstore(v + (r * UW + u) * VW, a[r][u]);
}

using DotFn = void (*)(const float*, int64_t, const float*, const int64_t*, int64_t, float*);

template <int R, int... U>
constexpr std::array<DotFn, sizeof...(U)> dot_row(std::integer_sequence<int, U...>) {
  return {&dot_kernel<R, U + 1>...};
}
template <int... R>
constexpr std::array<std::array<DotFn, UW>, sizeof...(R)> dot_table(std::integer_sequence<int, R...>) {
  return {dot_row<R + 1>(std::make_integer_sequence<int, UW>{})...};
}
/// dot_kernels[R - 1][U - 1]: the kernel of R output channels and U taps.
constexpr auto dot_kernels = dot_table(std::make_integer_sequence<int, RW>{});

/// gy's planes (COG x OH x OW) of one (sample, group) as flat columns (COG x cols), zeros past
/// each output row and up to cols (a multiple of VW).
void flatten_grad(const Geom& G, const Source& s, const float* gy, int64_t cols, float* dst) {
  for (int64_t o = 0; o < G.cog(); ++o) {
    float* row = dst + o * cols;
    const float* plane = gy + o * G.oh * G.ow;
    if (s.wq == G.ow) {
      std::memcpy(row, plane, size_t(G.oh * G.ow) * sizeof(float));
    } else {
      for (int64_t oh = 0; oh < G.oh; ++oh) {
        std::memcpy(row + oh * s.wq, plane + oh * G.ow, size_t(G.ow) * sizeof(float));
        std::fill_n(row + oh * s.wq + G.ow, s.wq - G.ow, 0.0f);
      }
    }
    std::fill(row + G.oh * s.wq, row + cols, 0.0f);
  }
}

/// Adds the products of one (sample, group) into its group's V (channel blocks x tap blocks x
/// kVBlock): src its Source's data, g its flat gradient (COG x cols); channel blocks [b0, b1).
void weight_pair(const Geom& G, const Source& s, const float* src, const float* g, int64_t cols, float* V,
                 int64_t b0, int64_t b1) {
  const int64_t taps = int64_t(s.off.size()), tblocks = (taps + UW - 1) / UW;
  for (int64_t ob = b0; ob < b1; ++ob) {
    const int64_t r = std::min<int64_t>(RW, G.cog() - ob * RW);
    for (int64_t tb = 0; tb < tblocks; ++tb) {
      const int64_t u = std::min<int64_t>(UW, taps - tb * UW);
      dot_kernels[size_t(r - 1)][size_t(u - 1)](g + ob * RW * cols, cols, src, s.off.data() + tb * UW, cols,
                                                 V + (ob * tblocks + tb) * kVBlock);
    }
  }
}

/// gw[group][o][t] += the lane sums of V's vectors (one V per group, channel blocks [b0, b1)).
void add_lane_sums(const Geom& G, int64_t taps, const float* V, float* gw, int64_t b0, int64_t b1) {
  const int64_t tblocks = (taps + UW - 1) / UW, ob_count = (G.cog() + RW - 1) / RW;
  for (int64_t grp = 0; grp < G.groups; ++grp)
    for (int64_t ob = b0; ob < b1; ++ob)
      for (int64_t tb = 0; tb < tblocks; ++tb) {
        const float* v = V + ((grp * ob_count + ob) * tblocks + tb) * kVBlock;
        for (int64_t r = 0; r < RW && ob * RW + r < G.cog(); ++r)
          for (int64_t u = 0; u < UW && tb * UW + u < taps; ++u) {
            const vf x = vload<vf>(v + (r * UW + u) * VW);
            float sum = 0;
            for (int i = 0; i < VW; ++i) sum += x[i];
            gw[(grp * G.cog() + ob * RW + r) * taps + tb * UW + u] += sum;
          }
      }
}

/// The weight gradient gw (contiguous, the plain weight's shape) of the 1-D or 2-D convolution
/// g from its input x and output gradient gy (row-major).
void tiled_weight_kernel(const conv::ConvShape& g, const float* x, const float* gy, float* gw) {
  const Geom G = geom_of(g, false);
  Source s = plan_source(G);
  s.view = false;  // the sums read whole vectors past the last column: always a padded copy
  const int64_t cols = (s.cols + VW - 1) / VW * VW, cog = G.cog(), taps = int64_t(s.off.size());
  const int64_t oblocks = (cog + RW - 1) / RW, tblocks = (taps + UW - 1) / UW;
  const int64_t vsize = G.groups * oblocks * tblocks * kVBlock, pairs = G.n * G.groups;
  const int threads = std::max(1, get_num_threads());
  std::fill_n(gw, G.co * taps, 0.0f);
  auto load = [&](int64_t p, float* buf, float* gbuf) {
    fill_source(G, s, x + p * G.cig() * G.h * G.w, buf);
    flatten_grad(G, s, gy + p * cog * G.oh * G.ow, cols, gbuf);
  };
  auto group_v = [&](float* V, int64_t p) { return V + (p % G.groups) * oblocks * tblocks * kVBlock; };
  if (pairs >= threads) {  // each thread its pairs, into its own V; the lane sums add up after
    std::vector<float> V(size_t(threads * vsize), 0.0f);
    parallel_for(0, threads, 1, [&](int64_t tb, int64_t te) {
      for (int64_t th = tb; th < te; ++th) {
        float* buf = scratch(0, size_t(s.size));
        float* gbuf = scratch(2, size_t(cog * cols));
        for (int64_t p = pairs * th / threads; p < pairs * (th + 1) / threads; ++p) {
          load(p, buf, gbuf);
          weight_pair(G, s, buf, gbuf, cols, group_v(V.data() + th * vsize, p), 0, oblocks);
        }
      }
    });
    for (int th = 0; th < threads; ++th) add_lane_sums(G, taps, V.data() + th * vsize, gw, 0, oblocks);
    return;
  }
  // fewer pairs than threads: the threads split each pair's channel blocks
  std::vector<float> V(size_t(vsize), 0.0f), buf(size_t(s.size)), gbuf(size_t(cog * cols));
  for (int64_t p = 0; p < pairs; ++p) {
    load(p, buf.data(), gbuf.data());
    parallel_for(0, oblocks, 1, [&](int64_t b0, int64_t b1) {
      weight_pair(G, s, buf.data(), gbuf.data(), cols, group_v(V.data(), p), b0, b1);
    });
  }
  add_lane_sums(G, taps, V.data(), gw, 0, oblocks);
}

// ------------------------------------------------------------------ channels last
// (Note [Register-tiled convolution]) With channels-last tensors the roles swap: an output
// pixel's channels are contiguous, so the micro-kernel keeps R pixels of an output row x U
// vectors of output channels in registers, and per tap (kh, kw, ci) loads U vectors of the
// packed weights (taps x output channels) and broadcasts the R pixels' input value. Pixels of
// a row are sw * C floats apart in the input, so a stride needs no phase planes and no column
// is computed to be dropped; padding is a zero-padded copy of the input (none when unpadded).
// The taps run in passes of kNhwcTaps, so their weights stay in the L1 cache while every pixel
// block of a row reads them (3x3 stride 2, 64 -> 128 channels, 1 thread: 8.2 -> 6.6 ms).

#if TP_CPU_CAPABILITY >= 2
constexpr int kPixU = 4;                      // vectors of output channels
constexpr int kPixR[kPixU] = {12, 12, 8, 6};  // pixels per micro-kernel, for U = 1..4
#else
constexpr int kPixU = 2;
constexpr int kPixR[kPixU] = {6, 6};  // 12 accumulators + 2 + 1 of 16 registers
#endif
constexpr int kPixMaxR = 12;
constexpr int64_t kNhwcTaps = 64;

/// c[r][u] = (accumulate ? c[r][u] : bias[u] or 0) + sum_t a[toff[t] + r * astride] *
/// w[t * ldw + u] (R pixels, U vectors of output channels).
template <int R, int U>
void pixel_kernel(const float* __restrict a, int64_t astride, const int64_t* __restrict toff, int64_t taps,
                  const float* __restrict w, int64_t ldw, const float* bias, bool accumulate, float* __restrict c,
                  int64_t ldc) {
  vf acc[R][U];
  for (int u = 0; u < U; ++u) {
    const vf b = bias ? vload<vf>(bias + u * VW) : vf{};
    for (int r = 0; r < R; ++r) acc[r][u] = accumulate ? vload<vf>(c + r * ldc + u * VW) : b;
  }
  for (int64_t t = 0; t < taps; ++t) {
    const float* s = a + toff[t];
    const float* wt = w + t * ldw;
    vf wv[U];
    for (int u = 0; u < U; ++u) wv[u] = vload<vf>(wt + u * VW);
    for (int r = 0; r < R; ++r) {
      const vf b = vsplat<vf>(s[r * astride]);
      for (int u = 0; u < U; ++u) acc[r][u] += b * wv[u];
    }
  }
  for (int r = 0; r < R; ++r)
    for (int u = 0; u < U; ++u) vstore(c + r * ldc + u * VW, acc[r][u]);
}

using PixelFn = void (*)(const float*, int64_t, const int64_t*, int64_t, const float*, int64_t, const float*, bool,
                         float*, int64_t);

template <int U, int... R>
constexpr std::array<PixelFn, kPixMaxR> pixel_row(std::integer_sequence<int, R...>) {
  return {(R + 1 <= kPixR[U - 1] ? &pixel_kernel<(R + 1 <= kPixR[U - 1] ? R + 1 : 1), U> : nullptr)...};
}
template <int... U>
constexpr std::array<std::array<PixelFn, kPixMaxR>, kPixU> pixel_table(std::integer_sequence<int, U...>) {
  return {pixel_row<U + 1>(std::make_integer_sequence<int, kPixMaxR>{})...};
}
/// pixel_kernels[U - 1][R - 1]: the kernel of R pixels and U vectors (R <= kPixR[U - 1]).
constexpr auto pixel_kernels = pixel_table(std::make_integer_sequence<int, kPixU>{});

/// The forward of the channels-last convolution G (groups 1), or with `transposed` its stride-1
/// input gradient (G already the transposed geometry): y = conv(x, w) + bias, x and y dense
/// channels last, w the plain weight, row-major.
void tiled_conv_nhwc(const Geom& G, const float* x, const float* w, bool transposed, const float* bias, float* y) {
  const int64_t C = G.ci, K = G.co, taps = G.kh * G.kw * C;
  const int64_t kpad = (K + VW - 1) / VW * VW;
  // weights as (kh, kw, ci) x output channels, zero past K; bias likewise
  std::vector<float> wp(size_t(taps * kpad), 0.0f), bp(size_t(kpad), 0.0f);
  for (int64_t o = 0; o < K; ++o)
    for (int64_t i = 0; i < G.kh; ++i)
      for (int64_t j = 0; j < G.kw; ++j)
        for (int64_t c = 0; c < C; ++c)
          wp[size_t(((i * G.kw + j) * C + c) * kpad + o)] =
              transposed ? w[((c * K + o) * G.kh + G.kh - 1 - i) * G.kw + G.kw - 1 - j]
                         : w[((o * C + c) * G.kh + i) * G.kw + j];
  if (bias) std::copy(bias, bias + K, bp.begin());
  // the input, zero-padded (itself when unpadded)
  const int64_t hp = G.h + 2 * G.ph, wpd = G.w + 2 * G.pw;
  std::vector<float> padded;
  const float* src = x;
  if (G.ph || G.pw) {
    padded.assign(size_t(G.n * hp * wpd * C), 0.0f);
    parallel_for(0, G.n * G.h, 16, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t n = r / G.h, ih = r % G.h;
        std::memcpy(padded.data() + ((n * hp + ih + G.ph) * wpd + G.pw) * C, x + r * G.w * C,
                    size_t(G.w * C) * sizeof(float));
      }
    });
    src = padded.data();
  }
  std::vector<int64_t> toff(static_cast<size_t>(taps));
  for (int64_t i = 0, t = 0; i < G.kh; ++i)
    for (int64_t j = 0; j < G.kw; ++j)
      for (int64_t c = 0; c < C; ++c, ++t) toff[size_t(t)] = (i * G.dh * wpd + j * G.dw) * C + c;
  const int64_t astride = G.sw * C, cv = kpad / VW;
  parallel_for(0, G.n * G.oh, 1, [&](int64_t r0, int64_t r1) {
    float* rowtile = scratch(0, size_t(G.ow * kPixU * VW));
    for (int64_t row = r0; row < r1; ++row) {
      const int64_t n = row / G.oh, oh = row % G.oh;
      const float* a_row = src + (n * hp + oh * G.sh) * wpd * C;
      float* y_row = y + row * G.ow * K;
      for (int64_t v0 = 0; v0 < cv; v0 += kPixU) {
        const int64_t u = std::min<int64_t>(kPixU, cv - v0), co = v0 * VW, rmax = kPixR[u - 1];
        const bool whole = co + u * VW <= K;  // else the block's last vector is partly padding
        float* c0 = whole ? y_row + co : rowtile;
        const int64_t ldc = whole ? K : u * VW;
        for (int64_t t0 = 0; t0 < taps; t0 += kNhwcTaps) {
          const int64_t tn = std::min(kNhwcTaps, taps - t0);
          for (int64_t ow = 0; ow < G.ow; ow += rmax) {
            const int64_t r = std::min(rmax, G.ow - ow);
            pixel_kernels[size_t(u - 1)][size_t(r - 1)](a_row + ow * astride, astride, toff.data() + t0, tn,
                                                        wp.data() + t0 * kpad + co, kpad,
                                                        bias && t0 == 0 ? bp.data() + co : nullptr, t0 > 0,
                                                        c0 + ow * ldc, ldc);
          }
        }
        if (!whole)
          for (int64_t i = 0; i < G.ow; ++i)
            std::memcpy(y_row + i * K + co, rowtile + i * u * VW, size_t(K - co) * sizeof(float));
      }
    }
  });
}

/// The forward (transposed = false) of the 1-D or 2-D convolution g, or the input gradient
/// (transposed: in = gy, out = gx) of a stride-1 one, whose padding is at most its kernel's
/// reach: out = conv(in, w) + bias (null: none). Row-major tensors, or dense channels-last
/// ones (groups 1); w row-major.
void tiled_kernel(const conv::ConvShape& g, bool transposed, bool channels_last, const float* in, const float* w,
                  const float* bias, float* out) {
  const Geom G = geom_of(g, transposed);
  if (channels_last) return tiled_conv_nhwc(G, in, w, transposed, bias, out);
  tiled_conv(G, in, w, transposed, bias, out);
}

}  // namespace

TP_REGISTER_CPU_KERNEL(conv_tiled_stub, &tiled_kernel);
TP_REGISTER_CPU_KERNEL(conv_tiled_weight_stub, &tiled_weight_kernel);

}  // namespace tp::cpu::TP_CPU_NS
