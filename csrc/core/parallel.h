#pragma once
#include <omp.h>

#include <algorithm>
#include <cstdint>

// The one thread budget of the process: CPU kernels (OpenMP) and BLAS/LAPACK (OpenBLAS)
// both run on it. See Note [One thread pool] in parallel.cpp.

namespace tp {

/// Threads CPU kernels and BLAS may use (tp.get_num_threads).
int get_num_threads();

/// Sets the thread budget of CPU kernels and of BLAS (tp.set_num_threads).
void set_num_threads(int n);

/// While alive, every BLAS call runs single-threaded: for BLAS called from inside our own
/// OpenMP parallel regions (Note [One thread pool]).
class BlasSingleThreaded {
 public:
  BlasSingleThreaded();
  ~BlasSingleThreaded();
  BlasSingleThreaded(const BlasSingleThreaded&) = delete;
  BlasSingleThreaded& operator=(const BlasSingleThreaded&) = delete;
};

/// Runs f(b, e) over contiguous pieces of [begin, end), each at least `grain` long, on up
/// to get_num_threads() threads (serially when small, or when already inside a parallel
/// region). f must not throw: an exception cannot leave an OpenMP region.
template <class F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, const F& f) {
  const int64_t n = end - begin;
  if (n <= 0) return;
  const int64_t pieces = std::min<int64_t>(get_num_threads(), (n + grain - 1) / std::max<int64_t>(grain, 1));
  if (pieces <= 1 || omp_in_parallel()) return f(begin, end);
#pragma omp parallel num_threads(int(pieces))
  {
    const int64_t per = (n + omp_get_num_threads() - 1) / omp_get_num_threads();
    const int64_t b = begin + per * omp_get_thread_num(), e = std::min(end, b + per);
    if (b < e) f(b, e);
  }
}

}  // namespace tp
