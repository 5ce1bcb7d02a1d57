// Order statistics from sorted rows (median, mode, quantile), kthvalue by the CPU's
// quickselect, and the run finding behind unique / unique_consecutive.
#include <cub/device/device_scan.cuh>

#include <climits>
#include <cstdint>
#include <type_traits>

#include "cuda/check.h"
#include "cuda/graphs/capture.h"
#include "cuda/launch.cuh"
#include "cuda/order_stats.h"
#include "cuda/runtime.h"

namespace tp::cuda {

namespace {

using order_math::is_nan;

/// Number of non-NaN elements of a sorted row (NaNs come last).
template <class T>
__device__ int64_t count_numbers(const T* row, int64_t len) {
  int64_t lo = 0, hi = len;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (is_nan(row[mid])) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

template <class T>
__global__ void kthvalue_kernel(T* v, int64_t* ix, int64_t rows, int64_t len, int64_t k, T* ov,
                                int64_t* oi) {
  for (int64_t r = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; r < rows;
       r += int64_t(gridDim.x) * blockDim.x) {
    T* rv = v + r * len;
    int64_t* ri = ix + r * len;
    for (int64_t i = 0; i < len; ++i) ri[i] = i;
    order_math::quick_select(rv, ri, len, k);
    ov[r] = rv[k];
    oi[r] = ri[k];
  }
}

template <class T>
__global__ void median_kernel(const T* x, const T* sv, const int64_t* si, int64_t rows, int64_t len,
                              bool ignore_nan, int64_t all_nan_index, T* ov, int64_t* oi) {
  for (int64_t r = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; r < rows;
       r += int64_t(gridDim.x) * blockDim.x) {
    const T* row = sv + r * len;
    int64_t m = count_numbers(row, len);
    if (ignore_nan && m == 0) {
      ov[r] = x[r * len + all_nan_index];
      oi[r] = all_nan_index;
      continue;
    }
    // the stable sort puts the first NaN of the row at position m
    int64_t pos = !ignore_nan && m < len ? m : (m - 1) / 2;
    ov[r] = row[pos];
    oi[r] = si[r * len + pos];
  }
}

template <class T>
__global__ void mode_kernel(const T* x, order_math::Keyed<T>* buf, int64_t rows, int64_t len, T* ov,
                            int64_t* oi) {
  for (int64_t r = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; r < rows;
       r += int64_t(gridDim.x) * blockDim.x) {
    order_math::Keyed<T>* el = buf + r * len;
    for (int64_t i = 0; i < len; ++i) el[i] = {x[r * len + i], i};
    order_math::sort_like_std(el, len);
    order_math::mode_of_sorted(el, len, ov[r], oi[r]);
  }
}

template <class T>
__global__ void quantile_kernel(const T* sv, int64_t rows, int64_t len, const double* q, int64_t nq,
                                order_math::Interp how, bool ignore_nan, T* out) {
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < rows * nq;
       e += int64_t(gridDim.x) * blockDim.x) {
    int64_t r = e / nq, j = e % nq;
    const T* row = sv + r * len;
    int64_t m = count_numbers(row, len);
    out[e] = !ignore_nan && m < len ? T(NAN) : order_math::quantile_of_sorted(row, m, q[j], how);
  }
}

template <class T>
__global__ void run_flags_kernel(const T* k, int64_t n, int64_t* flags) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    flags[i] = i == 0 || !(k[i - 1] == k[i]);
}

template <class T>
__global__ void slice_run_flags_kernel(const T* x, const int64_t* perm, int64_t n, int64_t m,
                                       int64_t* flags) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    bool starts = i == 0;
    if (!starts) {
      const T* a = x + perm[i - 1] * m;
      const T* b = x + perm[i] * m;
      for (int64_t c = 0; c < m && !starts; ++c) starts = !(a[c] == b[c]);
    }
    flags[i] = starts;
  }
}

/// run_id[i] = (number of run starts at or before i) - 1; scatters first and inverse.
__global__ void runs_kernel(const int64_t* flags, const int64_t* run_end, int64_t n,
                            const int64_t* order, int64_t* first, int64_t* inverse) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t g = run_end[i] - 1;
    if (flags[i]) first[g] = i;
    inverse[order ? order[i] : i] = g;
  }
}

__global__ void run_counts_kernel(const int64_t* first, int64_t runs, int64_t n, int64_t* counts) {
  for (int64_t g = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; g < runs;
       g += int64_t(gridDim.x) * blockDim.x)
    counts[g] = (g + 1 < runs ? first[g + 1] : n) - first[g];
}

/// Calls f(T{}) for the arithmetic device type of dt (the half types never reach here).
template <class F>
void visit_arith(DType dt, const char* op, F&& f) {
  visit_device_dtype(dt, [&](auto v) {
    using T = decltype(v);
    if constexpr (std::is_arithmetic_v<T>) f(v);
    else TP_FAIL(op, ": half types reach the CUDA kernel only through float32");
  });
}

cudaStream_t stream_of(const Tensor& t) { return current_stream(t.device().index).handle; }

}  // namespace

void kthvalue_rows(const Tensor& x, int64_t rows, int64_t len, int64_t k, const Tensor& values,
                   const Tensor& indices) {
  if (rows == 0 || len == 0) return;
  DeviceGuard guard(x.device().index);
  cudaStream_t s = stream_of(x);
  int64_t n = rows * len;
  Tensor v = scratch(n, x.dtype(), x.device()), ix = scratch(n, DType::Int64, x.device());
  TP_CUDA_CHECK(cudaMemcpyAsync(v.data_ptr(), x.data_ptr(), size_t(n) * x.itemsize(),
                                cudaMemcpyDeviceToDevice, s));
  visit_arith(x.dtype(), "kthvalue", [&](auto t) {
    using T = decltype(t);
    kthvalue_kernel<T><<<loop_blocks(rows), kLoopThreads, 0, s>>>(
        v.device_data<T>(), ix.device_data<int64_t>(), rows, len, k, values.device_data<T>(),
        indices.device_data<int64_t>());
  });
  TP_CUDA_CHECK(cudaGetLastError());
}

void median_rows(const Tensor& x, const Tensor& sorted, const Tensor& sorted_idx, int64_t rows,
                 int64_t len, bool ignore_nan, int64_t all_nan_index, const Tensor& values,
                 const Tensor& indices) {
  if (rows == 0 || len == 0) return;
  DeviceGuard guard(x.device().index);
  visit_arith(x.dtype(), "median", [&](auto t) {
    using T = decltype(t);
    median_kernel<T><<<loop_blocks(rows), kLoopThreads, 0, stream_of(x)>>>(
        x.device_data<T>(), sorted.device_data<T>(), sorted_idx.device_data<int64_t>(), rows, len,
        ignore_nan, all_nan_index, values.device_data<T>(), indices.device_data<int64_t>());
  });
  TP_CUDA_CHECK(cudaGetLastError());
}

void mode_rows(const Tensor& x, int64_t rows, int64_t len, const Tensor& values, const Tensor& indices) {
  if (rows == 0 || len == 0) return;
  DeviceGuard guard(x.device().index);
  visit_arith(x.dtype(), "mode", [&](auto t) {
    using T = decltype(t);
    using E = order_math::Keyed<T>;
    Tensor buf = scratch(rows * len * int64_t(sizeof(E)), DType::UInt8, x.device());
    mode_kernel<T><<<loop_blocks(rows), kLoopThreads, 0, stream_of(x)>>>(
        x.device_data<T>(), reinterpret_cast<E*>(buf.data_ptr()), rows, len, values.device_data<T>(),
        indices.device_data<int64_t>());
  });
  TP_CUDA_CHECK(cudaGetLastError());
}

void quantile_rows(const Tensor& sorted, int64_t rows, int64_t len, const Tensor& q,
                   order_math::Interp how, bool ignore_nan, const Tensor& out) {
  int64_t nq = q.numel();
  if (rows == 0 || len == 0 || nq == 0) return;
  DeviceGuard guard(sorted.device().index);
  auto launch = [&](auto t) {
    using T = decltype(t);
    quantile_kernel<T><<<loop_blocks(rows * nq), kLoopThreads, 0, stream_of(sorted)>>>(
        sorted.device_data<T>(), rows, len, q.device_data<double>(), nq, how, ignore_nan,
        out.device_data<T>());
  };
  if (sorted.dtype() == DType::Float32) launch(float{});
  else if (sorted.dtype() == DType::Float64) launch(double{});
  else TP_FAIL("quantile: the CUDA kernel runs in float32 or float64");
  TP_CUDA_CHECK(cudaGetLastError());
}

Tensor run_flags(const Tensor& keys) {
  int64_t n = keys.numel();
  Tensor flags = scratch(n, DType::Int64, keys.device());
  if (n == 0) return flags;
  DeviceGuard guard(keys.device().index);
  visit_arith(keys.dtype(), "unique", [&](auto t) {
    using T = decltype(t);
    run_flags_kernel<T><<<loop_blocks(n), kLoopThreads, 0, stream_of(keys)>>>(
        keys.device_data<T>(), n, flags.device_data<int64_t>());
  });
  TP_CUDA_CHECK(cudaGetLastError());
  return flags;
}

Tensor slice_run_flags(const Tensor& x, const Tensor& perm, int64_t n, int64_t m) {
  Tensor flags = scratch(n, DType::Int64, x.device());
  if (n == 0) return flags;
  DeviceGuard guard(x.device().index);
  visit_arith(x.dtype(), "unique", [&](auto t) {
    using T = decltype(t);
    slice_run_flags_kernel<T><<<loop_blocks(n), kLoopThreads, 0, stream_of(x)>>>(
        x.device_data<T>(), perm.device_data<int64_t>(), n, m, flags.device_data<int64_t>());
  });
  TP_CUDA_CHECK(cudaGetLastError());
  return flags;
}

Runs runs_from_flags(const Tensor& flags, const Tensor& order) {
  int64_t n = flags.numel();
  Device dev = flags.device();
  Runs res;
  res.inverse = scratch(n, DType::Int64, dev);
  if (n == 0) {
    res.first = scratch(0, DType::Int64, dev);
    res.counts = scratch(0, DType::Int64, dev);
    return res;
  }
  TP_CHECK(n < INT_MAX, "unique: CUDA kernels support fewer than 2^31 elements");
  DeviceGuard guard(dev.index);
  cudaStream_t s = stream_of(flags);
  graphs::check_not_capturing(s, "unique (its output size depends on the data)");
  Tensor run_end = scratch(n, DType::Int64, dev);
  const int64_t* f = flags.device_data<int64_t>();
  int64_t* e = run_end.device_data<int64_t>();
  size_t bytes = 0;
  TP_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, bytes, f, e, int(n), s));
  Tensor temp = scratch(int64_t(bytes) + 1, DType::UInt8, dev);
  TP_CUDA_CHECK(cub::DeviceScan::InclusiveSum(temp.data_ptr(), bytes, f, e, int(n), s));
  int64_t runs = 0;  // the output size: one read back, as PyTorch's kernel does
  TP_CUDA_CHECK(cudaMemcpyAsync(&runs, e + (n - 1), sizeof(int64_t), cudaMemcpyDeviceToHost, s));
  TP_CUDA_CHECK(cudaStreamSynchronize(s));
  res.first = scratch(runs, DType::Int64, dev);
  res.counts = scratch(runs, DType::Int64, dev);
  runs_kernel<<<loop_blocks(n), kLoopThreads, 0, s>>>(
      f, e, n, order.defined() ? order.device_data<int64_t>() : nullptr,
      res.first.device_data<int64_t>(), res.inverse.device_data<int64_t>());
  TP_CUDA_CHECK(cudaGetLastError());
  run_counts_kernel<<<loop_blocks(runs), kLoopThreads, 0, s>>>(
      res.first.device_data<int64_t>(), runs, n, res.counts.device_data<int64_t>());
  TP_CUDA_CHECK(cudaGetLastError());
  return res;
}

}  // namespace tp::cuda
