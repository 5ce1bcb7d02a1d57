// Pooling's CPU loops (Note [Pooling windows]): max and average pooling and their gradients
// over planes (row-major) or over rows of channels (channels last). Compiled once per CPU
// capability level; nn_pool.cpp calls them through the pooling stubs.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "kernels/cpu/conv/float_vec.h"
#include "kernels/cpu_stubs.h"
#include "ops/nn_pool.h"

namespace tp::cpu::TP_CPU_NS {

namespace {

using pool::PoolShape;
using pool::Window;

/// The divisor of output (a, b, c)'s window: `divisor`, or where 0 the window's size (with
/// the padding when counted).
inline double window_divisor(const PoolShape& g, int64_t divisor, int64_t a, int64_t b, int64_t c) {
  return divisor ? double(divisor) : g.w[0].pad_count[a] * g.w[1].pad_count[b] * g.w[2].pad_count[c];
}

/// Calls f(out_flat, in_flat_offsets...) over every output position of one plane.
template <class F>
inline void for_each_output(const PoolShape& g, F f) {
  int64_t o = 0;
  for (int64_t a = 0; a < g.out[0]; ++a)
    for (int64_t b = 0; b < g.out[1]; ++b)
      for (int64_t c = 0; c < g.out[2]; ++c, ++o) f(o, a, b, c);
}

/// The update of one output's running maximum by the element v at input position `at`: v wins
/// when larger, and a NaN always wins (a later NaN takes the index), as PyTorch's kernels.
/// Branch-free but for NaNs: which element wins is data-dependent, a branch would mispredict.
template <class T>
inline void max_step(T& bv, int64_t& best, T v, int64_t at) {
  if (__builtin_expect(v != v, 0)) {
    bv = v;
    best = at;
    return;
  }
  const int64_t take = -int64_t(v > bv);  // all ones when v wins
  best ^= (best ^ at) & take;
  bv = std::max(bv, v);
}

/// IntVec<W>::type: W int32 lanes, the mask and index type beside FloatVec<W>.
template <int W>
struct IntVec {
  typedef int32_t type __attribute__((vector_size(W * sizeof(int32_t))));
};

/// 0, 1, ..., W - 1.
template <class VI, size_t... I>
inline VI lane_ids(std::index_sequence<I...>) {
  return VI{int32_t(I)...};
}

/// Elements 0, 2, ..., 2W - 2 from lo (elements 0 to W - 1) and hi (elements W - 1 to 2W - 2):
/// hi starts one early so that nothing after the last element used is read.
template <class V, size_t... I>
inline V evens(V lo, V hi, std::index_sequence<I...>) {
  return __builtin_shufflevector(lo, hi, int(2 * I + (2 * I >= sizeof...(I) ? 1 : 0))...);
}

/// B output columns from c of one output row, whose windows lie wholly inside the input row, S
/// (1 or 2) apart, for float planes below 2^31 elements: each window element is visited for all
/// B columns before the next, so the B maxima are independent chains side by side in vector
/// registers (Note [Max pooling by columns]).
template <int B, int S>
inline void max_pool_block(const float* xp, float* yp, int64_t* ip, int64_t base, const int64_t* rows, int64_t n,
                           int64_t c, int64_t b0, int64_t kw, int64_t s2) {
  using VF = typename FloatVec<B>::type;
  using VI = typename IntVec<B>::type;
  const VI lane = lane_ids<VI>(std::make_index_sequence<B>{}) * S;
  VF bv = vsplat<VF>(-std::numeric_limits<float>::infinity());
  VI bi = int32_t(base + b0 + c * S) + lane;  // an empty window (n = 0) keeps its first position
  for (int64_t k = 0; k < n; ++k)
    for (int64_t l = 0; l < kw; ++l) {
      const int64_t off = rows[k] + b0 + l * s2 + c * S;
      VF v;
      if constexpr (S == 1) v = vload<VF>(xp + off);
      else v = evens(vload<VF>(xp + off), vload<VF>(xp + off + B - 1), std::make_index_sequence<B>{});
      const VI take = (v > bv) | (v != v);
      bv = take ? v : bv;
      bi = take ? int32_t(off) + lane : bi;
    }
  vstore(yp + c, bv);
  for (int j = 0; j < B; ++j) ip[c + j] = bi[j];
}

/// Columns [c0, c1) of an output row in blocks of 16, 8 and 4; returns where it stopped.
template <int S>
inline int64_t max_pool_columns(const float* xp, float* yp, int64_t* ip, int64_t base, const int64_t* rows,
                                int64_t n, int64_t c0, int64_t c1, int64_t b0, int64_t kw, int64_t s2) {
  int64_t c = c0;
  for (; c + 16 <= c1; c += 16) max_pool_block<16, S>(xp, yp, ip, base, rows, n, c, b0, kw, s2);
  if (c + 8 <= c1) {
    max_pool_block<8, S>(xp, yp, ip, base, rows, n, c, b0, kw, s2);
    c += 8;
  }
  if (c + 4 <= c1) {
    max_pool_block<4, S>(xp, yp, ip, base, rows, n, c, b0, kw, s2);
    c += 4;
  }
  return c;
}

// Note [Max pooling by columns]
// A window's maximum is a chain of dependent compares (each takes the running maximum), so a
// loop that finishes one output before starting the next runs at the compare's latency: about
// 1.5 ns per input element at any size on the development machine (64x64x8x8 -> 2x2: 420 us;
// PyTorch's 1.5 ms). The output row's interior columns instead run in blocks of 16, 8 and 4
// (max_pool_block) that take one window element at a time for the whole block: the chains run
// side by side in vector registers, with the row's stride known at compile time (1 and 2;
// other strides keep the per-output loop) so that the strided loads need no gather. A loop
// over a row's columns of run-time length (`omp simd`) was slower still on small planes (5.8
// ns per element at 8x8: its prologue and remainder cost more than the 4 columns' work).
// Columns whose windows are clipped by the padding keep the per-output loop. Each output visits
// its window in the same order in both, so which of equal maxima and which NaN wins is the same.

/// Max pooling of one plane: y and idx, the winner of each window. `rows` holds the first
/// input positions of an output row's window rows (g.w[0].count x g.w[1].count at most).
/// [c0, c1): the output columns whose windows are not clipped, cs apart (Note [Max pooling by
/// columns]).
template <class T>
[[gnu::noinline]] void max_pool_plane(const PoolShape& g, const T* xp, T* yp, int64_t* ip, int64_t* rows,
                                      int64_t c0, int64_t c1, int64_t cs) {
  const Window &w0 = g.w[0], &w1 = g.w[1], &w2 = g.w[2];
  const T lowest = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                        : std::numeric_limits<T>::lowest();
  const int64_t s2 = w2.step;
  const int64_t b0 = c1 > c0 ? w2.begin[c0] - c0 * cs : 0, kw = c1 > c0 ? w2.count[c0] : 0;
  for (int64_t a = 0; a < g.out[0]; ++a)
    for (int64_t b = 0; b < g.out[1]; ++b) {
      const int64_t base = (w0.begin[a] * g.in[1] + w1.begin[b]) * g.in[2];
      int64_t n = 0;
      for (int64_t i = 0; i < w0.count[a]; ++i)
        for (int64_t j = 0; j < w1.count[b]; ++j) rows[n++] = base + (i * w0.step * g.in[1] + j * w1.step) * g.in[2];
      auto one = [&](int64_t c) {
        int64_t best = base + w2.begin[c];
        T bv = lowest;
        for (int64_t k = 0; k < n; ++k)
          for (int64_t at = rows[k] + w2.begin[c], end = at + w2.count[c] * s2; at != end; at += s2)
            max_step(bv, best, xp[at], at);
        yp[c] = bv;
        ip[c] = best;
      };
      int64_t c = 0;
      for (; c < c0; ++c) one(c);
      if constexpr (std::is_same_v<T, float>) {
        if (g.in_numel() <= INT32_MAX && cs == 2)
          c = max_pool_columns<2>(xp, yp, ip, base, rows, n, c0, c1, b0, kw, s2);
        else if (g.in_numel() <= INT32_MAX && cs == 1)
          c = max_pool_columns<1>(xp, yp, ip, base, rows, n, c0, c1, b0, kw, s2);
      }
      for (; c < g.out[2]; ++c) one(c);
      yp += g.out[2];
      ip += g.out[2];
    }
}

template <class T>
void max_pool_kernel(const PoolShape& g, const T* x, T* y, int64_t* idx) {
  int64_t most = 0;  // the most window rows of an output row
  for (int64_t a = 0; a < g.out[0]; ++a)
    for (int64_t b = 0; b < g.out[1]; ++b) most = std::max(most, g.w[0].count[a] * g.w[1].count[b]);
  // the output columns whose windows are whole: the same count, at a fixed stride from the first
  const Window& w2 = g.w[2];
  int64_t full = 0;
  for (int64_t c = 0; c < g.out[2]; ++c) full = std::max(full, w2.count[c]);
  int64_t c0 = 0, c1 = g.out[2];
  while (c0 < c1 && w2.count[c0] != full) ++c0;
  while (c1 > c0 && w2.count[c1 - 1] != full) --c1;
  const int64_t cs = c1 - c0 > 1 ? w2.begin[c0 + 1] - w2.begin[c0] : 1;
  for (int64_t c = c0 + 1; c < c1; ++c)
    if (w2.count[c] != full || w2.begin[c] - w2.begin[c - 1] != cs) c1 = c0;
  parallel_for(0, g.planes, 1, [&](int64_t pb, int64_t pe) {
    std::vector<int64_t> rows(static_cast<size_t>(most));
    for (int64_t pl = pb; pl < pe; ++pl)
      max_pool_plane(g, x + pl * g.in_numel(), y + pl * g.out_numel(), idx + pl * g.out_numel(), rows.data(), c0,
                     c1, cs);
  });
}

template <class T>
void avg_pool_kernel(const PoolShape& g, const T* x, T* y, int64_t divisor) {
  const Window &w0 = g.w[0], &w1 = g.w[1], &w2 = g.w[2];
  using Acc = std::conditional_t<std::is_floating_point_v<T>, T, int64_t>;
  parallel_for(0, g.planes, 1, [&](int64_t pb, int64_t pe) {
    for (int64_t pl = pb; pl < pe; ++pl) {
      const T* xp = x + pl * g.in_numel();
      T* yp = y + pl * g.out_numel();
      for_each_output(g, [&](int64_t o, int64_t a, int64_t b, int64_t c) {
        Acc acc = 0;
        for (int64_t i = 0; i < w0.count[a]; ++i)
          for (int64_t j = 0; j < w1.count[b]; ++j) {
            const T* row = xp + ((w0.begin[a] + i) * g.in[1] + w1.begin[b] + j) * g.in[2] + w2.begin[c];
            for (int64_t l = 0; l < w2.count[c]; ++l) acc += row[l];
          }
        const double div = window_divisor(g, divisor, a, b, c);
        if constexpr (std::is_floating_point_v<T>) yp[o] = T(acc / T(div));
        else yp[o] = T(acc / int64_t(div));  // integer division, as PyTorch's integer kernels
      });
    }
  });
}

template <class T>
void avg_pool_backward_kernel(const PoolShape& g, const T* gy, T* gx, int64_t divisor) {
  const Window &w0 = g.w[0], &w1 = g.w[1], &w2 = g.w[2];
  parallel_for(0, g.planes, 1, [&](int64_t pb, int64_t pe) {
    for (int64_t pl = pb; pl < pe; ++pl) {
      T* xp = gx + pl * g.in_numel();
      const T* yp = gy + pl * g.out_numel();
      std::fill(xp, xp + g.in_numel(), T(0));
      for_each_output(g, [&](int64_t o, int64_t a, int64_t b, int64_t c) {
        const double div = window_divisor(g, divisor, a, b, c);
        const T v = T(yp[o] / T(div));
        for (int64_t i = 0; i < w0.count[a]; ++i)
          for (int64_t j = 0; j < w1.count[b]; ++j) {
            T* row = xp + ((w0.begin[a] + i) * g.in[1] + w1.begin[b] + j) * g.in[2] + w2.begin[c];
            for (int64_t l = 0; l < w2.count[c]; ++l) row[l] += v;
          }
      });
    }
  });
}

// Channels-last kernels (Note [Channels-last results]): the planes of one sample are
// interleaved, so each output position runs its window once with the channels innermost.

/// Calls f(u, n, first input position, a, b, c) for each output position u = n * out + o of
/// `batch` samples, o = (a, b, c), on the thread budget.
template <class F>
void for_each_output_nhwc(const PoolShape& g, int64_t batch, int64_t channels, F f) {
  const int64_t out = g.out_numel();
  parallel_for(0, batch * out, std::max<int64_t>(1, 2048 / std::max<int64_t>(channels, 1)),
               [&](int64_t b, int64_t e) {
    for (int64_t u = b; u < e; ++u) {
      const int64_t o = u % out, a = o / (g.out[1] * g.out[2]), bb = o / g.out[2] % g.out[1], c = o % g.out[2];
      f(u, u / out, (g.w[0].begin[a] * g.in[1] + g.w[1].begin[bb]) * g.in[2] + g.w[2].begin[c], a, bb, c);
    }
  });
}

/// Calls f(input position) for each position of output (a, b, c)'s window from `first`.
template <class F>
inline void for_each_in_window(const PoolShape& g, int64_t first, int64_t a, int64_t b, int64_t c, F f) {
  const Window &w0 = g.w[0], &w1 = g.w[1], &w2 = g.w[2];
  for (int64_t i = 0; i < w0.count[a]; ++i)
    for (int64_t j = 0; j < w1.count[b]; ++j) {
      const int64_t r = first + (i * w0.step * g.in[1] + j * w1.step) * g.in[2];
      for (int64_t l = 0; l < w2.count[c]; ++l) f(r + l * w2.step);
    }
}

/// y[ch], idx[ch] = x[ch], at where x[ch] wins (is larger, or NaN: a later NaN takes the
/// index), for the C channels of one input position; vector code over the channels.
template <class T>
inline void max_into(T* __restrict y, int64_t* __restrict idx, const T* __restrict x, int64_t at, int64_t C) {
#pragma omp simd
  for (int64_t ch = 0; ch < C; ++ch) {
    const T v = x[ch];
    const bool take = (v > y[ch]) | (v != v);
    y[ch] = take ? v : y[ch];
    idx[ch] = take ? at : idx[ch];
  }
}

template <class T>
void max_pool_nhwc(const PoolShape& g, int64_t batch, int64_t C, const T* x, T* y, int64_t* idx) {
  const T lowest = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                        : std::numeric_limits<T>::lowest();
  for_each_output_nhwc(g, batch, C, [&](int64_t u, int64_t n, int64_t first, int64_t a, int64_t b, int64_t c) {
    T* yr = y + u * C;
    int64_t* ir = idx + u * C;
    std::fill_n(yr, C, lowest);
    std::fill_n(ir, C, first);
    for_each_in_window(g, first, a, b, c,
                       [&](int64_t at) { max_into(yr, ir, x + (n * g.in_numel() + at) * C, at, C); });
  });
}

template <class T>
void avg_pool_nhwc(const PoolShape& g, int64_t batch, int64_t C, const T* x, T* y, int64_t divisor) {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, T, int64_t>;
  for_each_output_nhwc(g, batch, C, [&](int64_t u, int64_t n, int64_t first, int64_t a, int64_t b, int64_t c) {
    thread_local std::vector<Acc> acc;
    acc.assign(size_t(C), Acc(0));
    for_each_in_window(g, first, a, b, c, [&](int64_t at) {
      const T* xr = x + (n * g.in_numel() + at) * C;
      for (int64_t ch = 0; ch < C; ++ch) acc[size_t(ch)] += xr[ch];
    });
    const double div = window_divisor(g, divisor, a, b, c);
    T* yr = y + u * C;
    for (int64_t ch = 0; ch < C; ++ch) {
      if constexpr (std::is_floating_point_v<T>) yr[ch] = T(acc[size_t(ch)] / T(div));
      else yr[ch] = T(acc[size_t(ch)] / int64_t(div));
    }
  });
}

/// gx (zeroed, channels last) += each gy element at its window's positions, divided by the
/// window's divisor; samples in parallel (their gx rows are disjoint).
template <class T>
void avg_pool_backward_nhwc(const PoolShape& g, int64_t batch, int64_t C, const T* gy, T* gx,
                            int64_t divisor) {
  const Window &w0 = g.w[0], &w1 = g.w[1], &w2 = g.w[2];
  const int64_t out = g.out_numel();
  parallel_for(0, batch, 1, [&](int64_t nb, int64_t ne) {
    for (int64_t u = nb * out; u < ne * out; ++u) {
      const int64_t n = u / out, o = u % out, a = o / (g.out[1] * g.out[2]), b = o / g.out[2] % g.out[1],
                    c = o % g.out[2];
      const double div = window_divisor(g, divisor, a, b, c);
      const T* gr = gy + u * C;
      const int64_t first = (w0.begin[a] * g.in[1] + w1.begin[b]) * g.in[2] + w2.begin[c];
      for_each_in_window(g, first, a, b, c, [&](int64_t at) {
        T* xr = gx + (n * g.in_numel() + at) * C;
        for (int64_t ch = 0; ch < C; ++ch) xr[ch] += T(gr[ch] / T(div));
      });
    }
  });
}

/// gx (n x plane x C, zeroed first) += gy (n x per x C) at idx's flat spatial indices: n
/// planes of C = 1 (row-major), or n samples of C channels (channels last).
template <class T>
void max_pool_backward(int64_t n, int64_t C, int64_t plane, int64_t per, const T* g, const int64_t* ix, T* x) {
  std::fill_n(x, n * plane * C, T(0));
  if (C != 1) {  // the channels of a sample's position are adjacent
    parallel_for(0, n, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        for (int64_t o = i * per; o < (i + 1) * per; ++o)
          for (int64_t ch = 0; ch < C; ++ch) x[(i * plane + ix[o * C + ch]) * C + ch] += g[o * C + ch];
    });
    return;
  }
  parallel_for(0, n, 1, [&](int64_t b, int64_t e) {
    for (int64_t pl = b; pl < e; ++pl)
      for (int64_t o = 0; o < per; ++o) x[pl * plane + ix[pl * per + o]] += g[pl * per + o];
  });
}

// ------------------------------------------------------------------ entry points

/// Calls f(T{}) for dt's type unless it is bool, float16 or bfloat16 (nn_pool.cpp rejects or
/// widens those).
template <class F>
void visit_pool_dtype(DType dt, F&& f) {
  visit_dtype(dt, [&](auto t) {
    using T = decltype(t);
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) f(t);
  });
}

void max_pool(const PoolShape& g, DType dt, bool channels_last, int64_t C, const void* x, void* y, int64_t* idx) {
  visit_pool_dtype(dt, [&](auto t) {
    using T = decltype(t);
    auto xs = static_cast<const T*>(x);
    if (channels_last) max_pool_nhwc(g, g.planes / C, C, xs, static_cast<T*>(y), idx);
    else max_pool_kernel(g, xs, static_cast<T*>(y), idx);
  });
}

void avg_pool(const PoolShape& g, DType dt, bool channels_last, int64_t C, const void* x, void* y, int64_t divisor) {
  visit_pool_dtype(dt, [&](auto t) {
    using T = decltype(t);
    auto xs = static_cast<const T*>(x);
    if (channels_last) avg_pool_nhwc(g, g.planes / C, C, xs, static_cast<T*>(y), divisor);
    else avg_pool_kernel(g, xs, static_cast<T*>(y), divisor);
  });
}

void avg_pool_backward(const PoolShape& g, DType dt, bool channels_last, int64_t C, const void* gy, void* gx,
                       int64_t divisor) {
  visit_pool_dtype(dt, [&](auto t) {
    using T = decltype(t);
    auto gys = static_cast<const T*>(gy);
    T* gxs = static_cast<T*>(gx);
    if (!channels_last) return avg_pool_backward_kernel(g, gys, gxs, divisor);
    std::fill_n(gxs, g.planes * g.in_numel(), T(0));
    avg_pool_backward_nhwc(g, g.planes / C, C, gys, gxs, divisor);
  });
}

void max_pool_backward_kernel(DType dt, int64_t n, int64_t C, int64_t plane, int64_t per, const void* gy,
                              const int64_t* idx, void* gx) {
  visit_pool_dtype(dt, [&](auto t) {
    using T = decltype(t);
    max_pool_backward(n, C, plane, per, static_cast<const T*>(gy), idx, static_cast<T*>(gx));
  });
}

}  // namespace

TP_REGISTER_CPU_KERNEL(max_pool_stub, &max_pool);
TP_REGISTER_CPU_KERNEL(avg_pool_stub, &avg_pool);
TP_REGISTER_CPU_KERNEL(avg_pool_backward_stub, &avg_pool_backward);
TP_REGISTER_CPU_KERNEL(max_pool_backward_stub, &max_pool_backward_kernel);

}  // namespace tp::cpu::TP_CPU_NS
