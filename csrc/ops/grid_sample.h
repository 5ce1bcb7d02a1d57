// The sampling rules of grid_sampler_2d/3d shared by the CPU kernels (kernels/cpu/
// grid_sample_kernel.cpp; nn_grid_sample.cpp's create_graph backward) and the CUDA ones
// (cuda/sampling_kernels.cu): grid coordinates to input taps and weights.
//
// Note [Grid sampler edges]: PyTorch samples 4-D inputs with its vectorised CPU kernel and
// 5-D inputs with a scalar one, and the two differ away from the regular path; each kernel
// here follows the one PyTorch uses for its dims (`planar` = the 2-D rules):
//  - clipping sends NaN to 0 (2-D) or to size - 1 (3-D); 3-D's backward leaves a NaN
//    unclipped; after padding, 3-D moves coordinates outside the int range (NaN, inf) to
//    -100, i.e. outside;
//  - reflection folds with trunc(|x| / period) in 2-D, with fmod and an int flip count in 3-D;
//  - every corner or tap counts, 0 standing for an outside value (a NaN weight gives a NaN
//    result and a NaN grid gradient);
//  - the clipping gradient is 1 strictly inside (0, size - 1), 0 elsewhere;
//  - bicubic pads each tap's integer position and takes no padding gradient.
#pragma once
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>

#include "core/cpu_capability.h"
#include "core/macros.h"

namespace tp::sampling {

constexpr int64_t kBilinear = 0, kNearest = 1, kBicubic = 2;
constexpr int64_t kZeros = 0, kBorder = 1, kReflection = 2;

/// Shapes of one sampling: spatial sizes padded in front to three (D, H, W).
struct Geometry {
  int64_t nsp = 2, n = 0, c = 0, in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  TP_HD int64_t plane() const { return in[0] * in[1] * in[2]; }
  TP_HD int64_t points() const { return out[0] * out[1] * out[2]; }
};

// The rules below: each CPU capability level's copy has its own names (Note [CPU capability]).
#ifdef TP_CPU_CAPABILITY
inline namespace TP_CPU_NS {
#endif

/// float -> int as x86 converts (INT_MIN when out of range or NaN), without the undefined behaviour.
template <class T>
TP_HD int to_int_or_min(T v) {
  return (v >= T(-2147483648.0) && v < T(2147483648.0)) ? int(v) : INT_MIN;
}

/// One spatial axis: a normalised grid coordinate to a position in the input.
template <class T>
struct Axis {
  int64_t size = 1, padding = kZeros;
  bool align = false, planar = true;
  T scale = 0, max = 0;  // d(position)/d(grid) before padding; size - 1

  Axis() = default;
  TP_HD Axis(int64_t n, int64_t pad, bool ac, bool planar_rules)
      : size(n), padding(pad), align(ac), planar(planar_rules), scale(ac ? T(n - 1) / 2 : T(n) / 2), max(T(n - 1)) {}

  TP_HD T unnormalize(T g) const {
    if (planar) return align ? (g + 1) * scale : (g + 1) * scale - T(0.5);
    return align ? ((g + 1) / 2) * T(size - 1) : ((g + 1) * T(size) - 1) / 2;
  }

  /// Clipping to [0, size - 1]; `d`, when given, receives the derivative.
  TP_HD T clip(T x, T* d) const {
    if (planar) {
      if (d) *d = (x > 0 && x < max) ? T(1) : T(0);
      return x > 0 ? (x < max ? x : max) : T(0);
    }
    if (!d) return std::min(max, std::max(x, T(0)));
    *d = 0;
    if (x <= 0) return 0;
    if (x >= max) return max;
    *d = 1;
    return x;
  }

  /// Reflection about the edges (the pixel centres with align_corners, else the borders).
  TP_HD T reflect(T x, T* d) const {
    if (planar) {
      if (align && size <= 1) {
        if (d) *d = 0;
        return 0;
      }
      const T low = align ? T(0) : T(-0.5), period = align ? T(2 * (size - 1)) : T(2 * size);
      const T v = x - low, a = std::fabs(v);
      const T extra = a - std::trunc(a / period) * period, other = period - extra;
      const bool flip = extra > other;
      if (d) *d = ((v < 0) != flip) ? T(-1) : T(1);
      return (flip ? other : extra) + low;
    }
    const int64_t twice_low = align ? 0 : -1, twice_high = align ? 2 * (size - 1) : 2 * size - 1;
    if (twice_low == twice_high) {
      if (d) *d = 0;
      return 0;
    }
    const T low = T(twice_low) / 2, span = T(twice_high - twice_low) / 2;
    const T v = x - low, a = std::fabs(v), extra = std::fmod(a, span);
    const T sign = v < 0 ? T(-1) : T(1);
    if (to_int_or_min(std::floor(a / span)) % 2 == 0) {
      if (d) *d = sign;
      return extra + low;
    }
    if (d) *d = -sign;
    return span - extra + low;
  }

  /// The padded position of bilinear / nearest sampling; `d` receives d(position)/d(grid).
  TP_HD T source(T g, T* d) const {
    T x = unnormalize(g), dp = 1, dc = 1;
    if (padding == kBorder) {
      x = clip(x, d ? &dc : nullptr);
    } else if (padding == kReflection) {
      x = reflect(x, d ? &dp : nullptr);
      x = clip(x, d ? &dc : nullptr);
    }
    if (!planar && (x > T(INT_MAX - 1) || x < T(INT_MIN) || !std::isfinite(x))) x = T(-100);
    if (d) *d = scale * dp * dc;
    return x;
  }

  /// A bicubic tap's integer position, padded.
  TP_HD T bounded(T x) const {
    if (padding == kBorder) return clip(x, nullptr);
    if (padding == kReflection) return clip(reflect(x, nullptr), nullptr);
    return x;
  }

  TP_HD bool inside(T x) const { return x >= 0 && x <= max; }
};

/// Cubic convolution weights (A = -0.75) of the taps at -1, 0, 1, 2 from the fraction t, and
/// their derivatives in t.
template <class T>
TP_HD void cubic_weights(T t, T w[4], T dw[4]) {
  const T A = T(-0.75);
  auto near = [&](T x) { return ((A + 2) * x - (A + 3)) * x * x + 1; };       // |x| <= 1
  auto far = [&](T x) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; };  // 1 < |x| < 2
  auto dnear = [&](T x) { return (3 * (A + 2) * x - 2 * (A + 3)) * x; };
  auto dfar = [&](T x) { return (3 * A * x - 10 * A) * x + 8 * A; };
  w[0] = far(t + 1);
  w[1] = near(t);
  w[2] = near(1 - t);
  w[3] = far(2 - t);
  if (dw) {
    dw[0] = dfar(t + 1);
    dw[1] = dnear(t);
    dw[2] = -dnear(1 - t);
    dw[3] = -dfar(2 - t);
  }
}

/// The input positions one grid point reads, with their weights (and weight derivatives).
template <class T>
struct Taps {
  int count = 0;
  bool bicubic = false;
  int64_t index[16];  // flat index into an input plane; -1 outside
  T weight[16];
  T dweight[3][16];  // d weight / d grid component (x, y, z)
  T cx[4], cy[4];    // bicubic: the separable weights (the forward sums rows first, as PyTorch)
  // the in-bound taps alone (for branch-free channel loops), and what the outside ones add:
  // 0, or NaN where a weight is not finite
  int live = 0;
  int64_t live_index[16];
  T live_weight[16];
  int live_tap[16];  // which tap each in-bound one is
  T outside = 0;

  TP_HD void compact() {
    live = 0;
    outside = 0;
    for (int k = 0; k < count; ++k) {
      if (index[k] >= 0) {
        live_index[live] = index[k];
        live_tap[live] = k;
        live_weight[live++] = weight[k];
      } else {
        outside += weight[k] * T(0);
      }
    }
  }

  /// The sampled value of one input plane xc (the forward of both devices): bicubic sums
  /// rows first, as PyTorch's kernel does; else the in-bound taps plus `outside`.
  TP_HD T apply(const T* xc) const {
    T acc = outside;
    if (bicubic) {
      acc = 0;
      for (int i = 0; i < 4; ++i) {
        T row = 0;
        for (int j = 0; j < 4; ++j) {
          const int64_t ix = index[i * 4 + j];
          row += cx[j] * (ix >= 0 ? xc[ix] : T(0));
        }
        acc += cy[i] * row;
      }
    } else {
      for (int k = 0; k < live; ++k) acc += live_weight[k] * xc[live_index[k]];
    }
    return acc;
  }
};

/// Fills `t` for the grid point g (geo.nsp components) of a sampling with interpolation
/// `interp` over `axis` (x, y, z): with `backward`, as the backward kernels place points
/// (Note [Grid sampler edges]); `grads` also fills dweight.
template <class T>
TP_HD void make_taps(const Geometry& geo, int64_t interp, const Axis<T>* axis, const T* g, Taps<T>& t, bool backward,
                   bool grads) {
  const int64_t nsp = geo.nsp, W = geo.in[2];
  t.bicubic = interp == kBicubic;
  if (interp == kBicubic) {
    const Axis<T>&ax = axis[0], &ay = axis[1];
    const T x = ax.unnormalize(g[0]), y = ay.unnormalize(g[1]);
    const T x0 = std::floor(x), y0 = std::floor(y);
    T dcx[4], dcy[4];
    cubic_weights(x - x0, t.cx, grads ? dcx : nullptr);
    cubic_weights(y - y0, t.cy, grads ? dcy : nullptr);
    t.count = 16;
    for (int i = 0; i < 4; ++i) {
      const T ys = ay.bounded(y0 - 1 + T(i));
      for (int j = 0; j < 4; ++j) {
        const int k = i * 4 + j;
        const T xs = ax.bounded(x0 - 1 + T(j));
        t.index[k] = ax.inside(xs) && ay.inside(ys) ? int64_t(ys) * W + int64_t(xs) : -1;
        t.weight[k] = t.cy[i] * t.cx[j];
        if (grads) {
          t.dweight[0][k] = t.cy[i] * dcx[j] * ax.scale;
          t.dweight[1][k] = dcy[i] * t.cx[j] * ay.scale;
        }
      }
    }
    t.compact();
    return;
  }
  T pos[3], mult[3] = {1, 1, 1};  // mult is set (and read) only with `backward`
  for (int64_t a = 0; a < nsp; ++a) pos[a] = axis[a].source(g[a], backward ? &mult[a] : nullptr);
  if (interp == kNearest) {
    t.count = 1;
    int64_t flat = 0;
    bool in = true;
    for (int64_t a = nsp - 1; a >= 0; --a) {
      const T r = std::nearbyint(pos[a]);
      in = in && axis[a].inside(r);
      flat = in ? flat * geo.in[2 - a] + int64_t(r) : 0;
    }
    t.index[0] = in ? flat : -1;
    t.weight[0] = 1;
    if (grads)
      for (int64_t a = 0; a < nsp; ++a) t.dweight[a][0] = 0;
    t.compact();
    return;
  }
  T lo[3], hi[3], base[3];
  bool in0[3], in1[3];
  for (int64_t a = 0; a < nsp; ++a) {
    const T x0 = std::floor(pos[a]);
    hi[a] = pos[a] - x0;
    lo[a] = nsp == 2 ? 1 - hi[a] : (x0 + 1) - pos[a];
    base[a] = x0;
    in0[a] = axis[a].inside(x0);
    in1[a] = axis[a].inside(x0 + 1);
  }
  t.count = 1 << nsp;
  for (int k = 0; k < t.count; ++k) {
    T w[3];
    bool in = true;
    int64_t flat = 0;
    for (int64_t a = nsp - 1; a >= 0; --a) {  // bit a of k: the upper corner along axis a
      const bool up = (k >> a) & 1;
      w[a] = up ? hi[a] : lo[a];
      in = in && (up ? in1[a] : in0[a]);
      flat = in ? flat * geo.in[2 - a] + int64_t(base[a]) + up : 0;
    }
    t.index[k] = in ? flat : -1;
    t.weight[k] = nsp == 2 ? w[1] * w[0] : w[0] * w[1] * w[2];
    if (grads)
      for (int64_t a = 0; a < nsp; ++a) {
        T other = 1;
        for (int64_t b = 0; b < nsp; ++b)
          if (b != a) other *= w[b];
        t.dweight[a][k] = (((k >> a) & 1) ? other : -other) * mult[a];
      }
  }
  t.compact();
}

#ifdef TP_CPU_CAPABILITY
}  // namespace TP_CPU_NS
#endif
}  // namespace tp::sampling
