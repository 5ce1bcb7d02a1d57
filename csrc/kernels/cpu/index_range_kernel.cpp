// The range (smallest and largest value) of an int64 index tensor, which the bounds checks of
// the indexing writes read (csrc/ops/indexing_writes.cpp): one parallel pass, vectorised with
// the level's 64-bit min / max. Compiled once per CPU capability level.
#include <algorithm>

#include "core/parallel.h"
#include "kernels/cpu_stubs.h"

namespace tp::cpu::TP_CPU_NS {

namespace {

void index_range_kernel(const int64_t* p, int64_t n, int64_t* min, int64_t* max) {
  int64_t lo = p[0], hi = p[0];
#pragma omp parallel for num_threads(get_num_threads()) if (n >= 65536) reduction(min : lo) reduction(max : hi)
  for (int64_t i = 0; i < n; ++i) {
    lo = std::min(lo, p[i]);
    hi = std::max(hi, p[i]);
  }
  *min = lo;
  *max = hi;
}

}  // namespace

TP_REGISTER_CPU_KERNEL(index_range_stub, &index_range_kernel);

}  // namespace tp::cpu::TP_CPU_NS
