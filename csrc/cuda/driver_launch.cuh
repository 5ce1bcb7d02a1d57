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

/// Launches kernel(args...) on `stream` of `device` (the current device) as <<<grid, block,
/// smem, stream>>> would; args convert to the kernel's parameter types.
template <class... P, class... A>
void launch_kernel(int device, void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                   A&&... args) {
  std::tuple<P...> values(std::forward<A>(args)...);
  void* params[sizeof...(P) + 1] = {};
  std::apply([&](auto&... v) {
    int i = 0;
    ((params[i++] = static_cast<void*>(&v)), ...);
  }, values);
  static std::atomic<CUfunction> functions[kMaxDevices];  // one table per kernel
  const DriverLaunchFn launch = driver_launch_entry();
  CUfunction fn = device >= 0 && device < kMaxDevices ? functions[device].load(std::memory_order_acquire) : nullptr;
  if (!fn && launch && device >= 0 && device < kMaxDevices) {
    cudaFunction_t found = nullptr;
    if (cudaGetFuncBySymbol(&found, reinterpret_cast<const void*>(kernel)) == cudaSuccess) {
      fn = reinterpret_cast<CUfunction>(found);
      functions[device].store(fn, std::memory_order_release);
    } else {
      (void)cudaGetLastError();
    }
  }
  if (fn && launch(fn, grid.x, grid.y, grid.z, block.x, block.y, block.z, unsigned(smem),
                   reinterpret_cast<CUstream>(stream), params, nullptr) == CUDA_SUCCESS)
    return;
  (void)cudaLaunchKernel(reinterpret_cast<const void*>(kernel), grid, block, params, smem, stream);
}

}  // namespace tp::cuda
