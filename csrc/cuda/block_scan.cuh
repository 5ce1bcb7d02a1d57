// The block-per-row inclusive scan shared by the CUDA scans (cumsum/cumprod in
// sort_kernels.cu, cummax/cummin/logcumsumexp in scan_kernels.cu).
#pragma once
#include <cub/block/block_scan.cuh>

#include <cstdint>

namespace tp::cuda {

/// Threads per block of every kernel that calls block_scan_row.
constexpr int kScanThreads = 256;

/// Inclusive scan of one row of `len` elements by the whole block (kScanThreads threads,
/// all of which must call it): store(i, load(0) op ... op load(i)) for each i < len, in
/// chunks of 4 per thread with a running carry, so rows of any length work. `op` must be
/// associative (not necessarily commutative) with identity `id`.
template <class T, class Load, class Op, class Store>
__device__ void block_scan_row(int64_t len, T id, Load load, Op op, Store store) {
  using Scan = cub::BlockScan<T, kScanThreads>;
  __shared__ typename Scan::TempStorage tmp;
  constexpr int kPer = 4;
  T carry = id;
  for (int64_t base = 0; base < len; base += int64_t(kScanThreads) * kPer) {
    T v[kPer];
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      int64_t i = base + int64_t(threadIdx.x) * kPer + j;
      v[j] = i < len ? load(i) : id;
      if (j) v[j] = op(v[j - 1], v[j]);
    }
    T prefix, total;
    Scan(tmp).ExclusiveScan(v[kPer - 1], prefix, id, op, total);
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      int64_t i = base + int64_t(threadIdx.x) * kPer + j;
      if (i < len) store(i, op(op(carry, prefix), v[j]));
    }
    carry = op(carry, total);
    __syncthreads();  // tmp is reused by the next chunk (or row)
  }
}

/// Blocks for a grid-stride loop over `rows` rows, one block per row at a time.
inline unsigned scan_blocks(int64_t rows) {
  return unsigned(rows < 65535 * 32 ? rows : 65535 * 32);
}

}  // namespace tp::cuda
