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
#include <cstring>
#include <utility>
#include <vector>

#include "core/parallel.h"
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
typedef float vf __attribute__((vector_size(VW * sizeof(float))));

inline vf ld(const float* p) {
  vf v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void st(float* p, vf v) { std::memcpy(p, &v, sizeof v); }
/// x in every lane: a broadcast (`vf{} + x` would add 0 first, for -0.0, and broadcast from a
/// register, on the port the multiply-adds need).
template <size_t... I>
inline vf splat_lanes(float x, std::index_sequence<I...>) {
  return vf{((void)I, x)...};
}
inline vf splat(float x) { return splat_lanes(x, std::make_index_sequence<VW>{}); }

/// c[r][0, NB) = bias[r] (or 0) + sum_t wp[t][r] * src[off[t] + (0, NB)] for r < R (R <= MR
/// output channels; wp holds MR weights per tap).
template <int R>
void micro_kernel(const float* __restrict src, const int64_t* __restrict off, int64_t taps,
                  const float* __restrict wp, const float* bias, float* __restrict c, int64_t ldc) {
  vf a[R][NU];
  for (int r = 0; r < R; ++r) {
    const vf b = bias ? splat(bias[r]) : vf{};
    for (int u = 0; u < NU; ++u) a[r][u] = b;
  }
  for (int64_t t = 0; t < taps; ++t) {
    const float* s = src + off[t];
    vf x[NU];
    for (int u = 0; u < NU; ++u) x[u] = ld(s + u * VW);
    const float* w = wp + t * MR;
    for (int r = 0; r < R; ++r) {
      const vf b = splat(w[r]);
      for (int u = 0; u < NU; ++u) a[r][u] += b * x[u];
    }
  }
  for (int r = 0; r < R; ++r)
    for (int u = 0; u < NU; ++u) st(c + r * ldc + u * VW, a[r][u]);
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

/// n floats of this thread's scratch buffer `which`, kept between calls.
float* scratch(int which, size_t n) {
  thread_local std::vector<float> bufs[2];
  if (bufs[which].size() < n) bufs[which].resize(n);
  return bufs[which].data();
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
  const Source s = plan_source(G);
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
  std::vector<float> buf(s.view ? 0 : size_t(s.size));
  for (int64_t p = 0; p < pairs; ++p) {
    const float* src = input_of(p);
    if (!s.view) {
      fill_source(G, s, src, buf.data());
      src = buf.data();
    }
    parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
      run_blocks(G, s, src, weights_of(p), bias_of(p), output_of(p), b0, b1);
    });
  }
}

/// The forward (transposed = false) of the 1-D or 2-D convolution g, or the input gradient
/// (transposed: in = gy, out = gx) of a stride-1 one, whose padding is at most its kernel's
/// reach: out = conv(in, w) + bias (null: none). Row-major tensors.
void tiled_kernel(const conv::ConvShape& g, bool transposed, const float* in, const float* w, const float* bias,
                  float* out) {
  Geom G;
  G.n = g.n;
  G.groups = g.groups;
  G.kh = g.k[1];
  G.kw = g.k[2];
  G.sh = g.s[1];
  G.sw = g.s[2];
  G.dh = g.d[1];
  G.dw = g.d[2];
  if (!transposed) {
    G.ci = g.cin;
    G.co = g.cout;
    G.h = g.in[1];
    G.w = g.in[2];
    G.oh = g.out[1];
    G.ow = g.out[2];
    G.ph = g.p[1];
    G.pw = g.p[2];
  } else {  // a stride-1 convolution of gy, padded by the kernel's reach less the padding
    G.ci = g.cout;
    G.co = g.cin;
    G.h = g.out[1];
    G.w = g.out[2];
    G.oh = g.in[1];
    G.ow = g.in[2];
    G.ph = g.d[1] * (g.k[1] - 1) - g.p[1];
    G.pw = g.d[2] * (g.k[2] - 1) - g.p[2];
  }
  tiled_conv(G, in, w, transposed, bias, out);
}

}  // namespace

TP_REGISTER_CPU_KERNEL(conv_tiled_stub, &tiled_kernel);

}  // namespace tp::cpu::TP_CPU_NS
