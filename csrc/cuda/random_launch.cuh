// The one Philox kernel every CUDA random op instantiates, and the launcher that
// random_samplers.h's dispatch_* functions call (Note [Philox streams]).
#pragma once
#include "cuda/check.h"
#include "cuda/random_kernels.h"
#include "cuda/random_samplers.h"

namespace tp::cuda {

/// Grid-stride over the launch's units (philox::run_unit): Philox block b serves elements
/// b K .. b K + K - 1; with a stream per element (poisson), unit b is element b.
template <class S>
__global__ void philox_kernel(S s, philox::LaunchArgs args, int64_t n, int64_t blocks) {
  args = philox::resolve(args);
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t b = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; b < blocks; b += step)
    philox::run_unit(s, args, b, n);
}

/// Reserves a sampler's blocks from the generator and launches it over the target.
struct PhiloxLauncher {
  const FillTarget& target;
  CUDAGenerator& gen;
  template <class S>
  void operator()(const S& s) const {
    const int64_t blocks = philox::blocks_for<S>(target.n);
    const philox::LaunchArgs args = gen.reserve(blocks, target.stream);
    static const int per_sm = [] {
      int b = 0;
      TP_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, philox_kernel<S>,
                                                                  kPhiloxThreads, 0));
      return b;
    }();
    philox_kernel<S><<<philox_grid(blocks, target.device, per_sm), kPhiloxThreads, 0,
                       target.stream>>>(s, args, target.n, blocks);
    TP_CUDA_CHECK(cudaGetLastError());
  }
};

}  // namespace tp::cuda
