// Launch shapes and math shared by the nn kernel files (softmax_kernels.cu,
// norm_kernels.cu): rows held in registers, streamed rows, exp / log of the accumulation type.
#pragma once
#include <algorithm>
#include <climits>
#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "cuda/block_reduce.cuh"
#include "cuda/runtime.h"

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

// Note [Packed half rows]: a plain Triton layer-norm forward, one bfloat16 row of 4096 a
// program (32768 short-lived programs, the weight and bias loaded per row), reached 3926 / 3964
// GB/s on the H200 at 4 / 8 warps (benchmarks/probe_bf16_rows.py, 2026-12-01), where the
// pipelined kernels stopped at 3.53-3.63 TB/s and the bfloat16 register-row kernel at 2.0 (one
// row of 128 threads a block, its registers sized for kMaxRowThreads: about six blocks an SM, 48
// KB of loads in flight; its float32 twin moves 16 KB a row and reaches 3.9). So half-type rows
// of 4096 take one block of NT = 256 threads each (tp._C._cuda_set_packed_half_rows: 256, the
// default, 128, or 0 for the kernels below), a thread's K = 4096 / (NT * 8) packs held as loaded
// (two values a register) and unpacked in each of the row's passes, so a thread holds 8 (NT 256)
// or 16 registers (128) of values, and packed_row_blocks(NT) blocks an SM are asked for: eight of
// 256 threads (32 registers: every thread slot) or twelve of 128 (40 registers; at sixteen, 32
// registers, they spill), 64 or 96 KB of loads in flight an SM. Layer / RMS norm forward (weight
// and bias of the input's dtype, read per row, which of them present fixed at compile time, the
// output as in Note [Narrow norm rows]) and softmax / log_softmax forward (as the lean pipelined
// rows: exp on the special-function unit, here formed twice instead of held). bfloat16 32768x4096
// on the H200, one run beside the pipelined defaults of Note [Narrow norm rows] (2026-12-01, GB/s,
// 256 / 128 threads / pipelined): layer norm 3938 / 3932 / 3483, RMS norm 4008 / 3950 / 3645,
// softmax 3992 / 3998 / 3579; Nsight Compute 128-130 us a call against 144-145, DRAM 82% of peak
// against 73-74%. (Spilled: 4 bytes in float16 layer norm with weight and bias on 256 threads;
// 8 in the no-affine layer norm and 12 in log_softmax on 128.)

/// Blocks an SM the packed row kernels of NT threads ask for (Note [Packed half rows]).
constexpr int packed_row_blocks(int nt) { return nt == 128 ? 12 : 8; }
constexpr int64_t kPackedRowLength = 4096;

/// The threads a block of the packed half-type row kernels takes for `rows` rows of n
/// elements of T at these pointers (Note [Packed half rows]), or 0 where they do not apply.
template <class T>
int packed_row_threads(int64_t n, int64_t rows, std::initializer_list<const void*> ptrs) {
  const int nt = packed_half_rows();
  if (sizeof(T) != 2 || nt == 0 || n != kPackedRowLength || rows > INT32_MAX) return 0;
  for (const void* p : ptrs)
    if (p && reinterpret_cast<uintptr_t>(p) % 16 != 0) return 0;
  return nt;
}

/// Calls go(std::integral_constant<int, NT>) for nt, 128 or 256.
template <class F>
void with_packed_threads(int nt, F&& go) {
  if (nt == 128) go(std::integral_constant<int, 128>{});
  else go(std::integral_constant<int, 256>{});
}

/// The pack p, which the compiler may not take for the value it had before: its values are
/// unpacked again where it is used, not held unpacked across the row (Note [Packed half
/// rows]).
template <class T, int V>
__device__ __forceinline__ Pack<T, V> opaque(Pack<T, V> p) {
  static_assert(sizeof(p) == 16, "a 16-byte pack");
  uint32_t* u = reinterpret_cast<uint32_t*>(p.v);
  asm volatile("" : "+r"(u[0]), "+r"(u[1]), "+r"(u[2]), "+r"(u[3]));
  return p;
}

/// Row blockIdx.x of rows of kPackedRowLength at x as the packed row kernels hold it (Note
/// [Packed half rows]): this thread's K packs, t, t + NT, ..., as loaded.
template <class T, int NT>
struct PackedRow {
  static constexpr int V = kPackOf<T>, K = int(kPackedRowLength) / (NT * V);
  static constexpr int64_t n = kPackedRowLength;
  const int t = int(threadIdx.x);
  const int64_t row = blockIdx.x;
  Pack<T, V> q[K];
  __device__ __forceinline__ explicit PackedRow(const T* x) {
#pragma unroll
    for (int k = 0; k < K; ++k) q[k] = load_pack(x + row * n + (t + k * NT) * V);
  }
  /// Where pack k of this thread goes in the rows at y.
  __device__ __forceinline__ T* at(T* y, int k) const { return y + row * n + (t + k * NT) * V; }
  /// f(v) for each of this thread's values in order; kAnew: unpacked anew (opaque), not
  /// from values an earlier pass unpacked (the row's first pass takes false).
  template <bool kAnew = true, class F>
  __device__ __forceinline__ void each(F&& f) const {
#pragma unroll
    for (int k = 0; k < K; ++k) {
      acc_t<T> v[V];
      unpack_acc(kAnew ? opaque(q[k]) : q[k], v);
#pragma unroll
      for (int e = 0; e < V; ++e) f(v[e]);
    }
  }
};


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
