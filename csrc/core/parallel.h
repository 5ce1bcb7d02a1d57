#pragma once
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

}  // namespace tp
