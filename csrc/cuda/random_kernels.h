// The launches of the CUDA random kernels (csrc/cuda/random_*.cu), called by
// random_ops.cpp with checked arguments and a dense output.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"
#include "cuda/generator.h"
#include "cuda/random.h"

namespace tp::cuda {

constexpr int kPhiloxThreads = 256;  // threads per block of the random kernels

/// n dense elements of `dtype` at `data` on GPU `device`, written on `stream`.
struct FillTarget {
  void* data;
  int64_t n;
  DType dtype;
  int device;
  cudaStream_t stream;
};

/// Blocks of the grid for a launch of `philox_blocks` blocks (the values never depend on
/// it: Note [Philox streams]): one full wave, `blocks_per_sm` (the kernel's occupancy) on
/// every SM, or the test override. A grid-stride loop over more blocks than fit at once
/// would run a second, partly idle wave.
int philox_grid(int64_t philox_blocks, int device, int blocks_per_sm);

void launch_uniform(const FillTarget& t, CUDAGenerator& g, double from, double to);
void launch_normal(const FillTarget& t, CUDAGenerator& g, double mean, double std, bool log_normal);
void launch_exponential(const FillTarget& t, CUDAGenerator& g, double lambda);
void launch_cauchy(const FillTarget& t, CUDAGenerator& g, double median, double sigma);
void launch_geometric(const FillTarget& t, CUDAGenerator& g, double p);
void launch_random(const FillTarget& t, CUDAGenerator& g, int64_t base, uint64_t range);
void launch_bernoulli(const FillTarget& t, CUDAGenerator& g, double p);
/// `p`: t.n probabilities laid out like the output (double for float64 outputs, else float).
void launch_bernoulli(const FillTarget& t, CUDAGenerator& g, const void* p);
/// Sets *bad (device memory) to 1 unless the n floats (doubles when `is_double`) at `p`
/// all lie in [0, 1].
void launch_check_probabilities(const void* p, int64_t n, bool is_double, int* bad,
                                cudaStream_t stream);
/// out (t) and mask from `in`, all dense in the same order.
void launch_dropout(const FillTarget& t, CUDAGenerator& g, const void* in, bool* mask, double p);
/// out = grad * mask * scale over n dense elements of a floating dtype.
void launch_dropout_backward(const FillTarget& t, const void* grad, const bool* mask, double scale);

/// perm (n int64) = the stable ascending argsort of the n keys (read as uint64) at `keys`.
void launch_randperm_sort(const int64_t* keys, int64_t n, int64_t* perm, int device,
                          cudaStream_t stream);

/// Scans rows x n_categories contiguous probabilities (double when `is_double`, else
/// float). result (2 device words, preset to ~0 and 0): [0] = the smallest event code
/// ((row (n_categories + 1) + column) << 2 | kind (random.h), a zero row at column
/// n_categories: the first event in row-major order), [1] |= 1 for any bad entry, |= 2
/// for any zero row. row_nonzero: `rows` ints preset to 0.
void launch_scan_probabilities(const void* p, bool is_double, int64_t rows, int64_t n_categories,
                               unsigned long long* result, int* row_nonzero, cudaStream_t stream);
/// multinomial's race keys (t: float or float64) from t.n probabilities `p` of t's dtype.
void launch_multinomial_keys(const FillTarget& t, CUDAGenerator& g, const void* p);
/// multinomial with replacement: t (int64, rows x n_sample) from the rows' float64
/// inclusive sums `cum` (rows x n_categories).
void launch_multinomial_draws(const FillTarget& t, CUDAGenerator& g, const double* cum,
                              int64_t n_categories, int64_t n_sample);
/// Sets *bad (device memory) to 1 when one of the n rates (floating dtype) is negative or NaN.
void launch_check_rates(const void* rate, int64_t n, DType dtype, int* bad, cudaStream_t stream);
/// poisson: t from t.n rates laid out like it.
void launch_poisson(const FillTarget& t, CUDAGenerator& g, const void* rate);

}  // namespace tp::cuda
