// The two kernels CUDA graphs add: the Philox state a replay writes (Note [Philox in
// graphs]) and the predicate of a conditional node (Note [Conditional nodes]).
#include "cuda/check.h"
#include "cuda/graphs/graph_kernels.h"

namespace tp::cuda::graphs {

namespace {

__global__ void write_philox_state_kernel(uint64_t* state, uint64_t seed, uint64_t counter) {
  state[0] = seed;
  state[1] = counter;
}

// Any nonzero byte of the predicate's element makes the condition true (bool, integer and
// floating dtypes alike: -0.0 aside, a value is zero exactly when all its bytes are).
__global__ void set_conditional_kernel(cudaGraphConditionalHandle handle, const unsigned char* p,
                                       int itemsize, bool negative_zero_is_zero) {
  unsigned int v = 0;
  for (int i = 0; i < itemsize; ++i) v |= p[i];
  if (negative_zero_is_zero && v == 0x80u) {
    bool only_sign = true;
    for (int i = 0; i < itemsize - 1; ++i) only_sign = only_sign && p[i] == 0;
    if (only_sign) v = 0;
  }
  cudaGraphSetConditional(handle, v != 0 ? 1u : 0u);
}

}  // namespace

void launch_write_philox_state(uint64_t* state, uint64_t seed, uint64_t counter, cudaStream_t s) {
  write_philox_state_kernel<<<1, 1, 0, s>>>(state, seed, counter);
  TP_CUDA_CHECK(cudaGetLastError());
}

void launch_set_conditional(unsigned long long handle, const void* predicate, int itemsize,
                            bool floating, cudaStream_t s) {
  set_conditional_kernel<<<1, 1, 0, s>>>(cudaGraphConditionalHandle(handle),
                                         static_cast<const unsigned char*>(predicate), itemsize,
                                         floating);
  TP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tp::cuda::graphs
