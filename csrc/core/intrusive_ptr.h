// Intrusive reference counting for storages and tensor impls: one allocation per object.
#pragma once
#include <atomic>
#include <cstdint>
#include <utility>

namespace tp {

/// Base of intrusively counted objects.
class RefCounted {
 public:
  RefCounted() = default;
  RefCounted(const RefCounted&) = delete;
  RefCounted& operator=(const RefCounted&) = delete;
  virtual ~RefCounted() = default;
  void incref() const { refcount_.fetch_add(1, std::memory_order_relaxed); }
  void decref() const {
    if (refcount_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
  uint32_t use_count() const { return refcount_.load(std::memory_order_relaxed); }
  /// Takes a reference unless the count already reached zero (the object is being
  /// destroyed): for caches that hold plain pointers (core/shared_memory.cpp).
  bool try_incref() const {
    uint32_t n = refcount_.load(std::memory_order_relaxed);
    while (n != 0)
      if (refcount_.compare_exchange_weak(n, n + 1, std::memory_order_acq_rel)) return true;
    return false;
  }

 private:
  mutable std::atomic<uint32_t> refcount_{0};
};

/// Owning pointer to a RefCounted object.
template <class T>
class intrusive_ptr {
 public:
  intrusive_ptr() = default;
  explicit intrusive_ptr(T* p) : p_(p) { if (p_) p_->incref(); }
  intrusive_ptr(const intrusive_ptr& o) : p_(o.p_) { if (p_) p_->incref(); }
  intrusive_ptr(intrusive_ptr&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  template <class U>
  intrusive_ptr(intrusive_ptr<U>&& o) noexcept : p_(o.release()) {}
  ~intrusive_ptr() { if (p_) p_->decref(); }
  intrusive_ptr& operator=(intrusive_ptr o) noexcept { std::swap(p_, o.p_); return *this; }

  T* get() const { return p_; }
  T* operator->() const { return p_; }
  T& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }
  T* release() { T* p = p_; p_ = nullptr; return p; }
  bool operator==(const intrusive_ptr& o) const { return p_ == o.p_; }

 private:
  T* p_ = nullptr;
};

template <class T, class... Args>
intrusive_ptr<T> make_intrusive(Args&&... args) {
  return intrusive_ptr<T>(new T(std::forward<Args>(args)...));
}

}  // namespace tp
