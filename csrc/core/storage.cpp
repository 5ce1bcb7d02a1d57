#include "core/storage.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <sys/mman.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <new>

#include "core/error.h"
#ifdef TP_USE_CUDA
#include "cuda/runtime.h"
#endif

namespace tp {

namespace {

// Note [CPU block cache]
// A fresh large buffer costs a page fault per 4 KiB on first touch (a 64 MiB result
// spends most of an add in the kernel zeroing pages). Large blocks (>= 1 MiB) are
// therefore kept after free, up to kCacheLimit bytes, and reused for requests of the
// same rounded size; they are 2 MiB aligned and advised as huge pages.
class CpuAllocator final : public Allocator {
 public:
  static constexpr size_t kLarge = size_t(1) << 20;
  static constexpr size_t kHuge = size_t(2) << 20;
  static constexpr size_t kCacheLimit = size_t(1) << 30;

  void* allocate(size_t nbytes, Deleter* deleter, void** ctx) override {
    *ctx = this;
    if (nbytes < kLarge) {
      *deleter = [](void*, void* data) { std::free(data); };
      return aligned(64, nbytes ? nbytes : 1, nbytes);
    }
    size_t size = (nbytes + kHuge - 1) / kHuge * kHuge;
    *deleter = [](void* self, void* data) { static_cast<CpuAllocator*>(self)->release(data); };
    {
      std::lock_guard<std::mutex> g(mu_);
      auto it = free_.find(size);
      if (it != free_.end()) {
        void* p = it->second;
        free_.erase(it);
        cached_ -= size;
        sizes_[p] = size;
        return p;
      }
    }
    void* p = aligned(kHuge, size, nbytes);
#ifdef MADV_HUGEPAGE
    madvise(p, size, MADV_HUGEPAGE);
#endif
    std::lock_guard<std::mutex> g(mu_);
    sizes_[p] = size;
    return p;
  }

  size_t empty_cache() {
    std::lock_guard<std::mutex> g(mu_);
    const size_t freed = cached_;
    for (auto& [size, p] : free_) std::free(p);
    free_.clear();
    cached_ = 0;
#ifdef __GLIBC__
    // glibc raises its mmap threshold after large frees, so later big blocks may live in the
    // heap, which free() keeps; give its free top back to the system too
    malloc_trim(0);
#endif
    return freed;
  }

  size_t cached() {
    std::lock_guard<std::mutex> g(mu_);
    return cached_;
  }

  void release(void* p) {
    std::lock_guard<std::mutex> g(mu_);
    auto it = sizes_.find(p);
    size_t size = it->second;
    sizes_.erase(it);
    while (cached_ + size > kCacheLimit && !free_.empty()) {
      auto victim = free_.begin();
      cached_ -= victim->first;
      std::free(victim->second);
      free_.erase(victim);
    }
    if (size > kCacheLimit) {
      std::free(p);
      return;
    }
    free_.emplace(size, p);
    cached_ += size;
  }

 private:
  static void* aligned(size_t align, size_t size, size_t requested) {
    void* p = nullptr;
    if (posix_memalign(&p, align, size) != 0 || !p)
      TP_FAIL("DefaultCPUAllocator: not enough memory: you tried to allocate ", requested,
              " bytes.");
    return p;
  }

  std::mutex mu_;
  std::multimap<size_t, void*> free_;
  std::map<void*, size_t> sizes_;
  size_t cached_ = 0;
};

CpuAllocator g_cpu_allocator;
Allocator* g_allocators[kNumDeviceTypes] = {&g_cpu_allocator, nullptr, nullptr};

}  // namespace

Allocator* get_allocator(DeviceType type) { return g_allocators[int(type)]; }
size_t cpu_empty_cache() { return g_cpu_allocator.empty_cache(); }
size_t cpu_cached_bytes() { return g_cpu_allocator.cached(); }
void set_allocator(DeviceType type, Allocator* alloc) { g_allocators[int(type)] = alloc; }

StorageImpl::StorageImpl(size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
  if (device.type == DeviceType::CPU && nbytes <= kInlineBytes) {
    data_ = inline_;
    return;
  }
  if (device.type == DeviceType::Meta) {
    data_ = nullptr;
    return;
  }
  Allocator* alloc = get_allocator(device.type);
  if (!alloc)
    TP_FAIL_NOT_IMPLEMENTED("Cannot allocate on device '", device.str(),
                            "': TensorPlay was built without support for it");
#ifdef TP_USE_CUDA
  if (device.type == DeviceType::CUDA) {  // on the tensor's GPU, its index made explicit
    device_ = cuda::resolve(device);
    cuda::DeviceGuard g(device_.index);
    data_ = alloc->allocate(nbytes, &deleter_, &ctx_);
    return;
  }
#endif
  data_ = alloc->allocate(nbytes, &deleter_, &ctx_);
}

StorageImpl::StorageImpl(void* data, size_t nbytes, Device device, Deleter deleter, void* ctx)
    : data_(data), nbytes_(nbytes), device_(device), deleter_(deleter), ctx_(ctx) {}

StorageImpl::~StorageImpl() {
  if (deleter_) deleter_(ctx_, data_);
}

}  // namespace tp
