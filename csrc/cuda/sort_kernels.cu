// Sorting (CUB radix sort of order-preserving keys, segmented by row) and per-row scans
// (one block per row, CUB block scans over chunks with a running carry).
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>

#include <climits>
#include <cstdint>
#include <type_traits>

#include "cuda/block_scan.cuh"
#include "cuda/check.h"
#include "cuda/launch.cuh"
#include "cuda/runtime.h"
#include "cuda/sort.h"

namespace tp::cuda {

namespace {

constexpr int kThreads = kLoopThreads;


template <class T> using key_t = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;

/// An unsigned key with the order of `v` (NaN above +inf, all NaNs equal; the CPU's rule).
template <class T>
__device__ __forceinline__ key_t<T> order_key(T v) {
  using K = key_t<T>;
  if constexpr (std::is_floating_point_v<T>) {
    if (v != v) return ~K(0);
    if (v == T(0)) v = T(0);  // -0 sorts equal to +0, as comparisons say
    K u;
    if constexpr (sizeof(T) == 4) u = __float_as_uint(v);
    else u = K(__double_as_longlong(v));
    constexpr K sign = K(1) << (sizeof(K) * 8 - 1);
    return (u & sign) ? K(~u) : K(u | sign);
  } else if constexpr (sizeof(T) == 8) {
    return uint64_t(v) ^ (std::is_signed_v<T> ? uint64_t(1) << 63 : 0);
  } else {
    int64_t w = int64_t(v);
    return uint32_t(uint64_t(w + (std::is_signed_v<T> ? int64_t(1) << 31 : 0)));
  }
}

template <class T>
__global__ void make_keys_kernel(const T* x, key_t<T>* keys, int64_t* idx, int64_t n, int64_t len,
                                 bool descending) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    key_t<T> k = order_key(x[i]);
    keys[i] = descending ? key_t<T>(~k) : k;
    idx[i] = i % len;
  }
}

__global__ void row_offsets_kernel(int* offsets, int64_t rows, int64_t len) {
  for (int64_t r = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; r <= rows;
       r += int64_t(gridDim.x) * blockDim.x)
    offsets[r] = int(r * len);
}

template <class T>
__global__ void take_sorted_kernel(const T* x, const int64_t* idx, T* values, int64_t n,
                                   int64_t len) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    values[i] = x[(i / len) * len + idx[i]];
}

template <class T>
void sort_typed(const Tensor& x, int64_t rows, int64_t len, bool descending, const Tensor& values,
                const Tensor& indices, cudaStream_t s) {
  using K = key_t<T>;
  int64_t n = rows * len;
  Device dev = x.device();
  DType kdt = sizeof(K) == 8 ? DType::Int64 : DType::Int32;
  Tensor keys_in = scratch(n, kdt, dev), keys_out = scratch(n, kdt, dev);
  Tensor idx_in = scratch(n, DType::Int64, dev);
  K* kin = keys_in.device_data<K>();
  K* kout = keys_out.device_data<K>();
  int64_t* iin = idx_in.device_data<int64_t>();
  int64_t* iout = indices.device_data<int64_t>();
  make_keys_kernel<T><<<loop_blocks(n), kThreads, 0, s>>>(x.device_data<T>(), kin, iin, n, len,
                                                         descending);
  TP_CUDA_CHECK(cudaGetLastError());
  size_t bytes = 0;
  if (rows == 1) {
    TP_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, kin, kout, iin, iout, int(n), 0,
                                                  int(sizeof(K) * 8), s));
    Tensor temp = scratch(int64_t(bytes) + 1, DType::UInt8, dev);
    TP_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.data_ptr(), bytes, kin, kout, iin, iout,
                                                  int(n), 0, int(sizeof(K) * 8), s));
  } else {
    Tensor offsets = scratch(rows + 1, DType::Int32, dev);
    int* off = offsets.device_data<int>();
    row_offsets_kernel<<<loop_blocks(rows + 1), kThreads, 0, s>>>(off, rows, len);
    TP_CUDA_CHECK(cudaGetLastError());
    TP_CUDA_CHECK(cub::DeviceSegmentedRadixSort::SortPairs(
        nullptr, bytes, kin, kout, iin, iout, int(n), int(rows), off, off + 1, 0,
        int(sizeof(K) * 8), s));
    Tensor temp = scratch(int64_t(bytes) + 1, DType::UInt8, dev);
    TP_CUDA_CHECK(cub::DeviceSegmentedRadixSort::SortPairs(
        temp.data_ptr(), bytes, kin, kout, iin, iout, int(n), int(rows), off, off + 1, 0,
        int(sizeof(K) * 8), s));
  }
  take_sorted_kernel<T><<<loop_blocks(n), kThreads, 0, s>>>(x.device_data<T>(), iout,
                                                           values.device_data<T>(), n, len);
  TP_CUDA_CHECK(cudaGetLastError());
}

template <class T, bool Prod>
__global__ void scan_rows_kernel(const T* x, T* out, int64_t rows, int64_t len) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* row = x + r * len;
    T* o = out + r * len;
    block_scan_row<T>(
        len, Prod ? T(1) : T(0), [=](int64_t i) { return row[i]; },
        [](T a, T b) { return Prod ? T(a * b) : T(a + b); }, [=](int64_t i, T v) { o[i] = v; });
  }
}

}  // namespace

void sort_rows(const Tensor& x, int64_t rows, int64_t len, bool descending, const Tensor& values,
               const Tensor& indices) {
  if (rows == 0 || len == 0) return;
  TP_CHECK(rows * len < INT_MAX, "sort: CUDA sorts support fewer than 2^31 elements");
  DeviceGuard guard(x.device().index);
  cudaStream_t s = current_stream(x.device().index).handle;
  visit_dtype(x.dtype(), [&](auto v) {
    using T = decltype(v);
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      TP_FAIL("sort: half types reach the CUDA kernel only through float32");
    } else if constexpr (std::is_same_v<T, bool>) {
      sort_typed<uint8_t>(x, rows, len, descending, values, indices, s);
    } else {
      sort_typed<T>(x, rows, len, descending, values, indices, s);
    }
  });
}

void scan_rows(const Tensor& x, int64_t rows, int64_t len, bool product, const Tensor& out) {
  if (rows == 0 || len == 0) return;
  DeviceGuard guard(x.device().index);
  cudaStream_t s = current_stream(x.device().index).handle;
  auto run = [&](auto v) {
    using T = decltype(v);
    if (product)
      scan_rows_kernel<T, true><<<scan_blocks(rows), kScanThreads, 0, s>>>(
          x.device_data<T>(), out.device_data<T>(), rows, len);
    else
      scan_rows_kernel<T, false><<<scan_blocks(rows), kScanThreads, 0, s>>>(
          x.device_data<T>(), out.device_data<T>(), rows, len);
  };
  if (x.dtype() == DType::Float64) run(double{});
  else if (x.dtype() == DType::Int64) run(int64_t{});
  else if (x.dtype() == DType::Complex128) run(complex128_t{});  // complex scans run in complex128
  else TP_FAIL("cumsum: the CUDA scan runs in float64, int64 or complex128");
  TP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tp::cuda
