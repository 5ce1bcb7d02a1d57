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

}  // namespace tp::cuda::graphs
