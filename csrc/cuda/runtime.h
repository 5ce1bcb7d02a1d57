// The CUDA runtime layer (namespace tp::cuda): devices, the current device, a device
// guard, device properties, streams and events. All of it is host code over the CUDA
// runtime API; see docs/architecture.md "CUDA runtime and allocator".
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "core/device.h"

namespace tp::cuda {

constexpr int kMaxDevices = 64;

/// Number of visible GPUs, queried once per process; 0 when the driver or the GPU is
/// missing (the CUDA build still imports and runs on CPU then).
int device_count();
/// Whether device_count() > 0.
inline bool is_available() { return device_count() > 0; }
/// Why device_count() is 0 ("" when it is not), e.g. "no CUDA-capable device is detected".
const std::string& init_error();
/// Raises RuntimeError unless CUDA can be used (a GPU is present).
void lazy_init();

/// The calling thread's current device (cudaGetDevice, cached per thread).
int current_device();
/// Makes `device` current for the calling thread; checks its range.
void set_device(int device);
/// Checks that `device` is a valid ordinal; -1 means the current device.
int check_device(int device);
/// A CUDA tensor's device with its index made explicit ("cuda" -> "cuda:<current>").
Device resolve(Device d);

/// Makes a device current for a scope and restores the previous one at its end.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
  int original() const { return original_; }

 private:
  int original_ = -1;
  int current_ = -1;
};

/// Whether the nn row kernels may stream rows through shared memory (Note [Row pipeline] in
/// cuda/row_pipeline.cuh); on by default, off to time the register-row kernels beside them.
bool row_pipeline_enabled();
void set_row_pipeline_enabled(bool on);

/// Whether half-type rows of up to 8 KB stream one warp per row (Note [Warp rows] in
/// cuda/row_pipeline.cuh); off by default: measured on the H200, it only gains for softmax
/// (bfloat16 3170 against 3031 GB/s) and loses for the norms.
bool warp_rows_enabled();
void set_warp_rows_enabled(bool on);

/// Whether the half-type row pipelines run their lean variants (Note [Lean half rows] in
/// cuda/row_pipeline.cuh); on by default since timed on the H200.
bool lean_half_rows_enabled();
void set_lean_half_rows_enabled(bool on);

/// Whether half-type layer-norm forward rows of 4096 take 128-thread blocks (Note [Narrow
/// norm rows] in cuda/norm_kernels.cu); on by default since timed on the H200, off to time
/// the 256-thread kernel.
bool narrow_norm_rows_enabled();
void set_narrow_norm_rows_enabled(bool on);

/// The threads a block of the packed half-type row kernels (Note [Packed half rows] in
/// cuda/nn_launch.cuh): 256 (the default) or 128; 0: off (the pipelined kernels).
int packed_half_rows();
void set_packed_half_rows(int threads);

/// Whether the fused attention entry points run the mma.sync kernels (Note [Flash attention
/// on mma.sync] in cuda/attention_mma.cu) instead of the WMMA ones; on by default (4.6x
/// faster on the H200), off to time or test the WMMA kernels.
bool flash_mma_enabled();
void set_flash_mma_enabled(bool on);

/// What get_device_properties reports (cached per device).
struct DeviceProperties {
  std::string name;
  int major = 0, minor = 0;
  int multi_processor_count = 0;
  size_t total_memory = 0;
  int warp_size = 32;
  int max_threads_per_multi_processor = 0;
  size_t l2_cache_size = 0;
  std::string uuid;
};
const DeviceProperties& device_properties(int device);

/// Waits for all work on `device` (-1: current) to finish.
void synchronize(int device = -1);
/// Free and total memory of `device` (cudaMemGetInfo).
void mem_get_info(int device, size_t* free, size_t* total);

// ---- streams ----

/// A CUDA stream on one device: a value (handle + device); stream 0 is the default
/// (legacy NULL) stream. Streams created here live for the whole process (as PyTorch's
/// pooled streams do), so copies of a Stream never dangle.
struct Stream {
  cudaStream_t handle = nullptr;
  int device = 0;
  int priority = 0;
  bool operator==(const Stream& o) const { return handle == o.handle && device == o.device; }
  bool operator!=(const Stream& o) const { return !(*this == o); }
  /// True when all work queued on the stream has finished.
  bool query() const;
  void synchronize() const;
};

/// The default stream of `device` (-1: current).
Stream default_stream(int device = -1);
/// The calling thread's current stream on `device` (-1: current); the default stream
/// until set_stream changes it. Kept per thread in a flat array indexed by device.
Stream current_stream(int device = -1);
/// Makes `s` the calling thread's current stream on its device.
void set_stream(const Stream& s);
/// A stream from the pool of `device` with `priority` (lower is higher priority, clamped
/// to the device's range); round-robin over 32 streams per priority, as PyTorch.
Stream get_stream_from_pool(int priority = 0, int device = -1);
/// Wraps a stream created elsewhere (cudaStream_t as an integer); TensorPlay never destroys it.
Stream external_stream(uintptr_t handle, int device = -1);
/// The (least, greatest) priorities of the current device.
void stream_priority_range(int* least, int* greatest);

/// A CUDA event, created on first record. Move-only; destroys its event when it goes.
class Event {
 public:
  explicit Event(bool enable_timing = false, bool blocking = false, bool interprocess = false);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  void record(const Stream& s);
  /// Makes `s` wait for the work recorded (no-op when never recorded).
  void wait(const Stream& s) const;
  /// True when the recorded work finished (or nothing was recorded).
  bool query() const;
  void synchronize() const;
  /// Milliseconds between this event and `end`; both must be recorded with timing on.
  float elapsed_time(const Event& end) const;
  cudaEvent_t handle() const { return event_; }
  int device() const { return device_; }
  bool recorded() const { return event_ != nullptr; }

 private:
  unsigned flags_;
  cudaEvent_t event_ = nullptr;
  int device_ = -1;
};

/// Registers the CUDA streams as the autograd engine's stream hooks (core/streams.h).
void register_stream_hooks();

}  // namespace tp::cuda
