// Launchers of cuda/graphs/graph_kernels.cu.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

namespace tp::cuda::graphs {

/// state[0] = seed, state[1] = counter, queued on `s` (before a replay).
void launch_write_philox_state(uint64_t* state, uint64_t seed, uint64_t counter, cudaStream_t s);
/// Sets the conditional `handle` to whether the element at `predicate` (itemsize bytes;
/// `floating`: -0.0 counts as zero) is nonzero, queued on `s` (captured into the graph).
void launch_set_conditional(unsigned long long handle, const void* predicate, int itemsize,
                            bool floating, cudaStream_t s);

/// Copies that stage_and_launch batches into one kernel (Note [Batched staging copies]).
constexpr int kMaxBatchedCopies = 8;
constexpr int64_t kBatchedCopyMaxBytes = int64_t(1) << 20;
struct CopyBatch {
  const void* src[kMaxBatchedCopies];
  void* dst[kMaxBatchedCopies];
  int64_t bytes[kMaxBatchedCopies];
};
/// The first n copies of `batch` (the largest `most` bytes) in one launch on `s` of `device`.
void launch_copy_batch(int device, const CopyBatch& batch, int n, int64_t most, cudaStream_t s);

}  // namespace tp::cuda::graphs
