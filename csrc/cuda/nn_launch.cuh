// Launch shapes and math shared by the nn kernel files (softmax_kernels.cu,
// norm_kernels.cu): rows held in registers, streamed rows, exp / log of the accumulation type.
#pragma once
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "cuda/block_reduce.cuh"

namespace tp::cuda {

/// The most threads an nn row kernel gives one row (and its __launch_bounds__).
constexpr int kMaxRowThreads = 512;
/// 32-bit registers a thread spends on one row's values in a forward kernel (float32:
/// 32 values, so rows up to 16384 elements stay in registers).
constexpr int kMaxRegFloats = 32;

template <class A>
__device__ __forceinline__ A dev_exp(A v) {
  if constexpr (std::is_same_v<A, float>) return expf(v);
  else return exp(v);
}
template <class A>
__device__ __forceinline__ A dev_log(A v) {
  if constexpr (std::is_same_v<A, float>) return logf(v);
  else return log(v);
}

/// tpr threads (a power of two, 32 ... kMaxRowThreads) per row, each holding k packs
/// (k a power of two); `threads` per block (several rows when tpr < 128), `blocks` blocks.
struct RegRowConfig {
  int tpr = 32, threads = 128, k = 1;
  unsigned blocks = 1;
};

/// The register-row shape for `rows` rows of n elements of T with at most `max_words`
/// 32-bit registers of values per thread; false when the rows do not fit or do not fill
/// whole 16-byte packs from 16-byte aligned pointers.
template <class T>
bool reg_row_config(int64_t n, int max_words, int64_t rows, std::initializer_list<const void*> ptrs,
                    RegRowConfig& c) {
  constexpr int V = kPackOf<T>;
  constexpr int words = V * int(sizeof(acc_t<T>) / 4);
  if (n <= 0 || n % V != 0) return false;
  for (const void* p : ptrs)
    if (p && reinterpret_cast<uintptr_t>(p) % 16 != 0) return false;
  const int kmax = std::min(8, max_words / words);
  const int64_t packs = n / V;
  int tpr = 32;
  while (tpr < kMaxRowThreads && int64_t(tpr) * kmax < packs) tpr *= 2;
  if (int64_t(tpr) * kmax < packs) return false;
  int k = 1;
  while (int64_t(tpr) * k < packs) k *= 2;
  c.tpr = tpr;
  c.k = k;
  c.threads = std::max(tpr, 128);
  const int64_t per_block = c.threads / tpr;
  c.blocks = unsigned((rows + per_block - 1) / per_block);
  return true;
}

/// tpr threads (32 ... kMaxRowThreads) per streamed row of n elements, several rows per block of
/// `threads` when rows are short.
struct StreamRowConfig {
  int tpr = 32, threads = 256;
  unsigned blocks = 1;
};

inline StreamRowConfig stream_row_config(int64_t rows, int64_t n) {
  StreamRowConfig c;
  while (c.tpr < kMaxRowThreads && int64_t(c.tpr) * 16 < n) c.tpr *= 2;
  c.threads = std::max(c.tpr, 256);
  const int64_t per_block = c.threads / c.tpr;
  c.blocks = unsigned((rows + per_block - 1) / per_block);
  return c;
}

}  // namespace tp::cuda
