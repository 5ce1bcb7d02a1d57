// A diagnostic for launch-bound work: the host cost of each step a tiny CUDA op takes
// (device queries, guards, allocation, a bare launch, whole ops), timed in C++ loops.
#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include <cuda.h>

#include "cuda/check.h"
#include "cuda/host_probe.h"
#include "cuda/pointwise.h"
#include "cuda/runtime.h"
#include "tensorplay/ops_api.h"

namespace tp::cuda {
namespace {

__global__ void empty_kernel() {}
struct Args64 {
  int64_t v[8];
};
__global__ void args_kernel(Args64, Args64, int64_t) {}

/// Median over rounds of 200 calls (few enough never to fill the launch queue, so the
/// host never waits for the GPU), synchronising between rounds.
template <class F>
double ns_per_call(int rounds, F&& f) {
  constexpr int kCalls = 200;
  f();
  synchronize();
  std::vector<double> t(size_t(rounds < 1 ? 1 : rounds));
  for (double& x : t) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; ++i) f();
    x = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / kCalls;
    synchronize();
  }
  std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
  return t[t.size() / 2];
}

}  // namespace

std::map<std::string, double> host_probe(int rounds) {
  lazy_init();
  const int dev = current_device();
  const Device cuda(DeviceType::CUDA, dev);
  int64_t n = 16;
  Tensor u = tp::ones(IntArrayRef(&n, 1), std::nullopt, cuda);
  Tensor o = tp::empty(IntArrayRef(&n, 1), std::nullopt, cuda);
  Tensor c = tp::ones(IntArrayRef(&n, 1));
  const cudaStream_t s = current_stream(dev).handle;
  std::map<std::string, double> r;
  r["cudaGetDevice"] = ns_per_call(rounds, [] { int d; (void)cudaGetDevice(&d); });
  r["current_device"] = ns_per_call(rounds, [] { (void)current_device(); });
  r["DeviceGuard"] = ns_per_call(rounds, [&] { DeviceGuard g(dev); });
  r["current_stream"] = ns_per_call(rounds, [&] { (void)current_stream(dev); });
  r["empty_tensor+free"] = ns_per_call(rounds, [&] { (void)empty_tensor(IntArrayRef(&n, 1), DType::Float32, cuda); });
  r["bare launch"] = ns_per_call(rounds, [&] { empty_kernel<<<1, 32, 0, s>>>(); });
  r["bare launch+check"] = ns_per_call(rounds, [&] {
    empty_kernel<<<1, 32, 0, s>>>();
    TP_CUDA_CHECK(cudaGetLastError());
  });
  r["launch with 136 B of args"] = ns_per_call(rounds, [&] {
    args_kernel<<<1, 128, 0, s>>>(Args64{}, Args64{}, 16);
  });
  r["cudaLaunchKernel"] = ns_per_call(rounds, [&] {
    TP_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(&empty_kernel), dim3(1), dim3(32), nullptr, 0, s));
  });
  {  // the driver's cuLaunchKernel on the kernel's CUfunction (looked up once), no runtime layer
    cudaFunction_t fn = nullptr;
    void* entry = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetFuncBySymbol(&fn, reinterpret_cast<const void*>(&empty_kernel)) == cudaSuccess &&
        cudaGetDriverEntryPointByVersion("cuLaunchKernel", &entry, 12000, cudaEnableDefault, &found) == cudaSuccess &&
        found == cudaDriverEntryPointSuccess) {
      using LaunchFn = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                    CUstream, void**, void**);
      auto launch = reinterpret_cast<LaunchFn>(entry);
      auto cu_fn = reinterpret_cast<CUfunction>(fn);
      r["cuLaunchKernel"] = ns_per_call(rounds, [&] {
        (void)launch(cu_fn, 1, 1, 1, 32, 1, 1, 0, reinterpret_cast<CUstream>(s), nullptr, nullptr);
      });
      cudaFunction_t afn = nullptr;
      if (cudaGetFuncBySymbol(&afn, reinterpret_cast<const void*>(&args_kernel)) == cudaSuccess) {
        Args64 x{}, y{};
        int64_t z = 16;
        void* params[] = {&x, &y, &z};
        auto cu_afn = reinterpret_cast<CUfunction>(afn);
        r["cuLaunchKernel 136 B"] = ns_per_call(rounds, [&] {
          (void)launch(cu_afn, 1, 1, 1, 128, 1, 1, 0, reinterpret_cast<CUstream>(s), params, nullptr);
        });
      }
    }
    (void)cudaGetLastError();
  }
  const IterConfig cfg{"add", Promote::Common};
  r["iterator(add_out)"] = ns_per_call(rounds, [&] {
    TensorIterator it(cfg, OutArg{&o, false}, {&u, &u});
  });
  r["iterator(add)"] = ns_per_call(rounds, [&] { TensorIterator it(cfg, OutArg::none(), {&u, &u}); });
  {
    TensorIterator it(cfg, OutArg{&o, false}, {&u, &u});
    KernelParams p;
    p.s0 = Scalar(int64_t(1));
    DeviceLaunch launch = pointwise_launches()[int(PwKernel::Add)][int(DType::Float32)];
    r["add launch (built iterator)"] = ns_per_call(rounds, [&] { launch(p, it); });
  }
  r["add(u,u)"] = ns_per_call(rounds, [&] { (void)tp::add(u, u, 1); });
  r["add_out(o,u,u)"] = ns_per_call(rounds, [&] { tp::add_out(o, u, u, 1); });
  r["mul_(u,u)"] = ns_per_call(rounds, [&] { tp::mul_(u, u); });
  r["add(c,c) on CPU"] = ns_per_call(rounds, [&] { (void)tp::add(c, c, 1); });
  return r;
}

}  // namespace tp::cuda
