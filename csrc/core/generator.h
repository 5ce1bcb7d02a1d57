// Random-number generators: the device-neutral base and the `Generator` handle ops take.
// The CPU implementation (mt19937 with PyTorch's state layout) lives in csrc/random/.
#pragma once
#include <cstdint>
#include <mutex>

#include "core/device.h"
#include "core/intrusive_ptr.h"
#include "core/tensor_impl.h"

namespace tp {

/// One stream of random numbers on one device. Kernels hold `mutex` while they draw
/// (PyTorch's rule), so ops sharing a generator from several threads stay well defined.
class GeneratorImpl : public RefCounted {
 public:
  explicit GeneratorImpl(Device device) : device_(device) {}
  Device device() const { return device_; }

  /// Restarts the stream from `seed` (manual_seed).
  virtual void set_current_seed(uint64_t seed) = 0;
  /// The seed the stream started from (initial_seed).
  virtual uint64_t current_seed() const = 0;
  /// Seeds from a nondeterministic source and returns the seed.
  virtual uint64_t seed() = 0;
  /// The whole state as a uint8 tensor (get_state), and back (set_state).
  virtual Tensor get_state() const = 0;
  virtual void set_state(const Tensor& state) = 0;
  /// A new generator in the same state (deepcopy).
  virtual intrusive_ptr<GeneratorImpl> clone() const = 0;

  std::mutex mutex;

 private:
  Device device_;
};

/// A handle to a generator; copying shares it (as Python's torch.Generator objects do).
class Generator {
 public:
  Generator() = default;
  explicit Generator(intrusive_ptr<GeneratorImpl> impl) : impl_(std::move(impl)) {}
  bool defined() const { return bool(impl_); }
  GeneratorImpl* impl() const { return impl_.get(); }
  GeneratorImpl* operator->() const { return impl_.get(); }
  bool operator==(const Generator& o) const { return impl_ == o.impl_; }

 private:
  intrusive_ptr<GeneratorImpl> impl_;
};

}  // namespace tp
