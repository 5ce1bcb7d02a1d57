// The current-stream operations of an accelerator backend, as device-neutral hooks the
// autograd engine calls (Note [Autograd streams] in autograd/engine.cpp). The CUDA backend
// registers them when it loads; in a CPU build they stay null.
#pragma once
#include <cstdint>

namespace tp {

/// A stream of one device: an opaque handle (0: the device's default stream), the device
/// index and its priority. device < 0: no stream.
struct StreamRef {
  uintptr_t handle = 0;
  int device = -1;
  int priority = 0;
  bool operator==(const StreamRef& o) const { return handle == o.handle && device == o.device; }
  bool operator!=(const StreamRef& o) const { return !(*this == o); }
};

/// What the engine needs of a backend's streams.
struct StreamHooks {
  virtual ~StreamHooks() = default;
  /// The calling thread's current stream on `device`.
  virtual StreamRef current(int device) const = 0;
  /// Makes `s` the calling thread's current stream on its device.
  virtual void set_current(const StreamRef& s) const = 0;
  /// Makes `waiter` wait for the work queued on `producer` so far (an event; same device).
  virtual void wait(const StreamRef& waiter, const StreamRef& producer) const = 0;
};

/// The registered hooks, or null (no accelerator backend).
const StreamHooks* stream_hooks();
/// Registers the backend's hooks (once, at load; they must live for the process).
void set_stream_hooks(const StreamHooks* hooks);

}  // namespace tp
