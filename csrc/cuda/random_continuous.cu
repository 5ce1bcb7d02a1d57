// CUDA kernels of the continuous distributions: uniform_, normal_, log_normal_,
// exponential_, cauchy_ (random_samplers.h).
#include "cuda/random_launch.cuh"

namespace tp::cuda {

void launch_uniform(const FillTarget& t, CUDAGenerator& g, double from, double to) {
  philox::dispatch_uniform(PhiloxLauncher{t, g}, t.dtype, t.data, from, to);
}

void launch_normal(const FillTarget& t, CUDAGenerator& g, double mean, double std, bool log_normal) {
  philox::dispatch_normal(PhiloxLauncher{t, g}, t.dtype, t.data, mean, std, log_normal);
}

void launch_exponential(const FillTarget& t, CUDAGenerator& g, double lambda) {
  philox::dispatch_exponential(PhiloxLauncher{t, g}, t.dtype, t.data, lambda);
}

void launch_cauchy(const FillTarget& t, CUDAGenerator& g, double median, double sigma) {
  philox::dispatch_cauchy(PhiloxLauncher{t, g}, t.dtype, t.data, median, sigma);
}

}  // namespace tp::cuda
