// CUDA kernels of the discrete distributions: random_, geometric_, bernoulli_ with a
// scalar or a tensor of probabilities (random_samplers.h).
#include "cuda/random_launch.cuh"

namespace tp::cuda {

namespace {

template <class P>
__global__ void check_probabilities_kernel(const P* p, int64_t n, int* bad) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    if (!(p[i] >= P(0) && p[i] <= P(1))) *bad = 1;
}

}  // namespace

void launch_random(const FillTarget& t, CUDAGenerator& g, int64_t base, uint64_t range) {
  philox::dispatch_random(PhiloxLauncher{t, g}, t.dtype, t.data, base, range);
}

void launch_geometric(const FillTarget& t, CUDAGenerator& g, double p) {
  philox::dispatch_geometric(PhiloxLauncher{t, g}, t.dtype, t.data, p);
}

void launch_bernoulli(const FillTarget& t, CUDAGenerator& g, double p) {
  philox::dispatch_bernoulli_scalar(PhiloxLauncher{t, g}, t.dtype, t.data, p);
}

void launch_bernoulli(const FillTarget& t, CUDAGenerator& g, const void* p) {
  philox::dispatch_bernoulli_tensor(PhiloxLauncher{t, g}, t.dtype, t.data, p);
}

void launch_check_probabilities(const void* p, int64_t n, bool is_double, int* bad,
                                cudaStream_t stream) {
  if (n == 0) return;
  const int64_t want = (n + kPhiloxThreads - 1) / kPhiloxThreads;
  const int grid = int(want < 4096 ? want : 4096);
  if (is_double)
    check_probabilities_kernel<<<grid, kPhiloxThreads, 0, stream>>>(static_cast<const double*>(p), n, bad);
  else
    check_probabilities_kernel<<<grid, kPhiloxThreads, 0, stream>>>(static_cast<const float*>(p), n, bad);
  TP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tp::cuda
