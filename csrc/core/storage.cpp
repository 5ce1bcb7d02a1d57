#include "core/storage.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>

#include "core/error.h"
#ifdef TP_USE_CUDA
#include "cuda/check.h"
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

StorageImpl::StorageImpl(size_t nbytes, Device device)
    : nbytes_(nbytes), device_(device), resizable_(true) {
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

void StorageImpl::bump_version_past(uint32_t other) {
  uint32_t v = version_.load(std::memory_order_relaxed);
  while (!version_.compare_exchange_weak(v, std::max(v, other) + 1, std::memory_order_relaxed)) {
  }
}

void StorageImpl::replace_data(void* data, size_t nbytes, Deleter deleter, void* ctx) {
  Deleter old_deleter = deleter_;
  void* old_ctx = ctx_;
  void* old_data = data_;
  data_ = data;
  nbytes_ = nbytes;
  deleter_ = deleter;
  ctx_ = ctx;
  if (old_deleter) old_deleter(old_ctx, old_data);
}

void StorageImpl::resize(size_t nbytes) {
  if (nbytes == nbytes_) return;
  TP_CHECK(resizable_, "Trying to resize storage that is not resizable");
  if (device_.type == DeviceType::Meta) {
    nbytes_ = nbytes;
    return;
  }
  const size_t keep = std::min(nbytes, nbytes_);
  if (device_.type == DeviceType::CPU) {
    if (data_ == inline_ && nbytes <= kInlineBytes) {  // stays inline
      nbytes_ = nbytes;
      return;
    }
    Deleter d = nullptr;
    void* c = nullptr;
    void* p = get_allocator(DeviceType::CPU)->allocate(nbytes, &d, &c);
    if (keep) std::memcpy(p, data_, keep);
    replace_data(p, nbytes, d, c);
    return;
  }
#ifdef TP_USE_CUDA
  if (device_.type == DeviceType::CUDA) {
    cuda::DeviceGuard g(device_.index);
    Deleter d = nullptr;
    void* c = nullptr;
    void* p = get_allocator(DeviceType::CUDA)->allocate(nbytes, &d, &c);
    // stream-ordered like every kernel on these tensors; the caching allocator reuses the
    // old block only after work queued on the current stream
    if (keep)
      TP_CUDA_CHECK(cudaMemcpyAsync(p, data_, keep, cudaMemcpyDeviceToDevice,
                                    cuda::current_stream(device_.index).handle));
    replace_data(p, nbytes, d, c);
    return;
  }
#endif
  TP_FAIL_NOT_IMPLEMENTED("Cannot resize a storage on device '", device_.str(), "'");
}

}  // namespace tp
