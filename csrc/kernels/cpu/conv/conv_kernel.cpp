// The convolutions' CPU loops: the direct convolutions (depthwise and small ones, Note [Direct
// convolution taps]), im2col / col2im of the GEMM paths (rows of pixels for channels-last
// tensors), and the bias and its gradient. Compiled once per CPU capability level;
// nn_conv.cpp calls them through the conv stubs.
//
// Note [Direct convolution taps]
// An output plane of a convolution is a sum of taps: tap t adds w_t times the input read at
// offset off_t + o * s from the output row's start; output channel co's taps run over the
// input channels of its group and the kernel positions. The planes that are read are first
// copied with zero rows and columns where the padding needs them (`Padded`), so every tap of
// every row reads inside the copy and no loop checks bounds: a 2-D output plane has one tap
// list for all its rows (a 3-D one, per output depth). `add_taps` runs up to nine taps over a
// block of rows, each row one vector pass with the weights in registers. With stride 1 and a
// width that is not a whole number of vectors, a plane's rows run as one long row over the
// padded width (the columns past the output width are computed and dropped), so no row ends
// in a scalar tail. The input gradient (a transposed convolution) is the same loop over the
// flipped kernel reading gy; the weight gradient is the adjoint: `dot_taps` sums grad times
// shifted input into one vector accumulator per tap, held in registers over the plane.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "kernels/cpu/conv/float_vec.h"
#include "kernels/cpu_stubs.h"
#include "ops/nn_conv.h"
#include "ops/nn_rows.h"

namespace tp::cpu::TP_CPU_NS {

namespace {

using conv::ConvShape;

/// Output columns ow in [lo, hi) (within [0, out)) read input column ow * s + off inside [0, in).
inline void valid_range(int64_t out, int64_t in, int64_t off, int64_t s, int64_t& lo, int64_t& hi) {
  lo = off >= 0 ? 0 : (-off + s - 1) / s;
  hi = in - off > 0 ? (in - off + s - 1) / s : 0;
  lo = std::min(lo, out);
  hi = std::max(lo, std::min(hi, out));
}

/// Calls f(orow, base): for each output row (od, oh) whose input row (id, ih) for kernel
/// position (kd, kh, kw) exists, with the output row's offset and the input row's offset
/// plus kw's column shift (kw * d - p along dim 2).
template <class F>
inline void for_each_row(const ConvShape& g, int64_t kd, int64_t kh, int64_t kw, F f) {
  for (int64_t od = 0; od < g.out[0]; ++od) {
    int64_t id = od * g.s[0] - g.p[0] + kd * g.d[0];
    if (id < 0 || id >= g.in[0]) continue;
    for (int64_t oh = 0; oh < g.out[1]; ++oh) {
      int64_t ih = oh * g.s[1] - g.p[1] + kh * g.d[1];
      if (ih < 0 || ih >= g.in[1]) continue;
      f((od * g.out[1] + oh) * g.out[2], (id * g.in[1] + ih) * g.in[2] + kw * g.d[2] - g.p[2]);
    }
  }
}

// ------------------------------------------------------------------ direct convolutions

/// Partial sums per weight-gradient accumulator: a vector's lanes for float types.
template <class T>
constexpr int kAccLanes = std::is_floating_point_v<T> ? rows::kLanes<T> : 1;

/// `planes` consecutive planes of depth x rows x w, read through a copy with zero rows above
/// and below and zero columns left and right where any of those is positive (the planes
/// themselves otherwise).
template <class T>
class Padded {
 public:
  Padded(int64_t planes, int64_t depth, int64_t rows, int64_t w, int64_t top, int64_t bottom, int64_t left,
         int64_t right)
      : planes_(planes), depth_(depth), rows_(rows), w_(w), top_(top), left_(left), height_(top + rows + bottom),
        width_(left + w + right) {
    if (top > 0 || bottom > 0 || left > 0 || right > 0)
      buf_.assign(static_cast<size_t>(planes * depth * height_ * width_), T(0));
  }
  /// The first `count` (default: all) padded planes of `src`: depth x height() x width()
  /// each, plane() apart.
  const T* of(const T* src, int64_t count = -1) {
    if (buf_.empty()) return src;
    for (int64_t d = 0; d < (count < 0 ? planes_ : count) * depth_; ++d)
      for (int64_t r = 0; r < rows_; ++r)
        rows::copy_short(buf_.data() + (d * height_ + top_ + r) * width_ + left_, src + (d * rows_ + r) * w_, w_);
    return buf_.data();
  }
  int64_t plane() const { return depth_ * height_ * width_; }
  int64_t height() const { return height_; }
  int64_t width() const { return width_; }
  int64_t top() const { return top_; }
  int64_t left() const { return left_; }

 private:
  int64_t planes_, depth_, rows_, w_, top_, left_, height_, width_;
  std::vector<T> buf_;
};

/// A tap list: offsets into the (padded) input and weight positions (slots: also the
/// weight-gradient accumulators), with the weights of up to two outputs that share it.
template <class T>
struct Taps {
  std::vector<int64_t> off, slot;
  std::vector<T> w;  // two rows of cap
  int64_t n = 0, cap;
  explicit Taps(int64_t k) : off(size_t(k)), slot(size_t(k)), w(size_t(2 * k)), cap(k) {}
  void add(int64_t o, int64_t s) {
    off[size_t(n)] = o;
    slot[size_t(n++)] = s;
  }
  /// Output c's weights: base[slot] for each tap.
  void weigh(int c, const T* base) {
    for (int64_t t = 0; t < n; ++t) w[size_t(c * cap + t)] = base[slot[size_t(t)]];
  }
  const T* weights(int c) const { return w.data() + c * cap; }
};

/// out[r * os + o] += sum_m w[m] * in[r * is + off[m] + o * s] for r < rows, o < n. Out of
/// line, as dot_taps: inlined into the loops over units and planes, GCC's AVX-512 code kept
/// the tap pointers in vector registers and moved one out for each multiply-add.
template <class T, int M>
[[gnu::noinline]] void add_taps(T* out, int64_t os, const T* in, int64_t is, const int64_t* off, const T* w,
                                int64_t rows, int64_t n, int64_t s) {
  int64_t done = 0;  // columns the vector loop covers
  if constexpr (std::is_floating_point_v<T>) {
    constexpr int W = rows::kLanes<T>;
    if (s == 1) {
      done = n / W * W;
      rows::Vec<T> wv[M];
      for (int m = 0; m < M; ++m) wv[m] = rows::splat(w[m]);
      for (int64_t r = 0; r < rows; ++r) {
        T* o_row = out + r * os;
        const T* src[M];
        for (int m = 0; m < M; ++m) src[m] = in + r * is + off[m];
        for (int64_t o = 0; o < done; o += W) {  // two partial sums: half the dependent chain
          rows::Vec<T> a0 = rows::load(o_row + o), a1 = rows::splat(T(0));
          for (int m = 0; m < M; ++m) (m % 2 ? a1 : a0) += wv[m] * rows::load(src[m] + o);
          rows::store(o_row + o, a0 + a1);
        }
      }
    }
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = done; o < n; ++o) {
      T a = out[r * os + o];
      for (int m = 0; m < M; ++m) a += w[m] * in[r * is + off[m] + o * s];
      out[r * os + o] = a;
    }
}

/// add_taps over a whole tap list (output 0's weights), up to nine taps per pass.
template <class T>
void run_short(T* out, int64_t os, const T* in, int64_t is, const Taps<T>& taps, int64_t rows, int64_t n, int64_t s) {
  const T* w = taps.weights(0);
  int64_t t = 0;
  for (; t + 9 <= taps.n; t += 9) add_taps<T, 9>(out, os, in, is, &taps.off[t], w + t, rows, n, s);
  for (; t + 3 <= taps.n; t += 3) add_taps<T, 3>(out, os, in, is, &taps.off[t], w + t, rows, n, s);
  for (; t < taps.n; ++t) add_taps<T, 1>(out, os, in, is, &taps.off[t], w + t, rows, n, s);
}

/// out[c][o] += sum_t w[c][t] * in[off[t] + o] for c < C and the V vectors of o from o0:
/// the accumulators stay in registers over every tap (C outputs share each input load).
template <class T, int C, int V>
inline void block_chunk(T* const* out, const T* in, const int64_t* off, const T* const* w, int64_t nt, int64_t o0) {
  constexpr int W = rows::kLanes<T>;
  rows::Vec<T> a[C][V];
  for (int c = 0; c < C; ++c)
    for (int v = 0; v < V; ++v) a[c][v] = rows::load(out[c] + o0 + v * W);
  for (int64_t t = 0; t < nt; ++t) {
    const T* p = in + off[t] + o0;
    rows::Vec<T> xv[V];
    for (int v = 0; v < V; ++v) xv[v] = rows::load(p + v * W);
    for (int c = 0; c < C; ++c) {
      const rows::Vec<T> wv = rows::splat(w[c][t]);
      for (int v = 0; v < V; ++v) a[c][v] += wv * xv[v];
    }
  }
  for (int c = 0; c < C; ++c)
    for (int v = 0; v < V; ++v) rows::store(out[c] + o0 + v * W, a[c][v]);
}

/// out[c][o] += sum_t w[c][t] * in[off[t] + o] for c < C, o < n (stride 1): C outputs sharing
/// one long tap list (Note [Direct convolution taps]).
template <class T, int C>
void block_taps(T* const* out, const T* in, const int64_t* off, const T* const* w, int64_t nt, int64_t n) {
  int64_t o = 0;
  if constexpr (std::is_floating_point_v<T>) {
    constexpr int W = rows::kLanes<T>;
    for (; o + 4 * W <= n; o += 4 * W) block_chunk<T, C, 4>(out, in, off, w, nt, o);
    for (; o + W <= n; o += W) block_chunk<T, C, 1>(out, in, off, w, nt, o);
  }
  for (; o < n; ++o)
    for (int c = 0; c < C; ++c) {
      T a = out[c][o];
      for (int64_t t = 0; t < nt; ++t) a += w[c][t] * in[off[t] + o];
      out[c][o] = a;
    }
}

/// Adds the tap list into C outputs (rows of n, `os` apart; input rows `is` apart): a short
/// list for one output keeps its weights in registers over the rows (add_taps), a long one
/// or two outputs keep their accumulators in registers over the taps (block_taps, stride 1).
template <class T, int C>
void run_taps(T* const* out, int64_t os, const T* in, int64_t is, const Taps<T>& taps, int64_t rows, int64_t n,
              int64_t s) {
  if (C == 1 && (taps.n <= 27 || s != 1)) return run_short(out[0], os, in, is, taps, rows, n, s);
  const T* w[C];
  for (int c = 0; c < C; ++c) w[c] = taps.weights(c);
  for (int64_t r = 0; r < rows; ++r) {
    T* o[C];
    for (int c = 0; c < C; ++c) o[c] = out[c] + r * os;
    block_taps<T, C>(o, in + r * is, taps.off.data(), w, taps.n, n);
  }
}

/// acc[c][slot[m]] += sum over r < rows, o < n of g[c][r * gs + o] * in[r * is + off[m] + o * s]
/// for C gradient planes; each slot holds kAccLanes<T> partial sums. Out of line: see add_taps.
template <class T, int C, int M>
[[gnu::noinline]] void dot_taps(T* const* acc, const int64_t* slot, const T* const* g, int64_t gs, const T* in,
                                int64_t is, const int64_t* off, int64_t rows, int64_t n, int64_t s) {
  constexpr int W = kAccLanes<T>;
  int64_t done = 0;  // columns the vector loop covers
  if constexpr (std::is_floating_point_v<T>) {
    if (s == 1) {
      done = n / W * W;
      rows::Vec<T> a[C][M];
      for (int c = 0; c < C; ++c)
        for (int m = 0; m < M; ++m) a[c][m] = rows::load(acc[c] + slot[m] * W);
      for (int64_t r = 0; r < rows; ++r) {
        const T* src[M];
        for (int m = 0; m < M; ++m) src[m] = in + r * is + off[m];
        for (int64_t o = 0; o < done; o += W) {
          rows::Vec<T> gv[C];
          for (int c = 0; c < C; ++c) gv[c] = rows::load(g[c] + r * gs + o);
          for (int m = 0; m < M; ++m) {
            const rows::Vec<T> xv = rows::load(src[m] + o);
            for (int c = 0; c < C; ++c) a[c][m] += gv[c] * xv;
          }
        }
      }
      for (int c = 0; c < C; ++c)
        for (int m = 0; m < M; ++m) rows::store(acc[c] + slot[m] * W, a[c][m]);
    }
  }
  if (done == n) return;
  for (int c = 0; c < C; ++c) {
    T tail[M] = {};
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t o = done; o < n; ++o)
        for (int m = 0; m < M; ++m) tail[m] += g[c][r * gs + o] * in[r * is + off[m] + o * s];
    for (int m = 0; m < M; ++m) acc[c][slot[m] * W] += tail[m];
  }
}

/// dot_taps over a whole tap list: nine taps per pass for one plane, six for two.
template <class T, int C>
void run_dots(T* const* acc, const T* const* g, int64_t gs, const T* in, int64_t is, const Taps<T>& taps, int64_t rows,
              int64_t n, int64_t s) {
  constexpr int M = C == 1 ? 9 : 6;
  int64_t t = 0;
  for (; t + M <= taps.n; t += M) dot_taps<T, C, M>(acc, &taps.slot[t], g, gs, in, is, &taps.off[t], rows, n, s);
  for (; t + 3 <= taps.n; t += 3) dot_taps<T, C, 3>(acc, &taps.slot[t], g, gs, in, is, &taps.off[t], rows, n, s);
  for (; t < taps.n; ++t) dot_taps<T, C, 1>(acc, &taps.slot[t], g, gs, in, is, &taps.off[t], rows, n, s);
}

/// Whether the output rows of a plane of width `out_w` run as one long row over the padded
/// width: stride 1, and rows that would end in a scalar tail.
template <class T>
bool flat_rows(const ConvShape& g, int64_t out_w) {
  return g.s[1] == 1 && g.s[2] == 1 && out_w % kAccLanes<T> != 0;
}

/// Length of a flat row covering `rows` rows of `n` outputs at pitch `width`.
inline int64_t flat_len(int64_t rows, int64_t n, int64_t width) { return (rows - 1) * width + n; }

/// Copies `rows` rows of n values at pitch `width` (a flat row's result) into dst.
template <class T>
void unflatten(T* dst, const T* flat, int64_t rows, int64_t n, int64_t width) {
  for (int64_t r = 0; r < rows; ++r) rows::copy_short(dst + r * n, flat + r * width, n);
}

/// The `channels` input planes of a plain convolution, padded so that every read is inside.
template <class T>
Padded<T> plain_padding(const ConvShape& g, int64_t channels) {
  int64_t extra[2];  // rows / columns read past the end
  for (int i = 1; i < 3; ++i)
    extra[i - 1] = std::max<int64_t>(0, (g.out[i] - 1) * g.s[i] + (g.k[i] - 1) * g.d[i] - g.p[i] - (g.in[i] - 1));
  return Padded<T>(channels, g.in[0], g.in[1], g.in[2], g.p[1], extra[0], g.p[2], extra[1]);
}

/// The taps of the output rows at depth od of a plain convolution over `channels` padded
/// input planes (output row oh starts at padded row oh * s1): each input channel and kernel
/// position whose input depth exists; slot c * K + k.
template <class T>
void plain_taps(const ConvShape& g, const Padded<T>& pad, int64_t channels, int64_t od, Taps<T>& taps) {
  const int64_t K = g.k_numel();
  taps.n = 0;
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t kd = 0; kd < g.k[0]; ++kd) {
      const int64_t id = od * g.s[0] - g.p[0] + kd * g.d[0];
      if (id < 0 || id >= g.in[0]) continue;
      for (int64_t kh = 0; kh < g.k[1]; ++kh)
        for (int64_t kw = 0; kw < g.k[2]; ++kw)
          taps.add(c * pad.plane() + (id * pad.height() + kh * g.d[1]) * pad.width() + kw * g.d[2],
                   c * K + (kd * g.k[1] + kh) * g.k[2] + kw);
    }
}

/// The `channels` gy planes of an input gradient along a stride-1 width, padded so that every
/// read is inside (rows too when the height's stride is 1).
template <class T>
Padded<T> transposed_padding(const ConvShape& g, int64_t channels) {
  int64_t before[2], after[2];
  for (int i = 1; i < 3; ++i) {
    const bool pad = i == 2 || g.s[1] == 1;
    before[i - 1] = pad ? std::max<int64_t>(0, (g.k[i] - 1) * g.d[i] - g.p[i]) : 0;
    after[i - 1] = pad ? std::max<int64_t>(0, g.in[i] + g.p[i] - g.out[i]) : 0;
  }
  return Padded<T>(channels, g.out[0], g.out[1], g.out[2], before[0], after[0], before[1], after[1]);
}

/// The taps of input-gradient row (id, ih) along a stride-1 width: each of the group's
/// `channels` padded gy planes and each of its rows (od, oh) that reads the row, with the
/// kernel row flipped; slot c * Cin/G * K + k (the weight of gy channel c for input channel
/// 0 of the group). Offsets are from the padded gy planes' start; with `any_row` (height
/// stride 1: every kernel row reads inside the padded planes) they are from padded row ih,
/// and the list serves every row at depth id.
template <class T>
void transposed_taps(const ConvShape& g, const Padded<T>& pad, int64_t channels, int64_t id, int64_t ih, bool any_row,
                     Taps<T>& taps) {
  const int64_t K = g.k_numel(), cig = g.cin / g.groups;
  taps.n = 0;
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t kd = 0; kd < g.k[0]; ++kd) {
      const int64_t td = id + g.p[0] - kd * g.d[0];
      if (td < 0 || td % g.s[0] || td / g.s[0] >= g.out[0]) continue;
      for (int64_t kh = 0; kh < g.k[1]; ++kh) {
        int64_t row = pad.top() + g.p[1] - kh * g.d[1];  // relative to row ih
        if (!any_row) {
          const int64_t th = ih + g.p[1] - kh * g.d[1];
          if (th < 0 || th % g.s[1] || th / g.s[1] >= g.out[1]) continue;
          row = th / g.s[1];
        }
        for (int64_t kw = 0; kw < g.k[2]; ++kw)
          taps.add(c * pad.plane() + (td / g.s[0] * pad.height() + row) * pad.width() + pad.left() + g.p[2] -
                       kw * g.d[2], c * cig * K + (kd * g.k[1] + kh) * g.k[2] + kw);
      }
    }
}

/// Runs f(scratch, sample, group, first channel, channels) over units of one or two
/// channels (of `per_group` in each group) of every sample, on the thread budget; each
/// thread's scratch is make()'s.
template <class Make, class F>
void for_each_pair(const ConvShape& g, int64_t samples, int64_t per_group, Make make, F f) {
  const int64_t pairs = (per_group + 1) / 2;
  parallel_for(0, samples * g.groups * pairs, 1, [&](int64_t b, int64_t e) {
    auto scratch = make();
    for (int64_t u = b; u < e; ++u) {
      const int64_t grp = u / pairs % g.groups, first = u % pairs * 2;
      f(scratch, u / (g.groups * pairs), grp, grp * per_group + first, std::min<int64_t>(2, per_group - first));
    }
  });
}

/// A thread's working memory: a tap list, padded input planes (which unit's: `held`), and
/// two flat rows.
template <class T>
struct Scratch {
  Taps<T> taps;
  Padded<T> pad;
  std::vector<T> flat;
  int64_t held = -1;
  const T* in = nullptr;
  /// The padded planes of `src`, copied when `key` changes.
  const T* planes(int64_t key, const T* src) {
    if (held != key) {
      in = pad.of(src);
      held = key;
    }
    return in;
  }
};

/// The planes a unit computes: out[c] for c < count, each `rows` rows of n at pitch n; when
/// flat, they are first computed at pitch `width` into a scratch buffer (one long row each).
template <class T>
struct Outputs {
  T* dst[2];
  T* out[2];
  int64_t count, rows, n, width, len;
  bool flat;
  /// Starts the planes at `init[c]`.
  void start(const T* init) {
    for (int64_t c = 0; c < count; ++c) std::fill_n(out[c], flat ? len : rows * n, init[c]);
  }
  /// Adds the tap list (input rows `is` apart when not flat).
  void run(const T* in, int64_t is, const Taps<T>& taps, int64_t s) {
    if (count == 2) run_taps<T, 2>(out, flat ? 0 : n, in, flat ? 0 : is, taps, flat ? 1 : rows, flat ? len : n, s);
    else run_taps<T, 1>(out, flat ? 0 : n, in, flat ? 0 : is, taps, flat ? 1 : rows, flat ? len : n, s);
    if (flat)
      for (int64_t c = 0; c < count; ++c) unflatten(dst[c], out[c], rows, n, width);
  }
};

/// Output planes dst[c] (c < count) of `rows` x n; `scratch` holds two flat rows at pitch width.
template <class T>
Outputs<T> outputs(T* const* dst, int64_t count, int64_t rows, int64_t n, int64_t width, bool flat, T* scratch) {
  Outputs<T> o{{dst[0], dst[count - 1]}, {dst[0], dst[count - 1]}, count, rows, n, width, flat_len(rows, n, width), flat};
  if (flat)
    for (int64_t c = 0; c < count; ++c) o.out[c] = scratch + c * rows * width;
  return o;
}

template <class T>
void forward_planes(const ConvShape& g, const T* x, const T* w, const T* bias, T* y) {
  const int64_t cig = g.cin / g.groups, cog = g.cout / g.groups, K = g.k_numel(), L = g.out_numel();
  const int64_t rows = g.out[1], n = g.out[2];
  const bool flat = flat_rows<T>(g, n);
  auto make = [&] {
    Padded<T> pad = plain_padding<T>(g, cig);
    const size_t len = flat ? size_t(2 * rows * pad.width()) : 0;
    return Scratch<T>{Taps<T>(cig * K), std::move(pad), std::vector<T>(len)};
  };
  for_each_pair(g, g.n, cog, make, [&](Scratch<T>& sc, int64_t i, int64_t grp, int64_t co, int64_t count) {
    const T* xs = sc.planes(i * g.groups + grp, x + (i * g.cin + grp * cig) * g.in_numel());
    const T init[2] = {bias ? bias[co] : T(0), bias ? bias[co + count - 1] : T(0)};
    for (int64_t od = 0; od < g.out[0]; ++od) {
      T* dst[2] = {y + (i * g.cout + co) * L + od * rows * n, y + (i * g.cout + co + count - 1) * L + od * rows * n};
      Outputs<T> o = outputs(dst, count, rows, n, sc.pad.width(), flat, sc.flat.data());
      plain_taps(g, sc.pad, cig, od, sc.taps);
      for (int64_t c = 0; c < count; ++c) sc.taps.weigh(int(c), w + (co + c) * cig * K);
      o.start(init);
      o.run(xs, g.s[1] * sc.pad.width(), sc.taps, g.s[2]);
    }
  });
}

/// A depthwise input gradient along a strided width: each gy element adds into every column
/// its kernel row reaches.
template <class T>
void scatter_input_plane(const ConvShape& g, const T* gy, const T* w, T* gx) {
  std::fill_n(gx, g.in_numel(), T(0));
  for (int64_t kk = 0; kk < g.k_numel(); ++kk) {
    const int64_t kd = kk / (g.k[1] * g.k[2]), kh = kk / g.k[2] % g.k[1], kw = kk % g.k[2];
    int64_t lo, hi;
    valid_range(g.out[2], g.in[2], kw * g.d[2] - g.p[2], g.s[2], lo, hi);
    const T wv = w[kk];
    for_each_row(g, kd, kh, kw, [&](int64_t orow, int64_t base) {
      for (int64_t ow = lo; ow < hi; ++ow) gx[base + ow * g.s[2]] += wv * gy[orow + ow];
    });
  }
}

template <class T>
void input_planes(const ConvShape& g, const T* gy, const T* w, T* gx) {
  const int64_t cig = g.cin / g.groups, cog = g.cout / g.groups, K = g.k_numel(), L = g.out_numel();
  const int64_t rows = g.in[1], n = g.in[2];
  const bool flat = flat_rows<T>(g, n);
  auto make = [&] {
    Padded<T> pad = transposed_padding<T>(g, cog);
    const size_t len = flat ? size_t(2 * rows * pad.width()) : 0;
    return Scratch<T>{Taps<T>(cog * K), std::move(pad), std::vector<T>(len)};
  };
  for_each_pair(g, g.n, cig, make, [&](Scratch<T>& sc, int64_t i, int64_t grp, int64_t ci, int64_t count) {
    const T* wg = w + grp * cog * cig * K + (ci - grp * cig) * K;  // weights of the group for input channel ci
    T* gxc = gx + (i * g.cin + ci) * g.in_numel();
    if (g.s[2] != 1) {  // depthwise only (Note [Direct convolution taps])
      for (int64_t c = 0; c < count; ++c)
        scatter_input_plane(g, gy + (i * g.cout + grp * cog + c) * L, wg + c * K, gxc + c * g.in_numel());
      return;
    }
    const T* gys = sc.planes(i * g.groups + grp, gy + (i * g.cout + grp * cog) * L);
    const T zero[2] = {T(0), T(0)};
    for (int64_t id = 0; id < g.in[0]; ++id) {
      T* dst[2] = {gxc + id * rows * n, gxc + (count - 1) * g.in_numel() + id * rows * n};
      if (g.s[1] != 1) {  // depthwise only: the kernel rows that reach a row depend on it
        Outputs<T> o = outputs<T>(dst, 1, 1, n, n, false, nullptr);
        for (int64_t ih = 0; ih < rows; ++ih, o.dst[0] += n, o.out[0] += n) {
          transposed_taps(g, sc.pad, cog, id, ih, false, sc.taps);
          sc.taps.weigh(0, wg);
          o.start(zero);
          o.run(gys, 0, sc.taps, 1);
        }
        continue;
      }
      Outputs<T> o = outputs(dst, count, rows, n, sc.pad.width(), flat, sc.flat.data());
      transposed_taps(g, sc.pad, cog, id, 0, true, sc.taps);  // one list for every row
      for (int64_t c = 0; c < count; ++c) sc.taps.weigh(int(c), wg + c * K);
      o.start(zero);
      o.run(gys, sc.pad.width(), sc.taps, 1);
    }
  });
}

template <class T>
void weight_channels(const ConvShape& g, const T* gy, const T* x, T* gw) {
  const int64_t cig = g.cin / g.groups, cog = g.cout / g.groups, K = g.k_numel(), L = g.out_numel();
  const int64_t rows = g.out[1], n = g.out[2];
  constexpr int W = kAccLanes<T>;
  const bool flat = flat_rows<T>(g, n);
  struct Work {
    Scratch<T> x;
    Padded<T> gy;  // a flat row reads gy at the padded input's pitch: its rows widened with zeros
    std::vector<T> acc;
  };
  auto make = [&] {
    Padded<T> xpad = plain_padding<T>(g, cig);
    const int64_t right = flat ? xpad.width() - n : 0;
    return Work{Scratch<T>{Taps<T>(cig * K), std::move(xpad), {}}, Padded<T>(2, g.out[0], rows, n, 0, 0, 0, right),
                std::vector<T>(size_t(2 * cig * K * W))};
  };
  for_each_pair(g, 1, cog, make, [&](Work& wk, int64_t, int64_t grp, int64_t co, int64_t count) {
    std::fill(wk.acc.begin(), wk.acc.end(), T(0));
    T* acc[2] = {wk.acc.data(), wk.acc.data() + cig * K * W};
    const Padded<T>& xpad = wk.x.pad;
    for (int64_t i = 0; i < g.n; ++i) {
      const T* xs = wk.x.planes(i * g.groups + grp, x + (i * g.cin + grp * cig) * g.in_numel());
      const T* gys = wk.gy.of(gy + (i * g.cout + co) * L, count);
      for (int64_t od = 0; od < g.out[0]; ++od) {
        plain_taps(g, xpad, cig, od, wk.x.taps);
        const int64_t pitch = flat ? xpad.width() : n, gs = g.out[0] * rows * pitch;
        const T* gr[2] = {gys + od * rows * pitch, gys + gs * (count - 1) + od * rows * pitch};
        if (flat && count == 2) run_dots<T, 2>(acc, gr, 0, xs, 0, wk.x.taps, 1, flat_len(rows, n, pitch), 1);
        else if (flat) run_dots<T, 1>(acc, gr, 0, xs, 0, wk.x.taps, 1, flat_len(rows, n, pitch), 1);
        else if (count == 2) run_dots<T, 2>(acc, gr, n, xs, g.s[1] * xpad.width(), wk.x.taps, rows, n, g.s[2]);
        else run_dots<T, 1>(acc, gr, n, xs, g.s[1] * xpad.width(), wk.x.taps, rows, n, g.s[2]);
      }
    }
    for (int64_t c = 0; c < count; ++c)
      for (int64_t k = 0; k < cig * K; ++k) {
        T total = 0;
        for (int j = 0; j < W; ++j) total += acc[c][k * W + j];
        gw[(co + c) * cig * K + k] = total;
      }
  });
}

// ------------------------------------------------------------------ channels-last depthwise
// Each output pixel's channels are one vector sweep per kernel position, with the weights
// transposed to (kernel position, channel); only whole pixels are checked against the bounds.

/// out[c] += a[c] * b[c] for c < n.
template <class T>
inline void fma_channels(T* __restrict out, const T* __restrict a, const T* __restrict b, int64_t n) {
#pragma omp simd
  for (int64_t c = 0; c < n; ++c) out[c] += a[c] * b[c];
}

/// out[c] = init[c] (0 when null) + sum over the taps t < nt of w[t][c] * src[t][c], c < C:
/// the accumulators of four vectors of channels stay in registers over the taps.
template <class T>
inline void sum_taps_channels(T* out, const T* const* w, const T* const* src, int nt, int64_t C, const T* init) {
  int64_t c = 0;
  if constexpr (std::is_floating_point_v<T>) {
    constexpr int W = rows::kLanes<T>;
    auto chunk = [&](auto v_count) {
      constexpr int V = decltype(v_count)::value;
      rows::Vec<T> a[V];
      for (int v = 0; v < V; ++v) a[v] = init ? rows::load(init + c + v * W) : rows::splat(T(0));
      for (int t = 0; t < nt; ++t)
        for (int v = 0; v < V; ++v) a[v] += rows::load(w[t] + c + v * W) * rows::load(src[t] + c + v * W);
      for (int v = 0; v < V; ++v) rows::store(out + c + v * W, a[v]);
      c += V * W;
    };
    while (c + 4 * W <= C) chunk(std::integral_constant<int, 4>{});
    while (c + W <= C) chunk(std::integral_constant<int, 1>{});
  }
  for (; c < C; ++c) {
    T a = init ? init[c] : T(0);
    for (int t = 0; t < nt; ++t) a += w[t][c] * src[t][c];
    out[c] = a;
  }
}

/// The weights (C, 1, kernel...) as (kernel position, channel).
template <class T>
std::vector<T> weights_by_position(const ConvShape& g, const T* w) {
  const int64_t K = g.k_numel(), C = g.cin;
  std::vector<T> wt(static_cast<size_t>(K * C));
  for (int64_t c = 0; c < C; ++c)
    for (int64_t k = 0; k < K; ++k) wt[size_t(k * C + c)] = w[c * K + k];
  return wt;
}

/// Calls f(kernel position, input pixel) for output pixel (od, oh, ow)'s kernel positions
/// that read inside the input.
template <class F>
inline void pixel_taps(const ConvShape& g, int64_t od, int64_t oh, int64_t ow, F f) {
  for (int64_t kd = 0; kd < g.k[0]; ++kd) {
    const int64_t id = od * g.s[0] - g.p[0] + kd * g.d[0];
    if (id < 0 || id >= g.in[0]) continue;
    for (int64_t kh = 0; kh < g.k[1]; ++kh) {
      const int64_t ih = oh * g.s[1] - g.p[1] + kh * g.d[1];
      if (ih < 0 || ih >= g.in[1]) continue;
      for (int64_t kw = 0; kw < g.k[2]; ++kw) {
        const int64_t iw = ow * g.s[2] - g.p[2] + kw * g.d[2];
        if (iw >= 0 && iw < g.in[2]) f((kd * g.k[1] + kh) * g.k[2] + kw, (id * g.in[1] + ih) * g.in[2] + iw);
      }
    }
  }
}

/// Calls f(kernel position, output pixel) for the output pixels that read input pixel
/// (id, ih, iw).
template <class F>
inline void pixel_readers(const ConvShape& g, int64_t id, int64_t ih, int64_t iw, F f) {
  auto out_of = [&](int64_t dim, int64_t at, int64_t k) {  // the output index reading `at` at kernel k, or -1
    const int64_t t = at + g.p[dim] - k * g.d[dim];
    return t < 0 || t % g.s[dim] || t / g.s[dim] >= g.out[dim] ? -1 : t / g.s[dim];
  };
  for (int64_t kd = 0; kd < g.k[0]; ++kd) {
    const int64_t od = out_of(0, id, kd);
    if (od < 0) continue;
    for (int64_t kh = 0; kh < g.k[1]; ++kh) {
      const int64_t oh = out_of(1, ih, kh);
      if (oh < 0) continue;
      for (int64_t kw = 0; kw < g.k[2]; ++kw) {
        const int64_t ow = out_of(2, iw, kw);
        if (ow >= 0) f((kd * g.k[1] + kh) * g.k[2] + kw, (od * g.out[1] + oh) * g.out[2] + ow);
      }
    }
  }
}

/// Runs f(scratch, sample, d, h, w, pixel) over every pixel of `samples` x sizes[0..3): rows
/// of pixels spread over the thread budget, each thread with make()'s scratch.
template <class Make, class F>
void for_each_pixel(int64_t samples, const int64_t* sizes, int64_t channels, Make make, F f) {
  const int64_t rows = samples * sizes[0] * sizes[1];
  parallel_for(0, rows, std::max<int64_t>(1, 1024 / std::max<int64_t>(sizes[2] * channels, 1)),
               [&](int64_t b, int64_t e) {
    auto scratch = make();
    for (int64_t r = b; r < e; ++r) {
      const int64_t n = r / (sizes[0] * sizes[1]), d = r / sizes[1] % sizes[0], h = r % sizes[1];
      for (int64_t w = 0; w < sizes[2]; ++w) f(scratch, n, d, h, w, r * sizes[2] + w);
    }
  });
}

/// A pixel's taps: weight rows and input pixels.
template <class T>
struct PixelTaps {
  std::vector<const T*> w, src;
  int nt = 0;
  explicit PixelTaps(int64_t k) : w(static_cast<size_t>(k)), src(static_cast<size_t>(k)) {}
  void add(const T* wk, const T* s) {
    w[size_t(nt)] = wk;
    src[size_t(nt++)] = s;
  }
};

// A 2-D 3x3 float32 depthwise convolution's inner pixels (all nine taps inside the input) run
// with a block of channels' nine weight vectors in registers: per pixel nine input loads and
// nine multiply-adds per vector, no tap list (8x64x56x56, 1 thread: 1.24 -> 0.40 ms; PyTorch
// 0.63). The pixels of the border keep the tap lists.
#if TP_CPU_CAPABILITY >= 2
constexpr int kDwLanes = 16, kDwVecs = 2;  // 18 weight vectors of 32 registers
#elif TP_CPU_CAPABILITY == 1
constexpr int kDwLanes = 8, kDwVecs = 1;
#else
constexpr int kDwLanes = 4, kDwVecs = 1;
#endif
typedef FloatVec<kDwLanes>::type dwv;

/// The inner pixels of a 2-D 3x3 channels-last depthwise convolution g of input x: those whose
/// nine taps all read inside x.
struct Inner3x3 {
  const float* x;
  int64_t H, W, C, OH, OW, sh, sw, ph, pw, dh;
  int64_t lo, hi;   // inner columns [lo, hi) of an inner row
  int64_t toff[9];  // tap t's input offset from tap (0, 0)'s
  int64_t step;     // from one output pixel's tap (0, 0) to the next's

  static bool applies(const ConvShape& g) {
    return g.k[0] == 1 && g.in[0] == 1 && g.k[1] == 3 && g.k[2] == 3 && g.cin % (kDwLanes * kDwVecs) == 0;
  }
  Inner3x3(const ConvShape& g, const float* input)
      : x(input), H(g.in[1]), W(g.in[2]), C(g.cin), OH(g.out[1]), OW(g.out[2]), sh(g.s[1]), sw(g.s[2]),
        ph(g.p[1]), pw(g.p[2]), dh(g.d[1]), step(g.s[2] * g.cin) {
    lo = std::min(OW, (pw + sw - 1) / sw);
    const int64_t last = W - 1 + pw - 2 * g.d[2];  // the last inner column's ow * sw, if not negative
    hi = std::clamp<int64_t>(last < 0 ? 0 : last / sw + 1, lo, OW);
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 3; ++j) toff[i * 3 + j] = (i * dh * W + j * g.d[2]) * C;
  }
  /// Output row r (sample-major): f(xr, n, oh, ow0, count) for its inner run, xr the input at
  /// tap (0, 0) of pixel ow0, and f(nullptr, n, oh, ow, 1) for each other pixel.
  template <class F>
  void row(int64_t r, F f) const {
    const int64_t n = r / OH, oh = r % OH, ih0 = oh * sh - ph;
    const bool inner = ih0 >= 0 && ih0 + 2 * dh < H && hi > lo;
    for (int64_t ow = 0; ow < OW; ++ow) {
      if (inner && ow == lo) {
        f(x + ((n * H + ih0) * W + lo * sw - pw) * C, n, oh, lo, hi - lo);
        ow = hi - 1;
        continue;
      }
      f(static_cast<const float*>(nullptr), n, oh, ow, int64_t(1));
    }
  }
};

/// Output pixels [ow0, ow1) of one row, channels [c, c + kDwVecs * kDwLanes): xr points at the
/// input pixel read by tap (0, 0) of pixel ow0, the taps of a pixel at xr + toff[t], the next
/// pixel's at + step; wt is (tap, channel), y at pixel ow0.
void depthwise3x3_pixels(const float* xr, const int64_t* toff, int64_t step, const float* wt, const float* bias,
                         float* y, int64_t C, int64_t c, int64_t count) {
  dwv wv[9][kDwVecs], b[kDwVecs];
  for (int t = 0; t < 9; ++t)
    for (int v = 0; v < kDwVecs; ++v) wv[t][v] = vload<dwv>(wt + t * C + c + v * kDwLanes);
  for (int v = 0; v < kDwVecs; ++v) {
    if (bias) b[v] = vload<dwv>(bias + c + v * kDwLanes);
    else b[v] = dwv{};
  }
  for (int64_t i = 0; i < count; ++i) {
    const float* px = xr + i * step + c;
    dwv a[kDwVecs];
    for (int v = 0; v < kDwVecs; ++v) a[v] = b[v];
    for (int t = 0; t < 9; ++t)
      for (int v = 0; v < kDwVecs; ++v) {
        const dwv in = vload<dwv>(px + toff[t] + v * kDwLanes);
        a[v] += in * wv[t][v];
      }
    for (int v = 0; v < kDwVecs; ++v) vstore(y + i * C + c + v * kDwLanes, a[v]);
  }
}

template <class T>
void depthwise_forward_nhwc(const ConvShape& g, const T* x, const T* w, const T* bias, T* y) {
  const int64_t C = g.cin, K = g.k_numel();
  const std::vector<T> wt = weights_by_position(g, w);
  auto pixel = [&](PixelTaps<T>& pt, int64_t n, int64_t od, int64_t oh, int64_t ow, int64_t u) {
    const T* xn = x + n * g.in_numel() * C;
    pt.nt = 0;
    pixel_taps(g, od, oh, ow, [&](int64_t k, int64_t at) { pt.add(wt.data() + k * C, xn + at * C); });
    sum_taps_channels(y + u * C, pt.w.data(), pt.src.data(), pt.nt, C, bias);
  };
  if constexpr (std::is_same_v<T, float>) {
    if (Inner3x3::applies(g)) {
      const Inner3x3 in(g, x);
      parallel_for(0, g.n * in.OH, 4, [&](int64_t r0, int64_t r1) {
        PixelTaps<T> pt(K);
        for (int64_t r = r0; r < r1; ++r)
          in.row(r, [&](const float* xr, int64_t n, int64_t oh, int64_t ow0, int64_t count) {
            if (!xr) return pixel(pt, n, 0, oh, ow0, r * in.OW + ow0);
            for (int64_t c = 0; c < C; c += kDwLanes * kDwVecs)
              depthwise3x3_pixels(xr, in.toff, in.step, wt.data(), bias, y + (r * in.OW + ow0) * C, C, c, count);
          });
      });
      return;
    }
  }
  for_each_pixel(g.n, g.out, C, [&] { return PixelTaps<T>(K); }, pixel);
}

template <class T>
void depthwise_input_nhwc(const ConvShape& g, const T* gy, const T* w, T* gx) {
  const int64_t C = g.cin, K = g.k_numel(), L = g.out_numel();
  if constexpr (std::is_same_v<T, float>) {
    // stride 1, 3x3: the forward's loops over gy padded by the kernel's reach less the padding,
    // with the kernel flipped (8x64x56x56, 1 thread: 1.5 -> 0.7 ms)
    if (Inner3x3::applies(g) && g.s[1] == 1 && g.s[2] == 1 && 2 * g.d[1] >= g.p[1] && 2 * g.d[2] >= g.p[2]) {
      ConvShape t = g;
      for (int i = 1; i < 3; ++i) {
        t.in[i] = g.out[i];
        t.out[i] = g.in[i];
        t.p[i] = 2 * g.d[i] - g.p[i];
      }
      std::vector<float> flipped(static_cast<size_t>(C * 9));
      for (int64_t c = 0; c < C; ++c)
        for (int k = 0; k < 9; ++k) flipped[size_t(c * 9 + k)] = w[c * 9 + 8 - k];
      return depthwise_forward_nhwc<float>(t, gy, flipped.data(), nullptr, gx);
    }
  }
  const std::vector<T> wt = weights_by_position(g, w);
  for_each_pixel(g.n, g.in, C, [&] { return PixelTaps<T>(K); },
                 [&](PixelTaps<T>& pt, int64_t n, int64_t id, int64_t ih, int64_t iw, int64_t u) {
    const T* gyn = gy + n * L * C;
    pt.nt = 0;
    pixel_readers(g, id, ih, iw, [&](int64_t k, int64_t at) { pt.add(wt.data() + k * C, gyn + at * C); });
    sum_taps_channels(gx + u * C, pt.w.data(), pt.src.data(), pt.nt, C, static_cast<const T*>(nullptr));
  });
}

/// The weight gradient's sums over output pixels [0, count) of one row, channels [c, c +
/// kDwVecs * kDwLanes), all nine taps inside (depthwise3x3_pixels' addressing): acc (tap,
/// channel) += gy[pixel] * x[pixel's tap], the nine taps' sums in registers over the row.
void depthwise3x3_weight_pixels(const float* xr, const int64_t* toff, int64_t step, const float* gy, float* acc,
                                int64_t C, int64_t c, int64_t count) {
  dwv a[9][kDwVecs];
  for (int t = 0; t < 9; ++t)
    for (int v = 0; v < kDwVecs; ++v) a[t][v] = dwv{};
  for (int64_t i = 0; i < count; ++i) {
    const float* px = xr + i * step + c;
    dwv g[kDwVecs];
    for (int v = 0; v < kDwVecs; ++v) g[v] = vload<dwv>(gy + i * C + c + v * kDwLanes);
    for (int t = 0; t < 9; ++t)
      for (int v = 0; v < kDwVecs; ++v) {
        const dwv in = vload<dwv>(px + toff[t] + v * kDwLanes);
        a[t][v] += in * g[v];
      }
  }
  for (int t = 0; t < 9; ++t)
    for (int v = 0; v < kDwVecs; ++v) {
      float* dst = acc + t * C + c + v * kDwLanes;
      vstore(dst, vload<dwv>(dst) + a[t][v]);
    }
}

template <class T>
void depthwise_weight_nhwc(const ConvShape& g, const T* gy, const T* x, T* gw) {
  const int64_t C = g.cin, K = g.k_numel();
  // acc[k * C + c] per thread, added up in thread order
  const int threads = get_num_threads();
  std::vector<T> acc(static_cast<size_t>(threads * K * C), T(0));
  auto pixel = [&](T* a, int64_t n, int64_t od, int64_t oh, int64_t ow, int64_t u) {
    const T* xn = x + n * g.in_numel() * C;
    pixel_taps(g, od, oh, ow, [&](int64_t k, int64_t at) { fma_channels(a + k * C, gy + u * C, xn + at * C, C); });
  };
  bool done = false;
  if constexpr (std::is_same_v<T, float>) {
    if (Inner3x3::applies(g)) {  // inner pixels with the sums in registers over each row
      const Inner3x3 in(g, x);
      const int64_t rows = g.n * in.OH;
      parallel_for(0, threads, 1, [&](int64_t t0, int64_t t1) {
        for (int64_t th = t0; th < t1; ++th) {
          float* a = acc.data() + th * K * C;
          for (int64_t r = rows * th / threads; r < rows * (th + 1) / threads; ++r)
            in.row(r, [&](const float* xr, int64_t n, int64_t oh, int64_t ow0, int64_t count) {
              if (!xr) return pixel(a, n, 0, oh, ow0, r * in.OW + ow0);
              for (int64_t c = 0; c < C; c += kDwLanes * kDwVecs)
                depthwise3x3_weight_pixels(xr, in.toff, in.step, gy + (r * in.OW + ow0) * C, a, C, c, count);
            });
        }
      });
      done = true;
    }
  }
  if (!done) for_each_pixel(g.n, g.out, C, [&] { return acc.data() + omp_get_thread_num() * K * C; }, pixel);
  for (int64_t c = 0; c < C; ++c)
    for (int64_t k = 0; k < K; ++k) {
      T total = 0;
      for (int t = 0; t < threads; ++t) total += acc[size_t((t * K + k) * C + c)];
      gw[c * K + k] = total;
    }
}

// ------------------------------------------------------------------ im2col / col2im (Note [Convolution as GEMM])

inline void split_k(const ConvShape& g, int64_t kk, int64_t& kd, int64_t& kh, int64_t& kw) {
  kd = kk / (g.k[1] * g.k[2]);
  kh = kk / g.k[2] % g.k[1];
  kw = kk % g.k[2];
}

/// col (Cin*K x L) from one sample's channels; padding reads as zero.
template <class T>
void im2col(const ConvShape& g, const T* x, T* col) {
  const int64_t K = g.k_numel(), L = g.out_numel(), s2 = g.s[2];
  parallel_for(0, g.cin * K, 8, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      int64_t kd, kh, kw;
      split_k(g, r % K, kd, kh, kw);
      const T* xc = x + (r / K) * g.in_numel() + kw * g.d[2] - g.p[2];
      T* dst = col + r * L;
      int64_t lo, hi;
      valid_range(g.out[2], g.in[2], kw * g.d[2] - g.p[2], s2, lo, hi);
      for (int64_t od = 0; od < g.out[0]; ++od) {
        const int64_t id = od * g.s[0] - g.p[0] + kd * g.d[0];
        for (int64_t oh = 0; oh < g.out[1]; ++oh, dst += g.out[2]) {
          const int64_t ih = oh * g.s[1] - g.p[1] + kh * g.d[1];
          if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1]) {
            std::fill_n(dst, g.out[2], T(0));
            continue;
          }
          const T* src = xc + (id * g.in[1] + ih) * g.in[2];
          std::fill_n(dst, lo, T(0));
          if (s2 == 1) rows::copy_short(dst + lo, src + lo, hi - lo);
          else for (int64_t ow = lo; ow < hi; ++ow) dst[ow] = src[ow * s2];
          std::fill(dst + hi, dst + g.out[2], T(0));
        }
      }
    }
  });
}

/// Adds col (Cin*K x L) back into one sample's (zeroed) channels: im2col's adjoint.
template <class T>
void col2im(const ConvShape& g, const T* col, T* x) {
  const int64_t K = g.k_numel(), L = g.out_numel(), s2 = g.s[2];
  parallel_for(0, g.cin, 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) {
      T* xc = x + c * g.in_numel();
      std::fill(xc, xc + g.in_numel(), T(0));
      for (int64_t kk = 0; kk < K; ++kk) {
        int64_t kd, kh, kw, lo, hi;
        split_k(g, kk, kd, kh, kw);
        valid_range(g.out[2], g.in[2], kw * g.d[2] - g.p[2], s2, lo, hi);
        const T* src = col + (c * K + kk) * L;
        for_each_row(g, kd, kh, kw, [&](int64_t orow, int64_t base) {
          const T* row = src + orow;
          if (s2 == 1) for (int64_t ow = lo; ow < hi; ++ow) xc[base + ow] += row[ow];
          else for (int64_t ow = lo; ow < hi; ++ow) xc[base + ow * s2] += row[ow];
        });
      }
    }
  });
}

// Channels last: the columns of nn_conv.cpp's channels-last GEMM paths, a row per output
// pixel and a whole input pixel per kernel position.

/// Calls f(output pixel, kernel position, input pixel or -1 in the padding) for one sample.
template <class F>
void for_each_pixel_tap(const ConvShape& g, F f) {
  int64_t l = 0;
  for (int64_t od = 0; od < g.out[0]; ++od)
    for (int64_t oh = 0; oh < g.out[1]; ++oh)
      for (int64_t ow = 0; ow < g.out[2]; ++ow, ++l) {
        int64_t k = 0;
        for (int64_t kd = 0; kd < g.k[0]; ++kd) {
          const int64_t id = od * g.s[0] - g.p[0] + kd * g.d[0];
          for (int64_t kh = 0; kh < g.k[1]; ++kh) {
            const int64_t ih = oh * g.s[1] - g.p[1] + kh * g.d[1];
            for (int64_t kw = 0; kw < g.k[2]; ++kw, ++k) {
              const int64_t iw = ow * g.s[2] - g.p[2] + kw * g.d[2];
              const bool inside = id >= 0 && id < g.in[0] && ih >= 0 && ih < g.in[1] && iw >= 0 && iw < g.in[2];
              f(l, k, inside ? (id * g.in[1] + ih) * g.in[2] + iw : int64_t(-1));
            }
          }
        }
      }
}

/// col (L x K * Cin) from one channels-last sample.
template <class T>
void im2col_nhwc(const ConvShape& g, const T* x, T* col) {
  const int64_t C = g.cin, KC = g.k_numel() * C;
  for_each_pixel_tap(g, [&](int64_t l, int64_t k, int64_t at) {
    T* dst = col + l * KC + k * C;
    if (at < 0) std::fill_n(dst, C, T(0));
    else rows::copy_short(dst, x + at * C, C);
  });
}

/// One channels-last sample x = the sum of col (L x K * Cin) at its pixels: im2col_nhwc's adjoint.
template <class T>
void col2im_nhwc(const ConvShape& g, const T* col, T* x) {
  const int64_t C = g.cin, KC = g.k_numel() * C;
  std::fill_n(x, g.in_numel() * C, T(0));
  for_each_pixel_tap(g, [&](int64_t l, int64_t k, int64_t at) {
    if (at < 0) return;
    const T* src = col + l * KC + k * C;
    T* dst = x + at * C;
    for (int64_t c = 0; c < C; ++c) dst[c] += src[c];
  });
}

// ------------------------------------------------------------------ bias

/// Adds bias[c] to every element of channel c of the dense (N, C, L) tensor y, row-major or
/// channels last.
template <class T>
void add_bias(T* y, const T* bias, int64_t n, int64_t c, int64_t l, bool channels_last) {
  if (channels_last) {
    parallel_for(0, n * l, std::max<int64_t>(1, 32768 / std::max<int64_t>(c, 1)), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r)
        for (int64_t ch = 0; ch < c; ++ch) y[r * c + ch] += bias[ch];
    });
    return;
  }
  parallel_for(0, n * c, std::max<int64_t>(1, 32768 / std::max<int64_t>(l, 1)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const T v = bias[r % c];
      T* row = y + r * l;
      for (int64_t i = 0; i < l; ++i) row[i] += v;
    }
  });
}

/// out[ch] = the sum of channel ch of the dense (N, C, L) tensor g: one pass over the planes
/// (row-major), or column sums (channels last).
template <class T>
void bias_grad(const T* g, T* out, int64_t n, int64_t c, int64_t l, bool channels_last) {
  if (channels_last) {
    rows::column_sums(n * l, c, 1, out, [&](int64_t r, T* acc) {
      for (int64_t ch = 0; ch < c; ++ch) acc[ch] += g[r * c + ch];
    });
    return;
  }
  parallel_for(0, c, 1, [&](int64_t b, int64_t e) {
    for (int64_t ch = b; ch < e; ++ch) {
      T acc = 0;
      for (int64_t i = 0; i < n; ++i) {
        const T* plane = g + (i * c + ch) * l;
        acc += rows::sum<T>(l, [&](auto at) { return at(plane); });
      }
      out[ch] = acc;
    }
  });
}

// ------------------------------------------------------------------ entry points

/// Calls f(T{}) for dt's type unless it is float16 or bfloat16 (the ops compute those in
/// float32), or bool unless `WithBool`.
template <bool WithBool = false, class F>
void visit_kernel_dtype(DType dt, F&& f) {
  visit_dtype(dt, [&](auto t) {
    using T = decltype(t);
    if constexpr (std::is_arithmetic_v<T> && (WithBool || !std::is_same_v<T, bool>)) f(t);
  });
}

void direct_forward(const ConvShape& g, DType dt, bool channels_last, const void* x, const void* w,
                    const void* bias, void* y) {
  visit_kernel_dtype(dt, [&](auto t) {
    using T = decltype(t);
    auto xs = static_cast<const T*>(x), ws = static_cast<const T*>(w), bs = static_cast<const T*>(bias);
    if (channels_last) depthwise_forward_nhwc<T>(g, xs, ws, bs, static_cast<T*>(y));
    else forward_planes<T>(g, xs, ws, bs, static_cast<T*>(y));
  });
}

void direct_input(const ConvShape& g, DType dt, bool channels_last, const void* gy, const void* w, void* gx) {
  visit_kernel_dtype(dt, [&](auto t) {
    using T = decltype(t);
    auto gys = static_cast<const T*>(gy), ws = static_cast<const T*>(w);
    if (channels_last) depthwise_input_nhwc<T>(g, gys, ws, static_cast<T*>(gx));
    else input_planes<T>(g, gys, ws, static_cast<T*>(gx));
  });
}

void direct_weight(const ConvShape& g, DType dt, bool channels_last, const void* gy, const void* x, void* gw) {
  visit_kernel_dtype(dt, [&](auto t) {
    using T = decltype(t);
    auto gys = static_cast<const T*>(gy), xs = static_cast<const T*>(x);
    if (channels_last) depthwise_weight_nhwc<T>(g, gys, xs, static_cast<T*>(gw));
    else weight_channels<T>(g, gys, xs, static_cast<T*>(gw));
  });
}

void im2col_kernel(const ConvShape& g, DType dt, bool channels_last, const void* x, void* col) {
  visit_kernel_dtype<true>(dt, [&](auto t) {
    using T = decltype(t);
    if (channels_last) im2col_nhwc(g, static_cast<const T*>(x), static_cast<T*>(col));
    else im2col(g, static_cast<const T*>(x), static_cast<T*>(col));
  });
}

void col2im_kernel(const ConvShape& g, DType dt, bool channels_last, const void* col, void* x) {
  visit_kernel_dtype<true>(dt, [&](auto t) {
    using T = decltype(t);
    if (channels_last) col2im_nhwc(g, static_cast<const T*>(col), static_cast<T*>(x));
    else col2im(g, static_cast<const T*>(col), static_cast<T*>(x));
  });
}

void add_bias_kernel(DType dt, void* y, const void* bias, int64_t n, int64_t c, int64_t l, bool channels_last) {
  visit_kernel_dtype(dt, [&](auto t) {
    using T = decltype(t);
    add_bias(static_cast<T*>(y), static_cast<const T*>(bias), n, c, l, channels_last);
  });
}

void bias_grad_kernel(DType dt, const void* grad, void* out, int64_t n, int64_t c, int64_t l, bool channels_last) {
  auto run = [&](auto t) {
    using T = decltype(t);
    bias_grad(static_cast<const T*>(grad), static_cast<T*>(out), n, c, l, channels_last);
  };
  if (dt == DType::Float32) run(float{});
  else run(double{});
}

}  // namespace

TP_REGISTER_CPU_KERNEL(conv_direct_forward_stub, &direct_forward);
TP_REGISTER_CPU_KERNEL(conv_direct_input_stub, &direct_input);
TP_REGISTER_CPU_KERNEL(conv_direct_weight_stub, &direct_weight);
TP_REGISTER_CPU_KERNEL(im2col_stub, &im2col_kernel);
TP_REGISTER_CPU_KERNEL(col2im_stub, &col2im_kernel);
TP_REGISTER_CPU_KERNEL(conv_add_bias_stub, &add_bias_kernel);
TP_REGISTER_CPU_KERNEL(conv_bias_grad_stub, &bias_grad_kernel);

}  // namespace tp::cpu::TP_CPU_NS
