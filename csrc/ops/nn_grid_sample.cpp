// Grid sampling: grid_sampler_2d / grid_sampler_3d (bilinear, nearest, 2-D bicubic; zeros,
// border and reflection padding), their fused backward, and that backward written with
// differentiable ops for create_graph (Note [Fused backward and create_graph]).
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
#include <algorithm>
#include <climits>
#include <cmath>
#include <vector>

#include "autograd/formula_helpers.h"
#include "autograd/grad_mode.h"
#include "core/error.h"
#include "core/parallel.h"
#include "ops/nn.h"
#include "tensorplay/ops_api.h"

namespace tp {

namespace {

constexpr int64_t kBilinear = 0, kNearest = 1, kBicubic = 2;
constexpr int64_t kZeros = 0, kBorder = 1, kReflection = 2;

/// float -> int as x86 converts (INT_MIN when out of range or NaN), without the undefined behaviour.
template <class T>
int to_int_or_min(T v) {
  return (v >= T(-2147483648.0) && v < T(2147483648.0)) ? int(v) : INT_MIN;
}

/// One spatial axis: a normalised grid coordinate to a position in the input.
template <class T>
struct Axis {
  int64_t size = 1, padding = kZeros;
  bool align = false, planar = true;
  T scale = 0, max = 0;  // d(position)/d(grid) before padding; size - 1

  Axis() = default;
  Axis(int64_t n, int64_t pad, bool ac, bool planar_rules)
      : size(n), padding(pad), align(ac), planar(planar_rules), scale(ac ? T(n - 1) / 2 : T(n) / 2), max(T(n - 1)) {}

  T unnormalize(T g) const {
    if (planar) return align ? (g + 1) * scale : (g + 1) * scale - T(0.5);
    return align ? ((g + 1) / 2) * T(size - 1) : ((g + 1) * T(size) - 1) / 2;
  }

  /// Clipping to [0, size - 1]; `d`, when given, receives the derivative.
  T clip(T x, T* d) const {
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
  T reflect(T x, T* d) const {
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
  T source(T g, T* d) const {
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
  T bounded(T x) const {
    if (padding == kBorder) return clip(x, nullptr);
    if (padding == kReflection) return clip(reflect(x, nullptr), nullptr);
    return x;
  }

  bool inside(T x) const { return x >= 0 && x <= max; }
};

/// Cubic convolution weights (A = -0.75) of the taps at -1, 0, 1, 2 from the fraction t, and
/// their derivatives in t.
template <class T>
void cubic_weights(T t, T w[4], T dw[4]) {
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

/// Shapes of one sampling: spatial sizes padded in front to three (D, H, W).
struct Geometry {
  int64_t nsp = 2, n = 0, c = 0, in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  int64_t plane() const { return in[0] * in[1] * in[2]; }
  int64_t points() const { return out[0] * out[1] * out[2]; }
};

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

  void compact() {
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
};

template <class T>
struct Sampler {
  Geometry geo;
  int64_t interp = kBilinear;
  Axis<T> axis[3];  // x (W), y (H), z (D)

  Sampler(const Geometry& g, int64_t mode, int64_t padding, bool align) : geo(g), interp(mode) {
    const bool planar = g.nsp == 2;
    for (int64_t a = 0; a < g.nsp; ++a) axis[a] = Axis<T>(g.in[2 - a], padding, align, planar);
  }

  /// Fills `t` for the grid point g (nsp components): with `backward`, as the backward
  /// kernels place points (Note [Grid sampler edges]); `grads` also fills dweight.
  void taps(const T* g, Taps<T>& t, bool backward, bool grads) const {
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
    T pos[3], mult[3];
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

  // Points go in blocks of kBlock: their taps are built once, then each channel plane is
  // visited for the whole block (reads and writes stay close together).
  static constexpr int64_t kBlock = 16;

  void forward(const T* x, const T* grid, T* y) const {
    const int64_t P = geo.points(), S = geo.plane(), C = geo.c, nsp = geo.nsp, nblk = (P + kBlock - 1) / kBlock;
    parallel_for(0, geo.n * nblk, std::max<int64_t>(1, 64 / std::max<int64_t>(C, 1)), [&](int64_t b, int64_t e) {
      std::vector<Taps<T>> tb(kBlock);
      for (int64_t u = b; u < e; ++u) {
        const int64_t n = u / nblk, p0 = (u % nblk) * kBlock, p1 = std::min(P, p0 + kBlock);
        for (int64_t p = p0; p < p1; ++p) taps(grid + (n * P + p) * nsp, tb[size_t(p - p0)], false, false);
        for (int64_t c = 0; c < C; ++c) {
          const T* xc = x + (n * C + c) * S;
          T* yc = y + (n * C + c) * P;
          for (int64_t p = p0; p < p1; ++p) {
            const Taps<T>& t = tb[size_t(p - p0)];
            T acc = t.outside;
            if (t.bicubic) {
              acc = 0;
              for (int i = 0; i < 4; ++i) {
                T row = 0;
                for (int j = 0; j < 4; ++j) {
                  const int64_t ix = t.index[i * 4 + j];
                  row += t.cx[j] * (ix >= 0 ? xc[ix] : T(0));
                }
                acc += t.cy[i] * row;
              }
            } else {
              for (int k = 0; k < t.live; ++k) acc += t.live_weight[k] * xc[t.live_index[k]];
            }
            yc[p] = acc;
          }
        }
      }
    });
  }

  /// Points [p0, p1) of sample n over channels [c0, c1): adds their output gradients into gx
  /// (when given) at the positions they read and, when `gg`, writes d(loss)/d(grid).
  void block_backward(const std::vector<Taps<T>>& tb, const T* gy, const T* x, T* gx, T* gg, int64_t n, int64_t p0,
                      int64_t p1, int64_t c0, int64_t c1) const {
    const int64_t P = geo.points(), S = geo.plane(), C = geo.c;
    const bool grid_grad = gg && interp != kNearest;
    // per point and tap: the channels' output gradient times the value read (an outside tap
    // reads 0: its sum is zs, 0 unless a gradient is not finite)
    T vs[kBlock][16] = {}, zs[kBlock] = {};
    for (int64_t c = c0; c < c1; ++c) {
      const T* gc = gy + (n * C + c) * P;
      const T* xc = x + (n * C + c) * S;
      T* gxc = gx ? gx + (n * C + c) * S : nullptr;
      for (int64_t p = p0; p < p1; ++p) {
        const Taps<T>& t = tb[size_t(p - p0)];
        const T g = gc[p];
        if (gxc)
          for (int k = 0; k < t.live; ++k) gxc[t.live_index[k]] += g * t.live_weight[k];
        if (grid_grad) {
          T* v = vs[p - p0];
          for (int k = 0; k < t.live; ++k) v[t.live_tap[k]] += g * xc[t.live_index[k]];
          if (t.live < t.count) zs[p - p0] += g * T(0);
        }
      }
    }
    if (!gg) return;
    for (int64_t p = p0; p < p1; ++p) {
      const Taps<T>& t = tb[size_t(p - p0)];
      for (int64_t a = 0; a < geo.nsp; ++a) {
        T acc = 0;
        if (grid_grad)
          for (int k = 0; k < t.count; ++k) acc += (t.index[k] >= 0 ? vs[p - p0][k] : zs[p - p0]) * t.dweight[a][k];
        gg[(n * P + p) * geo.nsp + a] = acc;
      }
    }
  }

  /// d(loss)/d(input) into gx (zeroed) and d(loss)/d(grid) into gg, those given. With at least
  /// as many samples as threads, samples go to threads and each point is visited once;
  /// otherwise the input gradient is spread over (sample, channel block) pairs and the grid
  /// gradient over point blocks (no two threads write the same element either way).
  void backward(const T* gy, const T* x, const T* grid, T* gx, T* gg) const {
    const int64_t P = geo.points(), C = geo.c, nsp = geo.nsp, threads = get_num_threads();
    const int64_t nblk = (P + kBlock - 1) / kBlock;
    const bool together = gg && geo.n >= threads;
    if (gx) {
      const int64_t blocks = geo.n >= threads ? 1 : std::min<int64_t>(C, (threads + geo.n - 1) / geo.n);
      const int64_t per = (C + blocks - 1) / blocks;
      parallel_for(0, geo.n * blocks, 1, [&](int64_t b, int64_t e) {
        std::vector<Taps<T>> tb(kBlock);
        for (int64_t u = b; u < e; ++u) {
          const int64_t n = u / blocks, c0 = (u % blocks) * per, c1 = std::min(C, c0 + per);
          for (int64_t p0 = 0; p0 < P; p0 += kBlock) {
            const int64_t p1 = std::min(P, p0 + kBlock);
            for (int64_t p = p0; p < p1; ++p) taps(grid + (n * P + p) * nsp, tb[size_t(p - p0)], true, together);
            block_backward(tb, gy, x, gx, together ? gg : nullptr, n, p0, p1, c0, c1);
          }
        }
      });
    }
    if (!gg || (gx && together)) return;
    parallel_for(0, geo.n * nblk, std::max<int64_t>(1, 64 / std::max<int64_t>(C, 1)), [&](int64_t b, int64_t e) {
      std::vector<Taps<T>> tb(kBlock);
      for (int64_t u = b; u < e; ++u) {
        const int64_t n = u / nblk, p0 = (u % nblk) * kBlock, p1 = std::min(P, p0 + kBlock);
        for (int64_t p = p0; p < p1; ++p) taps(grid + (n * P + p) * nsp, tb[size_t(p - p0)], true, true);
        block_backward(tb, gy, x, nullptr, gg, n, p0, p1, 0, C);
      }
    });
  }
};

/// Calls f(T{}) for the dtype a sampler computes in.
template <class F>
void visit_float(DType dt, F&& f) {
  if (dt == DType::Float64) return f(double{});
  return f(float{});
}

DType compute_dtype(DType dt) { return is_float16_or_bfloat16(dt) ? DType::Float32 : dt; }

/// PyTorch's checks of grid_sampler (shapes) and of its kernels (dtypes, modes).
Geometry check_sampler(const Tensor& input, const Tensor& grid, int64_t nsp, int64_t mode, int64_t padding,
                       const char* kernel) {
  TP_CHECK(input.dim() >= 1 && grid.dim() >= 1 && input.size(0) == grid.size(0),
           "grid_sampler(): expected grid and input to have same batch size, but got input with sizes ",
           shape_str(input.sizes()), " and grid with sizes ", shape_str(grid.sizes()));
  TP_CHECK(grid.size(-1) == input.dim() - 2, "grid_sampler(): expected grid to have size ", input.dim() - 2,
           " in last dimension, but got grid with sizes ", shape_str(grid.sizes()));
  TP_CHECK(input.dim() == nsp + 2 && grid.dim() == nsp + 2, "grid_sampler(): expected ", nsp + 2,
           "D input and grid with same number of dimensions, but got input with sizes ", shape_str(input.sizes()),
           " and grid with sizes ", shape_str(grid.sizes()));
  for (int64_t i = 2; i < input.dim(); ++i)
    TP_CHECK(input.size(i) > 0, "grid_sampler(): expected input to have non-empty spatial dimensions, but input has "
             "sizes ", shape_str(input.sizes()), " with dimension ", i, " being empty");
  TP_CHECK(mode != kBicubic || nsp == 2, "grid_sampler(): bicubic interpolation only supports 4D input");
  TP_CHECK(mode == kBilinear || mode == kNearest || mode == kBicubic, "grid_sampler(): expected interpolation_mode "
           "to be 0 (bilinear), 1 (nearest) or 2 (bicubic), but got ", mode);
  TP_CHECK(padding == kZeros || padding == kBorder || padding == kReflection,
           "grid_sampler(): expected padding_mode to be 0 (zeros), 1 (border) or 2 (reflection), but got ", padding);
  TP_CHECK_KIND(ErrorKind::NotImplemented, is_floating(input.dtype()), "\"", kernel, "\" not implemented for '",
                dtype_scalar_name(input.dtype()), "'");
  TP_CHECK(grid.dtype() == input.dtype(), "expected scalar type ", dtype_scalar_name(input.dtype()), " but found ",
           dtype_scalar_name(grid.dtype()));
  TP_CHECK(input.device().is_cpu() && grid.device().is_cpu(), kernel, ": no ", input.device().str(), " kernel");
  Geometry g;
  g.nsp = nsp;
  g.n = input.size(0);
  g.c = input.size(1);
  for (int64_t i = 0; i < nsp; ++i) {
    g.in[3 - nsp + i] = input.size(2 + i);
    g.out[3 - nsp + i] = grid.size(1 + i);
  }
  return g;
}

Tensor sampler_forward(const Tensor& input, const Tensor& grid, int64_t nsp, int64_t mode, int64_t padding,
                       bool align, const char* kernel) {
  Geometry g = check_sampler(input, grid, nsp, mode, padding, kernel);
  const DType dt = compute_dtype(input.dtype());
  Tensor x = contiguous(_to_dtype(input, dt)), gr = contiguous(_to_dtype(grid, dt));
  DimVector sizes{g.n, g.c};
  for (int64_t i = 0; i < nsp; ++i) sizes.push_back(g.out[3 - nsp + i]);
  Tensor y = empty_tensor(sizes, dt);
  if (y.numel())
    visit_float(dt, [&](auto t) {
      using T = decltype(t);
      Sampler<T>(g, mode, padding, align).forward(x.data<T>(), gr.data<T>(), y.data<T>());
    });
  return _to_dtype(y, input.dtype());
}

std::tuple<Tensor, Tensor> sampler_backward(const Tensor& grad_output, const Tensor& input, const Tensor& grid,
                                            int64_t nsp, int64_t mode, int64_t padding, bool align, bool input_grad,
                                            bool grid_grad, const char* kernel) {
  Geometry g = check_sampler(input, grid, nsp, mode, padding, kernel);
  DimVector expect{g.n, g.c};
  for (int64_t i = 0; i < nsp; ++i) expect.push_back(g.out[3 - nsp + i]);
  TP_CHECK(std::equal(expect.begin(), expect.end(), grad_output.sizes().begin(), grad_output.sizes().end()), kernel,
           ": expected grad_output of sizes ", shape_str(expect), ", but got ", shape_str(grad_output.sizes()));
  const DType dt = compute_dtype(input.dtype());
  Tensor x = contiguous(_to_dtype(input, dt)), gr = contiguous(_to_dtype(grid, dt));
  Tensor gy = contiguous(_to_dtype(grad_output, dt));
  Tensor gx, gg;
  if (input_grad) gx = zeros(input.sizes(), dt);
  if (grid_grad) gg = empty_tensor(grid.sizes(), dt);
  visit_float(dt, [&](auto t) {
    using T = decltype(t);
    Sampler<T> s(g, mode, padding, align);
    if (gy.numel())
      s.backward(gy.data<T>(), x.data<T>(), gr.data<T>(), input_grad ? gx.data<T>() : nullptr,
                 grid_grad ? gg.data<T>() : nullptr);
  });
  if (grid_grad && g.c == 0) gg = zeros(grid.sizes(), dt);
  return {gx.defined() ? _to_dtype(gx, input.dtype()) : gx, gg.defined() ? _to_dtype(gg, input.dtype()) : gg};
}

}  // namespace

Tensor grid_sampler_2d_impl(const Tensor& input, const Tensor& grid, int64_t interpolation_mode, int64_t padding_mode,
                            bool align_corners, OutArg) {
  return sampler_forward(input, grid, 2, interpolation_mode, padding_mode, align_corners, "grid_sampler_2d");
}

Tensor grid_sampler_3d_impl(const Tensor& input, const Tensor& grid, int64_t interpolation_mode, int64_t padding_mode,
                            bool align_corners, OutArg) {
  return sampler_forward(input, grid, 3, interpolation_mode, padding_mode, align_corners, "grid_sampler_3d");
}

std::tuple<Tensor, Tensor> grid_sampler_2d_backward_impl(const Tensor& grad_output, const Tensor& input,
                                                         const Tensor& grid, int64_t interpolation_mode,
                                                         int64_t padding_mode, bool align_corners, bool input_grad,
                                                         bool grid_grad, OutArg) {
  return sampler_backward(grad_output, input, grid, 2, interpolation_mode, padding_mode, align_corners, input_grad,
                          grid_grad, "grid_sampler_2d_backward");
}

std::tuple<Tensor, Tensor> grid_sampler_3d_backward_impl(const Tensor& grad_output, const Tensor& input,
                                                         const Tensor& grid, int64_t interpolation_mode,
                                                         int64_t padding_mode, bool align_corners, bool input_grad,
                                                         bool grid_grad, OutArg) {
  return sampler_backward(grad_output, input, grid, 3, interpolation_mode, padding_mode, align_corners, input_grad,
                          grid_grad, "grid_sampler_3d_backward");
}

Tensor grid_sampler_impl(const Tensor& input, const Tensor& grid, int64_t interpolation_mode, int64_t padding_mode,
                         bool align_corners, OutArg) {
  const int64_t nsp = input.dim() == 5 ? 3 : 2;
  if (input.dim() != 4 && input.dim() != 5)  // the shape checks, with the message PyTorch gives
    check_sampler(input, grid, nsp, interpolation_mode, padding_mode, "grid_sampler");
  return nsp == 2 ? grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners)
                  : grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners);
}

// ------------------------------------------------------------------ create_graph backward

namespace {

/// One axis of the differentiable backward: per tap, the input position (0 where outside),
/// a 0/1 validity mask, the weight and its derivative in the grid coordinate, as (N, P) tensors.
struct AxisTaps {
  std::vector<Tensor> index, valid, weight, dweight;
};

/// The non-differentiable parts of one axis from the (detached) grid: per tap index and
/// validity, the fraction's value and its slope d(fraction)/d(grid).
template <class T>
void axis_parts(const Axis<T>& ax, int64_t mode, const T* g, int64_t nsp, int64_t a, int64_t count, int taps,
                std::vector<int64_t*>& index, std::vector<T*>& valid, T* frac, T* slope) {
  for (int64_t q = 0; q < count; ++q) {
    const T gv = g[q * nsp + a];
    T x0, d = 0;
    if (mode == kBicubic) {
      const T x = ax.unnormalize(gv);
      x0 = std::floor(x);
      frac[q] = x - x0;
      slope[q] = ax.scale;
      x0 -= 1;
    } else {
      const T x = ax.source(gv, &d);
      x0 = mode == kNearest ? std::nearbyint(x) : std::floor(x);
      frac[q] = x - x0;
      slope[q] = d;
    }
    for (int k = 0; k < taps; ++k) {
      const T pos = mode == kBicubic ? ax.bounded(x0 + T(k)) : x0 + T(k);
      const bool in = ax.inside(pos);
      index[k][q] = in ? int64_t(pos) : 0;
      valid[k][q] = in ? T(1) : T(0);
    }
  }
}

/// grid_sampler's gradients as differentiable ops of grad, input and grid.
std::tuple<Tensor, Tensor> differentiable_backward(const Tensor& grad, const Tensor& input, const Tensor& grid,
                                                   int64_t mode, int64_t padding, bool align) {
  if (is_float16_or_bfloat16(input.dtype())) {
    auto [gx, gg] = differentiable_backward(_to_dtype(grad, DType::Float32), _to_dtype(input, DType::Float32),
                                            _to_dtype(grid, DType::Float32), mode, padding, align);
    return {_to_dtype(gx, input.dtype()), _to_dtype(gg, input.dtype())};
  }
  const int64_t nsp = input.dim() - 2, N = input.size(0), C = input.size(1);
  Geometry geo;
  geo.nsp = nsp;
  for (int64_t i = 0; i < nsp; ++i) {
    geo.in[3 - nsp + i] = input.size(2 + i);
    geo.out[3 - nsp + i] = grid.size(1 + i);
  }
  const int64_t P = geo.points(), S = geo.plane();
  const int taps = mode == kBicubic ? 4 : mode == kNearest ? 1 : 2;
  const DType dt = grid.dtype();
  Tensor gdet = contiguous(detach(grid));
  const int64_t np[2] = {N, P};
  std::vector<AxisTaps> axes(static_cast<size_t>(nsp));
  for (int64_t a = 0; a < nsp; ++a) {
    AxisTaps& at = axes[size_t(a)];
    Tensor frac = empty_tensor(np, dt), slope = empty_tensor(np, dt);
    std::vector<Tensor> idx, val;
    for (int k = 0; k < taps; ++k) {
      idx.push_back(empty_tensor(np, DType::Int64));
      val.push_back(empty_tensor(np, dt));
    }
    visit_float(dt, [&](auto t) {
      using T = decltype(t);
      std::vector<int64_t*> ip;
      std::vector<T*> vp;
      for (int k = 0; k < taps; ++k) {
        ip.push_back(idx[size_t(k)].data<int64_t>());
        vp.push_back(val[size_t(k)].data<T>());
      }
      Axis<T> ax(geo.in[2 - a], padding, align, nsp == 2);
      axis_parts(ax, mode, gdet.data<T>(), nsp, a, N * P, taps, ip, vp, frac.data<T>(), slope.data<T>());
    });
    const Tensor ga = reshape(select(grid, -1, a), np);
    const Tensor f = frac + slope * (ga - detach(ga));  // value frac, derivative slope
    at.index = idx;
    at.valid = val;
    if (mode == kNearest) {
      at.weight = {ones(np, dt)};
      at.dweight = {zeros(np, dt)};
    } else if (mode == kBilinear) {
      at.weight = {1 - f, f};
      at.dweight = {-slope, slope};
    } else {
      const double A = -0.75;
      auto near = [&](const Tensor& x) { return ((A + 2) * x - (A + 3)) * x * x + 1; };
      auto far = [&](const Tensor& x) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; };
      auto dnear = [&](const Tensor& x) { return (3 * (A + 2) * x - 2 * (A + 3)) * x; };
      auto dfar = [&](const Tensor& x) { return (3 * A * x - 10 * A) * x + 8 * A; };
      at.weight = {far(f + 1), near(f), near(1 - f), far(2 - f)};
      at.dweight = {dfar(f + 1) * slope, dnear(f) * slope, -dnear(1 - f) * slope, -dfar(2 - f) * slope};
    }
  }
  const int64_t ncs[3] = {N, C, S}, ncp[3] = {N, C, P}, channel_dim[1] = {1};
  const Tensor x = reshape(input, ncs), gy = reshape(grad, ncp);
  std::vector<Tensor> all_idx, all_src, grid_terms(static_cast<size_t>(nsp));
  int64_t combos = 1;
  for (int64_t a = 0; a < nsp; ++a) combos *= taps;
  for (int64_t k = 0; k < combos; ++k) {
    // combo k takes tap (k / taps^a) % taps along axis a
    std::vector<size_t> tap(static_cast<size_t>(nsp));
    std::vector<Tensor> wa(static_cast<size_t>(nsp));
    Tensor flat, valid, w;
    int64_t stride = 1, rest = k;
    for (int64_t a = 0; a < nsp; ++a) {
      tap[size_t(a)] = size_t(rest % taps);
      rest /= taps;
      const AxisTaps& at = axes[size_t(a)];
      const Tensor part = at.index[tap[size_t(a)]] * stride;
      flat = flat.defined() ? flat + part : part;
      valid = valid.defined() ? valid * at.valid[tap[size_t(a)]] : at.valid[tap[size_t(a)]];
      wa[size_t(a)] = at.weight[tap[size_t(a)]];
      w = w.defined() ? w * wa[size_t(a)] : wa[size_t(a)];
      stride *= geo.in[2 - a];
    }
    const Tensor index = expand(unsqueeze(flat, 1), ncp);
    all_idx.push_back(index);
    all_src.push_back(gy * unsqueeze(w * valid, 1));
    const Tensor gv = sum(gy * gather(x, 2, index), IntArrayRef(channel_dim, 1)) * valid;  // (N, P)
    for (int64_t a = 0; a < nsp; ++a) {
      Tensor dw = axes[size_t(a)].dweight[tap[size_t(a)]];
      for (int64_t b = 0; b < nsp; ++b)
        if (b != a) dw = dw * wa[size_t(b)];
      const Tensor term = gv * dw;
      grid_terms[size_t(a)] = grid_terms[size_t(a)].defined() ? grid_terms[size_t(a)] + term : term;
    }
  }
  Tensor gx = scatter_add(zeros(ncs, dt), 2, cat(all_idx, 2), cat(all_src, 2));
  DimVector gshape(grid.sizes().data(), grid.sizes().size() - 1);
  std::vector<Tensor> comps;
  for (int64_t a = 0; a < nsp; ++a) comps.push_back(reshape(grid_terms[size_t(a)], gshape));
  return {reshape(gx, input.sizes()), stack(comps, -1)};
}

}  // namespace

std::tuple<Tensor, Tensor> grid_sampler_backward(const Tensor& grad, const Tensor& input, const Tensor& grid,
                                                 int64_t interpolation_mode, int64_t padding_mode, bool align_corners,
                                                 std::array<bool, 2> mask) {
  if (!autograd::grad_enabled()) {
    return input.dim() == 4 ? grid_sampler_2d_backward(grad, input, grid, interpolation_mode, padding_mode,
                                                       align_corners, mask[0], mask[1])
                            : grid_sampler_3d_backward(grad, input, grid, interpolation_mode, padding_mode,
                                                       align_corners, mask[0], mask[1]);
  }
  return differentiable_backward(grad, input, grid, interpolation_mode, padding_mode, align_corners);
}

}  // namespace tp
