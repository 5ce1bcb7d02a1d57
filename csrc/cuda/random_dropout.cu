// CUDA native_dropout (one fused pass: output and bool mask from the Philox stream) and
// its backward, grad * mask * scale.
#include "cuda/random_launch.cuh"

namespace tp::cuda {

namespace {

template <class T>
__global__ void dropout_backward_kernel(const T* grad, const bool* mask, T* out, int64_t n,
                                        philox::acc_t<T> scale) {
  using A = philox::acc_t<T>;
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    philox::store(out + i, pmath::mul(pmath::mul(philox::load(grad + i), A(mask[i] ? 1 : 0)), scale));
}

}  // namespace

void launch_dropout(const FillTarget& t, CUDAGenerator& g, const void* in, bool* mask, double p) {
  philox::dispatch_dropout(PhiloxLauncher{t, g}, t.dtype, in, t.data, mask, p);
}

void launch_dropout_backward(const FillTarget& t, const void* grad, const bool* mask, double scale) {
  if (t.n == 0) return;
  philox::visit_floating(t.dtype, "native_dropout_backward_cuda", [&](auto v) {
    using T = decltype(v);
    const int64_t want = (t.n + kPhiloxThreads - 1) / kPhiloxThreads;
    const int grid = int(want < 65535 ? want : 65535);
    dropout_backward_kernel<T><<<grid, kPhiloxThreads, 0, t.stream>>>(
        static_cast<const T*>(grad), mask, static_cast<T*>(t.data), t.n, philox::acc_t<T>(scale));
    TP_CUDA_CHECK(cudaGetLastError());
  });
}

}  // namespace tp::cuda
