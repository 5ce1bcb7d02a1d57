#include "random/capability.h"

#include "core/cpu_capability.h"

namespace tp::random {

bool vector_capability() { return cpu::capability() != cpu::Capability::Default; }

}  // namespace tp::random
