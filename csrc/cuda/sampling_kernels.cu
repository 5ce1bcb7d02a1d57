// grid_sampler_2d/3d and their backward on the GPU: one thread per grid point builds the
// point's taps with the CPU's rules (ops/grid_sample.h) and loops over the channels.
#include <cstdint>

#include "cuda/check.h"
#include "cuda/launch.cuh"
#include "cuda/nn_spatial.h"
#include "cuda/runtime.h"

namespace tp::cuda {

namespace {

using sampling::Axis;
using sampling::Geometry;
using sampling::Taps;

/// What a kernel needs to build taps: the geometry, the interpolation and the three axes.
template <class T>
struct Rule {
  Geometry geo;
  int64_t interp;
  Axis<T> axis[3];
};

template <class T>
Rule<T> make_rule(const Geometry& g, int64_t interp, int64_t padding, bool align) {
  Rule<T> r{g, interp, {}};
  for (int64_t a = 0; a < g.nsp; ++a) r.axis[a] = Axis<T>(g.in[2 - a], padding, align, g.nsp == 2);
  return r;
}

template <class T>
__global__ void grid_forward_kernel(const T* x, const T* grid, T* y, int64_t n, Rule<T> r) {
  const int64_t P = r.geo.points(), S = r.geo.plane(), C = r.geo.c;
  for (int64_t u = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; u < n; u += int64_t(gridDim.x) * blockDim.x) {
    const int64_t b = u / P, p = u % P;
    Taps<T> t;
    sampling::make_taps(r.geo, r.interp, r.axis, grid + u * r.geo.nsp, t, false, false);
    for (int64_t c = 0; c < C; ++c) {
      const T* xc = x + (b * C + c) * S;
      y[(b * C + c) * P + p] = t.apply(xc);
    }
  }
}

/// gx (may be null) += the point's output gradients at its taps; gg (may be null) = the
/// point's grid gradient, summed over the channels as the CPU's block_backward.
template <class T>
__global__ void grid_backward_kernel(const T* gy, const T* x, const T* grid, T* gx, T* gg, int64_t n, Rule<T> r) {
  const int64_t P = r.geo.points(), S = r.geo.plane(), C = r.geo.c, nsp = r.geo.nsp;
  const bool grid_grad = gg && r.interp != sampling::kNearest;
  for (int64_t u = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; u < n; u += int64_t(gridDim.x) * blockDim.x) {
    const int64_t b = u / P, p = u % P;
    Taps<T> t;
    sampling::make_taps(r.geo, r.interp, r.axis, grid + u * nsp, t, true, grid_grad);
    T vs[16], zs = 0;
    for (int k = 0; k < 16; ++k) vs[k] = 0;
    for (int64_t c = 0; c < C; ++c) {
      const T g = gy[(b * C + c) * P + p];
      const T* xc = x + (b * C + c) * S;
      if (gx) {
        T* gxc = gx + (b * C + c) * S;
        for (int k = 0; k < t.live; ++k) atomicAdd(gxc + t.live_index[k], g * t.live_weight[k]);
      }
      if (grid_grad) {
        for (int k = 0; k < t.live; ++k) vs[t.live_tap[k]] += g * xc[t.live_index[k]];
        if (t.live < t.count) zs += g * T(0);
      }
    }
    if (!gg) continue;
    for (int64_t a = 0; a < nsp; ++a) {
      T acc = 0;
      if (grid_grad)
        for (int k = 0; k < t.count; ++k) acc += (t.index[k] >= 0 ? vs[k] : zs) * t.dweight[a][k];
      gg[u * nsp + a] = acc;
    }
  }
}

/// Calls f(T{}) for the samplers' compute dtypes (nn_grid_sample.cpp widens the half types).
template <class F>
void visit_sampler(DType dt, F&& f) {
  if (dt == DType::Float32) return f(float{});
  if (dt == DType::Float64) return f(double{});
  TP_FAIL("grid_sampler CUDA kernels: unsupported dtype ", dtype_name(dt));
}

}  // namespace

void grid_sample_forward(const Geometry& g, int64_t interp, int64_t padding, bool align, const Tensor& x,
                         const Tensor& grid, const Tensor& y) {
  const int64_t n = g.n * g.points();
  if (y.numel() == 0) return;
  DeviceGuard guard(y.device().index);
  Stream s = current_stream(y.device().index);
  visit_sampler(y.dtype(), [&](auto t) {
    using T = decltype(t);
    grid_forward_kernel<T><<<loop_blocks(n), kLoopThreads, 0, s.handle>>>(
        x.device_data<T>(), grid.device_data<T>(), y.device_data<T>(), n, make_rule<T>(g, interp, padding, align));
  });
  TP_CUDA_CHECK(cudaGetLastError());
}

void grid_sample_backward(const Geometry& g, int64_t interp, int64_t padding, bool align, const Tensor& gy,
                          const Tensor& x, const Tensor& grid, const Tensor& gx, const Tensor& gg) {
  const int64_t n = g.n * g.points();
  if (n == 0 || (!gx.defined() && !gg.defined())) return;
  DeviceGuard guard(gy.device().index);
  Stream s = current_stream(gy.device().index);
  visit_sampler(gy.dtype(), [&](auto t) {
    using T = decltype(t);
    grid_backward_kernel<T><<<loop_blocks(n), kLoopThreads, 0, s.handle>>>(
        gy.device_data<T>(), x.device_data<T>(), grid.device_data<T>(), gx.defined() ? gx.device_data<T>() : nullptr,
        gg.defined() ? gg.device_data<T>() : nullptr, n, make_rule<T>(g, interp, padding, align));
  });
  TP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tp::cuda
