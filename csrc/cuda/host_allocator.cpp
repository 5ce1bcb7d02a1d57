// Pinned (page-locked) host memory for fast and asynchronous host<->device copies.
// Note [Pinned host memory]: each buffer is one cudaHostAlloc; its free is cudaFreeHost,
// which waits for the device, so a non_blocking copy from or to a pinned tensor cannot
// outlive the buffer. (Caching pinned blocks with events, as PyTorch does, comes later.)
#include "core/storage.h"
#include "cuda/check.h"
#include "cuda/copy.h"
#include "cuda/runtime.h"
#include "tensorplay/ops_api.h"

namespace tp::cuda {

bool is_pinned(const void* ptr) {
  if (!ptr || device_count() == 0) return false;
  cudaPointerAttributes attr{};
  cudaError_t err = cudaPointerGetAttributes(&attr, ptr);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return attr.type == cudaMemoryTypeHost;
}

Tensor pin_memory(const Tensor& t) {
  lazy_init();
  TP_CHECK(t.device().is_cpu(), "cannot pin '", t.device().str(), "' memory: only dense CPU tensors can be pinned");
  size_t nbytes = size_t(t.numel()) * t.itemsize();
  void* p = nullptr;
  if (nbytes) TP_CUDA_CHECK(cudaHostAlloc(&p, nbytes, cudaHostAllocDefault));
  Deleter del = [](void*, void* data) {
    if (data) TP_CUDA_WARN(cudaFreeHost(data));
  };
  auto storage = make_intrusive<StorageImpl>(p, nbytes, Device(DeviceType::CPU), del, nullptr);
  Tensor out(make_intrusive<TensorImpl>(storage, t.dtype(), DimVector(t.sizes().data(), t.sizes().size()),
                                        contiguous_strides(t.sizes()), 0));
  if (nbytes) copy_impl(out, t, false, {});
  return out;
}

}  // namespace tp::cuda
