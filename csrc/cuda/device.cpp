// Devices: count, current device, guard, properties, synchronize.
#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>

#include "cuda/check.h"
#include "cuda/graphs/capture.h"
#include "cuda/driver_launch.cuh"
#include "cuda/runtime.h"

namespace tp::cuda {

void fail_cuda(cudaError_t err, const char* expr, const char* file, int line) {
  (void)cudaGetLastError();  // clear a non-sticky error so the process can go on
  const char* base = file;
  for (const char* p = file; *p; ++p)
    if (*p == '/') base = p + 1;
  std::string msg = "CUDA error: ";
  msg += cudaGetErrorString(err);
  msg += std::string(" (") + cudaGetErrorName(err) + " from " + expr + " at " + base + ":" +
         std::to_string(line) + ")";
  throw AcceleratorError(std::move(msg));
}

namespace {

std::once_flag g_count_once;
int g_count = 0;
std::string g_init_error;

}  // namespace

int device_count() {
  std::call_once(g_count_once, [] {
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess) {
      // No driver, no GPU, or a driver older than the runtime: treated as zero devices.
      (void)cudaGetLastError();
      g_init_error = cudaGetErrorString(err);
      n = 0;
    }
    g_count = n > kMaxDevices ? kMaxDevices : n;
  });
  return g_count;
}

const std::string& init_error() {
  device_count();
  return g_init_error;
}

void lazy_init() {
  if (device_count() > 0) return;
  if (g_init_error.empty()) TP_FAIL("No CUDA GPUs are available");
  TP_FAIL("No CUDA GPUs are available (", g_init_error, ")");
}

int check_device(int device) {
  lazy_init();
  if (device < 0) return current_device();
  TP_CHECK(device < device_count(), "CUDA error: invalid device ordinal (device ", device,
           " requested, ", device_count(), " available)");
  return device;
}

int current_device() {
  lazy_init();
  int d = 0;
  TP_CUDA_CHECK(cudaGetDevice(&d));
  return d;
}

void set_device(int device) {
  device = check_device(device);
  int cur = -1;
  TP_CUDA_CHECK(cudaGetDevice(&cur));
  if (cur != device) TP_CUDA_CHECK(cudaSetDevice(device));
}

Device resolve(Device d) {
  if (d.type != DeviceType::CUDA) return d;
  return Device(DeviceType::CUDA, d.index < 0 ? current_device() : check_device(d.index));
}

DeviceGuard::DeviceGuard(int device) {
  if (device < 0) return;
  original_ = current_device();
  if (device != original_) {
    set_device(device);
    current_ = device;
  }
}

DeviceGuard::~DeviceGuard() {
  if (current_ >= 0 && current_ != original_) TP_CUDA_WARN(cudaSetDevice(original_));
}

namespace {
std::atomic<bool> g_row_pipeline{true};
std::atomic<bool> g_flash_mma{true};
std::atomic<bool> g_warp_rows{false};
std::atomic<bool> g_lean_half_rows{true};
std::atomic<bool> g_narrow_norm_rows{true};
std::atomic<int> g_packed_half_rows{256};
}  // namespace

bool row_pipeline_enabled() { return g_row_pipeline.load(std::memory_order_relaxed); }
void set_row_pipeline_enabled(bool on) { g_row_pipeline.store(on, std::memory_order_relaxed); }

bool warp_rows_enabled() { return g_warp_rows.load(std::memory_order_relaxed); }
void set_warp_rows_enabled(bool on) { g_warp_rows.store(on, std::memory_order_relaxed); }
bool lean_half_rows_enabled() { return g_lean_half_rows.load(std::memory_order_relaxed); }
void set_lean_half_rows_enabled(bool on) { g_lean_half_rows.store(on, std::memory_order_relaxed); }
bool narrow_norm_rows_enabled() { return g_narrow_norm_rows.load(std::memory_order_relaxed); }
void set_narrow_norm_rows_enabled(bool on) { g_narrow_norm_rows.store(on, std::memory_order_relaxed); }
int packed_half_rows() { return g_packed_half_rows.load(std::memory_order_relaxed); }
void set_packed_half_rows(int threads) {
  TP_CHECK_VALUE(threads == 0 || threads == 128 || threads == 256,
                 "_cuda_set_packed_half_rows: threads must be 0, 128 or 256, got ", threads);
  g_packed_half_rows.store(threads, std::memory_order_relaxed);
}
bool flash_mma_enabled() { return g_flash_mma.load(std::memory_order_relaxed); }
void set_flash_mma_enabled(bool on) { g_flash_mma.store(on, std::memory_order_relaxed); }

DriverLaunchFn driver_launch_entry() {
  static const DriverLaunchFn entry = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuLaunchKernel", &fn, 12000, cudaEnableDefault, &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();
      return DriverLaunchFn(nullptr);
    }
    return reinterpret_cast<DriverLaunchFn>(fn);
  }();
  return entry;
}

const DeviceProperties& device_properties(int device) {
  device = check_device(device);
  static std::mutex mu;
  static std::unique_ptr<DeviceProperties> cache[kMaxDevices];
  std::lock_guard<std::mutex> g(mu);
  if (!cache[device]) {
    cudaDeviceProp p{};
    TP_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
    auto out = std::make_unique<DeviceProperties>();
    out->name = p.name;
    out->major = p.major;
    out->minor = p.minor;
    out->multi_processor_count = p.multiProcessorCount;
    out->total_memory = p.totalGlobalMem;
    out->warp_size = p.warpSize;
    out->max_threads_per_multi_processor = p.maxThreadsPerMultiProcessor;
    out->l2_cache_size = size_t(p.l2CacheSize);
    char buf[48];
    const unsigned char* u = reinterpret_cast<const unsigned char*>(p.uuid.bytes);
    std::snprintf(buf, sizeof buf, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                  u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
                  u[13], u[14], u[15]);
    out->uuid = buf;
    cache[device] = std::move(out);
  }
  return *cache[device];
}

void synchronize(int device) {
  DeviceGuard g(check_device(device));
  graphs::check_not_capturing(current_stream(-1).handle, "tp.cuda.synchronize()");
  TP_CUDA_CHECK(cudaDeviceSynchronize());
}

void mem_get_info(int device, size_t* free, size_t* total) {
  DeviceGuard g(check_device(device));
  TP_CUDA_CHECK(cudaMemGetInfo(free, total));
}

}  // namespace tp::cuda
