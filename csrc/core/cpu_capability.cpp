#include "core/cpu_capability.h"

#include <cstdlib>
#include <cstring>

namespace tp::cpu {

namespace {

/// The level an override names (TP_CPU_CAPABILITY, else ATEN_CPU_CAPABILITY), or -1.
int requested_level() {
  const char* env = std::getenv("TP_CPU_CAPABILITY");
  if (!env || !*env) env = std::getenv("ATEN_CPU_CAPABILITY");
  if (!env || !*env) return -1;
  if (!strcasecmp(env, "default")) return int(Capability::Default);
  if (!strcasecmp(env, "avx2")) return int(Capability::AVX2);
  if (!strcasecmp(env, "avx512")) return int(Capability::AVX512);
  return -1;  // an unknown name leaves the detected level, as PyTorch does
}

}  // namespace

Capability supported_capability() {
  static const Capability level = [] {
#if defined(__x86_64__) || defined(_M_X64)
    // libgcc's checks include the OS's support (XCR0) for the YMM / ZMM state
    __builtin_cpu_init();
    if (__builtin_cpu_supports("x86-64-v4")) return Capability::AVX512;
    if (__builtin_cpu_supports("x86-64-v3")) return Capability::AVX2;
#endif
    return Capability::Default;
  }();
  return level;
}

Capability capability() {
  static const Capability level = [] {
    const int best = int(supported_capability()), want = requested_level();
    return Capability(want >= 0 && want < best ? want : best);
  }();
  return level;
}

const char* capability_name(Capability c) {
  static constexpr const char* names[] = {"DEFAULT", "AVX2", "AVX512"};
  return names[int(c)];
}

}  // namespace tp::cpu
