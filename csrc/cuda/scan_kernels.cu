// Scans with a custom combine: cummax/cummin (value and index pairs) and logcumsumexp,
// one block per row (block_scan_row), for rows of any length.
#include <cstdint>
#include <limits>
#include <type_traits>

#include "cuda/block_scan.cuh"
#include "cuda/check.h"
#include "cuda/launch.cuh"
#include "cuda/order_stats.h"
#include "cuda/runtime.h"

namespace tp::cuda {

namespace {

/// A running best and where it was reached; at < 0 is the empty prefix (the identity).
template <class T>
struct Best {
  T v;
  int64_t at;
};

template <class T, bool IsMax>
__global__ void cum_best_kernel(const T* x, T* values, int64_t* indices, int64_t rows, int64_t len) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* row = x + r * len;
    T* ov = values + r * len;
    int64_t* oi = indices + r * len;
    // Folding a segment after a prefix gives the prefix's best unless the segment's own
    // best takes over, which makes this combine associative.
    auto combine = [](Best<T> a, Best<T> b) {
      if (b.at < 0) return a;
      if (a.at < 0) return b;
      return order_math::cum_takes<IsMax>(b.v, a.v) ? b : a;
    };
    block_scan_row<Best<T>>(
        len, Best<T>{T(0), -1}, [=](int64_t i) { return Best<T>{row[i], i}; }, combine,
        [=](int64_t i, Best<T> b) {
          ov[i] = b.v;
          oi[i] = b.at;
        });
  }
}

__global__ void logcumsumexp_kernel(const double* x, double* out, int64_t rows, int64_t len) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const double* row = x + r * len;
    double* o = out + r * len;
    block_scan_row<double>(
        len, -std::numeric_limits<double>::infinity(), [=](int64_t i) { return row[i]; },
        [](double a, double b) { return order_math::log_add_exp(a, b); },
        [=](int64_t i, double v) { o[i] = v; });
  }
}

}  // namespace

void cum_best_rows(const Tensor& x, int64_t rows, int64_t len, bool is_max, const Tensor& values,
                   const Tensor& indices) {
  if (rows == 0 || len == 0) return;
  DeviceGuard guard(x.device().index);
  cudaStream_t s = current_stream(x.device().index).handle;
  visit_device_dtype(x.dtype(), [&](auto v) {
    using T = decltype(v);
    if constexpr (std::is_arithmetic_v<T>) {
      auto launch = [&](auto kernel) {
        kernel<<<scan_blocks(rows), kScanThreads, 0, s>>>(x.device_data<T>(), values.device_data<T>(),
                                                          indices.device_data<int64_t>(), rows, len);
      };
      if (is_max) launch(cum_best_kernel<T, true>);
      else launch(cum_best_kernel<T, false>);
    } else {
      TP_FAIL("cummax: half types reach the CUDA kernel only through float32");
    }
  });
  TP_CUDA_CHECK(cudaGetLastError());
}

void logcumsumexp_rows(const Tensor& x, int64_t rows, int64_t len, const Tensor& out) {
  if (rows == 0 || len == 0) return;
  DeviceGuard guard(x.device().index);
  cudaStream_t s = current_stream(x.device().index).handle;
  logcumsumexp_kernel<<<scan_blocks(rows), kScanThreads, 0, s>>>(x.device_data<double>(),
                                                                 out.device_data<double>(), rows, len);
  TP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tp::cuda
