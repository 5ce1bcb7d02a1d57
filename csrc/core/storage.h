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
  /// Back to version 0: only for a storage no one else has seen yet (a factory's result
  /// that was filled by a copy, which counts as a write).
  void reset_fresh_version() { version_.store(0, std::memory_order_relaxed); }
  /// Moves the version past both its own and `other` (Tensor.set_: the tensor now reads
  /// another storage's counter, which must still read as a write to it).
  void bump_version_past(uint32_t other);

  /// Whether resize() may reallocate: true for buffers the allocator made, false for
  /// foreign memory (NumPy arrays, DLPack imports, shared memory). See Note [Resizable storage].
  bool resizable() const { return resizable_; }
  void set_resizable(bool r) { resizable_ = r; }
  /// Reallocates the buffer to `nbytes` (larger or smaller), keeping the leading bytes; every
  /// tensor on this storage sees the new memory. Raises unless resizable().
  void resize(size_t nbytes);
  /// Replaces the buffer with `data` (freed later by `deleter(ctx, data)`); the old buffer
  /// is freed now. The caller has copied whatever it keeps (share_memory_).
  void replace_data(void* data, size_t nbytes, Deleter deleter, void* ctx);
  Deleter deleter() const { return deleter_; }
  void* deleter_context() const { return ctx_; }

 private:
  static constexpr size_t kInlineBytes = 32;
  void* data_;
  size_t nbytes_;
  Device device_;
  Deleter deleter_ = nullptr;
  void* ctx_ = nullptr;
  std::atomic<uint32_t> version_{0};
  bool resizable_ = false;
  alignas(64) unsigned char inline_[kInlineBytes];
};

// Note [Version counter]
// In-place ops bump a counter that every view of the same storage sees (PyTorch shares
// one counter between a tensor and its views, `detach()` included). Keeping it in the
// storage costs no extra allocation per tensor. `Tensor.data`-style aliases that need a
// fresh counter get their own storage object wrapping the same memory.
// A consequence PyTorch does not share: `x.set_(y)` gives x y's counter (PyTorch keeps x's own
// counter, bumped once). set_ therefore moves the counter past both versions, so x still
// reads as written to (a saved x fails its version check) and y's counter never goes back.

// Note [Resizable storage]
// Tensor.resize_ and Tensor.set_ may grow a storage in place (PyTorch's resizable storages):
// the StorageImpl keeps its identity and version, its data pointer moves, so views and
// every tensor on it see the new memory. Memory we allocated is resizable; memory we only
// wrap (from_numpy, DLPack, shared memory after share_memory_) is not: growing it raises
// PyTorch's "Trying to resize storage that is not resizable".

}  // namespace tp
