// Storage: a ref-counted buffer on one device, plus the version counter its views share.
#pragma once
#include <atomic>
#include <cstddef>

#include "core/device.h"
#include "core/intrusive_ptr.h"

namespace tp {

/// Frees a buffer; `ctx` is whatever the allocator or the foreign owner needs.
using Deleter = void (*)(void* ctx, void* data);

/// Device memory provider (CPU: 64-byte aligned heap; CUDA: the caching allocator).
class Allocator {
 public:
  virtual ~Allocator() = default;
  /// Returns a buffer of `nbytes`; sets the deleter and its context.
  virtual void* allocate(size_t nbytes, Deleter* deleter, void** ctx) = 0;
};

Allocator* get_allocator(DeviceType type);
void set_allocator(DeviceType type, Allocator* alloc);
/// Frees the large CPU blocks kept for reuse (Note [CPU block cache]); returns the bytes freed.
size_t cpu_empty_cache();
/// Bytes held in the CPU block cache now.
size_t cpu_cached_bytes();

/// A buffer shared by a tensor and its views. See Note [Version counter].
class StorageImpl : public RefCounted {
 public:
  /// Allocates `nbytes` on `device`; small CPU buffers live inline.
  StorageImpl(size_t nbytes, Device device);
  /// Wraps foreign memory; `deleter(ctx, data)` runs when the last user goes.
  StorageImpl(void* data, size_t nbytes, Device device, Deleter deleter, void* ctx);
  ~StorageImpl() override;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  uint32_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

 private:
  static constexpr size_t kInlineBytes = 32;
  void* data_;
  size_t nbytes_;
  Device device_;
  Deleter deleter_ = nullptr;
  void* ctx_ = nullptr;
  std::atomic<uint32_t> version_{0};
  alignas(64) unsigned char inline_[kInlineBytes];
};

// Note [Version counter]
// In-place ops bump a counter that every view of the same storage sees (PyTorch shares
// one counter between a tensor and its views, `detach()` included). Keeping it in the
// storage costs no extra allocation per tensor. `Tensor.data`-style aliases that need a
// fresh counter get their own storage object wrapping the same memory.

}  // namespace tp
