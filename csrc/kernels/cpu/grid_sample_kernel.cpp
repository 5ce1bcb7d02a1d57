// The CPU loops of grid_sampler_2d / grid_sampler_3d and their fused backward (csrc/ops/
// nn_grid_sample.cpp keeps the checks, dtypes and the create_graph backward): points in
// blocks, taps from grid_sample.h's rules (Note [Grid sampler edges]). Compiled once per CPU
// capability level, each with -ffp-contract=off: coordinates round as PyTorch's kernels do.
#include <algorithm>
#include <vector>

#include "core/parallel.h"
#include "kernels/cpu_stubs.h"
#include "ops/grid_sample.h"

namespace tp::cpu::TP_CPU_NS {

namespace {

using namespace sampling;

template <class T>
struct Sampler {
  Geometry geo;
  int64_t interp = kBilinear;
  Axis<T> axis[3];  // x (W), y (H), z (D)

  Sampler(const Geometry& g, int64_t mode, int64_t padding, bool align) : geo(g), interp(mode) {
    const bool planar = g.nsp == 2;
    for (int64_t a = 0; a < g.nsp; ++a) axis[a] = Axis<T>(g.in[2 - a], padding, align, planar);
  }

  void taps(const T* g, Taps<T>& t, bool backward, bool grads) const {
    make_taps(geo, interp, axis, g, t, backward, grads);
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
            yc[p] = tb[size_t(p - p0)].apply(xc);
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

template <class T>
void forward(const Geometry& g, int64_t mode, int64_t padding, bool align, const void* x, const void* grid, void* y) {
  Sampler<T>(g, mode, padding, align)
      .forward(static_cast<const T*>(x), static_cast<const T*>(grid), static_cast<T*>(y));
}

void grid_sample_kernel(DType dt, const Geometry& g, int64_t mode, int64_t padding, bool align, const void* x,
                        const void* grid, void* y) {
  (dt == DType::Float64 ? forward<double> : forward<float>)(g, mode, padding, align, x, grid, y);
}

template <class T>
void backward(const Geometry& g, int64_t mode, int64_t padding, bool align, const void* gy, const void* x,
              const void* grid, void* gx, void* gg) {
  Sampler<T>(g, mode, padding, align)
      .backward(static_cast<const T*>(gy), static_cast<const T*>(x), static_cast<const T*>(grid), static_cast<T*>(gx),
                static_cast<T*>(gg));
}

void grid_sample_backward_kernel(DType dt, const Geometry& g, int64_t mode, int64_t padding, bool align,
                                 const void* gy, const void* x, const void* grid, void* gx, void* gg) {
  (dt == DType::Float64 ? backward<double> : backward<float>)(g, mode, padding, align, gy, x, grid, gx, gg);
}

}  // namespace

TP_REGISTER_CPU_KERNEL(grid_sample_stub, &grid_sample_kernel);
TP_REGISTER_CPU_KERNEL(grid_sample_backward_stub, &grid_sample_backward_kernel);

}  // namespace tp::cpu::TP_CPU_NS
