// The kernels CUDA graphs add: the Philox state a replay writes (Note [Philox in graphs]),
// the predicate of a conditional node (Note [Conditional nodes]) and stage_and_launch's
// batched input copies (Note [Batched staging copies]).
#include <algorithm>

#include "cuda/check.h"
#include "cuda/driver_launch.cuh"
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

// Note [Batched staging copies]
// stage_and_launch copies each new input into its static input, then launches the graph. One
// cudaMemcpyAsync per input costs about as much host time as a kernel launch (3-4 us), which
// was most of the call for small inputs; copies of up to kBatchedCopyMaxBytes each now go in
// one launch of copy_batch_kernel, up to kMaxBatchedCopies at a time (grid row y = copy y),
// through the driver's launch (Note [Driver launches]). Larger copies keep cudaMemcpyAsync
// (the copy engines' bandwidth); copies in order either way.
constexpr int kCopyThreads = 256;

__global__ void __launch_bounds__(kCopyThreads) copy_batch_kernel(CopyBatch b) {
  const int e = blockIdx.y;
  const char* src = static_cast<const char*>(b.src[e]);
  char* dst = static_cast<char*>(b.dst[e]);
  const int64_t n = b.bytes[e];
  const int64_t first = int64_t(blockIdx.x) * kCopyThreads + threadIdx.x, step = int64_t(gridDim.x) * kCopyThreads;
  int64_t done = 0;
  if ((reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst)) % 16 == 0) {
    const int64_t nv = n / 16;
    for (int64_t i = first; i < nv; i += step) reinterpret_cast<uint4*>(dst)[i] = reinterpret_cast<const uint4*>(src)[i];
    done = nv * 16;
  }
  for (int64_t i = done + first; i < n; i += step) dst[i] = src[i];
}

}  // namespace

void launch_copy_batch(int device, const CopyBatch& batch, int n, int64_t most, cudaStream_t s) {
  const int64_t per_block = int64_t(kCopyThreads) * 16;
  const unsigned blocks = unsigned(std::min<int64_t>(std::max<int64_t>((most + per_block - 1) / per_block, 1), 1024));
  launch_kernel<copy_batch_kernel>(device, dim3(blocks, unsigned(n)), dim3(kCopyThreads), 0, s, batch);
  TP_CUDA_CHECK(cudaGetLastError());
}

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
