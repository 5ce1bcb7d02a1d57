#include "core/storage.h"

#include <cstdlib>
#include <new>

#include "core/error.h"

namespace tp {

namespace {

class CpuAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes, Deleter* deleter, void** ctx) override {
    void* p = nullptr;
    if (posix_memalign(&p, 64, nbytes ? nbytes : 1) != 0 || !p)
      TP_FAIL("DefaultCPUAllocator: not enough memory: you tried to allocate ", nbytes,
              " bytes.");
    *deleter = [](void*, void* data) { std::free(data); };
    *ctx = nullptr;
    return p;
  }
};

CpuAllocator g_cpu_allocator;
Allocator* g_allocators[kNumDeviceTypes] = {&g_cpu_allocator, nullptr, nullptr};

}  // namespace

Allocator* get_allocator(DeviceType type) { return g_allocators[int(type)]; }
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
  data_ = alloc->allocate(nbytes, &deleter_, &ctx_);
}

StorageImpl::StorageImpl(void* data, size_t nbytes, Device device, Deleter deleter, void* ctx)
    : data_(data), nbytes_(nbytes), device_(device), deleter_(deleter), ctx_(ctx) {}

StorageImpl::~StorageImpl() {
  if (deleter_) deleter_(ctx_, data_);
}

}  // namespace tp
