// Kernel launches through the driver's cuLaunchKernel, for launch-bound work (Note [Driver
// launches]).
#pragma once
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <tuple>
#include <utility>

#include "cuda/runtime.h"

namespace tp::cuda {

// Note [Driver launches]: `kernel<<<grid, block, smem, stream>>>(args)` goes through the
// runtime (push the configuration, pop it, look the kernel up, then the driver's launch).
// On the H200 machine that is 3.73 us of host time per launch, cudaLaunchKernel 3.58 us and
// the driver's cuLaunchKernel on the kernel's CUfunction 3.43 us (tp._C._cuda_host_probe).
// A tiny op's host time is mostly its launch, so the pointwise kernels launch through
// launch_kernel: cuLaunchKernel (its entry point asked from the runtime once) on the
// kernel's CUfunction, looked up once per (kernel, device) with cudaGetFuncBySymbol. A
// failed driver launch is repeated through cudaLaunchKernel, which reports the error as the
// runtime does (the caller's TP_CUDA_CHECK(cudaGetLastError()) sees it).

using DriverLaunchFn = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                    CUstream, void**, void**);

/// The driver's cuLaunchKernel, or null when the runtime does not hand it out (device.cpp).
DriverLaunchFn driver_launch_entry();

/// The parameter types of a kernel's function pointer type.
template <class K>
struct KernelSignature;
template <class... P>
struct KernelSignature<void (*)(P...)> {
  using Values = std::tuple<P...>;
  static constexpr size_t kCount = sizeof...(P);
};

/// Launches Kernel(args...) on `stream` of `device` (the current device) as <<<grid, block,
/// smem, stream>>> would; args convert to the kernel's parameter types. The kernel is a
/// template argument so each kernel has its own CUfunction table (two kernels may share a
/// signature, e.g. one functor over different storage types).
template <auto Kernel, class... A>
void launch_kernel(int device, dim3 grid, dim3 block, size_t smem, cudaStream_t stream, A&&... args) {
  using Params = KernelSignature<decltype(Kernel)>;
  typename Params::Values values(std::forward<A>(args)...);
  void* params[Params::kCount + 1] = {};
  std::apply([&](auto&... v) {
    int i = 0;
    ((params[i++] = static_cast<void*>(&v)), ...);
  }, values);
  static std::atomic<CUfunction> functions[kMaxDevices];
  const void* symbol = reinterpret_cast<const void*>(Kernel);
  const DriverLaunchFn launch = driver_launch_entry();
  const bool known_device = device >= 0 && device < kMaxDevices;
  CUfunction fn = known_device ? functions[device].load(std::memory_order_acquire) : nullptr;
  if (!fn && launch && known_device) {
    cudaFunction_t found = nullptr;
    if (cudaGetFuncBySymbol(&found, symbol) == cudaSuccess) {
      fn = reinterpret_cast<CUfunction>(found);
      functions[device].store(fn, std::memory_order_release);
    } else {
      (void)cudaGetLastError();
    }
  }
  if (fn && launch(fn, grid.x, grid.y, grid.z, block.x, block.y, block.z, unsigned(smem),
                   reinterpret_cast<CUstream>(stream), params, nullptr) == CUDA_SUCCESS)
    return;
  (void)cudaLaunchKernel(symbol, grid, block, params, smem, stream);
}

}  // namespace tp::cuda
