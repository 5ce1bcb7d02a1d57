// Events: created lazily on the first record, on the recording stream's device.
#include "cuda/check.h"
#include "cuda/runtime.h"

namespace tp::cuda {

Event::Event(bool enable_timing, bool blocking, bool interprocess) {
  flags_ = (enable_timing ? cudaEventDefault : cudaEventDisableTiming) |
           (blocking ? cudaEventBlockingSync : 0u) | (interprocess ? cudaEventInterprocess : 0u);
}

Event::~Event() {
  if (!event_) return;
  int cur = -1;
  if (cudaGetDevice(&cur) != cudaSuccess) {
    (void)cudaGetLastError();
    return;
  }
  if (cur != device_) TP_CUDA_WARN(cudaSetDevice(device_));
  TP_CUDA_WARN(cudaEventDestroy(event_));
  if (cur != device_) TP_CUDA_WARN(cudaSetDevice(cur));
}

void Event::record(const Stream& s) {
  DeviceGuard g(s.device);
  if (!event_) {
    TP_CUDA_CHECK(cudaEventCreateWithFlags(&event_, flags_));
    device_ = s.device;
  }
  TP_CHECK(device_ == s.device, "Event device ", device_, " does not match recording stream's device ",
           s.device, ".");
  TP_CUDA_CHECK(cudaEventRecord(event_, s.handle));
}

void Event::wait(const Stream& s) const {
  if (!event_) return;
  DeviceGuard g(s.device);
  TP_CUDA_CHECK(cudaStreamWaitEvent(s.handle, event_, 0));
}

bool Event::query() const {
  if (!event_) return true;
  cudaError_t err = cudaEventQuery(event_);
  if (err == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  TP_CUDA_CHECK(err);
  return true;
}

void Event::synchronize() const {
  if (event_) TP_CUDA_CHECK(cudaEventSynchronize(event_));
}

float Event::elapsed_time(const Event& end) const {
  TP_CHECK(!(flags_ & cudaEventDisableTiming) && !(end.flags_ & cudaEventDisableTiming),
           "Both events must be created with argument 'enable_timing=True'.");
  TP_CHECK(event_ && end.event_, "Both events must be recorded before calculating elapsed time.");
  float ms = 0;
  DeviceGuard g(device_);
  TP_CUDA_CHECK(cudaEventElapsedTime(&ms, event_, end.event_));
  return ms;
}

}  // namespace tp::cuda
