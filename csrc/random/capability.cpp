#include "random/capability.h"

#include <cstdlib>
#include <cstring>

namespace tp::random {

bool vector_capability() {
  static const bool on = [] {
#if defined(__x86_64__) || defined(_M_X64)
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return false;
    const char* env = std::getenv("ATEN_CPU_CAPABILITY");
    return !(env && std::strcmp(env, "default") == 0);
#else
    return false;
#endif
  }();
  return on;
}

}  // namespace tp::random
