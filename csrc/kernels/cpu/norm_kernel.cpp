// The normalisation loops of nn_norm.cpp, forward and backward: layer_norm (and rms_norm,
// Note [RMS norm as an uncentred layer norm]), batch_norm (row-major and channels-last) and
// group_norm. Compiled once per CPU capability level; called through the *_norm*_stub stubs.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "kernels/cpu_stubs.h"
#include "ops/nn_rows.h"

namespace tp::cpu::TP_CPU_NS {

namespace {

// ------------------------------------------------------------------ layer_norm, rms_norm

/// Normalises each row: y = (x - mean) * rstd * w + b (w, b may be null). Without `mean`
/// it is an RMS norm: nothing is centred (the mean taken as 0), rstd = 1 / sqrt(mean(x^2) + eps).
template <class T>
void layer_norm_loop(const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, int64_t rows, int64_t len,
                     double eps) {
  parallel_for(0, rows, std::max<int64_t>(1, 8192 / std::max<int64_t>(len, 1)), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const T* xr = x + r * len;
      T* yr = y + r * len;
      const T m = mean ? T(double(rows::sum<T>(len, [&](auto at) { return at(xr); })) / double(len)) : T(0);
      const double ss = double(rows::sum<T>(len, [&](auto at) { return (at(xr) - m) * (at(xr) - m); })) / double(len);
      const T rs = T(1.0 / std::sqrt(std::max(ss, 0.0) + eps));
      if (mean) mean[r] = m;
      rstd[r] = rs;
      if (w && b) for (int64_t i = 0; i < len; ++i) yr[i] = (xr[i] - m) * rs * w[i] + b[i];
      else if (w) for (int64_t i = 0; i < len; ++i) yr[i] = (xr[i] - m) * rs * w[i];
      else if (b) for (int64_t i = 0; i < len; ++i) yr[i] = (xr[i] - m) * rs + b[i];
      else for (int64_t i = 0; i < len; ++i) yr[i] = (xr[i] - m) * rs;
    }
  });
}

/// The gradients of a row-wise normalisation y = (x - mean) * rstd * w + b, in one pass:
/// dx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat)) with gw = g * w; the weight and bias
/// gradients sum g * xhat and g over the rows (each thread into its own partial row).
/// Without `mean`, the RMS norm's: xhat = x * rstd and no mean(gw) term.
template <class T>
void layer_norm_backward_loop(const T* g, const T* x, const T* mean, const T* rstd, const T* w, T* gx, T* gw, T* gb,
                              int64_t rows, int64_t len) {
  const int threads = get_num_threads();
  const bool columns = gw || gb;
  std::vector<T> part(columns ? size_t(2 * len * threads) : 0, T(0));
  parallel_for(0, rows, std::max<int64_t>(1, 8192 / std::max<int64_t>(len, 1)), [&](int64_t lo, int64_t hi) {
    T* pw = columns ? part.data() + 2 * len * std::min(omp_get_thread_num(), threads - 1) : nullptr;
    T* pb = columns ? pw + len : nullptr;
    for (int64_t r = lo; r < hi; ++r) {
      const T* gr = g + r * len;
      const T* xr = x + r * len;
      const T m = mean ? mean[r] : T(0), rs = rstd[r];
      if (gx) {
        T a = 0, c;
        if (w) {
          if (mean) a = rows::sum<T>(len, [&](auto at) { return at(gr) * at(w); });
          c = rows::sum<T>(len, [&](auto at) { return at(gr) * at(w) * (at(xr) - m); });
        } else {
          if (mean) a = rows::sum<T>(len, [&](auto at) { return at(gr); });
          c = rows::sum<T>(len, [&](auto at) { return at(gr) * (at(xr) - m); });
        }
        a /= T(len);
        c = c * rs * rs / T(len);
        T* out = gx + r * len;
        if (w) {
#pragma omp simd
          for (int64_t i = 0; i < len; ++i) out[i] = rs * (gr[i] * w[i] - a - (xr[i] - m) * c);
        } else {
#pragma omp simd
          for (int64_t i = 0; i < len; ++i) out[i] = rs * (gr[i] - a - (xr[i] - m) * c);
        }
      }
      if (columns) {
#pragma omp simd
        for (int64_t i = 0; i < len; ++i) {
          pw[i] += gr[i] * (xr[i] - m) * rs;
          pb[i] += gr[i];
        }
      }
    }
  });
  if (!columns) return;
  for (int64_t i = 0; i < len; ++i) {
    T aw = 0, ab = 0;
    for (int t = 0; t < threads; ++t) {
      aw += part[size_t(2 * len * t + i)];
      ab += part[size_t(2 * len * t + len + i)];
    }
    if (gw) gw[i] = aw;
    if (gb) gb[i] = ab;
  }
}

// ------------------------------------------------------------------ batch_norm

/// A channel's training statistics from its mean m and the sum ss of its squared deviations
/// over `count` values: returns 1/std and updates the running statistics when given (unbiased
/// running variance, as PyTorch).
template <class T>
T train_stats(T m, T ss, int64_t count, double momentum, double eps, T* rm, T* rv) {
  if (rm) *rm = T((1 - momentum) * *rm + momentum * m);
  if (rv) *rv = T((1 - momentum) * *rv + momentum * (count > 1 ? ss / T(count - 1) : T(NAN)));
  return T(1) / std::sqrt((count ? ss / T(count) : T(NAN)) + T(eps));
}

/// gx = a * (g - mg - (x - mean) * k) for a channel: the coefficients from its sums of g (sg)
/// and of g * (x - mean) (sgx), 1/std s and weight wv.
template <class T>
struct InputGradCoef {
  T a, mg, k;
  InputGradCoef(T sg, T sgx, T s, T wv, bool training, int64_t count)
      : a(wv * s), mg(training && count ? sg / T(count) : T(0)), k(training && count ? sgx * s * s / T(count) : T(0)) {}
};

/// batch_norm's forward on row-major (n, c, l) data, channels in parallel.
template <class T>
void batch_norm_nchw(const T* x, T* y, int64_t n, int64_t c, int64_t l, bool training, double momentum, double eps,
                     const T* w, const T* b, T* rm, T* rv, T* mean, T* invstd) {
  const int64_t count = n * l;
  parallel_for(0, c, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t ch = lo; ch < hi; ++ch) {
      T m, is;
      if (training) {
        T s = 0;
        for (int64_t i = 0; i < n; ++i) {
          const T* row = x + (i * c + ch) * l;
          s += rows::sum<T>(l, [&](auto at) { return at(row); });
        }
        m = count ? s / T(count) : T(NAN);
        T v = 0;
        for (int64_t i = 0; i < n; ++i) {
          const T* row = x + (i * c + ch) * l;
          v += rows::sum<T>(l, [&](auto at) { return (at(row) - m) * (at(row) - m); });
        }
        is = train_stats(m, v, count, momentum, eps, rm ? rm + ch : nullptr, rv ? rv + ch : nullptr);
      } else {
        m = rm[ch];
        is = T(1) / std::sqrt(rv[ch] + T(eps));
      }
      mean[ch] = m;
      invstd[ch] = is;
      const T scale = w ? is * w[ch] : is;
      const T shift = (b ? b[ch] : T(0)) - m * scale;
      for (int64_t i = 0; i < n; ++i) {
        const T* row = x + (i * c + ch) * l;
        T* out = y + (i * c + ch) * l;
        for (int64_t j = 0; j < l; ++j) out[j] = row[j] * scale + shift;
      }
    }
  });
}

/// batch_norm's backward on row-major data (see batch_norm_nchw); gx, gw, gb may be null.
template <class T>
void batch_norm_backward_nchw(const T* g, const T* x, int64_t n, int64_t c, int64_t l, const T* mean,
                              const T* invstd, const T* w, bool training, T* gx, T* gw, T* gb) {
  const int64_t count = n * l;
  parallel_for(0, c, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t ch = lo; ch < hi; ++ch) {
      const T mu = mean[ch], s = invstd[ch];
      T sg = 0, sgx = 0;
      for (int64_t i = 0; i < n; ++i) {
        const T* gr = g + (i * c + ch) * l;
        const T* xr = x + (i * c + ch) * l;
        sg += rows::sum<T>(l, [&](auto at) { return at(gr); });
        sgx += rows::sum<T>(l, [&](auto at) { return at(gr) * (at(xr) - mu); });
      }
      if (gw) gw[ch] = sgx * s;
      if (gb) gb[ch] = sg;
      if (!gx) continue;
      const InputGradCoef<T> coef(sg, sgx, s, w ? w[ch] : T(1), training, count);
      for (int64_t i = 0; i < n; ++i) {
        const T* gr = g + (i * c + ch) * l;
        const T* xr = x + (i * c + ch) * l;
        T* out = gx + (i * c + ch) * l;
        for (int64_t j = 0; j < l; ++j) out[j] = coef.a * (gr[j] - coef.mg - (xr[j] - mu) * coef.k);
      }
    }
  });
}

/// Rows of (rows x C) channels-last data, in pieces on the thread budget: f(r).
template <class F>
void for_each_row_nhwc(int64_t rows, int64_t C, F f) {
  parallel_for(0, rows, std::max<int64_t>(1, 32768 / std::max<int64_t>(C, 1)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) f(r);
  });
}

/// batch_norm's forward on channels-last data x (rows = N * spatial, C channels innermost).
template <class T>
void batch_norm_nhwc(const T* x, T* y, int64_t rows, int64_t C, bool training, double momentum, double eps,
                     const T* w, const T* b, T* rm, T* rv, T* mean, T* invstd) {
  if (training) {
    std::vector<T> ss(static_cast<size_t>(C));
    rows::column_sums(rows, C, 1, mean, [&](int64_t r, T* acc) {
      const T* xr = x + r * C;
      for (int64_t ch = 0; ch < C; ++ch) acc[ch] += xr[ch];
    });
    for (int64_t ch = 0; ch < C; ++ch) mean[ch] = rows ? mean[ch] / T(rows) : T(NAN);
    rows::column_sums(rows, C, 1, ss.data(), [&](int64_t r, T* acc) {
      const T* xr = x + r * C;
      for (int64_t ch = 0; ch < C; ++ch) acc[ch] += (xr[ch] - mean[ch]) * (xr[ch] - mean[ch]);
    });
    for (int64_t ch = 0; ch < C; ++ch)
      invstd[ch] = train_stats(mean[ch], ss[size_t(ch)], rows, momentum, eps, rm ? rm + ch : nullptr,
                               rv ? rv + ch : nullptr);
  } else {
    for (int64_t ch = 0; ch < C; ++ch) {
      mean[ch] = rm[ch];
      invstd[ch] = T(1) / std::sqrt(rv[ch] + T(eps));
    }
  }
  std::vector<T> scale(static_cast<size_t>(C)), shift(static_cast<size_t>(C));
  for (int64_t ch = 0; ch < C; ++ch) {
    scale[size_t(ch)] = w ? invstd[ch] * w[ch] : invstd[ch];
    shift[size_t(ch)] = (b ? b[ch] : T(0)) - mean[ch] * scale[size_t(ch)];
  }
  for_each_row_nhwc(rows, C, [&](int64_t r) {
    for (int64_t ch = 0; ch < C; ++ch) y[r * C + ch] = x[r * C + ch] * scale[size_t(ch)] + shift[size_t(ch)];
  });
}

/// batch_norm's backward on channels-last data (see batch_norm_nhwc); gx, gw, gb may be null.
template <class T>
void batch_norm_backward_nhwc(const T* g, const T* x, int64_t rows, int64_t C, const T* mean, const T* invstd,
                              const T* w, bool training, T* gx, T* gw, T* gb) {
  std::vector<T> sums(static_cast<size_t>(2 * C));  // sum g, sum g * (x - mean)
  rows::column_sums(rows, C, 2, sums.data(), [&](int64_t r, T* acc) {
    const T *gr = g + r * C, *xr = x + r * C;
    for (int64_t ch = 0; ch < C; ++ch) {
      acc[ch] += gr[ch];
      acc[C + ch] += gr[ch] * (xr[ch] - mean[ch]);
    }
  });
  std::vector<T> a(static_cast<size_t>(C)), mg(static_cast<size_t>(C)), k(static_cast<size_t>(C));
  for (int64_t ch = 0; ch < C; ++ch) {
    const T sg = sums[size_t(ch)], sgx = sums[size_t(C + ch)];
    if (gw) gw[ch] = sgx * invstd[ch];
    if (gb) gb[ch] = sg;
    const InputGradCoef<T> coef(sg, sgx, invstd[ch], w ? w[ch] : T(1), training, rows);
    a[size_t(ch)] = coef.a;
    mg[size_t(ch)] = coef.mg;
    k[size_t(ch)] = coef.k;
  }
  if (!gx) return;
  for_each_row_nhwc(rows, C, [&](int64_t r) {
    const T *gr = g + r * C, *xr = x + r * C;
    for (int64_t ch = 0; ch < C; ++ch)
      gx[r * C + ch] = a[size_t(ch)] * (gr[ch] - mg[size_t(ch)] - (xr[ch] - mean[ch]) * k[size_t(ch)]);
  });
}

// ------------------------------------------------------------------ group_norm

/// One sample of a group-norm input: C channels of L positions, row-major (channel c's
/// positions adjacent) or channels last (position l's channels adjacent).
template <class T>
struct SamplePlanes {
  bool cl;
  int64_t L, C;
  int64_t at(int64_t c, int64_t l) const { return cl ? l * C + c : c * L + l; }
  /// out[c] = sum over the positions of term(a, b) (`at`-style loaders, as rows::sum's) for a
  /// and b of this sample: row-major, one vector reduction per channel; channels last,
  /// vector code over the channels.
  template <class F>
  void channel_sums(const T* a, const T* b, T* out, F term) const {
    if (!cl) {
      for (int64_t c = 0; c < C; ++c) {
        const T *ar = a + c * L, *br = b + c * L;
        out[c] = rows::sum<T>(L, [&](auto ld) { return term(ld(ar), ld(br), c); });
      }
      return;
    }
    std::fill_n(out, C, T(0));
    for (int64_t l = 0; l < L; ++l)
      for (int64_t c = 0; c < C; ++c) out[c] += term(a[l * C + c], b[l * C + c], c);
  }
  /// out = p[c] * a + q[c] * b + r[c] elementwise.
  void combine(T* out, const T* p, const T* a, const T* q, const T* b, const T* r) const {
    if (!cl) {
      for (int64_t c = 0; c < C; ++c)
        for (int64_t l = 0; l < L; ++l) out[c * L + l] = p[c] * a[c * L + l] + q[c] * b[c * L + l] + r[c];
      return;
    }
    for (int64_t l = 0; l < L; ++l)
      for (int64_t c = 0; c < C; ++c) out[l * C + c] = p[c] * a[l * C + c] + q[c] * b[l * C + c] + r[c];
  }
};

/// group_norm: N samples of C channels of L positions (layout as SamplePlanes), G groups of
/// C/G channels; mean and rstd are (N, G); the affine (w, b may be null) included.
template <class T>
void group_norm_loop(bool cl, const T* x, T* y, int64_t N, int64_t L, int64_t C, int64_t G, double eps, const T* w,
                     const T* b, T* mean, T* rstd) {
  const int64_t cpg = C / G;
  const T count = T(L * cpg);
  const SamplePlanes<T> sp{cl, L, C};
  parallel_for(0, N, 1, [&](int64_t nb, int64_t ne) {
    std::vector<T> acc(static_cast<size_t>(C)), mc(acc), scale(acc), shift(acc), zero(acc);
    auto group_total = [&](int64_t g) { return std::accumulate(&acc[size_t(g * cpg)], &acc[size_t(g * cpg)] + cpg, T(0)); };
    for (int64_t n = nb; n < ne; ++n) {
      const T* xn = x + n * L * C;
      sp.channel_sums(xn, xn, acc.data(), [](auto v, auto, int64_t) { return v; });
      for (int64_t g = 0; g < G; ++g) {
        mean[n * G + g] = L ? group_total(g) / count : T(NAN);
        std::fill_n(&mc[size_t(g * cpg)], cpg, mean[n * G + g]);
      }
      sp.channel_sums(xn, xn, acc.data(), [&](auto v, auto, int64_t c) { return (v - mc[size_t(c)]) * (v - mc[size_t(c)]); });
      for (int64_t g = 0; g < G; ++g) rstd[n * G + g] = T(1) / std::sqrt((L ? group_total(g) / count : T(NAN)) + T(eps));
      for (int64_t c = 0; c < C; ++c) {
        scale[size_t(c)] = rstd[n * G + c / cpg] * (w ? w[c] : T(1));
        shift[size_t(c)] = (b ? b[c] : T(0)) - mc[size_t(c)] * scale[size_t(c)];
      }
      sp.combine(y + n * L * C, scale.data(), xn, zero.data(), xn, shift.data());
    }
  });
}

/// group_norm's backward (see group_norm_loop); gx, gw, gb may be null. Per sample the sums
/// of gy * x and of gy per channel give gx = p[c] gy + q[c] x + r[c].
template <class T>
void group_norm_backward_loop(bool cl, const T* gy, const T* x, int64_t N, int64_t L, int64_t C, int64_t G,
                              const T* mean, const T* rstd, const T* w, T* gx, T* gw, T* gb) {
  const int64_t cpg = C / G;
  const T count = T(L * cpg);
  const SamplePlanes<T> sp{cl, L, C};
  std::vector<T> ds(static_cast<size_t>(N * C)), db(ds);  // per (sample, channel): sum gy * x, sum gy
  parallel_for(0, N, 1, [&](int64_t nb, int64_t ne) {
    std::vector<T> p(static_cast<size_t>(C)), q(p), r(p);
    for (int64_t n = nb; n < ne; ++n) {
      const T *gn = gy + n * L * C, *xn = x + n * L * C;
      T *dsn = &ds[size_t(n * C)], *dbn = &db[size_t(n * C)];
      sp.channel_sums(gn, xn, dsn, [](auto g, auto v, int64_t) { return g * v; });
      sp.channel_sums(gn, xn, dbn, [](auto g, auto, int64_t) { return g; });
      if (!gx) continue;
      for (int64_t g = 0; g < G; ++g) {
        const T m = mean[n * G + g], rs = rstd[n * G + g];
        T a = 0, bsum = 0;  // sums over the group of w db and of w (ds - m db)
        for (int64_t c = g * cpg; c < (g + 1) * cpg; ++c) {
          const T wc = w ? w[c] : T(1);
          a += wc * dbn[c];
          bsum += wc * (dsn[c] - m * dbn[c]);
          p[size_t(c)] = rs * wc;
        }
        const T qg = -rs * rs * rs * bsum / count, rg = -rs * a / count - m * qg;
        std::fill_n(&q[size_t(g * cpg)], cpg, qg);
        std::fill_n(&r[size_t(g * cpg)], cpg, rg);
      }
      sp.combine(gx + n * L * C, p.data(), gn, q.data(), xn, r.data());
    }
  });
  for (int64_t c = 0; c < C; ++c) {
    T sw = 0, sb = 0;
    for (int64_t n = 0; n < N; ++n) {
      sw += (ds[size_t(n * C + c)] - mean[n * G + c / cpg] * db[size_t(n * C + c)]) * rstd[n * G + c / cpg];
      sb += db[size_t(n * C + c)];
    }
    if (gw) gw[c] = sw;
    if (gb) gb[c] = sb;
  }
}

// ------------------------------------------------------------------ entry points

void layer_norm_kernel(DType dt, const void* x, const void* w, const void* b, void* y, void* mean, void* rstd,
                       int64_t rows, int64_t len, double eps) {
  visit_dtype(dt, [&](auto v) {
    using T = decltype(v);
    if constexpr (std::is_floating_point_v<T>) {
      T *m = static_cast<T*>(mean), *rs = static_cast<T*>(rstd);
      if (len)
        layer_norm_loop(static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(b),
                        static_cast<T*>(y), m, rs, rows, len, eps);
      else
        for (int64_t r = 0; r < rows; ++r) {
          if (m) m[r] = T(NAN);
          rs[r] = T(NAN);
        }
    }
  });
}

void layer_norm_backward_kernel(DType dt, const void* g, const void* x, const void* mean, const void* rstd,
                                const void* w, void* gx, void* gw, void* gb, int64_t rows, int64_t len) {
  visit_dtype(dt, [&](auto v) {
    using T = decltype(v);
    if constexpr (std::is_floating_point_v<T>)
      layer_norm_backward_loop(static_cast<const T*>(g), static_cast<const T*>(x), static_cast<const T*>(mean),
                               static_cast<const T*>(rstd), static_cast<const T*>(w), static_cast<T*>(gx),
                               static_cast<T*>(gw), static_cast<T*>(gb), rows, len);
  });
}

void batch_norm_kernel(DType dt, bool channels_last, const void* x, void* y, int64_t n, int64_t c, int64_t l,
                       bool training, double momentum, double eps, const void* w, const void* b, void* rm, void* rv,
                       void* mean, void* invstd) {
  visit_dtype(dt, [&](auto v) {
    using T = decltype(v);
    if constexpr (std::is_floating_point_v<T>) {
      const T *xp = static_cast<const T*>(x), *wp = static_cast<const T*>(w), *bp = static_cast<const T*>(b);
      T *yp = static_cast<T*>(y), *rmp = static_cast<T*>(rm), *rvp = static_cast<T*>(rv);
      if (channels_last)
        batch_norm_nhwc(xp, yp, n * l, c, training, momentum, eps, wp, bp, rmp, rvp, static_cast<T*>(mean),
                        static_cast<T*>(invstd));
      else
        batch_norm_nchw(xp, yp, n, c, l, training, momentum, eps, wp, bp, rmp, rvp, static_cast<T*>(mean),
                        static_cast<T*>(invstd));
    }
  });
}

void batch_norm_backward_kernel(DType dt, bool channels_last, const void* g, const void* x, int64_t n, int64_t c,
                                int64_t l, const void* mean, const void* invstd, const void* w, bool training,
                                void* gx, void* gw, void* gb) {
  visit_dtype(dt, [&](auto v) {
    using T = decltype(v);
    if constexpr (std::is_floating_point_v<T>) {
      const T *gp = static_cast<const T*>(g), *xp = static_cast<const T*>(x), *wp = static_cast<const T*>(w);
      const T *mp = static_cast<const T*>(mean), *ip = static_cast<const T*>(invstd);
      T *gxp = static_cast<T*>(gx), *gwp = static_cast<T*>(gw), *gbp = static_cast<T*>(gb);
      if (channels_last)
        batch_norm_backward_nhwc(gp, xp, n * l, c, mp, ip, wp, training, gxp, gwp, gbp);
      else
        batch_norm_backward_nchw(gp, xp, n, c, l, mp, ip, wp, training, gxp, gwp, gbp);
    }
  });
}

void group_norm_kernel(DType dt, bool channels_last, const void* x, void* y, int64_t N, int64_t L, int64_t C,
                       int64_t G, double eps, const void* w, const void* b, void* mean, void* rstd) {
  visit_dtype(dt, [&](auto v) {
    using T = decltype(v);
    if constexpr (std::is_floating_point_v<T>)
      group_norm_loop(channels_last, static_cast<const T*>(x), static_cast<T*>(y), N, L, C, G, eps,
                      static_cast<const T*>(w), static_cast<const T*>(b), static_cast<T*>(mean),
                      static_cast<T*>(rstd));
  });
}

void group_norm_backward_kernel(DType dt, bool channels_last, const void* gy, const void* x, int64_t N, int64_t L,
                                int64_t C, int64_t G, const void* mean, const void* rstd, const void* w, void* gx,
                                void* gw, void* gb) {
  visit_dtype(dt, [&](auto v) {
    using T = decltype(v);
    if constexpr (std::is_floating_point_v<T>)
      group_norm_backward_loop(channels_last, static_cast<const T*>(gy), static_cast<const T*>(x), N, L, C, G,
                               static_cast<const T*>(mean), static_cast<const T*>(rstd), static_cast<const T*>(w),
                               static_cast<T*>(gx), static_cast<T*>(gw), static_cast<T*>(gb));
  });
}

}  // namespace

TP_REGISTER_CPU_KERNEL(layer_norm_stub, &layer_norm_kernel);
TP_REGISTER_CPU_KERNEL(layer_norm_backward_stub, &layer_norm_backward_kernel);
TP_REGISTER_CPU_KERNEL(batch_norm_stub, &batch_norm_kernel);
TP_REGISTER_CPU_KERNEL(batch_norm_backward_stub, &batch_norm_backward_kernel);
TP_REGISTER_CPU_KERNEL(group_norm_stub, &group_norm_kernel);
TP_REGISTER_CPU_KERNEL(group_norm_backward_stub, &group_norm_backward_kernel);

}  // namespace tp::cpu::TP_CPU_NS
