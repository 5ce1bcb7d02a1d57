// CUDA kernels of the random ops that produce indices or counts: randperm's sort of its
// Philox keys (CUB), multinomial's scan for bad probabilities, its keys and draws, and
// poisson with its check of the rates (random_samplers.h, Note [Philox streams]).
#include <cub/device/device_radix_sort.cuh>

#include <cmath>

#include "cuda/launch.cuh"
#include "cuda/random_launch.cuh"

namespace tp::cuda {

namespace {

__global__ void iota_kernel(int64_t* v, int64_t n) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) v[i] = i;
}

/// The event code of ProbabilityScan: ((row (n_categories + 1) + column) << 2) | kind, so the
/// smallest code is the first event in the CPU's row-by-row order (a row's zero sum sits
/// after its entries, at column n_categories).
__device__ __forceinline__ unsigned long long event_code(int64_t row, int64_t col,
                                                         int64_t n_categories, int kind) {
  return (static_cast<unsigned long long>(row * (n_categories + 1) + col) << 2) |
         static_cast<unsigned long long>(kind);
}

template <class P>
__global__ void scan_probabilities_kernel(const P* p, int64_t n, int64_t n_categories,
                                          unsigned long long* result, int* row_nonzero) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const P v = p[i];
    const int64_t row = i / n_categories;
    if (v != P(0) && !row_nonzero[row]) row_nonzero[row] = 1;
    const int kind = !(v >= P(0)) ? kProbabilityNegative
                                  : (v == P(INFINITY) ? kProbabilityInfinite : 0);
    if (kind) {
      atomicMin(&result[0], event_code(row, i - row * n_categories, n_categories, kind));
      atomicOr(&result[1], 1ull);
    }
  }
}

__global__ void zero_rows_kernel(const int* row_nonzero, int64_t rows, int64_t n_categories,
                                 unsigned long long* result) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t r = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; r < rows; r += step) {
    if (!row_nonzero[r]) {
      atomicMin(&result[0], event_code(r, n_categories, n_categories, kProbabilityZeroSum));
      atomicOr(&result[1], 2ull);
    }
  }
}

template <class T>
__global__ void check_rates_kernel(const T* rate, int64_t n, int* bad) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    if (!(philox::load(rate + i) >= 0)) *bad = 1;
}

}  // namespace

void launch_randperm_sort(const int64_t* keys, int64_t n, int64_t* perm, int device,
                          cudaStream_t stream) {
  if (n == 0) return;
  const Device dev(DeviceType::CUDA, device);
  Tensor sorted_keys = scratch(n, DType::Int64, dev), order = scratch(n, DType::Int64, dev);
  int64_t* iota = order.device_data<int64_t>();
  iota_kernel<<<loop_blocks(n), kLoopThreads, 0, stream>>>(iota, n);
  TP_CUDA_CHECK(cudaGetLastError());
  const auto* kin = reinterpret_cast<const uint64_t*>(keys);
  auto* kout = reinterpret_cast<uint64_t*>(sorted_keys.data_ptr());
  size_t bytes = 0;
  TP_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, kin, kout, iota, perm, n, 0, 64,
                                                stream));
  Tensor temp = scratch(int64_t(bytes) + 1, DType::UInt8, dev);
  TP_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.data_ptr(), bytes, kin, kout, iota, perm, n,
                                                0, 64, stream));
}

void launch_scan_probabilities(const void* p, bool is_double, int64_t rows, int64_t n_categories,
                               unsigned long long* result, int* row_nonzero, cudaStream_t stream) {
  const int64_t n = rows * n_categories;
  if (n > 0) {
    if (is_double)
      scan_probabilities_kernel<<<loop_blocks(n), kLoopThreads, 0, stream>>>(
          static_cast<const double*>(p), n, n_categories, result, row_nonzero);
    else
      scan_probabilities_kernel<<<loop_blocks(n), kLoopThreads, 0, stream>>>(
          static_cast<const float*>(p), n, n_categories, result, row_nonzero);
    TP_CUDA_CHECK(cudaGetLastError());
  }
  if (rows > 0) {
    zero_rows_kernel<<<loop_blocks(rows), kLoopThreads, 0, stream>>>(row_nonzero, rows,
                                                                     n_categories, result);
    TP_CUDA_CHECK(cudaGetLastError());
  }
}

void launch_multinomial_keys(const FillTarget& t, CUDAGenerator& g, const void* p) {
  philox::dispatch_multinomial_keys(PhiloxLauncher{t, g}, t.dtype, p, t.data);
}

void launch_multinomial_draws(const FillTarget& t, CUDAGenerator& g, const double* cum,
                              int64_t n_categories, int64_t n_sample) {
  philox::dispatch_multinomial_draws(PhiloxLauncher{t, g}, cum, static_cast<int64_t*>(t.data),
                                     n_categories, n_sample);
}

void launch_check_rates(const void* rate, int64_t n, DType dtype, int* bad, cudaStream_t stream) {
  if (n == 0) return;
  philox::visit_floating(dtype, "poisson_cuda", [&](auto v) {
    using T = decltype(v);
    check_rates_kernel<T><<<loop_blocks(n), kLoopThreads, 0, stream>>>(static_cast<const T*>(rate),
                                                                       n, bad);
    TP_CUDA_CHECK(cudaGetLastError());
  });
}

void launch_poisson(const FillTarget& t, CUDAGenerator& g, const void* rate) {
  philox::dispatch_poisson(PhiloxLauncher{t, g}, t.dtype, rate, t.data);
}

}  // namespace tp::cuda
