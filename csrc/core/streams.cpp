// The registry of the accelerator's stream hooks (core/streams.h).
#include "core/streams.h"

#include <atomic>

namespace tp {

namespace {
std::atomic<const StreamHooks*> g_hooks{nullptr};
}  // namespace

const StreamHooks* stream_hooks() { return g_hooks.load(std::memory_order_acquire); }

void set_stream_hooks(const StreamHooks* hooks) { g_hooks.store(hooks, std::memory_order_release); }

}  // namespace tp
