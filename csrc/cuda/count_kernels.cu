// bincount and histc: one atomic add per element into a zeroed output.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/check.h"
#include "cuda/launch.cuh"
#include "cuda/order_stats.h"
#include "cuda/runtime.h"

namespace tp::cuda {

namespace {

__global__ void bincount_kernel(const int64_t* x, int64_t n, unsigned long long* counts) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    atomicAdd(counts + x[i], 1ull);
}

__global__ void bincount_weights_kernel(const int64_t* x, const double* w, int64_t n, double* sums) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    atomicAdd(sums + x[i], w[i]);
}

/// Rounds a float step to the input's storage precision, as the CPU's histc does.
struct StorageRound {
  int kind;  // 0: none, 1: float16, 2: bfloat16
  template <class T>
  __device__ T operator()(T v) const {
    if (kind == 1) return T(__half2float(__float2half_rn(float(v))));
    if (kind == 2) return T(__bfloat162float(__float2bfloat16_rn(float(v))));
    return v;
  }
};

template <class T>
__global__ void histc_kernel(const T* x, int64_t n, T left, T right, T width, T nbins, int64_t bins,
                             StorageRound rnd, unsigned long long* counts) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t b = order_math::histc_bin(x[i], left, right, width, nbins, bins, rnd);
    if (b >= 0) atomicAdd(counts + b, 1ull);
  }
}

}  // namespace

void bincount(const Tensor& x, const Tensor& weights, const Tensor& out) {
  DeviceGuard guard(x.device().index);
  cudaStream_t s = current_stream(x.device().index).handle;
  TP_CUDA_CHECK(cudaMemsetAsync(out.data_ptr(), 0, size_t(out.numel()) * out.itemsize(), s));
  int64_t n = x.numel();
  if (n == 0) return;
  if (weights.defined())
    bincount_weights_kernel<<<loop_blocks(n), kLoopThreads, 0, s>>>(
        x.device_data<int64_t>(), weights.device_data<double>(), n, out.device_data<double>());
  else
    bincount_kernel<<<loop_blocks(n), kLoopThreads, 0, s>>>(
        x.device_data<int64_t>(), n, reinterpret_cast<unsigned long long*>(out.device_data<int64_t>()));
  TP_CUDA_CHECK(cudaGetLastError());
}

void histc(const Tensor& x, DType storage, double left, double right, double width, double nbins,
           const Tensor& counts) {
  DeviceGuard guard(x.device().index);
  cudaStream_t s = current_stream(x.device().index).handle;
  TP_CUDA_CHECK(cudaMemsetAsync(counts.data_ptr(), 0, size_t(counts.numel()) * 8, s));
  int64_t n = x.numel(), bins = counts.numel();
  if (n == 0) return;
  StorageRound rnd{storage == DType::Float16 ? 1 : storage == DType::BFloat16 ? 2 : 0};
  auto launch = [&](auto t) {
    using T = decltype(t);
    histc_kernel<T><<<loop_blocks(n), kLoopThreads, 0, s>>>(
        x.device_data<T>(), n, T(left), T(right), T(width), T(nbins), bins, rnd,
        reinterpret_cast<unsigned long long*>(counts.device_data<int64_t>()));
  };
  if (x.dtype() == DType::Float32) launch(float{});
  else if (x.dtype() == DType::Float64) launch(double{});
  else TP_FAIL("histc: the CUDA kernel runs in float32 or float64");
  TP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tp::cuda
