#pragma once
// vol2col / col2vol, the 3-D im2col and its adjoint, one entry at a time: the same code runs
// in the host loops (nn_conv.cpp) and the CUDA kernels (cuda/fold_kernels.cu).
#include <cstdint>

#include "core/macros.h"

namespace tp::conv {

/// The sliding blocks of c volumes of in[0..2] voxels (contiguous, one after another): the
/// columns are (c * K, L), row = channel * K + kernel position, K = k[0] * k[1] * k[2] and
/// L = out[0] * out[1] * out[2] output positions. A batch is c = N * channels volumes.
struct VolGeom {
  int64_t c = 0;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1};
  int64_t s[3] = {1, 1, 1}, p[3] = {0, 0, 0}, d[3] = {1, 1, 1};

  TP_HD int64_t k_numel() const { return k[0] * k[1] * k[2]; }
  TP_HD int64_t out_numel() const { return out[0] * out[1] * out[2]; }
  TP_HD int64_t in_numel() const { return in[0] * in[1] * in[2]; }
};

/// Column entry u of vol: the voxel its kernel position reads for its output position,
/// zero where that falls in the padding.
template <class T>
TP_HD inline T vol2col_entry(const VolGeom& g, const T* vol, int64_t u) {
  const int64_t L = g.out_numel(), K = g.k_numel();
  const int64_t l = u % L, r = u / L, kk = r % K, c = r / K;
  const int64_t ow = l % g.out[2], oh = l / g.out[2] % g.out[1], od = l / (g.out[2] * g.out[1]);
  const int64_t kw = kk % g.k[2], kh = kk / g.k[2] % g.k[1], kd = kk / (g.k[2] * g.k[1]);
  const int64_t iz = od * g.s[0] - g.p[0] + kd * g.d[0];
  const int64_t iy = oh * g.s[1] - g.p[1] + kh * g.d[1];
  const int64_t ix = ow * g.s[2] - g.p[2] + kw * g.d[2];
  if (iz < 0 || iz >= g.in[0] || iy < 0 || iy >= g.in[1] || ix < 0 || ix >= g.in[2]) return T(0);
  return vol[((c * g.in[0] + iz) * g.in[1] + iy) * g.in[2] + ix];
}

/// The output position o along one dim whose kernel tap reads the voxel at t = pos + pad -
/// tap * dilation: o = t / stride when that divides and lies in [0, out).
TP_HD inline bool vol_tap(int64_t t, int64_t stride, int64_t out, int64_t& o) {
  if (t < 0 || t % stride != 0) return false;
  o = t / stride;
  return o < out;
}

/// Voxel u of col2vol(col): the sum, in accumulation type A, of the column entries that read
/// it, in kernel-position order (a gather: deterministic, no atomics).
template <class A, class T>
TP_HD inline A col2vol_voxel(const VolGeom& g, const T* col, int64_t u) {
  const int64_t L = g.out_numel();
  const int64_t ix = u % g.in[2], iy = u / g.in[2] % g.in[1], iz = u / (g.in[2] * g.in[1]) % g.in[0];
  const T* src = col + u / g.in_numel() * g.k_numel() * L;
  A acc = A(0);
  for (int64_t kd = 0; kd < g.k[0]; ++kd) {
    int64_t od;
    if (!vol_tap(iz + g.p[0] - kd * g.d[0], g.s[0], g.out[0], od)) continue;
    for (int64_t kh = 0; kh < g.k[1]; ++kh) {
      int64_t oh;
      if (!vol_tap(iy + g.p[1] - kh * g.d[1], g.s[1], g.out[1], oh)) continue;
      for (int64_t kw = 0; kw < g.k[2]; ++kw) {
        int64_t ow;
        if (!vol_tap(ix + g.p[2] - kw * g.d[2], g.s[2], g.out[2], ow)) continue;
        acc += A(src[((kd * g.k[1] + kh) * g.k[2] + kw) * L + (od * g.out[1] + oh) * g.out[2] + ow]);
      }
    }
  }
  return acc;
}

}  // namespace tp::conv
