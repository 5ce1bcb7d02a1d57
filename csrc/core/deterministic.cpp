#include "core/deterministic.h"

#include <atomic>

namespace tp {
namespace {

std::atomic<bool> g_enabled{false};
std::atomic<bool> g_warn_only{false};

}  // namespace

bool deterministic_algorithms() { return g_enabled.load(std::memory_order_relaxed); }
bool deterministic_algorithms_warn_only() { return g_warn_only.load(std::memory_order_relaxed); }

void set_deterministic_algorithms(bool enabled, bool warn_only) {
  g_enabled.store(enabled);
  g_warn_only.store(warn_only);
}

}  // namespace tp
