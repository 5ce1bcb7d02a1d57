// im2col / col2im (F.unfold / F.fold) and their 3-D forms vol2col / col2vol on the GPU: one
// thread per column entry (im2col) or per pixel (col2im, a gather over the kernel positions
// that read it: deterministic).
#include <cstdint>
#include <type_traits>

#include "cuda/check.h"
#include "cuda/launch.cuh"
#include "cuda/nn_spatial.h"
#include "cuda/runtime.h"

namespace tp::cuda {

namespace {

template <class T>
__global__ void im2col_kernel(const T* img, T* col, int64_t n, BlockGeom g) {
  const int64_t L = g.out_h * g.out_w, K = g.kh * g.kw;
  for (int64_t u = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; u < n; u += int64_t(gridDim.x) * blockDim.x) {
    const int64_t l = u % L, r = u / L, kk = r % K, plane = r / K;
    const int64_t ih = (l / g.out_w) * g.sh - g.ph + (kk / g.kw) * g.dh;
    const int64_t iw = (l % g.out_w) * g.sw - g.pw + (kk % g.kw) * g.dw;
    col[u] = ih >= 0 && ih < g.h && iw >= 0 && iw < g.w ? img[(plane * g.h + ih) * g.w + iw] : T(0);
  }
}

template <class T>
__device__ __forceinline__ void accumulate(T& acc, T v) {
  if constexpr (std::is_same_v<T, bool>) acc = acc || v;
  else acc += v;
}

/// The output index o along one dim whose kernel tap reads input position t + tap offset
/// (t = pos + pad - tap * dilation): o = t / stride when that divides and lies in [0, out).
__device__ __forceinline__ bool tap_output(int64_t t, int64_t stride, int64_t out, int64_t& o) {
  if (t < 0 || t % stride != 0) return false;
  o = t / stride;
  return o < out;
}

template <class T>
__global__ void col2im_kernel(const T* col, T* img, int64_t n, BlockGeom g) {
  const int64_t L = g.out_h * g.out_w, K = g.kh * g.kw;
  for (int64_t u = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; u < n; u += int64_t(gridDim.x) * blockDim.x) {
    const int64_t iw = u % g.w, ih = u / g.w % g.h, plane = u / (g.w * g.h);
    const T* src = col + plane * K * L;
    T acc = T(0);
    for (int64_t a = 0; a < g.kh; ++a) {
      int64_t oh;
      if (!tap_output(ih + g.ph - a * g.dh, g.sh, g.out_h, oh)) continue;
      for (int64_t b = 0; b < g.kw; ++b) {
        int64_t ow;
        if (!tap_output(iw + g.pw - b * g.dw, g.sw, g.out_w, ow)) continue;
        accumulate(acc, src[(a * g.kw + b) * L + oh * g.out_w + ow]);
      }
    }
    img[u] = acc;
  }
}

template <class T>
__global__ void vol2col_kernel(const T* vol, T* col, int64_t n, conv::VolGeom g) {
  for (int64_t u = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; u < n; u += int64_t(gridDim.x) * blockDim.x)
    col[u] = conv::vol2col_entry(g, vol, u);
}

template <class T>
__global__ void col2vol_kernel(const T* col, T* vol, int64_t n, conv::VolGeom g) {
  for (int64_t u = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; u < n; u += int64_t(gridDim.x) * blockDim.x)
    vol[u] = conv::col2vol_voxel<T>(g, col, u);
}

/// Calls f(T{}) for the dtypes of im2col/col2im and vol2col/col2vol (nn_conv.cpp widens the
/// half types first; vol2col/col2vol get float32 and float64 only).
template <class F>
void visit_blocks(DType dt, F&& f) {
  switch (dt) {
    case DType::Float32: return f(float{});
    case DType::Float64: return f(double{});
    case DType::Bool: return f(bool{});
    default: TP_FAIL("im2col/col2im CUDA kernels: unsupported dtype ", dtype_name(dt));
  }
}

/// Runs launch(T{}, n, stream) for the n entries of dst, each written by one thread of a
/// grid-stride loop, on dst's device; nothing for an empty dst.
template <class F>
void launch_fold(const Tensor& dst, F&& launch) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  DeviceGuard guard(dst.device().index);
  Stream s = current_stream(dst.device().index);
  visit_blocks(dst.dtype(), [&](auto t) { launch(t, n, s.handle); });
  TP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void im2col(const BlockGeom& g, const Tensor& img, const Tensor& col) {
  launch_fold(col, [&](auto t, int64_t n, cudaStream_t st) {
    using T = decltype(t);
    im2col_kernel<T><<<loop_blocks(n), kLoopThreads, 0, st>>>(img.device_data<T>(), col.device_data<T>(), n, g);
  });
}

void col2im(const BlockGeom& g, const Tensor& col, const Tensor& img) {
  launch_fold(img, [&](auto t, int64_t n, cudaStream_t st) {
    using T = decltype(t);
    col2im_kernel<T><<<loop_blocks(n), kLoopThreads, 0, st>>>(col.device_data<T>(), img.device_data<T>(), n, g);
  });
}

void vol2col(const conv::VolGeom& g, const Tensor& vol, const Tensor& col) {
  launch_fold(col, [&](auto t, int64_t n, cudaStream_t st) {
    using T = decltype(t);
    vol2col_kernel<T><<<loop_blocks(n), kLoopThreads, 0, st>>>(vol.device_data<T>(), col.device_data<T>(), n, g);
  });
}

void col2vol(const conv::VolGeom& g, const Tensor& col, const Tensor& vol) {
  launch_fold(vol, [&](auto t, int64_t n, cudaStream_t st) {
    using T = decltype(t);
    col2vol_kernel<T><<<loop_blocks(n), kLoopThreads, 0, st>>>(col.device_data<T>(), vol.device_data<T>(), n, g);
  });
}

}  // namespace tp::cuda
