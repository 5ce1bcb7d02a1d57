// Depthwise convolutions (groups == input channels == output channels) as direct loops:
// the forward, the input gradient and the weight gradient.
//
// Note [Depthwise row kernels]
// Each output row of a depthwise convolution is a sum of taps: tap t adds w_t times the
// input read at offset off_t + o * s of the row's base. The plane that is read is first
// copied with zero rows and columns around it where the padding needs them (`Padded`), so
// every tap of every row reads inside the copy: a 2-D plane has one tap list, the same for
// all its rows (a 3-D one, per output depth), and no loop checks bounds. `add_taps` runs up
// to nine taps over a block of rows, each row one vector pass (weights held in registers);
// the input gradient (a transposed convolution) is the same loop over the flipped kernel
// reading gy. The weight gradient is the adjoint: `dot_taps` sums grad times shifted input
// into one vector accumulator per tap, held in registers over the whole plane.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "ops/nn_conv.h"
#include "ops/nn_rows.h"

namespace tp::conv {

namespace {

/// Partial sums per weight-gradient accumulator: a vector's lanes for float types.
template <class T>
constexpr int kAccLanes = std::is_floating_point_v<T> ? rows::kLanes<T> : 1;

/// Planes of `depth` x `rows` x `w`, read through a copy with zero rows above and below and
/// zero columns left and right where any of those is positive (the planes themselves otherwise).
template <class T>
class Padded {
 public:
  Padded(int64_t depth, int64_t rows, int64_t w, int64_t top, int64_t bottom, int64_t left, int64_t right)
      : depth_(depth), rows_(rows), w_(w), top_(top), left_(left), height_(top + rows + bottom),
        width_(left + w + right) {
    if (top > 0 || bottom > 0 || left > 0 || right > 0)
      buf_.assign(static_cast<size_t>(depth * height_ * width_), T(0));
  }
  /// The padded planes of `src`: depth planes of height() rows of width() columns.
  const T* of(const T* src) {
    if (buf_.empty()) return src;
    for (int64_t d = 0; d < depth_; ++d)
      for (int64_t r = 0; r < rows_; ++r)
        std::copy_n(src + (d * rows_ + r) * w_, w_, buf_.data() + (d * height_ + top_ + r) * width_ + left_);
    return buf_.data();
  }
  int64_t height() const { return height_; }
  int64_t width() const { return width_; }
  int64_t top() const { return top_; }
  int64_t left() const { return left_; }

 private:
  int64_t depth_, rows_, w_, top_, left_, height_, width_;
  std::vector<T> buf_;
};

/// A tap list: offsets into the (padded) input, weights, and kernel positions (slots).
template <class T>
struct Taps {
  std::vector<int64_t> off, slot;
  std::vector<T> w;
  int64_t n = 0;
  explicit Taps(int64_t k) : off(size_t(k)), slot(size_t(k)), w(size_t(k)) {}
  void add(int64_t o, T weight, int64_t s) {
    off[size_t(n)] = o;
    w[size_t(n)] = weight;
    slot[size_t(n++)] = s;
  }
};

/// out[r * os + o] += sum_m w[m] * in[r * is + off[m] + o * s] for r < rows, o < n.
template <class T, int M>
void add_taps(T* out, int64_t os, const T* in, int64_t is, const int64_t* off, const T* w, int64_t rows, int64_t n,
              int64_t s) {
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

/// add_taps over a whole tap list, up to nine taps per pass.
template <class T>
void run_taps(T* out, int64_t os, const T* in, int64_t is, const Taps<T>& taps, int64_t rows, int64_t n, int64_t s) {
  int64_t t = 0;
  for (; t + 9 <= taps.n; t += 9) add_taps<T, 9>(out, os, in, is, &taps.off[t], &taps.w[t], rows, n, s);
  for (; t + 3 <= taps.n; t += 3) add_taps<T, 3>(out, os, in, is, &taps.off[t], &taps.w[t], rows, n, s);
  for (; t < taps.n; ++t) add_taps<T, 1>(out, os, in, is, &taps.off[t], &taps.w[t], rows, n, s);
}

/// acc[slot[m]] += sum over r < rows, o < n of g[r * gs + o] * in[r * is + off[m] + o * s];
/// each slot holds kAccLanes<T> partial sums.
template <class T, int M>
void dot_taps(T* acc, const int64_t* slot, const T* g, int64_t gs, const T* in, int64_t is, const int64_t* off,
              int64_t rows, int64_t n, int64_t s) {
  constexpr int W = kAccLanes<T>;
  int64_t done = 0;  // columns the vector loop covers
  if constexpr (std::is_floating_point_v<T>) {
    if (s == 1) {
      done = n / W * W;
      rows::Vec<T> a[M];
      for (int m = 0; m < M; ++m) a[m] = rows::load(acc + slot[m] * W);
      for (int64_t r = 0; r < rows; ++r) {
        const T* gr = g + r * gs;
        const T* src[M];
        for (int m = 0; m < M; ++m) src[m] = in + r * is + off[m];
        for (int64_t o = 0; o < done; o += W) {
          const rows::Vec<T> gv = rows::load(gr + o);
          for (int m = 0; m < M; ++m) a[m] += gv * rows::load(src[m] + o);
        }
      }
      for (int m = 0; m < M; ++m) rows::store(acc + slot[m] * W, a[m]);
    }
  }
  if (done == n) return;
  T tail[M] = {};
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = done; o < n; ++o)
      for (int m = 0; m < M; ++m) tail[m] += g[r * gs + o] * in[r * is + off[m] + o * s];
  for (int m = 0; m < M; ++m) acc[slot[m] * W] += tail[m];
}

/// dot_taps over a whole tap list, up to nine taps per pass.
template <class T>
void run_dots(T* acc, const T* g, int64_t gs, const T* in, int64_t is, const Taps<T>& taps, int64_t rows, int64_t n,
              int64_t s) {
  int64_t t = 0;
  for (; t + 9 <= taps.n; t += 9) dot_taps<T, 9>(acc, &taps.slot[t], g, gs, in, is, &taps.off[t], rows, n, s);
  for (; t + 3 <= taps.n; t += 3) dot_taps<T, 3>(acc, &taps.slot[t], g, gs, in, is, &taps.off[t], rows, n, s);
  for (; t < taps.n; ++t) dot_taps<T, 1>(acc, &taps.slot[t], g, gs, in, is, &taps.off[t], rows, n, s);
}

/// The input planes of a plain convolution, padded so that every read is inside.
template <class T>
Padded<T> plain_padding(const ConvShape& g) {
  int64_t extra[2];  // rows / columns read past the end
  for (int i = 1; i < 3; ++i)
    extra[i - 1] = std::max<int64_t>(0, (g.out[i] - 1) * g.s[i] + (g.k[i] - 1) * g.d[i] - g.p[i] - (g.in[i] - 1));
  return Padded<T>(g.in[0], g.in[1], g.in[2], g.p[1], extra[0], g.p[2], extra[1]);
}

/// The taps of the output rows at depth od of a plain convolution over the padded planes
/// `pad` (output row oh starts at padded row oh * s1): each kernel position whose input
/// depth exists, weights from `w` (null: slots only).
template <class T>
void plain_taps(const ConvShape& g, const Padded<T>& pad, const T* w, int64_t od, Taps<T>& taps) {
  taps.n = 0;
  for (int64_t kd = 0; kd < g.k[0]; ++kd) {
    const int64_t id = od * g.s[0] - g.p[0] + kd * g.d[0];
    if (id < 0 || id >= g.in[0]) continue;
    for (int64_t kh = 0; kh < g.k[1]; ++kh)
      for (int64_t kw = 0; kw < g.k[2]; ++kw) {
        const int64_t slot = (kd * g.k[1] + kh) * g.k[2] + kw;
        taps.add((id * pad.height() + kh * g.d[1]) * pad.width() + kw * g.d[2], w ? w[slot] : T(0), slot);
      }
  }
}

/// The gy planes of an input gradient along a stride-1 width, padded so that every read is
/// inside (rows too when the height's stride is 1).
template <class T>
Padded<T> transposed_padding(const ConvShape& g) {
  int64_t before[2], after[2];
  for (int i = 1; i < 3; ++i) {
    const bool pad = i == 2 || g.s[1] == 1;
    before[i - 1] = pad ? std::max<int64_t>(0, (g.k[i] - 1) * g.d[i] - g.p[i]) : 0;
    after[i - 1] = pad ? std::max<int64_t>(0, g.in[i] + g.p[i] - g.out[i]) : 0;
  }
  return Padded<T>(g.out[0], g.out[1], g.out[2], before[0], after[0], before[1], after[1]);
}

/// The taps of input-gradient row (id, ih) along a stride-1 width: each gy row (od, oh) that
/// reads it, with its kernel row flipped. Offsets are from the padded gy planes' start;
/// with `any_row` (height stride 1: every kernel row reads inside the padded planes) they
/// are from the start of padded row ih, and the list serves every row at depth id.
template <class T>
void transposed_taps(const ConvShape& g, const Padded<T>& pad, const T* w, int64_t id, int64_t ih, bool any_row,
                     Taps<T>& taps) {
  taps.n = 0;
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
      for (int64_t kw = 0; kw < g.k[2]; ++kw) {
        const int64_t slot = (kd * g.k[1] + kh) * g.k[2] + kw;
        taps.add((td / g.s[0] * pad.height() + row) * pad.width() + pad.left() + g.p[2] - kw * g.d[2], w[slot], slot);
      }
    }
  }
}

template <class T>
void forward_planes(const ConvShape& g, const T* x, const T* w, const T* bias, T* y) {
  const int64_t K = g.k_numel(), L = g.out_numel(), C = g.cin, rows = g.out[1], n = g.out[2];
  parallel_for(0, g.n * C, 1, [&](int64_t b, int64_t e) {
    Taps<T> taps(K);
    Padded<T> pad = plain_padding<T>(g);
    for (int64_t nc = b; nc < e; ++nc) {
      const T* xc = pad.of(x + nc * g.in_numel());
      for (int64_t od = 0; od < g.out[0]; ++od) {
        T* out = y + nc * L + od * rows * n;
        std::fill_n(out, rows * n, bias ? bias[nc % C] : T(0));
        plain_taps(g, pad, w + (nc % C) * K, od, taps);
        run_taps(out, n, xc, g.s[1] * pad.width(), taps, rows, n, g.s[2]);
      }
    }
  });
}

template <class T>
void input_planes(const ConvShape& g, const T* gy, const T* w, T* gx) {
  const int64_t K = g.k_numel(), L = g.out_numel(), C = g.cin, s2 = g.s[2], rows = g.in[1], n = g.in[2];
  parallel_for(0, g.n * C, 1, [&](int64_t b, int64_t e) {
    Taps<T> taps(K);
    Padded<T> pad = transposed_padding<T>(g);
    for (int64_t nc = b; nc < e; ++nc) {
      T* gxc = gx + nc * g.in_numel();
      const T* wc = w + (nc % C) * K;
      if (s2 == 1) {
        const T* gyc = pad.of(gy + nc * L);
        std::fill_n(gxc, g.in_numel(), T(0));
        for (int64_t id = 0; id < g.in[0]; ++id) {
          T* out = gxc + id * rows * n;
          if (g.s[1] == 1) {  // one tap list for the rows at this depth
            transposed_taps(g, pad, wc, id, 0, true, taps);
            run_taps(out, n, gyc, pad.width(), taps, rows, n, 1);
            continue;
          }
          for (int64_t ih = 0; ih < rows; ++ih) {
            transposed_taps(g, pad, wc, id, ih, false, taps);
            run_taps(out + ih * n, n, gyc, 0, taps, 1, n, 1);
          }
        }
        continue;
      }
      // a strided width: each gy element adds into every column its kernel row reaches
      const T* gyc = gy + nc * L;
      std::fill_n(gxc, g.in_numel(), T(0));
      for (int64_t kk = 0; kk < K; ++kk) {
        const int64_t kd = kk / (g.k[1] * g.k[2]), kh = kk / g.k[2] % g.k[1], kw = kk % g.k[2];
        int64_t lo, hi;
        valid_range(g.out[2], g.in[2], kw * g.d[2] - g.p[2], s2, lo, hi);
        const T wv = wc[kk];
        for_each_row(g, kd, kh, kw, [&](int64_t orow, int64_t base) {
          for (int64_t ow = lo; ow < hi; ++ow) gxc[base + ow * s2] += wv * gyc[orow + ow];
        });
      }
    }
  });
}

template <class T>
void weight_channels(const ConvShape& g, const T* gy, const T* x, T* gw) {
  const int64_t K = g.k_numel(), L = g.out_numel(), C = g.cin, rows = g.out[1], n = g.out[2];
  constexpr int W = kAccLanes<T>;
  parallel_for(0, C, 1, [&](int64_t b, int64_t e) {
    Taps<T> taps(K);
    std::vector<T> acc(static_cast<size_t>(K * W));
    Padded<T> pad = plain_padding<T>(g);
    for (int64_t c = b; c < e; ++c) {
      std::fill(acc.begin(), acc.end(), T(0));
      for (int64_t i = 0; i < g.n; ++i) {
        const T* xc = pad.of(x + (i * C + c) * g.in_numel());
        for (int64_t od = 0; od < g.out[0]; ++od) {
          plain_taps<T>(g, pad, nullptr, od, taps);
          run_dots(acc.data(), gy + (i * C + c) * L + od * rows * n, n, xc, g.s[1] * pad.width(), taps, rows, n,
                   g.s[2]);
        }
      }
      for (int64_t k = 0; k < K; ++k) {
        T total = 0;
        for (int j = 0; j < W; ++j) total += acc[size_t(k * W + j)];
        gw[c * K + k] = total;
      }
    }
  });
}

/// Calls f(T{}) for the dtypes the kernels compute in (not bool, float16, bfloat16).
template <class F>
void visit_kernel_dtype(DType dt, F&& f) {
  visit_dtype(dt, [&](auto t) {
    using T = decltype(t);
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) f(t);
  });
}

}  // namespace

void depthwise_forward(const ConvShape& g, const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y) {
  visit_kernel_dtype(x.dtype(), [&](auto t) {
    using T = decltype(t);
    forward_planes<T>(g, x.data<T>(), w.data<T>(), bias.defined() ? bias.data<T>() : nullptr, y.data<T>());
  });
}

void depthwise_input(const ConvShape& g, const Tensor& gy, const Tensor& w, const Tensor& gx) {
  visit_kernel_dtype(gy.dtype(), [&](auto t) {
    using T = decltype(t);
    input_planes<T>(g, gy.data<T>(), w.data<T>(), gx.data<T>());
  });
}

void depthwise_weight(const ConvShape& g, const Tensor& gy, const Tensor& x, const Tensor& gw) {
  visit_kernel_dtype(x.dtype(), [&](auto t) {
    using T = decltype(t);
    weight_channels<T>(g, gy.data<T>(), x.data<T>(), gw.data<T>());
  });
}

}  // namespace tp::conv
