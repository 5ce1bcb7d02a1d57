// Streams: the default stream, a per-thread current stream per device, pooled streams
// with priorities, external streams.
#include <mutex>
#include <vector>

#include "core/streams.h"
#include "cuda/check.h"
#include "cuda/graphs/capture.h"
#include "cuda/runtime.h"

namespace tp::cuda {

namespace {

// The calling thread's current stream per device (nullptr: the default stream) and
// whether it has been set at all; a flat array indexed by device.
thread_local cudaStream_t tl_current[kMaxDevices] = {};
thread_local int tl_priority[kMaxDevices] = {};

constexpr int kPoolSize = 32;

struct PriorityPool {
  int priority = 0;
  cudaStream_t streams[kPoolSize] = {};
  unsigned next = 0;
};

std::mutex g_pool_mu;
std::vector<PriorityPool> g_pools[kMaxDevices];

}  // namespace

bool Stream::query() const {
  DeviceGuard g(device);
  cudaError_t err = cudaStreamQuery(handle);
  if (err == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  TP_CUDA_CHECK(err);
  return true;
}

void Stream::synchronize() const {
  graphs::check_not_capturing(handle, "synchronizing a stream (Stream.synchronize(), or an op "
                              "that reads a result back)");
  DeviceGuard g(device);
  TP_CUDA_CHECK(cudaStreamSynchronize(handle));
}

Stream default_stream(int device) {
  device = check_device(device);
  return Stream{nullptr, device, 0};
}

Stream current_stream(int device) {
  device = check_device(device);
  return Stream{tl_current[device], device, tl_priority[device]};
}

void set_stream(const Stream& s) {
  int d = check_device(s.device);
  tl_current[d] = s.handle;
  tl_priority[d] = s.priority;
}

void stream_priority_range(int* least, int* greatest) {
  lazy_init();
  TP_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(least, greatest));
}

Stream get_stream_from_pool(int priority, int device) {
  device = check_device(device);
  DeviceGuard g(device);
  int least = 0, greatest = 0;
  stream_priority_range(&least, &greatest);
  if (priority > least) priority = least;
  if (priority < greatest) priority = greatest;
  std::lock_guard<std::mutex> lock(g_pool_mu);
  PriorityPool* pool = nullptr;
  for (auto& p : g_pools[device])
    if (p.priority == priority) pool = &p;
  if (!pool) {
    g_pools[device].emplace_back();
    pool = &g_pools[device].back();
    pool->priority = priority;
  }
  unsigned i = pool->next++ % kPoolSize;
  if (!pool->streams[i])
    TP_CUDA_CHECK(cudaStreamCreateWithPriority(&pool->streams[i], cudaStreamNonBlocking, priority));
  return Stream{pool->streams[i], device, priority};
}

Stream external_stream(uintptr_t handle, int device) {
  device = check_device(device);
  Stream s{reinterpret_cast<cudaStream_t>(handle), device, 0};
  if (s.handle) {
    DeviceGuard g(device);
    TP_CUDA_CHECK(cudaStreamGetPriority(s.handle, &s.priority));
  }
  return s;
}

// ---- the autograd engine's view of CUDA streams (core/streams.h) ----

namespace {

class CudaStreamHooks final : public StreamHooks {
 public:
  StreamRef current(int device) const override {
    const Stream s = current_stream(device);
    return StreamRef{reinterpret_cast<uintptr_t>(s.handle), s.device, s.priority};
  }
  void set_current(const StreamRef& s) const override {
    set_stream(Stream{reinterpret_cast<cudaStream_t>(s.handle), s.device, s.priority});
  }
  void wait(const StreamRef& waiter, const StreamRef& producer) const override {
    Event e;
    e.record(Stream{reinterpret_cast<cudaStream_t>(producer.handle), producer.device, producer.priority});
    e.wait(Stream{reinterpret_cast<cudaStream_t>(waiter.handle), waiter.device, waiter.priority});
  }
};

}  // namespace

void register_stream_hooks() {
  static const CudaStreamHooks hooks;
  set_stream_hooks(&hooks);
}

}  // namespace tp::cuda
